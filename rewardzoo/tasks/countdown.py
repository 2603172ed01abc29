"""Countdown (RAL paper, §B.2 without the code part): reach a target with the given numbers.

A prompt gives ``n_numbers`` integers and a target; the answer is an arithmetic expression that
uses each given number exactly once (the exact multiset), combined with ``+ - * /`` and
parentheses, whose exact value is the target.  Expressions are read by the safe evaluator of
:mod:`rewardzoo.tasks.checks.arith` (no ``eval``), in exact rational arithmetic: intermediate fractions
and negative values are allowed, division by zero is not.

References come from :func:`solve`, an exhaustive search over every expression tree on the numbers
(dynamic programming over subsets of the numbers, exact :class:`~fractions.Fraction` values).  The
reference of a problem is its canonical shortest solution: the shortest expression text reaching
the target, ties broken alphabetically.  Any correct expression scores 1, not only the reference.

Formats: ``plain`` (tiny char tokenizer) — prompt ``3,5,7->22:``, completion ``3*5+7``; ``tags`` —
an instruction, with the expression in ``<answer>…</answer>``; ``instruct`` — a question for an instruct model
in chat form (``task.chat=true``), the expression read from free text as such a model states it
(:func:`instruct_expression`: ``\\boxed{3*5+7}``, ``The answer is 3 * 5 + 7.``, ``3 * 5 + 7 = 22``).
:meth:`Countdown.parse` returns the expression (whitespace removed) when it is syntactically an expression,
else None (malformed).

Row metrics: ``correct``; ``valid_expression`` (parses, uses exactly the given numbers, no division
by zero — a legal move whatever its value); ``relative_error`` = |value − target| / max(|target|, 1)
clipped to 1, and 1 for an answer that is not a valid expression (the continuous error RAL's
analyses correlate with, named as in multiplication).

Deviations from the paper: the paper uses 15,000 training and 800 evaluation problems from a
curated set with LLM-written synthetic data; here problems are generated: numbers drawn uniformly
(with repetition) from [number_min, number_max], the target drawn uniformly from the integers in
[target_min, target_max] that the numbers can reach.  When there are no more multisets of numbers
than problems wanted, every problem is enumerated instead and a uniform sample without repeats is
taken.  The CPU preset is 3 numbers in 1..10 with targets 1..100 (2,915 problems exist).
Problems (the sorted numbers and the target) are distinct and train/eval are disjoint.
The solver's cost grows steeply with the count of numbers (~1 ms per multiset of 3 numbers, ~30 ms
for 4 numbers up to 100, about a second for 5); ``n_numbers`` is capped at 5.

Untested: learning with the ``tags`` format and a real model (the CPU recipe uses ``plain``), and
generation at the paper's scale (15,800 problems of 4+ numbers take minutes to solve).
"""

from __future__ import annotations

import itertools
import math
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import ClassVar

from rewardzoo.core.config import check_section
from rewardzoo.core.types import Example
from rewardzoo.tasks.base import Task
from rewardzoo.tasks.checks.arith import ATOM, MAX_CHARS, MAX_DIGITS, join, try_parse_expression
from rewardzoo.tasks.checks.formats import (
    BOXED,
    NUMBER_FORMATS,
    extract_answer,
    format_answer,
    stated_answer,
    tidy_answer,
)

MAX_NUMBERS = 5
_OPS = ("+", "-", "*", "/")


@dataclass
class CountdownConfig:
    """Settings of the Countdown task."""

    RANGES: ClassVar[dict[str, str]] = {
        "n_numbers": f"[2, {MAX_NUMBERS}]",
        "number_min": "[1, inf)",
        "number_max": f"[1, {10**MAX_DIGITS})",
        "target_min": "(-inf, inf)",
        "target_max": "(-inf, inf)",
        "n_train": "[1, inf)",
        "n_eval": "[1, inf)",
        "data_seed": "(-inf, inf)",
    }

    n_numbers: int = 3
    """How many numbers a problem gives (2 to 5); the answer must use each exactly once."""
    number_min: int = 1
    """Smallest number drawn (at least 1)."""
    number_max: int = 10
    """Largest number drawn."""
    target_min: int = 1
    """Smallest target."""
    target_max: int = 100
    """Largest target."""
    n_train: int = 2000
    """Training problems."""
    n_eval: int = 200
    """Held-out problems, disjoint from the training problems."""
    answer_format: str = "plain"
    """'plain' (the completion is the expression), 'tags' (<answer>…</answer>) or 'instruct' (a question; the
    expression as an instruct model states it)."""
    data_seed: int = 0
    """Seed of the problem generator (independent of the run's seed)."""

    def validate(self) -> None:
        """Raise ValueError, saying what to change, on settings that cannot run (ranges: ``RANGES``)."""
        if self.number_min > self.number_max:
            raise ValueError(f"number_min ({self.number_min}) must not exceed number_max ({self.number_max})")
        if self.target_min > self.target_max:
            raise ValueError(f"target_min ({self.target_min}) must not exceed target_max ({self.target_max})")
        if self.answer_format not in NUMBER_FORMATS:
            raise ValueError(f"answer_format must be one of {', '.join(NUMBER_FORMATS)}; got {self.answer_format!r}")


