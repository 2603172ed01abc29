"""Countdown: the safe evaluator, the solver, the verifier and the example generator."""

from __future__ import annotations

import itertools
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rewardzoo.tasks.checks.arith import ATOM, MAX_DEPTH, ExpressionError, join, parse_expression, try_parse_expression
from rewardzoo.tasks.countdown import Countdown, CountdownConfig, countdown_problems, solve

SMALL = CountdownConfig(n_train=300, n_eval=40)


@pytest.fixture(scope="module")
def task() -> Countdown:
    return Countdown(SMALL)


# ------------------------------------------------------------------ the safe evaluator
@pytest.mark.parametrize(
    "text, value",
    [
        ("3*5+7", 22),
        ("7+5*3", 22),
        ("(3+5)*7", 56),
        ("8/3*3", 8),
        ("1-2-3", -4),
        ("1-(2-3)", 2),
        ("12/4/3", 1),
        ("12/(4/3)", 9),
        (" 3 + ( 4 * 2 ) ", 11),
        ("07+1", 8),
        ("((((1))))", 1),
        ("2/3", Fraction(2, 3)),
    ],
)
def test_evaluator_values(text, value):
    assert parse_expression(text).value == value


def test_evaluator_reports_literals_and_strips_whitespace():
    expr = parse_expression(" 10 - ( 2*3 ) ")
    assert expr.text == "10-(2*3)" and expr.numbers == (10, 2, 3)


def test_division_by_zero_parses_without_a_value():
    assert parse_expression("5/(3-3)").value is None
    assert parse_expression("5/(3-3)*0+1").value is None  # no value anywhere up the tree


@pytest.mark.parametrize(
    "text",
    [
        "9**9**9",
        "2**3",
        "3//2",
        "-3+5",
        "+3",
        "3*-5",
        "1e9",
        "1.5",
        "1_000",
        "abs(3)",
        "__import__('os')",
        "a.b",
        "x+1",
        "3 4",
        "(3",
        "3)",
        "",
        "   ",
        "()",
        "3+",
        "*3",
        "[1]",
        "3;4",
        "9" * 10,
        "1" + "+1" * 300,
        "(" * (MAX_DEPTH + 1) + "1" + ")" * (MAX_DEPTH + 1),
        "(" * 100_000,
        "1+" * 100_000 + "1",
        "٣+1",
    ],
)
def test_evaluator_rejects_hostile_and_malformed_input(text):
    with pytest.raises(ExpressionError):
        parse_expression(text)
    assert try_parse_expression(text) is None


def test_evaluator_accepts_nesting_up_to_the_limit():
    text = "(" * MAX_DEPTH + "1" + ")" * MAX_DEPTH
    assert parse_expression(text).value == 1


@st.composite
def expression_trees(draw, depth=3):
    """(text, precedence, exact value) of a random expression written with :func:`join`."""
    if depth == 0 or draw(st.booleans()):
        n = draw(st.integers(1, 99))
        return str(n), ATOM, Fraction(n)
    op = draw(st.sampled_from("+-*/"))
    lt, lp, lv = draw(expression_trees(depth=depth - 1))
    rt, rp, rv = draw(expression_trees(depth=depth - 1))
    text, prec = join(op, (lt, lp), (rt, rp))
    if lv is None or rv is None or (op == "/" and rv == 0):
        return text, prec, None  # division by zero somewhere: no value
    return text, prec, {"+": lv + rv, "-": lv - rv, "*": lv * rv, "/": lv / rv if rv else None}[op]


@given(expression_trees())
@settings(max_examples=300, deadline=None)
def test_join_writes_parentheses_that_keep_the_value(tree):
    """Minimal parentheses never change the value the tree computes."""
    text, _, value = tree
    assert parse_expression(text).value == value


TINY = [Countdown(CountdownConfig(n_train=5, n_eval=2, answer_format=fmt)) for fmt in ("plain", "tags", "instruct")]


