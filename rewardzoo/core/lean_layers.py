"""The Llama family's decoder layer computed on the model's own weights, in fewer operations than the
transformers modules: which models qualify, the shared operations, and the training forward.

For the families whose layer is exactly

    x = h + o_proj(attention(rope(norm_q(q_proj(rms(h)))), rope(norm_k(k_proj(rms(h)))), v_proj(rms(h))))
    h = x + down_proj(silu(gate_proj(rms(x))) · up_proj(rms(x)))

(Llama, Mistral, Qwen2, Qwen3: ``FAMILIES``; the per-head q/k norms are Qwen3's) two lean forwards run
that math without calling a module: the decode loop's (``rewardzoo.core.engines.llama_family``, no
gradient, bit for bit transformers' logits) and the training one here, :func:`shared_prompt_hidden`,
which gives the final hidden states that predict a GRPO micro-batch's completion tokens:

    tokens     the U distinct prompts [U, P] (right-padded) and the n rows' completion tokens
               0..C−1 [n, C], flattened into one [U·P + n·C] sequence of positions
    layers     every projection and the MLP run once over those positions; attention runs on two
               views: the prompts causally among themselves, each row's completion tokens over its
               prompt's keys and values (copied to the row with ``index_select``, whose backward adds
               a prompt's rows in index order: the same bits under any number of threads) and its own
               earlier tokens
    hidden     row i's completion token 0 is predicted by its prompt's last position, token t + 1
               by its completion position t: [n, C + 1, H]

So a prompt is computed once for its G rows and no row computes another row's padding: at the
benchmark's S1 setting 496 positions instead of 64 rows × 15, and each layer is a few dozen tensor
operations without module calls, mask building or cache bookkeeping.  The result equals
transformers' packed-row forward to float rounding, not bit for bit (log-probs within 1e-6, gradients within 1e-6
relative: ``tests/core/test_lean_layers.py``, on the tiny Qwen3 and Llama and on Qwen2 and Mistral).
In the trainer's CPU memory mode (``grpo.release_heap``) a fully trained model's layers keep only their matrix
products and attention outputs for the backward pass and recompute the norms, rotations, key/value copies and
activations there (:func:`recomputed`, torch's selective activation checkpointing): the same gradients, bit for
bit, from a lower peak.
A projection may also be peft's LoRA layer (the real-model recipes train LoRA): :func:`project` runs it as peft
does, W x + b + B A x · α/r, and the base alone while the adapters are disabled (the reference policy); the decode
forward runs it the same way (``rewardzoo.core.engines.llama_family``).
:func:`why_not_lean` gives the reason a model must take the transformers modules instead.
"""

from __future__ import annotations

import functools

import torch
import torch.nn.functional as F
from einops import rearrange
from torch.utils.checkpoint import CheckpointPolicy, checkpoint, create_selective_checkpoint_contexts

from rewardzoo.core.models import causal_lm

FAMILIES = ("llama", "mistral", "qwen2", "qwen3")
STATIC_ROPE = ("default", "linear", "llama3", "yarn")
"""Rope types whose cos/sin depend on the position only (not on the sequence length seen so far)."""


def _rope_type(config) -> str:
    params = getattr(config, "rope_parameters", None) or getattr(config, "rope_scaling", None) or {}
    return params.get("rope_type", params.get("type", "default"))


def why_not_linear(lin: torch.nn.Module) -> str | None:
    """Why :func:`project` cannot compute ``lin`` as its module does: a plain ``nn.Linear`` and peft's LoRA
    ``Linear`` over one (unmerged, no adapter dropout, no DoRA or other variant) qualify — or None."""
    if type(lin) is torch.nn.Linear:
        return None
    if type(lin).__name__ != "Linear" or not type(lin).__module__.startswith("peft.tuners.lora"):
        return f"a {type(lin).__name__} projection (neither nn.Linear nor peft's LoRA Linear)"
    if type(lin.base_layer) is not torch.nn.Linear or lin.fan_in_fan_out:
        return "a LoRA layer over a projection that is not a plain nn.Linear (quantised or wrapped)"
    if lin.merged:
        return "merged LoRA adapters"
    for name in lin.active_adapters:
        if name not in lin.lora_A:
            continue
        if name in lin.lora_variant or type(lin.lora_dropout[name]) is not torch.nn.Identity:
            return f"LoRA adapter {name!r} with a variant (DoRA, …) or dropout"
        if lin.lora_A[name].weight.dtype != lin.base_layer.weight.dtype:
            return f"LoRA adapter {name!r} in another dtype than its base layer (peft casts the input)"
    return None


