"""Run a recipe end to end — the Python API behind every ``rewardzoo`` command.

    import rewardzoo
    rewardzoo.train("rlvr_multiplication", ["steps=20"])                 # a shipped recipe, by name
    rewardzoo.train("my.yaml", task=MyTask(...), reward=MyReward())       # your own task and reward
    rewardzoo.evaluate_run("runs/rlvr_multiplication-seed0")             # a run's latest checkpoint
    rewardzoo.generate("runs/rlvr_multiplication-seed0", ["12*3="], n=4)  # sample from it
    rewardzoo.export("runs/rlvr_multiplication-seed0", "out/model")      # a plain save_pretrained directory

:func:`train` does what ``rewardzoo train`` does: check the run directory, build the task (or take
yours), run (or reuse) the SFT warm start, build the reward (or take yours), train, evaluate.
:func:`make_trainer` stops before training and returns the ready :class:`Trainer`.  A reward that
reads the policy itself (RcRL's self-judge, the bonuses: ``bind_policy``) is bound by the Trainer.
"""

from __future__ import annotations

from pathlib import Path

from rewardzoo.core.checkpoint import check_run_dir, checkpoint_state, checkpoints
from rewardzoo.core.config import ConfigError, resolved_run_dir
from rewardzoo.core.engines import make_engine
from rewardzoo.core.logger import MetricLogger, read_metrics, silence_library_progress_bars
from rewardzoo.core.models import load_policy
from rewardzoo.core.sft import warm_start
from rewardzoo.core.sharded_checkpoint import export_pretrained, load_any_policy_weights
from rewardzoo.core.trainer import Trainer, make_accelerator
from rewardzoo.core.types import Reward, TaskProtocol
from rewardzoo.zoo import (
    RewardContext,
    TrainConfig,
    as_chat_task,
    build_reward,
    build_task,
    check_with_task,
    load_config,
)

Recipe = TrainConfig | str | Path
"""A :class:`TrainConfig`, a YAML path or a shipped recipe's name."""


def resolve(recipe: Recipe, overrides: list[str] | None = None) -> TrainConfig:
    """``recipe`` as a validated :class:`TrainConfig` (overrides apply to a path or name only)."""
    if isinstance(recipe, TrainConfig):
        if overrides:
            raise ConfigError("overrides go with a recipe path or name; change the TrainConfig's fields instead")
        return recipe
    return load_config(recipe, overrides)


def task_for(cfg: TrainConfig, task: TaskProtocol | None = None) -> TaskProtocol:
    """``task`` (yours: ``cfg.task`` is then not read, but for ``task.chat``) or the one ``cfg.task`` names, in chat
    form when ``task.chat``, checked against the config's SFT and evaluation sizes (before any work)."""
    task = as_chat_task(cfg, build_task(cfg.task) if task is None else task)
    check_with_task(cfg, task)
    return task


def starting_weights(cfg: TrainConfig, task: TaskProtocol, accelerator=None) -> Path | None:
    """The policy's starting weights: ``init_from``, else the SFT warm start (trained or reused from the
    cache), else None (the model ``cfg.model`` names, as it is)."""
    if cfg.init_from:
        return Path(cfg.init_from).expanduser()
    if cfg.sft.enabled:
        return warm_start(cfg, task, accelerator or make_accelerator())
    return None


def make_trainer(
    cfg: Recipe, overrides: list[str] | None = None, *, task: TaskProtocol | None = None, reward: Reward | None = None
) -> Trainer:
    """A ready :class:`Trainer`: the task (``task``, or the one the config names), the warm start, the
    policy and the reward (``reward``, or the one the config names, built with the run's seed, starting
    weights and device)."""
    cfg = resolve(cfg, overrides)
    if not cfg.logging.progress:
        silence_library_progress_bars()
    accelerator = make_accelerator()
    task = task_for(cfg, task)
    init = starting_weights(cfg, task, accelerator)
    if reward is None:
        reward = build_reward(
            cfg.reward, task, RewardContext(seed=cfg.seed, init_dir=init, device=str(accelerator.device))
        )
    prompts = task.train[cfg.sft.n_examples :] if cfg.sft.disjoint_rl_prompts else task.train
    return Trainer(cfg, task=task, reward=reward, init_dir=init, accelerator=accelerator, prompts=prompts)


def train(
    cfg: Recipe, overrides: list[str] | None = None, *, task: TaskProtocol | None = None, reward: Reward | None = None
) -> dict[str, float]:
    """Warm start → RL → held-out evaluation, exactly as ``rewardzoo train`` runs it; returns the last
    metrics row.  The run directory is checked before the warm start
    (:func:`~rewardzoo.core.checkpoint.check_run_dir`)."""
    cfg = resolve(cfg, overrides)
    check_run_dir(cfg)
    return make_trainer(cfg, task=task, reward=reward).train()


def sft(cfg: Recipe, overrides: list[str] | None = None, *, task: TaskProtocol | None = None) -> Path:
    """Run (or reuse) only the warm start of a recipe; returns the saved model directory (for
    ``Trainer(..., init_dir=...)``)."""
    cfg = resolve(cfg, overrides)
    if not cfg.logging.progress:
        silence_library_progress_bars()
    return warm_start(cfg, task_for(cfg, task), make_accelerator())


