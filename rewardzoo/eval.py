"""Evaluation and diagnostics: pure functions of numbers that any layer may use.

Nothing here imports the rest of rewardzoo; the trainer, the benchmarks and the leaderboard call
these on what the task's exact checker and the reward returned.

    pearson(x, y)                 correlation of two [N] tensors (0 when either is constant)
    auc(positive, negative)       ROC AUC: P(a positive scores above a negative), ties counting ½
    pairwise_auc(s, y, same)      AUC of a score for binary labels over the pairs ``same`` allows
                                  (all pairs: the global AUC; pairs of one group: the within-group AUC)
    batch_analysis(rows, signals, valid, groups)
                                  train/<m> means of a batch's row metrics; over the valid rows, the
                                  correlation of every reward signal with each (analysis/corr/<signal>/<m>)
                                  and its global and within-group AUC for correctness
    mean_ci(values)               mean of per-seed values with a t-interval over seeds
    seed_ci(effect, *tables)      the interval every verdict uses: a per-seed effect of [seeds × examples]
                                  (or [seeds]) tables — each seed's difference, ratio or win rate —
                                  with a t-interval over seeds (the seed is the independent unit)
    bootstrap_ci(stat, *scores)   a statistic of [seeds × examples] score tables with a paired
                                  two-level percentile bootstrap (descriptive only: too narrow at 3–5 seeds)
    detectable_difference(sd, n)  smallest paired difference n seeds detect (α, power)

A verdict's statistics (benchmarks/audits/interval_coverage.py measures which of them keeps its promised error on the
boards' own per-seed effects; docs/metrics.md states the rule that follows):

    one_sided_p(margins, above)   the t-test a verdict's interval inverts at the claim's threshold
    fieller_ci(a, b)              ā / b̄ of paired per-seed values with Fieller's interval (the t-test of a − θb)
    ratio_bootstrap_t(a, b)       ā / b̄ with a studentized bootstrap interval over seeds
    hodges_lehmann_ci(values)     the Hodges–Lehmann centre with the Wilcoxon signed-rank interval
    signed_rank_p(values, above)  the exact one-sided signed-rank p-value that interval inverts
    trimmed_mean_ci(values)       the 20%-trimmed mean with Yuen's interval
    sign_flip_ci(values)          the mean with the interval that inverts the sign-flip permutation test
    seed_bootstrap_ci(values)     the mean with a percentile / basic / BCa bootstrap over seeds (scipy)
    holm(p), fixed_sequence(p)    a family's adjusted p-values: Holm's step-down, or tested in a declared order
    leave_one_out_flips(decide, *tables)
                                  how many seeds' removal changes a verdict
    collapse_count(values, below) how many seeds of a row ended below a declared end-point

Writing diagnostics (RcRL paper, §5.3 and App. A.4) and pairwise evaluation:

    entropy_ratio(series)         final / initial mean of a per-step series (policy/entropy)
    ngram_repetition(tokens, n)   share of a text's n-grams that repeat an earlier one
    non_english_rate(tokens, lex) share of word tokens that are not English
    preferences(a, b)             per-example verdicts of a judge comparing two scores (1 / ½ / 0)
    bradley_terry(wins)           Bradley–Terry strengths from a soft win-count matrix (choix)
    elo(wins, anchor)             Bradley–Terry Elo ratings with one player anchored at 1000

Every comparison the project prints goes through :func:`mean_ci`, :func:`seed_ci` or
:func:`bootstrap_ci` and is shown with its 95% interval (:class:`Estimate`): a t-interval as
mean ± half-width (:meth:`Estimate.format`) or as mean [low, high] (:meth:`Estimate.bounds`);
:meth:`Estimate.separates` says whether two intervals do not overlap.

**The seed is the unit of every verdict.**  Seeds differ by more than their held-out examples'
sampling noise (the RL trajectory, not the evaluation, varies), so an interval for a claim must
treat each seed's effect as one draw: :func:`seed_ci` takes each seed's mean over its held-out
examples (paired on the seed: a difference, a ratio, a win rate over the seed's prompts), then a
Student-t interval over seeds.  The two-level percentile bootstrap of :func:`bootstrap_ci`
resamples seeds and examples; with 3–5 seeds it cannot see beyond the seeds drawn, and on the
boards' design (seeds × 1000 held-out Bernoulli examples, a between-seed effect SD estimated from
the committed board) it covers the truth far less often than 95% where the t-interval over seeds
covers it at its nominal rate — ``benchmarks/interval_coverage.py`` measures both, and
``tests/test_eval.py`` fails when the verdicts' interval covers below 93%.  The bootstrap stays for
descriptive intervals of a single run's pooled examples, never for a verdict.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import choix
import numpy as np
import torch
from scipy import stats as scipy_stats

ELO_ANCHOR = 1000.0  # the base model's rating (RcRL paper, Table 2: "baseline anchored at 1000")
ELO_SCALE = 400.0 / math.log(10.0)  # Elo points per unit of Bradley–Terry strength (natural log odds)


def pearson(x: torch.Tensor, y: torch.Tensor) -> float:
    """Pearson correlation of two [N] tensors (0 when either is constant).

    >>> pearson(torch.tensor([1., 2., 3.]), torch.tensor([2., 4., 7.]))  # doctest: +ELLIPSIS
    0.99...
    """
    x, y = x.double() - x.double().mean(), y.double() - y.double().mean()  # [N] each
    denom = float(x.norm() * y.norm())
    return float((x * y).sum()) / denom if denom > 0 else 0.0


def pairwise_auc(scores: torch.Tensor, labels: torch.Tensor, same: torch.Tensor | None = None) -> float:
    """P(score of a positive > score of a negative) + ½ P(tie) over the (positive, negative) pairs that
    ``same`` [N, N] allows (None: every pair, the Mann–Whitney AUC); NaN when no pair is allowed.

    With ``same[i, j]`` = "rows i and j answer one prompt" this is the *within-group* AUC: how well the
    score ranks right above wrong among one prompt's rollouts — the only comparison GRPO's group-relative
    advantages act on — pooled over the batch's groups, each weighted by its number of pairs.

    >>> s, y = torch.tensor([0.9, 0.4, 0.6, 0.1]), torch.tensor([1., 0., 1., 0.])
    >>> pairwise_auc(s, y), pairwise_auc(s, y, torch.tensor([0, 0, 1, 1])[:, None] == torch.tensor([0, 0, 1, 1]))
    (1.0, 1.0)
    """
    s, y = scores.double(), labels.bool()  # [N] each
    pairs = y[:, None] & ~y[None, :]  # [N, N]: i positive, j negative
    if same is not None:
        pairs = pairs & same
    n = int(pairs.sum())
    if n == 0:
        return math.nan
    wins = (s[:, None] > s[None, :]).double() + 0.5 * (s[:, None] == s[None, :]).double()  # [N, N]
    return float((wins * pairs).sum()) / n


def auc(
    positive: Sequence[float] | torch.Tensor | np.ndarray, negative: Sequence[float] | torch.Tensor | np.ndarray
) -> float:
    """Area under the ROC curve of a score that should be higher on ``positive`` rows than on
    ``negative`` ones: P(s⁺ > s⁻) + ½·P(s⁺ = s⁻) over all pairs — :func:`pairwise_auc` of the two sides
    pooled.  NaN when either side is empty.

    >>> auc([0.9, 0.4], [0.4, 0.1, 0.2])  # pairs won: 3 + (½ + 1 + 1) of 6
    0.9166666666666666
    """
    pos = torch.as_tensor(np.asarray(positive, dtype=np.float64).ravel())  # [n+]
    neg = torch.as_tensor(np.asarray(negative, dtype=np.float64).ravel())  # [n-]
    return pairwise_auc(torch.cat([pos, neg]), torch.cat([torch.ones_like(pos), torch.zeros_like(neg)]))


def batch_analysis(
    rows: dict[str, list[float]],
    signals: dict[str, torch.Tensor],
    valid: Sequence[bool] | None = None,
    groups: torch.Tensor | None = None,
) -> dict[str, float]:
    """Diagnostics of one training batch from the task's exact checker, computed outside the reward.

    ``rows`` are the task's per-row metrics (``correct`` plus extras such as ``relative_error``);
    ``signals`` are [N] tensors the reward produced (the reward itself and its components); ``valid``
    [N] says which rows hold a well-formed answer (None: all) and ``groups`` [N] which rows share a
    prompt.  Returns

    - ``train/<m>``: the mean of each row metric over all rows (``correct`` reported as ``accuracy``);
    - ``analysis/corr/<signal>/<m>``: the Pearson correlation over the **valid rows only** (RAL paper, Figure
      2's judge-score correlations when the signal is a judge probability).  A signal such as RAL's
      judge probability is not defined on a malformed answer (the reward sets it to 0, and the row is
      wrong too), so counting those rows would report the format's correlation with correctness as
      the judge's;
    - ``analysis/auc/<signal>/correct`` and ``analysis/auc_within/<signal>/correct``
      (:func:`pairwise_auc`, over the valid rows): the global AUC and the within-group AUC (pairs of
      rows of one prompt only), each left out when no pair of a right and a wrong valid answer exists.
    """
    metrics = {f"train/{'accuracy' if k == 'correct' else k}": sum(v) / len(v) for k, v in rows.items()}
    n = len(next(iter(rows.values()), []))
    keep = torch.ones(n, dtype=torch.bool) if valid is None else torch.tensor(list(valid), dtype=torch.bool)  # [N]
    table = {k: torch.tensor(v, dtype=torch.float64)[keep] for k, v in rows.items()}  # each [V]
    same = None if groups is None else groups[keep][:, None] == groups[keep][None, :]  # [V, V]
    for name, signal in signals.items():
        s = signal.detach().float().cpu()[keep]  # [V]
        for key, values in table.items():
            metrics[f"analysis/corr/{name}/{key}"] = pearson(s, values)
        if "correct" in table:
            for prefix, allowed in (("auc", None), ("auc_within", same)):
                auc = pairwise_auc(s, table["correct"], allowed)
                if math.isfinite(auc):
                    metrics[f"analysis/{prefix}/{name}/correct"] = auc
    return metrics


@dataclass(frozen=True)
class Estimate:
    """A mean with its confidence interval [low, high] at ``level`` from ``n`` seeds."""

    mean: float
    low: float
    high: float
    n: int
    level: float = 0.95

    @property
    def half_width(self) -> float:
        """Half the interval's width (the ± of :meth:`format`)."""
        return (self.high - self.low) / 2

    def separates(self, other: Estimate) -> bool:
        """Whether the two intervals do not overlap."""
        return self.low > other.high or other.low > self.high

    def format(self, scale: float = 1.0, digits: int = 1, sign: bool = False) -> str:
        """``mean ± half-width`` (times ``scale``, e.g. 100 for points), ``n/a`` when undefined."""
        if not math.isfinite(self.mean):
            return "n/a"
        mean = f"{self.mean * scale:+.{digits}f}" if sign else f"{self.mean * scale:.{digits}f}"
        if not math.isfinite(self.half_width):
            return f"{mean} (n={self.n})"
        return f"{mean} ± {self.half_width * scale:.{digits}f}"

    def bounds(self, scale: float = 1.0, digits: int = 1, sign: bool = False) -> str:
        """``mean [low, high]`` (times ``scale``), ``n/a`` when undefined: the form for an interval that need not
        be symmetric about its mean (a bootstrap's)."""
        if not math.isfinite(self.mean):
            return "n/a"
        f = f"{{:{'+' if sign else ''}.{digits}f}}".format
        return f"{f(self.mean * scale)} [{f(self.low * scale)}, {f(self.high * scale)}]"

    def __str__(self) -> str:
        return self.format(digits=3)


def mean_ci(values: Sequence[float], level: float = 0.95) -> Estimate:
    """Mean of per-seed values with the Student-t interval over seeds (infinite for one seed).

    >>> e = mean_ci([1.0, 2.0, 3.0]); (e.mean, round(e.half_width, 3))
    (2.0, 2.484)
    """
    x = np.asarray(values, dtype=np.float64)  # [S]
    n = int(x.size)
    if n == 0:
        return Estimate(math.nan, math.nan, math.nan, 0, level)
    mean = float(x.mean())
    if n == 1:
        return Estimate(mean, -math.inf, math.inf, 1, level)
    half = float(scipy_stats.t.ppf(0.5 + level / 2, n - 1) * x.std(ddof=1) / math.sqrt(n))
    return Estimate(mean, mean - half, mean + half, n, level)


def seed_ci(effect: Callable[..., float], *tables: Sequence[float] | np.ndarray, level: float = 0.95) -> Estimate:
    """``effect`` of each seed's rows, with the Student-t interval over seeds (:func:`mean_ci` of the per-seed
    effects): the interval every verdict and positive control uses.

    Each table is [S, E] (S seeds, E held-out examples, the same seeds in every table and, within a seed,
    the same examples) or [S] (one value per seed, e.g. a final metric from the board's CSV).  For each
    seed s, ``effect`` gets the tables' rows ``t[s]`` ([E] arrays, or 0-d arrays for [S] tables) and returns
    a float: ``lambda a, b: a.mean() - b.mean()`` (a paired difference),
    :func:`gain_ratio` (a ratio of gains),
    ``lambda a, b: preferences(a, b).mean()`` (a win rate over the seed's prompts).  A seed whose effect is
    not finite (a ratio over a zero gain) is dropped, and the interval is over the seeds left (``n``).

    >>> a = np.array([[1, 1, 0, 1], [1, 0, 1, 1], [0, 0, 1, 1.]]); b = np.zeros((3, 4))
    >>> e = seed_ci(lambda a, b: a.mean() - b.mean(), a, b)  # per-seed 0.75, 0.75, 0.5
    >>> round(e.mean, 4), round(e.half_width, 4)  # mean 2/3, sd 0.1443, t(0.975, 2) = 4.3027
    (0.6667, 0.3586)
    """
    arrays = [np.asarray(t, dtype=np.float64) for t in tables]  # each [S, E] or [S]
    if not arrays:
        raise ValueError("seed_ci needs at least one table of per-seed values or [seeds × examples] rows")
    S = arrays[0].shape[0] if arrays[0].ndim else 0
    if any(t.ndim not in (1, 2) or t.shape[0] != S for t in arrays):
        raise ValueError(
            f"seed_ci needs [seeds] or [seeds × examples] tables with one number of seeds; got "
            f"{[t.shape for t in arrays]}"
        )
    per_seed = np.array([float(effect(*(t[s] for t in arrays))) for s in range(S)])  # [S]
    return mean_ci(per_seed[np.isfinite(per_seed)], level)


def gain_ratio(
    base_start: Sequence[float] | np.ndarray,
    base_end: Sequence[float] | np.ndarray,
    arm_start: Sequence[float] | np.ndarray,
    arm_end: Sequence[float] | np.ndarray,
) -> float:
    """One seed's ratio of gains: the arm's mean gain over its start divided by the base's (e.g. RAL's held-out
    gain over RLVR's); NaN unless the base gained, so :func:`seed_ci` drops that seed.

    >>> round(gain_ratio([0.3, 0.3], [0.5, 0.7], [0.3, 0.3], [0.4, 0.4]), 4)  # RAL gains 0.1 where RLVR gains 0.3
    0.3333
    >>> gain_ratio([0.3], [0.3], [0.3], [0.5])
    nan
    """
    base = float(np.mean(base_end) - np.mean(base_start))
    return float((np.mean(arm_end) - np.mean(arm_start)) / base) if base > 0 else math.nan


def bootstrap_ci(
    stat: Callable[..., float], *scores: np.ndarray, level: float = 0.95, n_boot: int = 2000, seed: int = 0
) -> Estimate:
    """``stat(*tables)`` with a paired two-level percentile bootstrap interval (descriptive; a verdict uses
    :func:`seed_ci`, since this interval is too narrow at 3–5 seeds).

    Each table is a [S, E] array of per-example scores (S seeds, E held-out examples; the same
    seeds and examples in every table).  Each replicate draws S seed indices and E example indices
    with replacement and evaluates ``stat`` on every table indexed by both.  ``stat`` receives the
    resampled tables and returns a float, e.g. ``lambda a, b: a.mean() - b.mean()``.

    >>> a = np.array([[1, 1, 0, 1], [1, 0, 1, 1.]]); b = np.zeros((2, 4))
    >>> bootstrap_ci(lambda a, b: a.mean() - b.mean(), a, b).mean
    0.75
    """
    tables = [np.asarray(t, dtype=np.float64) for t in scores]  # each [S, E]
    S, E = tables[0].shape
    if any(t.shape != (S, E) for t in tables):
        raise ValueError(f"bootstrap_ci needs tables of one shape; got {[t.shape for t in tables]}")
    rng = np.random.default_rng(seed)
    rows = rng.integers(0, S, size=(n_boot, S))  # [B, S]
    cols = rng.integers(0, E, size=(n_boot, E))  # [B, E]
    reps = np.array([stat(*(t[r][:, c] for t in tables)) for r, c in zip(rows, cols)])  # [B]
    reps = reps[np.isfinite(reps)]
    point = float(stat(*tables))
    if reps.size == 0:
        return Estimate(point, math.nan, math.nan, S, level)
    low, high = np.quantile(reps, [0.5 - level / 2, 0.5 + level / 2])
    return Estimate(point, float(low), float(high), S, level)


def detectable_difference(sd: float, n: int, alpha: float = 0.05, power: float = 0.8) -> float:
    """Smallest true mean difference a paired two-sided t-test over ``n`` seeds detects with the given
    power, when the per-seed difference has standard deviation ``sd`` (noncentral t, exact).

    >>> round(detectable_difference(1.0, 5), 2)
    1.68
    """
    if n < 2 or not sd > 0:
        return math.inf if n < 2 else 0.0
    df = n - 1
    t_crit = scipy_stats.t.ppf(1 - alpha / 2, df)

    def achieved(effect: float) -> float:  # power of the test at a standardised effect
        nc = effect * math.sqrt(n)
        return scipy_stats.nct.sf(t_crit, df, nc) + scipy_stats.nct.cdf(-t_crit, df, nc)

    lo, hi = 0.0, 1.0
    while achieved(hi) < power:
        hi *= 2
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if achieved(mid) < power else (lo, mid)
    return hi * sd


# ------------------------------------------------------------------------ a verdict's statistics
def one_sided_p(margins: Sequence[float] | np.ndarray, above: bool = True) -> float:
    """The one-sided Student-t p-value that the mean of the per-seed ``margins`` lies above 0 (``above``) or below
    it: the test a verdict's t-interval (or Fieller's interval, on ``a − θ·b``) inverts at the claim's threshold
    (``scipy.stats.ttest_1samp``).  NaN from fewer than two seeds or a zero spread.

    >>> round(one_sided_p([1.0, 2.0, 3.0]), 4)  # t = 2 / (1 / √3) = 3.4641 on 2 df
    0.0371
    """
    x = np.asarray(margins, dtype=np.float64)  # [S]
    if x.size < 2 or not np.ptp(x) > 0:
        return math.nan
    return float(scipy_stats.ttest_1samp(x, 0.0, alternative="greater" if above else "less").pvalue)


def _ratio_of_means(
    name: str, numerator: Sequence[float] | np.ndarray, denominator: Sequence[float] | np.ndarray, level: float
) -> tuple[np.ndarray, np.ndarray, float, Estimate | None]:
    """The paired seeds' arrays a, b [S], ā / b̄, and the estimate a ratio interval returns without computing one:
    NaN for no seeds or b̄ = 0, (−∞, ∞) around ā / b̄ for one seed; ``None`` when an interval is to be computed."""
    a, b = np.asarray(numerator, dtype=np.float64), np.asarray(denominator, dtype=np.float64)  # [S] each
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"{name} needs two [seeds] arrays of one length; got {a.shape} and {b.shape}")
    if a.size == 0 or b.mean() == 0:
        return a, b, math.nan, Estimate(math.nan, math.nan, math.nan, a.size, level)
    ratio = float(a.mean() / b.mean())
    if a.size < 2:
        return a, b, ratio, Estimate(ratio, -math.inf, math.inf, a.size, level)
    return a, b, ratio, None


