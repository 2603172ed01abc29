"""Every study's gate and claims with the seed as the unit, re-read from the study's committed CSV.

The studies' reports (``ral_vs_rlvr.md``, ``ral_capacity.md``, ``varl_hacking*.md``, ``rcrl.md``) were written with a
percentile bootstrap over seeds × held-out examples for their ratios and differences; their run directories are not
committed, but each study's CSV holds every run's per-seed values.  This script reads those CSVs and prints each
gate (the study's positive control) and each claim with the t-interval over seeds of the per-seed effects
(:func:`rewardzoo.eval.seed_ci`) and the protocol's verdict (:func:`rewardzoo.protocol.verdict`): the numbers a
re-run of the study's code (which now uses ``seed_ci`` too) would print from the same runs.

    python benchmarks/study_verdicts.py --out benchmarks/results/study_verdicts.md

What a CSV cannot give is said where it matters: the RcRL study's head-to-head win rate prompt by prompt needs
per-prompt outputs, so its claim is read here as the per-seed mean oracle-quality difference.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from rewardzoo.eval import Estimate, gain_ratio, mean_ci, seed_ci
from rewardzoo.protocol import Finding, verdict, word

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
RAL_VS_RLVR_BASELINE = {"RAL policy lr 2.5e-4": "RLVR policy lr 2.5e-4"}
"""As ``benchmarks/ral_vs_rlvr.py``'s ``BASELINE``: the RLVR run a variant's ratio is taken against."""


def _gate(task: str, what: str, change: Estimate, n: int, scale: float = 100, unit: str = " points") -> Finding:
    return Finding(
        task,
        what,
        "its own start",
        change,
        0.0,
        True,
        f"{change.bounds(scale=scale, sign=True, digits=1 if scale == 100 else 3)}{unit}",
        f"{n} seeds",
    )


def _line(claim: str, f: Finding, seeds: int, gate: Finding | None, shown: str) -> str:
    return f"| {claim} | {verdict(f, seeds, gate)} | {shown} | {f.estimate.n} seeds |"


def _ratio_rows(
    df: pd.DataFrame, method: str, base: str, start: str, end: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """[S] start and end of the baseline, start and end of ``method``, on the seeds both ran."""
    a, b = df[df.method == base].set_index("seed"), df[df.method == method].set_index("seed")
    seeds = sorted(set(a.index) & set(b.index))
    return (
        a.loc[seeds, start].to_numpy(),
        a.loc[seeds, end].to_numpy(),
        b.loc[seeds, start].to_numpy(),
        b.loc[seeds, end].to_numpy(),
    )


def ral_vs_rlvr(path: Path) -> list[str]:
    """RAL vs RLVR: each variant's gain ratio to its RLVR baseline, per seed; the gate is RLVR's gain."""
    df = pd.read_csv(path).rename(columns={"variant": "method"})
    rlvr = df[df.method == "RLVR"]
    gate = _gate(
        "multiplication",
        "RLVR gains on the warm start",
        seed_ci(lambda s, e: float(e - s), rlvr.warm_start_accuracy.to_numpy(), rlvr.final_accuracy.to_numpy()),
        len(rlvr),
    )
    lines = [
        f"## RAL vs RLVR (`{path.relative_to(ROOT)}`)",
        "",
        f"Gate: RLVR's held-out gain {gate.numbers} ({'works' if word(gate.estimate, 0.0) == 'reproduced' else 'does not work'}).",
        "",
        "| claim: the variant reaches ½ of RLVR's gain | verdict | gain ratio, mean [95% t over seeds] | n |",
        "| --- | --- | --- | --- |",
    ]
    for method in df.method.unique():
        if method.startswith("RLVR"):
            continue
        rows = _ratio_rows(
            df, method, RAL_VS_RLVR_BASELINE.get(method, "RLVR"), "warm_start_accuracy", "final_accuracy"
        )
        ratio = seed_ci(gain_ratio, *rows)
        f = Finding("multiplication", method, "RLVR", ratio, 0.5, True, ratio.bounds(digits=2), "")
        lines.append(_line(method, f, ratio.n, gate, ratio.bounds(digits=2)))
    return lines + [""]


def ral_capacity(path: Path) -> list[str]:
    """The judge-capacity curve: each method's gain ratio to RLVR per seed; RAL − format-only and co-trained − frozen."""
    df = pd.read_csv(path)
    rlvr = df[df.method == "RLVR"]
    gate = _gate(
        "multiplication",
        "RLVR gains on the warm start",
        seed_ci(lambda s, e: float(e - s), rlvr.first_accuracy.to_numpy(), rlvr.final_accuracy.to_numpy()),
        len(rlvr),
    )
    pilot = " — PILOT" if "pilot" in str(path) else ""
    lines = [
        f"## RAL's judge capacity (`{path.relative_to(ROOT)}`){pilot}",
        "",
        f"Gate: RLVR's held-out gain {gate.numbers} ({'works' if word(gate.estimate, 0.0) == 'reproduced' else 'does not work'}).",
        "",
        "| claim | verdict | mean [95% t over seeds] | n |",
        "| --- | --- | --- | --- |",
    ]
    for method in df.method.unique():
        if method == "RLVR":
            continue
        ratio = seed_ci(gain_ratio, *_ratio_rows(df, method, "RLVR", "first_accuracy", "final_accuracy"))
        f = Finding("multiplication", method, "RLVR", ratio, 0.5, True, "", "")
        parity = word(ratio, 1.0)
        lines.append(
            _line(
                f"{method} reaches ½ of RLVR's gain (parity: {parity})",
                f,
                ratio.n,
                gate,
                f"gain ratio {ratio.bounds(digits=2)}",
            )
        )
    finals = {m: g.set_index("seed").final_accuracy for m, g in df.groupby("method")}
    for a, b, claim in [
        (m, "RAL format-only", f"{m}'s judge adds to the format reward alone")
        for m in finals
        if m.startswith("RAL ") and "frozen" not in m and m != "RAL format-only"
    ] + [
        (
            m.removesuffix(" frozen judge"),
            m,
            f"a co-trained judge beats a frozen one ({m.removesuffix(' frozen judge')})",
        )
        for m in finals
        if m.endswith("frozen judge")
    ]:
        seeds = sorted(set(finals[a].index) & set(finals[b].index))
        diff = seed_ci(lambda x, y: float(x - y), finals[a].loc[seeds].to_numpy(), finals[b].loc[seeds].to_numpy())
        f = Finding("multiplication", claim, b, diff, 0.0, True, "", "")
        lines.append(
            _line(claim, f, diff.n, gate, f"final accuracy {a} − {b} {diff.bounds(scale=100, sign=True)} points")
        )
    return lines + [""]