def project(x: torch.Tensor, lin: torch.nn.Module) -> torch.Tensor:  # [..., in] -> [..., out]
    """``lin(x)`` without calling the module: W x + b for a plain linear layer; for peft's LoRA layer the
    same plus B A x · (α / r) for each active adapter, unless the adapters are disabled (the reference
    policy) — the operations peft's forward runs, in its order (:func:`why_not_linear` says which layers)."""
    if type(lin) is torch.nn.Linear:
        return F.linear(x, lin.weight, lin.bias)
    y = F.linear(x, lin.base_layer.weight, lin.base_layer.bias)  # [..., out]
    if lin.disable_adapters:
        return y
    for name in lin.active_adapters:
        if name in lin.lora_A:
            a, b = lin.lora_A[name], lin.lora_B[name]
            y = y + F.linear(F.linear(x, a.weight, a.bias), b.weight, b.bias) * lin.scaling[name]  # [..., out]
    return y


def why_not_llama_family(model: torch.nn.Module) -> str | None:
    """Why a lean forward cannot compute ``model``'s layers as transformers does, or None when it can
    (a peft model qualifies through its causal LM when every adapted projection does: :func:`why_not_linear`)."""
    model = causal_lm(model)
    config = getattr(model, "config", None)
    family = getattr(config, "model_type", None)
    if family not in FAMILIES:
        return f"model_type {family!r} is not one of {', '.join(FAMILIES)}"
    if getattr(config, "_attn_implementation", None) != "sdpa":
        return f"attention implementation {getattr(config, '_attn_implementation', None)!r}, not 'sdpa'"
    if _rope_type(config) not in STATIC_ROPE:
        return f"rope type {_rope_type(config)!r}"
    if any(t != "full_attention" for t in getattr(config, "layer_types", None) or ()):
        return "sliding-window layers"
    if config.hidden_act != "silu" or getattr(config, "pretraining_tp", 1) != 1:
        return f"activation {config.hidden_act!r} or pretraining_tp {getattr(config, 'pretraining_tp', 1)}"
    decoder = model.get_decoder()
    if type(model.get_output_embeddings()) is not torch.nn.Linear:
        return "an output layer that is not a plain torch.nn.Linear (quantised or wrapped)"
    for layer in decoder.layers:
        a, m = layer.self_attn, layer.mlp
        for lin in (a.q_proj, a.k_proj, a.v_proj, a.o_proj, m.gate_proj, m.up_proj, m.down_proj):
            why = why_not_linear(lin)
            if why is not None:
                return why
    if type(decoder.embed_tokens) is not torch.nn.Embedding:
        return "an embedding that is not a plain torch.nn.Embedding"
    hooked = [name for name, module in model.named_modules() if module._forward_hooks or module._forward_pre_hooks]
    if hooked or torch.nn.modules.module._global_forward_hooks or torch.nn.modules.module._global_forward_pre_hooks:
        return f"forward hooks on {', '.join(hooked[:3]) or 'every module'} (the lean forward calls no module)"
    return None


def why_not_lean(model: torch.nn.Module, length: int) -> str | None:
    """Why :func:`shared_prompt_hidden` cannot train ``model`` (a causal LM) on rows of up to ``length``
    positions: :func:`why_not_llama_family`'s reasons, and those of training — a sliding window the rows
    reach, gradient checkpointing, attention dropout, weights that are not float32 on the CPU
    (elsewhere the fused attention kernels are the fast path) — or None."""
    if any(
        getattr(m, "gradient_checkpointing", False) is True for m in model.modules()
    ):  # transformers' flag, per module
        return "gradient checkpointing (its recomputation runs the modules)"
    why = why_not_llama_family(model)
    if why is not None:
        return why
    window = getattr(model.config, "sliding_window", None)
    if window is not None and length > window:
        return f"a sliding window of {window} positions, shorter than the rows ({length})"
    if getattr(model.config, "attention_dropout", 0.0):
        return f"attention dropout {model.config.attention_dropout}"
    weight = model.get_output_embeddings().weight
    if weight.device.type != "cpu" or weight.dtype != torch.float32:
        return f"weights of dtype {weight.dtype} on {weight.device.type} (the lean forward is for float32 on the CPU)"
    return None


def rms_norm(x: torch.Tensor, norm: torch.nn.Module) -> torch.Tensor:  # [..., H] -> [..., H]
    """transformers' Llama RMSNorm, ``weight · (x / rms(x))`` with the normalisation in float32, as one fused op in
    float32."""
    eps = norm.variance_epsilon
    if x.dtype == torch.float32:
        return F.rms_norm(x, x.shape[-1:], norm.weight, eps)
    return norm.weight * F.rms_norm(x.float(), x.shape[-1:], None, eps).to(x.dtype)


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:  # [..., D], cos/sin broadcast to it
    """Rotary embedding as transformers applies it: x·cos + rotate_half(x)·sin."""
    x1, x2 = x.chunk(2, -1)
    return x * cos + torch.cat((-x2, x1), -1) * sin


