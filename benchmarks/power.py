"""Statistical power of the CPU presets: can a preset tell two rewards apart?

For each preset (an RLVR recipe and its headline held-out metric) this trains the recipe over
several seeds (or reuses finished runs in --out) and prints, from the runs' own files:

- the warm start's held-out metric (mean and 95% t-interval over seeds),
- RLVR's gain over its own warm start: mean ± std over seeds, the t-interval, and a paired
  two-level bootstrap interval over seeds × held-out examples (rewardzoo.eval.bootstrap_ci),
- the standard error of the held-out metric from its own sampling (sd over examples / √E),
- the smallest difference between two methods that 3 and 5 seeds detect with a paired t-test
  (α = 0.05, power 0.8), taking the per-seed difference's sd as √2 × the gain's sd over seeds
  (two methods as variable as RLVR, independent given the seed — an assumption, stated),
- whether the preset meets the target: gain ≥ 5 × its sd over seeds, held-out set ≥ 1,000, one run
  ≤ 300 s (the SFT warm start, cached, excluded; the sweep trains it first),

and writes ``OUT/power.md``, ``OUT/power.csv`` and ``OUT/power.png`` (learning curves, mean and
95% band over seeds).  The first line of power.md is the command that wrote it.

    python benchmarks/power.py --presets multiplication countdown --seeds 0 1 2 3 4 --out benchmarks/results/power

Run directories go under ``--runs`` (default ``runs/power``), results under ``--out``.  The run layout
is the leaderboard's, so ``--runs runs/leaderboard`` reuses the leaderboard's RLVR runs (same recipe, same
seeds, no extra overrides) instead of training them again.
"""

from __future__ import annotations

import argparse
import csv
import math
import shlex
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from rewardzoo.eval import bootstrap_ci, detectable_difference, mean_ci  # noqa: E402
from rewardzoo.sweep import RunSpec, eval_rows, run_sweep  # noqa: E402

# preset: (RLVR recipe, headline eval metric, its per-example row key, what a gain means)
PRESETS = {
    "multiplication": ("algorithms/rlvr_multiplication.yaml", "eval/accuracy", "correct", "held-out exact accuracy"),
    "countdown": ("algorithms/rlvr_countdown.yaml", "eval/accuracy", "correct", "held-out exact accuracy"),
    "hackable_multiplication": ("algorithms/rlvr_hackable_multiplication.yaml", "eval/hack_rate", "hack_rate",
                                "held-out hack rate (proxy passes the strict check fails)"),
}
TARGET_RATIO, TARGET_EVAL, TARGET_RUN_S = 5.0, 1000, 300.0


RUN_SLUG = {"hackable_multiplication": "rlvr_proxy"}
"""The run directory name of a preset's RLVR runs: the leaderboard's (``rewardzoo.leaderboard.slug``), so
that ``--runs`` pointed at a leaderboard's run directories reuses its RLVR runs."""


def specs(preset: str, seeds: list[int], out: Path, extra: list[str]) -> list[RunSpec]:
    """One RLVR run per seed of the preset, under ``out/<preset>/<rlvr slug>/seed<s>`` (the leaderboard's layout)."""
    recipe = PRESETS[preset][0]
    slug = RUN_SLUG.get(preset, "rlvr")
    return [RunSpec(f"{preset}/seed{s}", recipe, out / preset / slug / f"seed{s}", (f"seed={s}", *extra))
            for s in seeds]


def analyse(preset: str, results) -> dict:
    """The power summary of one preset from its finished runs."""
    _, metric, row_key, _ = PRESETS[preset]
    starts, ends, tables_start, tables_end, walls, curves = [], [], [], [], [], []
    for result in results:
        rows = eval_rows(result.spec.run_dir)
        first, last = min(rows), max(rows)
        tables_start.append(rows[first][row_key])
        tables_end.append(rows[last][row_key])
        starts.append(float(np.mean(rows[first][row_key])))
        ends.append(float(np.mean(rows[last][row_key])))
        walls.append(result.wall_s)
        curves.append({r["step"]: r[metric] for r in result.rows if metric in r})
    gains = np.array(ends) - np.array(starts)  # [S]
    a, b = np.array(tables_start), np.array(tables_end)  # [S, E] each
    n_eval = a.shape[1]
    gain_sd = float(gains.std(ddof=1)) if len(gains) > 1 else math.nan
    se_metric = float(np.mean([np.std(t, ddof=1) / math.sqrt(len(t)) for t in tables_end]))
    return {
        "preset": preset, "metric": metric, "seeds": len(gains), "n_eval": n_eval,
        "warm_start": mean_ci(starts), "final": mean_ci(ends), "gain": mean_ci(gains), "gain_sd": gain_sd,
        "gain_boot": bootstrap_ci(lambda x, y: float(y.mean() - x.mean()), a, b),
        "se_metric": se_metric, "ratio": float(gains.mean() / gain_sd) if gain_sd > 0 else math.inf,
        "mdd3": detectable_difference(math.sqrt(2) * gain_sd, 3), "mdd5": detectable_difference(math.sqrt(2) * gain_sd, 5),
        "run_s": float(np.median(walls)), "gains": gains.tolist(), "curves": curves,
    }


