"""Time of one sampling draw per row at a 151,936-entry vocabulary: transformers' way against ours.

    python benchmarks/sampler_speed.py --out benchmarks/results/sampler_speed.txt

For a [rows, vocab] float32 score matrix (random logits, N(0, 2²)), median over ``--repeats`` calls:

    multinomial       softmax, then ``torch.multinomial(probs, 1)`` (what ``generate(do_sample=True)`` does)
    inverse_cdf       :func:`rewardzoo.core.engines.inverse_cdf_sample` (one uniform per row)
    processor         :class:`rewardzoo.core.engines.InverseCDFSampler` as ``generate`` calls it (the draw
                      plus the −inf score matrix whose argmax is the draw), then that argmax
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import time
from pathlib import Path

import torch

from rewardzoo.core.engines import InverseCDFSampler, inverse_cdf_sample


def median_ms(fn, repeats: int) -> float:
    """Median wall time of ``fn()`` in milliseconds, after one untimed call."""
    fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return 1000 * statistics.median(times)


def main() -> int:
    """Time the three ways and print (and optionally write) the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=64)
    parser.add_argument("--vocab", type=int, default=151_936)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--out", help="also write the table to this file")
    args = parser.parse_args()
    torch.manual_seed(0)
    scores = 2 * torch.randn(args.rows, args.vocab)  # [B, V]
    ids = torch.zeros(args.rows, 1, dtype=torch.long)  # [B, 1]
    sampler = InverseCDFSampler()
    ways = {
        "multinomial": lambda: torch.multinomial(torch.softmax(scores, -1), 1),
        "inverse_cdf": lambda: inverse_cdf_sample(scores),
        "processor": lambda: sampler(ids, scores).argmax(-1),
    }
    times = {name: median_ms(fn, args.repeats) for name, fn in ways.items()}
    lines = [
        f"# command: python benchmarks/sampler_speed.py {' '.join(sys.argv[1:])}".rstrip(),
        f"# machine: {platform.machine()} torch {torch.__version__}, {torch.get_num_threads()} thread(s); "
        f"{args.rows} rows x {args.vocab:,} scores, median of {args.repeats}",
        "",
        "| way | ms per draw of all rows | x faster than multinomial |",
        "|---|---|---|",
    ]
    lines += [f"| {name} | {ms:.1f} | {times['multinomial'] / ms:.1f} |" for name, ms in times.items()]
    print("\n".join(lines))
    if args.out:
        Path(args.out).write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
