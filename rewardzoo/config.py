"""Structured configuration: dataclasses with a docstring per field, YAML recipes, CLI overrides.

A recipe is a YAML file of values for :class:`TrainConfig`; ``key=value`` arguments on the command
line override it (OmegaConf dot-list syntax: ``grpo.batch_size=64 task.name=countdown``).  Every
error is raised before any work starts, as a :class:`ConfigError` whose message says what to change.
"""

from __future__ import annotations

import ast
import dataclasses
import difflib
import inspect
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf
from omegaconf.errors import ConfigAttributeError, ConfigKeyError, OmegaConfBaseException, ValidationError

from rewardzoo.core.advantages import ADVANTAGE_TYPES
from rewardzoo.core.engines import SamplingConfig
from rewardzoo.core.loss import KL_ESTIMATORS, LOSS_TYPES
from rewardzoo.core.models import ModelConfig
from rewardzoo.rewards.base import CallableRewardConfig
from rewardzoo.rewards.ral import RALConfig
from rewardzoo.rewards.rlvr import RLVRConfig
from rewardzoo.tasks.countdown import CountdownConfig
from rewardzoo.tasks.countdown_code import CountdownCodeConfig
from rewardzoo.tasks.hackable_multiplication import HackableMultiplicationConfig
from rewardzoo.tasks.multiplication import MultiplicationConfig
from rewardzoo.tasks.smiles import SmilesConfig
from rewardzoo.tasks.user import UserTaskConfig


class ConfigError(ValueError):
    """A configuration that cannot run; the message says what to change."""


@dataclass
class RecipeInfo:
    """Where a recipe comes from (kept in the resolved config for provenance)."""

    name: str = "custom"
    """Short name of the recipe (also the default run directory name)."""
    paper: str = ""
    """The paper setting the recipe follows."""
    not_reproduced: list[str] = field(default_factory=list)
    """⚠️ What the recipe does not reproduce of that setting."""


@dataclass
class TaskConfig:
    """Which task to train on; only the section named by ``name`` is used."""

    name: str = "multiplication"
    """Task to run: multiplication, countdown, countdown_code, hackable_multiplication, smiles, user."""
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
    user: UserTaskConfig = field(default_factory=UserTaskConfig)
    """Settings of a task read from your own JSONL file or datasets dataset (docs/tasks.md)."""


@dataclass
class RewardConfig:
    """Which reward to train with; only the section named by ``name`` is used."""

    name: str = "rlvr"
    """Reward to run: rlvr (the task's verifier), ral (a co-trained judge; never sees the verifier), or callable
    (TRL-style reward functions named by import path)."""
    rlvr: RLVRConfig = field(default_factory=RLVRConfig)
    """Settings of the RLVR reward."""
    ral: RALConfig = field(default_factory=RALConfig)
    """Settings of the RAL reward."""
    callable: CallableRewardConfig = field(default_factory=CallableRewardConfig)
    """Settings of the callable reward: TRL-style reward functions named by import path."""


@dataclass
class GRPOConfig:
    """The shared GRPO core: batch, advantage, loss and optimiser settings."""

    batch_size: int = 256
    """Rows (sampled completions) per RL step across all processes: prompts per step × group_size."""
    group_size: int = 8
    """Completions sampled per prompt (G)."""
    micro_batch_size: int = 64
    """Rows per forward/backward; gradients are accumulated to the full batch."""
    num_iterations: int = 1
    """μ: optimiser steps per generated batch (1 = on-policy, no extra forward for old log-probs)."""
    advantage: str = "grpo"
    """Advantage normalisation: grpo, dr_grpo or bnpo."""
    loss_type: str = "grpo"
    """Loss aggregation: grpo (sequence mean), dapo (token mean) or dr_grpo (sum / N·L)."""
    epsilon_low: float = 0.2
    """Lower clip range ε_low of the ratio."""
    epsilon_high: float = 0.2
    """Upper clip range ε_high (clip-higher: set above epsilon_low, DAPO uses 0.28)."""
    beta: float = 0.0
    """KL coefficient; 0 skips the reference forward entirely."""
    kl_estimator: str = "k3"
    """KL estimator: k1, k2 or k3."""
    is_cap: float = 2.0
    """Cap C of truncated importance sampling, used when the engine reports sampling log-probs."""
    lr: float = 1e-4
    """AdamW learning rate."""
    weight_decay: float = 0.0
    """AdamW weight decay."""
    adam_betas: list[float] = field(default_factory=lambda: [0.9, 0.99])
    """AdamW betas."""
    max_grad_norm: float = 1.0
    """Gradient clipping norm (0 = off)."""
    warmup_steps: int = 0
    """Linear learning-rate warm-up, in optimiser steps."""
    sort_by_length: bool = True
    """Sort rows by length before micro-batching (less padding)."""
    logprob_chunk_size: int = 0
    """Positions per chunk of the fused log-prob kernel (0 = automatic, ~128 MiB of logits)."""
    generation_chunk_prompts: int = 0
    """Prompts per seeded generation call (0 = all of a process's prompts).  Set it to a divisor of
    prompts-per-process to make runs on different process counts sample identically."""


