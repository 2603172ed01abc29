"""Multiplication: examples, parser, verifier, metrics (hand cases and properties)."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rewardzoo.tasks.checks.formats import extract_answer
from rewardzoo.tasks.multiplication import Multiplication, MultiplicationConfig, relative_error


def test_examples_are_products_disjoint_and_reproducible():
    task = Multiplication(MultiplicationConfig(n_eval=50))
    assert len(task.train) == 810 - 50  # every 2-digit × 1-digit pair, minus the eval split
    for e in task.train[:20] + task.eval[:20]:
        a, b = e.meta["a"], e.meta["b"]
        assert 10 <= a <= 99 and 1 <= b <= 9
        assert e.prompt == f"{a}*{b}=" and e.reference == str(a * b) == e.demonstration
    assert not {e.prompt for e in task.train} & {e.prompt for e in task.eval}
    again = Multiplication(MultiplicationConfig(n_eval=50))
    assert [e.prompt for e in again.eval] == [e.prompt for e in task.eval]
    other = Multiplication(MultiplicationConfig(n_eval=50, data_seed=1))
    assert [e.prompt for e in other.eval] != [e.prompt for e in task.eval]


def test_large_digit_counts_sample_without_repeats():
    task = Multiplication(MultiplicationConfig(digits_a=4, digits_b=4, n_train=300, n_eval=30))
    prompts = [e.prompt for e in task.train + task.eval]
    assert len(prompts) == len(set(prompts)) == 330


def test_scratchpad_demonstrations():
    """47*6 → 42+240=282 (units then tens partial product); a zero digit is skipped."""
    task = Multiplication(MultiplicationConfig(scratchpad=True))
    assert task._example(47, 6).demonstration == "42+240=282"
    assert task._example(40, 7).demonstration == "280=280"
    assert task.parse("42+240=282") == "282"
    assert task.verify(task.parse("42+240=282"), "282", {}) == 1.0


def test_parser_and_verifier():
    task = Multiplication(MultiplicationConfig())
    assert task.parse(" 84 ") == "84"
    assert task.parse("084") == "84"
    assert task.parse("8 4") is None and task.parse("") is None and task.parse("x") is None
    assert (
        task.verify("84", "84", {}) == 1.0 and task.verify("85", "84", {}) == 0.0 and task.verify(None, "84", {}) == 0.0
    )
    tags = Multiplication(MultiplicationConfig(answer_format="tags"))
    assert tags.parse("so <answer>84</answer>") == "84"
    assert tags.parse("84") is None
    assert tags.train[0].demonstration.startswith("<answer>")


def test_relative_error_hand_cases():
    assert relative_error("90", "100") == pytest.approx(0.1)
    assert relative_error("300", "100") == 1.0  # clipped
    assert relative_error(None, "100") == 1.0
    assert relative_error("5", "0") == 1.0 and relative_error("0", "0") == 0.0


def test_evaluate_reports_accuracy_format_and_relative_error():
    task = Multiplication(MultiplicationConfig(n_eval=4))
    ex = task.eval
    completions = [ex[0].reference, str(int(ex[1].reference) + 1), "oops", ex[3].reference]
    metrics = task.evaluate(completions, ex)
    assert metrics["accuracy"] == 0.5 and metrics["format_rate"] == 0.75
    expected = (0 + relative_error(completions[1], ex[1].reference) + 1 + 0) / 4
    assert metrics["relative_error"] == pytest.approx(expected)


def test_bad_settings_are_clear():
    with pytest.raises(ValueError, match=r"task.multiplication.digits_a must be in \[1, 1000\]; got 0"):
        Multiplication(MultiplicationConfig(digits_a=0))
    with pytest.raises(ValueError, match="only 81 distinct pairs exist for 1×1 digits; lower n_eval"):
        Multiplication(MultiplicationConfig(digits_a=1, digits_b=1, n_eval=100))


def test_tagged_extraction_is_linear_on_hostile_input():
    import time

    text = "<answer>" * 50_000 + "1</answer>"
    t0 = time.perf_counter()
    assert extract_answer(text, "tags") == "1"
    assert time.perf_counter() - t0 < 0.5


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_parse_and_verify_never_raise(text):
    for task in (
        Multiplication(MultiplicationConfig(n_eval=5)),
        Multiplication(MultiplicationConfig(n_eval=5, answer_format="tags")),
    ):
        answer = task.parse(text)
        assert answer is None or answer.lstrip("-").isdigit()
        assert task.verify(answer, "84", {}) in (0.0, 1.0)
