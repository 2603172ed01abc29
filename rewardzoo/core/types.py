"""The data that flows through one GRPO step, and the shape legend used everywhere in rewardzoo.

Shape legend (every tensor line in the library carries a comment in these letters):

    N  rows in a step: prompts_per_step × group_size (one row = one sampled completion)
    G  group size: completions sampled per prompt
    P  prompts in a step (N = P · G)
    T  completion tokens per row (padded to the longest completion, at most max_new_tokens)
    S  full sequence length of a row: prompt tokens + completion tokens
    H  hidden size of the policy
    V  vocabulary size
    K  tokens selected for a log-prob computation (all unmasked completion tokens of a micro-batch)
    n  rows in one micro-batch

Data flows one way: task → engine → :class:`Rollouts` → reward (``score`` then ``update``) →
advantages → loss → optimizer.  A reward never reaches into the trainer; the trainer never knows
which reward it runs.
"""

from __future__ import annotations

import dataclasses
import hashlib
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import torch


@dataclass(frozen=True)
class Example:
    """One prompt with its reference final answer and a full demonstration completion."""

    prompt: str
    reference: str  # the reference final answer (what a judge sees as "real")
    demonstration: str  # a complete target completion for SFT (reasoning if any + formatted answer)
    meta: dict = field(default_factory=dict)  # task extras, e.g. {"a": 12, "b": 7}


@dataclass
class Rollouts:
    """One GRPO batch as every reward sees it: text only, no tokens, no verifier.

    Rows of one prompt are contiguous and share a ``group_ids`` value.  ``answers`` holds what the
    task's *format parser* extracted from each completion (``None`` = malformed); it is the only
    task knowledge a reward receives besides the references and the prompt's meta data, so a
    reward constructed without a verifier cannot reach one.
    """

    prompts: list[str]  # [N]
    completions: list[str]  # [N] full generated text (reasoning + answer)
    answers: list[str | None]  # [N] final answer parsed by the task; None = malformed
    references: list[str | None]  # [N] reference answer / demonstration of the row's prompt
    group_ids: torch.Tensor  # [N] int64; rows of one prompt share an id
    meta: list[dict]  # [N] task extras (numbers, target, required words, ...)
    step: int

    def __post_init__(self) -> None:
        n = len(self.prompts)
        for name in ("completions", "answers", "references", "meta"):
            if len(getattr(self, name)) != n:
                raise ValueError(f"Rollouts.{name} has {len(getattr(self, name))} rows, prompts has {n}")
        if self.group_ids.shape != (n,):
            raise ValueError(f"Rollouts.group_ids must have shape [{n}], got {tuple(self.group_ids.shape)}")

    def __len__(self) -> int:
        return len(self.prompts)

    def select(self, rows: list[int] | torch.Tensor) -> Rollouts:
        """The sub-batch of the given row indices (group ids are kept as they are)."""
        idx = [int(i) for i in rows]
        return Rollouts(
            prompts=[self.prompts[i] for i in idx],
            completions=[self.completions[i] for i in idx],
            answers=[self.answers[i] for i in idx],
            references=[self.references[i] for i in idx],
            group_ids=self.group_ids[torch.tensor(idx, dtype=torch.long)],
            meta=[self.meta[i] for i in idx],
            step=self.step,
        )


@dataclass
class RewardOutput:
    """What a reward returns for one :class:`Rollouts` batch."""

    rewards: torch.Tensor  # [N] float32 training reward, finite
    components: dict[str, torch.Tensor] = field(default_factory=dict)  # [N] each: named parts
    metrics: dict[str, float] = field(default_factory=dict)  # scalars for the log, "reward/..."


@runtime_checkable
class Reward(Protocol):
    """The one contract every reward implements, learned or not (docs/architecture.md).

    ``update`` is called by the trainer every step, right after ``score``, visibly in the loop;
    learned parts (judges, discriminators, curricula) learn there and nowhere else.  Static rewards
    return ``{}``.  ``state_dict``/``load_state_dict`` carry everything needed to resume exactly
    (judge weights, optimizer, buffers, random generators, counters).  ``warmup_steps`` is how many
    rollout → score → update rounds the trainer runs with the starting policy before RL (RAL's
    judge warm-up); 0 for rewards that learn nothing.  Subclass :class:`FixedReward` to get the
    learn-nothing defaults and write ``score`` only.

    A reward may also implement optional hooks, each a protocol of its own that the trainer checks with
    ``isinstance``: :class:`PolicyReadingReward` (``bind_policy``), :class:`ShardedReward` (``distribute``),
    :class:`ConfiguredReward` (``cfg``) and :class:`WarmupFreeSettings` (``WARMUP_FREE``).
    :func:`check_reward` refuses a reward that implements one wrongly when the trainer is built.
    """

    warmup_steps: int

    def score(self, batch: Rollouts) -> RewardOutput:
        """Training rewards for every row of ``batch``."""
        ...

    def update(self, batch: Rollouts, out: RewardOutput) -> dict[str, float]:
        """Let the learned parts of the reward learn from this step; returns log scalars."""
        ...

    def state_dict(self) -> dict:
        """Everything needed to resume the reward exactly."""
        ...

    def load_state_dict(self, state: dict) -> None:
        """Restore what :meth:`state_dict` returned."""
        ...


