"""Run a recipe, time it, and write its held-out curve as a Markdown result.

    .venv/bin/python scripts/report_run.py --out benchmarks/results/rlvr_multiplication.md \\
        algorithms/rlvr_multiplication.yaml [key=value ...]

Runs ``rewardzoo train RECIPE key=value ...`` in a subprocess (SFT warm start included, exactly what
a user types), measures its wall-clock time, then reads the run's ``metrics.jsonl`` and writes the
command, the machine, the wall time and every evaluated step's ``eval/*`` metrics.  Nothing in the
output is typed in by hand.
"""

from __future__ import annotations

import argparse
import os
import platform
import shlex
import subprocess
import sys
import time
from pathlib import Path

from rewardzoo.core.config import resolved_run_dir
from rewardzoo.core.logger import read_metrics
from rewardzoo.zoo import load_config


def eval_table(rows: list[dict]) -> list[str]:
    """One Markdown line per evaluated step, one column per ``eval/`` key."""
    evals = [r for r in rows if any(k.startswith("eval/") for k in r)]
    keys = sorted({k for r in evals for k in r if k.startswith("eval/")})
    lines = ["| step | " + " | ".join(f"`{k}`" for k in keys) + " |", "| ---: |" + " ---: |" * len(keys)]
    for r in evals:
        lines.append(f"| {r['step']} | " + " | ".join(f"{r[k]:.3f}" if k in r else "" for k in keys) + " |")
    return lines


def main(argv: list[str] | None = None) -> int:
    """Train, time, and write the report."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="Markdown file to write")
    parser.add_argument("recipe")
    parser.add_argument("overrides", nargs="*", help="key=value recipe overrides")
    args = parser.parse_args(argv)
    cfg = load_config(args.recipe, args.overrides)  # fails here, before any work, on a bad override
    command = ["rewardzoo", "train", args.recipe, *args.overrides]
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "rewardzoo.cli", *command[1:]], check=True)
    wall = time.perf_counter() - start
    rows = read_metrics(resolved_run_dir(cfg) / "metrics.jsonl")
    acc = [(r["step"], r["eval/accuracy"]) for r in rows if "eval/accuracy" in r]
    lines = [
        f"# {cfg.recipe.name}",
        "",
        "```bash",
        shlex.join(command),
        "```",
        "",
        f"Machine: {os.cpu_count()} CPU cores, {platform.machine()}, Python {platform.python_version()}.  "
        f"Wall time of the whole command (SFT warm start or its cache, RL, evaluations): **{wall:.0f} s**.",
        "",
        f"Held-out greedy accuracy: **{100 * acc[0][1]:.1f}% at step {acc[0][0]} (the warm start) → "
        f"{100 * acc[-1][1]:.1f}% at step {acc[-1][0]}** ({100 * (acc[-1][1] - acc[0][1]):+.1f} points; "
        f"best {100 * max(a for _, a in acc):.1f}%).",
        "",
        *eval_table(rows),
        "",
    ]
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text("\n".join(lines))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
