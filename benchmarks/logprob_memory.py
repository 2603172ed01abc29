"""Peak memory and time of the fused chunked log-prob path against the naive full-logits path.

    python benchmarks/logprob_memory.py                       # vocab 151,936, 8,192 tokens, hidden 512
    python benchmarks/logprob_memory.py --tokens 2048 --hidden 256 --device cuda
    python benchmarks/logprob_memory.py --tokens 16384 --hidden 4096 --device cuda --dtype bfloat16 --compile

Each path runs forward + backward (log-prob and entropy both used in the loss) in its own fresh
process, so the two peaks do not share an allocator: on CPU the peak is the process's maximum
resident set size above what it held once the inputs existed; on CUDA it is
``torch.cuda.max_memory_allocated`` above the same baseline.  Both measurements come from this
one run, and the script compares the two paths' outputs and gradients: it exits non-zero if they
disagree (relative 1e-4 on the log-probs, gradients relative to their largest entry; 1e-2 with
``--dtype bfloat16``, whose gradients are rounded to bf16) or if a path fails (e.g. out of memory).
``--dtype`` is the dtype of the hidden states and the output weight (the log-probs are computed in
fp32 either way); ``--compile`` adds a third path, ``torch.compile(fused_token_logprobs)``.

The last line reads ``peak memory ratio fused/naive: X``.
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from rewardzoo.core.logprobs import default_chunk_size, fused_token_logprobs, naive_token_logprobs


def _rss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux reports KiB


DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}


def measure(
    path: str, tokens: int, hidden: int, vocab: int, device: str, out: Path, chunk: int | None, dtype: str = "float32"
) -> dict:
    """Run one path in this process and return its peak extra memory, time and results.  On CUDA,
    and for the compiled path (whose first call compiles), one untimed call runs first."""
    torch.manual_seed(0)
    dev = torch.device(device)
    h = torch.randn(tokens, hidden, device=dev).to(DTYPES[dtype]).requires_grad_()
    W = (0.02 * torch.randn(vocab, hidden, device=dev)).to(DTYPES[dtype]).requires_grad_()
    y = torch.randint(0, vocab, (tokens,), device=dev)
    weights = torch.linspace(-1, 1, tokens, device=dev)
    fn = torch.compile(fused_token_logprobs) if path == "compiled" else fused_token_logprobs

    def forward_backward() -> torch.Tensor:
        logp, ent = naive_token_logprobs(h, W, y) if path == "naive" else fn(h, W, y, chunk_size=chunk)
        ((weights * logp).sum() + 0.1 * ent.sum()).backward()
        return logp.detach()

    if dev.type == "cuda" or path == "compiled":
        forward_backward()
        h.grad = W.grad = None
    if dev.type == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
    else:
        base = _rss_bytes()
    t0 = time.perf_counter()
    logp = forward_backward()
    if dev.type == "cuda":
        torch.cuda.synchronize()
        peak = torch.cuda.max_memory_allocated() - base
    else:
        peak = _rss_bytes() - base
    seconds = time.perf_counter() - t0
    torch.save({"logp": logp.cpu(), "grad_h": h.grad.float().cpu(), "grad_w": W.grad.float().cpu()}, out)
    return {"path": path, "peak_bytes": peak, "seconds": seconds}


def main() -> int:
    """Run both paths in child processes, print the comparison, exit 1 on numerical disagreement."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=8192)
    parser.add_argument("--hidden", type=int, default=512)
    parser.add_argument("--vocab", type=int, default=151_936)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--chunk", type=int, default=0, help="fused chunk size (0 = automatic)")
    parser.add_argument("--dtype", choices=list(DTYPES), default="float32", help="dtype of hidden states and weight")
    parser.add_argument("--compile", action="store_true", help="also time torch.compile(fused_token_logprobs)")
    parser.add_argument("--child", choices=["fused", "naive", "compiled"], help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(
            json.dumps(
                measure(
                    args.child,
                    args.tokens,
                    args.hidden,
                    args.vocab,
                    args.device,
                    Path(args.out),
                    args.chunk or None,
                    args.dtype,
                )
            )
        )
        return 0
    paths = ["fused", "naive"] + (["compiled"] if args.compile else [])
    chunk = args.chunk or default_chunk_size(args.vocab, args.device)
    print(f"# command: python benchmarks/logprob_memory.py {' '.join(sys.argv[1:])}".rstrip())
    print(
        f"# machine: {platform.machine()} {platform.processor() or ''} torch {torch.__version__} "
        f"device {args.device} "
        f"threads {torch.get_num_threads()}"
    )
    print(
        f"# tokens {args.tokens}, hidden {args.hidden}, vocab {args.vocab}, {args.dtype}, "
        f"fused chunk {chunk} positions; "
        f"a full fp32 [tokens x vocab] tensor is {args.tokens * args.vocab * 4 / 2**30:.2f} GiB"
    )
    results, outputs = {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        for path in paths:
            out = Path(tmp) / f"{path}.pt"
            cmd = [
                sys.executable,
                __file__,
                "--child",
                path,
                "--out",
                str(out),
                "--tokens",
                str(args.tokens),
                "--hidden",
                str(args.hidden),
                "--vocab",
                str(args.vocab),
                "--device",
                args.device,
                "--chunk",
                str(chunk),
                "--dtype",
                args.dtype,
            ]
            proc = subprocess.run(cmd, capture_output=True, text=True)
            if proc.returncode != 0:
                print(proc.stderr[-2000:], file=sys.stderr)
                oom = proc.returncode == -9 or "OutOfMemoryError" in proc.stderr
                killed = " (out of memory)" if oom else ""
                print(f"{path} path failed with exit {proc.returncode}{killed}; no ratio can be computed at this size")
                return 1
            results[path] = json.loads(proc.stdout.strip().splitlines()[-1])
            outputs[path] = torch.load(out)
            print(
                f"# {path}: peak extra memory {results[path]['peak_bytes'] / 2**30:.3f} GiB, "
                f"{results[path]['seconds']:.2f} s",
                flush=True,
            )
    print("| path | peak extra memory (GiB) | forward+backward time (s) |")
    print("|---|---|---|")
    for path in paths:
        r = results[path]
        print(f"| {path} | {r['peak_bytes'] / 2**30:.3f} | {r['seconds']:.2f} |")
    n = outputs["naive"]
    tolerance = 1e-4 if args.dtype == "float32" else 1e-2
    agree = True
    for path in [p for p in paths if p != "naive"]:
        f = outputs[path]
        errors = {
            "logp": float(((f["logp"] - n["logp"]).abs() / n["logp"].abs().clamp(min=1e-6)).max()),
            "grad_h": float((f["grad_h"] - n["grad_h"]).abs().max() / n["grad_h"].abs().max()),
            "grad_w": float((f["grad_w"] - n["grad_w"]).abs().max() / n["grad_w"].abs().max()),
        }
        print(f"max relative difference {path} vs naive: " + ", ".join(f"{k} {v:.2e}" for k, v in errors.items()))
        if not all(v < tolerance for v in errors.values()):
            agree = False
            print(f"the {path} and naive paths DISAGREE", file=sys.stderr)
    if args.compile:
        print(f"time ratio compiled/fused: {results['compiled']['seconds'] / results['fused']['seconds']:.2f}")
    print(f"time ratio fused/naive: {results['fused']['seconds'] / results['naive']['seconds']:.2f}")
    naive_peak = results["naive"]["peak_bytes"]
    ratio = f"{results['fused']['peak_bytes'] / naive_peak:.3f}" if naive_peak > 0 else "n/a (no measurable naive peak)"
    print(f"peak memory ratio fused/naive: {ratio}")
    return 0 if agree else 1


if __name__ == "__main__":
    sys.exit(main())