@runtime_checkable
class PolicyReadingReward(Protocol):
    """Optional hook: a reward that reads the policy being trained (RcRL's self-judge, the bonuses).

    Rewards are built before the trainer builds the policy; the :class:`~rewardzoo.core.trainer.Trainer`
    calls ``bind_policy`` once, right after building the policy and before any step, and gathers the
    policy's full weights around ``score`` under FSDP2.  A ``Trainer`` built by hand binds such a reward
    itself.
    """

    def bind_policy(self, policy: torch.nn.Module, tokenizer) -> None:
        """Keep ``policy`` (the live policy module) and its ``tokenizer`` for scoring."""
        ...


@runtime_checkable
class ShardedReward(Protocol):
    """Optional hook: a reward with models of its own (judges, discriminators) that shards them the way
    the policy is sharded.  Called once under FSDP2 (``distributed.sharding``), before the optimiser is
    built; never under DDP or on one process."""

    def distribute(self, sharding) -> None:
        """Shard the reward's own models with ``sharding`` (a :class:`~rewardzoo.core.distributed.Sharding`)."""
        ...


@runtime_checkable
class ConfiguredReward(Protocol):
    """Optional hook: a reward whose every setting is in one config dataclass, ``cfg``.

    Only such a reward's warm-up may be shared between the runs of a sweep (``share_dir``): the warm-up is
    keyed by ``cfg``, and a reward built by hand without it may hold parts no config describes.  ``cfg`` is a
    dataclass instance; ``None`` means the same as having no ``cfg``.
    """

    cfg: object


@runtime_checkable
class WarmupFreeSettings(Protocol):
    """Optional hook of a :class:`ConfiguredReward`: ``WARMUP_FREE`` names the fields of ``cfg`` the warm-up
    never reads (e.g. RAL's ``g``: the judge learns from D, not from g(D)), so runs that differ only there
    share one warm-up.  A tuple of field names of ``cfg``."""

    WARMUP_FREE: tuple[str, ...]


REWARD_MEMBERS = ("warmup_steps", "score", "update", "state_dict", "load_state_dict")
REWARD_METHODS = {"score": ("batch",), "update": ("batch", "out"), "state_dict": (), "load_state_dict": ("state",)}
"""The :class:`Reward` methods and the positional arguments the trainer passes them."""
REWARD_HOOKS = {
    "bind_policy": (PolicyReadingReward, ("policy", "tokenizer")),
    "distribute": (ShardedReward, ("sharding",)),
}
"""The optional hook methods: the protocol that declares each and the positional arguments the trainer passes."""


def _takes(fn, args: tuple[str, ...]) -> bool:
    """Whether callable ``fn`` accepts ``len(args)`` positional arguments (True when its signature is unknown)."""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return True
    try:
        signature.bind(*args)
    except TypeError:
        return False
    return True