def varl_hacking(path: Path) -> list[str]:
    """The hacking study: RLVR (proxy)'s hack-rate rise (the gate), each method − RLVR (proxy) at the last step."""
    df = pd.read_csv(path)
    last = df[df.step == df[df.method == "RLVR (proxy)"].step.max()]
    first = df[df.step == 0]
    rl = "RLVR (proxy)"
    start, end = (t[t.method == rl].set_index("seed")["eval/hack_rate"] for t in (first, last))
    seeds = sorted(set(start.index) & set(end.index))
    gate = _gate(
        "hackable_multiplication",
        "RLVR on the proxy raises the hack rate",
        seed_ci(lambda s, e: float(e - s), start.loc[seeds].to_numpy(), end.loc[seeds].to_numpy()),
        len(seeds),
    )
    pilot = " — PILOT" if "pilot" in str(path) or "probe" in str(path) else ""
    lines = [
        f"## VARL's hacking study (`{path.relative_to(ROOT)}`){pilot}",
        "",
        f"Gate: RLVR (proxy)'s held-out hack-rate change {gate.numbers} "
        f"({'works' if word(gate.estimate, 0.0) == 'reproduced' else 'does not work'}).",
        "",
        "| claim: the method hacks less than RLVR (proxy) | verdict | hack rate − RLVR's, mean [95% t over seeds] | "
        "strict accuracy − RLVR's | n |",
        "| --- | --- | --- | --- | --- |",
    ]
    base = last[last.method == rl].set_index("seed")
    for method in last.method.unique():
        if method in (rl, "SFT"):
            continue
        mine = last[last.method == method].set_index("seed")
        common = sorted(set(mine.index) & set(base.index))
        hack, acc = (
            seed_ci(lambda x, y: float(x - y), base.loc[common, k].to_numpy(), mine.loc[common, k].to_numpy())
            for k in ("eval/hack_rate", "eval/accuracy")
        )
        gap = seed_ci(
            lambda x, y: float(y - x),
            base.loc[common, "eval/hack_rate"].to_numpy(),
            mine.loc[common, "eval/hack_rate"].to_numpy(),
        )
        acc = seed_ci(
            lambda x, y: float(y - x),
            base.loc[common, "eval/accuracy"].to_numpy(),
            mine.loc[common, "eval/accuracy"].to_numpy(),
        )
        f = Finding("hackable_multiplication", method, rl, hack, 0.0, True, "", "")
        lines.append(
            f"| {method} | {verdict(f, hack.n, gate)} | {gap.bounds(scale=100, sign=True)} points | "
            f"{acc.bounds(scale=100, sign=True)} points | {hack.n} seeds |"
        )
    return lines + [""]


