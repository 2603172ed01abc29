"""RLVR: a verifiable reward, r(x, y) = v(x, y) (seed 003; DeepSeek-R1's rule-based accuracy reward).

The verifier is a program: the task's own exact checker on the parsed answer (the default), or any
``(pred, gold) -> float`` verifier from :mod:`rewardzoo.rewards.verifiers` applied to the parsed
answer or to the full completion.  Malformed answers score the verifier's 0.  Nothing is learned,
so ``update`` returns ``{}``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch

from rewardzoo.core.types import RewardOutput, Rollouts

RowVerifier = Callable[[str | None, str | None, dict, str], float]  # (answer, reference, meta, completion) -> score


@dataclass
class RLVRConfig:
    """Settings of the RLVR reward."""

    verifier: str = "task"
    """'task' = the task's exact verifier on the parsed answer."""


class RLVR:
    """r_i = v(answer_i, reference_i): the verifier's score is the training reward."""

    def __init__(self, verifier: RowVerifier, name: str = "verifier"):
        self.verifier = verifier
        self.name = name

    @classmethod
    def from_task(cls, task) -> "RLVR":
        """RLVR with the task's own verifier on the task-parsed answer."""
        return cls(lambda answer, reference, meta, completion: task.verify(answer, reference, meta), name=task.name)

    def score(self, batch: Rollouts) -> RewardOutput:
        """Verifier score of every row."""
        scores = torch.tensor(
            [float(self.verifier(a, r, m, c)) for a, r, m, c in zip(batch.answers, batch.references, batch.meta, batch.completions)],
            dtype=torch.float32,
        )  # [N]
        return RewardOutput(rewards=scores, components={"verifier": scores}, metrics={"reward/verifier_mean": scores.mean().item()})

    def update(self, batch: Rollouts, out: RewardOutput) -> dict[str, float]:
        """Nothing to learn."""
        return {}

    def state_dict(self) -> dict:
        """No state."""
        return {}

    def load_state_dict(self, state: dict) -> None:
        """No state."""
