"""One-sided error of each verdict interval at its claim's threshold, on the committed boards' own per-seed effects.

A verdict is one-sided: "reproduced" when the 95% interval lies above the claim's threshold θ, "not reproduced" when
it lies below.  Each interval promises to do either wrongly at most 2.5% of the time.  This audit measures that
promise on the seeds the boards actually drew — bimodal (a run hacks or not, collapses or not), skewed — instead of
on a normal model, under which a t-interval is exact by construction.

For every claim (and positive control) in :data:`POOLS`, the per-seed effects of its committed board or study are a
*pool*: per-seed differences, (arm gain, base gain) pairs of a ratio claim, per-seed win rates.  For each interval
(:data:`INTERVALS`) the pool is shifted so that the interval's own estimand sits exactly at θ (a null world built
from the real data: the mean, the pseudo-median, the trimmed mean, the ratio of mean gains, or the margin
a − θ·b's pseudo-median), then ``--reps`` claims of 3, 5, 10 and 42 seeds are drawn from it with replacement and
the interval computed on each (the library's own functions, :mod:`rewardzoo.eval`).  The table reports how often the
interval lies wholly above θ (a false "reproduced") and wholly below it (a false "not reproduced"), each with its
Monte-Carlo error (two standard errors of a 2.5% rate at ``--reps`` draws).  An interval *keeps its promise* on a
pool and seed count when neither side exceeds 2.5% + that error.  A pool stands for claims of at most as many seeds
as it holds; a draw of more (10 or 42 from a 5-seed pool) repeats seeds, a world of a few tied atoms the boards never
produce, so those cells are reported but not held to the promise (:func:`held`).  Each kind's verdict interval
(:data:`CHOSEN`) is the one that breaks its promise in the fewest held cells.

    python benchmarks/audits/interval_coverage.py --reps 2000

writes ``benchmarks/results/audits/interval_coverage.md`` (first line: the command).
``tests/benchmarks/test_interval_coverage.py`` runs a small version in the default suite: it fails when the chosen
interval of a kind errs beyond the bound, and shows the old percentile bootstrap failing at 3 seeds.
"""

from __future__ import annotations

import argparse
import functools
import math
import shlex
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from rewardzoo.eval import (
    Estimate,
    fieller_ci,
    hodges_lehmann_ci,
    mean_ci,
    ratio_bootstrap_t,
    seed_bootstrap_ci,
    sign_flip_ci,
    trimmed_mean_ci,
)

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"
SEED_COUNTS = (3, 5, 10, 42)
NOMINAL = 0.025
"""The one-sided error a 95% interval promises on each side."""


@dataclass(frozen=True)
class Pool:
    """One claim's per-seed effects on a committed board or study: ``values`` [S] (a difference or a win rate) or
    ``(arm gain, base gain)`` [S] each (a ratio), with the claim's threshold."""

    name: str
    kind: str
    """``difference``, ``ratio`` or ``win rate``."""
    source: str
    values: tuple[np.ndarray, ...]
    threshold: float

    @property
    def seeds(self) -> int:
        """Seeds in the pool."""
        return int(self.values[0].size)


@functools.cache
def _board(path: str) -> pd.DataFrame:
    """A committed board's ``leaderboard.csv`` or a study's CSV (read once)."""
    return pd.read_csv(RESULTS / path, low_memory=False, usecols=lambda c: not c.startswith(("analysis/", "warmup/")))


def _row(frame: pd.DataFrame, key: str, **match) -> np.ndarray:
    """[S] the column ``key`` of the rows matching ``match``, in seed order."""
    rows = frame
    for column, value in match.items():
        rows = rows[rows[column] == value]
    if rows.empty:
        raise ValueError(f"no rows {match} in the committed results")
    return rows.sort_values("seed")[key].to_numpy(dtype=float)