def rcrl(path: Path) -> list[str]:
    """The RcRL study: each method's win rate against the warm start per seed, and RcRL − Absolute RaR per level."""
    df = pd.read_csv(path)
    last = df[df.step == df.step.max()]
    lines = [
        f"## RcRL across the judge's miscalibration (`{path.relative_to(ROOT)}`)",
        "",
        "No positive control runs in this study (the board's RLVR oracle is its control); the claims' words are "
        "read against their thresholds without a gate.",
        "",
        "| m | method | win rate vs warm start, mean [95% t over seeds] (%) | n |",
        "| --- | --- | --- | --- |",
    ]
    for (m, method), g in last.groupby(["miscalibration", "method"], sort=False):
        win = mean_ci(g.sort_values("seed").win_rate_vs_warm_start.to_numpy())
        lines.append(f"| {m:g} | {method} | {win.bounds(scale=100)} | {win.n} seeds |")
    lines += [
        "",
        "RcRL beats Absolute RaR at each level — read from the CSV as each seed's mean oracle-quality difference "
        "(the study's own report reads it prompt by prompt, from per-prompt outputs not committed):",
        "",
        "| m | verdict | oracle quality RcRL − Absolute RaR, mean [95% t over seeds] | n |",
        "| --- | --- | --- | --- |",
    ]
    for m, g in last.groupby("miscalibration"):
        a, b = (g[g.method == x].set_index("seed").quality for x in ("RcRL", "Absolute RaR"))
        if a.empty or b.empty:
            continue
        common = sorted(set(a.index) & set(b.index))
        diff = seed_ci(lambda x, y: float(x - y), a.loc[common].to_numpy(), b.loc[common].to_numpy())
        lines.append(f"| {m:g} | {word(diff, 0.0)} | {diff.bounds(digits=3, sign=True)} | {diff.n} seeds |")
    return lines + [""]


STUDIES = [
    ("ral_vs_rlvr.csv", ral_vs_rlvr),
    ("history/ral_vs_rlvr_2026-12-01/ral_vs_rlvr.csv", ral_vs_rlvr),
    ("ral_capacity.csv", ral_capacity),
    ("history/ral_capacity_2026-12-02/ral_capacity.csv", ral_capacity),
    ("history/pilots/ral_capacity_pilot_recipe_lr/ral_capacity.csv", ral_capacity),
    ("varl_hacking.csv", varl_hacking),
    ("history/varl_hacking_2026-12-03/varl_hacking.csv", varl_hacking),
    ("varl_hacking_hedge0.1/varl_hacking.csv", varl_hacking),
    ("history/varl_hacking_points_2026-12-03/varl_hacking_hedge0.1/varl_hacking.csv", varl_hacking),
    ("varl_hacking_lr1e-3/varl_hacking.csv", varl_hacking),
    ("history/varl_hacking_points_2026-12-03/varl_hacking_lr1e-3/varl_hacking.csv", varl_hacking),
    ("history/pilots/varl_hacking_pilot/varl_hacking.csv", varl_hacking),
    ("history/pilots/varl_hacking_t15_probe/varl_hacking.csv", varl_hacking),
    ("rcrl.csv", rcrl),
    ("history/rcrl_2026-12-02/rcrl.csv", rcrl),
]
"""Each study CSV (under benchmarks/results/) and the function that re-reads it."""


def main(argv: list[str] | None = None) -> int:
    """Write the seed-level gates and claims of every study."""
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=RESULTS / "study_verdicts.md")
    args = parser.parse_args(argv)
    lines = [
        f"`{shlex.join(['python', 'benchmarks/study_verdicts.py', *argv])}`",
        "",
        "# The studies' gates and claims with the seed as the unit",
        "",
        "Re-read from each study's committed CSV (its run directories are not committed): every interval is the "
        "95% t-interval over seeds of the per-seed effects (`rewardzoo.eval.seed_ci`), every verdict the "
        "protocol's (`rewardzoo.protocol.verdict`: ≥ 3 seeds, the gate first). These supersede the percentile "
        "bootstrap intervals (over seeds × examples) the studies' own reports printed.",
        "",
    ]
    for name, read in STUDIES:
        lines += read(RESULTS / name)
    args.out.write_text("\n".join(lines))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
