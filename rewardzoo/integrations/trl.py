"""Any rewardzoo reward as a reward function for TRL's ``GRPOTrainer`` (``reward_funcs=[...]``).

TRL calls each reward function as ``fn(prompts=…, completions=…, completion_ids=…, **columns)``
where ``columns`` are the dataset's other columns (one entry per row) plus ``trainer_state``,
``log_extra`` and ``log_metric``, and it reads back one float per row, using the function's
``__name__`` in its log.  :func:`as_reward_func` builds a :class:`~rewardzoo.core.types.Rollouts`
from that call, runs ``reward.score`` and then ``reward.update``, and returns the rewards:

    prompt_i      the text of the prompt; a conversational prompt (a list of messages) gives the
                  content of its last ``user`` message (a system prompt is not part of the reward's prompt)
    completion_i  the text; a conversational completion gives its assistant messages' contents joined by newlines
    answer_i      ``parse(completion_i)`` with the task's format parser when given (``parse=task.parse``),
                  else the stripped completion text (None when empty)
    reference_i   the dataset column ``reference_column`` (default ``reference``); None = no references
    meta_i        every other per-row column, e.g. ``a`` and ``b`` of a multiplication dataset
    group_ids     see below
    step          ``trainer_state.global_step`` (the number of earlier calls when called outside TRL)

Group ids.  TRL's ``RepeatSampler`` yields each prompt ``num_generations`` times in a row, and on
one process the reward function receives whole groups in that order; TRL does not pass the group
structure.  By default a run of consecutive rows with the same prompt is one group (two adjacent
groups with the same prompt text merge into one, which only matters to rewards that compare rows
within a group).  With ``num_generations=G`` every block of G rows is a group, and a batch whose
blocks do not share one prompt is an error: with several processes TRL may split a group across
them (its own advantages gather the rewards first), so group-comparing rewards such as RcRL need
one process.

Learning.  ``reward.update`` runs inside the call, once per TRL scoring call (TRL scores once per
generation batch, i.e. every ``steps_per_generation`` optimiser steps), on this process's rows.
Untested and worth knowing: with several processes each process's copy of a learned reward learns
from different rows and the copies drift apart; TRL also calls reward functions on
``eval_dataset`` batches, and a learned reward would learn from them — build the function with
``learn=False`` to keep the reward frozen, or train without ``eval_dataset``.

Warm-up.  A learned reward with ``warmup_steps`` > 0 (RAL's judge, VARL's discriminator) must not
score TRL's rollouts with an untrained judge: on the first call, before scoring, the function runs
the reward's ``warmup_steps`` update rounds on that batch — TRL's first generation batch, sampled
from the starting policy, as rewardzoo's own warm-up is.  The one departure from the trainer's
warm-up: every round reuses that one batch instead of sampling a fresh one (TRL owns the sampling);
raise ``warmup_steps``' coverage with a larger first batch.  ``warmup=False`` skips it, with a warning
that the reward starts untrained; ``learn=False`` (a frozen reward) never warms up.

``score``'s metrics and ``update``'s statistics are handed to TRL's ``log_metric`` when it is passed
(the warm-up's last round under ``warmup/…``).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import torch

from rewardzoo.core.types import NonFiniteError, Reward, Rollouts, check_reward
from rewardzoo.tasks.checks.formats import extract_answer

TRL_ARGUMENTS = ("completion_ids", "trainer_state", "log_extra", "log_metric", "environments")  # not dataset columns


def message_text(content) -> str:
    """The text of a chat message's ``content``: a string, or a list of parts whose text parts are joined."""
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content if isinstance(part, dict) and part.get("type") == "text")


def prompt_text(prompt) -> str:
    """A TRL prompt as text: the string itself, or the content of the last user message of a conversation."""
    if isinstance(prompt, str):
        return prompt
    users = [m for m in prompt if m.get("role") == "user"]
    if not users:
        raise ValueError(f"conversational prompt has no 'user' message: {prompt!r}")
    return message_text(users[-1]["content"])


def completion_text(completion) -> str:
    """A TRL completion as text: the string itself, or its assistant messages' contents joined by newlines."""
    if isinstance(completion, str):
        return completion
    return "\n".join(message_text(m.get("content") or "") for m in completion if m.get("role") == "assistant")


