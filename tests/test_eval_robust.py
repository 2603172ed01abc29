"""A verdict's statistics: Fieller's ratio interval, the studentized bootstrap, Hodges–Lehmann with its Wilcoxon
interval, the trimmed mean, the sign-flip interval, Holm and fixed-sequence adjustment, leave-one-seed-out flips and
the collapse count — hand-computed cases and the identities each interval inverts."""

import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy import stats as scipy_stats

from rewardzoo.eval import (
    collapse_count,
    fieller_ci,
    fixed_sequence,
    hodges_lehmann_ci,
    holm,
    leave_one_out_flips,
    mean_ci,
    one_sided_p,
    ratio_bootstrap_t,
    seed_bootstrap_ci,
    sign_flip_ci,
    signed_rank_null,
    signed_rank_p,
    trimmed_mean_ci,
)

ALPHA_HALF = 0.025
finite = st.floats(-10, 10, allow_nan=False, allow_infinity=False)


def test_one_sided_p_is_the_t_test():
    """margins 1, 2, 3: t = 2 / (1/√3) = 3.4641 on 2 df → P(T > 3.4641) = 0.0371; the other side is 1 − that."""
    assert one_sided_p([1.0, 2.0, 3.0]) == pytest.approx(0.03709, abs=1e-5)
    assert one_sided_p([1.0, 2.0, 3.0], above=False) == pytest.approx(1 - 0.03709, abs=1e-5)
    assert math.isnan(one_sided_p([1.0])) and math.isnan(one_sided_p([2.0, 2.0]))


def test_fieller_by_hand():
    """a = 1, 2, 4 and b = 2, 3, 4 over 3 seeds: ā = 7/3, b̄ = 3; var(a) = 7/3, var(b) = 1, cov = 3/2, each divided
    by n = 3; t² = 4.302653² = 18.5128.  Quadratic: qa = 9 − 18.5128/3 = 2.82907, qb = 7 − 18.5128·0.5 = −2.25640,
    qc = 49/9 − 18.5128·7/9 = −8.95440; roots (qb ± √(qb² − qa·qc)) / qa = −2.0136 and 0.4184."""
    e = fieller_ci([1.0, 2.0, 4.0], [2.0, 3.0, 4.0])
    assert e.mean == pytest.approx(7 / 9)
    qa, qb, qc = 9 - 18.512824 / 3, 7 - 18.512824 / 2, 49 / 9 - 18.512824 * 7 / 9
    root = math.sqrt(qb * qb - qa * qc)
    assert e.low == pytest.approx((qb - root) / qa, rel=1e-5) and e.high == pytest.approx((qb + root) / qa, rel=1e-5)


def test_fieller_is_unbounded_when_the_denominator_is_not_beyond_zero():
    """b = 1, −1, 2: b̄ = 2/3, its t-interval holds 0, so no bounded set of ratios is excluded."""
    e = fieller_ci([1.0, 2.0, 3.0], [1.0, -1.0, 2.0])
    assert e.low == -math.inf and e.high == math.inf
    with pytest.raises(ValueError, match="two \\[seeds\\] arrays"):
        fieller_ci([1.0, 2.0], [1.0])


@settings(max_examples=60, deadline=None)
@given(
    a=st.lists(finite, min_size=3, max_size=12),
    shift=st.floats(1.0, 10.0),
    theta=st.floats(-2.0, 2.0),
    seed=st.integers(0, 1000),
)
def test_fieller_excludes_a_threshold_exactly_when_the_t_test_of_the_margin_rejects(a, shift, theta, seed):
    """Fieller's interval is the inversion of the t-test of a − θ·b: θ lies below it ⇔ P(mean(a − θb) ≤ 0) < 2.5%."""
    a = np.array(a)
    b = shift + np.random.default_rng(seed).normal(0, 1, a.size)  # a denominator well beyond 0
    e = fieller_ci(a, b)
    assume(math.isfinite(e.low))
    margin = a - theta * b
    assume(np.ptp(margin) > 1e-9 and abs(e.low - theta) > 1e-6 and abs(e.high - theta) > 1e-6)
    assert (e.low > theta) == (one_sided_p(margin, above=True) < ALPHA_HALF)
    assert (e.high < theta) == (one_sided_p(margin, above=False) < ALPHA_HALF)


