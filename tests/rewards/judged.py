"""Rollouts shared by the learned-reward tests (RAL, VARL): a fixed two-prompt batch and a driver."""

import torch

from rewardzoo.core.types import Rollouts


def batch(step: int = 0, answers=None) -> Rollouts:
    """Two prompts × three rows; answers default to right, wrong, malformed / right, malformed, wrong."""
    prompts = ["12*3="] * 3 + ["21*4="] * 3
    answers = answers or ["36", "35", None, "84", None, "48"]
    return Rollouts(
        prompts=prompts,
        completions=[a or "x" for a in answers],
        answers=answers,
        references=["36"] * 3 + ["84"] * 3,
        group_ids=torch.tensor([0, 0, 0, 1, 1, 1]) + 2 * step,
        meta=[{}] * 6,
        step=step,
    )


def drive(reward, steps: range) -> list[dict]:
    """score + update of ``reward`` on one varied batch per step; the update statistics of each."""
    out = []
    for step in steps:
        b = batch(step, answers=[str(step + i) if i % 3 else None for i in range(6)])
        out.append(reward.update(b, reward.score(b)))
    return out
