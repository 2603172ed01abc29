"""How a claim is read: one rule for every board and study (docs/metrics.md, "How a verdict is read").

Every claim is a **per-seed margin** m_s, above 0 when seed s agrees with the claim:

- a difference claim (``difference``): the seed's effect less the threshold, d_s − θ;
- a ratio claim (``ratio``, e.g. "RAL reaches ½ of RLVR's gain"): the arm's gain less θ times the base's,
  a_s − θ·b_s (the ratio of mean gains is above θ exactly when the mean margin is above 0);
- a win-rate claim (``win rate``): the seed's win rate less ½.

The verdict reads the **Hodges–Lehmann** centre of the margins with its **Wilcoxon signed-rank** 95% interval
(:func:`rewardzoo.eval.hodges_lehmann_ci`): *reproduced* when the interval lies above 0 (in the claim's direction),
*not reproduced* when it lies below, else *undecided (CI)*.  ``benchmarks/audits/interval_coverage.py`` chose it:
on the committed boards' own per-seed effects (bimodal, skewed), resampled at 3, 5, 10 and 42 seeds, it is the
interval that breaks its one-sided 2.5% in the fewest cells (benchmarks/results/audits/interval_coverage.md); the
t-interval, Fieller's and the bootstraps break it in most.  Its
estimand is the typical seed's margin (the pseudo-median), not the mean: the mean with its t-interval (Fieller's for
a ratio) is printed beside it as the **companion**, and each row's collapse count says what the typical seed hides.
Below :data:`MIN_SEEDS` seeds no 95% signed-rank interval exists (2⁻ⁿ > 2.5%), so no verdict.

Beside every decided verdict (:func:`robustness`): the companion, how many seeds' removal flips the verdict
(:func:`rewardzoo.eval.leave_one_out_flips`), and each row's collapse count on the declared end-point
(:data:`COLLAPSE_BELOW`).  A decided verdict one seed's removal flips reads *reproduced (fragile)* (or *not
reproduced (fragile)*) and is never bolded (:func:`label`).  A decided verdict whose interval, drawn back from the
claim's own margins shifted to 0, errs on its decided side beyond its 2.5% is not signed (:func:`over_claims`).

A family of claims is read at the adjusted level (:func:`adjust`): Holm's step-down over the family, or the fixed
sequence where the family declares an order; the table shows both readings.  A positive control is a gate, never a
member of a family.  A board read on part of its pre-registered seeds is an *interim* read (:func:`check_look`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from rewardzoo.eval import (
    Estimate,
    fieller_ci,
    fixed_sequence,
    hodges_lehmann_ci,
    holm,
    leave_one_out_flips,
    mean_ci,
    signed_rank_p,
)

KINDS = ("difference", "ratio", "win rate")
"""The kinds of claim, each with its margin (the module's docstring)."""

MIN_SEEDS = 6
"""No verdict from fewer seeds: the signed-rank interval needs 2⁻ⁿ ≤ 2.5% to reach 95%."""

LEVEL = 0.95
ALPHA = 1 - LEVEL
"""Each verdict's two-sided level; each side of it errs at most α/2."""

COLLAPSE_BELOW = 0.10
"""The declared collapse end-point: a seed whose final held-out accuracy is below 10% collapsed."""

PROCEDURES = ("holm", "fixed sequence")
"""How a family's p-values are adjusted: Holm's step-down, or the fixed sequence of a declared order."""


def margins(kind: str, values: Sequence[np.ndarray], threshold: float, above: bool = True) -> np.ndarray:
    """[S] the per-seed margins of a claim (the module's docstring), signed so that > 0 agrees with it.

    ``values`` is ``(effects,)`` for a difference or a win rate and ``(arm gains, base gains)`` for a ratio.

    >>> margins("ratio", (np.array([0.04, 0.06]), np.array([0.08, 0.08])), 0.5).round(3).tolist()
    [0.0, 0.02]
    """
    if kind not in KINDS:
        raise ValueError(f"a claim's kind is one of {', '.join(KINDS)}; got {kind!r}")
    arrays = [np.asarray(v, dtype=np.float64) for v in values]  # each [S]
    wanted = "two [seeds] arrays (arm gains, base gains)" if kind == "ratio" else "one [seeds] array"
    if len(arrays) != (2 if kind == "ratio" else 1) or any(a.shape != arrays[0].shape or a.ndim != 1 for a in arrays):
        raise ValueError(f"a {kind} claim reads {wanted}; got {[a.shape for a in arrays]}")
    m = arrays[0] - threshold * arrays[1] if kind == "ratio" else arrays[0] - threshold  # [S]
    return m if above else -m


def word(estimate: Estimate, seeds: int) -> str:
    """A margin interval's word: *reproduced* above 0, *not reproduced* below, else *undecided (CI)*; no verdict
    from fewer than :data:`MIN_SEEDS` seeds."""
    if seeds < MIN_SEEDS:
        return f"no verdict (n = {seeds} seed{'s' if seeds != 1 else ''} < {MIN_SEEDS})"
    if estimate.low > 0:
        return "reproduced"
    if estimate.high < 0:
        return "not reproduced"
    return "undecided (CI)"


@dataclass(frozen=True)
class Reading:
    """A claim read by the rule: its margins, the verdict's interval, the companion and the robustness figures."""

    kind: str
    margins: np.ndarray
    """[S] per-seed margins, > 0 agreeing with the claim."""
    estimate: Estimate
    """Hodges–Lehmann centre of the margins with the Wilcoxon interval: what the verdict reads."""
    companion: Estimate
    """The mean with its t-interval — for a ratio, the ratio of mean gains with Fieller's interval — on the claim's
    own scale (not the margin's)."""
    p_value: float
    """Two-sided signed-rank p-value of the margins (twice the smaller one-sided one, at most 1): what a family's
    adjustment reads."""
    word: str
    """The raw verdict (:func:`word`)."""
    flips: int
    """How many seeds' removal changes :attr:`word` (0 for an undecided claim's word that stays undecided)."""

    @property
    def decided(self) -> bool:
        """Whether the raw reading is reproduced or not reproduced."""
        return self.word in ("reproduced", "not reproduced")


def _word_of(m: np.ndarray) -> str:
    return word(hodges_lehmann_ci(m, LEVEL), m.size)


def read(kind: str, values: Sequence[np.ndarray], threshold: float, above: bool = True) -> Reading:
    """Read one claim: margins (:func:`margins`), the Hodges–Lehmann verdict, the companion, the p-value a family
    adjusts, and the leave-one-seed-out flips.

    >>> r = read("difference", (np.array([0.02, 0.03, 0.01, 0.04, 0.02, 0.05]),), 0.0)
    >>> r.word, r.flips, round(r.p_value, 5)  # six seeds all above 0: T⁺ = 21, p = 2 · 2⁻⁶
    ('reproduced', 6, 0.03125)
    """
    m = margins(kind, values, threshold, above)  # [S]
    arrays = [np.asarray(v, dtype=np.float64) for v in values]
    companion = fieller_ci(arrays[0], arrays[1], LEVEL) if kind == "ratio" else mean_ci(arrays[0], LEVEL)
    p = min(1.0, 2 * min(signed_rank_p(m, True), signed_rank_p(m, False))) if m.size else math.nan
    return Reading(
        kind,
        m,
        hodges_lehmann_ci(m, LEVEL),
        companion,
        p,
        _word_of(m),
        leave_one_out_flips(_word_of, m) if m.size else 0,
    )


def adjust(readings: Sequence[Reading], procedure: str = "holm") -> list[str]:
    """The family's verdicts at the adjusted level: a raw decided verdict stands when its adjusted p-value
    (:func:`rewardzoo.eval.holm`, or :func:`rewardzoo.eval.fixed_sequence` over the family's declared order) is at
    most α; else it reads *undecided (adjusted)*.  Words that are not decided stay as they are.

    >>> ok = read("difference", (np.array([0.02, 0.03, 0.01, 0.04, 0.02, 0.05, 0.03]),), 0.0)
    >>> adjust([ok, ok]), adjust([ok] * 4)[0]  # p = 2/128 each: Holm ×2 = 0.031 ≤ 5%, ×4 = 0.0625 > 5%
    (['reproduced', 'reproduced'], 'undecided (adjusted)')
    """
    if procedure not in PROCEDURES:
        raise ValueError(f"a family is adjusted by {' or '.join(PROCEDURES)}; got {procedure!r}")
    adjusted = (holm if procedure == "holm" else fixed_sequence)([r.p_value for r in readings])
    return [
        r.word if not r.decided or (math.isfinite(p) and p <= ALPHA) else "undecided (adjusted)"
        for r, p in zip(readings, adjusted)
    ]


def label(verdict: str, flips: int) -> str:
    """The verdict as printed: a decided one that one seed's removal flips reads ``… (fragile)``.

    >>> label("reproduced", 3), label("reproduced", 0), label("undecided (CI)", 2)
    ('reproduced (fragile)', 'reproduced', 'undecided (CI)')
    """
    return f"{verdict} (fragile)" if verdict in ("reproduced", "not reproduced") and flips > 0 else verdict


def bold(verdict: str) -> bool:
    """Whether a printed verdict may be bolded: decided and not fragile."""
    return verdict in ("reproduced", "not reproduced")


def robustness(reading: Reading, collapses: dict[str, int], scale: float = 1.0, digits: int = 1) -> str:
    """The robustness line of a verdict: the companion (mean with t-interval, or ratio of mean gains with Fieller's),
    the leave-one-seed-out flips, and each row's collapse count (``{row: seeds collapsed}``).

    >>> r = read("difference", (np.array([0.02, 0.03, 0.01, 0.04, 0.02, 0.05]),), 0.0)
    >>> robustness(r, {"RAL": 0, "format-only": 1}, scale=100)
    'mean +2.8 [+1.3, +4.4] (t); 6 of 6 seeds flip the verdict when left out; collapsed (< 10%): RAL 0, format-only 1'
    """
    if reading.kind == "ratio":
        companion = f"ratio of mean gains {reading.companion.bounds(digits=2)} (Fieller)"
    else:
        companion = f"mean {reading.companion.bounds(scale=scale, digits=digits, sign=True)} (t)"
    seeds = reading.margins.size
    parts = [companion, f"{reading.flips} of {seeds} seeds flip the verdict when left out"]
    if collapses:
        parts.append(
            f"collapsed (< {100 * COLLAPSE_BELOW:.0f}%): " + ", ".join(f"{row} {n}" for row, n in collapses.items())
        )
    return "; ".join(parts)


def own_seed_error(reading: Reading, reps: int = 4000, seed: int = 0) -> tuple[float, float]:
    """How often the verdict's interval errs on the claim's own seeds: the margins shifted so their pseudo-median is
    0 (a null world built from them), ``reps`` claims of as many seeds drawn from it with replacement, and the rates
    at which the Hodges–Lehmann interval lies wholly above 0 (a false *reproduced*) and wholly below (a false *not
    reproduced*) — each promised at most 2.5% (benchmarks/audits/interval_coverage.py runs this on every pool)."""
    m = reading.margins
    world = m - float(np.median((m[:, None] + m[None, :]) / 2))  # [S]
    draws = np.random.default_rng(seed).integers(0, m.size, size=(reps, m.size))  # [R, S]
    bounds = [hodges_lehmann_ci(world[idx], LEVEL) for idx in draws]
    return sum(e.low > 0 for e in bounds) / reps, sum(e.high < 0 for e in bounds) / reps


def over_claims(reading: Reading, reps: int = 4000) -> bool:
    """Whether a decided verdict's interval errs on its decided side beyond 2.5% plus the Monte-Carlo error (two
    standard errors of a 2.5% rate at ``reps`` draws) on the claim's own seeds (:func:`own_seed_error`): such a
    verdict is not signed, and reads *undecided (over-claims on its seeds)*."""
    if not reading.decided:
        return False
    above, below = own_seed_error(reading, reps)
    bound = ALPHA / 2 + 2 * math.sqrt(ALPHA / 2 * (1 - ALPHA / 2) / reps)
    return (above if reading.word == "reproduced" else below) > bound


def check_look(registered: Sequence[int], present: Sequence[int], interim: bool) -> str:
    """One look: a read on a subset of the pre-registered seeds is refused unless declared interim, and labelled.
    Returns the label to print ('' for the full read); ValueError for seeds outside the registration, or a subset
    read without ``interim``.

    >>> check_look(range(12, 54), range(12, 54), False), check_look(range(12, 54), range(12, 20), True)
    ('', 'interim read: 8 of 42 pre-registered seeds (not a verdict)')
    """
    registered, present = sorted(set(registered)), sorted(set(present))
    extra = sorted(set(present) - set(registered))
    if extra:
        raise ValueError(f"seeds {extra} were not pre-registered ({registered[0]}–{registered[-1]}); read them apart")
    if len(present) < len(registered):
        if not interim:
            raise ValueError(
                f"{len(present)} of {len(registered)} pre-registered seeds have landed; a read before all have is an "
                "interim look: pass --interim to print it labelled as one, or wait for the rest"
            )
        return f"interim read: {len(present)} of {len(registered)} pre-registered seeds (not a verdict)"
    return ""
