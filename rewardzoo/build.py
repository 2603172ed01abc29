"""Build the task and the reward a configuration names: the one place with name → class lookups.

Rewards that must not see the task's verifier (RAL) are built here *without* the task object, so
they cannot reach it; RLVR is built from the task because the verifier is its reward.
"""

from __future__ import annotations

from rewardzoo.rewards.rlvr import RLVR
from rewardzoo.tasks.base import Task
from rewardzoo.tasks.multiplication import Multiplication

TASKS = {
    "multiplication": Multiplication,
}

REWARDS = {
    "rlvr": lambda section, task: RLVR.from_task(task),
}


def build_task(cfg) -> Task:
    """The task named by ``cfg.name`` (a :class:`rewardzoo.config.TaskConfig`), built from its section."""
    return TASKS[cfg.name](getattr(cfg, cfg.name))


def build_reward(cfg, task: Task):
    """The reward named by ``cfg.name`` (a :class:`rewardzoo.config.RewardConfig`)."""
    return REWARDS[cfg.name](getattr(cfg, cfg.name), task)
