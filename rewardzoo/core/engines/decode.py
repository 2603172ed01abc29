"""The HF engine's KV-cache decode loop (:func:`decode`) and when it can run.

Each distinct prompt of a call is prefilled once and its cache copied to its ``n`` rows, and rows
that have emitted EOS leave the batch, so the last, longest completion no longer drags every
finished row through each decode step.  The loop draws one uniform for every row of the call at
every step, finished or not, as ``generate`` with
:class:`~rewardzoo.core.engines.sampling.InverseCDFSampler` does, so both give the same tokens from
the same logits (tested).  A model whose generation config asks for logits processors the loop does
not apply (:data:`GENERATE_ONLY`), or whose KV cache cannot select rows (:class:`DecodeUnsupported`),
is decoded by transformers ``generate`` instead (:class:`~rewardzoo.core.engines.hf.HFEngine`).
"""

from __future__ import annotations

import math

import torch
from transformers import GenerationConfig

from rewardzoo.core.engines.llama_family import LlamaFamilyStepper
from rewardzoo.core.lean_layers import why_not_llama_family
from rewardzoo.core.models import cache_keyword

# Generation-config settings that make transformers ``generate`` add a logits processor :func:`decode`
# does not apply (min_new_tokens it does apply); a model that sets any of them is decoded by ``generate``.
GENERATE_ONLY = (
    "repetition_penalty",
    "encoder_repetition_penalty",
    "no_repeat_ngram_size",
    "encoder_no_repeat_ngram_size",
    "bad_words_ids",
    "min_length",
    "forced_bos_token_id",
    "forced_eos_token_id",
    "exponential_decay_length_penalty",
    "suppress_tokens",
    "begin_suppress_tokens",
    "sequence_bias",
    "guidance_scale",
    "watermarking_config",
    "renormalize_logits",
    "min_p",
    "typical_p",
    "epsilon_cutoff",
    "eta_cutoff",
)


def generate_only_settings(model: torch.nn.Module) -> list[str]:
    """The settings of ``model``'s generation config (off their defaults) that only ``generate`` applies."""
    config = getattr(model, "generation_config", None)
    if config is None:
        return []
    default = GenerationConfig()
    return [k for k in GENERATE_ONLY if getattr(config, k, None) != getattr(default, k, None)]


class DecodeUnsupported(RuntimeError):
    """The model's KV cache cannot be copied to rows or rows removed from it (raised before sampling starts)."""


class TransformersStepper:
    """Prefill, decode steps and row retirement of one decode call through the transformers model and
    its own KV cache (any causal LM whose cache can select rows)."""

    def __init__(self, model: torch.nn.Module):
        self.model, self.key, self.cache = model, cache_keyword(model), None

    def prefill(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, position: torch.Tensor, rows: torch.Tensor
    ) -> torch.Tensor:  # [U, P] ×3, [B] -> [B, V]
        """The last prompt position's logits of every row (prompt ``rows[i]`` for row i), the cache copied to the
        rows."""
        out = self.model(
            input_ids=input_ids, attention_mask=attention_mask, position_ids=position, use_cache=True, logits_to_keep=1
        )
        self.cache = getattr(out, self.key, None)
        if not hasattr(self.cache, "batch_select_indices"):  # before any uniform is drawn: generate can take over
            raise DecodeUnsupported(
                f"{type(self.model).__name__} returned a KV cache of type "
                f"{type(self.cache).__name__}, which cannot select batch rows"
            )
        self.cache.batch_select_indices(rows)
        return out.logits[rows, -1].float()  # [B, V]

    def step(self, token: torch.Tensor, attention_mask: torch.Tensor, position: torch.Tensor) -> torch.Tensor:
        """Logits [A, V] of one new token per live row (``token`` [A], ``attention_mask`` [A, P + t + 1],
        ``position`` [A, 1])."""
        out = self.model(
            input_ids=token.unsqueeze(1),
            attention_mask=attention_mask,
            position_ids=position,
            use_cache=True,
            **{self.key: self.cache},
        )
        self.cache = getattr(out, self.key)
        return out.logits[:, -1].float()  # [A, V]

    def retire(self, keep: torch.Tensor) -> None:
        """Keep only the live rows ``keep`` [A'] (indices into the current rows)."""
        self.cache.batch_select_indices(keep)