@given(st.text(max_size=700) | st.text(alphabet="0123456789+-*/() ", max_size=700))
@settings(max_examples=200, deadline=None)
def test_parse_and_verify_never_raise(text):
    meta = {"numbers": [3, 5, 7], "target": 22}
    for task in TINY:
        answer = task.parse(text)
        assert answer is None or isinstance(answer, str)
        assert task.verify(answer, "3*5+7", meta) in (0.0, 1.0)
        assert task.verify(text, "3*5+7", meta) in (0.0, 1.0)
    rows = task.row_metrics([text, None], ["3*5+7"] * 2, [meta] * 2)
    assert all(0.0 <= v <= 1.0 for vs in rows.values() for v in vs)


# ------------------------------------------------------------------ the solver
def test_solver_known_answers():
    assert solve([3, 5, 7])[Fraction(22)] == "3*5+7"
    assert solve([2, 2])[Fraction(1)] == "2/2"
    assert Fraction(24) in solve([1, 5, 5, 5])  # 5*(5-1/5)
    assert parse_expression(solve([1, 5, 5, 5])[Fraction(24)]).value == 24
    assert Fraction(2) not in solve([7, 7]) and set(solve([7, 7])) == {14, 0, 49, 1}


def brute_force_shortest(numbers) -> dict[Fraction, str]:
    """Every minimal-form expression on 3 numbers — ``a o b o c``, ``(a o b) o c``, ``a o (b o c)``
    over all orders — evaluated by the parser; shortest text, then alphabetical, per value."""
    best: dict[Fraction, str] = {}
    for a, b, c in itertools.permutations(map(str, numbers)):
        for o1, o2 in itertools.product("+-*/", repeat=2):
            for text in (f"{a}{o1}{b}{o2}{c}", f"({a}{o1}{b}){o2}{c}", f"{a}{o1}({b}{o2}{c})"):
                value = parse_expression(text).value
                if value is not None and (value not in best or (len(text), text) < (len(best[value]), best[value])):
                    best[value] = text
    return best


@pytest.mark.parametrize("numbers", [(3, 5, 7), (1, 1, 2), (2, 6, 9), (10, 10, 10), (4, 7, 8)])
def test_solver_finds_every_value_and_the_canonical_shortest_text(numbers):
    assert solve(numbers) == brute_force_shortest(numbers)


@pytest.mark.parametrize("numbers", [(4, 9), (25, 50, 75, 100), (1, 3, 4, 6)])
def test_solver_expressions_use_the_numbers_and_reach_their_values(numbers):
    for value, text in solve(numbers).items():
        expr = parse_expression(text)
        assert expr.value == value and sorted(expr.numbers) == sorted(numbers)


# ------------------------------------------------------------------ the task
@pytest.mark.parametrize(
    "answer, correct, valid, error",
    [
        ("3*5+7", 1, 1, 0.0),
        ("7+3*5", 1, 1, 0.0),
        ("(3+5)*7", 0, 1, 1.0),
        ("3*7-5", 0, 1, 6 / 22),
        ("3*5", 0, 0, 1.0),
        ("3*5+7+0", 0, 0, 1.0),
        ("22", 0, 0, 1.0),
        ("3*5+7*1", 0, 0, 1.0),
        (None, 0, 0, 1.0),
    ],
)
def test_verifier_and_row_metrics_by_hand(task, answer, correct, valid, error):
    meta = {"numbers": [3, 5, 7], "target": 22}
    assert task.verify(answer, "3*5+7", meta) == correct
    rows = task.row_metrics([answer], ["3*5+7"], [meta])
    assert rows["correct"] == [correct] and rows["valid_expression"] == [valid]
    assert rows["relative_error"] == [pytest.approx(error)]


def test_division_by_zero_is_not_valid(task):
    meta = {"numbers": [3, 3, 7], "target": 7}
    assert task.parse("7/(3-3)") == "7/(3-3)"  # well formed ...
    assert task.row_metrics(["7/(3-3)"], ["7"], [meta])["valid_expression"] == [0.0]  # ... but no value


