"""``rewardzoo serve RECIPE_OR_REWARD [key=value ...] [--host 127.0.0.1 --port 8000 --dir DIR]``.

    rewardzoo serve ral_multiplication                  # a shipped recipe's reward (its SFT warm start, cached)
    rewardzoo serve my.yaml seed=1 --port 9000          # a recipe file, with overrides
    rewardzoo serve rlvr task.name=countdown            # a reward by name, on the default config

The reward is built as the recipe builds it and serves until Ctrl-C or SIGTERM (uvicorn's graceful
shutdown: the batch being scored finishes and is checkpointed). Its state and log live in ``--dir``
(default ``<run_dir>/serve``); starting again with the same ``--dir`` resumes it (docs/serving.md).
Needs the ``serve`` extra: ``pip install 'rewardzoo[serve]'``.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys

from rewardzoo.core.config import ConfigError, resolved_run_dir

SERVE_EXTRA = "pip install 'rewardzoo[serve]'"


def parser() -> argparse.ArgumentParser:
    """The ``rewardzoo serve`` arguments (one flag per :class:`~rewardzoo.serve.service.ServeConfig` field)."""
    from rewardzoo.serve.service import ServeConfig

    p = argparse.ArgumentParser(
        prog="rewardzoo serve",
        description="serve a zoo reward over HTTP; learned rewards "
        "co-train their judge on what they score (docs/serving.md)",
    )
    p.add_argument(
        "recipe",
        help="a shipped recipe's name, a recipe YAML path, or a reward's name (rlvr, ral, varl, "
        "rcrl, callable) on the default config",
    )
    p.add_argument("overrides", nargs="*", help="key=value overrides, e.g. seed=1 reward.ral.warmup_steps=5")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=int, default=8000, help="port to listen on")
    p.add_argument("--dir", default=None, help="the service's state and log (default <run_dir>/serve)")
    p.add_argument(
        "--eos",
        action="append",
        default=None,
        help="an end-of-sequence string cut from OpenRLHF completions (repeat; default: common ones)",
    )
    for f in dataclasses.fields(ServeConfig):
        flag = f"--{f.name.replace('_', '-')}"
        if f.type == "bool":
            p.add_argument(f"--no-{f.name}", dest=f.name, action="store_false", help=f"turn off: {f.name}")
        else:
            p.add_argument(
                flag,
                type=float if f.type == "float" else int,
                default=f.default,
                help=f"ServeConfig.{f.name} (default {f.default}; docs/serving.md)",
            )
    return p


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``rewardzoo serve``; exit 2 with one line on a bad setting, before any work."""
    args = parser().parse_args(sys.argv[1:] if argv is None else argv)
    try:
        import uvicorn

        from rewardzoo.serve.app import EOS_STRINGS, create_app
    except ImportError as err:
        print(f"rewardzoo serve: needs the 'serve' extra ({err.name} is missing): {SERVE_EXTRA}", file=sys.stderr)
        return 2
    from rewardzoo.serve.service import RewardService, ServeConfig, serve_config_for

    try:
        cfg = serve_config_for(args.recipe, args.overrides)
        settings = ServeConfig(**{f.name: getattr(args, f.name) for f in dataclasses.fields(ServeConfig)})
        service = RewardService(cfg, args.dir or resolved_run_dir(cfg) / "serve", settings)
    except ConfigError as err:
        print(f"rewardzoo serve: config error: {err}", file=sys.stderr)
        return 2
    lost = f"; updates LOST by the last stop: batches {service.lost}" if service.lost else ""
    print(
        f"rewardzoo serve: {cfg.reward.name} ({cfg.recipe.name or args.recipe}) on http://{args.host}:{args.port} "
        f"— state in {service.out_dir}, {service.batches} batches learned so far{lost}",
        file=sys.stderr,
        flush=True,
    )
    app = create_app(service, tuple(args.eos) if args.eos else EOS_STRINGS)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning", timeout_graceful_shutdown=30)
    return 0
