"""What every engine shares: the :class:`Engine` protocol, the ids that end a completion, and the
completion mask cut at the first of them."""

from __future__ import annotations

from typing import Protocol

import torch

from rewardzoo.core.types import Generation


class Engine(Protocol):
    """A generation engine."""

    runs_policy: bool
    """Whether ``generate`` calls the policy module itself (under FSDP2 the trainer then gathers its
    full weights around every generation call); False for an engine with its own copy of the weights."""

    def generate(self, prompts: list[str], n: int = 1, greedy: bool = False) -> Generation:
        """``n`` completions of every prompt, rows of one prompt contiguous."""
        ...

    def sync_weights(self, policy: torch.nn.Module) -> None:
        """Make the next ``generate`` sample from ``policy``'s current weights."""
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