def solve(numbers: Sequence[int]) -> dict[Fraction, str]:
    """Every value reachable by an expression using each of ``numbers`` exactly once, mapped to its
    canonical shortest expression (shortest text, then alphabetical).

    Dynamic programming over subsets: the expressions of a subset are ``L op R`` for every split of
    it into two non-empty parts (both orders) and every expression of each part.  For each subset
    the best text is kept per (value, precedence class), since a longer text that needs no
    parentheses can make the shorter whole.

    >>> solve([3, 5, 7])[Fraction(22)]
    '3*5+7'
    """
    n = len(numbers)
    best: list[dict[tuple[Fraction, int], str]] = [{} for _ in range(1 << n)]  # per subset bitmask
    for i, x in enumerate(numbers):
        best[1 << i][(Fraction(x), ATOM)] = str(x)
    for mask in range(1, 1 << n):
        if mask & (mask - 1) == 0:
            continue
        table = best[mask]
        left_mask = (mask - 1) & mask
        while left_mask:
            right = best[mask ^ left_mask]
            for (lv, lp), lt in best[left_mask].items():
                for (rv, rp), rt in right.items():
                    for op in _OPS:
                        if op == "/" and rv == 0:
                            continue
                        value = lv + rv if op == "+" else lv - rv if op == "-" else lv * rv if op == "*" else lv / rv
                        text, prec = join(op, (lt, lp), (rt, rp))
                        old = table.get((value, prec))
                        if old is None or (len(text), text) < (len(old), old):
                            table[(value, prec)] = text
            left_mask = (left_mask - 1) & mask
    out: dict[Fraction, str] = {}
    for (value, _), text in best[(1 << n) - 1].items():
        old = out.get(value)
        if old is None or (len(text), text) < (len(old), old):
            out[value] = text
    return out


def expression_value(answer: str | None, numbers: Sequence[int]) -> Fraction | None:
    """The exact value of ``answer`` if it is a valid Countdown expression for ``numbers`` (parses,
    uses exactly their multiset, never divides by zero), else None.  Never raises on any text."""
    expr = try_parse_expression(answer) if isinstance(answer, str) else None
    if expr is None or sorted(expr.numbers) != sorted(numbers):
        return None
    return expr.value


def relative_error(value: Fraction | None, target: int) -> float:
    """|value − target| / max(|target|, 1) clipped to 1; 1 when there is no valid value."""
    if value is None:
        return 1.0
    return float(min(abs(value - target) / max(abs(target), 1), 1))


def countdown_problems(cfg: CountdownConfig) -> list[tuple[list[int], int, str]]:
    """``n_eval + n_train`` distinct problems (numbers in drawn order, target, reference), the
    first ``n_eval`` for evaluation; reproducible from ``cfg.data_seed``."""
    check_section(cfg, "task.countdown")
    rng = random.Random(cfg.data_seed)
    wanted = cfg.n_eval + cfg.n_train

    def targets(key: tuple[int, ...]) -> dict[int, str]:
        return {
            int(v): text
            for v, text in solve(key).items()
            if v.denominator == 1 and cfg.target_min <= v <= cfg.target_max
        }

    multisets = math.comb(cfg.number_max - cfg.number_min + cfg.n_numbers, cfg.n_numbers)
    if multisets <= wanted:  # a small space: every problem, shuffled (no more solver calls than sampling would make)
        everything = [
            (key, target, text)
            for key in itertools.combinations_with_replacement(range(cfg.number_min, cfg.number_max + 1), cfg.n_numbers)
            for target, text in targets(key).items()
        ]
        if len(everything) < wanted:
            raise ValueError(
                f"countdown has only {len(everything)} distinct problems with {cfg.n_numbers} numbers in "
                f"{cfg.number_min}..{cfg.number_max} and targets in {cfg.target_min}..{cfg.target_max}, "
                f"{wanted} wanted; lower n_train/n_eval or widen the ranges"
            )
        rng.shuffle(everything)
        return [(rng.sample(key, len(key)), target, text) for key, target, text in everything[:wanted]]
    reachable: dict[tuple[int, ...], dict[int, str]] = {}
    problems: dict[tuple[tuple[int, ...], int], tuple[list[int], int, str]] = {}
    budget = 50 * wanted
    for _ in range(budget):
        if len(problems) == wanted:
            break
        numbers = [rng.randint(cfg.number_min, cfg.number_max) for _ in range(cfg.n_numbers)]
        key = tuple(sorted(numbers))
        if key not in reachable:
            reachable[key] = targets(key)
        if reachable[key]:
            target = rng.choice(sorted(reachable[key]))
            problems.setdefault((key, target), (numbers, target, reachable[key][target]))
    if len(problems) < wanted:
        raise ValueError(
            f"countdown found only {len(problems)} distinct problems in {budget} draws, {wanted} wanted; "
            f"lower n_train/n_eval or widen number_min..number_max or target_min..target_max"
        )
    return list(problems.values())


