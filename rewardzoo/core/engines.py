"""Generation engines behind one protocol: ``generate(prompts, n, greedy) -> Generation``.

:class:`HFEngine` uses transformers ``generate`` (batched, KV cache, left padding) and works on every
device; it is the default.  An engine that reports the log-probs it sampled with fills
``Generation.sampling_logprobs`` and the trainer applies truncated importance sampling.

Sampling (``sampling.sampler``).  transformers draws each token with ``torch.multinomial``, which
on CPU draws one exponential variate per vocabulary entry: at a 151,936-entry vocabulary it was
most of the generation time (benchmarks/grpo_vs_trl.py, docs/performance.md).  The default
sampler, :class:`InverseCDFSampler`, is a logits processor run with greedy decoding: it applies
transformers' own temperature, top-k and top-p warpers, draws the token by inverse CDF
(:func:`inverse_cdf_sample`, one uniform per row) and leaves only that token finite, so the greedy
step picks it.  The uniforms come from torch's global generator, which the trainer seeds before
every chunk of prompts, so runs stay reproducible and resumable.  The draws follow the same
distribution as ``multinomial`` (tested), not the same token sequence.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

import torch
from transformers import (LogitsProcessor, LogitsProcessorList, TemperatureLogitsWarper, TopKLogitsWarper,
                          TopPLogitsWarper)

from rewardzoo.core.types import Generation

SAMPLERS = ("inverse_cdf", "multinomial")
CDF_BLOCK = 1024  # vocabulary entries per block of the two-level inverse CDF


@dataclass
class SamplingConfig:
    """How completions are sampled during RL (evaluation is always greedy)."""

    temperature: float = 1.0
    """Softmax temperature; the training log-probs use the same temperature."""
    top_p: float = 1.0
    """Nucleus sampling mass (1.0 = off)."""
    top_k: int = 0
    """Top-k sampling (0 = off)."""
    max_new_tokens: int = 8
    """Longest completion, in tokens (also the L of the dr_grpo loss normaliser)."""
    batch_size: int = 0
    """Rows per generate call (0 = all rows of a call at once)."""
    sampler: str = "inverse_cdf"
    """How a token is drawn from the temperature/top-k/top-p-processed distribution: 'inverse_cdf' (ours: one
    uniform per row against the cumulative sum, with greedy decoding; much faster at large vocabularies) or
    'multinomial' (transformers' own sampling).  Same distribution, different draws.  'inverse_cdf' applies only
    these three warpers; other sampling settings of a hub model's generation_config (min_p, typical_p, epsilon or
    eta cutoffs) are applied by 'multinomial' only."""

    def validate(self) -> None:
        """Raise ValueError, saying what to change, on settings that cannot run."""
        if self.max_new_tokens < 1 or self.temperature <= 0:
            raise ValueError("max_new_tokens must be >= 1 and sampling.temperature > 0")
        if self.sampler not in SAMPLERS:
            raise ValueError(f"sampler must be one of {', '.join(SAMPLERS)}; got {self.sampler!r}")


class Engine(Protocol):
    """A generation engine."""

    def generate(self, prompts: list[str], n: int = 1, greedy: bool = False) -> Generation:
        """``n`` completions of every prompt, rows of one prompt contiguous."""
        ...


def eos_token_ids(model: torch.nn.Module, tokenizer) -> list[int]:
    """Every token id that ends a completion (tokenizer EOS plus the model's generation config)."""
    ids = {tokenizer.eos_token_id}
    gen_eos = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    if isinstance(gen_eos, int):
        ids.add(gen_eos)
    elif gen_eos:
        ids.update(gen_eos)
    return sorted(i for i in ids if i is not None)


def completion_mask(completion_ids: torch.Tensor, eos_ids: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
    """([N, T] bool tokens up to and including the first EOS, all tokens when none; [N] bool rows
    without an EOS, i.e. truncated at the token limit)."""
    is_eos = torch.isin(completion_ids, torch.tensor(eos_ids, device=completion_ids.device))  # [N, T]
    T = completion_ids.shape[1]
    ended = is_eos.any(1)  # [N]
    first = torch.where(ended, is_eos.int().argmax(1), torch.full_like(is_eos[:, 0], T, dtype=torch.long))  # [N]
    return torch.arange(T, device=completion_ids.device).unsqueeze(0) <= first.unsqueeze(1), ~ended  # [N, T], [N]


def inverse_cdf_sample(scores: torch.Tensor, block: int = CDF_BLOCK) -> torch.Tensor:  # [B, V] -> [B] int64
    """One token per row drawn from softmax(scores) by inverse CDF, with one uniform per row.

        w_v  = exp(s_v − max s)                                  unnormalised probabilities (−inf → 0)
        M_j  = Σ_{v in block j} w_v,   C_j = Σ_{i ≤ j} M_i       block masses; their running sum in float64
        u    = (1 − U) · C_last ∈ (0, C_last],  U ~ Uniform[0, 1) from torch's global generator
        j    = first block with C_j ≥ u;   r = (u − C_{j−1}) / (C_j − C_{j−1}) ∈ (0, 1]
        k    = first entry of block j with c_k ≥ r · c_last,   c = running sum of the block's w (float64)

    so P(v) = (M_j / C_last) · (w_v / M_j) = w_v / Σ w, and an entry of weight 0 is never drawn
    (the first index whose running sum reaches a positive level has positive weight).  The running
    sum over blocks is float64 because a float32 running sum over a 152k vocabulary rounds every
    share to float32's spacing at the running total (~6e-8): a token of probability 1e-11 would be
    drawn with probability ~1e-8 (total variation ~1e-3); the block sums themselves are float32.
    """
    B, V = scores.shape
    block = min(block, V)
    w = (scores - scores.amax(-1, keepdim=True)).exp_()  # [B, V]
    full = V // block * block
    masses = torch.cat([w.unfold(1, block, block).sum(-1), w[:, full:].sum(-1, keepdim=True)], 1).double()  # [B, nb]
    C = masses.cumsum(-1)  # [B, nb]
    u = (1 - torch.rand(B, 1, dtype=torch.float64, device=scores.device)) * C[:, -1:]  # [B, 1]
    j = torch.searchsorted(C, u)  # [B, 1]
    prev = torch.where(j > 0, C.gather(1, (j - 1).clamp(min=0)), 0.0)  # [B, 1] C_{j−1}
    r = ((u - prev) / (C.gather(1, j) - prev)).clamp(max=1.0)  # [B, 1]
    cols = j * block + torch.arange(block, device=scores.device)  # [B, block]
    c = w.gather(1, cols.clamp(max=V - 1)).masked_fill(cols >= V, 0.0).double().cumsum(-1)  # [B, block]
    return (j * block + torch.searchsorted(c, r * c[:, -1:])).squeeze(1)  # [B]


class InverseCDFSampler(LogitsProcessor):
    """Draws the next token by :func:`inverse_cdf_sample` after transformers' temperature, top-k and
    top-p warpers (in the order transformers' own sampling applies them), and returns scores that
    are 0 at the drawn token and −inf elsewhere: run with greedy decoding, the greedy step emits
    the draw.  Put it last among the processors (transformers appends custom ones after its own,
    e.g. after ``min_new_tokens``)."""

    def __init__(self, temperature: float = 1.0, top_k: int = 0, top_p: float = 1.0):
        warpers = [TemperatureLogitsWarper(temperature)] if temperature != 1.0 else []
        warpers += [TopKLogitsWarper(top_k)] if top_k else []
        warpers += [TopPLogitsWarper(top_p)] if top_p < 1.0 else []
        self.warpers = LogitsProcessorList(warpers)

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:  # [B, S], [B, V] -> [B, V]
        """The drawn token's one-hot in log space."""
        token = inverse_cdf_sample(self.warpers(input_ids, scores))  # [B]
        return torch.full_like(scores, -math.inf).scatter_(1, token.unsqueeze(1), 0.0)  # [B, V]


class HFEngine:
    """transformers ``generate``: works with any causal LM, peft-wrapped or not, on any device."""

    def __init__(self, model: torch.nn.Module, tokenizer, sampling: SamplingConfig):
        self.model = model
        self.tokenizer = tokenizer
        self.sampling = sampling
        self.eos_ids = eos_token_ids(model, tokenizer)
        s = sampling
        if s.sampler == "multinomial":
            self.sample_kwargs = dict(do_sample=True, temperature=s.temperature, top_p=s.top_p, top_k=s.top_k)
        else:
            sampler = InverseCDFSampler(s.temperature, s.top_k, s.top_p)
            self.sample_kwargs = dict(do_sample=False, logits_processor=LogitsProcessorList([sampler]))

    @torch.no_grad()
    def generate(self, prompts: list[str], n: int = 1, greedy: bool = False) -> Generation:
        """``n`` completions per prompt (sampled, or greedy for evaluation); each prompt is tokenised once."""
        enc = self.tokenizer(prompts, return_tensors="pt", padding=True)
        ids = enc["input_ids"].repeat_interleave(n, 0)  # [N, P]
        mask = enc["attention_mask"].repeat_interleave(n, 0)  # [N, P]
        prompt_ids = [row[m.bool()].tolist() for row, m in zip(enc["input_ids"], enc["attention_mask"])]
        rows = [p for p in prompt_ids for _ in range(n)]
        step = self.sampling.batch_size or len(rows)
        parts = [self._generate_rows(ids[s : s + step], mask[s : s + step], rows[s : s + step], greedy)
                 for s in range(0, len(rows), step)]
        return Generation.concat(parts, self.tokenizer.pad_token_id)

    def _generate_rows(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, prompt_ids: list[list[int]],
                       greedy: bool) -> Generation:
        P = input_ids.shape[1]
        keep = int(attention_mask.sum(1).max())  # left padding beyond this batch's longest prompt is dropped
        device = next(self.model.parameters()).device
        input_ids = input_ids[:, P - keep :].to(device)  # [B, P]
        attention_mask = attention_mask[:, P - keep :].to(device)  # [B, P]
        s = self.sampling
        was_training = self.model.training
        self.model.eval()
        out = self.model.generate(
            input_ids=input_ids,
            attention_mask=attention_mask,
            max_new_tokens=s.max_new_tokens,
            eos_token_id=self.eos_ids,
            pad_token_id=self.tokenizer.pad_token_id,
            **(dict(do_sample=False) if greedy else self.sample_kwargs),
        )  # [B, P + T]
        self.model.train(was_training)
        comp = out[:, input_ids.shape[1] :].cpu()  # [B, T]
        mask, truncated = completion_mask(comp, self.eos_ids)  # [B, T], [B]
        comp = comp.masked_fill(~mask, self.tokenizer.pad_token_id)  # [B, T]
        return Generation(
            prompt_ids=prompt_ids,
            completion_ids=comp,
            completion_mask=mask,
            texts=self.tokenizer.batch_decode(comp, skip_special_tokens=True),
            truncated=truncated,
        )
