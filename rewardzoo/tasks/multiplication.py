"""Integer multiplication (the RAL paper, §B.1): ``a × b`` with configurable digit counts.

The reference is the exact product; a completion's answer must be a nonempty integer, either the
whole completion (``answer_format="plain"``, the tiny-tokenizer CPU presets), inside
``<answer>…</answer>`` tags (``"tags"``, as in the paper), or stated as an instruct model states it
(``"instruct"``: ``347 * 6 = 2082``, ``The answer is 2,082.``, ``\\boxed{2082}``; the prompt is then the
question ``What is 347 * 6? Answer with the number only.``, for a chat model: ``task.chat=true``,
docs/your_own_model.md).  Held-out metrics: exact accuracy and the
relative error |pred − gold| / |gold| clipped to 1 (malformed answers count as error 1).

Deviations from the paper: the paper samples four-digit pairs for billion-parameter models; the CPU
presets use 3-digit × 1-digit with a scratchpad (8,100 pairs, 1,000 held out) so that a
0.8M-parameter model learns in minutes.  Train and eval
pairs are disjoint.

The validation split (``n_validation``, our choice: 500) is drawn from the pairs left after train and
eval, so it is disjoint from both and adding it changes neither; when fewer pairs are left it is
smaller (none when the pool is exhausted: ``eval.split=validation`` then says so).

What a digit is (our choice, the same in every rewardzoo parser and verifier): the ASCII ``0``–``9``
only.  A model's ``٤٢`` or ``４２`` is not the number 42 (Python's ``int`` and a regex ``\\d`` would say it
is): a verifier of model output should not reward a script the task never asked for.  Hostile
lengths are bounded: an integer of more than :data:`MAX_ANSWER_DIGITS` digits is malformed (it keeps
every conversion below Python's 4,300-digit int limit), and relative errors are computed exactly,
so no answer raises OverflowError or ValueError.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from fractions import Fraction
from typing import ClassVar

from rewardzoo.core.config import check_section
from rewardzoo.core.types import Example
from rewardzoo.tasks.base import Task
from rewardzoo.tasks.checks.formats import NUMBER_FORMATS, format_answer

MAX_ANSWER_DIGITS = 4000
"""Longest integer answer read, in digits (a product of the largest allowed factors has 2,000)."""
_INTEGER = re.compile(rf"-?[0-9]{{1,{MAX_ANSWER_DIGITS}}}")
_NUMBER_GOES_ON = re.compile(r"[.,]?[0-9]")
_OPERATORS = ("*", "×", "x", "+", "-", "/", "÷", "^")
_LEADING_INTEGER = re.compile(rf"-?[0-9]{{1,3}}(?:,[0-9]{{3}})+(?![0-9])|-?[0-9]{{1,{MAX_ANSWER_DIGITS}}}")


@dataclass
class MultiplicationConfig:
    """Settings of the multiplication task."""

    RANGES: ClassVar[dict[str, str]] = {
        "digits_a": "[1, 1000]",
        "digits_b": "[1, 1000]",
        "n_train": "[1, inf)",
        "n_eval": "[1, inf)",
        "n_validation": "[0, inf)",
        "data_seed": "(-inf, inf)",
    }

    digits_a: int = 2
    """Number of digits of the first factor (its leading digit is never 0)."""
    digits_b: int = 1
    """Number of digits of the second factor (its leading digit is never 0)."""
    n_train: int = 5000
    """Training prompts (capped by the number of distinct pairs left after the eval split)."""
    n_eval: int = 200
    """Held-out prompts, disjoint from the training prompts (the test split)."""
    n_validation: int = 500
    """Validation prompts for tuning, from the pairs left after train and eval (fewer when fewer are left)."""
    answer_format: str = "plain"
    """'plain' (the completion is the number, or ends with '=number' after a scratchpad), 'tags'
    (<answer>…</answer>) or 'instruct' (a question; the number as an instruct model states it)."""
    question: bool = False
    """Phrase the prompt as the question ``What is a * b? Answer with the number only.`` (for an instruct model in
    chat form, ``task.chat=true``) in the plain format too; the instruct format always does."""
    scratchpad: bool = False
    """Demonstrations show partial products before the answer, e.g. 47*6= → 42+240=282: a short
    reasoning trace (the judge of RAL still sees only the final answer)."""
    data_seed: int = 0
    """Seed of the example generator (independent of the run's seed)."""

    def validate(self) -> None:
        """Raise ValueError, saying what to change, on settings that cannot run (ranges: ``RANGES``)."""
        if self.answer_format not in NUMBER_FORMATS:
            raise ValueError(f"answer_format must be one of {', '.join(NUMBER_FORMATS)}; got {self.answer_format!r}")


def parse_integer(text: str | None) -> int | None:
    """The integer an answer string spells in ASCII digits (at most :data:`MAX_ANSWER_DIGITS`), or
    None.  Never raises.

    >>> parse_integer(" 084 "), parse_integer("٤٢"), parse_integer("9" * 5000)
    (84, None, None)
    """
    if text is None or not _INTEGER.fullmatch(text := text.strip()):
        return None
    return int(text)


def relative_error(answer: str | None, reference: str) -> float:
    """|pred − gold| / max(|gold|, 1), clipped to 1 (exact arithmetic: no overflow on any length);
    a malformed answer has error 1."""
    pred, gold = parse_integer(answer), int(reference)
    if pred is None:
        return 1.0
    return float(min(Fraction(abs(pred - gold), max(abs(gold), 1)), 1))


def operand_ranges(cfg: MultiplicationConfig) -> tuple[range, range]:
    """The values each factor can take: ``digits_a``-digit and ``digits_b``-digit integers (no leading 0)."""
    return (range(10 ** (cfg.digits_a - 1), 10**cfg.digits_a), range(10 ** (cfg.digits_b - 1), 10**cfg.digits_b))


def task_pairs(cfg: MultiplicationConfig) -> list[tuple[int, int]]:
    """The operand pairs (a, b) of every prompt the task built from ``cfg`` holds: distinct pairs, eval and
    train first, then up to ``n_validation`` more; all of them when the space is small, else a sample
    without repeats.  The validation pairs come after the others (and whether to enumerate or sample is
    decided on ``n_train + n_eval`` alone), so they change neither.  What a corpus of other equations
    must avoid (:mod:`rewardzoo.judges.pretrain`)."""
    rng = random.Random(cfg.data_seed)
    range_a, range_b = operand_ranges(cfg)
    space = len(range_a) * len(range_b)
    wanted = cfg.n_train + cfg.n_eval
    if space <= 4 * wanted:
        pairs = [(a, b) for a in range_a for b in range_b]
        rng.shuffle(pairs)
        return pairs[: wanted + cfg.n_validation]
    seen: dict[tuple[int, int], None] = {}
    while len(seen) < min(wanted + cfg.n_validation, space):
        seen[(rng.randint(range_a[0], range_a[-1]), rng.randint(range_b[0], range_b[-1]))] = None
    return list(seen)


class Multiplication(Task):
    """``a*b=`` → the product."""

    name = "multiplication"

    def __init__(self, cfg: MultiplicationConfig | None = None):
        cfg = cfg or MultiplicationConfig()
        check_section(cfg, "task.multiplication")
        self.cfg = cfg
        self.answer_format = cfg.answer_format
        pairs = task_pairs(cfg)
        if len(pairs) <= cfg.n_eval:
            raise ValueError(
                f"only {len(pairs)} distinct pairs exist for {cfg.digits_a}×{cfg.digits_b} digits; "
                f"lower n_eval (now {cfg.n_eval}) or use more digits"
            )
        examples = [self._example(a, b) for a, b in pairs]
        end = cfg.n_eval + cfg.n_train
        super().__init__(train=examples[cfg.n_eval : end], eval=examples[: cfg.n_eval], validation=examples[end:])

    def _example(self, a: int, b: int) -> Example:
        if self.answer_format == "instruct" or (self.answer_format == "plain" and self.cfg.question):
            prompt = f"What is {a} * {b}? Answer with the number only."
        elif self.answer_format == "plain":
            prompt = f"{a}*{b}="
        else:
            prompt = f"What is {a} * {b}? Put the final integer in <answer></answer> tags."
        product = str(a * b)
        answer = format_answer(product, self.answer_format)
        if self.cfg.scratchpad:
            partials = [int(d) * b * 10**i for i, d in enumerate(reversed(str(a))) if d != "0"]
            answer = "+".join(map(str, partials)) + "=" + answer
        return Example(prompt, product, answer, {"a": a, "b": b})

    def parse(self, completion: str) -> str | None:
        """The answer if it is a nonempty integer in the task's format, else None (in the plain
        format the answer is what follows the last '=', so a scratchpad may precede it; in the instruct
        format it is the integer the stated answer starts with, thousands commas allowed: ``2,082.`` → 2082)."""
        answer = super().parse(completion)
        if answer is not None and self.answer_format == "plain":
            answer = answer.rpartition("=")[2]
        if answer is not None and self.answer_format == "instruct":
            match = _LEADING_INTEGER.match(answer)
            rest = answer[match.end() :] if match else ""
            # "145 * 2 is ..." states no answer (an operator after the integer: it was an operand), nor do "2.5", "2,08"
            stated = match and not rest.lstrip().startswith(_OPERATORS) and not _NUMBER_GOES_ON.match(rest)
            answer = match.group().replace(",", "") if stated else None
        value = parse_integer(answer)
        return None if value is None else str(value)

    def row_metrics(
        self, answers: list[str | None], references: list[str], metas: list[dict]
    ) -> dict[str, list[float]]:
        """``correct`` and the clipped ``relative_error`` of every row."""
        rows = super().row_metrics(answers, references, metas)
        rows["relative_error"] = [relative_error(a, r) for a, r in zip(answers, references)]
        return rows
