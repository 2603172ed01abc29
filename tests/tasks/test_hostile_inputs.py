"""Parsers and verifiers never raise and never hang (issue 12, item 6): huge numbers, digits of other
scripts, hostile lengths.  A digit is ASCII 0-9 everywhere (tasks/multiplication.py, checks/verifiers.py)."""

import time

from hypothesis import given, settings
from hypothesis import strategies as st

from rewardzoo.tasks.checks.verifiers import last_number, math_verify, tagged
from rewardzoo.tasks.hackable_multiplication import HackableMultiplication, HackableMultiplicationConfig
from rewardzoo.tasks.multiplication import Multiplication, MultiplicationConfig, parse_integer, relative_error
from rewardzoo.tasks.smiles import parse_formula

TASK = Multiplication(MultiplicationConfig(n_eval=5))
HACKABLE = HackableMultiplication(HackableMultiplicationConfig(multiplication=MultiplicationConfig(n_eval=5)))
OTHER_DIGITS = st.characters(categories=("Nd",)).filter(lambda c: not c.isascii())


def test_huge_answers_neither_overflow_nor_hit_the_int_limit():
    """A 310-digit answer made relative_error raise OverflowError (int/int true division) and a
    5,000-digit one made the parser raise ValueError (Python's 4,300-digit int-string limit)."""
    examples = TASK.eval[:2]
    metrics = TASK.evaluate(["9" * 310, "9" * 5000], examples)
    assert metrics["accuracy"] == 0.0 and metrics["relative_error"] == 1.0 and metrics["format_rate"] == 0.5
    assert relative_error("9" * 310, "84") == 1.0 and relative_error("84", "84") == 0.0
    assert parse_integer("9" * 4000) == int("9" * 4000) and parse_integer("9" * 4001) is None


def test_a_digit_is_ascii():
    """'٤٢', '４２' and the mixed '4٢' all scored 42 in last_number, tagged and the multiplication parser."""
    for text in ("٤٢", "４２", "4٢", "٤2"):
        assert TASK.parse(text) is None and HACKABLE.parse(text) is None
        assert last_number(f"so {text}", "42") == 0.0 and tagged(f"<answer>{text}</answer>", "42") == 0.0
        assert math_verify(text, "42") == 0.0  # math-verify's parser reads only ASCII digits as numbers
        assert parse_formula(f"C{text}") is None
    assert TASK.parse("42") == "42" and last_number("so 42", "42") == tagged("<answer>42</answer>", "42") == 1.0


def test_hostile_lengths_are_cheap():
    """1 MB answers took ~0.6 s (SMILES formula parser) and ~0.2 s (hackable parser) per call."""
    hostile = {"formula": "C" * 10**6, "candidates": "5 " * 500_000, "number": "9" * 10**6}
    start = time.perf_counter()
    assert parse_formula(hostile["formula"]) is None
    assert HACKABLE.parse(hostile["candidates"]) is None
    assert TASK.parse(hostile["number"]) is None and last_number(hostile["number"], "9") == 0.0
    assert time.perf_counter() - start < 0.25


@settings(max_examples=150, deadline=None)
@given(st.text(OTHER_DIGITS, min_size=1, max_size=12), st.text("ab .", max_size=5))
def test_digits_of_other_scripts_are_never_numbers(digits, tail):
    """Whatever Python's int() reads in them (its value is the gold here), they score 0."""
    for text in (digits, "1" + digits):
        gold = str(int(text))
        assert TASK.parse(text + tail) is None and TASK.verify(TASK.parse(text), gold, {}) == 0.0
        assert last_number(text + tail, gold) == 0.0
        assert tagged(f"<answer>{text}</answer>{tail}", gold) == 0.0


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 6000), st.sampled_from(["", "-", " ", "<answer>"]), st.text(max_size=20))
def test_numbers_of_any_length_never_raise(length, prefix, suffix):
    text = prefix + "7" * length + suffix
    rows = TASK.row_metrics([TASK.parse(text)], ["84"], [{}])
    assert rows["correct"] in ([0.0], [1.0]) and 0.0 <= rows["relative_error"][0] <= 1.0
    assert HACKABLE.row_metrics([HACKABLE.parse(text)], ["84"], [{}])["hack_rate"][0] in (0.0, 1.0)
    assert last_number(text, "7" * length or "0") in (0.0, 1.0) and tagged(text, "84") in (0.0, 1.0)
    assert parse_formula("C" + "7" * length) is None or length <= 6
