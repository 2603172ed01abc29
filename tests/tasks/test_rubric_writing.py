"""The rubric-writing toy task: each programmatic check by hand, the blind views, the oracle's quality,
the generator (disjoint splits, mediocre demonstrations) and checks that never raise."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rewardzoo.tasks.checks.writing import CHECKS, tokens, without_non_english, without_repeats
from rewardzoo.tasks.rubric_writing import RubricWriting, RubricWritingConfig, quality

META = {"words": ["red", "cat"], "min_words": 3, "max_words": 6}


def test_every_check_by_hand():
    """'The red cat sees a sun.' meets all 13; each line below breaks the named criterion (window 3..6, width 4)."""
    good = "The red cat sees a sun."
    assert {name: check(good, META) for name, check in CHECKS.items()} == {name: 1.0 for name in CHECKS}
    assert quality(good, META) == 1.0
    broken = {
        "required_words": ("The red dog sees a sun.", 0.5),
        "length_window": ("The red cat sees a sun on the old road.", 0.0),  # 10 words: 1 − 4/4
        "no_repeats": ("The red cat cat sees a sun.", 6 / 7),
        "english_words": ("The red xqz cat sees a sun.", 6 / 7),
        "capital_start": ("the red cat sees a sun.", 0.0),
        "period_end": ("The red cat sees a sun", 0.0),
        "single_sentence": ("The red. cat sees a sun.", 0.0),
        "required_order": ("The cat sees a red sun.", 0.0),
        "article_start": ("Red cat sees a sun.", 0.0),
        "has_verb": ("The red cat in a sun.", 0.0),
        "adjective_noun": ("The cat sees a sun red.", 0.0),
        "noun_end": ("The red cat sees.", 0.0),
        "lowercase_rest": ("The Red cat sees a sun.", 0.0),
    }
    for name, (text, value) in broken.items():
        assert CHECKS[name](text, META) == pytest.approx(value), name
    assert CHECKS["length_window"]("The red cat sees a sun on the road.", META) == pytest.approx(1 - 3 / 4)


def test_blind_views():
    assert without_repeats("The cat Cat cat sleeps.") == "The cat sleeps."
    assert without_non_english("The xqz red zzk cat.") == "The red cat."
    assert tokens("A, b; c!") == ["A", "b", "c"]


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=60))
def test_checks_never_raise_and_stay_in_range(text):
    for check in CHECKS.values():
        assert 0.0 <= check(text, META) <= 1.0
    assert 0.0 <= quality(text, META) <= 1.0 and without_repeats(text) is not None


def test_task_splits_and_mediocre_demonstrations():
    task = RubricWriting(RubricWritingConfig(n_train=400, n_eval=50))
    assert len(task.train) == 400 and len(task.eval) == 50
    assert not {e.prompt for e in task.train} & {e.prompt for e in task.eval}
    e = task.eval[0]
    words, window = e.prompt[:-1].rsplit(" ", 1)
    assert words.split() == e.meta["words"] and window == f"{e.meta['min_words']}-{e.meta['max_words']}"
    rows = task.row_metrics([x.demonstration for x in task.train], [x.reference for x in task.train],
                            [x.meta for x in task.train])
    mean = {k: sum(v) / len(v) for k, v in rows.items()}
    assert 0.6 < mean["quality"] < 0.9 and mean["correct"] < 0.05  # mediocre: room for RL
    assert 0 < mean["repetition"] and 0 < mean["non_english_rate"] and 0 < mean["over_length"]
    metrics = task.evaluate(["The red cat.", ""], task.eval[:2])
    assert {"accuracy", "format_rate", "quality", "oracle_required_words", "words", "repetition"} <= set(metrics)
    assert RubricWriting(RubricWritingConfig(n_train=400, n_eval=50)).train[5] == task.train[5]  # reproducible


def test_bad_settings():
    with pytest.raises(ValueError, match="n_required"):
        RubricWriting(RubricWritingConfig(n_required=0))
    with pytest.raises(ValueError, match="distinct prompts"):
        RubricWriting(RubricWritingConfig(n_required=1, n_train=5000))
