"""Your own JSONL on a real model, end to end: RAL and its RLVR twin on ``examples/multiplication_chat.jsonl``
with SmolLM2-135M-Instruct, and whether RAL's judge learned to tell right answers from wrong ones.

    python benchmarks/studies/jsonl_quickstart.py --out benchmarks/results/real_model/jsonl_quickstart.md

Runs ``rlvr_jsonl_smollm2`` and ``ral_jsonl_smollm2`` at their own settings (``--steps`` RL steps, default the
recipes' 30; held-out evaluation at the start and the end, greedy on the recipes' 100 held-out rows), then reads:

- from each run's ``metrics.jsonl``: held-out ``eval/format_rate`` and ``eval/accuracy`` at step 0 and at the end,
  the wall time;
- RAL's judge **verification AUC on held-out rows**: the AUC of the judge's logit for the right against the wrong
  stated answers of the final policy on the held-out rows (the verifier labels them; the judge never saw them), for
  the trained judge and for a fresh judge built from the same settings (what the backbone alone gives).  ½ is
  chance.

Needs the model fetched (``rewardzoo models fetch smollm2-135m-instruct``).  One seed: a first look, not a verdict
(the real-model board, benchmarks/results/real_model/README.md, is the multi-seed comparison).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import torch

from rewardzoo.core.logger import read_metrics
from rewardzoo.eval import auc
from rewardzoo.recipes import make_trainer
from rewardzoo.rewards.context import RewardContext
from rewardzoo.rewards.ral import RAL
from rewardzoo.tasks.chat import QUESTION

RECIPES = ("rlvr_jsonl_smollm2", "ral_jsonl_smollm2")


def held_out_answers(trainer) -> tuple[list[str], list[str], torch.Tensor]:
    """(questions, stated answers, right) of the final evaluation's parseable held-out answers."""
    question = {e.prompt: e.meta.get(QUESTION, e.prompt) for e in trainer.task.eval}
    rows = [r for r in read_metrics(trainer.run_dir / "samples.jsonl") if r["step"] == trainer.step]
    rows = [r for r in rows if r["answer"] is not None]
    right = torch.tensor([bool(r["correct"]) for r in rows], dtype=torch.bool)  # [n]
    return [question[r["prompt"]] for r in rows], [r["answer"] for r in rows], right


def verification_auc(judge, questions: list[str], answers: list[str], right: torch.Tensor) -> float:
    """AUC of the judge's logit for right vs wrong answers (nan when one class is empty)."""
    if right.all() or not right.any():
        return float("nan")
    with torch.no_grad():
        z = judge.logit_reference(questions, answers).float()  # [n]
    return auc(z[right], z[~right])


def run(recipe: str, root: Path, steps: int | None) -> dict:
    """Train one recipe; its start and end held-out metrics, time, and (RAL) the judge's verification AUC."""
    overrides = [f"run_dir={root / recipe}", "logging.progress=false", "logging.tensorboard=false"]
    overrides += [f"steps={steps}", f"eval.every={steps}"] if steps else []
    start = time.perf_counter()
    trainer = make_trainer(recipe, overrides)
    trainer.train()
    out = {"recipe": recipe, "seconds": time.perf_counter() - start, "steps": trainer.step}
    evals = [r for r in read_metrics(trainer.run_dir / "metrics.jsonl") if "eval/accuracy" in r]
    for when, row in (("start", evals[0]), ("end", evals[-1])):
        out[f"format_{when}"], out[f"accuracy_{when}"] = row["eval/format_rate"], row["eval/accuracy"]
    if isinstance(trainer.reward, RAL):
        held_out = held_out_answers(trainer)
        out["n_auc"], out["n_right"] = len(held_out[2]), int(held_out[2].sum())
        out["auc_trained"] = verification_auc(trainer.reward.judge, *held_out)
        fresh = RAL.from_config(trainer.cfg.reward.ral, RewardContext(seed=trainer.cfg.seed))
        out["auc_fresh"] = verification_auc(fresh.judge, *held_out)
    return out


def table(results: list[dict]) -> str:
    """The results as a markdown table."""

    def cell(r: dict, key: str, digits: int = 3) -> str:
        return f"{r[key]:.{digits}f}" if key in r else "—"

    lines = [
        "| recipe | steps | held-out format rate start → end | held-out accuracy start → end | judge AUC fresh → trained"
        " (held-out rows: right / all) | wall time |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for r in results:
        judge = (
            f"{cell(r, 'auc_fresh')} → {cell(r, 'auc_trained')} ({r['n_right']} / {r['n_auc']})"
            if "n_auc" in r
            else "—"
        )
        lines.append(
            f"| `{r['recipe']}` | {r['steps']} | {cell(r, 'format_start')} → {cell(r, 'format_end')} | "
            f"{cell(r, 'accuracy_start')} → {cell(r, 'accuracy_end')} | {judge} | {r['seconds'] / 60:.1f} min |"
        )
    return "\n".join(lines)


def main() -> None:
    """Run both recipes and write the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="markdown file to write")
    parser.add_argument("--steps", type=int, default=0, help="RL steps (0 = the recipes' own)")
    parser.add_argument("--runs", type=Path, default=None, help="run folders (default: a temporary directory)")
    args = parser.parse_args()
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        root = args.runs or Path(tmp)
        results = [run(recipe, root, args.steps or None) for recipe in RECIPES]
    command = "python benchmarks/studies/jsonl_quickstart.py " + " ".join(sys.argv[1:])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        f"# Your own JSONL on a real model: RAL and its RLVR twin on SmolLM2-135M-Instruct\n\n"
        f"Command: `{command}`\n\n"
        f"{table(results)}\n\n"
        f"One seed (0), greedy held-out evaluation on the recipes' held-out rows of "
        f"`examples/multiplication_chat.jsonl`. The judge AUC is that of RAL's judge logit for the right against the "
        f"wrong stated answers of RAL's final policy on those rows (½ = chance): a fresh judge of the same settings "
        f"(the backbone's own likelihood) against the judge RAL trained.\n\n"
        f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, torch threads "
        f"{torch.get_num_threads()}; load average (1, 5, 15 min) {tuple(round(x, 2) for x in load_before)} at the "
        f"start, {tuple(round(x, 2) for x in os.getloadavg())} at the end.\n"
    )
    print(args.out.read_text())


if __name__ == "__main__":
    main()
