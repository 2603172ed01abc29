"""The multiplication preset under grpo, GSPO and CISPO: each loss trains, with seed-level 95% intervals.

    python benchmarks/studies/loss_variants.py [--seeds 0 1 2] [--steps 40] [--runs DIR] [--out FILE] [--override KEY=VALUE ...]

Each loss runs the recipe ``rlvr_multiplication`` at every seed (finished runs in ``--runs`` are
reused); the report gives each loss's final held-out accuracy and its paired difference from grpo
on the same seeds and examples, each with the Student-t interval over seeds (``eval.seed_ci``).
The clip settings are the ones TRL documents for each loss: GSPO ε = 3e-4 / 4e-4 (its paper's),
CISPO's IS-weight cap ε_high = 5 (ScaleRL's).  A demonstration that the variants train, not a
tuned comparison: every loss keeps the recipe's learning rate.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

import rewardzoo
from rewardzoo.eval import seed_ci
from rewardzoo.sweep import eval_rows

LOSSES = {
    "grpo": [],
    "gspo": ["grpo.importance_sampling_level=sequence", "grpo.epsilon_low=3e-4", "grpo.epsilon_high=4e-4"],
    "cispo": ["grpo.loss_type=cispo", "grpo.epsilon_high=5.0"],
}
ROW_KEY = "correct"  # the multiplication task's per-example held-out row


def run(loss: str, seed: int, steps: int, runs: Path, extra: list[str]) -> Path:
    """One finished run of the preset under ``loss`` at ``seed`` (reused when already there)."""
    run_dir = runs / f"{loss}_s{seed}"
    if not (run_dir / "eval_rows.jsonl").is_file() or max(eval_rows(run_dir)) < steps:
        overrides = [f"seed={seed}", f"steps={steps}", f"run_dir={run_dir}", "overwrite=true", "logging.progress=false"]
        rewardzoo.train("rlvr_multiplication", overrides + extra + LOSSES[loss])
    return run_dir


def final_rows(run_dir: Path) -> np.ndarray:
    """The last evaluation's per-example held-out rows ([E])."""
    rows = eval_rows(run_dir)
    return np.asarray(rows[max(rows)][ROW_KEY], dtype=np.float64)


def report(tables: dict[str, np.ndarray], command: str) -> str:
    """The result file: the command, then one line per loss (its accuracy, its difference from grpo)."""
    lines = [f"# command: {command}", "", f"load average at the end: {os.getloadavg()}", ""]
    lines += ["| loss | held-out accuracy (95% CI over seeds) | − grpo (paired, 95% CI) |", "| --- | --- | --- |"]
    for loss, table in tables.items():
        acc = seed_ci(lambda a: a.mean(), table)
        diff = seed_ci(lambda a, b: a.mean() - b.mean(), table, tables["grpo"])
        lines.append(
            f"| {loss} | {acc.mean:.3f} ± {acc.half_width:.3f} | "
            + ("—" if loss == "grpo" else f"{diff.mean:+.3f} ± {diff.half_width:.3f}")
            + " |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Train every loss at every seed, then write the report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--runs", type=Path, default=Path("runs/loss_variants"))
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/studies/loss_variants.md"))
    parser.add_argument("--override", nargs="*", default=[], help="recipe overrides for every run (a smoke test's)")
    args = parser.parse_args(argv)
    if len(args.seeds) < 2:
        parser.error("--seeds needs at least two seeds for an interval")
    tables = {
        loss: np.stack([final_rows(run(loss, s, args.steps, args.runs, args.override)) for s in args.seeds])
        for loss in LOSSES
    }  # each [S, E]
    command = "python benchmarks/studies/loss_variants.py " + " ".join(sys.argv[1:] if argv is None else argv)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(report(tables, command.strip()))
    print(args.out.read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
