"""What a step costs on a real pretrained model: each SmolLM2-135M-Instruct recipe trained a few steps on this
machine, the trainer's own timings read back from its metrics.

    python benchmarks/real_model_cost.py --steps 2 --out benchmarks/results/real_model/step_cost.md

For every recipe in ``--recipes`` (default: the four ``*_smollm2`` recipes, at their own settings: LoRA r 16,
4 prompts × G = 8, 48 new tokens (40 for rubric writing), fp32): one run of ``--steps`` RL steps (the judges'
warm-up rounds shortened to one, so that the cost of a step is measured, not the warm-up's), held-out
evaluation on ``--eval-examples`` prompts at step 0 and at the end.  Written: per recipe the model load +
setup time, the median ``time/step_s`` and its parts (``time/generate_s``, ``time/reward_s``,
``time/policy_s`` where logged), the step-0 held-out metrics, and the threads torch used.  Needs the model
fetched (``rewardzoo models fetch smollm2-135m-instruct``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import torch

from rewardzoo.core.logger import read_metrics
from rewardzoo.recipes import make_trainer

RECIPES = [
    "rlvr_multiplication_smollm2",
    "ral_multiplication_smollm2",
    "varl_hackable_multiplication_smollm2",
    "rcrl_rubric_writing_smollm2",
]
WARMUP_KEY = {
    "ral_multiplication_smollm2": "reward.ral.warmup_steps=1",
    "varl_hackable_multiplication_smollm2": "reward.varl.warmup_steps=1",
}
PARTS = ("time/step_s", "time/generate_s", "time/reward_s", "time/policy_s")


def measure(recipe: str, steps: int, eval_examples: int, root: Path) -> dict:
    """One short run of ``recipe``; its setup time, per-step timings and step-0 held-out metrics."""
    start = time.perf_counter()
    overrides = [
        f"steps={steps}",
        f"eval.n_examples={eval_examples}",
        f"eval.every={steps}",
        "checkpoint_every=0",
        "logging.progress=false",
        f"run_dir={root / recipe}",
    ]
    trainer = make_trainer(recipe, overrides + ([WARMUP_KEY[recipe]] if recipe in WARMUP_KEY else []))
    setup = time.perf_counter() - start
    trainer.train()
    total = time.perf_counter() - start
    rows = read_metrics(root / recipe / "metrics.jsonl")
    steps_rows = [r for r in rows if "policy/loss" in r]
    out = {"recipe": recipe, "setup_s": round(setup, 1), "total_s": round(total, 1), "steps": len(steps_rows)}
    for key in PARTS:
        values = [r[key] for r in steps_rows if key in r]
        if values:
            out[f"median {key}"] = round(statistics.median(values), 2)
    first_eval = next((r for r in rows if "eval/accuracy" in r), {})
    out.update({k: round(v, 4) for k, v in first_eval.items() if k.startswith("eval/")})
    return out


def main() -> None:
    """Measure each recipe and write the table (markdown) and the raw numbers (JSON beside it)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--recipes", nargs="*", default=RECIPES)
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--eval-examples", type=int, default=16)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        results = [measure(r, args.steps, args.eval_examples, Path(tmp)) for r in args.recipes]
    command = (
        f"python benchmarks/real_model_cost.py --steps {args.steps} --eval-examples {args.eval_examples} "
        f"--recipes {' '.join(args.recipes)} --out {args.out}"
    )
    keys = [k for k in results[0] if k != "recipe"]
    lines = [
        f"# What a step costs on SmolLM2-135M-Instruct (CPU, {torch.get_num_threads()} torch threads)",
        "",
        f"Command: `{command}`",
        "",
        "| recipe | " + " | ".join(keys) + " |",
        "| --- |" + " --- |" * len(keys),
    ]
    lines += ["| " + r["recipe"] + " | " + " | ".join(str(r.get(k, "—")) for k in keys) + " |" for r in results]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n")
    args.out.with_suffix(".json").write_text(json.dumps({"command": command, "results": results}, indent=1) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
