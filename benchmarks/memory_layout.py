"""Memory per GPU of a policy + judge pair under DDP and FSDP2, from the models' parameter counts — to pick
a layout before renting GPUs (docs/distributed.md).

    python benchmarks/memory_layout.py            # the table of docs/distributed.md

The Qwen3 architectures are written in below (their hub ``config.json`` numbers; nothing is
downloaded): each model is built on the ``meta`` device with transformers — the policy as
``Qwen3ForCausalLM``, a judge as ``Qwen3ForSequenceClassification`` (one logit) — and its parameters
counted, per FSDP unit (each decoder block; the root holds embeddings, final norm and output layer).

The model of memory, in bytes per parameter, with fp32 master weights and AdamW (rewardzoo's
``distributed.mixed_precision=bf16``; the optimizer moments are fp32):

    trained module (policy, RAL judge, VARL discriminator)   16  (weights 4, gradients 4, two moments 8)
    frozen copy (reference policy at beta > 0, Polyak judge)  4
    LoRA policy: frozen base 4, the adapters counted as trained; no reference copy (adapters off)

Under DDP every GPU holds all of it; under FSDP2 each holds 1/N (N GPUs in the mesh), plus what is
gathered at a time in bf16 (2 B/parameter): the whole policy while the HF engine generates
(``Sharding.gathered``), or, in a policy step, the root unit (kept gathered from the forward to the
backward) and two blocks (the running one and the prefetched next).  The peak is the larger of
the two phases.  Not counted: activations and logits (they grow with micro-batch × tokens; the
fused log-prob head never holds [tokens, vocab] logits), the KV cache of generation, CUDA context
and allocator slack (~1–3 GB per GPU).
"""

from __future__ import annotations

import torch
from transformers import Qwen3Config, Qwen3ForCausalLM, Qwen3ForSequenceClassification

GIB = 2**30
QWEN3 = {  # the hub config.json of each model: hidden, intermediate, layers, heads, kv heads, tied embeddings
    "Qwen3-0.6B": dict(
        hidden_size=1024,
        intermediate_size=3072,
        num_hidden_layers=28,
        num_attention_heads=16,
        num_key_value_heads=8,
        tie_word_embeddings=True,
    ),
    "Qwen3-1.7B": dict(
        hidden_size=2048,
        intermediate_size=6144,
        num_hidden_layers=28,
        num_attention_heads=16,
        num_key_value_heads=8,
        tie_word_embeddings=True,
    ),
    "Qwen3-4B": dict(
        hidden_size=2560,
        intermediate_size=9728,
        num_hidden_layers=36,
        num_attention_heads=32,
        num_key_value_heads=8,
        tie_word_embeddings=True,
    ),
    "Qwen3-8B": dict(
        hidden_size=4096,
        intermediate_size=12288,
        num_hidden_layers=36,
        num_attention_heads=32,
        num_key_value_heads=8,
        tie_word_embeddings=False,
    ),
}
COMMON = dict(vocab_size=151936, head_dim=128, max_position_embeddings=40960)
# (policy, judge or None, reward, LoRA rank or 0, KL beta > 0)
PAIRS = [
    ("Qwen3-4B", None, "RLVR", 0, True),
    ("Qwen3-4B", "Qwen3-1.7B", "RAL", 0, False),
    ("Qwen3-4B", "Qwen3-1.7B", "RAL", 64, True),
    ("Qwen3-8B", "Qwen3-8B", "RAL", 0, False),
    ("Qwen3-8B", "Qwen3-8B", "VARL", 0, True),
]
LAYOUTS = [("DDP, any number of GPUs", 1), ("FSDP2, 1 node × 8", 8), ("FSDP2, 2 nodes × 8", 16)]


def counts(name: str, judge: bool) -> tuple[int, int, int]:
    """(all parameters, the root unit's, the largest block's) of a Qwen3 model, built on meta."""
    config = Qwen3Config(**COMMON, **QWEN3[name], num_labels=1)
    with torch.device("meta"):
        model = (Qwen3ForSequenceClassification if judge else Qwen3ForCausalLM)(config)
    total = sum(p.numel() for p in model.parameters())  # tied weights counted once
    block = max(sum(p.numel() for p in layer.parameters()) for layer in model.model.layers)
    return total, total - block * config.num_hidden_layers, block


def lora_params(name: str, r: int) -> int:
    """Adapter parameters of rank ``r`` on every linear layer of a Qwen3 block (peft's all-linear)."""
    c = {**COMMON, **QWEN3[name]}
    h, i, q, kv = (
        c["hidden_size"],
        c["intermediate_size"],
        c["num_attention_heads"] * 128,
        c["num_key_value_heads"] * 128,
    )
    shapes = [(h, q), (h, kv), (h, kv), (q, h), (h, i), (h, i), (i, h)]
    return c["num_hidden_layers"] * sum(r * (a + b) for a, b in shapes)


def per_gpu(policy: str, judge: str | None, reward: str, lora: int, beta: bool, n: int) -> float:
    """Peak GiB per GPU of one pair sharded over ``n`` GPUs (n = 1: DDP, every GPU holds a full copy)."""
    p, p_root, p_block = counts(policy, judge=False)
    held = (4 * p + 16 * lora_params(policy, lora)) if lora else 16 * p
    held += 4 * p if beta and not lora else 0
    gen, step = 2 * p, 2 * (p_root + 2 * p_block)
    if judge is not None:
        j, j_root, j_block = counts(judge, judge=True)
        held += 16 * j + (4 * j if reward == "RAL" else 0)  # RAL's Polyak reward judge; VARL has none
        step = max(step, 2 * (j_root + 2 * j_block))
    if n == 1:
        return held / GIB
    return (held / n + max(gen, step)) / GIB


def main() -> None:
    """Print the parameter counts and the table (markdown)."""
    for name in QWEN3:
        total, root, block = counts(name, judge=False)
        print(
            f"{name}: {total / 1e9:.3f}B parameters (as a judge {counts(name, judge=True)[0] / 1e9:.3f}B); "
            f"root unit {root / 1e6:.0f}M, block {block / 1e6:.1f}M"
        )
    print()
    print(
        "| policy | judge | reward | LoRA r | KL ref | " + " | ".join(f"{name} (GiB/GPU)" for name, _ in LAYOUTS) + " |"
    )
    print("|---|---|---|---|---|" + "---|" * len(LAYOUTS))
    for pair in PAIRS:
        policy, judge, reward, lora, beta = pair
        cells = [f"{per_gpu(*pair, n):.1f}" for _, n in LAYOUTS]
        print(
            f"| {policy} | {judge or '—'} | {reward} | {lora or '—'} | {'yes' if beta else 'no'} | "
            + " | ".join(cells)
            + " |"
        )


if __name__ == "__main__":
    main()