@dataclass
class SFTConfig:
    """The supervised warm start a recipe runs (or reuses from the cache) before RL."""

    enabled: bool = True
    """Run (or reuse) the warm start before RL; false starts RL from ``model`` / ``init_from``."""
    steps: int = 600
    """Optimiser steps of SFT."""
    n_examples: int = 0
    """Demonstrations used: the first n of the task's train split (0 = all).  A warm start on a
    subset leaves the rest of the train prompts new to the policy when RL starts."""
    disjoint_rl_prompts: bool = False
    """RL samples only the train prompts the warm start did not see (the split after the first
    n_examples), as when SFT data and RL prompts are separate datasets."""
    batch_size: int = 64
    """Demonstrations per SFT step."""
    lr: float = 3e-3
    """AdamW learning rate of SFT (cosine decay to 10% after warm-up)."""
    warmup_steps: int = 20
    """Linear warm-up steps of SFT."""
    weight_decay: float = 0.0
    """AdamW weight decay of SFT."""
    cache_dir: str = "~/.cache/rewardzoo/sft"
    """Where warm starts are cached, keyed by a hash of every setting that shapes them."""


@dataclass
class EvalConfig:
    """Held-out evaluation (greedy decoding, the task's own ``evaluate``)."""

    every: int = 25
    """Evaluate every this many RL steps (and at step 0 and the last step)."""
    n_examples: int = 0
    """Evaluate on the first n held-out examples (0 = all)."""
    batch_size: int = 256
    """Prompts per greedy generate call."""


@dataclass
class LoggingConfig:
    """Where metrics go besides ``metrics.jsonl`` (always written)."""

    tensorboard: bool = True
    """Write TensorBoard event files under run_dir/tensorboard."""
    wandb: bool = False
    """Log to Weights & Biases (needs the wandb extra)."""
    wandb_project: str = "rewardzoo"
    """W&B project name."""
    progress: bool = True
    """Show a progress bar."""
    every: int = 1
    """Write a metrics row every this many steps (eval rows are always written)."""


@dataclass
class TrainConfig:
    """Everything one run needs.  A recipe is a YAML file of these values."""

    recipe: RecipeInfo = field(default_factory=RecipeInfo)
    """Provenance of the recipe."""
    seed: int = 0
    """Seed of the run: model init, prompt order and sampling are all derived from it."""
    steps: int = 200
    """RL steps."""
    run_dir: str = ""
    """Output directory (default: runs/<recipe.name>-seed<seed>)."""
    resume: bool = False
    """Continue from the latest checkpoint in run_dir."""
    init_from: str = ""
    """Start RL from this saved model directory instead of ``model`` (skips SFT)."""
    checkpoint_every: int = 100
    """Write a checkpoint every this many steps (and at the end; 0 = only at the end)."""
    keep_checkpoints: int = 2
    """How many recent checkpoints to keep."""
    model: ModelConfig = field(default_factory=ModelConfig)
    """The policy."""
    task: TaskConfig = field(default_factory=TaskConfig)
    """The task."""
    reward: RewardConfig = field(default_factory=RewardConfig)
    """The reward."""
    grpo: GRPOConfig = field(default_factory=GRPOConfig)
    """The GRPO core."""
    sampling: SamplingConfig = field(default_factory=SamplingConfig)
    """Rollout sampling."""
    sft: SFTConfig = field(default_factory=SFTConfig)
    """The supervised warm start."""
    eval: EvalConfig = field(default_factory=EvalConfig)
    """Held-out evaluation."""
    logging: LoggingConfig = field(default_factory=LoggingConfig)
    """Logging sinks."""


