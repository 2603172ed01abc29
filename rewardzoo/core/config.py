"""The core's own configuration sections, and the machinery every config of rewardzoo uses.

A config is a tree of dataclasses with a docstring under each field.  :class:`CoreConfig` is
everything the :class:`~rewardzoo.core.trainer.Trainer` and the SFT warm start read — the run
(seed, steps, directory, checkpoints), the model, the GRPO core, sampling, SFT, evaluation,
logging and distribution — and nothing about any task or reward: the face's ``TrainConfig``
(:mod:`rewardzoo.zoo`) extends it with the task and reward sections.

Each section checks its own fields, so every check runs before anything is built:

* **ranges** — a section declares the allowed interval of each numeric field in a class attribute
  ``RANGES: ClassVar[dict[str, str]]``, in interval notation: ``"(0, inf)"`` (positive),
  ``"[0, inf)"`` (non-negative), ``"[1, inf)"`` (at least 1), ``"[0, 1)"``, ``"(0, 1]"``, optionally
  followed by ``": why"`` for the error message.  For a list field the interval applies to every
  element.  Every numeric field must also be finite (NaN and
  ±inf always fail, declared or not), and every numeric field must be declared
  (``tests/test_config.py`` walks every section and fails on an undeclared one);
* **everything else** — choices, lengths, relations between fields — in ``validate()``, raising
  ``ValueError`` whose message starts with the field name.

:func:`check_section` runs both, recursing into nested sections, and turns a failure into a
:class:`ConfigError` naming the full key (``grpo.lr must be > 0; got inf``).

:func:`load_structured` merges YAML recipes and ``key=value`` overrides onto a config class with
OmegaConf and reports unknown keys and wrong types as :class:`ConfigError` with a suggestion.
"""

from __future__ import annotations

import ast
import dataclasses
import difflib
import importlib.util
import inspect
import math
import os
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from omegaconf import OmegaConf
from omegaconf.errors import ConfigAttributeError, ConfigKeyError, OmegaConfBaseException, ValidationError

from rewardzoo.core.advantages import ADVANTAGE_TYPES
from rewardzoo.core.distributed import DistributedConfig, check_combination
from rewardzoo.core.engines.config import SamplingConfig, check_vllm_setup
from rewardzoo.core.loss import IS_LEVELS, KL_ESTIMATORS, LOSS_TYPES, SEQUENCE_LEVEL_LOSSES
from rewardzoo.core.models import ModelConfig

LR_SCHEDULES = ("constant", "cosine")


class ConfigError(ValueError):
    """A configuration that cannot run; the message says what to change."""


def lr_multiplier(step: int, *, warmup_steps: int, total_steps: int, schedule: str, floor: float = 0.0) -> float:
    """The learning-rate factor of optimiser step ``step`` (0-based): a linear warm-up (step + 1) / warmup_steps,
    then 1 (``constant``) or a half cosine from 1 at the end of warm-up towards ``floor`` at step
    ``total_steps`` (``cosine``; the convention of transformers' cosine schedule after its warm-up).

    >>> [round(lr_multiplier(s, warmup_steps=2, total_steps=6, schedule="cosine"), 3) for s in range(6)]
    [0.5, 1.0, 1.0, 0.854, 0.5, 0.146]
    """
    if step < warmup_steps:
        return (step + 1) / warmup_steps
    if schedule == "constant":
        return 1.0
    progress = min((step - warmup_steps) / max(total_steps - warmup_steps, 1), 1.0)
    return floor + (1.0 - floor) * 0.5 * (1.0 + math.cos(math.pi * progress))


