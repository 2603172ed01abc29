"""The ``rewardzoo`` command: ``train``, ``sft`` and ``eval`` a recipe.

    rewardzoo train algorithms/rlvr_multiplication.yaml seed=1 run_dir=runs/x
    rewardzoo sft algorithms/rlvr_multiplication.yaml
    rewardzoo eval algorithms/rlvr_multiplication.yaml init_from=runs/x/checkpoints/step_000200/policy
    rewardzoo train --help-config          # every key with its default and meaning
    rewardzoo leaderboard --preset cpu --seeds 5 --out DIR   # every reward head-to-head (rewardzoo.leaderboard)
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from rewardzoo.core.config import ConfigError, resolved_run_dir
from rewardzoo.core.logger import read_metrics
from rewardzoo.zoo import help_config, load_config


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rewardzoo", description="Reward methods for LLM RL post-training on one GRPO core.")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, text in [("train", "SFT warm start (cached) then GRPO training of a recipe"),
                       ("sft", "only the SFT warm start of a recipe"),
                       ("eval", "held-out evaluation of a recipe's starting policy (or init_from=...)")]:
        p = sub.add_parser(name, help=text, description=text)
        p.add_argument("recipe", nargs="?", help="YAML recipe, e.g. algorithms/rlvr_multiplication.yaml")
        p.add_argument("overrides", nargs="*", help="key=value overrides, e.g. seed=1 grpo.batch_size=128")
        p.add_argument("--help-config", action="store_true", help="list every config key with its default and meaning")
    sub.add_parser("leaderboard", help="every reward head-to-head on one core (rewardzoo leaderboard --help)")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``rewardzoo`` command."""
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "leaderboard":
        from rewardzoo.leaderboard import main as leaderboard_main

        return leaderboard_main(argv[1:])
    args = _parser().parse_args(argv)
    if args.help_config:
        print("\n".join(help_config()))
        return 0
    from rewardzoo import recipes

    recipe, overrides = args.recipe, list(args.overrides)
    if recipe is not None and "=" in recipe:  # only overrides were given
        recipe, overrides = None, [recipe, *overrides]
    try:
        cfg = load_config(recipe, overrides)
        if args.command == "train":
            metrics = recipes.train(cfg)
        elif args.command == "sft":
            print(recipes.sft(cfg))
            return 0
        else:
            metrics = recipes.make_trainer(cfg).evaluate()
    except ConfigError as err:  # raised before any work: by the config check, the run directory or the task
        print(f"rewardzoo: config error: {err}", file=sys.stderr)
        return 2
    if metrics:
        print(json.dumps({k: round(v, 4) for k, v in metrics.items() if k.startswith(("eval/", "reward/mean"))}, indent=1))
    if args.command == "train":
        print(before_after(resolved_run_dir(cfg)))
    return 0


def before_after(run_dir: Path, key: str = "eval/accuracy") -> str:
    """One line a newcomer can read: the held-out metric of the warm start and after RL."""
    evals = [r for r in read_metrics(run_dir / "metrics.jsonl") if r.get(key) is not None]
    if not evals:
        return f"no {key} was logged in {run_dir}"
    first, last = evals[0], evals[-1]
    return (f"held-out {key.removeprefix('eval/')}: {100 * first[key]:.1f}% before RL (step {first['step']}) → "
            f"{100 * last[key]:.1f}% after {last['step']} RL steps ({100 * (last[key] - first[key]):+.1f} points); "
            f"run directory {run_dir}")


if __name__ == "__main__":
    sys.exit(main())
