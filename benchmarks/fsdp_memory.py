"""Peak resident memory per process of a short 2-process run under DDP and under FSDP2 (CPU, gloo).

    python benchmarks/fsdp_memory.py                          # hidden 1024, 8 layers (~121M parameters), 2 steps
    python benchmarks/fsdp_memory.py --hidden 512 --layers 4 --beta 0.04 --out benchmarks/results/fsdp_memory.txt

For each strategy the script launches ``torchrun --nproc_per_node 2`` of this file, which runs
``rewardzoo train`` (the RLVR multiplication recipe with a tiny Qwen3-style model of the given size,
no warm start, no checkpoint, a small batch) and then writes its process's peak RSS
(``getrusage(RUSAGE_SELF).ru_maxrss``: the high-water mark over the whole run — load, rollouts, policy
steps — not a sample) and its RSS after ``import torch`` (the interpreter baseline, the same for both).
Every figure printed is measured in this run.

What to expect, from the parameter count P (fp32, AdamW): DDP holds on every process the weights,
gradients and both moments (16 B · P) plus, with ``--beta`` > 0, the reference copy (4 B · P);
FSDP2 holds 1/world of each, plus the full weights of the whole model while it generates
(:meth:`~rewardzoo.core.distributed.Sharding.gathered`) and the full starting weights while it loads
them (every process loads them before sharding: no meta-device loading).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def rss_mib() -> float:
    """This process's peak resident set size so far, MiB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def overrides(args: argparse.Namespace, strategy: str, run_dir: Path) -> list[str]:
    """The ``rewardzoo train`` arguments of one measured run."""
    return [
        "algorithms/rlvr_multiplication.yaml",
        f"steps={args.steps}",
        "sft.enabled=false",
        "eval.n_examples=2",
        "eval.every=0",
        "logging.progress=false",
        "logging.tensorboard=false",
        "checkpoint_every=0",
        "grpo.batch_size=8",
        "grpo.group_size=4",
        "grpo.micro_batch_size=4",
        "grpo.generation_chunk_prompts=1",
        "sampling.max_new_tokens=4",
        f"grpo.beta={args.beta}",
        f"model.tiny.hidden_size={args.hidden}",
        f"model.tiny.intermediate_size={4 * args.hidden}",
        f"model.tiny.num_layers={args.layers}",
        "model.tiny.num_heads=16",
        "model.tiny.num_kv_heads=4",
        f"distributed.strategy={strategy}",
        f"run_dir={run_dir}",
    ]


def child(out: str, train_args: list[str]) -> None:
    """One process of the measured run: train, then append {rank, baseline, peak} to ``out``."""
    import torch  # noqa: F401  (the baseline: the interpreter with torch loaded)

    baseline = rss_mib()
    from rewardzoo.cli import main

    rc = main(["train", *train_args])
    if rc:
        raise SystemExit(rc)
    with open(f"{out}.{os.environ['RANK']}", "w") as f:
        json.dump({"rank": int(os.environ["RANK"]), "baseline_mib": baseline, "peak_mib": rss_mib()}, f)


def measure(args: argparse.Namespace, strategy: str) -> list[dict]:
    """Run one strategy on 2 processes; the per-rank figures."""
    with tempfile.TemporaryDirectory() as tmp:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        out = f"{tmp}/rss"
        cmd = [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--nproc_per_node",
            "2",
            "--master_port",
            str(port),
            __file__,
            "--child",
            out,
            *overrides(args, strategy, Path(tmp) / "run"),
        ]
        env = {**os.environ, "OMP_NUM_THREADS": "1"}
        done = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True)
        if done.returncode:
            raise SystemExit(f"{strategy} run failed:\n{done.stderr[-3000:]}")
        return [json.loads(Path(f"{out}.{r}").read_text()) for r in (0, 1)]


def main() -> None:
    """Measure DDP and FSDP2; print one table (and write it to ``--out`` when given)."""
    if sys.argv[1:2] == ["--child"]:
        return child(sys.argv[2], sys.argv[3:])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hidden", type=int, default=1024)
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--beta", type=float, default=0.0, help="KL weight: > 0 adds the reference copy")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()

    from rewardzoo.core.models import char_tokenizer, tiny_causal_lm
    from rewardzoo.zoo import load_config

    cfg = load_config(overrides(args, "ddp", Path("unused"))[0], overrides(args, "ddp", Path("unused"))[1:])
    n_params = sum(p.numel() for p in tiny_causal_lm(cfg.model.tiny, len(char_tokenizer()), seed=0).parameters())
    lines = [
        f"# python benchmarks/fsdp_memory.py --hidden {args.hidden} --layers {args.layers} --steps {args.steps} "
        f"--beta {args.beta}",
        f"# tiny Qwen3-style model: {n_params / 1e6:.1f}M parameters ({n_params * 4 / 2**20:.0f} MiB fp32), "
        f"2 CPU processes (gloo), AdamW, {args.steps} steps",
        "strategy  rank  peak RSS MiB  baseline MiB  peak-baseline MiB",
    ]
    peaks = {}
    for strategy in ("ddp", "fsdp2"):
        rows = measure(args, strategy)
        peaks[strategy] = max(r["peak_mib"] - r["baseline_mib"] for r in rows)
        lines += [
            f"{strategy:8}  {r['rank']:4}  {r['peak_mib']:12.0f}  {r['baseline_mib']:12.0f}  "
            f"{r['peak_mib'] - r['baseline_mib']:17.0f}"
            for r in rows
        ]
    lines.append(f"fsdp2/ddp peak above baseline (largest rank): {peaks['fsdp2'] / peaks['ddp']:.2f}")
    text = "\n".join(lines)
    print(text)
    if args.out is not None:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
