"""Rubrics: ordered criteria, and the schedule that decides which are active and how they are weighted.

A :class:`Criterion` is a name, a title, a description (what a judge is asked) and optionally a
programmatic check (a name in :data:`rewardzoo.tasks.checks.writing.CHECKS`, or a callable
``(text, meta) → [0, 1]``) that a rule judge applies, and optionally its own pairwise prompt
template for an LM judge.  A :class:`Rubric` is an ordered tuple of criteria plus the number of
steps per criterion of its paper setting.  Shipped rubrics (``rewardzoo/judges/data/``):

    creative_writing   the RcRL paper, Table 7, 13 criteria, one every 100 steps
    healthbench        the RcRL paper, Table 8, 13 criteria, one every 50 steps
    rubric_writing     the toy task's 13 programmatic criteria (ours), one every 5 steps

Any other rubric is a YAML file of the same form (``name``, ``steps_per_criterion``, ``criteria``:
a list of ``{name, title, description, check?, template?}``), loaded by path.

Schedule (:class:`RubricSchedule`) at step t with K steps per criterion and C criteria:

    curriculum   active(t) = criteria 0 … min(C, ⌊t / K⌋ + 1) − 1   (criterion k from step k·K; only grows)
    all          active(t) = every criterion, from step 0
    dropout      every criterion kept independently with probability 1 − p, redrawn each step from
                 a generator seeded by (seed, step); when none is kept, one drawn uniformly is

Weights over the active set A (they sum to 1):

    newest       the newest active criterion gets w_new (default ½), the others (1 − w_new)/(|A| − 1);
                 a lone active criterion gets 1
    uniform      1/|A| each

Orderings (the RcRL paper, Table 3, Ordering 1–3): ``ordering = 0`` keeps the rubric's order; ``ordering = n ≥ 1``
is a random permutation drawn from n alone (the same on every run and seed).

Choices of ours: under ``all`` and ``dropout`` no criterion is newer than another, so ``newest``
weighting falls back to uniform there; the dropout probability p (0.5) is ours, the RcRL paper gives none.
"""

from __future__ import annotations

import importlib.resources
import random
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import torch
import yaml

from rewardzoo.core.types import derive_seed
from rewardzoo.tasks.checks.writing import CHECKS, Check

SCHEDULES = ("curriculum", "all", "dropout")
WEIGHTINGS = ("newest", "uniform")
SHIPPED = ("creative_writing", "healthbench", "rubric_writing")


@dataclass(frozen=True)
class Criterion:
    """One rubric criterion."""

    name: str  # identifier used in metric keys (criterion/<name>)
    description: str  # the question a judge answers about a response
    title: str = ""  # human-readable title (defaults to the name)
    check: str | Callable[[str, dict], float] = ""  # programmatic check: a CHECKS name or a callable; '' = none
    template: str = ""  # this criterion's pairwise prompt template for an LM judge ('' = the judge's default)

    def check_fn(self) -> Check:
        """The programmatic check, for a rule judge; ValueError when the criterion has none."""
        if callable(self.check):
            return self.check
        if not self.check:
            raise ValueError(
                f"criterion {self.name!r} has no programmatic check, so a rule judge cannot judge it; "
                f"use an LM judge (judge.kind=lm) or give it a check from {sorted(CHECKS)}"
            )
        return CHECKS[self.check]