def mlp_residual(h: torch.Tensor, layer: torch.nn.Module) -> torch.Tensor:  # [..., H] -> [..., H]
    """The layer's second half: h + down_proj(silu(gate_proj(rms(h))) · up_proj(rms(h)))."""
    x = rms_norm(h, layer.post_attention_layernorm)  # [..., H]
    m = layer.mlp
    gate = F.silu(project(x, m.gate_proj))  # [..., I]
    return h + project(gate * project(x, m.up_proj), m.down_proj)


def attend(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor, scale: float
) -> torch.Tensor:  # [B, kv, R, S, D], [B, kv, L, D] ×2, [B, S, L] bool -> [B, kv, R, S, D]
    """Grouped-query attention: the R query heads of each key/value head over its keys where ``mask``
    is true (every query must see at least one key), each key/value head repeated for its query
    heads as transformers' sdpa path does under a mask."""
    B, kv, R, S, D = q.shape
    o = F.scaled_dot_product_attention(
        q.flatten(1, 2), k.repeat_interleave(R, 1), v.repeat_interleave(R, 1), attn_mask=mask[:, None], scale=scale
    )  # [B, kv·R, S, D]
    return o.view(B, kv, R, S, D)


aten = torch.ops.aten
PRODUCTS = {aten.mm.default: 1, aten.addmm.default: 2}
"""The projections' matrix products, each with the position of its (transposed) weight among its arguments."""
ATTENTION = frozenset({aten._scaled_dot_product_flash_attention_for_cpu.default, aten.bmm.default})
"""The attention kernel (its outputs feed its own backward) and the products of torch's reference attention."""


def trains_weights(layer: torch.nn.Module) -> bool:
    """Whether recomputing ``layer``'s elementwise operations saves memory: its projections are plain linear
    layers, whose weight gradients need their inputs kept anyway.  Under LoRA adapters the frozen base
    products would have to be kept instead of recomputed, which costs more than the intermediates they
    spare."""
    a, m = layer.self_attn, layer.mlp
    projections = (a.q_proj, a.k_proj, a.v_proj, a.o_proj, m.gate_proj, m.up_proj, m.down_proj)
    return all(type(lin) is torch.nn.Linear for lin in projections)


def _keep_products(output: int, ctx, op, *args, **kwargs) -> CheckpointPolicy:
    """Keep the products' and the attention kernel's outputs, except the output projection's (``output``, its
    weight's data pointer: only the residual sum reads it, and the backward pass stops recomputing before it);
    recompute the rest."""
    if op in PRODUCTS:
        return (
            CheckpointPolicy.PREFER_RECOMPUTE if args[PRODUCTS[op]].data_ptr() == output else CheckpointPolicy.MUST_SAVE
        )
    return CheckpointPolicy.MUST_SAVE if op in ATTENTION else CheckpointPolicy.PREFER_RECOMPUTE


def recomputed(fn, h: torch.Tensor, layer: torch.nn.Module, *args, output: torch.nn.Linear, on: bool = True):
    """``fn(h, layer, *args)``, one half of a decoder layer ending in the projection ``output``, keeping for
    the backward pass only what the products and the attention kernel computed (:func:`_keep_products`) and
    recomputing the rest — the norms, rotations, key/value copies and activations — in the backward pass
    (torch's selective activation checkpointing: the recomputation runs the same kernels on the same inputs,
    so the gradients are the same bits).  ``on=False``, or no gradient, runs ``fn`` plainly."""
    if not (on and torch.is_grad_enabled()):
        return fn(h, layer, *args)
    policy = functools.partial(_keep_products, output.weight.data_ptr())
    context = functools.partial(create_selective_checkpoint_contexts, policy)
    return checkpoint(fn, h, layer, *args, use_reentrant=False, context_fn=context)