def fieller_ci(
    numerator: Sequence[float] | np.ndarray, denominator: Sequence[float] | np.ndarray, level: float = 0.95
) -> Estimate:
    """The ratio of two paired per-seed means ā / b̄ (e.g. RAL's mean gain over RLVR's) with Fieller's interval.

    Fieller's interval is every R at which the t-test of the per-seed margins ``a − R·b`` keeps "mean 0": with
    v₁₁, v₂₂, v₁₂ the variances and covariance of the means (sample moments over n seeds, divided by n) and t the
    Student quantile on n − 1 df, (ā − R b̄)² ≤ t² (v₁₁ − 2R v₁₂ + R² v₂₂), i.e. the quadratic

        (b̄² − t² v₂₂) R² − 2 (ā b̄ − t² v₁₂) R + (ā² − t² v₁₁) ≤ 0.

    When b̄² > t² v₂₂ (the denominator's mean is beyond 0 at the level) its two roots bound the interval; otherwise
    the set is unbounded and the interval is returned as (−∞, ∞).  So the interval excludes a threshold θ exactly
    when :func:`one_sided_p` of ``a − θ·b`` is below (1 − level) / 2 on that side: a verdict at θ is a paired
    t-test of ``a − θ·b``, whatever the skew of the per-seed ratios a/b.

    >>> e = fieller_ci([5.0, 5.5, 6.0], [10.0, 11.0, 12.0]); e.mean, round(e.low, 9), round(e.high, 9)  # a = b/2
    (0.5, 0.5, 0.5)
    >>> fieller_ci([1.0, 2.0, 3.0], [2.0, 4.0, 6.0]).low  # b̄² = 16 < t² v₂₂ = 4.3027² · 4/3 = 24.7: unbounded
    -inf
    """
    a, b, ratio, degenerate = _ratio_of_means("fieller_ci", numerator, denominator, level)  # [S], [S]
    if degenerate is not None:
        return degenerate
    n = a.size
    cov = np.cov(a, b, ddof=1) / n  # [2, 2]: the means' variances and covariance
    t2 = float(scipy_stats.t.ppf(0.5 + level / 2, n - 1)) ** 2
    qa = b.mean() ** 2 - t2 * cov[1, 1]
    qb = a.mean() * b.mean() - t2 * cov[0, 1]
    qc = a.mean() ** 2 - t2 * cov[0, 0]
    if qa <= 0:
        return Estimate(ratio, -math.inf, math.inf, n, level)
    root = math.sqrt(max(float(qb * qb - qa * qc), 0.0))
    return Estimate(ratio, float((qb - root) / qa), float((qb + root) / qa), n, level)


