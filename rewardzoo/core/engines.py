"""Generation engines behind one protocol: ``generate(prompts, n, greedy) -> Generation``.

:class:`HFEngine` uses transformers ``generate`` (batched, KV cache, left padding) and works on every
device; it is the default.  An engine that reports the log-probs it sampled with fills
``Generation.sampling_logprobs`` and the trainer applies truncated importance sampling.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Protocol

import torch

from rewardzoo.core.types import Generation


@dataclass
class SamplingConfig:
    """How completions are sampled during RL (evaluation is always greedy)."""

    RANGES: ClassVar[dict[str, str]] = {"temperature": "(0, inf)", "top_p": "(0, 1]", "top_k": "[0, inf)",
                                        "max_new_tokens": "[1, inf)", "batch_size": "[0, inf)"}

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


class HFEngine:
    """transformers ``generate``: works with any causal LM, peft-wrapped or not, on any device."""

    def __init__(self, model: torch.nn.Module, tokenizer, sampling: SamplingConfig):
        self.model = model
        self.tokenizer = tokenizer
        self.sampling = sampling
        self.eos_ids = eos_token_ids(model, tokenizer)

    @torch.no_grad()
    def generate(self, prompts: list[str], n: int = 1, greedy: bool = False) -> Generation:
        """``n`` completions per prompt (sampled, or greedy for evaluation)."""
        rows = [p for p in prompts for _ in range(n)]
        step = self.sampling.batch_size or len(rows)
        parts = [self._generate_rows(rows[s : s + step], greedy) for s in range(0, len(rows), step)]
        return Generation.concat(parts, self.tokenizer.pad_token_id)

    def _generate_rows(self, rows: list[str], greedy: bool) -> Generation:
        enc = self.tokenizer(rows, return_tensors="pt", padding=True)
        device = next(self.model.parameters()).device
        input_ids = enc["input_ids"].to(device)  # [B, P]
        attention_mask = enc["attention_mask"].to(device)  # [B, P]
        s = self.sampling
        kwargs = dict(do_sample=False) if greedy else dict(do_sample=True, temperature=s.temperature, top_p=s.top_p, top_k=s.top_k)
        was_training = self.model.training
        self.model.eval()
        out = self.model.generate(
            input_ids=input_ids,
            attention_mask=attention_mask,
            max_new_tokens=s.max_new_tokens,
            eos_token_id=self.eos_ids,
            pad_token_id=self.tokenizer.pad_token_id,
            **kwargs,
        )  # [B, P + T]
        self.model.train(was_training)
        comp = out[:, input_ids.shape[1] :].cpu()  # [B, T]
        mask, truncated = completion_mask(comp, self.eos_ids)  # [B, T], [B]
        comp = comp.masked_fill(~mask, self.tokenizer.pad_token_id)  # [B, T]
        return Generation(
            prompt_ids=[ids[m.bool()].tolist() for ids, m in zip(enc["input_ids"], enc["attention_mask"])],
            completion_ids=comp,
            completion_mask=mask,
            texts=self.tokenizer.batch_decode(comp, skip_special_tokens=True),
            truncated=truncated,
        )
