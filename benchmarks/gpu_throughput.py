"""Training throughput and model FLOP utilisation of rewardzoo's GRPO step on a ~0.5B-parameter model.

    python benchmarks/gpu_throughput.py --device cuda --out benchmarks/results/gpu/throughput.txt
    python benchmarks/gpu_throughput.py --device cpu --tiny          # seconds: the smoke test of the suite

Model: rewardzoo's Qwen3 factory model, randomly initialised, untied output layer, hidden 1024,
16 layers, 16 attention heads (8 key/value heads, head dimension 64), MLP 3072, vocabulary 151,936
(the character tokenizer padded with filler tokens): 0.51B parameters, in bfloat16 on CUDA
(float32 on CPU).  Everything runs through rewardzoo's own :class:`~rewardzoo.core.trainer.Trainer`:

1. policy step: ``Trainer.policy_step`` (packing, fused log-probs, the GRPO loss, backward,
   clipping, AdamW) on a synthetic batch of 64 rows of 256 random prompt tokens and 768 random
   completion tokens (65,536 tokens), micro-batches of 8 rows;
2. full step: ``Trainer.train_step`` — ``HFEngine`` generation (inverse-CDF sampler) of
   256 forced new tokens for 8 prompts × 8, the reward, then the policy step.

Model FLOPs of a policy step (the usual training count, 3× the forward's multiply-adds × 2):
6·N_body·(tokens) for the decoder's weights, 6·V·H·K for the output layer at the K completion
positions only (the fused path scores no prompt position), and 6·L·S²·d_attn per row for causal
attention's two matmuls (QKᵀ and AV, half of the S² pairs).  MFU = achieved FLOP/s ÷ the device's
dense bf16 peak, from a table of known GPUs by name (``--peak-tflops`` to give it; n/a when unknown).
Each part is timed over ``--steps`` steps after one warm-up step; peak memory is
``torch.cuda.max_memory_allocated`` of the part on CUDA, the process's max RSS so far on CPU.
"""

from __future__ import annotations

import argparse
import platform
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

from rewardzoo.core.models import TinyModelConfig, char_tokenizer, tiny_causal_lm
from rewardzoo.core.types import Generation

sys.path.insert(0, str(Path(__file__).resolve().parent))
from grpo_vs_trl import digit_share, prompts  # noqa: E402  (the benchmarks' shared reward and prompts)

# Dense bf16 tensor-core peaks (TFLOP/s, no sparsity), by a substring of torch.cuda.get_device_name().
PEAK_BF16_TFLOPS = {
    "H200": 989.0,
    "H100": 989.0,
    "A100": 312.0,
    "L40S": 362.0,
    "L4": 121.0,
    "A10G": 125.0,
    "RTX 4090": 165.0,
}
FULL = dict(
    model=TinyModelConfig(
        hidden_size=1024,
        num_layers=16,
        num_heads=16,
        num_kv_heads=8,
        intermediate_size=3072,
        max_position_embeddings=4096,
    ),
    vocab=151_936,
    rows=64,
    prompt=256,
    completion=768,
    micro=8,
    new_tokens=256,
)
TINY = dict(
    model=TinyModelConfig(hidden_size=64, num_layers=2, num_heads=4, num_kv_heads=2, intermediate_size=128),
    vocab=1000,
    rows=16,
    prompt=8,
    completion=8,
    micro=8,
    new_tokens=4,
)


def sync(device: torch.device) -> None:
    """Wait for the device's queued work (timings are host clocks)."""
    if device.type == "cuda":
        torch.cuda.synchronize()


def peak_memory_gib(device: torch.device) -> float:
    """Peak memory so far: CUDA allocator peak, or the process's max RSS."""
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated() / 2**30
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 2**30


