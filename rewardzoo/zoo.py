"""The zoo: the literal name → class tables of tasks and rewards, and the config that composes them.

This is the one place that knows every task and every reward.  Adding a reward is one file in
``rewards/``, one entry in :data:`REWARDS` (and its config section in :class:`RewardConfig`), a
recipe in ``algorithms/`` (``rewardzoo/algorithms/``) and a docs page.

Rewards that must not see the task's verifier (RAL, RcRL) are built here from a context *without*
the task object, so they cannot reach it; RLVR and VARL get the task because the verifier is (part
of) their reward (``SEES_TASK``, :mod:`rewardzoo.rewards.context`).
"""

from __future__ import annotations

import dataclasses
import difflib
from dataclasses import dataclass, field
from pathlib import Path

from rewardzoo.core.config import ConfigError, CoreConfig, check_section, describe, load_structured
from rewardzoo.core.models import load_tokenizer
from rewardzoo.core.types import held_out
from rewardzoo.rewards.bonuses import BonusConfig, WithBonuses
from rewardzoo.rewards.context import RewardContext
from rewardzoo.rewards.functions import CallableRewardConfig, FunctionReward
from rewardzoo.rewards.ral import RAL, RALConfig
from rewardzoo.rewards.rcrl import RcRL, RcRLConfig
from rewardzoo.rewards.rlvr import RLVR, RLVRConfig, check_verifier_fits
from rewardzoo.rewards.varl import VARL, VARLConfig
from rewardzoo.tasks.abstracts import Abstracts, AbstractsConfig
from rewardzoo.tasks.base import Task
from rewardzoo.tasks.chat import ChatTask
from rewardzoo.tasks.countdown import Countdown, CountdownConfig
from rewardzoo.tasks.countdown_code import CountdownCode, CountdownCodeConfig
from rewardzoo.tasks.hackable_multiplication import HackableMultiplication, HackableMultiplicationConfig
from rewardzoo.tasks.multiplication import Multiplication, MultiplicationConfig
from rewardzoo.tasks.refdist import RefDist, RefDistConfig
from rewardzoo.tasks.rubric_writing import RubricWriting, RubricWritingConfig
from rewardzoo.tasks.smiles import SmilesConfig, SmilesFormula
from rewardzoo.tasks.user import UserTask, UserTaskConfig

TASKS: dict[str, type[Task]] = {
    "multiplication": Multiplication,
    "countdown": Countdown,
    "countdown_code": CountdownCode,
    "hackable_multiplication": HackableMultiplication,
    "smiles": SmilesFormula,
    "refdist": RefDist,
    "user": UserTask,
    "rubric_writing": RubricWriting,
    "abstracts": Abstracts,
}


REWARDS = {"rlvr": RLVR, "ral": RAL, "varl": VARL, "rcrl": RcRL, "callable": FunctionReward}
"""Reward name → class; each is built by ``cls.from_config(section, RewardContext(...))``, with the task in
the context only when ``cls.SEES_TASK`` (RLVR: the verifier is the reward; VARL: v is the verifier)."""


@dataclass
class TaskConfig:
    """Which task to train on; only the section named by ``name`` is used."""

    name: str = "multiplication"
    """Task to run: multiplication, countdown, countdown_code, hackable_multiplication, smiles, refdist, user,
    rubric_writing, abstracts."""
    multiplication: MultiplicationConfig = field(default_factory=MultiplicationConfig)
    """Settings of the multiplication task."""
    countdown: CountdownConfig = field(default_factory=CountdownConfig)
    """Settings of the Countdown task."""
    countdown_code: CountdownCodeConfig = field(default_factory=CountdownCodeConfig)
    """Settings of the Countdown-Code task (hackable: the submission carries its own test)."""
    hackable_multiplication: HackableMultiplicationConfig = field(default_factory=HackableMultiplicationConfig)
    """Settings of the hackable multiplication task (the lazy 'contains' proxy verifier)."""
    smiles: SmilesConfig = field(default_factory=SmilesConfig)
    """Settings of the SMILES → formula task (needs RDKit: pip install 'rewardzoo[chem]')."""
    refdist: RefDistConfig = field(default_factory=RefDistConfig)
    """Settings of the reference-distribution task (answers drawn from a known p_ref; exact divergences logged)."""
    user: UserTaskConfig = field(default_factory=UserTaskConfig)
    """Settings of a task read from your own JSONL file or datasets dataset (docs/tasks.md)."""
    rubric_writing: RubricWritingConfig = field(default_factory=RubricWritingConfig)
    """Settings of the rubric-writing toy task (RcRL on CPU: 13 programmatic criteria, a held-out oracle)."""
    abstracts: AbstractsConfig = field(default_factory=AbstractsConfig)
    """Settings of the abstracts / free-writing task from your JSONL corpus (docs/tasks.md)."""
    chat: bool = False
    """Present every prompt as chat messages rendered with the policy tokenizer's chat template (an instruct
    model; the original prompt stays in the example's meta for judges): docs/your_own_model.md."""
    system_prompt: str = ""
    """With chat: a system turn before each prompt ('' = none: the template's default, if it has one)."""


