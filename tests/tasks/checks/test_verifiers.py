"""Verifiers: 003's printed table cell by cell, value semantics, and "never raises" properties."""

import re
import runpy
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rewardzoo.tasks.checks.verifiers import (
    SEED_003_CANDIDATES,
    SEED_003_GOLD,
    VERIFIERS,
    contains,
    every_number,
    exact,
    last_number,
    math_verify,
    tagged,
)

GOLD = "1/2"
# Seed 003's output, transcribed: model output → exact, last-number, tagged, contains.
SEED_TABLE = [
    ("1/2", 1, 1, 0, 1),
    ("The answer is 1/2.", 0, 1, 0, 1),
    ("0.5", 0, 1, 0, 0),
    ("<answer>1/2</answer>", 0, 1, 1, 1),
    ("2/4", 0, 1, 0, 0),
    ("1/2 (but I am not sure)", 0, 1, 0, 1),
    ("one half", 0, 0, 0, 0),
    ("1/2 1/2 1/2 1/2 1/2 1/2 1/2 1/2", 0, 1, 0, 1),
]
HOSTILE = [
    "",
    "1/0",
    "0/0",
    "9" * 5000,
    "1e999999",
    "1e-999999999",
    "<answer>1e999999999</answer>",
    "a\x00b",
    "<answer>\x00</answer>",
    "<answer>1/0</answer>",
    "-" * 10000,
    "1/" + "0" * 5000,
    "\ud800",
    "1_000",
    "<answer>" * 50,
    "\\boxed{9^{9^{9}}}",
    "٣/٤",
    "<answer>９</answer>",
    "1." + "5" * 5000,
]


@pytest.mark.parametrize("row", SEED_TABLE, ids=[r[0] for r in SEED_TABLE])
def test_reproduces_the_seed_table_cell_by_cell(row):
    pred, *want = row
    got = [exact(pred, GOLD), last_number(pred, GOLD), tagged(pred, GOLD), contains(pred, GOLD)]
    assert got == [float(w) for w in want]


def test_library_candidates_are_the_seed_rows():
    assert SEED_003_GOLD == GOLD and list(SEED_003_CANDIDATES) == [row[0] for row in SEED_TABLE]


def test_verifiers_dict_is_the_config_lookup():
    assert VERIFIERS == {
        "exact": exact,
        "last_number": last_number,
        "tagged": tagged,
        "contains": contains,
        "every_number": every_number,
        "math_verify": math_verify,
    }


def test_value_level_comparison():
    """Fraction semantics: equal values pass whatever their spelling; the *last* number counts."""
    assert last_number("x = -3/6", "-1/2") == 1.0
    assert last_number("first 1/2 then 3", GOLD) == 0.0
    assert last_number("0.50", "1/2") == 1.0 and last_number("12", "12.0") == 1.0
    assert tagged("<answer> 2/4 </answer>", GOLD) == 1.0
    assert tagged("<answer>5e-1</answer>", GOLD) == 1.0  # Fraction reads exponents, as in 003
    assert tagged("<answer>1/3</answer> <answer>1/2</answer>", GOLD) == 1.0  # the last pair (extract_answer)
    assert tagged("<answer></answer>", GOLD) == 0.0 and tagged("<answer>half</answer>", GOLD) == 0.0
    assert exact(" 1/2\n", GOLD) == 1.0 and exact("1/2", " 1/2") == 0.0  # pred stripped, gold not (003)


def test_contains_is_gamed_by_listing_candidates():
    """003 "Try it yourself": listing the options passes contains, and none of the stricter verifiers."""
    listing = "The options are 1/2, 1/3 and 1/4."
    assert contains(listing, GOLD) == 1.0
    assert last_number(listing, GOLD) == 0.0 and tagged(listing, GOLD) == 0.0 and exact(listing, GOLD) == 0.0


def test_every_number_catches_the_options_row_wherever_the_gold_sits():
    """003's "write the verifier that catches it, and check it does not break the <answer> row":
    every number-looking token must have gold's value.  last_number is fooled once the gold is
    listed last; every_number is not, and it passes every seed row whose numbers all equal 1/2."""
    for listing in ("The options are 1/2, 1/3 and 1/4.", "The options are 1/4, 1/3 and 1/2.", "1/3 1/2"):
        assert every_number(listing, GOLD) == 0.0 and contains(listing, GOLD) == 1.0
    assert last_number("The options are 1/4, 1/3 and 1/2.", GOLD) == 1.0
    assert [every_number(pred, GOLD) for pred in SEED_003_CANDIDATES] == [1, 1, 1, 1, 1, 1, 0, 1]
    assert every_number("", GOLD) == 0.0 and every_number("1/2", "half") == 0.0  # no number / gold not a number
    assert every_number("12 apples, so 1/2", GOLD) == 0.0  # the price: any other number fails too