def stepper(model: torch.nn.Module, max_length: int, fast: bool = True):
    """The forward of one decode call of at most ``max_length`` positions: the lean Llama-family one
    (:class:`~rewardzoo.core.engines.llama_family.LlamaFamilyStepper`) when ``fast`` and it decodes
    ``model`` exactly (a peft LoRA model too: its adapters run in the lean projections), else
    :class:`TransformersStepper`."""
    window = getattr(getattr(model, "config", None), "sliding_window", None)
    if fast and why_not_llama_family(model) is None and (window is None or max_length <= window):
        return LlamaFamilyStepper(model, max_length)
    return TransformersStepper(model)


@torch.no_grad()
def decode(
    model: torch.nn.Module,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    repeats: torch.Tensor,
    max_new_tokens: int,
    eos_ids: list[int],
    pad_id: int,
    draw=None,
    min_new_tokens: int = 0,
    fast: bool = True,
) -> torch.Tensor:
    """Completion tokens [B, T] (pad after EOS; T ≤ max_new_tokens, shorter when every row ended) of
    the U left-padded prompts ``input_ids`` [U, P] (``attention_mask`` [U, P]), prompt u repeated
    ``repeats[u]`` times (B = Σ repeats rows, contiguous per prompt).

        prefill   one forward of the U prompts (last position's logits only); the KV cache and the
                  logits are then copied to each prompt's rows
        step t    s = logits of the live rows (EOS → −inf while t < min_new_tokens);
                  token = argmax s (greedy, ``draw`` None) or draw(s, U_t[live]) with U_t [B, 1] one
                  uniform per row of the call, drawn for every row at every step
        retire    rows that drew EOS leave the cache and the batch; stop when none is left

    ``draw`` maps ([A, V] logits, [A, 1] uniforms) to [A] tokens (:meth:`InverseCDFSampler.draw`).
    Positions count non-pad tokens (left padding), as ``generate`` computes them.  ``fast`` lets a
    Llama-family model run the lean forward (``stepper``), which gives the same tokens."""
    device = input_ids.device
    B = int(repeats.sum())
    rows = torch.arange(len(repeats), device=device).repeat_interleave(repeats)  # [B] prompt of each row
    position = (attention_mask.cumsum(1) - 1).clamp(min=0)  # [U, P]
    forward = stepper(model, input_ids.shape[1] + max_new_tokens, fast)
    logits = forward.prefill(input_ids, attention_mask, position, rows)  # [B, V]
    mask, position = attention_mask[rows], position[rows, -1:]  # [B, P], [B, 1]
    live = torch.arange(B, device=device)  # [A] the call's row index of each row still decoding
    eos = torch.tensor(eos_ids, device=device)
    tokens = torch.full((B, max_new_tokens), pad_id, dtype=torch.long, device=device)  # [B, T]
    for t in range(max_new_tokens):
        if t < min_new_tokens:
            logits[:, eos] = -math.inf
        if draw is None:
            token = logits.argmax(-1)  # [A]
        else:
            uniforms = torch.rand(B, 1, dtype=torch.float64, device=device)  # [B, 1]
            token = draw(logits, uniforms[live])  # [A]
        tokens[live, t] = token
        going = ~torch.isin(token, eos)  # [A]
        if t == max_new_tokens - 1 or not bool(going.any()):
            return tokens[:, : t + 1]
        if not bool(going.all()):
            keep = going.nonzero().squeeze(1)  # [A']
            forward.retire(keep)
            live, token, mask, position = live[keep], token[keep], mask[keep], position[keep]
        mask = torch.cat([mask, mask.new_ones(len(live), 1)], 1)  # [A, P + t + 1]
        position = position + 1  # [A, 1]
        logits = forward.step(token, mask, position)  # [A, V]
    return tokens