def group_ids_of(prompts: list[str], num_generations: int | None) -> torch.Tensor:
    """Group id of each row: runs of equal consecutive prompts, or blocks of ``num_generations`` rows (checked)."""
    n = len(prompts)
    if num_generations is None:
        starts = [i == 0 or prompts[i] != prompts[i - 1] for i in range(n)]
        return torch.tensor(starts, dtype=torch.long).cumsum(0) - 1  # [N]
    if n % num_generations:
        raise ValueError(
            f"TRL passed {n} rows, not a multiple of num_generations={num_generations}; this happens "
            f"when a group is split across processes — use one process or num_generations=None"
        )
    for start in range(0, n, num_generations):
        if len(set(prompts[start : start + num_generations])) != 1:
            raise ValueError(
                f"rows {start}..{start + num_generations - 1} do not share one prompt, so they are not a "
                f"TRL group of num_generations={num_generations}; check GRPOConfig.num_generations"
            )
    return torch.arange(n // num_generations).repeat_interleave(num_generations)  # [N]


class TRLRewardFunction:
    """A rewardzoo reward with TRL's reward-function signature (see the module docstring).

    ``__name__`` (what TRL logs under ``rewards/<name>/mean``) is ``name`` or the reward's class name.
    ``calls`` counts the scoring calls so far.
    """

    def __init__(
        self,
        reward: Reward,
        *,
        parse: Callable[[str], str | None] | None = None,
        reference_column: str | None = "reference",
        num_generations: int | None = None,
        learn: bool = True,
        warmup: bool = True,
        name: str | None = None,
    ):
        check_reward(reward)
        if num_generations is not None and num_generations < 1:
            raise ValueError(f"num_generations must be a positive int or None; got {num_generations}")
        self.reward = reward
        self.parse = parse
        self.reference_column = reference_column
        self.num_generations = num_generations
        self.learn = learn
        self.__name__ = name or type(reward).__name__
        self.calls = 0
        self.warmup_rounds = reward.warmup_steps if (learn and warmup) else 0
        """Update rounds run on the first call before it scores (0 once done)."""
        if learn and not warmup and reward.warmup_steps:
            warnings.warn(
                f"as_reward_func({self.__name__}, warmup=False): the reward's {reward.warmup_steps} warm-up "
                f"rounds are skipped, so TRL trains against an untrained judge from its first step",
                stacklevel=3,
            )

    def rollouts(self, prompts: list, completions: list, columns: dict) -> Rollouts:
        """The :class:`Rollouts` of one TRL call."""
        n = len(prompts)
        if len(completions) != n:
            raise ValueError(f"TRL passed {len(completions)} completions for {n} prompts")
        prompt_texts = [prompt_text(p) for p in prompts]
        texts = [completion_text(c) for c in completions]
        if self.reference_column is None:
            references = [None] * n
        elif self.reference_column in columns:
            references = [None if r is None else str(r) for r in columns[self.reference_column]]
        else:
            available = sorted(k for k in columns if k not in TRL_ARGUMENTS)
            raise KeyError(
                f"reward {self.__name__}: the dataset has no column {self.reference_column!r} "
                f"(columns: {available}); set reference_column to the column holding the reference answer, "
                f"or reference_column=None for a reward that needs none"
            )
        meta_keys = [
            k
            for k, v in columns.items()
            if k not in TRL_ARGUMENTS and k != self.reference_column and isinstance(v, list) and len(v) == n
        ]
        state = columns.get("trainer_state")
        return Rollouts(
            prompts=prompt_texts,
            completions=texts,
            answers=[self.parse(t) if self.parse is not None else extract_answer(t, "plain") for t in texts],
            references=references,
            group_ids=group_ids_of(prompt_texts, self.num_generations),
            meta=[{k: columns[k][i] for k in meta_keys} for i in range(n)],
            step=state.global_step if state is not None else self.calls,
        )

    def __call__(self, prompts: list, completions: list, **columns) -> list[float]:
        """Score (then, when ``learn``, update) the reward on TRL's rows; one float per row."""
        batch = self.rollouts(prompts, completions, columns)
        warm = self.warm_up(batch)
        out = self.reward.score(batch)
        if out.rewards.shape != (len(batch),):
            raise ValueError(
                f"reward {self.__name__} returned rewards of shape {tuple(out.rewards.shape)} for {len(batch)} rows"
            )
        bad = (~torch.isfinite(out.rewards)).nonzero().flatten().tolist()
        if bad:
            raise NonFiniteError(
                f"reward {self.__name__} returned non-finite rewards at step {batch.step}, rows {bad[:10]}; "
                f"TRL would read NaN as 'not applicable', so the call is stopped instead"
            )
        learned = self.reward.update(batch, out) if self.learn else {}
        self.calls += 1
        log_metric = columns.get("log_metric")
        if log_metric is not None:
            for key, value in {**warm, **out.metrics, **learned}.items():
                log_metric(key, float(value))
        return out.rewards.float().tolist()

    def warm_up(self, batch: Rollouts) -> dict[str, float]:
        """On the first call: the reward's warm-up rounds (score → update) on ``batch``; the last round's
        statistics under ``warmup/…`` (empty when there is nothing to warm up)."""
        stats: dict[str, float] = {}
        for _ in range(self.warmup_rounds):
            stats = self.reward.update(batch, self.reward.score(batch))
        self.warmup_rounds = 0
        return {f"warmup/{k}": v for k, v in stats.items()}


def as_reward_func(
    reward: Reward,
    *,
    parse: Callable[[str], str | None] | None = None,
    reference_column: str | None = "reference",
    num_generations: int | None = None,
    learn: bool = True,
    warmup: bool = True,
    name: str | None = None,
) -> TRLRewardFunction:
    """``reward`` as a reward function for TRL's ``GRPOTrainer(reward_funcs=...)``.

    ``parse`` is the task's format parser (``task.parse``) that turns a completion into its final
    answer; ``reference_column`` names the dataset column of reference answers (None: none);
    ``num_generations`` checks TRL's group layout (see the module docstring); ``learn=False``
    never calls ``reward.update``; ``warmup=False`` skips a learned reward's warm-up on the first call
    (with a warning); ``name`` is what TRL logs the reward under.
    """
    return TRLRewardFunction(
        reward,
        parse=parse,
        reference_column=reference_column,
        num_generations=num_generations,
        learn=learn,
        warmup=warmup,
        name=name,
    )
