"""Module-level checks of FSDP2 sharding, run by ``torchrun`` (tests/core/test_fsdp.py); rank 0 writes
the measured differences against the unsharded model as JSON to the path given as argv[1].

Each process builds the same tiny policy, keeps an unsharded copy as the reference, shards the
policy with :class:`rewardzoo.core.distributed.Sharding`, and measures (max absolute differences unless
said otherwise):

    fused_logp / fused_grad      PolicyLogProbs (the fused head, the output weight gathered in the root)
                                 on this process's rows vs the unsharded module on the same rows; the
                                 summed update of both processes vs the one-process gradient of the
                                 global batch (relative)
    generation                   tokens sampled from the gathered weights vs from the unsharded model
    pushed                       the vLLM engine's pushed state dict (engines.base_weights) from the
                                 shards vs from the unsharded model (full and LoRA policies)
    bf16_logp / bf16_grad        distributed.mixed_precision=bf16 vs fp32 (relative gradient error)
    checkpointing_grad           model.gradient_checkpointing on vs off, both sharded (relative), and
                                 how often a block ran (the initialising forward, the training forward
                                 and, with checkpointing, its recomputation in the backward)
"""

import copy
import json
import sys

import torch
import torch.distributed as dist

from rewardzoo.core.distributed import DistributedConfig, Sharding
from rewardzoo.core.engines import HFEngine, SamplingConfig
from rewardzoo.core.engines.vllm import base_weights
from rewardzoo.core.logprobs import PolicyLogProbs, pack_rows
from rewardzoo.core.models import LoraSettings, TinyModelConfig, add_lora, char_tokenizer, tiny_causal_lm

TINY = TinyModelConfig(hidden_size=32, intermediate_size=64, num_layers=2, num_heads=4, num_kv_heads=2)


def policy(seed=0):
    return tiny_causal_lm(TINY, len(char_tokenizer()), seed)


def batch_rows(tok, n, seed):
    """n (prompt, completion) rows, the same on every process."""
    gen = torch.Generator().manual_seed(seed)
    prompts = [tok(f"{100 + i}*{i % 9 + 1}=")["input_ids"] for i in range(n)]
    comp = torch.randint(4, 60, (n, 5), generator=gen)  # [n, T]
    mask = torch.arange(5).unsqueeze(0) < torch.randint(1, 6, (n, 1), generator=gen)  # [n, T]
    return prompts, comp, mask


def loss_and_grads(module, batch, scale=1.0):
    module.zero_grad(set_to_none=True)
    logp, _ = module(batch)  # [n, T]
    (-(logp * batch.mask).sum() * scale).backward()
    grads = {
        n: (p.grad.full_tensor() if hasattr(p.grad, "full_tensor") else p.grad).clone()
        for n, p in module.named_parameters()
        if p.grad is not None
    }
    return logp.detach(), grads


def rel(a: dict, b: dict) -> float:
    num = sum(float((a[k].double() - b[k].double()).pow(2).sum()) for k in b)
    den = sum(float(b[k].double().pow(2).sum()) for k in b)
    return (num / den) ** 0.5


def maxdiff(a, b) -> float:
    return float((a.double() - b.double()).abs().max())


def sharded(model, **cfg):
    module = PolicyLogProbs(model)
    Sharding(DistributedConfig(strategy="fsdp2", **cfg), torch.device("cpu")).shard_policy(module)
    return module


def main(out: str) -> None:
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    tok = char_tokenizer()
    prompts, comp, mask = batch_rows(tok, 4 * world, seed=1)
    rows = list(range(rank * 4, (rank + 1) * 4))
    local, whole = pack_rows(prompts, comp, mask, rows, 0), pack_rows(prompts, comp, mask, list(range(4 * world)), 0)
    results = {}

    reference = PolicyLogProbs(policy())
    ref_logp_local, _ = loss_and_grads(reference, local)
    _, ref_grads = loss_and_grads(reference, whole)
    module = sharded(policy())
    logp, grads = loss_and_grads(module, local, scale=world)  # FSDP2 averages: × world gives the sum
    results["fused_logp"] = maxdiff(logp, ref_logp_local)
    results["fused_grad"] = rel(grads, ref_grads)
    results["head_weight_is_dtensor_outside_forward"] = type(module.model.lm_head.weight).__name__ == "DTensor"

    engine_ref = HFEngine(reference.model, tok, SamplingConfig(max_new_tokens=6))
    engine = HFEngine(module.model, tok, SamplingConfig(max_new_tokens=6))
    texts = [f"{7 + rank}*{3 + i}=" for i in range(2 + rank)]  # processes decode different numbers of rows
    torch.manual_seed(5)
    expected = engine_ref.generate(texts, n=3).completion_ids
    sharding = Sharding(DistributedConfig(strategy="fsdp2"), torch.device("cpu"))
    with sharding.gathered(module):
        torch.manual_seed(5)
        got = engine.generate(texts, n=3).completion_ids
    results["generation_equal"] = torch.equal(got, expected)

    pushed = dict(base_weights(module.model))
    expected_push = dict(base_weights(reference.model))
    results["pushed_keys_equal"] = set(pushed) == set(expected_push)
    results["pushed"] = max(maxdiff(pushed[k], expected_push[k]) for k in expected_push)
    lora_ref = add_lora(policy(), LoraSettings(enabled=True, r=4))
    lora = copy.deepcopy(lora_ref)
    lora_module = sharded(lora)
    pushed, expected_push = dict(base_weights(lora_module.model)), dict(base_weights(lora_ref))
    results["pushed_lora_keys_equal"] = set(pushed) == set(expected_push)
    results["pushed_lora"] = max(maxdiff(pushed[k], expected_push[k]) for k in expected_push)

    bf16 = sharded(policy(), mixed_precision="bf16")
    logp, grads = loss_and_grads(bf16, local, scale=world)
    results["bf16_logp"] = maxdiff(logp, ref_logp_local)
    results["bf16_grad"] = rel(grads, ref_grads)
    results["bf16_master_dtype"] = str({p.dtype for p in bf16.parameters()})

    checkpointed, plain = policy(), policy()
    checkpointed.gradient_checkpointing_enable()
    calls = {"checkpointed": 0, "plain": 0}
    for name, model in (("checkpointed", checkpointed), ("plain", plain)):  # (a recompute fires no module hooks)
        act = model.model.layers[0].mlp.act_fn
        act.forward = lambda x, name=name, forward=act.forward: calls.__setitem__(name, calls[name] + 1) or forward(x)
    logp_ckpt, grads_ckpt = loss_and_grads(sharded(checkpointed), local, scale=world)
    _, grads_plain = loss_and_grads(sharded(plain), local, scale=world)
    results["checkpointing_forwards"] = [calls["checkpointed"], calls["plain"]]  # recomputed in backward: 3 vs 2
    results["checkpointing_logp"] = maxdiff(logp_ckpt, ref_logp_local)
    results["checkpointing_grad"] = rel(grads_ckpt, grads_plain)

    if rank == 0:
        with open(out, "w") as f:
            json.dump(results, f, indent=1)
    dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1])