BOARD_DIFFERENCES = (
    ("leaderboard/leaderboard.csv", "multiplication", "eval/accuracy", "RAL", "RAL format-only"),
    ("leaderboard/leaderboard.csv", "multiplication", "eval/accuracy", "RAL", "RAL frozen judge"),
    ("leaderboard/leaderboard.csv", "multiplication", "eval/accuracy", "RLVR", "SFT"),
    ("leaderboard/leaderboard.csv", "hackable_multiplication", "eval/hack_rate", "RLVR (proxy)", "VARL (proxy gate)"),
    ("leaderboard/leaderboard.csv", "hackable_multiplication", "eval/hack_rate", "RLVR (proxy)", "SFT"),
    ("leaderboard/leaderboard.csv", "refdist", "eval/top_answer_share", "RAL g=D frozen judge", "RAL g=D"),
    ("leaderboard/leaderboard.csv", "rubric_writing", "eval/quality", "RcRL", "Absolute RaR"),
    ("leaderboard/leaderboard.csv", "rubric_writing", "policy/entropy", "RcRL", "Absolute RaR"),
    ("real_model/board/leaderboard.csv", "chat_multiplication", "eval/accuracy", "RAL", "RAL format-only"),
    ("real_model/board/leaderboard.csv", "chat_multiplication", "eval/accuracy", "RLVR", "Instruct (step 0)"),
    ("real_model/next_board/leaderboard.csv", "chat_multiplication", "eval/accuracy", "RAL", "RAL format-only"),
    ("real_model/next_board/leaderboard.csv", "chat_multiplication", "eval/accuracy", "RLVR", "Instruct (step 0)"),
)
"""Board claims and positive controls read as a paired difference of two rows' final values (threshold 0)."""

BOARD_RATIOS = (
    ("leaderboard/leaderboard.csv", "multiplication", "RAL", "RLVR", "SFT"),
    ("real_model/board/leaderboard.csv", "chat_multiplication", "RAL", "RLVR", "Instruct (step 0)"),
    ("real_model/next_board/leaderboard.csv", "chat_multiplication", "RAL", "RLVR", "Instruct (step 0)"),
)
"""Board ratio claims: (arm, base, warm start) — each seed's held-out accuracy gain of the arm and of the base."""

STUDY_DIFFERENCES = (
    ("ral_capacity.csv", "method", "final_accuracy", "RAL pre1000", "RAL format-only"),
    ("ral_capacity.csv", "method", "final_accuracy", "RAL large300", "RAL format-only"),
    ("ral_capacity.csv", "method", "gain", "RLVR", None),
    ("ral_vs_rlvr.csv", "variant", "gain", "RLVR", None),
)
"""Study claims and gates as per-seed differences (``None``: the row's own gain over its start)."""

STUDY_RATIOS = (
    ("ral_vs_rlvr.csv", "variant", "RAL", "RLVR"),
    ("ral_capacity.csv", "method", "RAL pre1000", "RLVR"),
    ("ral_capacity.csv", "method", "RAL large300", "RLVR"),
)
"""Study ratio claims: (arm, base) rows whose ``gain`` column gives each seed's gain."""

WIN_RATES = ("RcRL", "Absolute RaR")
"""Rows of ``rcrl.csv`` whose final per-seed win rate against the warm start is a win-rate pool (threshold ½)."""


def pools() -> list[Pool]:
    """Every pool of the committed boards and studies (:data:`BOARD_DIFFERENCES` … :data:`WIN_RATES`)."""
    found = []
    for path, task, key, a, b in BOARD_DIFFERENCES:
        frame = _board(path)
        d = _row(frame, key, task=task, method=a) - _row(frame, key, task=task, method=b)
        found.append(Pool(f"{task}: {a} − {b} ({key.removeprefix('eval/')})", "difference", path, (d,), 0.0))
    for path, task, arm, base, start in BOARD_RATIOS:
        frame = _board(path)
        s = _row(frame, "eval/accuracy", task=task, method=start)
        gains = tuple(_row(frame, "eval/accuracy", task=task, method=m) - s for m in (arm, base))
        found.append(Pool(f"{task}: {arm} gain / {base} gain", "ratio", path, gains, 0.5))
    for path, column, key, a, b in STUDY_DIFFERENCES:
        frame = _board(path)
        d = _row(frame, key, **{column: a}) - (0.0 if b is None else _row(frame, key, **{column: b}))
        name = f"{a} gain" if b is None else f"{a} − {b} ({key})"
        found.append(Pool(name, "difference", path, (d,), 0.0))
    for path, column, arm, base in STUDY_RATIOS:
        frame = _board(path)
        gains = tuple(_row(frame, "gain", **{column: m}) for m in (arm, base))
        found.append(Pool(f"{arm} gain / {base} gain", "ratio", path, gains, 0.5))
    rcrl = _board("rcrl.csv")
    final = rcrl[rcrl["step"] == rcrl["step"].max()]
    for (miscalibration, method), rows in final.groupby(["miscalibration", "method"]):
        if method in WIN_RATES:
            w = rows.sort_values("seed")["win_rate_vs_warm_start"].to_numpy(dtype=float)
            found.append(
                Pool(f"{method} vs warm start, miscalibration {miscalibration:g}", "win rate", "rcrl.csv", (w,), 0.5)
            )
    return found


