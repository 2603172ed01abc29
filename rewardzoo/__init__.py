"""rewardzoo: reward methods for LLM RL post-training behind one reward interface and one GRPO core.

    from rewardzoo import RLVR, Trainer, load_config, train
"""

from rewardzoo.config import ConfigError, TrainConfig, load_config
from rewardzoo.core.trainer import NonFiniteError, Trainer
from rewardzoo.core.types import Reward, RewardOutput, Rollouts
from rewardzoo.recipes import make_trainer, sft, train
from rewardzoo.rewards.rlvr import RLVR
from rewardzoo.tasks.base import Example, Task
from rewardzoo.tasks.multiplication import Multiplication

__version__ = "0.1.0"

__all__ = [
    "RLVR", "Reward", "RewardOutput", "Rollouts", "Trainer", "TrainConfig", "ConfigError", "NonFiniteError",
    "load_config", "train", "sft", "make_trainer", "Task", "Example", "Multiplication",
]
