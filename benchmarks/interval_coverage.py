"""How often does a verdict's 95% interval cover the truth on the boards' design?

The design of a board's claim: S seeds (3 or 5), each training one run per method; each run scored on E
held-out examples (1,000 Bernoulli outcomes: right/wrong, hack/no hack); the claim is the paired
difference of two methods' held-out means.  A seed's runs differ by more than their held-out sampling
noise: the between-seed SD of the paired effect, ``tau``, is estimated from the committed board's
per-seed values (:func:`board_designs`: for each paired difference a board claim or positive control
reads, the SD over seeds of the per-seed difference, less the binomial variance its 1,000 examples add).
Per task, the difference with the largest ``tau`` is simulated at the board's own rates
(:func:`largest_per_task`).

Each simulated claim: per seed, the first method's held-out rate ``p_a`` and the second's
``clip(p_b + u_s, 0, 1)`` (u_s ~ N(0, tau)); E Bernoulli outcomes for each.  Then

- (a) the two-level percentile bootstrap over seeds × examples (:func:`rewardzoo.eval.bootstrap_ci` with
  the statistic ``b.mean() - a.mean()``, computed here in matrix form: a replicate's statistic is
  ``n_seeds ᵀ (b − a) n_examples / (S·E)`` with the multinomial resample counts of seeds and examples), and
- (b) the t-interval over seeds of the per-seed differences (:func:`rewardzoo.eval.seed_ci`, the interval
  every verdict uses),

and counts how often each contains the true expected difference (:attr:`Design.truth`).  Writes ``OUT`` (default
``benchmarks/results/interval_coverage.md``), whose first line is the command.

    python benchmarks/interval_coverage.py --sims 4000 --boot 1000

``tests/test_eval.py::test_seed_interval_covers_on_the_boards_design`` runs the same simulation (2,000
claims per seed count) in the default suite and fails when (b) covers below 93%.
"""

from __future__ import annotations

import argparse
import csv
import math
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy import stats as scipy_stats

ROOT = Path(__file__).resolve().parents[1]
BOARD = ROOT / "benchmarks" / "results" / "history" / "leaderboard_2026-12-03" / "leaderboard.csv"
"""The board this study was first run on (the canonical one until 2026-12-06), so its committed report reproduces;
``--board benchmarks/results/leaderboard/leaderboard.csv`` reads the current one."""
E = 1000
"""Held-out examples per run (multiplication's and hackable multiplication's test split)."""

PAIRS = (
    ("multiplication", "eval/accuracy", "RLVR", "SFT"),
    ("multiplication", "eval/accuracy", "RAL", "SFT"),
    ("multiplication", "eval/accuracy", "RAL", "RAL frozen judge"),
    ("multiplication", "eval/accuracy", "RAL", "RAL format-only"),
    ("hackable_multiplication", "eval/hack_rate", "RLVR (proxy)", "SFT"),
    ("hackable_multiplication", "eval/hack_rate", "RLVR (proxy)", "VARL (proxy gate)"),
)
"""The paired differences over 1,000 Bernoulli examples that the board's claims and positive controls read."""


def per_seed(board: Path, task: str, method: str, key: str) -> np.ndarray:
    """[S] final values of ``key`` for one row of the board's CSV, in seed order."""
    with open(board, newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["task"] == task and r["method"] == method]
    if not rows:
        raise ValueError(f"{board} has no row {task}/{method}")
    return np.array([float(r[key]) for r in sorted(rows, key=lambda r: int(r["seed"]))])


@dataclass(frozen=True)
class Design:
    """One simulated claim's design: per seed, the first method's held-out rate ``p_a`` and the second's
    ``clip(p_b + u_s, 0, 1)``, u_s ~ N(0, ``tau``); E Bernoulli examples each."""

    name: str
    p_a: float
    p_b: float
    tau: float
    observed_sd: float = math.nan
    """The SD over seeds of the per-seed difference on the board (tau plus the binomial part)."""

    @property
    def truth(self) -> float:
        """The expected paired difference: E[clip(p_b + u, 0, 1)] − p_a (the normal's mean censored at 0;
        the clip at 1 never binds on the boards' rates)."""
        if self.tau == 0:
            return self.p_b - self.p_a
        z = self.p_b / self.tau
        return self.p_b * scipy_stats.norm.cdf(z) + self.tau * scipy_stats.norm.pdf(z) - self.p_a


def board_designs(board: Path = BOARD) -> list[Design]:
    """For each paired difference in :data:`PAIRS`, its design on the board: the two rows' mean rates and the
    between-seed SD of the per-seed difference (observed variance less each side's binomial variance
    p(1 − p)/E, floored at 0)."""
    found = []
    for task, key, b, a in PAIRS:
        x, y = per_seed(board, task, b, key), per_seed(board, task, a, key)
        observed = float(np.std(x - y, ddof=1))
        noise = float(np.mean(x * (1 - x) + y * (1 - y)) / E)
        found.append(
            Design(
                f"{task}: {b} − {a} ({key.removeprefix('eval/')})",
                float(y.mean()),
                float(x.mean()),
                math.sqrt(max(observed**2 - noise, 0.0)),
                observed,
            )
        )
    return found


def largest_per_task(designs: list[Design]) -> list[Design]:
    """Per task, the design with the largest between-seed SD: the boards' worst case for an interval that
    does not treat the seed as the unit."""
    best: dict[str, Design] = {}
    for d in designs:
        task = d.name.split(":")[0]
        if task not in best or d.tau > best[task].tau:
            best[task] = d
    return list(best.values())


