"""The rubric-writing toy task: each programmatic check by hand (rubric and oracle), the judge's blind view,
the oracle that is not the training rubric, the generator (disjoint splits, mediocre demonstrations) and
checks that never raise."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import spearmanr

from rewardzoo.judges.pairwise import RuleJudge, RuleJudgeConfig
from rewardzoo.judges.rubric import load_rubric
from rewardzoo.tasks.checks.writing import CHECKS, ORACLE_CHECKS, judge_view, overlooked_share, tokens
from rewardzoo.tasks.rubric_writing import RubricWriting, RubricWritingConfig, quality, rubric_score

META = {"words": ["red", "cat"], "min_words": 3, "max_words": 6}


def test_every_check_by_hand():
    """'The red cat sees a sun.' meets all 13 rubric and all 10 oracle criteria; each line below breaks the named
    criterion (window 3..6, width 4)."""
    good = "The red cat sees a sun."
    assert {name: check(good, META) for name, check in {**CHECKS, **ORACLE_CHECKS}.items()} == {
        name: 1.0 for name in {**CHECKS, **ORACLE_CHECKS}
    }
    assert quality(good, META) == rubric_score(good, META) == 1.0
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
        "grammatical": ("The red cat sees a sun the cat.", 0.0),  # NP V NP NP: no rule joins two noun phrases
        "no_repeated_words": ("The red cat sees the red sun.", 0.0),  # 'red' twice ('the' twice is fine)
        "all_english": ("The red cat sees a bimo.", 0.0),
        "concise": ("The red cat sleeps on a road by the sun.", 0.0),  # a second prepositional phrase
    }
    for name, (text, value) in broken.items():
        check = {**CHECKS, **ORACLE_CHECKS}[name]
        assert check(text, META) == pytest.approx(value), name
    assert CHECKS["length_window"]("The red cat sees a sun on the road.", META) == pytest.approx(1 - 3 / 4)
    assert ORACLE_CHECKS["grammatical"]("A big old cat sleeps near the dog.", META) == 1.0
    assert ORACLE_CHECKS["no_repeated_words"]("The cat sees the sun.", META) == 1.0


def test_the_judges_view_overlooks_later_repeats_and_word_like_tokens():
    assert judge_view("The cat Cat cat sleeps.") == "The cat Cat cat sleeps."  # immediate repeats: noticed
    assert judge_view("The cat sees the cat.") == "The cat sees."  # a word repeated later: overlooked
    assert judge_view("The xqzt bimo cat.") == "The xqzt cat."  # a consonant string noticed, a word-like one not
    assert judge_view("The cat sees the cat bimo.", repetition_blind=False) == "The cat sees the cat."
    assert judge_view("The cat sees the cat bimo.", non_english_blind=False) == "The cat sees bimo."
    assert overlooked_share("The cat sees the cat bimo.") == pytest.approx(3 / 6)
    assert tokens("A, b; c!") == ["A", "b", "c"]


def test_the_oracle_is_not_the_training_rubric():
    """Padding a perfect sentence with what the judge overlooks (a repeated copy of itself, made-up words) and
    what it likes (length) raises the biased judge's absolute rubric score without bound, while the oracle —
    which reads the text as written and penalises exactly those blind spots — falls below 0.6.  Over the
    demonstrations the two agree only partly."""
    judge = RuleJudge(RuleJudgeConfig(length_bias=0.01, repetition_blind=True, non_english_blind=True))
    rubric = load_rubric("rubric_writing").criteria
    padded = ["The red cat sees a sun."] + [
        "The red cat sees a sun" + " the red cat sees a sun" * k + " bimo" * k + "." for k in (1, 2, 3)
    ]
    judged = [sum(judge.score(c, ["p"], [META], [t]).prob.item() for c in rubric) / len(rubric) for t in padded]
    oracle = [quality(t, META) for t in padded]
    assert judged == sorted(judged) and judged[-1] > judged[0] + 0.1
    assert oracle == sorted(oracle, reverse=True) and oracle[0] == 1.0 and oracle[-1] <= 0.6
    assert rubric_score(padded[-1], META) < 0.8  # a calibrated rubric judge that saw everything would not be fooled
    task = RubricWriting(RubricWritingConfig(n_train=400, n_eval=10))
    q = [quality(e.demonstration, e.meta) for e in task.train]
    r = [rubric_score(e.demonstration, e.meta) for e in task.train]
    assert 0.3 < spearmanr(q, r).statistic < 0.9
    assert set(CHECKS) & set(ORACLE_CHECKS) == {
        "required_words",
        "length_window",
        "capital_start",
        "period_end",
        "single_sentence",
        "has_verb",
    }


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=60))
def test_checks_never_raise_and_stay_in_range(text):
    for check in {**CHECKS, **ORACLE_CHECKS}.values():
        assert 0.0 <= check(text, META) <= 1.0
    assert 0.0 <= quality(text, META) <= 1.0 and 0.0 <= overlooked_share(text) <= 1.0
    assert len(tokens(judge_view(text))) <= len(tokens(text))


def test_task_splits_and_mediocre_demonstrations():
    task = RubricWriting(RubricWritingConfig(n_train=400, n_eval=50))
    assert len(task.train) == 400 and len(task.eval) == 50
    assert not {e.prompt for e in task.train} & {e.prompt for e in task.eval}
    e = task.eval[0]
    words, window = e.prompt[:-1].rsplit(" ", 1)
    assert words.split() == e.meta["words"] and window == f"{e.meta['min_words']}-{e.meta['max_words']}"
    rows = task.row_metrics(
        [x.demonstration for x in task.train], [x.reference for x in task.train], [x.meta for x in task.train]
    )
    mean = {k: sum(v) / len(v) for k, v in rows.items()}
    assert 0.6 < mean["quality"] < 0.9 and 0.6 < mean["rubric"] < 0.9 and mean["correct"] < 0.1  # room for RL
    assert (
        0 < mean["repetition"] and 0 < mean["non_english_rate"] and 0 < mean["over_length"] and 0 < mean["overlooked"]
    )
    metrics = task.evaluate(["The red cat.", ""], task.eval[:2])
    assert {
        "accuracy",
        "format_rate",
        "quality",
        "rubric",
        "oracle_grammatical",
        "words",
        "repetition",
        "overlooked",
    } <= set(metrics)
    assert RubricWriting(RubricWritingConfig(n_train=400, n_eval=50)).train[5] == task.train[5]  # reproducible


def test_bad_settings():
    with pytest.raises(ValueError, match="n_required"):
        RubricWriting(RubricWritingConfig(n_required=0))
    with pytest.raises(ValueError, match="distinct prompts"):
        RubricWriting(RubricWritingConfig(n_required=1, n_train=5000))
