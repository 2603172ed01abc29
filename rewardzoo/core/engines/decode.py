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

from rewardzoo.core.models import cache_keyword


# does not apply (min_new_tokens it does apply); a model that sets any of them is decoded by ``generate``.
GENERATE_ONLY = ("repetition_penalty", "encoder_repetition_penalty", "no_repeat_ngram_size",
                 "encoder_no_repeat_ngram_size", "bad_words_ids", "min_length", "forced_bos_token_id",
                 "forced_eos_token_id", "exponential_decay_length_penalty", "suppress_tokens",
                 "begin_suppress_tokens", "sequence_bias", "guidance_scale", "watermarking_config",
                 "renormalize_logits", "min_p", "typical_p", "epsilon_cutoff", "eta_cutoff")


def generate_only_settings(model: torch.nn.Module) -> list[str]:
    """The settings of ``model``'s generation config (off their defaults) that only ``generate`` applies."""
    config = getattr(model, "generation_config", None)
    if config is None:
        return []
    default = GenerationConfig()
    return [k for k in GENERATE_ONLY if getattr(config, k, None) != getattr(default, k, None)]


class DecodeUnsupported(RuntimeError):
    """The model's KV cache cannot be copied to rows or rows removed from it (raised before sampling starts)."""


@torch.no_grad()
def decode(model: torch.nn.Module, input_ids: torch.Tensor, attention_mask: torch.Tensor, repeats: torch.Tensor,
           max_new_tokens: int, eos_ids: list[int], pad_id: int, draw=None, min_new_tokens: int = 0) -> torch.Tensor:
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
    Positions count non-pad tokens (left padding), as ``generate`` computes them."""
    device = input_ids.device
    key = cache_keyword(model)
    B = int(repeats.sum())
    rows = torch.arange(len(repeats), device=device).repeat_interleave(repeats)  # [B] prompt of each row
    position = (attention_mask.cumsum(1) - 1).clamp(min=0)  # [U, P]
    out = model(input_ids=input_ids, attention_mask=attention_mask, position_ids=position, use_cache=True,
                logits_to_keep=1)
    cache = getattr(out, key, None)
    if not hasattr(cache, "batch_select_indices"):  # before any uniform is drawn: generate can take over as is
        raise DecodeUnsupported(f"{type(model).__name__} returned a KV cache of type {type(cache).__name__}, "
                                f"which cannot select batch rows")
    cache.batch_select_indices(rows)
    logits = out.logits[rows, -1].float()  # [B, V]
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
            cache.batch_select_indices(going.nonzero().squeeze(1))
            live, token, mask, position = live[going], token[going], mask[going], position[going]
        mask = torch.cat([mask, mask.new_ones(len(live), 1)], 1)  # [A, P + t + 1]
        position = position + 1  # [A, 1]
        out = model(input_ids=token.unsqueeze(1), attention_mask=mask, position_ids=position, use_cache=True,
                    **{key: cache})
        cache = getattr(out, key)
        logits = out.logits[:, -1].float()  # [A, V]
    return tokens
