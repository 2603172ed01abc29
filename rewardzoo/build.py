"""Build the task and the reward a configuration names: the one place with name → class lookups.

Rewards that must not see the task's verifier (RAL) are built here *without* the task object, so
they cannot reach it; RLVR is built from the task because the verifier is its reward.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rewardzoo.rewards.base import FunctionReward
from rewardzoo.rewards.ral import RAL
from rewardzoo.rewards.rlvr import RLVR
from rewardzoo.tasks.base import Task
from rewardzoo.tasks.countdown import Countdown
from rewardzoo.tasks.countdown_code import CountdownCode
from rewardzoo.tasks.hackable_multiplication import HackableMultiplication
from rewardzoo.tasks.multiplication import Multiplication
from rewardzoo.tasks.smiles import SmilesFormula
from rewardzoo.tasks.user import UserTask

TASKS = {
    "multiplication": Multiplication,
    "countdown": Countdown,
    "countdown_code": CountdownCode,
    "hackable_multiplication": HackableMultiplication,
    "smiles": SmilesFormula,
    "user": UserTask,
}



@dataclass(frozen=True)
class RewardContext:
    """What a reward may know about the run besides its own config section (never the task)."""

    seed: int = 0
    """The run's seed (learned rewards derive their generators from it)."""
    init_dir: Path | None = None
    """The policy's starting weights (e.g. the SFT warm start), for judges initialised from them."""
    device: str = "cpu"
    """Device learned rewards run on."""


REWARDS = {
    "rlvr": lambda section, task, ctx: RLVR.from_config(section, task),
    "ral": lambda section, task, ctx: RAL.from_config(section, ctx),  # the task is dropped here: RAL never sees it
    "callable": lambda section, task, ctx: FunctionReward.from_config(section),  # TRL-style functions see Rollouts only
}


def build_task(cfg) -> Task:
    """The task named by ``cfg.name`` (a :class:`rewardzoo.config.TaskConfig`), built from its section."""
    return TASKS[cfg.name](getattr(cfg, cfg.name))


def build_reward(cfg, task: Task, ctx: RewardContext | None = None):
    """The reward named by ``cfg.name`` (a :class:`rewardzoo.config.RewardConfig`)."""
    return REWARDS[cfg.name](getattr(cfg, cfg.name), task, ctx or RewardContext())
