"""Token log-probabilities and entropies straight from hidden states, without a [K × V] tensor.

For K selected positions with final hidden states ``h [K, H]``, output weight ``W [V, H]`` (and an
optional bias ``b [V]``) and sampled tokens ``y [K]``:

    z_k      = W h_k + b                    logits            [V]
    log p_k  = z_k[y_k] − logsumexp(z_k)    sampled-token log-prob
    H_k      = logsumexp(z_k) − Σ_v softmax(z_k)_v z_kv      entropy of the next-token distribution

:class:`FusedTokenLogProbs` computes both in chunks of ``chunk_size`` positions and keeps only
``lse [K]`` for the backward pass, which recomputes each chunk's logits:

    ∂log p_k / ∂z_k = onehot(y_k) − p_k
    ∂H_k / ∂z_k     = −p_k ⊙ (log p_k + H_k)

so the temporaries are one chunk's ``[chunk, V]`` fp32 logits and at most one more ``[chunk, V]``
buffer, whatever K is: the forward pass exponentiates each chunk once (m = max z, e = exp(z − m),
s = Σ e: logsumexp = m + log s, the same operations as ``torch.logsumexp``, and Σ softmax·z =
Σ e·z / s), and the backward pass needs the second buffer only when the entropy has a gradient
(training uses the entropy as a statistic only, so there the logits' buffer becomes p in place).
Everything is accumulated in fp32 and gradients are cast back to the input dtypes; autocast is
switched off inside both passes, so an enclosing bf16 autocast region does not put the head in bf16.
:func:`naive_token_logprobs` is the reference it is tested (and benchmarked) against.

**Prompts shared by their rows.**  A GRPO micro-batch holds G completions of each prompt.  Packed as
rows of prompt + completion, every prompt position is computed G times, in the forward and in the
backward.  :func:`pack_rows` also lays out each distinct prompt once (:class:`SharedPrompts`).  For a
Llama-family policy (the default ``lean``) :func:`sequence_logprobs` hands that layout to the lean
forward of :mod:`rewardzoo.core.lean_layers`, which computes the prompts once and each row's tokens
on the model's own weights; any other model runs its decoder over the packed rows.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, fields

import torch
import torch.nn.functional as F

from rewardzoo.core.lean_layers import shared_prompt_hidden, why_not_lean

# fp32 logits per chunk: 128 MiB on accelerators (large matmuls); 16 MiB on CPU, where the chunk's
# buffers add to the process's resident memory and smaller chunks were not slower (docs/performance.md).
CHUNK_ELEMENTS = {"cpu": 2**22}
DEFAULT_CHUNK_ELEMENTS = 2**25


def default_chunk_size(vocab_size: int, device: torch.device | str = "cpu") -> int:
    """Positions per chunk so that one chunk's fp32 logits stay near 16 MiB on CPU, 128 MiB elsewhere."""
    elements = CHUNK_ELEMENTS.get(torch.device(device).type, DEFAULT_CHUNK_ELEMENTS)
    return max(16, elements // max(vocab_size, 1))


def _acc_dtype(t: torch.Tensor) -> torch.dtype:
    """Accumulation dtype: fp32 for fp32/bf16/fp16 inputs, fp64 for fp64 inputs (used by tests)."""
    return torch.promote_types(t.dtype, torch.float32)


def _no_autocast(t: torch.Tensor) -> torch.autocast:
    """Autocast switched off on ``t``'s device: the head's matmuls keep their own dtypes (fp32
    accumulation) even inside an enclosing bf16 autocast region such as the CPU bf16 decoder body."""
    return torch.autocast(t.device.type, enabled=False)


def _chunk_logits(h: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    acc = _acc_dtype(h)
    z = h.to(acc) @ weight.to(acc).T  # [c, V]
    return z if bias is None else z + bias.to(acc)  # [c, V]


class FusedTokenLogProbs(torch.autograd.Function):
    """Chunked log-prob + entropy with recomputation in backward (see the module docstring)."""

    @staticmethod
    def forward(ctx, hidden, weight, bias, targets, chunk_size):  # hidden [K, H], weight [V, H], targets [K]
        """Log-prob of each target and the entropy of each row, one chunk of rows (tokens) at a time."""
        with _no_autocast(hidden):
            return FusedTokenLogProbs._forward(ctx, hidden, weight, bias, targets, chunk_size)

    @staticmethod
    def _forward(ctx, hidden, weight, bias, targets, chunk_size):  # hidden [K, H], weight [V, H], targets [K]
        """The forward pass proper, with autocast off."""
        K = hidden.shape[0]
        acc = _acc_dtype(hidden)
        logp = hidden.new_empty(K, dtype=acc)  # [K]
        entropy = hidden.new_empty(K, dtype=acc)  # [K]
        lse = hidden.new_empty(K, dtype=acc)  # [K]
        for s in range(0, K, chunk_size):
            z = _chunk_logits(hidden[s : s + chunk_size], weight, bias)  # [c, V]
            m = z.amax(-1, keepdim=True)  # [c, 1]
            e = (z - m).exp_()  # [c, V] the one exponential pass
            total = e.sum(-1)  # [c]
            lse_c = total.log() + m.squeeze(1)  # [c] what torch.logsumexp computes, op for op
            lse[s : s + chunk_size] = lse_c
            logp[s : s + chunk_size] = z.gather(1, targets[s : s + chunk_size, None]).squeeze(1) - lse_c
            entropy[s : s + chunk_size] = lse_c - torch.einsum("cv,cv->c", e, z) / total  # Σ softmax·z = Σ e·z / Σ e
        ctx.save_for_backward(hidden, weight, bias, targets, lse, entropy)
        ctx.chunk_size = chunk_size
        ctx.set_materialize_grads(False)
        return logp, entropy

    @staticmethod
    def backward(ctx, grad_logp, grad_entropy):  # [K] each, or None when that output was unused
        """Gradients for hidden, weight and bias, recomputing each chunk's logits from the saved log-sum-exp."""
        with _no_autocast(ctx.saved_tensors[0]):
            return FusedTokenLogProbs._backward(ctx, grad_logp, grad_entropy)

    @staticmethod
    def _backward(ctx, grad_logp, grad_entropy):  # [K] each, or None when that output was unused
        """The backward pass proper, with autocast off."""
        hidden, weight, bias, targets, lse, entropy = ctx.saved_tensors
        want_h, want_w, want_b = ctx.needs_input_grad[:3]
        if grad_logp is None and grad_entropy is None:
            return None, None, None, None, None
        acc = _acc_dtype(hidden)
        grad_h = torch.empty_like(hidden, dtype=acc) if want_h else None  # [K, H]
        grad_w = torch.zeros_like(weight, dtype=acc) if want_w else None  # [V, H]
        grad_b = torch.zeros(weight.shape[0], dtype=acc, device=weight.device) if want_b else None  # [V]
        w_acc = weight.to(acc)  # [V, H]
        for s in range(0, hidden.shape[0], ctx.chunk_size):
            sl = slice(s, s + ctx.chunk_size)
            h = hidden[sl].to(acc)  # [c, H]
            z = _chunk_logits(h, weight, bias)  # [c, V]
            z.sub_(lse[sl].unsqueeze(1))  # [c, V] log p (in place)
            g_logp = grad_logp[sl].to(acc).unsqueeze(1) if grad_logp is not None else None  # [c, 1]
            if grad_entropy is None:  # only the log-probs were used (training): one [c, V] buffer
                dz = z.exp_().mul_(g_logp).neg_()  # [c, V] −p g_logp
            else:  # two [c, V] buffers
                p = torch.exp(z)  # [c, V]
                coef = z.add_(entropy[sl].unsqueeze(1)).mul_(
                    grad_entropy[sl].to(acc).unsqueeze(1)
                )  # [c, V] g_H (log p + H)
                if g_logp is not None:
                    coef.add_(g_logp)
                dz = p.mul_(coef).neg_()  # [c, V] −p (g_logp + g_H (log p + H))
            if g_logp is not None:
                dz.scatter_add_(1, targets[sl, None], g_logp)  # + g_logp at the sampled token
            if want_h:
                grad_h[sl] = dz @ w_acc  # [c, H]
            if want_w:
                grad_w.addmm_(dz.T, h)  # [V, H]
            if want_b:
                grad_b += dz.sum(0)  # [V]
        return (
            grad_h.to(hidden.dtype) if want_h else None,
            grad_w.to(weight.dtype) if want_w else None,
            grad_b.to(bias.dtype) if want_b else None,
            None,
            None,
        )


def fused_token_logprobs(
    hidden: torch.Tensor,  # [K, H]
    weight: torch.Tensor,  # [V, H]
    targets: torch.Tensor,  # [K] int64
    bias: torch.Tensor | None = None,  # [V]
    chunk_size: int | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:  # ([K], [K]) fp32
    """Sampled-token log-probs and next-token entropies of K positions, chunked (fp32 results,
    fp64 for fp64 inputs).  K = 0 is allowed (a micro-batch whose every token is masked): the
    outputs are empty but stay in the graph, so the backward pass still runs."""
    chunk = chunk_size or default_chunk_size(weight.shape[0], weight.device)
    return FusedTokenLogProbs.apply(hidden, weight, bias, targets, chunk)


def naive_token_logprobs(
    hidden: torch.Tensor,  # [K, H]
    weight: torch.Tensor,  # [V, H]
    targets: torch.Tensor,  # [K]
    bias: torch.Tensor | None = None,  # [V]
) -> tuple[torch.Tensor, torch.Tensor]:  # ([K], [K]) fp32
    """The same quantities through one full [K, V] fp32 logits tensor (the reference)."""
    acc = _acc_dtype(hidden)
    logits = F.linear(hidden.to(acc), weight.to(acc), None if bias is None else bias.to(acc))  # [K, V]
    logp_all = torch.log_softmax(logits, dim=-1)  # [K, V]
    logp = logp_all.gather(1, targets[:, None]).squeeze(1)  # [K]
    entropy = -(logp_all.exp() * logp_all).sum(-1)  # [K]
    return logp, entropy


@dataclass
class PackedBatch:
    """Rows packed for a training forward: prompt then completion, left-aligned, right-padded and
    trimmed to the longest row.  ``positions[i, t]`` is the position whose hidden state predicts
    completion token ``t`` of row ``i``."""

    input_ids: torch.Tensor  # [n, S] int64
    attention_mask: torch.Tensor  # [n, S] int64
    positions: torch.Tensor  # [n, T] int64
    targets: torch.Tensor  # [n, T] int64 completion tokens
    mask: torch.Tensor  # [n, T] bool real completion tokens
    shared: SharedPrompts | None = None
    """The distinct prompts once each, and the prompt of each row (see the module docstring)."""

    def to(self, device: torch.device) -> PackedBatch:
        """The same batch on ``device``."""
        return PackedBatch(
            *(None if v is None else v.to(device) for v in (getattr(self, f.name) for f in fields(self)))
        )


@dataclass
class SharedPrompts:
    """The distinct prompts of a :class:`PackedBatch`, each once, right-padded, and the prompt of each row."""

    input_ids: torch.Tensor  # [U, P] int64
    attention_mask: torch.Tensor  # [U, P] int64
    rows: torch.Tensor  # [n] int64 index of each row's prompt

    def to(self, device: torch.device) -> SharedPrompts:
        """The same prompts on ``device``."""
        return SharedPrompts(*(getattr(self, f.name).to(device) for f in fields(self)))


def tokenize_completions(
    prompts: list[str], completions: list[str], tokenizer
) -> tuple[list[list[int]], torch.Tensor, torch.Tensor]:
    """Prompt ids, right-padded completion ids (completion + EOS) and their mask, for :func:`pack_rows`.

    The prompt is tokenized as the engine tokenizes it (the tokenizer's own special tokens), the
    completion without special tokens and then ended by EOS, as a sampled completion that stopped.
    """
    prompt_ids = [tokenizer(p)["input_ids"] for p in prompts]
    comps = [tokenizer(c, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id] for c in completions]
    T = max((len(c) for c in comps), default=1)
    ids = torch.full((len(comps), T), tokenizer.pad_token_id, dtype=torch.long)  # [N, T]
    mask = torch.zeros(len(comps), T, dtype=torch.bool)  # [N, T]
    for i, c in enumerate(comps):
        ids[i, : len(c)] = torch.tensor(c)
        mask[i, : len(c)] = True
    return prompt_ids, ids, mask


def pack_rows(
    prompt_ids: list[list[int]],  # [N][prompt length]
    completion_ids: torch.Tensor,  # [N, T] int64
    completion_mask: torch.Tensor,  # [N, T] bool
    rows: list[int],
    pad_id: int,
) -> PackedBatch:
    """Pack the given rows for :func:`sequence_logprobs` (prompt padding removed, right-trimmed), with
    the distinct prompts once each (:class:`SharedPrompts`)."""
    comp_len = completion_mask[rows].sum(1)  # [n]
    prompts = [prompt_ids[i] for i in rows]
    p = torch.tensor([len(ids) for ids in prompts])  # [n]
    S, T = int((p + comp_len).max()), max(int(comp_len.max()), 1)
    left = torch.tensor([ids + [pad_id] * (S - len(ids)) for ids in prompts])  # [n, S] prompts, right-padded
    col = torch.arange(S)  # [S]
    t = (col - p.unsqueeze(1)).clamp(0, completion_ids.shape[1] - 1)  # [n, S] completion index at each column
    in_prompt = col < p.unsqueeze(1)  # [n, S]
    attention_mask = col < (p + comp_len).unsqueeze(1)  # [n, S]
    input_ids = torch.where(in_prompt, left, completion_ids[rows].gather(1, t))  # [n, S]
    input_ids = input_ids.masked_fill(~attention_mask, pad_id)  # [n, S]
    offsets = torch.arange(T)  # [T]
    positions = (p.unsqueeze(1) - 1 + offsets).clamp(max=S - 1)  # [n, T]
    mask = offsets.unsqueeze(0) < comp_len.unsqueeze(1)  # [n, T]
    targets = completion_ids[rows, :T].masked_fill(~mask, 0)  # [n, T]
    return PackedBatch(input_ids, attention_mask.long(), positions, targets, mask, shared_prompts(prompts, pad_id))


def shared_prompts(prompt_ids: list[list[int]], pad_id: int) -> SharedPrompts:
    """The distinct prompts of rows ``prompt_ids`` [n][length], right-padded, and each row's prompt."""
    index: dict[tuple[int, ...], int] = {}
    rows = [index.setdefault(tuple(ids), len(index)) for ids in prompt_ids]  # [n]
    distinct = list(index)
    P = max(len(ids) for ids in distinct)
    input_ids = torch.tensor([list(ids) + [pad_id] * (P - len(ids)) for ids in distinct])  # [U, P]
    attention_mask = (torch.arange(P) < torch.tensor([len(ids) for ids in distinct]).unsqueeze(1)).long()  # [U, P]
    return SharedPrompts(input_ids, attention_mask, torch.tensor(rows))


def lean_hidden(lm: torch.nn.Module, batch: PackedBatch, recompute: bool = False) -> torch.Tensor:  # [n, T, H]
    """The final hidden states that predict ``batch``'s completion tokens, by the lean forward over its distinct
    prompts once (:func:`~rewardzoo.core.lean_layers.shared_prompt_hidden`; ``recompute`` as there)."""
    shared, T = batch.shared, batch.targets.shape[1]
    return shared_prompt_hidden(
        lm,
        shared.input_ids,
        shared.attention_mask,
        shared.rows,
        batch.targets[:, : T - 1],
        batch.mask[:, : T - 1],
        recompute=recompute,
    )  # [n, T, H]


def sequence_logprobs(
    model: torch.nn.Module,
    batch: PackedBatch,
    *,
    temperature: float = 1.0,
    fused: bool = True,
    chunk_size: int | None = None,
    logit_scale: float = 1.0,
    lean: bool = False,
    recompute: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:  # ([n, T], [n, T]) fp32, zero where mask is False
    """Completion-token log-probs and entropies of a causal LM (peft-wrapped or not).

    The fused path computes the final hidden states that predict the completion tokens — with ``lean``,
    where :func:`~rewardzoo.core.lean_layers.why_not_lean` allows it (checked here, at every call: a
    Llama-family model, plain or LoRA, without hooks or checkpointing, float32 on the CPU), over the distinct
    prompts once and the completions by :func:`~rewardzoo.core.lean_layers.shared_prompt_hidden` on the
    model's own weights, with ``recompute`` keeping only the matrix products of trained layers for the backward
    pass; else by the model's decoder over the packed rows — and feeds only the K real
    completion positions to :func:`fused_token_logprobs` with the output layer's weight, scaled by
    ``logit_scale / temperature`` (logits = c·(W h + b), c from :func:`head_logit_scale`).
    ``fused=False`` takes the model's own logits over the packed rows (for heads that are not a scaled
    linear layer).
    """
    from rewardzoo.core.models import causal_lm

    lm = causal_lm(model)
    n, T = batch.targets.shape
    if fused:
        if lean and batch.shared is not None and why_not_lean(lm, batch.input_ids.shape[1]) is None:  # own weights
            h = lean_hidden(lm, batch, recompute)  # [n, T, H]
        else:
            out = lm.get_decoder()(input_ids=batch.input_ids, attention_mask=batch.attention_mask)
            hidden = out.last_hidden_state  # [n, S, H]
            h = hidden.gather(1, batch.positions.unsqueeze(-1).expand(n, T, hidden.shape[-1]))  # [n, T, H]
        head = lm.get_output_embeddings()
        divisor = temperature / logit_scale  # logits / T = W (h / divisor) + b / divisor
        bias = None if head.bias is None else head.bias / divisor  # [V]
        targets = batch.targets[batch.mask]  # [K]
        logp_k, ent_k = fused_token_logprobs(h[batch.mask] / divisor, head.weight, targets, bias, chunk_size)  # [K]
    else:
        logits = lm(input_ids=batch.input_ids, attention_mask=batch.attention_mask).logits  # [n, S, V]
        V = logits.shape[-1]
        z = logits.gather(1, batch.positions.unsqueeze(-1).expand(n, T, V))[batch.mask] / temperature  # [K, V]
        logp_all = torch.log_softmax(z.float(), dim=-1)  # [K, V]
        logp_k = logp_all.gather(1, batch.targets[batch.mask].unsqueeze(1)).squeeze(1)  # [K]
        ent_k = -(logp_all.exp() * logp_all).sum(-1)  # [K]
    zeros = torch.zeros(n, T, dtype=logp_k.dtype, device=logp_k.device)  # [n, T]
    return zeros.masked_scatter(batch.mask, logp_k), zeros.masked_scatter(batch.mask, ent_k)


def _divide(value: float) -> float:
    return 1.0 / value


def _multiply(value: float) -> float:
    return value


# How each family's config attribute scales the output layer's logits, by model_type (prefix).
LOGITS_SCALING_BY_FAMILY = {"granite": _divide, "minicpm3": _divide, "hyperclovax": _multiply}


def head_logit_scale(config) -> tuple[float | None, str]:
    """The factor c with logits = c·(W h + b) for a transformers causal-LM config, or
    (None, reason) when the head is not a scaled linear layer (then use the naive path).

    Read from the top-level config and its text config (multimodal models keep the LM's settings
    there).  Known scalings: Cohere ``logit_scale`` (×), Falcon-H1 ``lm_head_multiplier`` (×),
    ``logits_scaling`` — divided by Granite and MiniCPM3, multiplied by HyperCLOVA X; a
    ``logits_scaling`` of another family, or any ``final_logit_softcapping`` (Gemma 2/3), is not
    modelled.
    """
    text = config.get_text_config() if hasattr(config, "get_text_config") else config

    def setting(key: str):  # (value, config holding it): the text config's, else the top level's
        for cfg in (text, config):
            value = getattr(cfg, key, None)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                return float(value), cfg
        return None, None

    cap, _ = setting("final_logit_softcapping")
    if cap:
        return None, f"final_logit_softcapping={cap} (tanh soft-capping)"
    scale = 1.0
    for key in ("logit_scale", "lm_head_multiplier"):
        value, _ = setting(key)
        scale *= 1.0 if value is None else value
    value, holder = setting("logits_scaling")
    if value is not None:
        model_type = getattr(holder, "model_type", "") or ""
        rule = next((f for prefix, f in LOGITS_SCALING_BY_FAMILY.items() if model_type.startswith(prefix)), None)
        if rule is None:
            return None, f"logits_scaling={value} of model_type {model_type!r}, whose convention is not known"
        scale *= rule(value)
    return scale, ""


class PolicyLogProbs(torch.nn.Module):
    """The policy as one module whose forward returns completion log-probs and entropies.

    The trainer hands this wrapper (not the bare causal LM) to ``accelerate``, so that DDP/FSDP
    see the fused forward as the model's forward and synchronise its gradients.  The fused path
    is used whenever :func:`head_logit_scale` knows the head; otherwise a warning says why and the
    model's own logits are used.
    """

    def __init__(
        self,
        model: torch.nn.Module,
        *,
        temperature: float = 1.0,
        chunk_size: int | None = None,
        lean: bool = True,
        recompute: bool = False,
    ):
        from rewardzoo.core.models import causal_lm

        super().__init__()
        self.model = model
        self.temperature = temperature
        self.chunk_size = chunk_size
        self.lean = lean
        """Run a Llama-family model's layers on its own weights
        (:func:`~rewardzoo.core.lean_layers.shared_prompt_hidden`), checked at every forward
        (:func:`~rewardzoo.core.lean_layers.why_not_lean`: hooks a sharding wrapper adds later, gradient
        checkpointing switched on, a move to another device or dtype)."""
        self.recompute = recompute
        """In the lean forward of a fully trained model, keep only the matrix products for the backward pass and
        recompute the rest there: the same gradients from less memory, for some time
        (:func:`~rewardzoo.core.lean_layers.recomputed`; the trainer's CPU memory mode, ``grpo.release_heap``)."""
        scale, why = head_logit_scale(causal_lm(model).config)
        self.fused = scale is not None
        self.logit_scale = 1.0 if scale is None else scale
        if not self.fused:
            warnings.warn(
                f"fused log-probs off for this model: {why}; computing them from the model's full logits "
                f"(more memory: one [tokens x vocab] tensor per micro-batch)",
                stacklevel=2,
            )

    def forward(self, batch: PackedBatch) -> tuple[torch.Tensor, torch.Tensor]:
        """([n, T], [n, T]) log-probs and entropies of ``batch``'s completion tokens."""
        kwargs = dict(
            temperature=self.temperature,
            fused=self.fused,
            chunk_size=self.chunk_size,
            logit_scale=self.logit_scale,
            lean=self.lean,
            recompute=self.recompute,
        )
        return sequence_logprobs(self.model, batch, **kwargs)