# ------------------------------------------------------------------ a finished (or stopped) run
def run_config(run_dir: str | Path, overrides: list[str] | None = None) -> TrainConfig:
    """The configuration a run wrote (``run_dir/config.yaml``), with ``overrides``."""
    path = Path(run_dir).expanduser() / "config.yaml"
    if not path.is_file():
        raise ConfigError(
            f"{run_dir} is not a run directory (no config.yaml); give the run_dir of a "
            f"`rewardzoo train` run, or a recipe"
        )
    return load_config(path, overrides)


def trained_policy(run_dir: str | Path) -> tuple[Path, int]:
    """Where a run's newest trained policy is: ``(a directory holding it as policy/, its step)`` — the newest
    complete checkpoint, or for a finished run whose checkpoints a sweep dropped (``rewardzoo leaderboard``:
    :func:`~rewardzoo.core.checkpoint.keep_only_policy`) the run directory itself, at the run's last logged
    step.  A ConfigError when the run has neither."""
    run_dir = Path(run_dir).expanduser()
    found = checkpoints(run_dir)
    if found:
        return found[-1], checkpoint_state(found[-1])["step"]
    if (run_dir / "policy").is_dir() and (run_dir / "metrics.jsonl").is_file():
        return run_dir, read_metrics(run_dir / "metrics.jsonl")[-1]["step"]
    raise ConfigError(f"{run_dir} holds no complete checkpoint yet (checkpoint_every sets how often a run writes one)")


def evaluate_start(cfg: Recipe, overrides: list[str] | None = None) -> tuple[dict[str, float], Path]:
    """Evaluate a recipe's starting policy (its warm start, or ``init_from``) on the held-out split, as
    step 0 of a run would.  Writes ``<run_dir>/eval/start/`` (which does not make run_dir hold a run);
    returns the metrics and that directory."""
    cfg = resolve(cfg, overrides)
    trainer = make_trainer(cfg)
    return _evaluate_into(trainer, resolved_run_dir(cfg) / "eval" / "start")


def _evaluate_into(trainer: Trainer, out: Path) -> tuple[dict[str, float], Path]:
    """``trainer.evaluate()`` with its metrics, row metrics and completions written under ``out``."""
    trainer.logger = MetricLogger(out, tensorboard=False)
    metrics = trainer.evaluate()
    trainer.logger.log(trainer.step, metrics)
    trainer.logger.close()
    trainer.logger = None
    return metrics, out


def evaluate_run(run_dir: str | Path, overrides: list[str] | None = None) -> tuple[dict[str, float], Path]:
    """Evaluate a run's newest checkpoint (or the trained policy a board kept: :func:`trained_policy`) on the
    held-out split with the run's own configuration — the same examples and the same sampling seeds, so the
    run's held-out metrics at that step come out again.  Writes ``run_dir/eval/step_N/`` (``metrics.jsonl``,
    ``eval_rows.jsonl``, ``samples.jsonl``); returns the metrics and that directory."""
    cfg = run_config(run_dir, overrides)
    holder, step = trained_policy(run_dir)
    trainer = make_trainer(cfg)
    load_any_policy_weights(trainer.policy, holder / "policy")
    trainer.engine.sync_weights(trainer.policy)
    trainer.step = step
    return _evaluate_into(trainer, Path(run_dir).expanduser() / "eval" / f"step_{step:06d}")


def generate(
    source: str | Path, prompts: list[str], n: int = 1, greedy: bool = False, overrides: list[str] | None = None
) -> list[list[str]]:
    """``n`` completions of every prompt from a trained policy: ``source`` is a run directory (its newest
    checkpoint or the policy a board kept, sampled with the run's ``sampling`` settings plus ``overrides``, e.g.
    ``sampling.temperature=1.0``) or a model directory written by ``save_pretrained``."""
    source = Path(source).expanduser()
    if (source / "config.yaml").is_file():
        cfg = run_config(source, overrides)
        if not cfg.logging.progress:
            silence_library_progress_bars()
        policy, tokenizer = load_policy(cfg.model, starting_weights(cfg, task_for(cfg)), seed=cfg.seed)
        load_any_policy_weights(policy, trained_policy(source)[0] / "policy")
        sampling = cfg.sampling
    elif (source / "config.json").is_file():
        cfg = load_config(None, [f"model.name={source}", *(overrides or [])])
        policy, tokenizer = load_policy(cfg.model)
        sampling = cfg.sampling
    else:
        raise ConfigError(f"{source} is neither a run directory (config.yaml) nor a saved model (config.json)")
    texts = make_engine(policy.eval(), tokenizer, sampling).generate(list(prompts), n=n, greedy=greedy).texts
    return [texts[i * n : (i + 1) * n] for i in range(len(prompts))]


def export(source: str | Path, out: str | Path) -> Path:
    """Write a trained policy as a plain transformers directory that ``AutoModelForCausalLM.from_pretrained``
    loads (LoRA adapters merged): ``source`` is a run directory (its newest checkpoint, or the policy a board
    kept) or one checkpoint
    (``run_dir/checkpoints/step_N``), sharded (FSDP2) or not; returns ``out``."""
    source = Path(source).expanduser()
    checkpoint = source if (source / "trainer_state.json").is_file() else trained_policy(source)[0]
    return export_pretrained(checkpoint, out)