def countdown_prompt(numbers: Sequence[int], target: int, answer_format: str) -> str:
    """The Countdown prompt: ``3,5,7->22:`` (plain) or an instruction (tags, instruct)."""
    if answer_format == "plain":
        return f"{','.join(map(str, numbers))}->{target}:"
    ask = (
        "Put the expression in <answer></answer> tags."
        if answer_format == "tags"
        else "Answer with the expression only."
    )
    return (
        f"Using the numbers {', '.join(map(str, numbers))}, write an arithmetic expression equal to {target}. "
        f"Use each number exactly once, with + - * / and parentheses. {ask}"
    )


_EQUALS_NUMBER = re.compile(r"\s*=\s*-?\d+(?:\.\d+)?\s*$")


def instruct_expression(completion: str) -> str:
    """The expression an instruct model's free-text reply states (the ``instruct`` format); "" when none.

    The last ``\\boxed{…}``, else what follows the last "answer is" / "answer:" up to the end of its line, else
    the longest expression that ends just before the last ``=`` (``We get 3 * 5 + 7 = 22`` → ``3 * 5 + 7``), else
    the first line — each without a trailing ``= value``, a closing period or markdown emphasis.  Linear in the
    reply's length: the ``=`` case tries only the starts within the last ``MAX_CHARS`` characters of its line (a
    longer expression is refused by the parser anyway).

    >>> [instruct_expression(t) for t in ("\\\\boxed{3*5+7}", "The answer is 3 * 5 + 7.", "We get 3 * 5 + 7 = 22")]
    ['3*5+7', '3 * 5 + 7', '3 * 5 + 7']
    """
    boxed = BOXED.findall(completion)
    if boxed:
        text = boxed[-1]
    elif (stated := stated_answer(completion)) is not None:
        text = stated
    elif "=" in completion:
        left = completion.rpartition("=")[0].rsplit("\n", 1)[-1]
        first = max(len(left) - MAX_CHARS, 0)
        starts = (i for i in range(first, len(left)) if i == 0 or not left[i - 1].isdigit())
        text = next((left[i:] for i in starts if try_parse_expression(left[i:]) is not None), "")
    else:
        text = completion.strip().split("\n", 1)[0]
    return _EQUALS_NUMBER.sub("", tidy_answer(text)).strip()


class Countdown(Task):
    """``3,5,7->22:`` → an expression such as ``3*5+7``."""

    name = "countdown"

    def __init__(self, cfg: CountdownConfig | None = None):
        cfg = cfg or CountdownConfig()
        self.cfg = cfg
        self.answer_format = cfg.answer_format
        examples = [
            Example(
                countdown_prompt(numbers, target, cfg.answer_format),
                reference,
                format_answer(reference, cfg.answer_format),
                {"numbers": numbers, "target": target},
            )
            for numbers, target, reference in countdown_problems(cfg)
        ]
        super().__init__(train=examples[cfg.n_eval :], eval=examples[: cfg.n_eval])

    def parse(self, completion: str) -> str | None:
        """The expression (whitespace removed) if the answer is syntactically an expression, else None."""
        if self.answer_format == "instruct":
            text = instruct_expression(completion)
        else:
            text = extract_answer(completion, self.answer_format) or ""
        expr = try_parse_expression(text)
        return None if expr is None else expr.text

    def verify(self, answer: str | None, reference: str, meta: dict) -> float:
        """1 if ``answer`` uses exactly the given numbers and equals the target, else 0."""
        return float(expression_value(answer, meta["numbers"]) == meta["target"])

    def row_metrics(
        self, answers: list[str | None], references: list[str], metas: list[dict]
    ) -> dict[str, list[float]]:
        """``correct``, ``valid_expression`` and the clipped ``relative_error`` of every row."""
        values = [expression_value(a, m["numbers"]) for a, m in zip(answers, metas)]
        return {
            "correct": [float(v == m["target"]) for v, m in zip(values, metas)],
            "valid_expression": [float(v is not None) for v in values],
            "relative_error": [relative_error(v, m["target"]) for v, m in zip(values, metas)],
        }
