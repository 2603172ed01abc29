"""Confidence intervals and power: hand-computed t-intervals, bootstrap pairing, detectable differences."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rewardzoo.eval import Estimate, auc, batch_analysis, bootstrap_ci, detectable_difference, mean_ci, pearson


def test_mean_ci_is_the_student_t_interval():
    """values 1, 2, 3: mean 2, sd 1, t_{0.975, 2} = 4.3027 → half-width 4.3027 / √3 = 2.4841."""
    e = mean_ci([1.0, 2.0, 3.0])
    assert e.mean == 2.0 and e.half_width == pytest.approx(4.302653 / math.sqrt(3), rel=1e-6)
    assert e.format() == "2.0 ± 2.5" and e.format(scale=10, sign=True) == "+20.0 ± 24.8"
    assert math.isinf(mean_ci([0.3]).half_width) and mean_ci([0.3]).format() == "0.3 (n=1)"
    assert mean_ci([]).format() == "n/a"


def test_auc_counts_pairs_won_with_ties_as_half():
    """positives 3, 1, 2 vs negatives 2, 0: pairs won 3>2, 3>0, 1>0, 2>0 = 4, the tie 2=2 is ½ → 4.5 / 6 = 0.75;
    a perfect ranking is 1, its reverse 0, an empty side NaN."""
    assert auc([3.0, 1.0, 2.0], [2.0, 0.0]) == 0.75
    assert auc([2.0, 3.0], [0.0, 1.0]) == 1.0 and auc([0.0], [1.0, 2.0]) == 0.0
    assert math.isnan(auc([], [1.0]))


@settings(max_examples=30, deadline=None)
@given(
    pos=st.lists(st.integers(-3, 3), min_size=1, max_size=8), neg=st.lists(st.integers(-3, 3), min_size=1, max_size=8)
)
def test_auc_equals_the_pair_count(pos, neg):
    wins = sum(float(p > n) + 0.5 * float(p == n) for p in pos for n in neg)
    assert auc(pos, neg) == pytest.approx(wins / (len(pos) * len(neg)))


def test_separates_only_when_intervals_do_not_overlap():
    assert Estimate(1, 0.9, 1.1, 5).separates(Estimate(0.5, 0.4, 0.6, 5))
    assert not Estimate(1, 0.5, 1.5, 5).separates(Estimate(0.5, 0.4, 0.6, 5))


def test_bootstrap_pairs_tables_on_seeds_and_examples():
    """b = a + 0.1 exactly: any paired resample gives a difference of exactly 0.1, so the interval is a point."""
    a = np.random.default_rng(0).random((5, 200))
    e = bootstrap_ci(lambda x, y: y.mean() - x.mean(), a, a + 0.1)
    assert e.mean == pytest.approx(0.1) and e.low == pytest.approx(0.1) and e.high == pytest.approx(0.1)
    unpaired = bootstrap_ci(lambda x: x.mean(), a)
    assert unpaired.low < a.mean() < unpaired.high and unpaired.half_width > 0.01
    with pytest.raises(ValueError, match="one shape"):
        bootstrap_ci(lambda x, y: 0.0, a, a[:, :10])


@settings(max_examples=25, deadline=None)
@given(st.integers(2, 6), st.integers(20, 200), st.floats(0.1, 0.9), st.integers(0, 10**6))
def test_bootstrap_interval_covers_the_point_estimate(seeds, examples, p, seed):
    table = (np.random.default_rng(seed).random((seeds, examples)) < p).astype(float)
    e = bootstrap_ci(lambda x: x.mean(), table, n_boot=300, seed=seed)
    assert e.low - 1e-12 <= e.mean <= e.high + 1e-12 and 0 <= e.low and e.high <= 1


def test_detectable_difference_matches_the_paired_t_test_tables():
    """Paired two-sided t-test, α = 0.05, power 0.8: standardised effects 1.68 (n=5), 3.26 (n=3), 0.53 (n=30);
    a Monte Carlo of 200,000 t-tests at these effects gave power 0.8015, 0.8002, 0.7991."""
    assert detectable_difference(1.0, 5) == pytest.approx(1.68, abs=0.01)
    assert detectable_difference(2.0, 3) == pytest.approx(2 * 3.264, abs=0.01)
    assert detectable_difference(1.0, 30) == pytest.approx(0.53, abs=0.01)
    assert math.isinf(detectable_difference(1.0, 1)) and detectable_difference(0.0, 5) == 0.0


def test_batch_analysis_reports_means_and_correlations():
    import torch

    rows = {"correct": [1.0, 0.0, 1.0, 0.0], "relative_error": [0.0, 0.5, 0.0, 1.0]}
    m = batch_analysis(rows, {"reward": torch.tensor([1.0, 0.0, 1.0, 0.0])})
    assert m["train/accuracy"] == 0.5 and m["train/relative_error"] == 0.375
    assert m["analysis/corr/reward/correct"] == pytest.approx(1.0)
    assert pearson(torch.ones(3), torch.tensor([1.0, 2.0, 3.0])) == 0.0


def test_batch_analysis_uses_valid_rows_only_with_a_within_group_auc():
    """Two prompts × 4 rollouts, one malformed answer in each (judge_prob 0, wrong: it would inflate a
    correlation over all rows).  Valid rows (judge_prob, correct): prompt 0 (.9, 1) (.6, 0) (.7, 1);
    prompt 1 (.8, 0) (.3, 1) (.2, 0).
    Global AUC over the 3 × 3 right/wrong pairs: .9 beats all 3, .7 beats .6 and .2, .3 beats .2 → 6/9.
    Within-group AUC: prompt 0 has 2 pairs, both won; prompt 1 has 2 pairs, one won → (2 + 1)/(2 + 2) = 3/4.
    Pearson over the valid rows: Σxy − n·x̄·ȳ = 1.9 − 6·(3.5/6)·½ = 0.15; Σ(x − x̄)² = 2.43 − 3.5²/6 = 0.38833;
    Σ(y − ȳ)² = 1.5 → r = 0.15 / √(0.38833 · 1.5) = 0.1965."""
    import torch

    prob = torch.tensor([0.9, 0.6, 0.0, 0.7, 0.8, 0.3, 0.0, 0.2])
    correct = [1.0, 0.0, 0.0, 1.0, 0.0, 1.0, 0.0, 0.0]
    valid = [True, True, False, True, True, True, False, True]
    groups = torch.tensor([0, 0, 0, 0, 1, 1, 1, 1])
    m = batch_analysis({"correct": correct}, {"judge_prob": prob}, valid=valid, groups=groups)
    assert m["train/accuracy"] == 3 / 8  # train/ means keep every row
    assert m["analysis/auc/judge_prob/correct"] == pytest.approx(6 / 9)
    assert m["analysis/auc_within/judge_prob/correct"] == pytest.approx(3 / 4)
    assert m["analysis/corr/judge_prob/correct"] == pytest.approx(0.15 / math.sqrt((2.43 - 3.5**2 / 6) * 1.5))
    everything = batch_analysis({"correct": correct}, {"judge_prob": prob})  # the old, misleading reading
    assert everything["analysis/corr/judge_prob/correct"] > m["analysis/corr/judge_prob/correct"] + 0.1
    # no right/wrong pair among the valid rows: the AUCs are left out, not logged as a number
    none = batch_analysis(
        {"correct": [1.0, 0.0]},
        {"judge_prob": torch.tensor([0.5, 0.0])},
        valid=[True, False],
        groups=torch.tensor([0, 0]),
    )
    assert not any(k.startswith("analysis/auc") for k in none)


def test_pairwise_auc_matches_mann_whitney():
    """The global AUC is the Mann–Whitney U over n₁·n₀ (scipy), ties counting half."""
    import torch
    from scipy.stats import mannwhitneyu

    from rewardzoo.eval import pairwise_auc

    rng = np.random.default_rng(0)
    s, y = rng.integers(0, 5, 40).astype(float), rng.random(40) < 0.4
    u = mannwhitneyu(s[y], s[~y]).statistic
    assert pairwise_auc(torch.tensor(s), torch.tensor(y)) == pytest.approx(u / (y.sum() * (~y).sum()))
    assert math.isnan(pairwise_auc(torch.tensor([0.3, 0.4]), torch.tensor([1.0, 1.0])))


# ------------------------------------------------------------------ writing diagnostics and pairwise evaluation
from rewardzoo.eval import bradley_terry, elo, entropy_ratio, ngram_repetition, non_english_rate, preferences  # noqa: E402


def test_entropy_ratio_and_repetition_by_hand():
    """Entropy 2, 2, 1, 1 with window 2: (1 + 1)/2 ÷ (2 + 2)/2 = 0.5.  'a b a b a': bigrams ab ba ab ba → 2 of 4 repeat."""
    assert entropy_ratio([2.0, 2.0, 1.0, 1.0], window=2) == 0.5
    assert math.isnan(entropy_ratio([0.0, 1.0], window=1))
    assert ngram_repetition("a b a b a".split(), n=2) == 0.5 and ngram_repetition(["a"], n=2) == 0.0
    assert ngram_repetition("a a a".split(), n=1) == pytest.approx(2 / 3)
    with pytest.raises(ValueError, match="non-empty series"):
        entropy_ratio([])


def test_non_english_rate():
    assert non_english_rate(["Clara", "covered", "二十年", "of", "oddities"]) == 0.2
    assert non_english_rate(["the", "xqz", "cat"], frozenset({"the", "cat"})) == pytest.approx(1 / 3)
    assert non_english_rate([]) == 0.0


def test_preferences_count_ties_half():
    assert preferences([1, 2, 3], [1, 1, 4]).tolist() == [0.5, 1.0, 0.0]


def test_bradley_terry_two_players_and_recovery():
    """Two players, 30 wins vs 10: θ_0 − θ_1 = log 3 and Elo 1000 + 400·log10(3) = 1190.85 (base anchored).
    Four players with strengths (0, 0.5, 1, 2) and expected win counts 1000·σ(θ_i − θ_j): the fit recovers them."""
    theta = bradley_terry(np.array([[0, 30.0], [10.0, 0]]))
    assert theta[0] - theta[1] == pytest.approx(math.log(3), abs=1e-6) and theta.sum() == pytest.approx(0, abs=1e-9)
    assert elo(np.array([[0, 10.0], [30.0, 0]]), anchor=0).tolist() == pytest.approx(
        [1000, 1000 + 400 * math.log10(3)], abs=1e-3
    )
    true = np.array([0.0, 0.5, 1.0, 2.0])
    wins = 1000 / (1 + np.exp(-(true[:, None] - true[None, :])))
    np.fill_diagonal(wins, 0)
    fit = bradley_terry(wins)
    assert (fit - fit[0]) == pytest.approx(true, abs=1e-4)
    assert np.isfinite(bradley_terry(np.array([[0, 5.0], [0.0, 0]]), alpha=0.1)).all()  # undefeated: finite with α
    with pytest.raises(ValueError, match="square matrix"):
        bradley_terry(np.zeros((2, 3)))


def test_bounds_print_an_asymmetric_interval_as_it_is():
    """A bootstrap interval need not be symmetric: ``bounds`` shows low and high, ``format`` the half-width."""
    e = Estimate(mean=-0.040, low=-0.070, high=-0.014, n=5)
    assert e.bounds(digits=3, sign=True) == "-0.040 [-0.070, -0.014]"
    assert e.bounds(scale=100) == "-4.0 [-7.0, -1.4]"
    assert e.format(digits=3) == "-0.040 ± 0.028"
    assert Estimate(math.nan, math.nan, math.nan, 0).bounds() == "n/a"


# ------------------------------------------------------------------ the verdicts' interval: the seed is the unit
def test_seed_ci_is_a_t_interval_over_per_seed_effects():
    """By hand: per-seed differences 0.75, 0.75, 0.5 → mean 2/3, sd 0.14434, t(0.975, 2) = 4.30265,
    half-width 4.30265 · 0.14434 / √3 = 0.35856."""
    from rewardzoo.eval import seed_ci

    a = np.array([[1, 1, 0, 1], [1, 0, 1, 1], [0, 0, 1, 1.0]])
    e = seed_ci(lambda x, y: x.mean() - y.mean(), a, np.zeros((3, 4)))
    assert (e.mean, e.n) == (pytest.approx(2 / 3), 3) and e.half_width == pytest.approx(0.35856, abs=1e-5)
    # a ratio of gains per seed, from [S] per-seed values: (0.4 − 0.3)/(0.5 − 0.3) = 0.5, 0.25, 0.75 → mean 0.5,
    # sd 0.25, half-width 4.30265 · 0.25 / √3 = 0.62104
    start, rlvr, ral = np.array([0.3, 0.3, 0.3]), np.array([0.5, 0.7, 0.5]), np.array([0.4, 0.4, 0.45])
    r = seed_ci(lambda s, x, y: (y - s) / (x - s), start, rlvr, ral)
    assert r.mean == pytest.approx(0.5) and r.half_width == pytest.approx(0.62104, abs=1e-5)
    # a win rate over each seed's prompts: seed 0 wins 2 of 2, seed 1 ties both (½), seed 2 loses both → 0.5 ± 1.242
    x, y = np.array([[2, 2], [1, 1], [0, 0.0]]), np.ones((3, 2))
    w = seed_ci(lambda p, q: preferences(p, q).mean(), x, y)
    assert w.mean == pytest.approx(0.5) and w.half_width == pytest.approx(4.30265 * 0.5 / math.sqrt(3), abs=1e-4)
    # a seed whose effect is undefined (zero gain) is dropped; one seed left gives an infinite interval
    one = seed_ci(lambda s, x: 1 / (x - s) if x != s else math.nan, np.array([0.3, 0.3]), np.array([0.3, 0.5]))
    assert one.n == 1 and math.isinf(one.half_width)
    with pytest.raises(ValueError, match="one number of seeds"):
        seed_ci(lambda x, y: 0.0, np.zeros((3, 4)), np.zeros((2, 4)))


def _coverage_module():
    from tests.helpers.scripts import load_script

    return load_script("benchmarks/interval_coverage.py")


def test_matrix_form_bootstrap_is_bootstrap_ci():
    """The simulation's vectorised bootstrap draws the interval bootstrap_ci draws (same resampling scheme):
    on one data set, the two sets of bounds agree within their Monte Carlo error."""
    ic = _coverage_module()
    rng = np.random.default_rng(3)
    rates = np.array([0.05, 0.12, 0.02])[:, None]
    a, b = (rng.random((3, 1000)) < 0.03).astype(float), (rng.random((3, 1000)) < rates).astype(float)
    ours = ic.percentile_bounds((b - a)[None], 4000, np.random.default_rng(0))[:, 0]
    theirs = bootstrap_ci(lambda x, y: y.mean() - x.mean(), a, b, n_boot=4000)
    assert ours == pytest.approx([theirs.low, theirs.high], abs=0.004)


def test_seed_interval_covers_on_the_boards_design():
    """2,000 simulated claims per design and seed count, on the committed boards' rates and between-seed SD
    (benchmarks/interval_coverage.py; per task the largest SD on the current board or the one the study first
    read): the verdicts' interval (t over seeds) covers ≥ 93% at 3 and 5 seeds; the percentile bootstrap over
    seeds × examples it replaced covers less on the low-rate design."""
    ic = _coverage_module()
    current = ic.ROOT / "benchmarks/results/leaderboard/leaderboard.csv"
    designs = ic.largest_per_task(ic.board_designs() + ic.board_designs(current))
    assert {d.name.split(":")[0] for d in designs} == {"multiplication", "hackable_multiplication"}
    assert all(d.tau > 0.03 for d in designs)  # as large as the board shows
    for d in designs:
        for seeds in (3, 5):
            boot, t = ic.coverage(d, seeds, sims=2000, boot=400, seed=seeds)
            assert t >= 0.93, f"{d.name}, {seeds} seeds: t-interval over seeds covers {t:.3f}"
            if d.p_a < 0.1:
                assert boot < 0.9, f"{d.name}, {seeds} seeds: the bootstrap covered {boot:.3f}"


def test_gain_ratio_is_the_arms_gain_over_the_bases_and_a_seed_without_a_base_gain_is_dropped():
    """Hand-computed: RLVR gains 0.5 and RAL 0.25 on seed 0 (ratio ½), RLVR 0.25 and RAL 0.25 on seed 1 (ratio 1);
    a seed where the base did not gain gives NaN, which seed_ci drops."""
    from rewardzoo.eval import gain_ratio, seed_ci

    assert gain_ratio([0.0, 0.0], [0.5, 0.5], [0.25, 0.25], [0.5, 0.5]) == 0.25 / 0.5
    assert math.isnan(gain_ratio([0.5], [0.5], [0.0], [1.0])) and math.isnan(gain_ratio([0.5], [0.25], [0.0], [1.0]))
    base_start, base_end = (
        np.array([[0.0, 0.0], [0.25, 0.25], [0.5, 0.5]]),
        np.array([[0.5, 0.5], [0.5, 0.5], [0.5, 0.5]]),
    )
    arm_start, arm_end = np.zeros((3, 2)), np.array([[0.25, 0.25], [0.25, 0.25], [1.0, 1.0]])
    e = seed_ci(gain_ratio, base_start, base_end, arm_start, arm_end)
    assert e.n == 2 and e.mean == 0.75
