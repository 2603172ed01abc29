"""Drawing a token from the temperature/top-k/top-p-processed distribution by inverse CDF
(``sampling.sampler=inverse_cdf``, the default).

transformers draws each token with ``torch.multinomial``, which on CPU draws one exponential
variate per vocabulary entry: at a 151,936-entry vocabulary it was most of the generation time
(benchmarks/grpo_vs_trl.py, docs/performance.md).  :func:`inverse_cdf_sample` draws with one
uniform per row after transformers' own temperature, top-k and top-p warpers.  The uniforms come
from torch's global generator, which the trainer seeds before every chunk of prompts, so runs stay
reproducible and resumable.  The draws follow the same distribution as ``multinomial`` (tested),
not the same token sequence.
"""

from __future__ import annotations

import math

import torch
from transformers import (
    LogitsProcessor,
    LogitsProcessorList,
    TemperatureLogitsWarper,
    TopKLogitsWarper,
    TopPLogitsWarper,
)

CDF_BLOCK = 1024  # vocabulary entries per block of the two-level inverse CDF


def inverse_cdf_sample(
    scores: torch.Tensor, block: int = CDF_BLOCK, uniforms: torch.Tensor | None = None
) -> torch.Tensor:  # [B, V], [B, 1] -> [B] int64
    """One token per row drawn from softmax(scores) by inverse CDF, with one uniform per row
    (``uniforms``, float64 in [0, 1); drawn from torch's global generator when not given).

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
    U = torch.rand(B, 1, dtype=torch.float64, device=scores.device) if uniforms is None else uniforms  # [B, 1]
    u = (1 - U) * C[:, -1:]  # [B, 1]
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

    def draw(self, scores: torch.Tensor, uniforms: torch.Tensor | None = None) -> torch.Tensor:  # [B, V], [B, 1] -> [B]
        """One token per row from the warped distribution of ``scores``."""
        return inverse_cdf_sample(self.warpers(None, scores), uniforms=uniforms)  # [B]

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:  # [B, S], [B, V] -> [B, V]
        """The drawn token's one-hot in log space."""
        token = self.draw(scores)  # [B]
        return torch.full_like(scores, -math.inf).scatter_(1, token.unsqueeze(1), 0.0)  # [B, V]


# Generation-config settings that make transformers ``generate`` add a logits processor :func:`decode`
