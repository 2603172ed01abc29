"""Rubrics: the shipped rubrics are the seed's tables, custom YAML loads (and fails clearly), the curriculum
only grows, weights sum to 1 with the newest at w_new, dropout is seeded, orderings are fixed permutations."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from rewardzoo.judges.rubric import SHIPPED, Criterion, Rubric, RubricSchedule, load_rubric
from rewardzoo.tasks.checks.writing import CHECKS


def test_shipped_rubrics_are_the_seed_tables():
    """004 Table 7 (creative writing, one criterion per 100 steps) and Table 8 (HealthBench, per 50 steps), 13 each."""
    cw, hb, toy = (load_rubric(n) for n in SHIPPED)
    assert (len(cw.criteria), cw.steps_per_criterion) == (13, 100)
    assert (len(hb.criteria), hb.steps_per_criterion) == (13, 50)
    assert cw.criteria[0].title == "Prompt Alignment" and cw.criteria[-1].title == "Originality & Unresolved Mystery"
    assert cw.criteria[4].title == "Show, Don't Tell" and "excessive exposition" in cw.criteria[4].description
    assert hb.criteria[0].title == "Factual Correctness" and hb.criteria[-1].title == "Clarity & Audience Calibration"
    assert [c.check for c in toy.criteria] == list(CHECKS)  # the toy rubric checks every programmatic criterion once


def test_custom_rubric_from_yaml(tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text(
        "name: mine\nsteps_per_criterion: 7\ncriteria:\n"
        "  - {name: short, description: 'Is it short?', check: length_window}\n"
        "  - {name: kind, description: 'Is it kind?', template: 'Kinder? {first} or {second}'}\n"
    )
    r = load_rubric(str(path))
    assert (r.name, r.steps_per_criterion, [c.name for c in r.criteria]) == ("mine", 7, ["short", "kind"])
    assert r.criteria[0].check_fn() is CHECKS["length_window"]
    with pytest.raises(ValueError, match="no programmatic check"):
        r.criteria[1].check_fn()


@pytest.mark.parametrize(
    "text, match",
    [
        ("criteria: []\n", "no criteria"),
        ("criteria:\n  - {name: a, description: x}\n  - {name: a, description: y}\n", "repeats criterion names"),
        ("criteria:\n  - {name: a, description: x, check: nope}\n", "unknown check 'nope'"),
        ("criteria:\n  - {name: a, descr: x}\n", "not a valid rubric"),
        ("crit: 1\n", "not a valid rubric"),
    ],
)
def test_bad_rubrics_fail_clearly(tmp_path, text, match):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(ValueError, match=match):
        load_rubric(str(path))
    with pytest.raises(FileNotFoundError, match="neither a shipped rubric"):
        load_rubric(str(tmp_path / "missing.yaml"))


def test_curriculum_by_hand():
    """K = 100, 13 criteria: step 0 → {0}; 99 → {0}; 100 → {0, 1}; 250 → {0, 1, 2}; 5000 → all 13.
    Newest weighting at step 250: criterion 2 gets ½, criteria 0 and 1 get ¼ each."""
    s = RubricSchedule(13, "curriculum", 100)
    assert [len(s.active(t)) for t in (0, 99, 100, 250, 1200, 5000)] == [1, 1, 2, 3, 13, 13]
    assert s.weights(250)[:4].tolist() == [0.25, 0.25, 0.5, 0.0]
    assert s.weights(0)[0] == 1.0
    assert torch.allclose(
        RubricSchedule(13, "curriculum", 100, weighting="uniform").weights(250)[:3],
        torch.full((3,), 1 / 3, dtype=torch.float64),
    )
    assert RubricSchedule(13, "all").active(0) == list(range(13))


@settings(max_examples=50, deadline=None)
@given(
    st.sampled_from(["curriculum", "all", "dropout"]),
    st.sampled_from(["newest", "uniform"]),
    st.integers(1, 20),
    st.floats(0.05, 1.0),
    st.integers(0, 3000),
    st.integers(1, 20),
)
def test_weights_sum_to_one_on_the_active_set(kind, weighting, K, w_new, step, C):
    s = RubricSchedule(C, kind, K, weighting, w_new, seed=3)
    w, active = s.weights(step), s.active(step)
    assert w.sum().item() == pytest.approx(1.0) and set(torch.nonzero(w).flatten().tolist()) <= set(active)
    if kind == "curriculum":
        assert set(s.active(step)) <= set(s.active(step + 1))  # the active set only grows


def test_dropout_is_seeded_and_never_empty():
    a, b = RubricSchedule(13, "dropout", seed=1), RubricSchedule(13, "dropout", seed=2)
    assert [a.active(t) for t in range(20)] == [a.active(t) for t in range(20)]
    assert [a.active(t) for t in range(20)] != [b.active(t) for t in range(20)]
    sizes = [len(RubricSchedule(13, "dropout", dropout_rate=0.99, seed=0).active(t)) for t in range(50)]
    assert min(sizes) == 1
    assert 4 < sum(len(a.active(t)) for t in range(200)) / 200 < 9  # about half of 13 kept


def test_orderings_are_fixed_random_permutations():
    cw = load_rubric("creative_writing")
    orders = [[c.name for c in cw.reordered(n).criteria] for n in (1, 2, 3)]
    assert cw.reordered(0) is cw and len({tuple(o) for o in orders}) == 3
    assert all(sorted(o) == sorted(c.name for c in cw.criteria) for o in orders)
    assert orders[0] == [c.name for c in load_rubric("creative_writing").reordered(1).criteria]


def test_bad_schedule_settings():
    with pytest.raises(ValueError, match="schedule must be one of"):
        RubricSchedule(3, "sometimes")
    with pytest.raises(ValueError, match="newest_weight"):
        RubricSchedule(3, newest_weight=0.0)
    with pytest.raises(ValueError, match="identifier name"):
        Rubric("r", (Criterion("has space", "d"),))