def test_absurd_numbers_score_zero_quickly():
    """An exponent past ±1000 is no number (Fraction would compute 10**999999999 and never return)."""
    assert tagged("<answer>1e999999999</answer>", "1") == 0.0
    assert tagged("<answer>1e3</answer>", "1000") == 1.0
    assert last_number("9" * 5000, "9" * 5000) == 0.0  # beyond Python's int-string limit: documented 0


def test_math_verify_known_answers():
    assert [math_verify(p, GOLD) for p in ("1/2", "0.5", "2/4", "$\\frac{1}{2}$", "\\boxed{\\frac{2}{4}}")] == [1.0] * 5
    assert math_verify("one half", GOLD) == 0.0 and math_verify("1/3", GOLD) == 0.0
    assert math_verify("x = 2", "\\frac{4}{2}") == 1.0 and math_verify("42", "x+") == 0.0


def test_math_verify_works_outside_the_main_thread():
    """math-verify's SIGALRM limits fail off the main thread; there it runs in the helper process."""
    results = {}
    thread = threading.Thread(
        target=lambda: results.update(good=math_verify("0.5", GOLD), bad=math_verify("1/3", GOLD))
    )
    thread.start()
    thread.join(timeout=150)
    assert results == {"good": 1.0, "bad": 0.0}


@pytest.mark.parametrize("name", ["exact", "last_number", "tagged", "contains", "every_number", "math_verify"])
def test_hostile_inputs_never_raise(name):
    for pred in HOSTILE:
        for gold in (GOLD,) if name == "math_verify" else (GOLD, pred):  # math-verify: 2 s per time-out
            assert VERIFIERS[name](pred, gold) in (0.0, 1.0)


@settings(max_examples=200, deadline=None)
@given(st.text(), st.text())
def test_cheap_verifiers_never_raise(pred, gold):
    for name in ("exact", "last_number", "tagged", "contains", "every_number"):
        assert VERIFIERS[name](pred, gold) in (0.0, 1.0)


numbers = st.one_of(st.integers(-(10**6), 10**6).map(str), st.fractions().map(str), st.floats(allow_nan=False).map(str))


@settings(max_examples=200, deadline=None)
@given(st.text(), numbers, st.text())
def test_value_verifiers_never_raise_around_numbers(prefix, number, suffix):
    pred = f"{prefix}<answer>{number}</answer>{suffix}{number}"
    assert last_number(pred, number) in (0.0, 1.0) and tagged(pred, number) in (0.0, 1.0)
    assert every_number(pred, number) in (0.0, 1.0)


@settings(max_examples=40, deadline=None)
@given(st.text(max_size=200), st.sampled_from(["1/2", "42", "\\frac{1}{3}", "x^2", ""]))
def test_math_verify_never_raises(pred, gold):
    assert math_verify(pred, gold) in (0.0, 1.0)


SEED_OUTPUT = """\
gold answer: '1/2'

model output                              exact  last-number       tagged     contains
1/2                                           1            1            0            1
The answer is 1/2.                            0            1            0            1
0.5                                           0            1            0            0
<answer>1/2</answer>                          0            1            1            1
2/4                                           0            1            0            0
1/2 (but I am not sure)                       0            1            0            1
one half                                      0            0            0            0
1/2 1/2 1/2 1/2 1/2 1/2 1/2 1/2               0            1            0            1

what a code question looks like instead
  correct         reward 1.00
  off by a sign   reward 0.33
  syntax error    reward 0.00"""


def test_verifier_table_script_prints_the_seed_output_plus_a_math_verify_column():
    """scripts/verifier_table.py: each of 003's printed lines, character for character, then at most
    one extra right-aligned column (math-verify) on the table's lines."""
    script = runpy.run_path(str(Path(__file__).parents[3] / "scripts" / "verifier_table.py"))
    lines = script["text_lines"]()
    assert len(lines) == len(SEED_OUTPUT.splitlines())
    for got, want in zip(lines, SEED_OUTPUT.splitlines()):
        assert got.startswith(want) and re.fullmatch(r"( {1,12}\S+)?", got[len(want) :]), (got, want)
    assert lines[2].endswith("math-verify")
    assert [line[-1] for line in lines[3:11]] == ["1", "1", "1", "0", "1", "1", "0", "0"]
