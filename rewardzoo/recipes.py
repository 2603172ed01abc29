"""Run a recipe end to end: build the task, run (or reuse) the SFT warm start, build the reward,
train.  ``rewardzoo train RECIPE.yaml key=value ...`` calls :func:`train`.

A reward that needs the policy model itself (RcRL's self-judge: the frozen starting policy, with
LoRA the policy with adapters disabled; the exploration and usefulness bonuses) has a
``bind_policy(policy, tokenizer)`` method; :func:`make_trainer` calls it once, after the trainer
has built the policy and before any step.  The core never calls it.
"""

from __future__ import annotations

from pathlib import Path

from rewardzoo.core.checkpoint import check_run_dir
from rewardzoo.core.sft import warm_start
from rewardzoo.core.trainer import Trainer, make_accelerator
from rewardzoo.zoo import RewardContext, TrainConfig, build_reward, build_task, check_with_task, load_config

ALGORITHMS = Path(__file__).resolve().parents[1] / "algorithms"
"""The shipped recipes: ``algorithms/`` of the source checkout this package runs from (not package data)."""


def shipped_recipe(name: str) -> Path:
    """The absolute path of the shipped recipe ``algorithms/<name>.yaml``, whatever the working directory
    (e.g. a notebook's kernel in a temporary directory); FileNotFoundError naming the shipped ones otherwise.

    >>> shipped_recipe("rlvr_multiplication").name
    'rlvr_multiplication.yaml'
    """
    path = ALGORITHMS / f"{name}.yaml"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in ALGORITHMS.glob("*.yaml"))) or "none: run from a source checkout"
        raise FileNotFoundError(f"no shipped recipe {name!r} in {ALGORITHMS}; shipped recipes: {known}")
    return path


def make_trainer(cfg: TrainConfig) -> Trainer:
    """A ready :class:`Trainer` for ``cfg``: task (checked against the config), warm start (cached),
    policy and reward."""
    accelerator = make_accelerator()
    task = build_task(cfg.task)
    check_with_task(cfg, task)
    if cfg.init_from:
        init = Path(cfg.init_from).expanduser()
    elif cfg.sft.enabled:
        init = warm_start(cfg, task, accelerator)
    else:
        init = None
    reward = build_reward(cfg.reward, task, RewardContext(seed=cfg.seed, init_dir=init, device=str(accelerator.device)))
    prompts = task.train[cfg.sft.n_examples :] if cfg.sft.disjoint_rl_prompts else task.train
    trainer = Trainer(cfg, task=task, reward=reward, init_dir=init, accelerator=accelerator, prompts=prompts)
    bind_policy = getattr(reward, "bind_policy", None)  # rewards that judge with the policy (RcRL's self-judge)
    if bind_policy is not None:
        bind_policy(trainer.policy, trainer.tokenizer)  # once, before any step: the policy is the starting one
    return trainer


def train(cfg: TrainConfig | str | Path, overrides: list[str] | None = None) -> dict[str, float]:
    """Train a recipe (a :class:`TrainConfig` or a YAML path plus overrides); returns the last metrics.
    The run directory is checked before the warm start (:func:`~rewardzoo.core.checkpoint.check_run_dir`)."""
    if not isinstance(cfg, TrainConfig):
        cfg = load_config(cfg, overrides)
    check_run_dir(cfg)
    return make_trainer(cfg).train()


def sft(cfg: TrainConfig | str | Path, overrides: list[str] | None = None) -> Path:
    """Run (or reuse) only the warm start of a recipe; returns the saved model directory."""
    if not isinstance(cfg, TrainConfig):
        cfg = load_config(cfg, overrides)
    task = build_task(cfg.task)
    check_with_task(cfg, task)
    return warm_start(cfg, task, make_accelerator())