@dataclass
class RewardConfig:
    """Which reward to train with; only the section named by ``name`` is used."""

    name: str = "rlvr"
    """Reward to run: rlvr (the task's verifier), ral (a co-trained judge; never sees the verifier), varl (the
    verifier gating a co-trained discriminator), rcrl (pairwise judge win rates over a rubric curriculum), or
    callable (TRL-style reward functions named by import path)."""
    rlvr: RLVRConfig = field(default_factory=RLVRConfig)
    """Settings of the RLVR reward."""
    ral: RALConfig = field(default_factory=RALConfig)
    """Settings of the RAL reward."""
    varl: VARLConfig = field(default_factory=VARLConfig)
    """Settings of the VARL reward."""
    rcrl: RcRLConfig = field(default_factory=RcRLConfig)
    """Settings of the RcRL reward (and its baselines RaR, Pairwise RaR, Absolute RcRL, Dropout Absolute RaR)."""
    callable: CallableRewardConfig = field(default_factory=CallableRewardConfig)
    """Settings of the callable reward: TRL-style reward functions named by import path."""
    bonuses: BonusConfig = field(default_factory=BonusConfig)
    """Exploration / usefulness bonuses (the RcRL paper, App. B) added to whichever reward is named; off by default."""


@dataclass
class TrainConfig(CoreConfig):
    """Everything one run needs: the core's sections plus the task and the reward.  A recipe is a YAML
    file of these values."""

    init_from: str = ""
    """Start RL from this saved model directory instead of ``model`` (skips SFT)."""
    task: TaskConfig = field(default_factory=TaskConfig)
    """The task."""
    reward: RewardConfig = field(default_factory=RewardConfig)
    """The reward."""

    def validate(self) -> None:
        """Reject configurations that cannot run, with a message that says what to change."""
        super().validate()
        for key, value, table in (("task.name", self.task.name, TASKS), ("reward.name", self.reward.name, REWARDS)):
            if value not in table:
                raise ConfigError(f"{key} must be one of {', '.join(sorted(table))}; got {value!r}")
        if self.init_from and not Path(self.init_from).expanduser().is_dir():
            raise ConfigError(
                f"init_from {self.init_from!r} is not a directory; give a model saved with save_pretrained "
                f"(e.g. a run's checkpoints/step_N/policy) or leave it empty"
            )
        if self.init_from and not (Path(self.init_from).expanduser() / "config.json").exists():
            raise ConfigError(
                f"init_from {self.init_from!r} holds no model (no config.json; LoRA adapters alone are not "
                f"one): give a directory written by save_pretrained with the full weights"
            )
        check_section(getattr(self.reward, self.reward.name), f"reward.{self.reward.name}")
        check_section(self.reward.bonuses, "reward.bonuses")
        check_section(getattr(self.task, self.task.name), f"task.{self.task.name}")


RECIPES_DIR = Path(__file__).resolve().parent / "algorithms"
"""The shipped recipes (package data: ``rewardzoo/algorithms/``; ``algorithms/`` in the source checkout
links to it)."""


def shipped_recipes() -> list[str]:
    """The names of the shipped recipes, sorted."""
    return sorted(p.stem for p in RECIPES_DIR.glob("*.yaml"))


