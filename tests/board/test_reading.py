"""How a claim is read (rewardzoo/board/reading.py): margins by kind, the Hodges–Lehmann verdict, the companion,
Holm and fixed-sequence families, the fragile label, the robustness line and the one-look check — by hand."""

import math

import numpy as np
import pytest

from rewardzoo.board.reading import (
    MIN_SEEDS,
    adjust,
    bold,
    check_look,
    label,
    margins,
    over_claims,
    own_seed_error,
    read,
    robustness,
    word,
)
from rewardzoo.eval import Estimate


def test_margins_by_kind():
    """difference d − θ; ratio a − θ·b; win rate w − ½; a claim of "below" flips the sign."""
    assert margins("difference", (np.array([0.1, -0.2]),), 0.0).tolist() == [0.1, -0.2]
    assert margins("ratio", (np.array([3.0, 1.0]), np.array([4.0, 4.0])), 0.5).tolist() == [1.0, -1.0]
    assert margins("win rate", (np.array([0.75, 0.5]),), 0.5).tolist() == [0.25, 0.0]
    assert margins("difference", (np.array([0.1]),), 0.0, above=False).tolist() == [-0.1]
    with pytest.raises(ValueError, match="kind is one of"):
        margins("mean", (np.array([1.0]),), 0.0)
    with pytest.raises(ValueError, match="two \\[seeds\\] arrays"):
        margins("ratio", (np.array([1.0]),), 0.5)


def test_no_verdict_below_six_seeds():
    """Five seeds all above 0 still give no 95% signed-rank interval (2⁻⁵ = 3.1% > 2.5%): no verdict."""
    r = read("difference", (np.array([0.1, 0.2, 0.3, 0.4, 0.5]),), 0.0)
    assert r.word == f"no verdict (n = 5 seeds < {MIN_SEEDS})" and not r.decided
    assert (
        word(Estimate(1.0, 0.5, 1.5, 6), 6) == "reproduced" and word(Estimate(-1, -2, -0.5, 6), 6) == "not reproduced"
    )


def test_a_collapse_spreads_the_mean_but_not_the_typical_seed():
    """Eleven seeds at +1 to +4 points and one collapse at −40: the t-interval of the mean reaches below 0; the
    collapse holds the largest rank, 12 of T⁺'s 78, so T⁺ = 66 and the signed-rank verdict (the typical seed) reads
    reproduced — with the mean beside it."""
    d = np.array([0.02, 0.03, 0.01, 0.04, 0.02, 0.03, 0.02, 0.03, 0.01, 0.02, 0.04, -0.40])
    r = read("difference", (d,), 0.0)
    assert r.companion.low < 0 < r.estimate.low
    assert r.word == "reproduced"


def test_ratio_reads_the_margin_and_shows_fieller():
    """RAL gains a_s, RLVR gains b_s: the margin a − ½b; the companion is the ratio of mean gains (Fieller)."""
    a = np.array([0.05, 0.06, 0.04, 0.07, 0.05, 0.06, 0.05])
    b = np.array([0.08, 0.09, 0.08, 0.10, 0.09, 0.08, 0.09])
    r = read("ratio", (a, b), 0.5)
    assert r.companion.mean == pytest.approx(a.mean() / b.mean())
    assert np.allclose(r.margins, a - 0.5 * b) and r.word == "reproduced"


def test_holm_and_fixed_sequence_families():
    """Seven seeds all above 0: two-sided p = 2·2⁻⁷ = 0.0156 each. A family of 2 under Holm: ×2 = 0.031 ≤ 5%, both
    stand; of 4: ×4 = 0.0625, none stands.  A fixed sequence reads each at full α while the ones before it hold, so
    a first claim that fails stops the rest."""
    up = read("difference", (np.array([0.02, 0.03, 0.01, 0.04, 0.02, 0.05, 0.03]),), 0.0)
    flat = read("difference", (np.array([0.02, -0.03, 0.01, -0.04, 0.02, -0.05, 0.03]),), 0.0)
    assert up.p_value == pytest.approx(2 / 128)
    assert adjust([up, up]) == ["reproduced", "reproduced"]
    assert adjust([up] * 4) == ["undecided (adjusted)"] * 4
    assert adjust([up, up, up, up], "fixed sequence") == ["reproduced"] * 4
    assert adjust([flat, up], "fixed sequence") == ["undecided (CI)", "undecided (adjusted)"]
    with pytest.raises(ValueError, match="holm or fixed sequence"):
        adjust([up], "bonferroni")


def test_fragile_is_labelled_and_never_bold():
    """Exactly six seeds: leaving any one out leaves five, which give no verdict — every seed flips it."""
    r = read("difference", (np.array([0.02, 0.03, 0.01, 0.04, 0.02, 0.05]),), 0.0)
    assert r.word == "reproduced" and r.flips == 6
    shown = label(r.word, r.flips)
    assert shown == "reproduced (fragile)" and not bold(shown) and bold(label("reproduced", 0))


def test_robustness_line_names_the_companion_flips_and_collapses():
    r = read("ratio", (np.array([0.05, 0.06, 0.04, 0.07, 0.05, 0.06, 0.05]), np.full(7, 0.08)), 0.5)
    line = robustness(r, {"RAL": 1, "RLVR": 0})
    assert line.startswith("ratio of mean gains 0.68 [") and "(Fieller)" in line
    assert "of 7 seeds flip the verdict when left out" in line and line.endswith("RAL 1, RLVR 0")


def test_one_look_refuses_a_subset_without_interim():
    registered = range(12, 54)
    assert check_look(registered, registered, interim=False) == ""
    with pytest.raises(ValueError, match="pass --interim"):
        check_look(registered, range(12, 30), interim=False)
    assert check_look(registered, range(12, 30), interim=True).startswith("interim read: 18 of 42")
    with pytest.raises(ValueError, match="were not pre-registered"):
        check_look(registered, [11, 12], interim=True)
    assert math.isnan(read("difference", (np.array([]),), 0.0).p_value)


def test_own_seed_error_of_a_symmetric_claim_stays_within_its_promise():
    """Twelve margins symmetric about +2 points: drawn back from them shifted to 0, the interval errs about 2.5% a
    side or less, so the verdict is signed; an undecided reading never over-claims."""
    m = 0.02 + np.array([-0.03, -0.02, -0.015, -0.01, -0.005, 0.0, 0.0, 0.005, 0.01, 0.015, 0.02, 0.03])
    r = read("difference", (m,), 0.0)
    above, below = own_seed_error(r, reps=1000)
    assert above <= 0.035 and below <= 0.035 and not over_claims(r, reps=1000)
    flat = read("difference", (m - 0.02,), 0.0)
    assert flat.word == "undecided (CI)" and not over_claims(flat)
