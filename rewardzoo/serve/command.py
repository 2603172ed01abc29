"""``rewardzoo serve RECIPE_OR_REWARD [key=value ...] [--host 127.0.0.1 --port 8000 --dir DIR --tokens FILE]``.

    rewardzoo serve ral_multiplication                  # a shipped recipe's reward (its SFT warm start, cached)
    rewardzoo serve my.yaml seed=1 --port 9000          # a recipe file, with overrides
    rewardzoo serve rlvr task.name=countdown            # a reward by name, on the default config
    rewardzoo serve token trainer --scope learn --tokens tokens.txt    # a new client token, printed once
    rewardzoo serve ral_multiplication --host 0.0.0.0 --tokens tokens.txt --ssl-certfile c.pem --ssl-keyfile k.pem
    rewardzoo serve status DIR                          # per-client counts and the judge's state

Listening on anything but loopback needs ``--tokens`` (the service refuses to start without it): whoever
can post a batch to a learned reward trains its judge.

The reward is built as the recipe builds it and serves until Ctrl-C or SIGTERM (uvicorn's graceful
shutdown: the batch being scored finishes and is checkpointed). Its state and log live in ``--dir``
(default ``<run_dir>/serve``); starting again with the same ``--dir`` resumes it (docs/serving.md).
Needs the ``serve`` extra: ``pip install 'rewardzoo[serve]'``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

from rewardzoo.core.config import ConfigError, resolved_run_dir
from rewardzoo.serve.auth import SCOPES, Tokens, is_loopback, new_token

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
        "--tokens",
        default=None,
        help="the clients' token hashes (`rewardzoo serve token NAME --tokens FILE`); needed off loopback",
    )
    p.add_argument(
        "--references",
        default=None,
        help="a JSONL reference store ({prompt, reference} lines) beside the task's own data",
    )
    p.add_argument("--ssl-certfile", default=None, help="serve HTTPS with this certificate (PEM)")
    p.add_argument("--ssl-keyfile", default=None, help="the certificate's private key (PEM)")
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


def token_main(argv: list[str]) -> int:
    """``rewardzoo serve token NAME --scope SCOPE --tokens FILE``: print a new token once, append its hash."""
    p = argparse.ArgumentParser(prog="rewardzoo serve token", description="make a client token for --tokens FILE")
    p.add_argument("name", help="the client's name (one word; it names the client in the audit log)")
    p.add_argument("--scope", choices=SCOPES, default="score", help="what the client may do (default score)")
    p.add_argument("--tokens", required=True, help="the tokens file to append the hash to (created when missing)")
    args = p.parse_args(argv)
    try:
        token = new_token(args.tokens, args.name, args.scope)
    except ConfigError as err:
        print(f"rewardzoo serve token: {err}", file=sys.stderr)
        return 2
    print(token)
    print(
        f"rewardzoo serve token: {args.name} ({args.scope}) added to {args.tokens}; the token above is shown "
        f"once, keep it (clients send it as Authorization: Bearer, or $REWARDZOO_TOKEN)",
        file=sys.stderr,
    )
    return 0


def status_main(argv: list[str]) -> int:
    """``rewardzoo serve status DIR``: the judge's state and per-client counts, from the directory alone."""
    from rewardzoo.core.checkpoint import checkpoints
    from rewardzoo.serve.audit import audit_rows, client_counts, read_jsonl

    p = argparse.ArgumentParser(prog="rewardzoo serve status", description="a service directory's state")
    p.add_argument("dir", help="the service's --dir")
    out_dir = Path(p.parse_args(argv).dir)
    found = checkpoints(out_dir) if out_dir.is_dir() else []
    if not found:
        print(f"rewardzoo serve status: {out_dir} holds no service checkpoint; give a service's --dir", file=sys.stderr)
        return 2
    state = json.loads((found[-1] / "service.json").read_text())
    logged = [row.get("batch") for row in read_jsonl(out_dir / "serve_log.jsonl")]
    print(
        json.dumps(
            {
                "dir": str(out_dir),
                "judge": {
                    "batches_learned": state["batches"],
                    "warmed": state["warmed"],
                    "checkpoint": found[-1].name,
                    "lost_updates": sorted({b for b in logged if b is not None and b > state["batches"]}),
                },
                "clients": client_counts(audit_rows(out_dir)),
            },
            indent=2,
        )
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``rewardzoo serve``; exit 2 with one line on a bad setting, before any work."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["token"]:
        return token_main(argv[1:])
    if argv[:1] == ["status"]:
        return status_main(argv[1:])
    args = parser().parse_args(argv)
    if not is_loopback(args.host) and args.tokens is None:
        print(
            f"rewardzoo serve: --host {args.host} listens beyond this machine, and anyone who can post a batch "
            f"trains the judge; add --tokens FILE (make it with `rewardzoo serve token NAME --scope learn "
            f"--tokens FILE`)",
            file=sys.stderr,
        )
        return 2
    if (args.ssl_certfile is None) != (args.ssl_keyfile is None):
        print("rewardzoo serve: give --ssl-certfile and --ssl-keyfile together", file=sys.stderr)
        return 2
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
        tokens = Tokens(args.tokens) if args.tokens else None
        service = RewardService(cfg, args.dir or resolved_run_dir(cfg) / "serve", settings, references=args.references)
    except ConfigError as err:
        print(f"rewardzoo serve: config error: {err}", file=sys.stderr)
        return 2
    lost = f"; updates LOST by the last stop: batches {service.lost}" if service.lost else ""
    scheme = "https" if args.ssl_certfile else "http"
    clients = f"{len(tokens.entries)} clients in {args.tokens}" if tokens else "no tokens: loopback only"
    print(
        f"rewardzoo serve: {cfg.reward.name} ({cfg.recipe.name or args.recipe}) on {scheme}://{args.host}:{args.port} "
        f"— state in {service.out_dir}, {service.batches} batches learned so far{lost}; {clients}",
        file=sys.stderr,
        flush=True,
    )
    if tokens and scheme == "http" and not is_loopback(args.host):
        print(
            "rewardzoo serve: warning: tokens travel in clear text over http; add --ssl-certfile and --ssl-keyfile",
            file=sys.stderr,
        )
    app = create_app(service, tuple(args.eos) if args.eos else EOS_STRINGS, tokens)
    uvicorn.run(
        app,
        host=args.host,
        port=args.port,
        log_level="warning",
        timeout_graceful_shutdown=30,
        ssl_certfile=args.ssl_certfile,
        ssl_keyfile=args.ssl_keyfile,
    )
    return 0
