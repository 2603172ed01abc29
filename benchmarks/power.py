"""Statistical power of the CPU presets: can a preset tell two rewards apart?

For each preset (a task's reference method — RLVR where the task has a verifier — and its headline
held-out metric) this trains the recipe over several seeds (or reuses finished runs in --runs) and
prints, from the runs' own files:

- the warm start's held-out metric (mean and 95% t-interval over seeds),
- the method's gain over its warm start (signed: positive = better): mean ± std over seeds, the t-interval, and a paired
  two-level bootstrap interval over seeds × held-out examples (rewardzoo.eval.bootstrap_ci),
- the standard error of the held-out metric from its own sampling (sd over examples / √E),
- the smallest difference between two methods that 3 and 5 seeds detect with a paired t-test
  (α = 0.05, power 0.8), taking the per-seed difference's sd as √2 × the gain's sd over seeds
  (two methods as variable as this one, independent given the seed — an assumption, stated),
- whether the preset meets the target: gain ≥ 5 × its sd over seeds, held-out set ≥ 1,000, one run
  ≤ 300 s (the SFT warm start, cached, excluded; the sweep trains it first),

and writes ``OUT/power.md``, ``OUT/power.csv`` and ``OUT/power.png`` (learning curves, mean and
95% band over seeds).  The first line of power.md is the command that wrote it.

    python benchmarks/power.py --presets multiplication refdist rubric_writing hackable_multiplication \
        --seeds 0 1 2 3 4 --runs runs/power --out benchmarks/results/power

Run directories go under ``--runs`` (default ``runs/power``, ``RUNS/<preset>/<slug>/seed<s>``), results
under ``--out``; every run evaluates on the task's test split (``eval.split`` at its default).  The
committed power.md was made from this script's own runs (``--runs runs/power``); the leaderboard tunes each row
and keeps its runs under ``RUNS/<task>/<row>/<setting>/seed<s>`` (docs/leaderboard.md), so it shares none with
this script.  The same measurement on the
board's own runs is its positive-control line (``rewardzoo.board.positive_control``).
"""

from __future__ import annotations

import argparse
import csv
import math
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from rewardzoo.eval import bootstrap_ci, detectable_difference, mean_ci  # noqa: E402
from rewardzoo.sweep import RunSpec, eval_rows, run_sweep  # noqa: E402


@dataclass(frozen=True)
class Preset:
    """A task's preset and the effect its power is judged by: ``method`` (trained by ``recipe`` with
    ``overrides``) moving the held-out ``metric`` from the warm start in direction ``better``."""

    recipe: str
    metric: str
    row_key: str | None
    """Per-example key in ``eval_rows.jsonl`` (None: the metric is exact, no held-out sampling)."""
    meaning: str
    method: str = "RLVR"
    slug: str = "rlvr"
    """The run directory name: the leaderboard's (``rewardzoo.board.slug`` of its method label), so
    that ``--runs`` pointed at a leaderboard's run directories reuses its runs."""
    overrides: tuple[str, ...] = ()
    better: int = +1
    """+1 when a larger metric is better (accuracy), -1 when smaller is (a divergence)."""


PRESETS = {
    "multiplication": Preset(
        "algorithms/rlvr_multiplication.yaml", "eval/accuracy", "correct", "held-out exact accuracy"
    ),
    "countdown": Preset("algorithms/rlvr_countdown.yaml", "eval/accuracy", "correct", "held-out exact accuracy"),
    "hackable_multiplication": Preset(
        "algorithms/rlvr_hackable_multiplication.yaml",
        "eval/hack_rate",
        "hack_rate",
        "held-out hack rate (proxy passes the strict check fails)",
        "RLVR (proxy)",
        "rlvr_proxy",
    ),
    "refdist": Preset(
        "algorithms/ral_refdist.yaml",
        "eval/js",
        None,
        "exact JS divergence of the policy's answer distribution to p_ref (lower is better)",
        "RAL g=D",
        "ral_g_d",
        ("reward.ral.g=D",),
        better=-1,
    ),
    "rubric_writing": Preset(
        "algorithms/rcrl_rubric_writing.yaml",
        "eval/quality",
        "quality",
        "held-out oracle quality of the written sentence",
        "RcRL",
        "rcrl",
    ),
}
"""The task's reference effect: RLVR's gain where the task has a verifier; on refdist (no verifier to
gain on: RLVR leaves the distribution where SFT put it) the paper's RAL, g = D; on rubric writing RcRL."""
TARGET_RATIO, TARGET_EVAL, TARGET_RUN_S = 5.0, 1000, 300.0