def field_docs(cls: type) -> dict[str, str]:
    """The attribute docstrings of a config dataclass (the string literal under each field)."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    except (OSError, TypeError):
        return {}
    body = tree.body[0].body
    docs = {}
    for node, nxt in zip(body, body[1:]):
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            if isinstance(nxt, ast.Expr) and isinstance(nxt.value, ast.Constant) and isinstance(nxt.value.value, str):
                docs[node.target.id] = " ".join(nxt.value.value.split())
    return docs


def describe(cls: type = TrainConfig, prefix: str = "") -> list[str]:
    """One line per leaf key: ``dotted.key = default  # doc`` (the CLI's ``--help-config``)."""
    lines = []
    docs = field_docs(cls)
    for f in dataclasses.fields(cls):
        key = f"{prefix}{f.name}"
        if dataclasses.is_dataclass(f.type) or (isinstance(f.type, str) and _nested(cls, f.name)):
            lines += describe(_nested(cls, f.name), key + ".")
        else:
            default = f.default if f.default is not dataclasses.MISSING else f.default_factory()
            lines.append(f"{key} = {default!r}  # {docs.get(f.name, '')}")
    return lines


def _nested(cls: type, name: str) -> type | None:
    value = cls().__dict__.get(name) if dataclasses.is_dataclass(cls) else None
    return type(value) if dataclasses.is_dataclass(value) else None


def _dataclass_at(path: list[str]) -> type:
    cls: type = TrainConfig
    for part in path:
        nested = _nested(cls, part)
        if nested is None:
            break
        cls = nested
    return cls


def _unknown_key_message(err: OmegaConfBaseException, source: str) -> str:
    full_key = getattr(err, "full_key", None) or ""
    parts = full_key.split(".") if full_key else []
    key = getattr(err, "key", None) or (parts[-1] if parts else "?")
    parent = parts[:-1]
    cls = _dataclass_at(parent)
    valid = [f.name for f in dataclasses.fields(cls)]
    close = difflib.get_close_matches(str(key), valid, n=3)
    where = ".".join(parent) or "the top level"
    hint = f" Did you mean {' or '.join(repr('.'.join(parent + [c])) for c in close)}?" if close else ""
    return (f"unknown config key {full_key or key!r} in {source}.{hint} "
            f"Valid keys at {where}: {', '.join(valid)}. Remove or rename it.")


def load_config(recipe: str | Path | None = None, overrides: list[str] | None = None) -> TrainConfig:
    """Merge a YAML recipe and ``key=value`` overrides onto the defaults, then validate."""
    base = OmegaConf.structured(TrainConfig)
    layers = []
    if recipe is not None:
        path = Path(recipe)
        if not path.is_file():
            raise ConfigError(f"recipe file {str(path)!r} does not exist; pass the path of a YAML recipe, "
                              f"e.g. algorithms/rlvr_multiplication.yaml")
        try:
            layers.append((OmegaConf.load(path), f"recipe {path}"))
        except Exception as err:  # a YAML syntax error of any kind
            raise ConfigError(f"recipe {path} is not valid YAML: {err}") from err
    for item in overrides or []:
        if "=" not in item:
            raise ConfigError(f"override {item!r} must look like key=value, e.g. grpo.batch_size=64")
        key, _, value = item.partition("=")
        layer = OmegaConf.from_dotlist([item]) if value else OmegaConf.from_dotlist([f"{key}=''"])  # key= is ''
        layers.append((layer, f"override {item!r}"))
    merged = base
    for layer, source in layers:
        try:
            merged = OmegaConf.merge(merged, layer)
        except (ConfigKeyError, ConfigAttributeError) as err:
            raise ConfigError(_unknown_key_message(err, source)) from err
        except ValidationError as err:
            raise ConfigError(f"bad value in {source}: {err.msg} (key {err.full_key!r}); "
                              f"give a value of the type shown by `rewardzoo train --help-config`") from err
    cfg: TrainConfig = OmegaConf.to_object(merged)
    validate(cfg)
    return cfg


def _choice(value: str, options, key: str) -> None:
    if value not in options:
        raise ConfigError(f"{key} must be one of {', '.join(map(str, options))}; got {value!r}")


