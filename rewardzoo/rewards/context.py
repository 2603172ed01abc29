"""What a reward is built from besides its config section: one :class:`RewardContext` for every reward.

    RLVR.from_config(RLVRConfig(), RewardContext(task=task))                # the verifier is its reward
    VARL.from_config(VARLConfig(), RewardContext(task=task, init_dir=sft))  # v · g(D): verifier and demonstrations
    RAL.from_config(RALConfig(), RewardContext(init_dir=sft))               # never the task
    RcRL.from_config(RcRLConfig(), RewardContext(seed=1))                   # its judge is not the task's

Every reward's ``from_config(cfg, ctx)`` takes the same two things.  A reward reads ``ctx.task`` only
when its class says ``SEES_TASK = True`` (RLVR and VARL, whose reward is the task's check); the
zoo builds the context of any other reward without the task, so RAL and RcRL cannot reach the
verifier by construction, and their ``from_config`` ignores a task a hand-built context carries.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rewardzoo.core.types import TaskProtocol


@dataclass(frozen=True)
class RewardContext:
    """The run a reward is built for."""

    seed: int = 0
    """The run's seed (learned rewards derive their generators from it)."""
    init_dir: Path | None = None
    """The policy's starting weights (e.g. the SFT warm start), for judges initialised from them."""
    device: str = "cpu"
    """Device learned rewards run on."""
    task: TaskProtocol | None = None
    """The task — read only by rewards with ``SEES_TASK = True`` (RLVR, VARL)."""

    def require_task(self, reward: str) -> TaskProtocol:
        """``task``, or a ValueError saying how to give it to ``reward``."""
        if self.task is None:
            raise ValueError(
                f"{reward} is built from the task (its verifier is the reward): pass "
                f"RewardContext(task=your_task, ...) to {reward}.from_config"
            )
        return self.task