def _shape_errors(reward: object) -> list[str]:
    """What is wrongly shaped in ``reward``'s :class:`Reward` members and optional hooks, one phrase each."""
    errors = []
    steps = reward.warmup_steps
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 0:
        errors.append(f"warmup_steps must be an int >= 0 (got {steps!r})")
    for name, args in {**REWARD_METHODS, **{k: v[1] for k, v in REWARD_HOOKS.items()}}.items():
        if not hasattr(reward, name):
            continue
        fn = getattr(reward, name)
        hook = f" (the optional {REWARD_HOOKS[name][0].__name__} hook)" if name in REWARD_HOOKS else ""
        if not callable(fn):
            errors.append(f"{name}{hook} must be a method taking ({', '.join(args)}); it is a {type(fn).__name__}")
        elif not _takes(fn, args):
            errors.append(f"{name}{hook} must take ({', '.join(args)}); its signature is {inspect.signature(fn)}")
    if isinstance(reward, ConfiguredReward) and reward.cfg is not None and not dataclasses.is_dataclass(reward.cfg):
        errors.append(
            f"cfg (the optional ConfiguredReward hook) must be a config dataclass instance or None; it is a "
            f"{type(reward.cfg).__name__}"
        )
    if isinstance(reward, WarmupFreeSettings):
        free = reward.WARMUP_FREE
        if not isinstance(free, (tuple, list, frozenset)) or not all(isinstance(k, str) for k in free):
            errors.append(
                f"WARMUP_FREE (the optional WarmupFreeSettings hook) must be a tuple of field names; got {free!r}"
            )
        elif not isinstance(reward, ConfiguredReward) or not dataclasses.is_dataclass(reward.cfg):
            errors.append(
                "WARMUP_FREE (the optional WarmupFreeSettings hook) names fields of cfg, but the reward "
                "has no config dataclass cfg"
            )
        else:
            unknown = sorted(set(free) - {f.name for f in dataclasses.fields(reward.cfg)})
            if unknown:
                errors.append(f"WARMUP_FREE names {unknown}, which are not fields of {type(reward.cfg).__name__}")
    return errors


def check_reward(reward: object) -> None:
    """Raise TypeError, before any work, naming what ``reward`` lacks of the :class:`Reward` protocol or what
    it implements wrongly of it and of the optional hooks (:class:`PolicyReadingReward`, :class:`ShardedReward`,
    :class:`ConfiguredReward`, :class:`WarmupFreeSettings`): a member that is not callable, a method that cannot
    take the arguments the trainer passes, a ``cfg`` that is no dataclass, a ``WARMUP_FREE`` naming no field."""
    name = type(reward).__name__
    missing = [member for member in REWARD_MEMBERS if not hasattr(reward, member)]
    if missing:
        raise TypeError(
            f"{name} is not a rewardzoo Reward: it lacks {', '.join(missing)}; "
            f"implement them (a reward that learns nothing can subclass rewardzoo.FixedReward and "
            f"write score() only)"
        )
    errors = _shape_errors(reward)
    if errors:
        raise TypeError(
            f"{name} implements the rewardzoo Reward contract wrongly: {'; '.join(errors)} (the contract "
            f"and its optional hooks: rewardzoo.core.types, docs/getting_started.md 'Your own reward')"
        )


@runtime_checkable
class TaskProtocol(Protocol):
    """What the core needs of a task (:class:`rewardzoo.tasks.base.Task` implements it).

    ``train`` and ``eval`` are the example splits (``eval`` is the test split; a task may also hold
    ``validation`` examples, disjoint from both, for tuning: :func:`held_out`); ``parse`` is the *format* parser
    (completion → final answer or None, never raises, says nothing about correctness); ``row_metrics`` and
    ``evaluate`` use the task's exact checker and are called by the trainer for analysis and
    held-out evaluation only, never by a reward.  A task may also implement
    :class:`PolicyEvaluatingTask` (metrics from the policy's log-probabilities).
    """

    name: str
    train: list[Example]
    eval: list[Example]

    def parse(self, completion: str) -> str | None:
        """Final answer of a completion, or None if malformed."""
        ...

    def row_metrics(
        self, answers: list[str | None], references: list[str], metas: list[dict]
    ) -> dict[str, list[float]]:
        """Per-row diagnostics from the exact checker (``correct`` plus task extras)."""
        ...

    def evaluate(self, completions: list[str], examples: list[Example]) -> dict[str, float]:
        """Held-out metrics for one completion per example."""
        ...


def held_out(task: TaskProtocol, split: str) -> list[Example]:
    """The held-out examples a run evaluates on (``eval.split``): 'test' = ``task.eval``, 'validation' =
    ``task.validation`` (a ValueError, saying what to change, when the task has none)."""
    if split == "test":
        return task.eval
    if split != "validation":
        raise ValueError(f"eval.split must be 'test' or 'validation'; got {split!r}")
    examples = getattr(task, "validation", None)
    if not examples:
        raise ValueError(
            f"task {task.name!r} has no validation examples (its pool of distinct prompts went to train "
            f"and test, or the task defines none); set eval.split=test, or make room for them (e.g. "
            f"a smaller n_train)"
        )
    return examples


SequenceScorer = Callable[[list[str], list[str]], torch.Tensor]
"""``score(prompts [n], completions [n]) -> [n]``: log π(completion, EOS | prompt) of the policy, summed over the
completion's tokens and the EOS that ends it, at the sampling temperature (the trainer's
:meth:`~rewardzoo.core.trainer.Trainer.score_completions`)."""