def test_formats(task):
    assert task.parse(" 3 * 5 + 7 ") == "3*5+7"
    assert task.parse("3 * x") is None
    tags = Countdown(CountdownConfig(n_train=5, n_eval=2, answer_format="tags"))
    assert tags.parse("think... <answer> 3*5+7 </answer>") == "3*5+7"
    assert tags.parse("3*5+7") is None
    assert tags.train[0].prompt.endswith("<answer></answer> tags.") and tags.train[0].demonstration.startswith(
        "<answer>"
    )
    assert task.train[0].prompt.endswith(f"->{task.train[0].meta['target']}:")


@pytest.mark.parametrize(
    "reply, expression",
    [
        ("3 * 5 + 7 = 22", "3*5+7"),
        ("We get 3 * 5 + 7 = 22.", "3*5+7"),  # the longest expression before the last '='
        ("First 3 * 5 = 15.\nThen 15 + 7 = 22", "15+7"),  # the last line's: not the given numbers, so wrong
        ("The answer is (7 - 5) * 3.", "(7-5)*3"),
        ("**Answer:** 3*5+7 = 22", "3*5+7"),
        ("so \\boxed{3*5+7}", "3*5+7"),
        ("\\boxed{3*5+7 = 22}", "3*5+7"),
        ("3*5+7", "3*5+7"),
        ("13 + 9 = 22", "13+9"),  # a number is never split: 13 stays 13
        ("x" * 200_000 + " 3 * 5 + 7 = 22", "3*5+7"),  # a long line: only its last MAX_CHARS are tried
        ("I cannot do this.", None),
        ("", None),
    ],
)
def test_the_instruct_format_reads_the_expression_as_an_instruct_model_states_it(reply, expression):
    task = Countdown(CountdownConfig(n_train=5, n_eval=2, answer_format="instruct"))
    assert task.parse(reply) == expression
    assert task.train[0].prompt.endswith("Answer with the expression only.")
    assert all(task.parse(e.demonstration) == e.reference for e in task.train + task.eval)
    assert task.verify(task.parse("3 * 5 + 7 = 22"), "3*5+7", {"numbers": [3, 5, 7], "target": 22}) == 1.0


def test_references_and_demonstrations_are_correct(task):
    for e in task.train + task.eval:
        assert task.parse(e.demonstration) == e.reference
        assert task.verify(e.reference, e.reference, e.meta) == 1.0
        assert task.cfg.target_min <= e.meta["target"] <= task.cfg.target_max
        assert len(e.meta["numbers"]) == 3 and all(1 <= n <= 10 for n in e.meta["numbers"])


def problem_keys(examples):
    return {(tuple(sorted(e.meta["numbers"])), e.meta["target"]) for e in examples}


def test_train_and_eval_are_disjoint_and_distinct(task):
    train, held_out = problem_keys(task.train), problem_keys(task.eval)
    assert len(train) == len(task.train) == 300 and len(held_out) == len(task.eval) == 40
    assert not train & held_out


def test_reproducible_from_data_seed():
    assert countdown_problems(SMALL) == countdown_problems(SMALL)
    other = CountdownConfig(n_train=300, n_eval=40, data_seed=1)
    assert countdown_problems(other) != countdown_problems(SMALL)


def test_sampled_generation_for_large_spaces():
    """4 numbers in 1..50 is too many multisets to enumerate: problems are sampled."""
    cfg = CountdownConfig(n_numbers=4, number_max=50, target_max=500, n_train=12, n_eval=4, data_seed=3)
    first = Countdown(cfg)
    assert [e.prompt for e in first.train] == [e.prompt for e in Countdown(cfg).train]
    assert not problem_keys(first.train) & problem_keys(first.eval)
    assert all(first.verify(e.reference, e.reference, e.meta) == 1.0 for e in first.train + first.eval)


@pytest.mark.parametrize(
    "change, message",
    [
        (dict(n_numbers=6), "n_numbers"),
        (dict(number_min=0), "number_min"),
        (dict(target_min=9, target_max=1), "target_min"),
        (dict(n_eval=0), "n_eval"),
        (dict(n_train=5000), "lower n_train"),
    ],
)
def test_bad_configs_say_what_to_change(change, message):
    with pytest.raises(ValueError, match=message):
        countdown_problems(CountdownConfig(**{**vars(SMALL), **change}))
