"""rewardzoo: reward methods for LLM RL post-training behind one reward interface and one GRPO core.

import rewardzoo
rewardzoo.train("rlvr_multiplication", ["steps=20"])            # what `rewardzoo train` does
rewardzoo.train("my.yaml", task=MyTask(...), reward=MyReward())  # your own task and reward

from rewardzoo import RAL, RLVR, VARL, RcRL, RewardContext     # every reward: X.from_config(cfg, ctx)
"""

from rewardzoo.core.config import ConfigError, CoreConfig
from rewardzoo.core.models import ModelConfig, TinyModelConfig
from rewardzoo.core.trainer import Trainer
from rewardzoo.core.types import (
    Example,
    FixedReward,
    NonFiniteError,
    Reward,
    RewardOutput,
    Rollouts,
    TrainingInterrupted,
)
from rewardzoo.integrations.gym import TaskEnv, register_envs
from rewardzoo.integrations.trl import as_reward_func
from rewardzoo.judges.classifier import JudgeConfig
from rewardzoo.judges.pairwise import LMJudgeConfig, RuleJudgeConfig
from rewardzoo.recipes import evaluate_run, evaluate_start, export, generate, make_trainer, sft, train
from rewardzoo.rewards.bonuses import BonusConfig
from rewardzoo.rewards.context import RewardContext
from rewardzoo.rewards.functions import CallableRewardConfig, FunctionReward
from rewardzoo.rewards.ral import RAL, RALConfig
from rewardzoo.rewards.rcrl import RcRL, RcRLConfig, RcRLJudgeConfig
from rewardzoo.rewards.rlvr import RLVR, RLVRConfig
from rewardzoo.rewards.varl import VARL, VARLConfig
from rewardzoo.tasks.abstracts import Abstracts, AbstractsConfig
from rewardzoo.tasks.base import Task
from rewardzoo.tasks.countdown import Countdown, CountdownConfig
from rewardzoo.tasks.countdown_code import CountdownCode, CountdownCodeConfig
from rewardzoo.tasks.hackable_multiplication import HackableMultiplication, HackableMultiplicationConfig
from rewardzoo.tasks.multiplication import Multiplication, MultiplicationConfig
from rewardzoo.tasks.refdist import RefDist, RefDistConfig
from rewardzoo.tasks.rubric_writing import RubricWriting, RubricWritingConfig
from rewardzoo.tasks.smiles import SmilesConfig, SmilesFormula
from rewardzoo.tasks.user import UserTask, UserTaskConfig
from rewardzoo.zoo import TrainConfig, load_config, shipped_recipes

register_envs()  # gymnasium.make("rewardzoo/<Task>-v0"); lazy entry points, builds nothing

__version__ = "0.1.0"

__all__ = [
    # running
    "train",
    "sft",
    "make_trainer",
    "evaluate_run",
    "evaluate_start",
    "generate",
    "export",
    "load_config",
    "shipped_recipes",
    "Trainer",
    "TrainConfig",
    "CoreConfig",
    "ModelConfig",
    "TinyModelConfig",
    "ConfigError",
    "NonFiniteError",
    "TrainingInterrupted",
    # rewards
    "Reward",
    "FixedReward",
    "RewardOutput",
    "Rollouts",
    "RewardContext",
    "RLVR",
    "RLVRConfig",
    "RAL",
    "RALConfig",
    "VARL",
    "VARLConfig",
    "RcRL",
    "RcRLConfig",
    "RcRLJudgeConfig",
    "JudgeConfig",
    "RuleJudgeConfig",
    "LMJudgeConfig",
    "BonusConfig",
    "FunctionReward",
    "CallableRewardConfig",
    "as_reward_func",
    # tasks
    "Task",
    "Example",
    "TaskEnv",
    "Multiplication",
    "MultiplicationConfig",
    "Countdown",
    "CountdownConfig",
    "CountdownCode",
    "CountdownCodeConfig",
    "HackableMultiplication",
    "HackableMultiplicationConfig",
    "SmilesFormula",
    "SmilesConfig",
    "RefDist",
    "RefDistConfig",
    "UserTask",
    "UserTaskConfig",
    "RubricWriting",
    "RubricWritingConfig",
    "Abstracts",
    "AbstractsConfig",
]