def shipped_recipe(name: str) -> Path:
    """The absolute path of the shipped recipe ``name`` (``rewardzoo/algorithms/<name>.yaml``), whatever
    the working directory; a ConfigError naming the shipped ones otherwise.

    >>> shipped_recipe("rlvr_multiplication").name
    'rlvr_multiplication.yaml'
    """
    path = RECIPES_DIR / f"{name}.yaml"
    if not path.is_file():
        close = difflib.get_close_matches(name, shipped_recipes(), n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise ConfigError(
            f"no shipped recipe {name!r}.{hint} Give a shipped recipe's name ({', '.join(shipped_recipes())}) "
            f"or the path of a YAML file"
        )
    return path


def resolve_recipe(recipe: str | Path) -> Path:
    """A recipe given by path (an existing file, or anything with a ``/`` or a ``.yaml`` suffix) or by the
    name of a shipped recipe (``rlvr_multiplication``)."""
    path = Path(recipe).expanduser()
    if path.is_file() or "/" in str(recipe) or path.suffix in (".yaml", ".yml"):
        return path
    return shipped_recipe(str(recipe))


def load_config(recipe: str | Path | None = None, overrides: list[str] | None = None) -> TrainConfig:
    """Merge a recipe — a YAML path or a shipped recipe's name — and ``key=value`` overrides onto the
    defaults, then validate."""
    cfg: TrainConfig = load_structured(TrainConfig, None if recipe is None else resolve_recipe(recipe), overrides)
    cfg.validate()
    return cfg


def help_config() -> list[str]:
    """Every key of :class:`TrainConfig` with its default and meaning (``rewardzoo train --help-config``)."""
    return describe(TrainConfig)


def build_task(cfg: TaskConfig) -> Task:
    """The task named by ``cfg.name``, built from its section; a setting its data cannot satisfy (too
    few distinct problems, a missing file, a missing optional package, ...) is a :class:`ConfigError`
    naming the section."""
    try:
        return TASKS[cfg.name](getattr(cfg, cfg.name))
    except ConfigError:
        raise
    except (ValueError, FileNotFoundError, ImportError) as err:  # ImportError: an optional package it needs (RDKit)
        raise ConfigError(f"task.{cfg.name}: {err}") from err


def as_chat_task(cfg: TrainConfig, task: Task) -> Task:
    """``task`` as conversations when ``cfg.task.chat`` (rendered with the starting policy's tokenizer: ``init_from``
    or ``model.name``), else unchanged; a task already in chat form is kept."""
    if not cfg.task.chat or isinstance(task, ChatTask):
        return task
    if (cfg.init_from or cfg.model.name) == "tiny":
        raise ConfigError(
            "task.chat=true needs a model with a chat template; the tiny model's character tokenizer "
            "has none: set model.name (e.g. smollm2-135m-instruct) or task.chat=false"
        )
    try:
        return ChatTask(task, load_tokenizer(cfg.init_from or cfg.model.name), cfg.task.system_prompt)
    except ValueError as err:
        raise ConfigError(str(err)) from err


def check_with_task(cfg: TrainConfig, task: Task) -> None:
    """The checks that need the built task (cheap to build; run before the SFT warm start): the
    SFT and eval subsets against the task's splits, and a named RLVR verifier against the task's
    answer format (:func:`~rewardzoo.rewards.rlvr.check_verifier_fits`)."""
    try:
        n_eval = len(held_out(task, cfg.eval.split))
    except ValueError as err:
        raise ConfigError(f"eval.split={cfg.eval.split}: {err}") from err
    n_train, sft = len(task.train), cfg.sft
    if sft.disjoint_rl_prompts and sft.n_examples >= n_train:
        raise ConfigError(
            f"sft.n_examples ({sft.n_examples}) with sft.disjoint_rl_prompts=true leaves no train "
            f"prompt of task.{task.name} ({n_train} in its train split) for RL; lower sft.n_examples "
            f"below {n_train} or set sft.disjoint_rl_prompts=false"
        )
    if sft.enabled and not cfg.init_from and sft.n_examples > n_train:
        raise ConfigError(
            f"sft.n_examples ({sft.n_examples}) exceeds the train split of task.{task.name} "
            f"({n_train} examples); lower it (0 = all)"
        )
    if cfg.eval.n_examples > n_eval:
        raise ConfigError(
            f"eval.n_examples ({cfg.eval.n_examples}) exceeds the {cfg.eval.split} split of task.{task.name} "
            f"({n_eval} examples); lower it (0 = all)"
        )
    if cfg.reward.name == "rlvr":
        try:
            check_verifier_fits(cfg.reward.rlvr, task)
        except ValueError as err:
            raise ConfigError(f"reward.rlvr.{err}") from err


def build_reward(cfg: RewardConfig, task: Task, ctx: RewardContext | None = None):
    """The reward named by ``cfg.name``, wrapped with the bonuses when ``cfg.bonuses`` switches any on.
    ``ctx`` (seed, starting weights, device) gets the task only for a reward class with ``SEES_TASK``."""
    cls = REWARDS[cfg.name]
    ctx = dataclasses.replace(ctx or RewardContext(), task=task if cls.SEES_TASK else None)
    reward = cls.from_config(getattr(cfg, cfg.name), ctx)
    return WithBonuses(reward, cfg.bonuses, seed=ctx.seed) if cfg.bonuses.enabled else reward