def meets(s: dict) -> bool:
    """The power target of the issue: gain ≥ 5 × sd over ≥ 5 seeds, ≥ 1,000 held-out, ≤ 300 s per run."""
    return s["ratio"] >= TARGET_RATIO and s["seeds"] >= 5 and s["n_eval"] >= TARGET_EVAL and s["run_s"] <= TARGET_RUN_S


def pts(x: float) -> str:
    """A fraction as points with one decimal."""
    return f"{100 * x:.1f}"


def write(summaries: list[dict], out: Path, command: str) -> None:
    """power.md, power.csv and power.png."""
    out.mkdir(parents=True, exist_ok=True)
    lines = [f"`{command}`", "", "# Power of the CPU presets", "",
             "Points of the headline held-out metric; intervals are 95%: t over seeds, and a paired bootstrap over "
             "seeds × held-out examples. MDD = minimal detectable paired difference between two methods "
             "(α = 0.05, power 0.8), assuming each method's gain varies over seeds like RLVR's.", "",
             "| preset | metric | seeds | held-out | warm start | RLVR gain (t-CI) | gain (bootstrap) | gain sd | "
             "gain / sd | SE of metric | MDD 3 seeds | MDD 5 seeds | run (s, median) | target met |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    for s in summaries:
        lines.append(f"| {s['preset']} | `{s['metric']}` | {s['seeds']} | {s['n_eval']} | {s['warm_start'].format(100)} | "
                     f"{s['gain'].format(100, sign=True)} | {s['gain_boot'].format(100, sign=True)} | {pts(s['gain_sd'])} | "
                     f"{s['ratio']:.1f} | {pts(s['se_metric'])} | {pts(s['mdd3'])} | {pts(s['mdd5'])} | "
                     f"{s['run_s']:.0f} | {'yes' if meets(s) else 'no'} |")
    lines += ["", "Gains by seed (points): " + "; ".join(
        f"{s['preset']}: " + ", ".join(f"{100 * g:+.1f}" for g in s["gains"]) for s in summaries), ""]
    (out / "power.md").write_text("\n".join(lines) + "\n")
    with open(out / "power.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["preset", "metric", "seeds", "n_eval", "warm_start", "gain_mean", "gain_low", "gain_high", "gain_sd",
                    "ratio", "se_metric", "mdd3", "mdd5", "run_s", "target_met"])
        for s in summaries:
            w.writerow([s["preset"], s["metric"], s["seeds"], s["n_eval"], s["warm_start"].mean, s["gain"].mean,
                        s["gain"].low, s["gain"].high, s["gain_sd"], s["ratio"], s["se_metric"], s["mdd3"], s["mdd5"],
                        s["run_s"], meets(s)])
    fig, axes = plt.subplots(1, len(summaries), figsize=(5 * len(summaries), 3.6), squeeze=False)
    for ax, s in zip(axes[0], summaries):
        steps = sorted(set.intersection(*(set(c) for c in s["curves"])))
        est = [mean_ci([c[t] for c in s["curves"]]) for t in steps]
        ax.plot(steps, [e.mean for e in est], color="C0", label=f"RLVR, {s['seeds']} seeds")
        ax.fill_between(steps, [e.low for e in est], [e.high for e in est], color="C0", alpha=0.25, label="95% CI")
        ax.set_title(s["preset"])
        ax.set_xlabel("RL step")
        ax.set_ylabel(s["metric"])
        ax.legend(loc="best")
    fig.tight_layout()
    fig.savefig(out / "power.png", dpi=120)


def main(argv: list[str] | None = None) -> int:
    """Run (or reuse) the presets' RLVR runs and write the power table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--presets", nargs="+", default=list(PRESETS), choices=list(PRESETS))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/power"))
    parser.add_argument("--runs", type=Path, default=Path("runs/power"), help="where the runs are (and are reused)")
    parser.add_argument("--jobs", type=int, default=2, help="runs in parallel (one thread each)")
    parser.add_argument("--override", nargs="*", default=[], help="key=value for every run (e.g. a shorter test)")
    args = parser.parse_args(argv)
    command = "python benchmarks/power.py " + " ".join(shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:]))
    all_specs = {p: specs(p, args.seeds, args.runs, args.override) for p in args.presets}
    results = run_sweep([s for group in all_specs.values() for s in group], jobs=args.jobs, desc="power")
    summaries = [analyse(p, [results[s.name] for s in group]) for p, group in all_specs.items()]
    write(summaries, args.out, command)
    print((args.out / "power.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