def pseudo_median(x: np.ndarray) -> float:
    """The population pseudo-median of a pool drawn with replacement: the median of (X + X')/2 over all n² pairs."""
    return float(np.median((x[:, None] + x[None, :]) / 2))


def _trimmed(x: np.ndarray) -> float:
    return trimmed_mean_ci(x).mean


@dataclass(frozen=True)
class Interval:
    """An interval as the audit runs it: ``world`` shifts a pool so the interval's estimand sits at θ; ``bounds``
    gives the interval of a drawn sample as an :class:`~rewardzoo.eval.Estimate` on the scale of ``reference(θ)``."""

    name: str
    estimand: str
    world: Callable[[tuple[np.ndarray, ...], float], tuple[np.ndarray, ...]]
    bounds: Callable[..., Estimate]
    reference: Callable[[float], float] = lambda theta: theta


def _shift(centre: Callable[[np.ndarray], float]):
    return lambda v, theta: (v[0] - centre(v[0]) + theta,)


def _margin(v, theta):
    """The margin a − θ·b, shifted so its pseudo-median is 0."""
    m = v[0] - theta * v[1]
    return (m - pseudo_median(m),)


def _ratio_world(v, theta):
    """a shifted so that ā = θ·b̄: the ratio of mean gains at θ, b as drawn."""
    return (v[0] - v[0].mean() + theta * v[1].mean(), v[1])


def _per_seed_ratio(v, theta):
    """The old rule's estimand, the mean of per-seed ratios a/b (seeds whose base did not gain dropped), at θ."""
    r = v[0][v[1] > 0] / v[1][v[1] > 0]
    return (r - r.mean() + theta,)


LOCATION = (
    Interval("t-interval (mean)", "mean", _shift(np.mean), mean_ci),
    Interval("Hodges–Lehmann / Wilcoxon", "pseudo-median", _shift(pseudo_median), hodges_lehmann_ci),
    Interval("20% trimmed mean (Yuen)", "trimmed mean", _shift(_trimmed), trimmed_mean_ci),
    Interval("sign-flip permutation (mean)", "mean", _shift(np.mean), lambda x: sign_flip_ci(x, n_flips=999)),
    Interval("percentile bootstrap (mean)", "mean", _shift(np.mean), lambda x: seed_bootstrap_ci(x, n_boot=499)),
    Interval("BCa bootstrap (mean)", "mean", _shift(np.mean), lambda x: seed_bootstrap_ci(x, "BCa", n_boot=499)),
)
INTERVALS: dict[str, tuple[Interval, ...]] = {
    "difference": LOCATION,
    "win rate": LOCATION,
    "ratio": (
        Interval("t-interval of per-seed ratios (the old rule)", "mean of per-seed ratios", _per_seed_ratio, mean_ci),
        Interval("Fieller", "ratio of mean gains", _ratio_world, fieller_ci),
        Interval(
            "studentized bootstrap",
            "ratio of mean gains",
            _ratio_world,
            lambda a, b: ratio_bootstrap_t(a, b, n_boot=299),
        ),
        Interval(
            "Hodges–Lehmann / Wilcoxon of a − θ·b",
            "pseudo-median of the margin",
            _margin,
            hodges_lehmann_ci,
            lambda theta: 0.0,
        ),
    ),
}
"""The intervals audited for each kind of claim."""

CHOSEN = {
    "difference": "Hodges–Lehmann / Wilcoxon",
    "win rate": "Hodges–Lehmann / Wilcoxon",
    "ratio": "Hodges–Lehmann / Wilcoxon of a − θ·b",
}
"""The interval each kind's verdict reads (docs/metrics.md, "How a verdict is read"): the one that breaks its promise
in the fewest held cells of the committed result (``benchmarks/results/audits/interval_coverage.md``)."""


def one_sided_errors(pool: Pool, interval: Interval, seeds: int, reps: int, seed: int = 0) -> tuple[float, float]:
    """(false "reproduced", false "not reproduced") rates of ``interval`` over ``reps`` claims of ``seeds`` seeds drawn
    with replacement from ``pool``'s null world."""
    world = interval.world(pool.values, pool.threshold)
    ref = interval.reference(pool.threshold)
    draws = np.random.default_rng(seed).integers(0, world[0].size, size=(reps, seeds))  # [R, n]
    above = below = 0
    for idx in draws:
        e = interval.bounds(*(w[idx] for w in world))
        above += e.low > ref
        below += e.high < ref
    return above / reps, below / reps