def shared_prompt_hidden(
    lm: torch.nn.Module,
    prompt_ids: torch.Tensor,
    prompt_mask: torch.Tensor,
    rows: torch.Tensor,
    tokens: torch.Tensor,
    token_mask: torch.Tensor,
    recompute: bool = False,
) -> torch.Tensor:  # [U, P] ×2, [n], [n, C] ×2 -> [n, C + 1, H]
    """Final (normed) hidden states of a Llama-family causal LM ``lm`` that predict each row's
    completion tokens 0..C: row i continues the right-padded prompt ``rows[i]`` with ``tokens[i]``
    (``token_mask`` true on its real tokens, a prefix); see the module docstring.  ``recompute`` keeps only
    the matrix products for the backward pass in the layers whose weights train (:func:`recomputed`,
    :func:`trains_weights`; the same gradients, bit for bit); False keeps every intermediate."""
    decoder = lm.get_decoder()
    config = lm.config
    U, P = prompt_ids.shape
    n, C = tokens.shape
    kv = config.num_key_value_heads
    D = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    device = prompt_ids.device
    length = prompt_mask.sum(1)  # [U] prompt lengths
    steps = torch.arange(max(P, C), device=device)  # [max(P, C)]
    positions = torch.cat([steps[:P].expand(U, P).flatten(), (length[rows, None] + steps[:C]).flatten()])  # [N]
    embed = decoder.embed_tokens  # its padding_idx row gets no gradient, as through the module
    cos, sin = decoder.rotary_emb(embed.weight, positions.unsqueeze(0))  # [1, N, D] each, the model's own rotary module
    cos, sin = cos[0, :, None], sin[0, :, None]  # [N, 1, D]
    # a padding query sees itself, so no row of a mask is empty (its output is never used)
    causal_p = torch.ones(P, P, dtype=torch.bool, device=device).tril()  # [P, P]
    prompt_attn = (prompt_mask.bool()[:, None, :] & causal_p) | torch.eye(
        P, dtype=torch.bool, device=device
    )  # [U, P, P]
    causal_c = torch.ones(C, C, dtype=torch.bool, device=device).tril()  # [C, C]
    own = (token_mask[:, None, :] & causal_c) | torch.eye(C, dtype=torch.bool, device=device)  # [n, C, C]
    token_attn = torch.cat([prompt_mask.bool()[rows, None, :].expand(n, C, P), own], 2)  # [n, C, P + C]
    h = F.embedding(
        torch.cat([prompt_ids.flatten(), tokens.flatten()]), embed.weight, embed.padding_idx
    )  # [N, H], N = U·P + n·C
    views = (U, P, n, C, kv, D, rows, prompt_attn, token_attn)
    for layer in decoder.layers:
        on = recompute and trains_weights(layer)
        h = recomputed(attention_residual, h, layer, cos, sin, views, output=layer.self_attn.o_proj, on=on)  # [N, H]
        h = recomputed(mlp_residual, h, layer, output=layer.mlp.down_proj, on=on)  # [N, H]
    h = rms_norm(h, decoder.norm)  # [N, H]
    last = h[: U * P].view(U, P, -1)[torch.arange(U, device=device), length - 1]  # [U, H] each prompt's last position
    first = last.index_select(0, rows)  # [n, H] per row
    if not C:
        return first.unsqueeze(1)  # [n, 1, H]
    return torch.cat([first.unsqueeze(1), h[U * P :].view(n, C, -1)], 1)  # [n, C + 1, H]


def attention_residual(
    h: torch.Tensor, layer: torch.nn.Module, cos: torch.Tensor, sin: torch.Tensor, views: tuple
) -> torch.Tensor:  # [N, H] -> [N, H]
    """The layer's first half over the flattened prompts and completions of :func:`shared_prompt_hidden`:
    h + o_proj(attention), the prompts causally among themselves, each row's tokens over its prompt's keys
    and values and its own earlier tokens (``views``: the layout and the two masks)."""
    U, P, n, C, kv, D, rows, prompt_attn, token_attn = views
    a = layer.self_attn
    x = rms_norm(h, layer.input_layernorm)  # [N, H]
    q = project(x, a.q_proj).unflatten(1, (-1, D))  # [N, heads, D]
    k = project(x, a.k_proj).unflatten(1, (kv, D))  # [N, kv, D]
    v = project(x, a.v_proj).unflatten(1, (kv, D))  # [N, kv, D]
    if hasattr(a, "q_norm"):  # Qwen3's per-head norms
        q, k = rms_norm(q, a.q_norm), rms_norm(k, a.k_norm)
    q, k = rotate(q, cos, sin), rotate(k, cos, sin)
    qp = rearrange(q[: U * P], "(u s) (g r) d -> u g r s d", u=U, g=kv)  # [U, kv, R, P, D]
    kp, vp = (rearrange(t[: U * P], "(u s) g d -> u g s d", u=U) for t in (k, v))  # [U, kv, P, D] each
    o = [rearrange(attend(qp, kp, vp, prompt_attn, a.scaling), "u g r s d -> (u s) (g r d)")]  # [U·P, heads·D]
    if C:  # each row's tokens over its prompt's keys and values, then its own
        qc = rearrange(q[U * P :], "(b s) (g r) d -> b g r s d", b=n, g=kv)  # [n, kv, R, C, D]
        kc, vc = (
            torch.cat([pt.index_select(0, rows), rearrange(t[U * P :], "(b s) g d -> b g s d", b=n)], 2)
            for pt, t in ((kp, k), (vp, v))
        )  # [n, kv, P + C, D] each
        o.append(rearrange(attend(qc, kc, vc, token_attn, a.scaling), "b g r s d -> (b s) (g r d)"))  # [n·C, heads·D]
    return h + project(torch.cat(o), a.o_proj)  # [N, H]
