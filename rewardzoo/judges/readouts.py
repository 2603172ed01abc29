"""How a judge's logit z (D = σ(z)) is read from its model: the switch ``JudgeConfig.readout``.

    last_token     z = w·h_last                       the RAL paper's judge, a binary sequence classifier: a
                                                      one-logit head on the last real token's state
    answer_mean    z = w·(1/|y|) Σ_{t∈y} h_t          the same head on the mean of the answer tokens'
                                                      final hidden states
    lm_likelihood  z = a·ℓ + b                        a generative discriminator: the backbone's own LM
                   ℓ = mean_t (or Σ_t) log p(y_t | x, y_<t)   head scores the answer y; a (``scale``)
                                                      and b (``bias``) are a learned affine calibration

With ``end_token`` the answer is followed by the tokenizer's EOS: the last token read is EOS (its
state has attended to the whole answer), EOS is one of the pooled tokens, and ℓ includes
log p(EOS | x, a) — that the answer ends where it does (``29440`` is not ``2944``).

Why a switch (the judge-capacity audit in docs/rewards/ral.md, on the recipe-sized tiny Qwen3 LM-pretrained on true
``a*b=c``): the backbone's own answer log-likelihood verifies at AUC 0.99, while a last-token head
on the same backbone stays at 0.51–0.63 however it is fitted — at this scale the last token's state
is busy predicting the end of the text, and whether earlier digits were surprising lives in the
per-position predictions.  Which readout carries what a backbone knows is measured before a study
chooses one (``benchmarks/ral_capacity.py``).

Inputs of ``answer_mean``, ``lm_likelihood`` and ``last_token`` with ``end_token`` are packed as the
core packs completions for its log-probs (:func:`rewardzoo.core.logprobs.pack_rows`): the prompt
and separator tokenized with the tokenizer's special tokens, then the answer without them (plus
EOS), right-padded; beyond ``max_length`` tokens the prompt is cut from the left, so the answer is
kept.  ``lm_likelihood`` computes log-probs with the core's fused path
(:func:`rewardzoo.core.logprobs.sequence_logprobs`), so no ``[tokens × vocab]`` tensor of a batch
exists for a large vocabulary, and heads that scale their logits are scaled; a Llama-family backbone
runs the core's lean forward there (:mod:`rewardzoo.core.lean_layers`), as the policy does.

Departures from the RAL paper (whose judge is a sequence classifier, i.e. ``last_token``): ``answer_mean``
and ``lm_likelihood`` are ours; the calibration starts at a = 1, b = 0 (D = σ(ℓ)), our choice.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from rewardzoo.core.logprobs import PackedBatch, head_logit_scale, pack_rows, sequence_logprobs

READOUTS = ("last_token", "answer_mean", "lm_likelihood")
"""The readouts ``JudgeConfig.readout`` names (module docstring)."""
LM_REDUCTIONS = ("mean", "sum")
"""How ``lm_likelihood`` reduces the answer tokens' log-probs to ℓ."""


def pack_answers(
    tokenizer, pairs: Sequence[tuple[str, str]], separator: str, max_length: int, end_token: bool
) -> PackedBatch:
    """(prompt, answer) pairs packed as prompt + separator then answer (+ EOS), right-padded; the
    answer's tokens are the batch's completion tokens (``positions`` predict them, ``mask`` marks
    them).  The prompt is cut from the left beyond ``max_length`` tokens (one prompt token is always
    kept, so the first answer token has a predicting position).  Raises ValueError on an empty
    answer (nothing to read: give ``end_token=true``) or an empty prompt."""
    prompt_ids, answer_ids = [], []
    for prompt, answer in pairs:
        p = tokenizer(prompt + separator)["input_ids"]
        a = tokenizer(answer, add_special_tokens=False)["input_ids"] + ([tokenizer.eos_token_id] if end_token else [])
        if not a:
            raise ValueError(
                f"the judge got an empty answer for prompt {prompt[:40]!r}: there is no answer token to "
                "read; set judge end_token=true (or give nonempty answers)"
            )
        if not p:
            raise ValueError("the judge got an empty prompt; the first answer token needs a prompt token before it")
        a = a[-(max_length - 1) :]
        prompt_ids.append(p[-(max_length - len(a)) :])
        answer_ids.append(a)
    T = max(len(a) for a in answer_ids)
    ids = torch.full((len(pairs), T), tokenizer.pad_token_id, dtype=torch.long)  # [n, T]
    mask = torch.zeros(len(pairs), T, dtype=torch.bool)  # [n, T]
    for i, a in enumerate(answer_ids):
        ids[i, : len(a)] = torch.tensor(a)
        mask[i, : len(a)] = True
    return pack_rows(prompt_ids, ids, mask, list(range(len(pairs))), tokenizer.pad_token_id)