def model_flops(cfg: TinyModelConfig, n_body: int, vocab: int, rows: int, prompt: int, completion: int) -> float:
    """Training FLOPs of one policy step (see the module docstring)."""
    seq = prompt + completion
    d_attn = cfg.num_heads * (cfg.hidden_size // cfg.num_heads)
    return (
        6 * n_body * rows * seq
        + 6 * vocab * cfg.hidden_size * rows * completion
        + 6 * cfg.num_layers * seq**2 * d_attn * rows
    )


def make_trainer(sizes: dict, device: torch.device, root: Path):
    """A Trainer on the saved random-init model (8 prompts × 8 rows, forced new tokens)."""
    from accelerate import Accelerator

    from rewardzoo.core.trainer import Trainer
    from rewardzoo.rewards.functions import FunctionReward
    from rewardzoo.zoo import build_task, load_config

    tokenizer = char_tokenizer(sizes["vocab"])
    model = tiny_causal_lm(sizes["model"], len(tokenizer), seed=0)
    model.generation_config.min_new_tokens = sizes["new_tokens"]
    model.save_pretrained(root / "model")
    tokenizer.save_pretrained(root / "model")
    dtype = "bfloat16" if device.type == "cuda" else "float32"
    cfg = load_config(
        "algorithms/rlvr_multiplication.yaml",
        [
            f"run_dir={root / 'run'}",
            "sft.enabled=false",
            "logging.progress=false",
            "logging.tensorboard=false",
            f"model.dtype={dtype}",
            f"grpo.batch_size={sizes['rows']}",
            "grpo.group_size=8",
            f"grpo.micro_batch_size={sizes['micro']}",
            "grpo.beta=0",
            "grpo.lr=1e-6",
            "grpo.warmup_steps=0",
            f"sampling.max_new_tokens={sizes['new_tokens']}",
            "sampling.temperature=1.0",
        ],
    )
    examples = prompts("S1")[: sizes["rows"] // 8]
    return Trainer(
        cfg,
        task=build_task(cfg.task),
        reward=FunctionReward(digit_share),
        init_dir=root / "model",
        prompts=examples,
        accelerator=Accelerator(cpu=device.type == "cpu"),
    )


def synthetic_generation(sizes: dict, vocab: int) -> Generation:
    """Rows of random prompt and completion tokens (no EOS among them)."""
    g = torch.Generator().manual_seed(0)
    rows, T = sizes["rows"], sizes["completion"]
    return Generation(
        prompt_ids=torch.randint(3, vocab, (rows, sizes["prompt"]), generator=g).tolist(),
        completion_ids=torch.randint(3, vocab, (rows, T), generator=g),
        completion_mask=torch.ones(rows, T, dtype=torch.bool),
        texts=[""] * rows,
        truncated=torch.ones(rows, dtype=torch.bool),
    )


def timed(fn, device: torch.device, steps: int) -> list[float]:
    """Seconds of each of ``steps`` calls of ``fn`` after one warm-up call."""
    fn()
    out = []
    for _ in range(steps):
        sync(device)
        t0 = time.perf_counter()
        fn()
        sync(device)
        out.append(time.perf_counter() - t0)
    return out


def main() -> int:
    """Measure both parts and print (and optionally write) the report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--tiny", action="store_true", help="tiny sizes (a CPU smoke test)")
    parser.add_argument("--steps", type=int, default=3, help="timed steps per part")
    parser.add_argument("--peak-tflops", type=float, default=0.0, help="the device's dense bf16 peak (0 = look up)")
    parser.add_argument("--out", help="also write the report to this file")
    args = parser.parse_args()
    device = torch.device(args.device)
    sizes = TINY if args.tiny else FULL
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor() or platform.machine()
    peak = args.peak_tflops or next((v for k, v in PEAK_BF16_TFLOPS.items() if k in name), 0.0)
    lines = [
        f"# command: python benchmarks/gpu_throughput.py {' '.join(sys.argv[1:])}".rstrip(),
        f"# device: {name}; torch {torch.__version__}; dense bf16 peak {peak or 'unknown'} TFLOP/s",
        "",
    ]
    with tempfile.TemporaryDirectory() as tmp:
        trainer = make_trainer(sizes, device, Path(tmp))
        model = trainer.policy
        n_all = sum(p.numel() for p in model.parameters())
        n_body = sum(p.numel() for n, p in model.named_parameters() if "embed_tokens" not in n and "lm_head" not in n)
        lines.append(
            f"model: {n_all / 1e6:,.1f}M parameters ({n_body / 1e6:,.1f}M in the decoder body), "
            f"{next(model.parameters()).dtype}, vocabulary {sizes['vocab']:,}"
        )
        gen = synthetic_generation(sizes, sizes["vocab"])
        adv = torch.randn(sizes["rows"], generator=torch.Generator().manual_seed(1))
        seconds = timed(lambda: trainer.policy_step(gen, adv), device, args.steps)
        step = statistics.median(seconds)
        tokens = sizes["rows"] * (sizes["prompt"] + sizes["completion"])
        flops = model_flops(sizes["model"], n_body, sizes["vocab"], sizes["rows"], sizes["prompt"], sizes["completion"])
        mfu = f"{flops / step / (peak * 1e12):.1%}" if peak else "n/a"
        lines += [
            "",
            f"## policy step: {sizes['rows']} rows x ({sizes['prompt']} prompt + {sizes['completion']} "
            f"completion) tokens, micro-batches of {sizes['micro']}",
            "",
            "| step s (median) | tokens/s | model TFLOP per step | achieved TFLOP/s | MFU | peak memory GiB |",
            "|---|---|---|---|---|---|",
            f"| {step:.3f} | {tokens / step:,.0f} | {flops / 1e12:.2f} | {flops / step / 1e12:.2f} | {mfu} "
            f"| {peak_memory_gib(device):.2f} |",
        ]
        if device.type == "cuda":
            torch.cuda.reset_peak_memory_stats()
        rows = [trainer.train_step() for _ in range(args.steps + 1)][1:]
        med = {k: statistics.median(r[f"time/{k}_s"] for r in rows) for k in ("generate", "reward", "policy")}
        new = sizes["new_tokens"]
        lines += [
            "",
            f"## full train_step: {sizes['rows'] // 8} prompts x 8, {new} new tokens forced "
            f"(HFEngine, sampler {trainer.cfg.sampling.sampler})",
            "",
            "| generate s | generated tokens/s | reward s | policy s | peak memory GiB |",
            "|---|---|---|---|---|",
            f"| {med['generate']:.3f} | {sizes['rows'] * new / med['generate']:,.0f} | {med['reward']:.3f} "
            f"| {med['policy']:.3f} | {peak_memory_gib(device):.2f} |",
        ]
    print("\n".join(lines))
    if args.out:
        Path(args.out).write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