@dataclass(frozen=True)
class Rubric:
    """Ordered criteria (the curriculum order) and the paper's steps per criterion."""

    name: str
    criteria: tuple[Criterion, ...]
    steps_per_criterion: int = 100
    source: str = ""

    def __post_init__(self) -> None:
        names = [c.name for c in self.criteria]
        if not names:
            raise ValueError(f"rubric {self.name!r} has no criteria")
        if len(set(names)) != len(names):
            repeated = sorted({n for n in names if names.count(n) > 1})
            raise ValueError(f"rubric {self.name!r} repeats criterion names: {repeated}")
        for c in self.criteria:
            if not c.name.isidentifier() or not c.description.strip():
                raise ValueError(
                    f"rubric {self.name!r}: criterion {c.name!r} needs an identifier name and a description"
                )
            if isinstance(c.check, str) and c.check and c.check not in CHECKS:
                raise ValueError(
                    f"rubric {self.name!r}: criterion {c.name!r} names an unknown check {c.check!r}; "
                    f"known checks: {', '.join(CHECKS)}"
                )

    def reordered(self, ordering: int) -> Rubric:
        """This rubric in its own order (``ordering = 0``) or in random ordering n (a permutation drawn from n)."""
        if ordering == 0:
            return self
        order = list(range(len(self.criteria)))
        random.Random(derive_seed("rubric-ordering", ordering)).shuffle(order)
        return replace(self, criteria=tuple(self.criteria[i] for i in order))


def load_rubric(spec: str) -> Rubric:
    """A shipped rubric by name (:data:`SHIPPED`) or a rubric YAML file by path."""
    if spec in SHIPPED:
        text = importlib.resources.files("rewardzoo.judges").joinpath(f"data/{spec}.yaml").read_text()
        source = f"shipped rubric {spec!r}"
    else:
        path = Path(spec).expanduser()
        if not path.is_file():
            raise FileNotFoundError(
                f"rubric {spec!r} is neither a shipped rubric ({', '.join(SHIPPED)}) nor a YAML file"
            )
        text, source = path.read_text(), f"rubric file {spec}"
    try:
        data = yaml.safe_load(text)
        criteria = tuple(Criterion(**c) for c in data["criteria"])
        return Rubric(
            name=str(data.get("name", Path(spec).stem)),
            criteria=criteria,
            steps_per_criterion=int(data.get("steps_per_criterion", 100)),
            source=str(data.get("source", "")),
        )
    except (yaml.YAMLError, KeyError, TypeError, AttributeError) as err:
        raise ValueError(
            f"{source} is not a valid rubric ({err!r}); it needs 'criteria': a list of "
            f"{{name, description, title?, check?, template?}}"
        ) from err


@dataclass(frozen=True)
class RubricSchedule:
    """Which criteria are active at a step and their weights (see the module docstring)."""

    n_criteria: int
    kind: str = "curriculum"
    steps_per_criterion: int = 100
    weighting: str = "newest"
    newest_weight: float = 0.5
    dropout_rate: float = 0.5
    seed: int = 0

    def __post_init__(self) -> None:
        if self.kind not in SCHEDULES or self.weighting not in WEIGHTINGS:
            raise ValueError(
                f"schedule must be one of {SCHEDULES} and weighting one of {WEIGHTINGS}; "
                f"got {self.kind!r}, {self.weighting!r}"
            )
        if self.steps_per_criterion < 1 or not 0 < self.newest_weight <= 1 or not 0 <= self.dropout_rate < 1:
            raise ValueError("steps_per_criterion must be >= 1, newest_weight in (0, 1] and dropout_rate in [0, 1)")

    def active(self, step: int) -> list[int]:
        """Indices of the active criteria at ``step``, in curriculum order."""
        C = self.n_criteria
        if self.kind == "curriculum":
            return list(range(min(C, max(step, 0) // self.steps_per_criterion + 1)))
        if self.kind == "all":
            return list(range(C))
        rng = np.random.default_rng(derive_seed(self.seed, "rubric-dropout", step))
        kept = np.flatnonzero(rng.random(C) >= self.dropout_rate).tolist()
        return kept or [int(rng.integers(C))]

    def weights(self, step: int) -> torch.Tensor:
        """[C] weights at ``step``: 0 for inactive criteria; the active ones sum to 1."""
        active = self.active(step)
        w = torch.zeros(self.n_criteria, dtype=torch.float64)  # [C]
        if self.weighting == "newest" and self.kind == "curriculum" and len(active) > 1:
            w[active[:-1]] = (1.0 - self.newest_weight) / (len(active) - 1)
            w[active[-1]] = self.newest_weight
        else:
            w[active] = 1.0 / len(active)
        return w