def specs(preset: str, seeds: list[int], out: Path, extra: list[str]) -> list[RunSpec]:
    """One run of the preset's method per seed, under ``out/<preset>/<slug>/seed<s>`` (the leaderboard's layout)."""
    p = PRESETS[preset]
    return [
        RunSpec(f"{preset}/seed{s}", p.recipe, out / preset / p.slug / f"seed{s}", (f"seed={s}", *p.overrides, *extra))
        for s in seeds
    ]


def analyse(preset: str, results) -> dict:
    """The power summary of one preset from its finished runs."""
    p = PRESETS[preset]
    metric, row_key = p.metric, p.row_key
    starts, ends, tables_start, tables_end, walls, curves, n_eval = [], [], [], [], [], [], 0
    for result in results:
        curve = {r["step"]: r[metric] for r in result.rows if r.get(metric) is not None}
        if row_key is None:  # an exact metric: the logged value is the whole measurement
            starts.append(curve[min(curve)])
            ends.append(curve[max(curve)])
            n_eval = len(next(iter(eval_rows(result.spec.run_dir).values()), {}).get("correct", []))  # prompts
        else:
            rows = eval_rows(result.spec.run_dir)
            first, last = min(rows), max(rows)
            tables_start.append(rows[first][row_key])
            tables_end.append(rows[last][row_key])
            starts.append(float(np.mean(rows[first][row_key])))
            ends.append(float(np.mean(rows[last][row_key])))
        walls.append(result.wall_s)
        curves.append(curve)
    gains = p.better * (np.array(ends) - np.array(starts))  # [S], positive = improvement
    gain_sd = float(gains.std(ddof=1)) if len(gains) > 1 else math.nan
    if row_key is None:
        boot, se_metric = None, 0.0
    else:
        a, b = np.array(tables_start), np.array(tables_end)  # [S, E] each
        n_eval = a.shape[1]
        boot = bootstrap_ci(lambda x, y: float(p.better * (y.mean() - x.mean())), a, b)
        se_metric = float(np.mean([np.std(t, ddof=1) / math.sqrt(len(t)) for t in tables_end]))
    return {
        "preset": preset,
        "method": p.method,
        "metric": metric,
        "exact": row_key is None,
        "seeds": len(gains),
        "n_eval": n_eval,
        "warm_start": mean_ci(starts),
        "final": mean_ci(ends),
        "gain": mean_ci(gains),
        "gain_sd": gain_sd,
        "gain_boot": boot,
        "se_metric": se_metric,
        "ratio": float(gains.mean() / gain_sd) if gain_sd > 0 else math.inf,
        "mdd3": detectable_difference(math.sqrt(2) * gain_sd, 3),
        "mdd5": detectable_difference(math.sqrt(2) * gain_sd, 5),
        "run_s": float(np.median(walls)),
        "gains": gains.tolist(),
        "curves": curves,
    }


def misses(s: dict) -> list[str]:
    """The parts of the power target a preset misses (none: it meets the target)."""
    out = []
    if not s["ratio"] >= TARGET_RATIO:
        out.append(f"gain/sd < {TARGET_RATIO:g}")
    if s["seeds"] < 5:
        out.append("< 5 seeds")
    if s["n_eval"] < TARGET_EVAL and not s["exact"]:
        out.append(f"< {TARGET_EVAL:,} held-out")
    if s["run_s"] > TARGET_RUN_S:
        out.append(f"run > {TARGET_RUN_S:g} s")
    return out


def meets(s: dict) -> bool:
    """The power target of the issue: gain ≥ 5 × sd over ≥ 5 seeds, ≥ 1,000 held-out examples (an exact
    metric has no held-out sampling error to bound), ≤ 300 s per run."""
    return not misses(s)


def verdict(s: dict) -> str:
    """'yes', or 'no: ' and what is missed."""
    return "yes" if meets(s) else "no: " + ", ".join(misses(s))


def units(s: dict) -> dict:
    """How the preset's metric is printed: points (one decimal) for a rate, three decimals for a
    divergence or a score (keyword arguments of :meth:`rewardzoo.eval.Estimate.format`)."""
    return {"scale": 100, "digits": 1} if s["metric"].endswith(("accuracy", "hack_rate")) else {"scale": 1, "digits": 3}


def fmt(s: dict, x: float, sign: bool = False) -> str:
    """A value of the preset's metric, in its units."""
    if not math.isfinite(x):
        return "n/a"
    u = units(s)
    return f"{x * u['scale']:{'+' if sign else ''}.{u['digits']}f}"


def est(s: dict, e, sign: bool = False, bootstrap: bool = False) -> str:
    """An interval in the preset's units: mean ± half-width (a t-interval), or mean [low, high] for a
    ``bootstrap`` one (a percentile interval need not be symmetric about its mean)."""
    if e is None:
        return "n/a (exact metric)"
    return e.bounds(**units(s), sign=sign) if bootstrap else e.format(**units(s), sign=sign)