def ratio_bootstrap_t(
    numerator: Sequence[float] | np.ndarray,
    denominator: Sequence[float] | np.ndarray,
    level: float = 0.95,
    n_boot: int = 2000,
    seed: int = 0,
) -> Estimate:
    """ā / b̄ with a studentized bootstrap (bootstrap-t) interval over seeds: each replicate resamples the seeds'
    pairs (a_s, b_s), and t* = (R* − R̂) / se*, with the delta-method standard error of a ratio of means
    se² = Σ(a − R b)² / ((n − 1)·n·b̄²); the interval is [R̂ − t*₁₋α/₂·se, R̂ − t*α/₂·se].  Replicates whose se* is 0
    or whose b̄* is 0 are dropped; (−∞, ∞) when fewer than two seeds or no replicate is left.  (scipy's
    ``bootstrap`` has no studentized method.)

    >>> e = ratio_bootstrap_t([1.0, 2.1, 2.9, 4.2], [2.0, 4.0, 6.0, 8.0]); e.mean, e.low < 0.5 < e.high
    (0.51, True)
    """
    a, b, ratio, degenerate = _ratio_of_means("ratio_bootstrap_t", numerator, denominator, level)  # [S], [S]
    if degenerate is not None:
        return degenerate
    n = a.size
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, size=(n_boot, n))  # [B, S]
    ra, rb = a[idx], b[idx]  # [B, S] each
    with np.errstate(divide="ignore", invalid="ignore"):
        r_star = ra.mean(axis=1) / rb.mean(axis=1)  # [B]
        se_star = _ratio_se(ra, rb, r_star)  # [B]
        t_star = (r_star - ratio) / se_star  # [B]
    t_star = t_star[np.isfinite(t_star)]
    se = float(_ratio_se(a[None], b[None], np.array([ratio]))[0])
    if t_star.size == 0 or not se > 0:
        return Estimate(ratio, -math.inf, math.inf, n, level)
    q_low, q_high = np.quantile(t_star, [0.5 - level / 2, 0.5 + level / 2])
    return Estimate(ratio, ratio - float(q_high) * se, ratio - float(q_low) * se, n, level)


