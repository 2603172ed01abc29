"""What ``torch.compile`` of the lean training forward would buy a board run on this CPU, and what it
would cost: the policy's forward + backward eager and compiled, the compile time with an empty and
with a warm on-disk cache, and how far the compiled log-probs and gradients are from the eager ones.

    python benchmarks/compile_policy.py --out benchmarks/results/compile_policy.txt

Nothing in the library compiles; this script wraps
:func:`rewardzoo.core.lean_layers.shared_prompt_hidden` (the decoder layers of the lean training
forward, as :func:`rewardzoo.core.logprobs.sequence_logprobs` calls it) in
``torch.compile(dynamic=True)`` inside its own processes.  One intra-op thread (as each board job),
the recipe under the ``cpu`` board's settings of ``--board`` from its cached SFT warm start; the
micro-batches are the trainer's own, from ``--batches`` rollouts.  Three processes, one after the
other, sharing one inductor cache directory (``TORCHINDUCTOR_CACHE_DIR``, a fresh temporary one):

    eager    the forward + backward of every batch, ``--rounds`` times (medians)
    cold     the same compiled, the cache empty: the first call's time is the whole compile
    warm     the same compiled again, the cache now filled by ``cold``; then a second trainer (a new
             model instance, another seed) calls the compiled function: a recompile would show there

Each compiled process also reports the largest difference from its own eager forward + backward on
the first batch (log-probs absolute, each gradient relative to its largest entry).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MARK = "@@compile_policy "


def child(mode: str, recipe: str, board: str, batches: int, rounds: int, overrides: list[str]) -> dict:
    """One process: time the policy's forward + backward eagerly or compiled (see the module docstring)."""
    import torch

    from rewardzoo.board import CPU_SETTINGS
    from rewardzoo.core import logprobs
    from rewardzoo.recipes import make_trainer
    from rewardzoo.zoo import load_config

    torch.set_num_threads(1)

    def trainer(seed: int, tmp: str):
        cfg = load_config(
            recipe,
            [
                *CPU_SETTINGS[board],
                "logging.progress=false",
                "logging.tensorboard=false",
                *overrides,
                f"seed={seed}",
                f"run_dir={tmp}/run-{seed}",
            ],
        )
        return make_trainer(cfg)

    def micro_batches(tr) -> list:
        out = []
        for _ in range(batches):
            _, gen = tr.rollout(tr.step)
            tr.step += 1
            out.append(tr.micro_batches(gen)[0][0].batch)
        return out

    def forward_backward(tr, batch) -> tuple[torch.Tensor, list[torch.Tensor]]:
        logp, entropy = tr.module(batch)  # [n, T] each
        (logp.sum() + entropy.sum()).backward()
        grads = [p.grad.clone() for p in tr.policy.parameters() if p.grad is not None]
        tr.optimizer.zero_grad(set_to_none=True)
        return logp.detach(), grads

    def timed(fn) -> float:
        t0 = time.perf_counter()
        fn()
        return time.perf_counter() - t0

    record: dict = {"mode": mode}
    with tempfile.TemporaryDirectory() as tmp:
        tr = trainer(0, tmp)
        work = micro_batches(tr)
        record["rows"] = list(work[0].targets.shape)
        if mode != "eager":
            eager_logp, eager_grads = forward_backward(tr, work[0])
            logprobs.shared_prompt_hidden = torch.compile(logprobs.shared_prompt_hidden, dynamic=True)
            record["first_call_s"] = timed(lambda: record.update(out=forward_backward(tr, work[0])))
            logp, grads = record.pop("out")
            record["max_abs_dlogp"] = float((logp - eager_logp).abs().max())
            record["max_rel_dgrad"] = max(
                float((a - b).abs().max() / b.abs().max().clamp(min=1e-30)) for a, b in zip(grads, eager_grads)
            )
        times = [timed(lambda b=b: forward_backward(tr, b)) for _ in range(rounds) for b in work]
        record["fwd_bwd_s"] = statistics.median(times)
        if mode == "warm":
            other = trainer(1, tmp)
            batch = micro_batches(other)[0]
            record["new_model_first_call_s"] = timed(lambda: forward_backward(other, batch))
    return record


def main(argv: list[str] | None = None) -> int:
    """Run the three processes and print (and optionally write) the report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recipe", default="rlvr_multiplication", help="a shipped recipe or a path")
    parser.add_argument("--board", default="multiplication", help="whose cpu-board settings it runs under")
    parser.add_argument("--batches", type=int, default=4, help="rollouts whose first micro-batch is timed")
    parser.add_argument("--rounds", type=int, default=3, help="passes over the batches (medians)")
    parser.add_argument("--override", nargs="*", default=[], help="key=value for the runs (e.g. a shorter test)")
    parser.add_argument("--out", help="also write the report to this file")
    parser.add_argument("--child", choices=["eager", "cold", "warm"], help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        record = child(args.child, args.recipe, args.board, args.batches, args.rounds, args.override)
        print(MARK + json.dumps(record), flush=True)
        return 0
    argv = sys.argv[1:] if argv is None else argv
    records = {}
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "OMP_NUM_THREADS": "1", "TORCHINDUCTOR_CACHE_DIR": cache}
        for mode in ("eager", "cold", "warm"):
            cmd = [
                sys.executable,
                __file__,
                "--child",
                mode,
                "--recipe",
                args.recipe,
                "--board",
                args.board,
                "--batches",
                str(args.batches),
                "--rounds",
                str(args.rounds),
                "--override",
                *args.override,
            ]
            proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=Path(__file__).resolve().parents[1])
            if proc.returncode != 0:
                raise RuntimeError(f"the {mode} process failed:\n{proc.stderr[-3000:]}")
            line = next(x for x in proc.stdout.splitlines() if x.startswith(MARK))
            records[mode] = json.loads(line[len(MARK) :])
    import torch

    eager, cold, warm = records["eager"], records["cold"], records["warm"]
    saved = eager["fwd_bwd_s"] - warm["fwd_bwd_s"]
    lines = [
        f"# command: python benchmarks/compile_policy.py {' '.join(argv)}".rstrip(),
        f"# torch {torch.__version__}, 1 intra-op thread; {args.recipe} under the cpu board's {args.board} settings, "
        f"micro-batches of {eager['rows'][0]} rows x {eager['rows'][1]} positions",
        "",
        "| process | first call s (the compile) | forward + backward s (median) | max abs d log-prob | max rel d grad |",
        "|---|---|---|---|---|",
        f"| eager | — | {eager['fwd_bwd_s']:.3f} | — | — |",
    ]
    for name, r in (("compiled, cache empty", cold), ("compiled, cache warm", warm)):
        lines.append(
            f"| {name} | {r['first_call_s']:.1f} | {r['fwd_bwd_s']:.3f} | {r['max_abs_dlogp']:.1e} | "
            f"{r['max_rel_dgrad']:.1e} |"
        )
    lines += [
        "",
        f"eager/compiled forward + backward: {eager['fwd_bwd_s'] / warm['fwd_bwd_s']:.2f} (the warm process), "
        f"{eager['fwd_bwd_s'] / cold['fwd_bwd_s']:.2f} (the cold one)",
        f"a second model instance's first compiled call (warm process): {warm['new_model_first_call_s']:.2f} s",
        "steps for a warm-cache compile to pay for itself: "
        + (f"{warm['first_call_s'] / saved:.0f}" if saved > 0 else "never (no saving)"),
        "",
    ]
    report = "\n".join(lines)
    print(report)
    if args.out:
        Path(args.out).write_text(report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