EVAL_SPLITS = ("test", "validation")
"""The held-out splits a run can evaluate on (``eval.split``; :func:`rewardzoo.core.types.held_out`)."""


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

    RANGES: ClassVar[dict[str, str]] = {
        "batch_size": "[1, inf)",
        "group_size": "[2, inf): GRPO compares completions within a group",
        "micro_batch_size": "[1, inf)",
        "num_iterations": "[1, inf)",
        "epsilon_low": "[0, 1)",
        "epsilon_high": "[0, inf)",
        "beta": "[0, inf)",
        "is_cap": "(0, inf)",
        "sapo_temperature_pos": "(0, inf)",
        "sapo_temperature_neg": "(0, inf)",
        "lr": "(0, inf)",
        "weight_decay": "[0, inf)",
        "adam_betas": "[0, 1)",
        "max_grad_norm": "[0, inf)",
        "warmup_steps": "[0, inf)",
        "logprob_chunk_size": "[0, inf)",
        "generation_chunk_prompts": "[0, inf)",
    }

    batch_size: int = 256
    """Rows (sampled completions) per RL step across all processes: prompts per step × group_size."""
    group_size: int = 8
    """Completions sampled per prompt (G)."""
    micro_batch_size: int = 64
    """Rows per forward/backward; gradients are accumulated to the full batch."""
    release_heap: bool | None = None
    """On the CPU, give freed memory back to the OS: every allocation of 1 MiB or more gets its own
    mmap, returned when freed (glibc ``mallopt``, process-wide, from the trainer's start), and the heap
    is trimmed after the rollout, each micro-batch's forward, the backward and the policy step
    (``malloc_trim``). A lower peak resident set where one phase's temporaries would stack on the
    last one's freed pages, at the price of faulting those pages in again (docs/performance.md).
    With it, a fully trained policy's lean forward also keeps only its matrix products for the backward
    pass and recomputes the norms, rotations and activations there: the same gradients, bit for bit,
    from a lower peak (S3 of benchmarks/grpo_vs_trl.py; core/lean_layers.py ``recomputed``).
    null (the default) decides by the policy's vocabulary: on from 32,768 entries (where [rows ×
    vocabulary] logits buffers are what the heap would keep; S2 of benchmarks/grpo_vs_trl.py), off
    below (a tiny model's step is 2× slower with it: benchmarks/heap_release.py); true or false
    forces it."""
    lean_forward: bool = True
    """Compute a Llama-family policy's log-probs (llama, mistral, qwen2, qwen3; float32 on the CPU, no
    adapters, hooks or gradient checkpointing) by rewardzoo's lean forward on its own weights: each
    distinct prompt once, no padding position of a row, the attention written out
    (core/lean_layers.py).  The same log-probs and gradients as the transformers modules to float
    rounding (1e-6), in about 60% of the time on the tiny models; false, or any other model, runs the
    transformers modules (docs/performance.md)."""
    num_iterations: int = 1
    """μ: optimiser steps per generated batch (1 = on-policy, no extra forward for old log-probs)."""
    advantage: str = "grpo"
    """Advantage normalisation: grpo, dr_grpo, bnpo or pooled (core/advantages.py)."""
    loss_type: str = "grpo"
    """Policy loss (core/loss.py): grpo (sequence mean), dapo (token mean), dr_grpo (sum / N·L), luspo
    (sequence sum, mean over rows; needs importance_sampling_level=sequence), cispo (clipped IS weight
    on log π, token mean; epsilon_high is the cap) or sapo (soft gate, sequence mean).  GSPO is grpo
    with importance_sampling_level=sequence."""
    importance_sampling_level: str = "token"
    """The ratio of the surrogate: token (ρ_t per token) or sequence (GSPO's length-normalized sequence
    ratio, clipped per row; only with loss_type grpo, sapo or luspo)."""
    sapo_temperature_pos: float = 1.0
    """SAPO's gate temperature τ for rows with a positive advantage (TRL's default)."""
    sapo_temperature_neg: float = 1.05
    """SAPO's gate temperature τ for rows with a non-positive advantage (TRL's default)."""
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
    lr_schedule: str = "constant"
    """Learning rate after warm-up: constant, or cosine (decays to 0 over the run's steps × num_iterations
    optimiser steps, as the RcRL paper, Table 6 and transformers' cosine schedule)."""
    sort_by_length: bool = True
    """Sort rows by length before micro-batching (less padding)."""
    logprob_chunk_size: int = 0
    """Positions per chunk of the fused log-prob kernel (0 = automatic: ~16 MiB of fp32 logits on CPU, ~128 MiB
    on GPU)."""
    generation_chunk_prompts: int = 0
    """Prompts per seeded generation call (0 = all of a process's prompts).  Set it to a divisor of
    prompts-per-process to make runs on different process counts sample identically."""

    def validate(self) -> None:
        """Raise ValueError, saying what to change, on settings that cannot run (ranges: ``RANGES``)."""
        if self.batch_size % self.group_size:
            lower = max(self.group_size, self.batch_size // self.group_size * self.group_size)
            raise ValueError(
                f"batch_size ({self.batch_size}) must be a positive multiple of grpo.group_size "
                f"({self.group_size}); set grpo.batch_size={lower} or {lower + self.group_size}, "
                f"or change grpo.group_size"
            )
        if len(self.adam_betas) != 2:
            raise ValueError(f"adam_betas must be two numbers [beta1, beta2] in [0, 1); got {list(self.adam_betas)}")
        choice(self.advantage, ADVANTAGE_TYPES, "advantage")
        choice(self.loss_type, LOSS_TYPES, "loss_type")
        choice(self.importance_sampling_level, IS_LEVELS, "importance_sampling_level")
        if self.importance_sampling_level == "sequence" and self.loss_type not in SEQUENCE_LEVEL_LOSSES:
            raise ValueError(
                f"grpo.importance_sampling_level=sequence needs a per-sequence loss {SEQUENCE_LEVEL_LOSSES}; "
                f"loss_type={self.loss_type} would sum the sequence ratio once per token: set loss_type=grpo (GSPO)"
            )
        if self.loss_type == "luspo" and self.importance_sampling_level != "sequence":
            raise ValueError(
                "grpo.loss_type=luspo is a sequence-level loss: set grpo.importance_sampling_level=sequence"
            )
        choice(self.kl_estimator, KL_ESTIMATORS, "kl_estimator")
        choice(self.lr_schedule, LR_SCHEDULES, "lr_schedule")


@dataclass
class SFTConfig:
    """The supervised warm start a recipe runs (or reuses from the cache) before RL."""

    RANGES: ClassVar[dict[str, str]] = {
        "steps": "[1, inf)",
        "n_examples": "[0, inf)",
        "batch_size": "[1, inf)",
        "lr": "(0, inf)",
        "warmup_steps": "[0, inf)",
        "weight_decay": "[0, inf)",
        "seed": "[0, inf)",
    }

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
    seed: int | None = None
    """Seed of the warm start (initial weights and demonstration order); ``None`` = the run's
    ``seed``.  Fixing it gives every RL seed one shared warm start, so that seeds vary RL only
    (comparisons then measure RL's spread, not the warm start's)."""

    def validate(self) -> None:
        """Raise ValueError, saying what to change, on settings that cannot run."""
        if self.disjoint_rl_prompts and self.n_examples < 1:
            raise ValueError("disjoint_rl_prompts=true needs sft.n_examples > 0 (the demonstrations kept away from RL)")


@dataclass
class EvalConfig:
    """Held-out evaluation (greedy or sampled decoding, the task's own ``evaluate``)."""

    RANGES: ClassVar[dict[str, str]] = {
        "every": "[0, inf)",
        "n_examples": "[0, inf)",
        "batch_size": "[1, inf)",
        "samples": "[0, 64]",
    }

    every: int = 25
    """Evaluate every this many RL steps (and at step 0 and the last step)."""
    n_examples: int = 0
    """Evaluate on the first n held-out examples (0 = all)."""
    batch_size: int = 256
    """Prompts per generate call."""
    samples: int = 0
    """0 = greedy decoding; k > 0 = k completions per held-out prompt sampled with the rollout settings
    (``sampling.*``), every ``eval/`` metric the mean over all of them: pass@1 at the training
    temperature estimated by avg@k, the measure RL's sharpening of the policy moves."""
    split: str = "test"
    """Which held-out split the ``eval/`` metrics measure: 'test' (the task's ``eval`` examples, what a
    result reports) or 'validation' (the task's ``validation`` examples, disjoint from train and test:
    what a tuning stage chooses settings by, so that no test number influences a choice)."""

    def validate(self) -> None:
        """Raise ValueError, saying what to change, on settings that cannot run."""
        choice(self.split, EVAL_SPLITS, "eval.split")


@dataclass
class LoggingConfig:
    """Where metrics go besides ``metrics.jsonl`` (always written)."""

    RANGES: ClassVar[dict[str, str]] = {"every": "[1, inf)"}

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

    def validate(self) -> None:
        """Raise ValueError, saying what to change, when a sink asked for is not installed (checked here,
        before the warm start, not when the logger opens)."""
        if self.wandb and importlib.util.find_spec("wandb") is None:
            raise ValueError(
                "wandb=true needs Weights & Biases, which is not installed: pip install "
                "'rewardzoo[wandb]', or set logging.wandb=false"
            )


@dataclass
class CoreConfig:
    """Everything the GRPO core reads: the run, the policy, GRPO, sampling, SFT, evaluation, logging, distribution."""

    RANGES: ClassVar[dict[str, str]] = {
        "seed": "[0, inf)",
        "steps": "[0, inf)",
        "checkpoint_every": "[0, inf)",
        "keep_checkpoints": "[1, inf)",
    }
    RESUMABLE: ClassVar[tuple[str, ...]] = (
        "steps",
        "resume",
        "overwrite",
        "run_dir",
        "checkpoint_every",
        "keep_checkpoints",
        "logging.*",
        "eval.every",
        "eval.batch_size",
        "sft.cache_dir",
        "share_dir",
        "recipe.*",
    )
    """Keys (fnmatch patterns) that may differ from the saved ``config.yaml`` when a run resumes: they
    change how long it runs and what it writes, not what it computes.  Any other difference makes
    it a different experiment, and resuming refuses it (:func:`rewardzoo.core.checkpoint.check_run_dir`)."""

    recipe: RecipeInfo = field(default_factory=RecipeInfo)
    """Provenance of the recipe."""
    seed: int = 0
    """Seed of the run: model init, prompt order and sampling are all derived from it."""
    steps: int = 200
    """RL steps."""
    run_dir: str = ""
    """Output directory (default: runs/<recipe.name>-seed<seed>)."""
    resume: bool = False
    """Continue from the latest checkpoint in run_dir (refused when a setting that shapes the run differs from
    run_dir/config.yaml; see docs/reliability.md)."""
    overwrite: bool = False
    """DELETE the run already in run_dir (its checkpoints, metrics, config and TensorBoard files) and start
    afresh.  Without it a fresh run refuses a run_dir that holds a run."""
    checkpoint_every: int = 10
    """Write a checkpoint every this many steps (and at the end, and when the run is interrupted by SIGINT
    or SIGTERM; 0 = only then)."""
    keep_checkpoints: int = 2
    """How many recent checkpoints to keep."""
    share_dir: str = ""
    """A directory where the runs of one sweep share work they would repeat exactly — the step-0 evaluation
    and a learned reward's warm-up (rewardzoo/core/shared_work.py; one process only); '' = off.  The
    leaderboard sets it for its runs."""
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
    distributed: DistributedConfig = field(default_factory=DistributedConfig)
    """How the policy, its reference and the judges are spread over processes: DDP or FSDP2 sharding, bf16
    (docs/distributed.md)."""

    def validate(self) -> None:
        """Check the run's own fields, every core section (as :class:`ConfigError` naming the key), and
        the settings that span sections: the batch over processes (``WORLD_SIZE``, as set by
        ``accelerate launch``/``torchrun``), the prompts per generation call, the distribution
        strategy against the model dtype, and whether the vLLM engine, when asked for, can run
        this policy."""
        check_ranges(self, "")
        for name in ("model", "grpo", "sampling", "sft", "eval", "logging", "distributed"):
            check_section(getattr(self, name), name)
        try:
            check_combination(self.distributed, model_dtype=self.model.dtype)
        except ValueError as err:
            raise ConfigError(str(err)) from err
        if self.resume and self.overwrite:
            raise ConfigError(
                "resume=true and overwrite=true contradict each other: resume continues the run in "
                "run_dir, overwrite deletes it; set one of them"
            )
        world = int(os.environ.get("WORLD_SIZE", "1") or 1)
        prompts_per_process(self.grpo, world)
        if self.sampling.engine == "vllm":
            try:
                check_vllm_setup(self.model)
            except ValueError as err:
                raise ConfigError(str(err)) from err


def prompts_per_process(grpo: GRPOConfig, world: int) -> tuple[int, int]:
    """(prompts per process, prompts per generation call) of a step on ``world`` processes; a
    :class:`ConfigError` when the step's prompts do not split evenly."""
    prompts = grpo.batch_size // grpo.group_size
    if prompts % world:
        raise ConfigError(
            f"grpo.batch_size/group_size = {prompts} prompts per step cannot be split over {world} "
            f"processes; make it a multiple of {world}"
        )
    local = prompts // world
    chunk = grpo.generation_chunk_prompts or local
    if local % chunk:
        divisors = [d for d in range(1, local + 1) if local % d == 0]
        raise ConfigError(
            f"grpo.generation_chunk_prompts ({chunk}) must divide the prompts per process ({local} = "
            f"{prompts} prompts per step over {world} processes); use one of {divisors} or 0 (all)"
        )
    return local, chunk


def _interval(spec: str) -> tuple[float, bool, float, bool]:
    """``"[0, 1)"`` → (0.0, lower closed, 1.0, upper open); a ``": why"`` after it is ignored."""
    end = min(i for i in (spec.find(")"), spec.find("]")) if i > 0)
    lo, hi = spec[1:end].split(",")
    return float(lo), spec[0] == "[", float(hi), spec[end] == "]"


def in_range(value: float, spec: str) -> bool:
    """Whether ``value`` lies in the interval ``spec`` (``RANGES`` notation); NaN never does."""
    lo, lo_closed, hi, hi_closed = _interval(spec)
    return (lo < value or (lo_closed and lo == value)) and (value < hi or (hi_closed and value == hi))


def describe_range(spec: str) -> str:
    """``"(0, inf)"`` → ``"> 0"``, ``"[1, inf)"`` → ``">= 1"``, ``"[0, 1)"`` → ``"in [0, 1)"``."""
    lo, lo_closed, hi, _ = _interval(spec)
    interval, _, why = spec.partition(":")
    why = f" ({why.strip()})" if why else ""
    if math.isinf(lo) and math.isinf(hi):
        return "a finite number" + why
    if math.isinf(hi):
        return f"{'>=' if lo_closed else '>'} {lo:g}{why}"
    return f"in {interval}{why}"


def numeric_fields(section: Any) -> dict[str, list]:
    """The numeric leaves of a section (not of its nested sections): name → its numbers (a list
    field gives all its elements; booleans are not numbers here)."""
    out = {}
    for f in dataclasses.fields(section):
        value = getattr(section, f.name)
        items = list(value) if isinstance(value, (list, tuple)) else [value]
        if any(isinstance(v, (int, float)) and not isinstance(v, bool) for v in items):
            out[f.name] = [v for v in items if isinstance(v, (int, float)) and not isinstance(v, bool)]
    return out


def check_ranges(section: Any, key: str) -> None:
    """Raise :class:`ConfigError` naming ``key.field`` when a numeric field of ``section`` is not finite
    or lies outside its declared ``RANGES`` interval."""
    ranges = getattr(type(section), "RANGES", {})
    for name, numbers in numeric_fields(section).items():
        spec = ranges.get(name)
        for value in numbers:
            if not math.isfinite(value) or (spec is not None and not in_range(value, spec)):
                wanted = describe_range(spec) if spec else "a finite number"
                where = f"{key}.{name}" if key else name
                raise ConfigError(
                    f"{where} must be {wanted}{' (each element)' if len(numbers) > 1 else ''}; "
                    f"got {getattr(section, name)!r}"
                )


def check_section(section: Any, key: str) -> None:
    """Check a section whole: its declared ranges (:func:`check_ranges`), each nested section, then
    ``section.validate()`` (when it has one), whose ValueError/TypeError is re-raised as a
    :class:`ConfigError` whose message names the full key (``grpo.lr must be …``)."""
    check_ranges(section, key)
    for f in dataclasses.fields(section):
        nested = getattr(section, f.name)
        if dataclasses.is_dataclass(nested):
            check_section(nested, f"{key}.{f.name}")
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
                if (
                    isinstance(nxt, ast.Expr)
                    and isinstance(nxt.value, ast.Constant)
                    and isinstance(nxt.value.value, str)
                ):
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
    return (
        f"unknown config key {full_key or key!r} in {source}.{hint} "
        f"Valid keys at {where}: {', '.join(valid)}. Remove or rename it."
    )


def load_structured(cls: type, recipe: str | Path | None = None, overrides: list[str] | None = None):
    """An instance of config class ``cls``: its defaults, then a YAML recipe, then ``key=value``
    overrides (an empty value means the empty string).  Not validated: call ``validate()``."""
    layers = []
    if recipe is not None:
        path = Path(recipe)
        if not path.is_file():
            raise ConfigError(
                f"recipe file {str(path)!r} does not exist; give the path of a YAML recipe or the "
                f"name of a shipped one (rewardzoo train --list shows them)"
            )
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
    try:  # one merge of every layer: ~5x faster than layer by layer, which only a bad layer needs
        merged = OmegaConf.merge(_defaults(cls), *(layer for layer, _ in layers))
    except (ConfigKeyError, ConfigAttributeError, ValidationError):
        merged = _defaults(cls)
        for layer, source in layers:  # again layer by layer, to name the layer that is wrong
            try:
                merged = OmegaConf.merge(merged, layer)
            except (ConfigKeyError, ConfigAttributeError) as err:
                raise ConfigError(_unknown_key_message(cls, err, source)) from err
            except ValidationError as err:
                raise ConfigError(
                    f"bad value in {source}: {err.msg} (key {err.full_key!r}); "
                    f"give a value of the type shown by `rewardzoo train --help-config`"
                ) from err
    return OmegaConf.to_object(merged)


_DEFAULTS: dict[type, Any] = {}


def _defaults(cls: type):
    """``OmegaConf.structured(cls)``, built once per class (``OmegaConf.merge`` copies it, never changes it)."""
    if cls not in _DEFAULTS:
        _DEFAULTS[cls] = OmegaConf.structured(cls)
    return _DEFAULTS[cls]