def write(summaries: list[dict], out: Path, command: str) -> None:
    """power.md, power.csv and power.png."""
    out.mkdir(parents=True, exist_ok=True)
    lines = [
        f"`{command}`",
        "",
        "# Power of the CPU presets",
        "",
        "Each preset's reference effect — the method's change of the headline held-out metric from its warm "
        "start, signed so that positive is better — in points for rates, raw for divergences and scores; "
        "intervals are 95%: t over seeds, and a paired bootstrap over seeds × held-out examples (none for an "
        "exact metric, which has no sampling error). MDD = minimal detectable paired difference between two "
        "methods (α = 0.05, power 0.8), assuming each method's gain varies over seeds like this one's. "
        f"Target: gain ≥ {TARGET_RATIO:g} × its sd over ≥ 5 seeds, ≥ {TARGET_EVAL:,} held-out examples, one run "
        f"≤ {TARGET_RUN_S:g} s (the cached warm start excluded).",
        "",
        "| preset | method | metric | seeds | held-out | warm start | gain (t-CI) | gain (bootstrap) | gain sd | "
        "gain / sd | SE of metric | MDD 3 seeds | MDD 5 seeds | run (s, median) | target met |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for s in summaries:
        held = f"{s['n_eval']} prompts (exact)" if s["exact"] else str(s["n_eval"])
        lines.append(
            f"| {s['preset']} | {s['method']} | `{s['metric']}` | {s['seeds']} | {held} | "
            f"{est(s, s['warm_start'])} | {est(s, s['gain'], sign=True)} | {est(s, s['gain_boot'], sign=True, bootstrap=True)} | "
            f"{fmt(s, s['gain_sd'])} | {s['ratio']:.1f} | {fmt(s, s['se_metric'])} | {fmt(s, s['mdd3'])} | "
            f"{fmt(s, s['mdd5'])} | {s['run_s']:.0f} | {verdict(s)} |"
        )
    lines += [
        "",
        "Gains by seed: "
        + "; ".join(f"{s['preset']}: " + ", ".join(fmt(s, g, sign=True) for g in s["gains"]) for s in summaries),
        "",
    ]
    (out / "power.md").write_text("\n".join(lines) + "\n")
    with open(out / "power.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(
            [
                "preset",
                "method",
                "metric",
                "seeds",
                "n_eval",
                "warm_start",
                "gain_mean",
                "gain_low",
                "gain_high",
                "gain_sd",
                "ratio",
                "se_metric",
                "mdd3",
                "mdd5",
                "run_s",
                "target_met",
            ]
        )
        for s in summaries:
            w.writerow(
                [
                    s["preset"],
                    s["method"],
                    s["metric"],
                    s["seeds"],
                    s["n_eval"],
                    s["warm_start"].mean,
                    s["gain"].mean,
                    s["gain"].low,
                    s["gain"].high,
                    s["gain_sd"],
                    s["ratio"],
                    s["se_metric"],
                    s["mdd3"],
                    s["mdd5"],
                    s["run_s"],
                    meets(s),
                ]
            )
    fig, axes = plt.subplots(1, len(summaries), figsize=(5 * len(summaries), 3.6), squeeze=False)
    for ax, s in zip(axes[0], summaries):
        steps = sorted(set.intersection(*(set(c) for c in s["curves"])))
        band = [mean_ci([c[t] for c in s["curves"]]) for t in steps]
        ax.plot(steps, [e.mean for e in band], color="C0", label=f"{s['method']}, {s['seeds']} seeds")
        ax.fill_between(steps, [e.low for e in band], [e.high for e in band], color="C0", alpha=0.25, label="95% CI")
        ax.set_title(s["preset"])
        ax.set_xlabel("RL step")
        ax.set_ylabel(s["metric"])
        ax.legend(loc="best")
    fig.tight_layout()
    fig.savefig(out / "power.png", dpi=120)


def main(argv: list[str] | None = None) -> int:
    """Run (or reuse) the presets' runs and write the power table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--presets", nargs="+", default=list(PRESETS), choices=list(PRESETS))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/power"))
    parser.add_argument("--runs", type=Path, default=Path("runs/power"), help="where the runs are (and are reused)")
    parser.add_argument("--jobs", type=int, default=2, help="runs in parallel (one thread each)")
    parser.add_argument("--override", nargs="*", default=[], help="key=value for every run (e.g. a shorter test)")
    args = parser.parse_args(argv)
    command = "python benchmarks/power.py " + " ".join(
        shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:])
    )
    all_specs = {p: specs(p, args.seeds, args.runs, args.override) for p in args.presets}
    results = run_sweep([s for group in all_specs.values() for s in group], jobs=args.jobs, desc="power")
    summaries = [analyse(p, [results[s.name] for s in group]) for p, group in all_specs.items()]
    write(summaries, args.out, command)
    print((args.out / "power.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