def percentile_bounds(d: np.ndarray, boot: int, rng: np.random.Generator, level: float = 0.95) -> np.ndarray:
    """[2, K] bounds of :func:`rewardzoo.eval.bootstrap_ci`'s interval for ``b.mean() - a.mean()`` of K claims'
    paired differences ``d`` = b − a [K, S, E], in matrix form: each replicate's statistic is
    ``n_seedsᵀ d n_examples / (S·E)``, with the multinomial resample counts of the seeds [K, B, S] and of the
    examples [E, B] (one example resample shared by every seed of a replicate, as in ``bootstrap_ci``)."""
    k, seeds, examples = d.shape
    n_ex = rng.multinomial(examples, np.full(examples, 1.0 / examples), size=boot).T.astype(np.float32)  # [E, B]
    n_seed = rng.multinomial(seeds, np.full(seeds, 1.0 / seeds), size=(k, boot)).astype(np.float32)  # [K, B, S]
    col = (d.reshape(k * seeds, examples).astype(np.float32) @ n_ex).reshape(k, seeds, boot)  # [K, S, B]
    reps = np.einsum("kbs,ksb->kb", n_seed, col) / (seeds * examples)  # [K, B]
    return np.quantile(reps, [0.5 - level / 2, 0.5 + level / 2], axis=1)  # [2, K]


def coverage(
    design: Design,
    seeds: int,
    sims: int = 2000,
    boot: int = 400,
    examples: int = E,
    level: float = 0.95,
    seed: int = 0,
    chunk: int = 250,
) -> tuple[float, float]:
    """Coverage of (a) the percentile bootstrap over seeds × examples and (b) the t-interval over seeds, over
    ``sims`` simulated claims of ``seeds`` seeds (vectorised; ``boot`` bootstrap replicates per claim)."""
    rng = np.random.default_rng(seed)
    t = scipy_stats.t.ppf(0.5 + level / 2, seeds - 1)
    truth = design.truth
    hit_boot = hit_t = 0
    for start in range(0, sims, chunk):
        k = min(chunk, sims - start)
        rate_b = np.clip(design.p_b + design.tau * rng.standard_normal((k, seeds, 1)), 0.0, 1.0)  # [K, S, 1]
        a = (rng.random((k, seeds, examples)) < design.p_a).astype(np.float32)  # [K, S, E]
        b = (rng.random((k, seeds, examples)) < rate_b).astype(np.float32)  # [K, S, E]
        d = b - a  # [K, S, E]
        # (b) t-interval over seeds of the per-seed differences
        effect = d.mean(axis=2)  # [K, S]
        half = t * effect.std(axis=1, ddof=1) / math.sqrt(seeds)  # [K]
        hit_t += int(np.sum(np.abs(effect.mean(axis=1) - truth) <= half))
        low, high = percentile_bounds(d, boot, rng, level)  # [K] each
        hit_boot += int(np.sum((low <= truth) & (truth <= high)))
    return hit_boot / sims, hit_t / sims


def mc_error(rate: float, sims: int) -> float:
    """The Monte Carlo standard error of a coverage rate from ``sims`` simulations."""
    return math.sqrt(rate * (1 - rate) / sims)


def main(argv: list[str] | None = None) -> int:
    """Estimate tau from the board, simulate 3 and 5 seeds, write the table."""
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sims", type=int, default=4000, help="simulated claims per seed count")
    parser.add_argument("--boot", type=int, default=1000, help="bootstrap replicates per simulated claim")
    parser.add_argument("--board", type=Path, default=BOARD, help="the board CSV whose per-seed values give tau")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "interval_coverage.md")
    args = parser.parse_args(argv)
    if args.sims < 100 or args.boot < 100:
        raise SystemExit("--sims and --boot must each be at least 100 (the coverage's Monte Carlo error grows below)")
    designs = board_designs(args.board)
    board = args.board.relative_to(ROOT) if args.board.is_relative_to(ROOT) else args.board
    lines = [
        f"`{shlex.join(['python', 'benchmarks/interval_coverage.py', *argv])}`",
        "",
        "# Coverage of a verdict's 95% interval on the boards' design",
        "",
        f"Design: S seeds × {E} held-out Bernoulli examples per run; a claim is the paired difference of two "
        "methods' held-out rates, the second's rate varying over seeds by a between-seed SD τ. Every paired "
        f"difference the board's claims and positive controls read on 1,000-example tasks, from `{board}`:",
        "",
        "| paired difference | rates (mean over seeds) | observed SD of the per-seed difference | between-seed SD τ "
        "(less the binomial part) |",
        "| --- | --- | ---: | ---: |",
    ]
    lines += [f"| {d.name} | {d.p_b:.3f} vs {d.p_a:.3f} | {d.observed_sd:.4f} | {d.tau:.4f} |" for d in designs]
    lines += [
        "",
        "Simulated, per task, the difference with the largest τ (the board's rates and τ; a seed's rate "
        f"clipped to [0, 1]); {args.sims} simulated claims per row, the bootstrap with {args.boot} replicates each.",
        "",
        "| design | seeds | before: percentile bootstrap over seeds × examples (`bootstrap_ci`) | after: "
        "t-interval over seeds (`seed_ci`, every verdict) |",
        "| --- | ---: | ---: | ---: |",
    ]
    for d in largest_per_task(designs):
        for seeds in (3, 5):
            boot, t = coverage(d, seeds, sims=args.sims, boot=args.boot, seed=seeds)
            lines.append(
                f"| {d.name}: rates {d.p_b:.3f} vs {d.p_a:.3f}, τ = {d.tau:.4f} | {seeds} | "
                f"{100 * boot:.1f}% ± {100 * mc_error(boot, args.sims):.1f} | "
                f"{100 * t:.1f}% ± {100 * mc_error(t, args.sims):.1f} |"
            )
    args.out.write_text("\n".join(lines))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
