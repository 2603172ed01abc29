"""Reward hacking, measured: RLVR on hackable multiplication with the RLVR lesson's lazy "contains" verifier.

Trains ``algorithms/rlvr_hackable_multiplication.yaml`` through the library's trainer (the proxy is
the training reward) and reads back, step by step, what the task's strict checker says about the
same completions: ``train/hack_rate`` (share of sampled training completions that pass the proxy
and fail the strict check), ``train/proxy_pass``, ``train/accuracy``, and the held-out
``eval/hack_rate``, ``eval/proxy_pass``, ``eval/accuracy`` (sampled as the recipe's ``eval.samples`` says).  Writes a Markdown table (with the
command that produced it) and a PNG plot; every number comes from the run's ``metrics.jsonl``.

    .venv/bin/python scripts/hack_rate.py [--run-dir DIR] [--out benchmarks/results] [key=value ...]

Extra ``key=value`` arguments override the recipe (e.g. ``steps=50``,
``task.hackable_multiplication.hedge_prob=0``).
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from rewardzoo.core.logger import read_metrics  # noqa: E402
from rewardzoo.recipes import train  # noqa: E402
from rewardzoo.zoo import load_config  # noqa: E402

RECIPE = "algorithms/rlvr_hackable_multiplication.yaml"
TRAIN_KEYS = ("train/hack_rate", "train/proxy_pass", "train/accuracy")
EVAL_KEYS = ("eval/hack_rate", "eval/proxy_pass", "eval/accuracy")


def _cell(value) -> str:
    return "" if value is None else f"{value:.3f}"


def markdown(rows: list[dict], command: str, cfg) -> str:
    """The results table: one line per evaluated step (training columns are that step's batch)."""
    task = cfg.task.hackable_multiplication
    lines = [
        "# Reward hacking under the lazy `contains` verifier",
        "",
        "```bash",
        command,
        "```",
        "",
        f"RLVR (GRPO, {cfg.grpo.batch_size} rows = {cfg.grpo.batch_size // cfg.grpo.group_size} prompts × "
        f"{cfg.grpo.group_size} per step, {cfg.steps} steps) on `hackable_multiplication`: "
        f"{task.multiplication.digits_a}-digit × {task.multiplication.digits_b}-digit prompts"
        f"{' with a partial-products scratchpad' if task.multiplication.scratchpad else ''}, tiny model, "
        f"SFT warm start ({cfg.sft.steps} steps) on demonstrations of which a share `hedge_prob = {task.hedge_prob}` "
        f"ends in two candidates; rollouts up to {cfg.sampling.max_new_tokens} tokens at temperature "
        f"{cfg.sampling.temperature}.  The training reward is `contains(answer, product)`; `hack_rate` is the share "
        "of answers that pass it while failing the strict check (exactly one integer, equal to the product).  "
        "`train/…` columns are the sampled training batch of that step, `eval/…` the held-out completions "
        f"({cfg.eval.n_examples or task.multiplication.n_eval} prompts, "
        f"{f'{cfg.eval.samples} sampled at the rollout temperature each' if cfg.eval.samples else 'greedy'}).",
        "",
        "| step | " + " | ".join(f"`{k}`" for k in TRAIN_KEYS + EVAL_KEYS) + " |",
        "| ---: | " + " | ".join("---:" for _ in TRAIN_KEYS + EVAL_KEYS) + " |",
    ]
    for row in rows:
        if "eval/hack_rate" in row:
            lines.append(f"| {row['step']} | " + " | ".join(_cell(row.get(k)) for k in TRAIN_KEYS + EVAL_KEYS) + " |")
    return "\n".join(lines) + "\n"


def plot(rows: list[dict], path: Path) -> None:
    """Hack rate, proxy pass rate and strict accuracy over steps, training batches and held out."""
    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    for ax, keys, title in ((axes[0], TRAIN_KEYS, "training batches (sampled)"), (axes[1], EVAL_KEYS, "held out")):
        for key in keys:
            points = [(r["step"], r[key]) for r in rows if r.get(key) is not None]
            if points:
                ax.plot(*zip(*points), marker="." if key.startswith("eval") else None, label=key.split("/")[1])
        ax.set_title(title)
        ax.set_xlabel("RL step")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("rate")
    axes[1].legend()
    fig.suptitle("RLVR with the lazy 'contains' proxy: proxy passes vs. strict correctness")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> None:
    """Train, then write hack_rate.md and hack_rate.png."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--run-dir",
        default="runs/hack_rate",
        help="run directory of the training run (replaced on every run: overwrite=true)",
    )
    parser.add_argument("--out", default="benchmarks/results", help="where hack_rate.md and hack_rate.png go")
    args, overrides = parser.parse_known_args(argv)
    bad = [o for o in overrides if "=" not in o]
    if bad:
        parser.error(f"unrecognised arguments {bad}; recipe overrides look like key=value")
    overrides = [f"run_dir={args.run_dir}", "overwrite=true", *overrides]
    cfg = load_config(RECIPE, overrides)
    train(cfg)
    rows = read_metrics(Path(args.run_dir) / "metrics.jsonl")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    command = shlex.join([".venv/bin/python", "scripts/hack_rate.py", *(argv if argv is not None else sys.argv[1:])])
    (out / "hack_rate.md").write_text(markdown(rows, command, cfg) + "\n![hack rate](hack_rate.png)\n")
    plot(rows, out / "hack_rate.png")
    print(f"wrote {out / 'hack_rate.md'} and {out / 'hack_rate.png'}")


if __name__ == "__main__":
    main()
