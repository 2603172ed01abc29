"""rewardzoo: reward methods for LLM RL post-training behind one reward interface and one GRPO core.

    from rewardzoo import RAL, RLVR, VARL, RcRL, Trainer, load_config, train
"""

from rewardzoo.core.config import ConfigError
from rewardzoo.core.trainer import Trainer
from rewardzoo.core.types import Example, FixedReward, NonFiniteError, Reward, RewardOutput, Rollouts
from rewardzoo.integrations.gym import TaskEnv, register_envs
from rewardzoo.integrations.trl import as_reward_func
from rewardzoo.recipes import make_trainer, sft, train
from rewardzoo.rewards.functions import FunctionReward
from rewardzoo.rewards.ral import RAL, RALConfig
from rewardzoo.rewards.rcrl import RcRL, RcRLConfig
from rewardzoo.rewards.rlvr import RLVR, RLVRConfig
from rewardzoo.rewards.varl import VARL, VARLConfig
from rewardzoo.tasks.abstracts import Abstracts
from rewardzoo.tasks.base import Task
from rewardzoo.tasks.countdown import Countdown
from rewardzoo.tasks.countdown_code import CountdownCode
from rewardzoo.tasks.hackable_multiplication import HackableMultiplication
from rewardzoo.tasks.multiplication import Multiplication
from rewardzoo.tasks.refdist import RefDist
from rewardzoo.tasks.rubric_writing import RubricWriting
from rewardzoo.tasks.smiles import SmilesFormula
from rewardzoo.tasks.user import UserTask
from rewardzoo.zoo import TrainConfig, load_config

register_envs()  # gymnasium.make("rewardzoo/<Task>-v0"); lazy entry points, builds nothing

__version__ = "0.1.0"

__all__ = [
    "RLVR", "RLVRConfig", "RAL", "RALConfig", "VARL", "VARLConfig", "RcRL", "RcRLConfig", "Reward", "FixedReward",
    "RewardOutput", "Rollouts", "Trainer", "TrainConfig", "ConfigError", "NonFiniteError", "load_config", "train", "sft",
    "make_trainer", "Task", "Example", "Multiplication", "Countdown", "CountdownCode", "HackableMultiplication",
    "SmilesFormula", "RefDist", "UserTask", "RubricWriting", "Abstracts", "TaskEnv",
    "FunctionReward", "as_reward_func",
]
