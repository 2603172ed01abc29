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