def validate(cfg: TrainConfig) -> None:
    """Reject configurations that cannot run, with a message that says what to change."""
    from rewardzoo.build import REWARDS, TASKS

    g = cfg.grpo
    if g.group_size < 2:
        raise ConfigError(f"grpo.group_size must be at least 2 (GRPO compares completions within a group); got {g.group_size}")
    if g.batch_size < 1 or g.batch_size % g.group_size:
        lower = max(g.group_size, g.batch_size // g.group_size * g.group_size)
        raise ConfigError(f"grpo.batch_size ({g.batch_size}) must be a positive multiple of grpo.group_size "
                          f"({g.group_size}); set grpo.batch_size={lower} or {lower + g.group_size}, or change grpo.group_size")
    for key in ("micro_batch_size", "num_iterations"):
        if getattr(g, key) < 1:
            raise ConfigError(f"grpo.{key} must be at least 1; got {getattr(g, key)}")
    if g.generation_chunk_prompts < 0:
        raise ConfigError("grpo.generation_chunk_prompts must be 0 (all) or positive")
    _choice(g.advantage, ADVANTAGE_TYPES, "grpo.advantage")
    _choice(g.loss_type, LOSS_TYPES, "grpo.loss_type")
    _choice(g.kl_estimator, KL_ESTIMATORS, "grpo.kl_estimator")
    if not (0 <= g.epsilon_low < 1) or g.epsilon_high < 0:
        raise ConfigError(f"grpo.epsilon_low must be in [0, 1) and grpo.epsilon_high >= 0; got {g.epsilon_low}, {g.epsilon_high}")
    if g.beta < 0 or g.lr <= 0 or g.is_cap <= 0:
        raise ConfigError("grpo.beta must be >= 0, grpo.lr > 0 and grpo.is_cap > 0")
    if cfg.steps < 0:
        raise ConfigError(f"steps must be >= 0; got {cfg.steps}")
    if cfg.sampling.max_new_tokens < 1 or cfg.sampling.temperature <= 0:
        raise ConfigError("sampling.max_new_tokens must be >= 1 and sampling.temperature > 0")
    if cfg.eval.every < 0 or cfg.checkpoint_every < 0 or cfg.keep_checkpoints < 1:
        raise ConfigError("eval.every and checkpoint_every must be >= 0, keep_checkpoints >= 1")
    _choice(cfg.task.name, sorted(TASKS), "task.name")
    _choice(cfg.reward.name, sorted(REWARDS), "reward.name")
    _choice(cfg.model.dtype, ("float32", "bfloat16", "float16"), "model.dtype")
    if cfg.init_from and not Path(cfg.init_from).expanduser().is_dir():
        raise ConfigError(f"init_from {cfg.init_from!r} is not a directory; give a model saved with save_pretrained "
                          f"(e.g. a run's checkpoints/step_N/policy) or leave it empty")
    if cfg.sft.enabled and (cfg.sft.steps < 1 or cfg.sft.batch_size < 1):
        raise ConfigError("sft.steps and sft.batch_size must be >= 1 (or set sft.enabled=false)")
    if cfg.sft.disjoint_rl_prompts and cfg.sft.n_examples < 1:
        raise ConfigError("sft.disjoint_rl_prompts=true needs sft.n_examples > 0 (the demonstrations kept away from RL)")
    _validate_section(cfg.reward, cfg.reward.name, "reward")
    _validate_section(cfg.task, cfg.task.name, "task")


def _validate_section(parent: Any, name: str, prefix: str) -> None:
    """Run the selected section's own ``validate()`` (when it has one), as a ConfigError naming its key."""
    section = getattr(parent, name, None)
    check = getattr(section, "validate", None)
    if check is None:
        return
    try:
        check()
    except (ValueError, TypeError) as err:
        message = str(err)  # "field must be ..." reads as "reward.ral.field must be ..."
        names_a_field = message.partition(" ")[0].isidentifier() and hasattr(section, message.partition(" ")[0])
        raise ConfigError(f"{prefix}.{name}.{message}" if names_a_field else f"{prefix}.{name}: {message}") from err


def resolved_run_dir(cfg: TrainConfig) -> Path:
    """The run directory: ``run_dir`` or runs/<recipe.name>-seed<seed>."""
    return Path(cfg.run_dir or f"runs/{cfg.recipe.name}-seed{cfg.seed}").expanduser()


def to_yaml(cfg: TrainConfig) -> str:
    """The resolved configuration as YAML (written to run_dir/config.yaml)."""
    return OmegaConf.to_yaml(OmegaConf.structured(cfg))


def as_dict(cfg: Any) -> dict:
    """A plain-dict view of a config dataclass (for hashing and logging)."""
    return OmegaConf.to_container(OmegaConf.structured(cfg))


__all__ = ["TrainConfig", "ConfigError", "load_config", "validate", "describe", "field_docs"]
