"""The core's own configuration sections, and the machinery every config of rewardzoo uses.

A config is a tree of dataclasses with a docstring under each field.  :class:`CoreConfig` is
everything the :class:`~rewardzoo.core.trainer.Trainer` and the SFT warm start read — the run
(seed, steps, directory, checkpoints), the model, the GRPO core, sampling, SFT, evaluation and
logging — and nothing about any task or reward: the face's ``TrainConfig``
(:mod:`rewardzoo.zoo`) extends it with the task and reward sections.

Each section checks its own fields in ``validate()`` (raising ``ValueError`` whose message starts
with the field name); :func:`check_section` turns that into a :class:`ConfigError` naming the full
key, so every check runs before anything is built.  :func:`load_structured` merges YAML recipes
and ``key=value`` overrides onto a config class with OmegaConf and reports unknown keys and wrong
types as :class:`ConfigError` with a suggestion.
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


class ConfigError(ValueError):
    """A configuration that cannot run; the message says what to change."""


def choice(value: str, options, key: str) -> None:
    """Raise ValueError unless ``value`` is one of ``options`` (the message names ``key``)."""
    if value not in options:
        raise ValueError(f"{key} must be one of {', '.join(map(str, options))}; got {value!r}")


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
    kl_estimator: str = "k3_ratio"
    """KL loss term, named by its gradient (core/loss.py): k3_ratio and k2 descend KL(π‖π_ref); k3 alone
    descends the forward KL(π_ref‖π) (TRL's default); k1 has zero expected gradient."""
    mask_truncated_completions: bool = False
    """Exclude completions that hit sampling.max_new_tokens without an EOS from the loss (TRL's switch)."""
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
    """Positions per chunk of the fused log-prob kernel (0 = automatic: ~32 MiB of fp32 logits on CPU, ~128 MiB
    on GPU)."""
    generation_chunk_prompts: int = 0
    """Prompts per seeded generation call (0 = all of a process's prompts).  Set it to a divisor of
    prompts-per-process to make runs on different process counts sample identically."""

    def validate(self) -> None:
        """Raise ValueError, saying what to change, on settings that cannot run."""
        if self.group_size < 2:
            raise ValueError(f"group_size must be at least 2 (GRPO compares completions within a group); "
                             f"got {self.group_size}")
        if self.batch_size < 1 or self.batch_size % self.group_size:
            lower = max(self.group_size, self.batch_size // self.group_size * self.group_size)
            raise ValueError(f"batch_size ({self.batch_size}) must be a positive multiple of grpo.group_size "
                             f"({self.group_size}); set grpo.batch_size={lower} or {lower + self.group_size}, "
                             f"or change grpo.group_size")
        for key in ("micro_batch_size", "num_iterations"):
            if getattr(self, key) < 1:
                raise ValueError(f"{key} must be at least 1; got {getattr(self, key)}")
        if self.generation_chunk_prompts < 0:
            raise ValueError("generation_chunk_prompts must be 0 (all) or positive")
        choice(self.advantage, ADVANTAGE_TYPES, "advantage")
        choice(self.loss_type, LOSS_TYPES, "loss_type")
        choice(self.kl_estimator, KL_ESTIMATORS, "kl_estimator")
        if not (0 <= self.epsilon_low < 1) or self.epsilon_high < 0:
            raise ValueError(f"epsilon_low must be in [0, 1) and grpo.epsilon_high >= 0; "
                             f"got {self.epsilon_low}, {self.epsilon_high}")
        if self.beta < 0 or self.lr <= 0 or self.is_cap <= 0:
            raise ValueError("beta must be >= 0, grpo.lr > 0 and grpo.is_cap > 0")


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

    def validate(self) -> None:
        """Raise ValueError, saying what to change, on settings that cannot run."""
        if self.enabled and (self.steps < 1 or self.batch_size < 1):
            raise ValueError("steps and sft.batch_size must be >= 1 (or set sft.enabled=false)")
        if self.disjoint_rl_prompts and self.n_examples < 1:
            raise ValueError("disjoint_rl_prompts=true needs sft.n_examples > 0 (the demonstrations kept away from RL)")


@dataclass
class EvalConfig:
    """Held-out evaluation (greedy decoding, the task's own ``evaluate``)."""

    every: int = 25
    """Evaluate every this many RL steps (and at step 0 and the last step)."""
    n_examples: int = 0
    """Evaluate on the first n held-out examples (0 = all)."""
    batch_size: int = 256
    """Prompts per greedy generate call."""

    def validate(self) -> None:
        """Raise ValueError, saying what to change, on settings that cannot run."""
        if self.every < 0:
            raise ValueError(f"every must be >= 0 (0 = only at the start and the end); got {self.every}")


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
class CoreConfig:
    """Everything the GRPO core reads: the run, the policy, GRPO, sampling, SFT, evaluation, logging."""

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
    checkpoint_every: int = 100
    """Write a checkpoint every this many steps (and at the end; 0 = only at the end)."""
    keep_checkpoints: int = 2
    """How many recent checkpoints to keep."""
    model: ModelConfig = field(default_factory=ModelConfig)
    """The policy."""
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

    def validate(self) -> None:
        """Check every core section (as :class:`ConfigError` naming the key) and the run's own fields."""
        for name in ("model", "grpo", "sampling", "sft", "eval", "logging"):
            check_section(getattr(self, name), name)
        if self.steps < 0:
            raise ConfigError(f"steps must be >= 0; got {self.steps}")
        if self.checkpoint_every < 0 or self.keep_checkpoints < 1:
            raise ConfigError("checkpoint_every must be >= 0 and keep_checkpoints >= 1")


def check_section(section: Any, key: str) -> None:
    """Run ``section.validate()`` (when it has one) and re-raise its ValueError/TypeError as a
    :class:`ConfigError` whose message names the full key (``grpo.lr must be …``)."""
    check = getattr(section, "validate", None)
    if check is None:
        return
    try:
        check()
    except ConfigError:
        raise
    except (ValueError, TypeError) as err:
        message = str(err)
        first = message.partition(" ")[0]
        names_a_field = first.isidentifier() and hasattr(section, first)
        raise ConfigError(f"{key}.{message}" if names_a_field else f"{key}: {message}") from err


def resolved_run_dir(cfg: CoreConfig) -> Path:
    """The run directory: ``run_dir`` or runs/<recipe.name>-seed<seed>."""
    return Path(cfg.run_dir or f"runs/{cfg.recipe.name}-seed{cfg.seed}").expanduser()


def to_yaml(cfg: Any) -> str:
    """A config dataclass as YAML (the trainer writes it to run_dir/config.yaml)."""
    return OmegaConf.to_yaml(OmegaConf.structured(cfg))


def as_dict(cfg: Any) -> dict:
    """A plain-dict view of a config dataclass (for hashing and logging)."""
    return OmegaConf.to_container(OmegaConf.structured(cfg))


# ---------------------------------------------------------------------------------------- loading
def field_docs(cls: type) -> dict[str, str]:
    """The attribute docstrings of a config dataclass (the string literal under each field),
    including those of its dataclass bases."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if not dataclasses.is_dataclass(klass):
            continue
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(klass)))
        except (OSError, TypeError):
            continue
        body = tree.body[0].body
        for node, nxt in zip(body, body[1:]):
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                if isinstance(nxt, ast.Expr) and isinstance(nxt.value, ast.Constant) and isinstance(nxt.value.value, str):
                    docs[node.target.id] = " ".join(nxt.value.value.split())
    return docs


def _nested(cls: type, name: str) -> type | None:
    value = cls().__dict__.get(name) if dataclasses.is_dataclass(cls) else None
    return type(value) if dataclasses.is_dataclass(value) else None


def describe(cls: type, prefix: str = "") -> list[str]:
    """One line per leaf key of a config class: ``dotted.key = default  # doc`` (``--help-config``)."""
    lines = []
    docs = field_docs(cls)
    for f in dataclasses.fields(cls):
        key = f"{prefix}{f.name}"
        nested = _nested(cls, f.name)
        if nested is not None:
            lines += describe(nested, key + ".")
        else:
            default = f.default if f.default is not dataclasses.MISSING else f.default_factory()
            lines.append(f"{key} = {default!r}  # {docs.get(f.name, '')}")
    return lines


def _dataclass_at(root: type, path: list[str]) -> type:
    cls = root
    for part in path:
        nested = _nested(cls, part)
        if nested is None:
            break
        cls = nested
    return cls


def _unknown_key_message(root: type, err: OmegaConfBaseException, source: str) -> str:
    full_key = getattr(err, "full_key", None) or ""
    parts = full_key.split(".") if full_key else []
    key = getattr(err, "key", None) or (parts[-1] if parts else "?")
    parent = parts[:-1]
    valid = [f.name for f in dataclasses.fields(_dataclass_at(root, parent))]
    close = difflib.get_close_matches(str(key), valid, n=3)
    where = ".".join(parent) or "the top level"
    hint = f" Did you mean {' or '.join(repr('.'.join(parent + [c])) for c in close)}?" if close else ""
    return (f"unknown config key {full_key or key!r} in {source}.{hint} "
            f"Valid keys at {where}: {', '.join(valid)}. Remove or rename it.")


def load_structured(cls: type, recipe: str | Path | None = None, overrides: list[str] | None = None):
    """An instance of config class ``cls``: its defaults, then a YAML recipe, then ``key=value``
    overrides (an empty value means the empty string).  Not validated: call ``validate()``."""
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
        layer = OmegaConf.from_dotlist([item]) if value else OmegaConf.from_dotlist([f"{key}=''"])
        layers.append((layer, f"override {item!r}"))
    merged = OmegaConf.structured(cls)
    for layer, source in layers:
        try:
            merged = OmegaConf.merge(merged, layer)
        except (ConfigKeyError, ConfigAttributeError) as err:
            raise ConfigError(_unknown_key_message(cls, err, source)) from err
        except ValidationError as err:
            raise ConfigError(f"bad value in {source}: {err.msg} (key {err.full_key!r}); "
                              f"give a value of the type shown by `rewardzoo train --help-config`") from err
    return OmegaConf.to_object(merged)
