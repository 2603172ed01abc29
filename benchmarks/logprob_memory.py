"""Peak memory and time of the fused chunked log-prob path against the naive full-logits path.

    python benchmarks/logprob_memory.py                       # vocab 151,936, 8,192 tokens, hidden 512
    python benchmarks/logprob_memory.py --tokens 2048 --hidden 256 --device cuda

Each path runs forward + backward (log-prob and entropy both used in the loss) in its own fresh
process, so the two peaks do not share an allocator: on CPU the peak is the process's maximum
resident set size above what it held once the inputs existed; on CUDA it is
``torch.cuda.max_memory_allocated`` above the same baseline.  Both measurements come from this
one run, and the script compares the two paths' outputs and gradients: it exits non-zero if they
disagree (relative 1e-4 on the log-probs, gradients relative to their largest entry).

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


def measure(path: str, tokens: int, hidden: int, vocab: int, device: str, out: Path, chunk: int | None) -> dict:
    """Run one path in this process and return its peak extra memory, time and results."""
    torch.manual_seed(0)
    dev = torch.device(device)
    h = (torch.randn(tokens, hidden, device=dev)).requires_grad_()
    W = (0.02 * torch.randn(vocab, hidden, device=dev)).requires_grad_()
    y = torch.randint(0, vocab, (tokens,), device=dev)
    weights = torch.linspace(-1, 1, tokens, device=dev)
    if dev.type == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
    else:
        base = _rss_bytes()
    t0 = time.perf_counter()
    if path == "fused":
        logp, ent = fused_token_logprobs(h, W, y, chunk_size=chunk)
    else:
        logp, ent = naive_token_logprobs(h, W, y)
    loss = (weights * logp).sum() + 0.1 * ent.sum()
    loss.backward()
    if dev.type == "cuda":
        torch.cuda.synchronize()
        peak = torch.cuda.max_memory_allocated() - base
    else:
        peak = _rss_bytes() - base
    seconds = time.perf_counter() - t0
    torch.save({"logp": logp.detach().cpu(), "grad_h": h.grad.cpu(), "grad_w": W.grad.cpu()}, out)
    return {"path": path, "peak_bytes": peak, "seconds": seconds}


def main() -> int:
    """Run both paths in child processes, print the comparison, exit 1 on numerical disagreement."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=8192)
    parser.add_argument("--hidden", type=int, default=512)
    parser.add_argument("--vocab", type=int, default=151_936)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--chunk", type=int, default=0, help="fused chunk size (0 = automatic)")
    parser.add_argument("--child", choices=["fused", "naive"], help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.child, args.tokens, args.hidden, args.vocab, args.device, Path(args.out), args.chunk or None)))
        return 0
    chunk = args.chunk or default_chunk_size(args.vocab)
    print(f"# command: python benchmarks/logprob_memory.py {' '.join(sys.argv[1:])}".rstrip())
    print(f"# machine: {platform.machine()} {platform.processor() or ''} torch {torch.__version__} device {args.device} "
          f"threads {torch.get_num_threads()}")
    print(f"# tokens {args.tokens}, hidden {args.hidden}, vocab {args.vocab}, fused chunk {chunk} positions; "
          f"a full fp32 [tokens x vocab] tensor is {args.tokens * args.vocab * 4 / 2**30:.2f} GiB")
    results, outputs = {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        for path in ("fused", "naive"):
            out = Path(tmp) / f"{path}.pt"
            cmd = [sys.executable, __file__, "--child", path, "--out", str(out), "--tokens", str(args.tokens),
                   "--hidden", str(args.hidden), "--vocab", str(args.vocab), "--device", args.device, "--chunk", str(chunk)]
            proc = subprocess.run(cmd, capture_output=True, text=True)
            if proc.returncode != 0:
                print(proc.stderr[-2000:], file=sys.stderr)
                killed = " (killed: out of memory)" if proc.returncode == -9 else ""
                print(f"{path} path failed with exit {proc.returncode}{killed}; no ratio can be computed at this size")
                return 1
            results[path] = json.loads(proc.stdout.strip().splitlines()[-1])
            outputs[path] = torch.load(out)
            print(f"# {path}: peak extra memory {results[path]['peak_bytes'] / 2**30:.3f} GiB, "
                  f"{results[path]['seconds']:.2f} s", flush=True)
    print("| path | peak extra memory (GiB) | forward+backward time (s) |")
    print("|---|---|---|")
    for path in ("fused", "naive"):
        r = results[path]
        print(f"| {path} | {r['peak_bytes'] / 2**30:.3f} | {r['seconds']:.2f} |")
    f, n = outputs["fused"], outputs["naive"]
    errors = {
        "logp": float(((f["logp"] - n["logp"]).abs() / n["logp"].abs().clamp(min=1e-6)).max()),
        "grad_h": float((f["grad_h"] - n["grad_h"]).abs().max() / n["grad_h"].abs().max()),
        "grad_w": float((f["grad_w"] - n["grad_w"]).abs().max() / n["grad_w"].abs().max()),
    }
    print(f"max relative difference fused vs naive: " + ", ".join(f"{k} {v:.2e}" for k, v in errors.items()))
    print(f"time ratio fused/naive: {results['fused']['seconds'] / results['naive']['seconds']:.2f}")
    agree = all(v < 1e-4 for v in errors.values())
    if not agree:
        print("the fused and naive paths DISAGREE", file=sys.stderr)
    print(f"peak memory ratio fused/naive: {results['fused']['peak_bytes'] / results['naive']['peak_bytes']:.3f}")
    return 0 if agree else 1


if __name__ == "__main__":
    sys.exit(main())
