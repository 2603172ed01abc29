"""What every task supplies: examples, a format parser, a verifier, demonstrations and ``evaluate``.

A task's *verifier* is the exact checker used by RLVR and by held-out evaluation.  Rewards that
must not see it (RAL) are built without the task object: they receive only :class:`Rollouts`,
whose ``answers`` come from :meth:`Task.parse` — the format parser, which says whether an answer is
well formed, never whether it is right.
"""

from __future__ import annotations

from rewardzoo.core.types import Example
from rewardzoo.tasks.checks.formats import extract_answer


class Task:
    """Base class of all tasks (it satisfies the core's :class:`~rewardzoo.core.types.TaskProtocol`).

    Subclasses set ``name``, ``train``, ``eval`` and implement :meth:`parse` and :meth:`verify`; :meth:`evaluate`
    reports ``accuracy`` and ``format_rate``, and subclasses add per-row metrics through :meth:`row_metrics`.

    ``eval`` is the test split (what results report); ``validation`` (optional, empty by default) holds
    held-out examples disjoint from ``train`` and ``eval``, which a tuning stage chooses settings by
    (``eval.split=validation``; :func:`rewardzoo.core.types.held_out`).

    ``verify(answer, reference, meta)`` returns a score in [0, 1]: the reward RLVR trains on (for
    a hackable task, the gameable proxy; then :meth:`row_metrics` reports the strict ``correct``).
    It is never handed to a reward that must not see it.

    ``demonstrations_verify`` says whether every demonstration earns the verifier's full score (the
    usual case: they are reference completions); a task whose demonstrations are deliberately
    imperfect (rubric writing: a mediocre base model to improve on) sets it False.
    """

    name: str = "task"
    answer_format: str = "plain"
    demonstrations_verify: bool = True

    def __init__(self, train: list[Example], eval: list[Example], validation: list[Example] | None = None):
        if not train or not eval:
            raise ValueError(
                f"task {self.name!r} needs non-empty train and eval splits "
                f"(got {len(train)} train, {len(eval)} eval examples)"
            )
        self.train = train
        self.eval = eval
        self.validation = validation or []

    def parse(self, completion: str) -> str | None:
        """Final answer of a completion, or None if malformed.  Never raises."""
        return extract_answer(completion, self.answer_format)

    def verify(self, answer: str | None, reference: str, meta: dict) -> float:
        """Exact score of a parsed answer against the reference, in [0, 1].  Never raises."""
        return float(answer is not None and answer == reference)

    def score_completion(self, completion: str, example: Example) -> float:
        """Parse then verify one completion (the Gymnasium reward and RLVR's default)."""
        return self.verify(self.parse(completion), example.reference, example.meta)

    def row_metrics(
        self, answers: list[str | None], references: list[str], metas: list[dict]
    ) -> dict[str, list[float]]:
        """Per-row diagnostics from the exact checker: ``correct`` (1/0) plus task extras.

        Used by :meth:`evaluate` (held-out means) and by the trainer for analysis of training
        batches (``train/…`` and ``analysis/corr/…`` metrics), always outside the reward.
        """
        return {"correct": [float(self.verify(a, r, m) >= 1.0) for a, r, m in zip(answers, references, metas)]}

    def evaluate(self, completions: list[str], examples: list[Example]) -> dict[str, float]:
        """Held-out metrics for completions of ``examples`` (one completion per example):
        ``accuracy`` (mean of ``correct``), ``format_rate`` and the mean of every other row metric."""
        if len(completions) != len(examples):
            raise ValueError(f"evaluate got {len(completions)} completions for {len(examples)} examples")
        answers = [self.parse(c) for c in completions]
        rows = self.row_metrics(answers, [e.reference for e in examples], [e.meta for e in examples])
        n = max(len(examples), 1)
        metrics = {"accuracy": sum(rows.pop("correct")) / n, "format_rate": sum(a is not None for a in answers) / n}
        metrics.update({k: sum(v) / n for k, v in rows.items()})
        return metrics