def mc_error(reps: int) -> float:
    """Two standard errors of a 2.5% rate estimated from ``reps`` draws."""
    return 2 * math.sqrt(NOMINAL * (1 - NOMINAL) / reps)


def held(pool: Pool, seeds: int) -> bool:
    """Whether a cell is held to the promise: a claim of no more seeds than the pool holds."""
    return seeds <= pool.seeds


def keeps_promise(errors: tuple[float, float], reps: int) -> bool:
    """Whether neither side's error exceeds 2.5% + the Monte-Carlo error."""
    return max(errors) <= NOMINAL + mc_error(reps)


def main(argv: list[str] | None = None) -> int:
    """Run every pool × interval × seed count; write the table."""
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=2000, help="claims drawn per pool, interval and seed count")
    parser.add_argument("--out", type=Path, default=RESULTS / "audits" / "interval_coverage.md")
    args = parser.parse_args(argv)
    if args.reps < 200:
        raise SystemExit(
            f"--reps must be at least 200 (the Monte-Carlo error of a 2.5% rate grows below); got {args.reps}"
        )
    bound = NOMINAL + mc_error(args.reps)
    every = pools()
    lines = [
        f"`{shlex.join(['python', 'benchmarks/audits/interval_coverage.py', *argv])}`",
        "",
        "# One-sided error of each verdict interval at its claim's threshold, on the boards' own seeds",
        "",
        f"Each cell: how often, over {args.reps} claims drawn with replacement from the pool's null world (the pool "
        "shifted so the interval's estimand sits at the threshold), the 95% interval lies wholly above the threshold "
        "(a false *reproduced*) / wholly below it (a false *not reproduced*). Each side promises 2.5%; the "
        f"Monte-Carlo error is ±{100 * mc_error(args.reps):.1f} points (two standard errors at 2.5%), so a cell "
        f"over {100 * bound:.1f}% on either side breaks the promise (**bold**). An interval that cannot reach 95% "
        "from so few seeds (Hodges–Lehmann and the sign flip below 6) is (−∞, ∞) and never errs — nor decides. "
        "A cell in parentheses draws more seeds than its pool holds (repeated seeds, ties the boards never have): "
        "reported, not held to the promise.",
        "",
    ]
    summary: dict[tuple[str, str], list[int]] = {}
    for kind in ("difference", "ratio", "win rate"):
        lines += [f"## {kind} claims", ""]
        for pool in (p for p in every if p.kind == kind):
            lines += [
                f"### {pool.name} — `{pool.source}`, {pool.seeds} seeds, threshold {pool.threshold:g}",
                "",
                "| interval (estimand) | " + " | ".join(f"{n} seeds" for n in SEED_COUNTS) + " |",
                "| --- |" + " ---: |" * len(SEED_COUNTS),
            ]
            for k, interval in enumerate(INTERVALS[kind]):
                cells = []
                for n in SEED_COUNTS:
                    errors = one_sided_errors(pool, interval, n, args.reps, seed=1000 * k + n)
                    ok = keeps_promise(errors, args.reps)
                    tally = summary.setdefault((kind, interval.name), [0, 0, 0])
                    if held(pool, n):
                        tally[0 if ok else 1] += 1
                    elif not ok:
                        tally[2] += 1
                    text = f"{100 * errors[0]:.1f}% / {100 * errors[1]:.1f}%"
                    text = text if ok else f"**{text}**"
                    cells.append(text if held(pool, n) else f"({text})")
                lines.append(f"| {interval.name} ({interval.estimand}) | " + " | ".join(cells) + " |")
                print(pool.name, interval.name, cells, flush=True)
            lines.append("")
    lines += [
        "## Summary: cells (pool × seed count) where each interval keeps its promise",
        "",
        "| kind | interval | held cells kept | held cells broken | broken beyond the pool's seeds | the verdict's interval |",
        "| --- | --- | ---: | ---: | ---: | --- |",
    ]
    for (kind, name), (kept, broken, beyond) in summary.items():
        chosen = "yes" if CHOSEN[kind] == name else ""
        lines.append(f"| {kind} | {name} | {kept} | {broken} | {beyond} | {chosen} |")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
