"""What a co-trained judge learned over a run: its AUC (reference answers against the policy's generated ones, on
each step's batch) early and late, per seed, read from the run directories' ``metrics.jsonl``.

    python benchmarks/judge_trace.py runs/real_model/chat_multiplication/ral/recipe \\
        --out benchmarks/results/real_model/judge_trace.md

For every ``seed*`` directory under the given folder: the mean ``judge/auc`` (RAL) or ``disc/auc`` (VARL) over the
first and the last ``--window`` RL steps, the mean verification AUC (the judge's probability on the step's right
against wrong answers, :data:`VERIFY`) over the same windows, the mean probability the judge gave generated answers
(``judge/d_generated_mean``) and reference answers (``judge/d_reference_mean``) over the last window, and the
held-out accuracy at the run's start and end.  The batch AUC mixes right generated answers (equal to the references)
and other prompts' answers into its comparison; the verification AUC is the one that says whether the reward the
policy climbed judged correctness.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

from rewardzoo.core.logger import read_metrics

VERIFY = "analysis/auc/judge_prob/correct"
"""The trainer's verification AUC of the judge's probability on a step's valid answers: right against wrong, labelled
by the task's checker outside the reward (:func:`rewardzoo.eval.batch_analysis`); absent on a step without both."""


def trace(run_dir: Path, window: int) -> dict:
    """One run's early and late judge AUC, its late mean D per class and its held-out accuracy at start and end."""
    rows = read_metrics(run_dir / "metrics.jsonl")
    steps = [r for r in rows if "policy/loss" in r]
    prefix = "judge" if any("judge/auc" in r for r in steps) else "disc"

    def mean(part: list[dict], key: str) -> float:
        values = [r[key] for r in part if r.get(key) is not None]
        return statistics.fmean(values) if values else float("nan")

    evals = [r["eval/accuracy"] for r in rows if "eval/accuracy" in r]
    return {
        "seed": run_dir.name,
        "early AUC": mean(steps[:window], f"{prefix}/auc"),
        "late AUC": mean(steps[-window:], f"{prefix}/auc"),
        "early verification AUC": mean(steps[:window], VERIFY),
        "late verification AUC": mean(steps[-window:], VERIFY),
        "late D(generated)": mean(steps[-window:], f"{prefix}/d_generated_mean"),
        "late D(reference)": mean(steps[-window:], f"{prefix}/d_reference_mean"),
        "held-out accuracy start": evals[0] if evals else float("nan"),
        "held-out accuracy end": evals[-1] if evals else float("nan"),
    }


def main(argv: list[str] | None = None) -> int:
    """Write the table for every seed's run under the folder."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", type=Path, help="a folder holding seed*/ run directories of one RAL or VARL row")
    parser.add_argument("--window", type=int, default=10, help="RL steps per window (default 10)")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    runs = sorted(p for p in args.runs.glob("seed*") if (p / "metrics.jsonl").is_file())
    if not runs:
        parser.error(f"no seed*/metrics.jsonl under {args.runs}")
    rows = [trace(p, args.window) for p in runs]
    keys = list(rows[0])
    lines = [
        f"# command: python benchmarks/judge_trace.py {' '.join(argv if argv is not None else sys.argv[1:])}",
        "",
        f"Means over the first and the last {args.window} RL steps; ½ = chance.  *AUC*: the judge's own batch AUC, "
        "reference answers against generated ones (its log's `judge/auc`; a right generated answer is the reference, and "
        "a batch of 2 prompts compares answers across prompts, so it is no verification measure).  *Verification AUC*: "
        "the judge's probability on the step's valid generated answers, right against wrong "
        f"(`{VERIFY}`, labelled by the checker outside the reward; steps with both).",
        "",
        "| " + " | ".join(keys) + " |",
        "| --- |" + " ---: |" * (len(keys) - 1),
    ]
    lines += ["| " + " | ".join(r["seed"] if k == "seed" else f"{r[k]:.3f}" for k in keys) + " |" for r in rows]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