def _ratio_se(a: np.ndarray, b: np.ndarray, ratio: np.ndarray) -> np.ndarray:
    """[B] delta-method standard errors of the ratio of means of each row of [B, S] pairs ``a``, ``b``."""
    n = a.shape[1]
    resid = a - ratio[:, None] * b  # [B, S]
    return np.sqrt((resid**2).sum(axis=1) / ((n - 1) * n)) / np.abs(b.mean(axis=1))  # [B]


def signed_rank_null(n: int) -> np.ndarray:
    """[n(n+1)/2 + 1] the exact null distribution of the Wilcoxon signed-rank statistic T⁺ over n untied values:
    P(T⁺ = k) = (number of subsets of {1, …, n} summing to k) / 2ⁿ, counted by the subset-sum recursion.

    >>> (signed_rank_null(3) * 8).tolist()  # subsets of {1, 2, 3}: sums 0, 1, 2, 3, 3, 4, 5, 6
    [1.0, 1.0, 1.0, 2.0, 1.0, 1.0, 1.0]
    """
    counts = np.zeros(n * (n + 1) // 2 + 1)  # [M + 1]
    counts[0] = 1.0
    for r in range(1, n + 1):
        counts[r:] = counts[r:] + counts[:-r].copy()
    return counts / 2.0**n


def hodges_lehmann_ci(values: Sequence[float] | np.ndarray, level: float = 0.95) -> Estimate:
    """The Hodges–Lehmann estimate of the per-seed values' centre (the median of the n(n+1)/2 Walsh averages
    (x_i + x_j)/2, i ≤ j) with the Wilcoxon signed-rank interval [w₍ₖ₎, w₍ₘ₋ₖ₊₁₎] of the sorted Walsh averages, k
    the largest with P(T⁺ ≤ k − 1) ≤ (1 − level)/2 (:func:`signed_rank_null`; ties are not corrected).  The
    interval's estimand is the pseudo-median, which is the mean for a symmetric distribution.  No such k exists
    below 6 seeds at 95% (P(T⁺ = 0) = 2⁻ⁿ > 2.5%): the interval is then (−∞, ∞) — the signed-rank test cannot
    decide from 5 seeds.

    >>> e = hodges_lehmann_ci([1.0, 2.0, 3.0, 4.0, 5.0, 100.0]); e.mean, e.low, e.high  # k = 1: [min, max]
    (3.5, 1.0, 100.0)
    """
    x = np.sort(np.asarray(values, dtype=np.float64))  # [S]
    n = x.size
    if n == 0:
        return Estimate(math.nan, math.nan, math.nan, 0, level)
    i, j = np.triu_indices(n)
    walsh = np.sort((x[i] + x[j]) / 2)  # [M]
    centre = float(np.median(walsh))
    k = int(np.searchsorted(np.cumsum(signed_rank_null(n)), (1 - level) / 2, side="right"))
    if k < 1:
        return Estimate(centre, -math.inf, math.inf, n, level)
    return Estimate(centre, float(walsh[k - 1]), float(walsh[walsh.size - k]), n, level)


def signed_rank_p(values: Sequence[float] | np.ndarray, above: bool = True) -> float:
    """The exact one-sided signed-rank p-value that the per-seed values' centre lies above 0 (``above``) or below it,
    counted on the Walsh averages so that it agrees with :func:`hodges_lehmann_ci` by construction: T = the number of
    Walsh averages beyond 0 on that side, p = P(T⁺ ≥ T) under :func:`signed_rank_null` (for untied values without a
    zero, scipy's exact ``wilcoxon`` p-value).  The interval lies above 0 exactly when this p-value (``above``) is at
    most (1 − level)/2.  NaN for no values.

    >>> signed_rank_p([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])  # every Walsh average above 0: P(T⁺ = 21) = 1/64
    0.015625
    """
    x = np.asarray(values, dtype=np.float64)  # [S]
    n = x.size
    if n == 0:
        return math.nan
    i, j = np.triu_indices(n)
    walsh = (x[i] + x[j]) / 2  # [M]
    beyond = int(np.sum(walsh > 0 if above else walsh < 0))
    return float(signed_rank_null(n)[beyond:].sum())


def trimmed_mean_ci(values: Sequence[float] | np.ndarray, proportion: float = 0.2, level: float = 0.95) -> Estimate:
    """The ``proportion``-trimmed mean of per-seed values with Yuen's interval (Tukey–McLaughlin): g = ⌊proportion·n⌋
    seeds cut from each end (as ``scipy.stats.trim_mean`` cuts), h = n − 2g left; the winsorized values (each cut
    seed set to the nearest kept one) give s_w², the standard error is √((n − 1)·s_w² / (h·(h − 1))) and the
    quantile is Student's on h − 1 df.  With g = 0 (3 or 4 seeds at 20%) this is the t-interval.  (scipy has the
    trimmed statistic but no one-sample trimmed interval that truncates the cut count.)

    >>> e = trimmed_mean_ci([1.0, 2.0, 3.0, 4.0, 90.0]); e.mean  # 20% of 5: the 1 and the 90 are cut
    3.0
    """
    x = np.sort(np.asarray(values, dtype=np.float64))  # [S]
    if not 0 <= proportion < 0.5:
        raise ValueError(f"a trimmed mean cuts a proportion in [0, 0.5) from each end; got {proportion}")
    n = x.size
    g = int(math.floor(proportion * n + 1e-9))
    h = n - 2 * g
    if h < 2:
        return Estimate(float(x.mean()) if n else math.nan, -math.inf, math.inf, n, level)
    centre = float(x[g : n - g].mean())
    winsorized = np.clip(x, x[g], x[n - g - 1])  # [S]
    se = math.sqrt((n - 1) * winsorized.var(ddof=1) / (h * (h - 1)))
    half = float(scipy_stats.t.ppf(0.5 + level / 2, h - 1)) * se
    return Estimate(centre, centre - half, centre + half, n, level)


EXACT_FLIPS = 16
"""Up to this many seeds :func:`sign_flip_ci` enumerates every sign pattern; above, it draws ``n_flips`` of them."""


def sign_flip_ci(
    values: Sequence[float] | np.ndarray, level: float = 0.95, n_flips: int = 9999, seed: int = 0
) -> Estimate:
    """The mean of per-seed values with the interval that inverts the sign-flip permutation test (valid for any
    distribution symmetric about its mean).

    The one-sided test of "mean ≤ d" flips the signs of the centred values x − d; a flip of the subset F reaches
    the observed sum exactly when mean_F(x) ≤ d, so its p-value is (1 + #{F ≠ ∅ : mean_F(x) ≤ d}) / 2ⁿ and the
    interval's bounds are order statistics of the subset means (Hartigan 1969): the j-th smallest and the j-th
    largest, j = ⌊(1 − level)/2 · 2ⁿ⌋.  Every subset is enumerated up to :data:`EXACT_FLIPS` seeds; above, ``n_flips``
    random subsets stand for them (2ⁿ → n_flips + 1).  j = 0 (fewer than 6 seeds at 95%): (−∞, ∞).

    >>> e = sign_flip_ci([1.0, 2.0, 3.0, 4.0, 5.0, 6.0]); e.mean, e.low, e.high  # 64 patterns, j = 1: the extremes
    (3.5, 1.0, 6.0)
    """
    x = np.asarray(values, dtype=np.float64)  # [S]
    n = x.size
    if n == 0:
        return Estimate(math.nan, math.nan, math.nan, 0, level)
    if n <= EXACT_FLIPS:
        subsets = (np.arange(1, 2**n)[:, None] >> np.arange(n)[None, :]) & 1  # [2ⁿ − 1, S]
        patterns = 2**n
    else:
        subsets = np.random.default_rng(seed).integers(0, 2, size=(n_flips, n))  # [P, S]
        subsets = subsets[subsets.any(axis=1)]
        patterns = n_flips + 1
    means = np.sort((subsets @ x) / subsets.sum(axis=1))  # [P]
    j = int(math.floor((1 - level) / 2 * patterns + 1e-9))
    if j < 1:
        return Estimate(float(x.mean()), -math.inf, math.inf, n, level)
    return Estimate(float(x.mean()), float(means[j - 1]), float(means[means.size - j]), n, level)


def seed_bootstrap_ci(
    values: Sequence[float] | np.ndarray,
    method: str = "percentile",
    level: float = 0.95,
    n_boot: int = 2000,
    seed: int = 0,
) -> Estimate:
    """The mean of per-seed values with a one-level bootstrap interval over seeds (``scipy.stats.bootstrap``,
    ``method`` ``percentile``, ``basic`` or ``BCa``).  The percentile method is the interval the boards once used
    (over seeds × examples, :func:`bootstrap_ci`); ``benchmarks/audits/interval_coverage.py`` shows it
    under-covering at 3 seeds, so it never decides a verdict.  (−∞, ∞) from one seed or a zero spread.

    >>> e = seed_bootstrap_ci([1.0, 2.0, 3.0]); e.mean, 1.0 <= e.low < e.high <= 3.0
    (2.0, True)
    """
    x = np.asarray(values, dtype=np.float64)  # [S]
    if method not in ("percentile", "basic", "BCa"):
        raise ValueError(f"seed_bootstrap_ci's method is percentile, basic or BCa; got {method!r}")
    if x.size < 2 or not np.ptp(x) > 0:
        return Estimate(float(x.mean()) if x.size else math.nan, -math.inf, math.inf, x.size, level)
    res = scipy_stats.bootstrap(
        (x,), np.mean, n_resamples=n_boot, confidence_level=level, method=method, rng=np.random.default_rng(seed)
    )
    low, high = res.confidence_interval
    if not (math.isfinite(low) and math.isfinite(high)):
        return Estimate(float(x.mean()), -math.inf, math.inf, x.size, level)
    return Estimate(float(x.mean()), float(low), float(high), x.size, level)


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values of one family (in the order given): sort ascending, multiply the i-th
    smallest (from 0) by (m − i), carry the running maximum, cap at 1.  A claim is decided at α when its adjusted
    p-value is ≤ α; this controls the chance of any false decision in the family at α.  A NaN p-value (a claim
    with no test) counts in m and is returned as NaN.

    >>> holm([0.01, 0.04, 0.03])  # sorted 0.01, 0.03, 0.04 → 0.03, 0.06, 0.06
    [0.03, 0.06, 0.06]
    """
    p = np.asarray(p_values, dtype=np.float64)  # [m]
    m = p.size
    order = np.argsort(np.where(np.isnan(p), np.inf, p), kind="stable")
    adjusted = np.empty(m)
    running = 0.0
    for i, k in enumerate(order):
        running = max(running, min(1.0, (m - i) * p[k])) if np.isfinite(p[k]) else running
        adjusted[k] = running if np.isfinite(p[k]) else math.nan
    return [round(float(v), 12) for v in adjusted]


def fixed_sequence(p_values: Sequence[float]) -> list[float]:
    """Adjusted p-values of a family tested in a declared order (the fixed-sequence procedure): each claim is tested
    at the full α only if every claim before it was decided, so its adjusted p-value is the running maximum of the
    p-values up to it.  A NaN (a claim with no test) stops the sequence: it and every claim after it read NaN.

    >>> fixed_sequence([0.01, 0.04, 0.03, 0.2])
    [0.01, 0.04, 0.04, 0.2]
    """
    adjusted, running = [], 0.0
    for p in p_values:
        running = max(running, float(p)) if math.isfinite(running) and math.isfinite(p) else math.nan
        adjusted.append(running)
    return adjusted


def leave_one_out_flips(decide: Callable[..., str], *tables: Sequence[float] | np.ndarray) -> int:
    """How many seeds' removal changes ``decide``'s word: ``decide(*tables)`` on every table ([S] or [S, …], the
    seed first), then on the tables without seed s for each s.  A decided verdict that one seed's removal flips is
    fragile.

    >>> word = lambda x: "up" if mean_ci(x).low > 0 else "undecided"
    >>> leave_one_out_flips(word, [1.0, 1.1, 0.9, 1.2]), leave_one_out_flips(word, [0.5, 0.6, 0.1, 0.7, 0.05])
    (0, 3)
    """
    arrays = [np.asarray(t, dtype=np.float64) for t in tables]  # each [S, …]
    if not arrays or any(t.ndim == 0 or t.shape[0] != arrays[0].shape[0] for t in arrays):
        raise ValueError(f"leave_one_out_flips needs tables with the seed first; got {[t.shape for t in arrays]}")
    whole = decide(*arrays)
    n = arrays[0].shape[0]
    return sum(decide(*(np.delete(t, s, axis=0) for t in arrays)) != whole for s in range(n))


def collapse_count(values: Sequence[float] | np.ndarray, below: float) -> int:
    """How many seeds of a row ended below ``below`` on the declared end-point (e.g. final held-out accuracy
    below 10%: the run collapsed).

    >>> collapse_count([0.27, 0.02, 0.31, 0.0], below=0.10)
    2
    """
    return int(np.sum(np.asarray(values, dtype=np.float64) < below))


# ------------------------------------------------------------------------ writing diagnostics
def entropy_ratio(series: Sequence[float], window: int = 5) -> float:
    """Mean of the last ``window`` values over the mean of the first ``window`` (the RcRL paper §5.3's ratio of
    final to initial entropy; near 1 = preserved, below 1 = collapsing).  NaN when the start is 0.

    >>> entropy_ratio([2.0, 2.0, 1.5, 1.0, 1.0], window=2)
    0.5
    """
    x = np.asarray(series, dtype=np.float64)  # [steps]
    if x.size == 0 or window < 1:
        raise ValueError(
            f"entropy_ratio needs a non-empty series and window >= 1; got {x.size} values, window {window}"
        )
    start, end = x[:window].mean(), x[-window:].mean()
    return float(end / start) if start != 0 else math.nan


def ngram_repetition(tokens: Sequence[str], n: int = 2) -> float:
    """Share of the n-grams of one text that already occurred earlier in it (0 = no repeats; 0 when
    the text has fewer than n + 1 tokens).  Our definition; the RcRL paper, Table 5, uses Paech's score.

    >>> ngram_repetition("the cat the cat sat".split(), n=2)
    0.25
    """
    grams = [tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]
    if len(grams) < 2:
        return 0.0
    return 1.0 - len(set(grams)) / len(grams)


def non_english_rate(tokens: Sequence[str], lexicon: set[str] | frozenset[str] | None = None) -> float:
    """Share of word tokens that are not English: tokens with a letter outside ASCII (the RcRL paper, App. A.4's
    inserted 二十年) or, when a ``lexicon`` is given, tokens not in it (lowercased).  0 for no tokens.

    >>> non_english_rate(["for", "二十年", "years"]), non_english_rate(["the", "xqz"], {"the"})
    (0.3333333333333333, 0.5)
    """
    if not tokens:
        return 0.0

    def foreign(tok: str) -> bool:
        return any(ch.isalpha() and not ch.isascii() for ch in tok) or (
            lexicon is not None and tok.lower() not in lexicon
        )

    return sum(map(foreign, tokens)) / len(tokens)


# ------------------------------------------------------------------------ pairwise evaluation
def preferences(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray) -> np.ndarray:
    """Per-example verdicts of a judge that prefers the higher score: 1 where a > b, ½ where equal,
    0 where a < b.  Their mean is a's win rate against b (ties count half).

    >>> preferences([0.9, 0.5, 0.1], [0.5, 0.5, 0.5]).tolist()
    [1.0, 0.5, 0.0]
    """
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)  # [E] each
    return 0.5 * (np.sign(a - b) + 1.0)  # [E]


def bradley_terry(wins: np.ndarray, alpha: float = 0.0) -> np.ndarray:
    """Bradley–Terry strengths θ (P(i ≻ j) = σ(θ_i − θ_j), mean 0) from a soft win-count matrix:
    ``wins[i, j]`` = how often i beat j (fractions allowed: a tie adds ½ to both sides).  Maximum
    likelihood by choix's iterative Luce spectral ranking; ``alpha`` > 0 regularises (needed when a
    player won or lost every comparison, where the MLE is infinite).

    Two players with w wins and l losses: θ_0 − θ_1 = log(w / l) exactly.

    >>> theta = bradley_terry(np.array([[0.0, 3.0], [1.0, 0.0]])); round(float(theta[0] - theta[1]), 6)
    1.098612
    """
    w = np.asarray(wins, dtype=np.float64)  # [n, n]
    if w.ndim != 2 or w.shape[0] != w.shape[1] or (w < 0).any():
        raise ValueError(f"bradley_terry needs a square matrix of non-negative win counts; got shape {w.shape}")
    return np.asarray(choix.ilsr_pairwise_dense(w, alpha=alpha), dtype=np.float64)  # [n]


def elo(wins: np.ndarray, anchor: int = 0, alpha: float = 0.0) -> np.ndarray:
    """Elo ratings of the Bradley–Terry fit of ``wins`` with player ``anchor`` (the base model) at 1000:
    Elo_i = 1000 + (400 / ln 10)·(θ_i − θ_anchor).  Against the anchor alone, a win rate w gives
    1000 + 400·log10(w / (1 − w)).

    >>> elo(np.array([[0.0, 1.0], [3.0, 0.0]])).round(1).tolist()
    [1000.0, 1190.8]
    """
    theta = bradley_terry(wins, alpha)  # [n]
    return ELO_ANCHOR + ELO_SCALE * (theta - theta[anchor])  # [n]