@runtime_checkable
class PolicyEvaluatingTask(Protocol):
    """A task whose held-out metrics need the policy's exact log-probabilities, not only greedy
    completions (e.g. the reference-distribution task scores every answer of a small set).

    Optional: after :meth:`TaskProtocol.evaluate`, the trainer calls ``evaluate_policy`` on the same
    held-out examples when the task has it, and logs the returned scalars as ``eval/<key>``.
    """

    def evaluate_policy(self, score: SequenceScorer, examples: list[Example]) -> dict[str, float]:
        """Held-out metrics computed from ``score`` (a :data:`SequenceScorer` of the current policy)."""
        ...


class FixedReward:
    """Base for rewards that learn nothing: no warm-up, ``update`` returns ``{}`` and there is no
    state to save.  Subclasses write ``score`` only."""

    warmup_steps = 0

    def update(self, batch: Rollouts, out: RewardOutput) -> dict[str, float]:
        """Nothing to learn."""
        return {}

    def state_dict(self) -> dict:
        """No state."""
        return {}

    def load_state_dict(self, state: dict) -> None:
        """No state to restore."""


@dataclass
class Generation:
    """What a generation engine returns for a list of prompts (one row per sampled completion).

    Token layout: ``prompt_ids`` holds each row's prompt tokens without padding, ``completion_ids``
    is right-padded with ``completion_mask`` marking real tokens (the EOS that ended a row is a real
    token, so the policy learns to stop).  ``truncated`` marks rows that reached the token limit
    without an EOS; the engine that stopped them decides it.  ``sampling_logprobs`` is filled by
    engines that report the log-probabilities they sampled with (vLLM); the trainer then applies
    truncated importance sampling.
    """

    prompt_ids: list[list[int]]  # [N][prompt length]
    completion_ids: torch.Tensor  # [N, T] int64, right-padded
    completion_mask: torch.Tensor  # [N, T] bool
    texts: list[str]  # [N] decoded completions (special tokens removed)
    truncated: torch.Tensor  # [N] bool: hit max_new_tokens without EOS
    sampling_logprobs: torch.Tensor | None = None  # [N, T] float32 or None

    @classmethod
    def concat(cls, parts: list[Generation], pad_id: int) -> Generation:
        """The rows of several generations, in order, right-padded to the longest completion."""
        T = max(p.completion_ids.shape[1] for p in parts)

        def pad(t: torch.Tensor, value=0) -> torch.Tensor:  # [n, t] -> [n, T]
            return torch.nn.functional.pad(t, (0, T - t.shape[1]), value=value)

        has_lp = all(p.sampling_logprobs is not None for p in parts)
        return cls(
            prompt_ids=[ids for p in parts for ids in p.prompt_ids],
            completion_ids=torch.cat([pad(p.completion_ids, pad_id) for p in parts]),  # [N, T]
            completion_mask=torch.cat([pad(p.completion_mask) for p in parts]),  # [N, T]
            texts=[t for p in parts for t in p.texts],
            truncated=torch.cat([p.truncated for p in parts]),  # [N]
            sampling_logprobs=torch.cat([pad(p.sampling_logprobs) for p in parts]) if has_lp else None,  # [N, T]
        )


class NonFiniteError(FloatingPointError):
    """A reward, loss, gradient or judge value was NaN or infinite; the step was stopped before any
    update (the one error type for non-finite values, in the core and in learned rewards alike)."""


class TrainingInterrupted(Exception):
    """A run stopped by SIGINT or SIGTERM at the end of a step, after writing a checkpoint of that step:
    ``resume=true`` continues it exactly.  ``step`` is the last step done, ``checkpoint`` its directory
    (None when it stopped before the first RL step, with nothing saved), ``signal_name`` the signal."""

    def __init__(self, step: int, checkpoint, signal_name: str):
        self.step, self.checkpoint, self.signal_name = step, checkpoint, signal_name
        if checkpoint is None:
            super().__init__(
                f"stopped by {signal_name} before the first RL step: nothing was saved; run the same "
                f"command again to start afresh"
            )
        else:
            super().__init__(
                f"stopped by {signal_name} after step {step}; checkpoint {checkpoint}; run the same "
                f"command with resume=true to continue exactly"
            )


def derive_seed(*parts) -> int:
    """A stable 63-bit seed from any printable parts (same on every machine and process)."""
    digest = hashlib.sha256(":".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "little") >> 1