def answer_states(hidden: torch.Tensor, batch: PackedBatch) -> torch.Tensor:
    """[n, T, H] final hidden states at the answer tokens' own positions (one past the positions that
    predict them; rows' padding slots hold a clamped, masked-out position)."""
    n, S, H = hidden.shape  # hidden: [n, S, H]
    where = (batch.positions + 1).clamp(max=S - 1)  # [n, T]
    return hidden.gather(1, where.unsqueeze(-1).expand(n, where.shape[1], H))  # [n, T, H]


def mean_pool(states: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """[n, H] mean of ``states`` [n, T, H] over the real tokens of ``mask`` [n, T]."""
    m = mask.to(states.dtype).unsqueeze(-1)  # [n, T, 1]
    return (states * m).sum(1) / m.sum(1)  # [n, H]


def last_pool(states: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """[n, H] the state of each row's last real token (``mask`` [n, T] is a left-aligned run per row)."""
    last = mask.sum(1) - 1  # [n]
    return states[torch.arange(states.shape[0], device=states.device), last]  # [n, H]


def reduce_loglik(logp: torch.Tensor, mask: torch.Tensor, reduce: str) -> torch.Tensor:
    """[n] ℓ: the sum or mean of per-token log-probs ``logp`` [n, T] (zero off ``mask``) over each row's tokens."""
    total = (logp * mask).sum(1)  # [n]
    return total if reduce == "sum" else total / mask.sum(1)  # [n]


def classifier_logit(model: torch.nn.Module, batch: PackedBatch, readout: str) -> torch.Tensor:
    """[n] z of a transformers sequence classifier (``base_model`` + one-logit ``score`` head) read at the
    answer: its last token (``last_token``, with ``end_token`` that is EOS) or the mean of its tokens."""
    hidden = model.base_model(
        input_ids=batch.input_ids, attention_mask=batch.attention_mask
    ).last_hidden_state  # [n, S, H]
    states = answer_states(hidden, batch)  # [n, T, H]
    pooled = last_pool(states, batch.mask) if readout == "last_token" else mean_pool(states, batch.mask)  # [n, H]
    return model.score(pooled)[:, 0].float()  # [n]


class LikelihoodJudgeModel(torch.nn.Module):
    """A causal LM read as a judge: z = scale·ℓ + bias, ℓ the answer's mean (or summed) token
    log-likelihood under the LM's own head (the ``lm_likelihood`` readout).  ``scale`` and ``bias``
    are 0-d parameters (a = 1, b = 0 at the start); the LM is ``lm``."""

    def __init__(self, lm: torch.nn.Module, reduce: str = "mean"):
        super().__init__()
        if reduce not in LM_REDUCTIONS:
            raise ValueError(f"lm_reduce must be one of {', '.join(LM_REDUCTIONS)}; got {reduce!r}")
        self.lm = lm
        self.reduce = reduce
        self.scale = torch.nn.Parameter(torch.ones(()))  # []
        self.bias = torch.nn.Parameter(torch.zeros(()))  # []
        factor, _ = head_logit_scale(lm.config)
        self.fused = factor is not None  # a head that is no scaled linear layer: the LM's own logits
        self.logit_scale = 1.0 if factor is None else factor

    def loglik(self, batch: PackedBatch) -> torch.Tensor:
        """[n] ℓ of each row's answer tokens."""
        logp, _ = sequence_logprobs(self.lm, batch, fused=self.fused, logit_scale=self.logit_scale, lean=True)  # [n, T]
        return reduce_loglik(logp, batch.mask, self.reduce)  # [n]

    def forward(self, batch: PackedBatch) -> torch.Tensor:
        """[n] z = scale·ℓ + bias."""
        return self.scale * self.loglik(batch) + self.bias  # [n]


def head_parameters(model: torch.nn.Module) -> list[torch.nn.Parameter]:
    """The readout's own parameters (what ``head_lr`` and ``freeze_backbone`` single out): the calibration
    a, b of a :class:`LikelihoodJudgeModel`, else the classifier's ``score`` head."""
    if isinstance(model, LikelihoodJudgeModel):
        return [model.scale, model.bias]
    head = getattr(model, "score", None)
    if not isinstance(head, torch.nn.Module):
        raise ValueError(
            f"{type(model).__name__} has no `score` head; the judge's answer_mean readout, head_lr and "
            "freeze_backbone need a decoder classifier whose head is `score` (Qwen3, Llama, ...)"
        )
    return list(head.parameters())
