"""How much of each tuning choice the tie-break makes: for every trained row of a board's ``tuning.csv``, the
setting with the best mean validation value over the tuning seeds against the one the protocol chose, how many
settings were within noise of the best, and whether the best mean sits at an end of the row's learning rates.

    python benchmarks/tie_break.py --out benchmarks/results/tie_break.md

The protocol (:func:`rewardzoo.protocol.choose`) ties every setting within noise of the best mean (the 95%
t-interval of the paired per-seed differences contains 0) and gives a tie to the setting nearest the recipe's
learning rate.  At three tuning seeds that interval is wide (t = 4.30), so the tie-break can decide most rows;
this report measures how often it did on the committed boards, read from their ``tuning.csv`` alone (the
settings cut by the halving, with fewer tuning seeds, are left out of the best mean, as they are from the choice).
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

import pandas as pd

from rewardzoo.board import BOARDS
from rewardzoo.protocol import Setting

ROOT = Path(__file__).resolve().parents[1]
TUNINGS = {
    "canonical (tuning seeds 1000–1002)": "benchmarks/results/leaderboard/tuning.csv",
    "re-run (tuning seeds 2000–2002)": "benchmarks/results/leaderboard_twice/tuning2000/tuning.csv",
}


def lr(setting: str) -> float:
    """The learning rate a setting label names (``grpo.lr=5e-05 ...``); NaN for the recipe's own."""
    return float(Setting.from_label(setting).get("grpo.lr", "nan"))


def rows(path: Path) -> pd.DataFrame:
    """One line per trained row: its direction, chosen and best-mean settings and values, settings within noise,
    and whether the best mean sits at the lowest or highest learning rate the row ran."""
    d = pd.read_csv(path)
    d = d[d.split == "validation"]
    out = []
    for (task, method), g in d.groupby(["task", "method"], sort=False):
        direction = BOARDS[task].tune_by[1]
        stats = g.groupby("setting").value.agg(["mean", "count"])
        full = stats[stats["count"] == stats["count"].max()]  # the settings that survived the halving
        best = full["mean"].idxmax() if direction == "max" else full["mean"].idxmin()
        chosen = g.loc[g.chosen.astype(bool), "setting"].iloc[0]
        rates = sorted(lr(s) for s in stats.index)
        edge = "lowest" if lr(best) == rates[0] else "highest" if lr(best) == rates[-1] else ""
        out.append(
            dict(
                task=task,
                method=method,
                direction=direction,
                chosen=chosen,
                chosen_mean=stats.loc[chosen, "mean"],
                best=best,
                best_mean=stats.loc[best, "mean"],
                within_noise=g.loc[g.within_noise.astype(bool), "setting"].nunique(),
                best_at_edge=edge,
            )
        )
    return pd.DataFrame(out)


def report(tunings: dict[str, str], argv: list[str]) -> list[str]:
    """The Markdown: a summary line per board, then every row where the tie-break chose against the best mean."""
    lines = [
        f"<!-- command: {shlex.join(['python', 'benchmarks/tie_break.py', *argv])} -->",
        "",
        "# How much of each tuning choice the tie-break makes",
        "",
        "Per trained row of each board's `tuning.csv`: the setting with the best mean validation value over the "
        "tuning seeds (among those that survived the halving) against the chosen one. *Within noise*: settings "
        "tied with the best (95% t-interval of paired per-seed differences contains 0); a tie goes to the "
        "setting nearest the recipe's learning rate (`rewardzoo.protocol.choose`).",
        "",
        "| board | trained rows | rows with ≥ 2 settings within noise | chosen ≠ best mean | chosen lr above the best "
        "mean's | best mean at an end of the row's lrs |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    tables = {}
    for name, path in tunings.items():
        t = rows(ROOT / path)
        tables[name] = t
        moved = t[t.chosen != t.best]
        above = sum(lr(c) > lr(b) for c, b in zip(moved.chosen, moved.best))
        lines.append(
            f"| {name} ([tuning.csv](../../{path})) | {len(t)} | {int((t.within_noise > 1).sum())} | {len(moved)} | "
            f"{above} | {int((t.best_at_edge != '').sum())} |"
        )
    for name, t in tables.items():
        moved = t[t.chosen != t.best]
        lines += [
            "",
            f"## {name}: the rows where the tie-break chose against the best mean",
            "",
            "| task | method | direction | chosen | its mean | best mean | its mean | within noise | best mean at |",
            "| --- | --- | --- | --- | ---: | --- | ---: | ---: | --- |",
        ]
        for r in moved.itertuples():
            lines.append(
                f"| {r.task} | {r.method} | {r.direction} | {r.chosen} | {r.chosen_mean:.3f} | {r.best} | "
                f"{r.best_mean:.3f} | {r.within_noise} | {r.best_at_edge or 'interior'} |"
            )
    return lines


def main(argv: list[str] | None = None) -> int:
    """Read the boards' tuning files and write the report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "tie_break.md")
    argv = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(argv)
    lines = report(TUNINGS, argv)
    args.out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