def test_ratio_bootstrap_t_contains_the_ratio_and_needs_two_seeds():
    """b ≈ 2a with small noise: the ratio of means is 0.51 and the interval holds it; one seed: unbounded."""
    e = ratio_bootstrap_t([1.0, 2.1, 2.9, 4.2], [2.0, 4.0, 6.0, 8.0])
    assert e.mean == pytest.approx(10.2 / 20) and e.low < e.mean < e.high
    one = ratio_bootstrap_t([1.0], [2.0])
    assert one.mean == 0.5 and one.low == -math.inf


def test_signed_rank_null_by_hand():
    """n = 4: the 16 subsets of {1, 2, 3, 4} give the sums 0..10 with counts 1 1 1 2 2 2 2 2 1 1 1."""
    assert (signed_rank_null(4) * 16).tolist() == [1, 1, 1, 2, 2, 2, 2, 2, 1, 1, 1]
    null = signed_rank_null(12)
    assert null.sum() == pytest.approx(1.0) and np.allclose(null, null[::-1])


def test_hodges_lehmann_by_hand():
    """x = 1..6, 100: 28 Walsh averages; P(T⁺ ≤ 2) = 3/128 = 0.023 ≤ 2.5% < P(T⁺ ≤ 3) = 5/128 → k = 3: the third
    smallest Walsh average 2 (after 1 and (1 + 2)/2) and the third largest (5 + 100)/2 = 52.5 (after 100 and 53); the
    median of the Walsh averages, the 14th and 15th of 28, is 4 (the outlier moves it by ½ where it moves the mean
    by 13.6)."""
    e = hodges_lehmann_ci([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 100.0])
    assert (e.mean, e.low, e.high) == (4.0, 2.0, 52.5)
    assert hodges_lehmann_ci([1.0, 2.0, 3.0, 4.0, 5.0]).low == -math.inf  # 2⁻⁵ = 3.1% > 2.5%: no 95% interval


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(-30, 30), min_size=6, max_size=14, unique=True))
def test_hodges_lehmann_excludes_zero_exactly_when_the_exact_signed_rank_test_rejects(ints):
    """x = k + ¼ (no zero, no tie in |x|, no Walsh average at 0): the interval lies above 0 ⇔ scipy's exact
    one-sided signed-rank p-value ≤ 2.5% (and below 0 ⇔ the other side's)."""
    x = np.array(ints, dtype=float) + 0.25
    e = hodges_lehmann_ci(x)
    up = scipy_stats.wilcoxon(x, alternative="greater", method="exact").pvalue
    down = scipy_stats.wilcoxon(x, alternative="less", method="exact").pvalue
    assert (e.low > 0) == (up <= ALPHA_HALF) and (e.high < 0) == (down <= ALPHA_HALF)
    assert signed_rank_p(x) == pytest.approx(up) and signed_rank_p(x, above=False) == pytest.approx(down)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(-4, 4), min_size=6, max_size=14))
def test_signed_rank_p_agrees_with_the_interval_even_with_ties(ints):
    """Counted on the Walsh averages, the p-value and the Hodges–Lehmann interval decide alike, ties and zeros
    included: the interval lies above 0 ⇔ p (above) ≤ 2.5%."""
    x = np.array(ints, dtype=float)
    e = hodges_lehmann_ci(x)
    assert (e.low > 0) == (signed_rank_p(x) <= ALPHA_HALF)
    assert (e.high < 0) == (signed_rank_p(x, above=False) <= ALPHA_HALF)


def test_trimmed_mean_by_hand():
    """x = 1, 2, 3, 4, 90 with 20% cut: g = 1, h = 3, trimmed mean of 2, 3, 4 = 3; winsorized 2, 2, 3, 4, 4
    (variance 1), se = √(4 · 1 / (3 · 2)) = 0.8165, t on 2 df 4.3027 → 3 ± 3.5131.  From 3 seeds nothing is cut: the
    t-interval."""
    e = trimmed_mean_ci([1.0, 2.0, 3.0, 4.0, 90.0])
    assert e.mean == 3.0 and e.half_width == pytest.approx(4.302653 * math.sqrt(4 / 6), rel=1e-5)
    t = mean_ci([1.0, 2.0, 7.0])
    assert trimmed_mean_ci([1.0, 2.0, 7.0]).low == pytest.approx(t.low)
    with pytest.raises(ValueError, match="proportion in \\[0, 0.5\\)"):
        trimmed_mean_ci([1.0, 2.0], proportion=0.5)


def test_sign_flip_by_hand():
    """x = 1..7: 128 patterns, j = ⌊0.025·128⌋ = 3: the third smallest subset mean is 1.5 ({1, 2}: the means in
    order 1, 1.5 ({1,2}), 2 ({2} and {1,3}) … → the third is 2); the third largest by symmetry 6."""
    e = sign_flip_ci([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0])
    assert (e.mean, e.low, e.high) == (4.0, 2.0, 6.0)
    assert sign_flip_ci([1.0, 2.0, 3.0, 4.0, 5.0]).low == -math.inf  # 32 patterns: j = 0


