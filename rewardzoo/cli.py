"""The ``rewardzoo`` command: ``train``, ``sft`` and ``eval`` a recipe.

    rewardzoo train algorithms/rlvr_multiplication.yaml seed=1 run_dir=runs/x
    rewardzoo sft algorithms/rlvr_multiplication.yaml
    rewardzoo eval algorithms/rlvr_multiplication.yaml init_from=runs/x/checkpoints/step_000200/policy
    rewardzoo train --help-config          # every key with its default and meaning
"""

from __future__ import annotations

import argparse
import json
import sys

from rewardzoo.core.config import ConfigError
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
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``rewardzoo`` command."""
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