@settings(max_examples=40, deadline=None)
@given(st.lists(finite, min_size=6, max_size=10, unique=True))
def test_sign_flip_excludes_zero_exactly_when_the_permutation_test_rejects(x):
    """Against scipy's exact sign-flip test of the mean (``permutation_test``, one sample, ``samples``)."""
    x = np.array(x)
    res = scipy_stats.permutation_test(
        (x,), np.mean, permutation_type="samples", alternative="greater", n_resamples=np.inf
    )
    e = sign_flip_ci(x)
    assume(abs(e.low) > 1e-9)
    assert (e.low > 0) == (res.pvalue <= ALPHA_HALF)


def test_percentile_bootstrap_stays_inside_the_seeds_drawn():
    """From 3 seeds a percentile interval cannot reach beyond the smallest and largest seed: why it under-covers."""
    e = seed_bootstrap_ci([1.0, 2.0, 4.0])
    assert 1.0 <= e.low and e.high <= 4.0 and e.mean == pytest.approx(7 / 3)
    assert seed_bootstrap_ci([3.0, 3.0]).low == -math.inf
    with pytest.raises(ValueError, match="percentile, basic or BCa"):
        seed_bootstrap_ci([1.0, 2.0], method="studentized")


def test_holm_by_hand():
    """0.01, 0.04, 0.03 sorted 0.01, 0.03, 0.04 → ×3, ×2, ×1 = 0.03, 0.06, 0.04 → running max 0.03, 0.06, 0.06.
    The real board's two claims: p = 0.0495 and 0.4 → 0.099 and 0.4 (the judge claim is no longer decided)."""
    assert holm([0.01, 0.04, 0.03]) == [0.03, 0.06, 0.06]
    assert holm([0.0495, 0.4]) == [0.099, 0.4]
    assert holm([0.6, 0.9]) == [1.0, 1.0]
    adjusted = holm([0.02, math.nan])
    assert adjusted[0] == 0.04 and math.isnan(adjusted[1])


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(0, 1), min_size=1, max_size=8))
def test_holm_lies_between_the_raw_and_bonferroni(p):
    adjusted = holm(p)
    for raw, adj in zip(p, adjusted):
        assert raw - 1e-12 <= adj <= min(1.0, len(p) * raw) + 1e-12
    order = np.argsort(p, kind="stable")
    assert all(adjusted[i] <= adjusted[j] + 1e-12 for i, j in zip(order, order[1:]))


def test_fixed_sequence_by_hand():
    """In the declared order each claim is read at full α while the ones before it hold: 0.01, 0.04, 0.03, 0.2 →
    0.01, 0.04, 0.04, 0.2; a claim with no test stops the sequence."""
    assert fixed_sequence([0.01, 0.04, 0.03, 0.2]) == [0.01, 0.04, 0.04, 0.2]
    assert fixed_sequence([0.2, 0.01]) == [0.2, 0.2]
    out = fixed_sequence([0.01, math.nan, 0.01])
    assert out[0] == 0.01 and math.isnan(out[1]) and math.isnan(out[2])


def test_leave_one_out_flips_by_hand():
    """0.5, 0.6, 0.1, 0.7, 0.05: mean 0.39, t-interval [0.03, 0.75] above 0; dropping 0.5, 0.6 or 0.7 leaves an
    interval reaching below 0 (3 flips); dropping 0.1 or 0.05 keeps it above."""
    word = lambda x: "up" if mean_ci(x).low > 0 else "undecided"  # noqa: E731
    assert leave_one_out_flips(word, [0.5, 0.6, 0.1, 0.7, 0.05]) == 3
    assert leave_one_out_flips(word, [1.0, 1.1, 0.9, 1.2]) == 0
    paired = leave_one_out_flips(lambda a, b: word(a - b), [2.0, 3.1, 4.2, 5.0], [1.0, 2.0, 3.0, 4.0])
    assert paired == 0  # differences 1, 1.1, 1.2, 1: every three of them stay above 0
    with pytest.raises(ValueError, match="the seed first"):
        leave_one_out_flips(word, [1.0, 2.0], [1.0])


def test_collapse_count_counts_seeds_below_the_end_point():
    assert collapse_count([0.27, 0.02, 0.31, 0.0, 0.1], below=0.10) == 2
