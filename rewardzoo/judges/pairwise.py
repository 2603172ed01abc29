"""Pairwise judges and the schedules of comparisons behind RcRL's win rates (the RcRL paper, §3.3, §6.1).

A judge answers, for one rubric criterion c, "which of two responses to this prompt is better?"
as J_c(a, b) = P(the first-shown response a is better), and, for absolute scoring, "how well does
this response meet c?" as a score.  Position bias is removed by asking in both orders
(the RcRL paper, App. D.2.4)::

    P_c(i ≻ j) = ½ · [J_c(i, j) + 1 − J_c(j, i)]          so that P_c(i ≻ j) + P_c(j ≻ i) = 1
    w_c(i)     = 1/(G − 1) · Σ_{j ≠ i} P_c(i ≻ j)          win rate in the group (mean over i: exactly ½)

Schedules of comparisons in a group of G rollouts (per criterion):

    round_robin   all G(G − 1) ordered comparisons; w_c from the formula above
    swiss         R rounds (default ⌈log2 G⌉); each round pairs rollouts of adjacent standing that have
                  not met (random tie-break; odd G: one sits out), judges each pair in both orders and
                  adds P and 1 − P to their points; then a Bradley–Terry fit of all soft outcomes
                  (rewardzoo.eval.bradley_terry, choix's ILSR with regulariser α) gives θ and
                  w_c(i) = 1/(G − 1) · Σ_{j ≠ i} σ(θ_i − θ_j)   (mean over i: exactly ½ again).
                  Cost: 2·⌊G/2⌋·R ordered calls = O(G log G)

Judges:

- :class:`RuleJudge` — programmatic criteria (``Criterion.check``) with the imperfections 004
  reports of real judges, each a switch.  What the judge *perceives* of response y on criterion c
  at a step is one number, shared by every call that reads y (so comparisons and absolute scores
  get the same information and the same noise):

      ẑ_c(y) = check_c(view(y)) + λ_len·words(y) + σ·ε(seed, step, c, prompt, y)

  ``view`` drops what the judge overlooks (:func:`rewardzoo.tasks.checks.writing.judge_view`: a word
  repeated later in the text, ``repetition_blind``; a made-up word that looks like one,
  ``non_english_blind``) — every criterion still varies under it; λ_len ≥ 0 prefers longer outputs.
  A **comparison** reads only the difference, once: Δ = ẑ(a) − ẑ(b) + β_pos and
  J = clip(½ + Δ/(2·span), 0, 1) (``verdict=linear``, span 2; or σ(Δ/τ), or hard 1/½/0).  An **absolute score**
  has to report ẑ on a scale, and the RcRL paper, §5.4/§6 says subjective criteria do not admit a calibrated
  one; the report is

      A_c(y) = ½ + a_c·(ẑ_c(y) − ½) + leniency + δ          δ ~ N(0, σ_δ²) once per call
      then, with ``levels`` = L ≥ 2: clipped to [0, 1] (it saturates) and rounded to L points

  with a_c = exp(s·η_c) a criterion-dependent scale.  A comparison is one call, so both responses
  carry the same δ and Δ does not see it; :func:`miscalibration` maps the study's one knob m to
  (L, leniency, s, σ_δ), m = 0 being the calibrated judge, A = ẑ.  With the linear verdict and
  m = 0 a pairwise reward is an increasing affine function of the absolute one within every group,
  so the two rank a group identically, whatever the noise (``tests/judges/test_pairwise.py``).
  With probability ``unparseable_rate`` a call is unparseable.
- :class:`LMJudge` — any transformers causal LM: a prompt template per criterion, the answer read
  from the next-token distribution as P(A) / (P(A) + P(B)) (absolute: P(Yes) / (P(Yes) + P(No))),
  no sampling, batched with left padding.  The **self-judge** is the frozen starting policy: with
  LoRA the policy itself with its adapters disabled, otherwise a frozen copy
  (:class:`rewardzoo.core.models.ReferencePolicy`).  A call is unparseable when P(A) + P(B) falls
  below ``min_choice_mass``.

An unparseable verdict counts as a tie (½) and is counted in :class:`Verdicts`.

Choices of ours: the rule judge's perception model, its linear verdict and its miscalibration (the
testbed of ``benchmarks/rcrl.py``, not a model of any real judge); the default templates, the answer prefix
``Answer:``, ``min_choice_mass`` 0.01, responses cut to 4,000 characters (the RcRL paper, App. D.2.4 truncates
to 4,000 for its evaluation judge), the Swiss pairing rule and the BT regulariser α = 0.1 (measured in
``benchmarks/judge_cost.py``).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import ClassVar, Protocol

import numpy as np
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from rewardzoo.core.config import check_section
from rewardzoo.core.model_store import resolve_model
from rewardzoo.core.models import DTYPES, ReferencePolicy, check_model_source
from rewardzoo.core.types import derive_seed
from rewardzoo.eval import bradley_terry
from rewardzoo.judges.prefix_tree import build_tree, read_tree, tree_tokens
from rewardzoo.judges.rubric import Criterion
from rewardzoo.tasks.checks.writing import judge_view, tokens

COMPARISONS = ("round_robin", "swiss")


@dataclass
class Verdicts:
    """A judge's answers to M questions."""

    prob: torch.Tensor  # [M] float64: P(first shown is better) for comparisons, the score for absolute questions
    unparseable: torch.Tensor  # [M] bool: the answer could not be read (prob is then the tie value ½)


class Judge(Protocol):
    """What RcRL needs of a judge."""

    calls: int  # questions answered so far

    def compare(
        self,
        criterion: Criterion,
        prompts: list[str],
        metas: list[dict],
        first: list[str],
        second: list[str],
        step: int = 0,
    ) -> Verdicts:
        """J_c(first_m, second_m) for every m (``step``: the RL step asking, for judges whose noise depends on it)."""
        ...

    def score(
        self, criterion: Criterion, prompts: list[str], metas: list[dict], texts: list[str], step: int = 0
    ) -> Verdicts:
        """Absolute scores of ``texts`` on ``criterion``."""
        ...


# ------------------------------------------------------------------ the pure math
def symmetrise(j_forward: torch.Tensor, j_backward: torch.Tensor) -> torch.Tensor:
    """P(i ≻ j) = ½[J(i, j) + 1 − J(j, i)] from the verdicts of both orders (any shape, elementwise)."""
    return 0.5 * (j_forward + 1.0 - j_backward)


def win_rates(pref: torch.Tensor) -> torch.Tensor:
    """[G] w(i) = 1/(G − 1) · Σ_{j ≠ i} P(i ≻ j) from a [G, G] preference matrix (its diagonal is ignored)."""
    G = pref.shape[-1]
    off = pref * (1 - torch.eye(G, dtype=pref.dtype))  # [G, G]
    return off.sum(-1) / (G - 1)  # [G]


def bt_win_rates(theta: torch.Tensor) -> torch.Tensor:
    """[G] win rates implied by Bradley–Terry strengths θ [G]: 1/(G − 1) · Σ_{j ≠ i} σ(θ_i − θ_j)."""
    return win_rates(torch.sigmoid(theta[:, None] - theta[None, :]))  # [G]


def group_rows(group_ids: torch.Tensor) -> list[list[int]]:
    """Row indices of each group, in order of first appearance.

    >>> group_rows(torch.tensor([7, 7, 3, 3, 3]))
    [[0, 1], [2, 3, 4]]
    """
    groups: dict[int, list[int]] = {}
    for i, g in enumerate(group_ids.tolist()):
        groups.setdefault(g, []).append(i)
    return list(groups.values())


def round_robin_pairs(G: int) -> torch.Tensor:
    """[G(G − 1), 2] every ordered pair (i, j), i ≠ j, of a group of G."""
    i, j = torch.meshgrid(torch.arange(G), torch.arange(G), indexing="ij")  # [G, G] each
    keep = i != j  # [G, G]
    return torch.stack([i[keep], j[keep]], dim=1)  # [G(G-1), 2]


def swiss_pairing(points: np.ndarray, met: np.ndarray, rng: np.random.Generator) -> list[tuple[int, int]]:
    """One Swiss round: players sorted by points (random tie-break); each unpaired player in turn meets
    the next unpaired one it has not met yet (or, when it has met them all, the next unpaired one)."""
    order = sorted(range(len(points)), key=lambda i: (-points[i], rng.random()))
    free, pairs = list(order), []
    while len(free) >= 2:
        a = free.pop(0)
        b = next((x for x in free if not met[a, x]), free[0])
        free.remove(b)
        pairs.append((a, b))
    return pairs


# ------------------------------------------------------------------ schedules of comparisons
PairJudge = Callable[[list[int], list[int]], Verdicts]  # (rows shown first, rows shown second) -> verdicts


@dataclass
class TournamentStats:
    """What one criterion's comparisons over a batch cost and how consistent they were."""

    calls: int = 0  # ordered judge calls
    unparseable: int = 0  # calls whose answer could not be read
    consistent: int = 0  # unordered pairs whose two orders agree on the winner (both strictly)
    pairs: int = 0  # unordered pairs judged in both orders


@dataclass(frozen=True)
class Tournament:
    """Round-robin or Swiss + Bradley–Terry win rates within each group (see the module docstring)."""

    method: str = "round_robin"
    rounds: int = 0  # Swiss rounds (0 = ⌈log2 G⌉)
    bt_alpha: float = 0.1  # regulariser of the Bradley–Terry fit (Swiss only)

    def __post_init__(self) -> None:
        if self.method not in COMPARISONS:
            raise ValueError(f"comparisons must be one of {', '.join(COMPARISONS)}; got {self.method!r}")
        if self.rounds < 0 or self.bt_alpha < 0:
            raise ValueError(f"swiss_rounds and bt_alpha must be >= 0; got {self.rounds}, {self.bt_alpha}")

    def calls_per_group(self, G: int) -> int:
        """Ordered judge calls this schedule makes per criterion for one group of G."""
        return G * (G - 1) if self.method == "round_robin" else 2 * (G // 2) * self.swiss_rounds(G)

    def swiss_rounds(self, G: int) -> int:
        """Rounds of a Swiss tournament of G players (``rounds``, or ⌈log2 G⌉)."""
        return self.rounds or max(1, math.ceil(math.log2(G)))

    def win_rates(
        self, judge: PairJudge, groups: list[list[int]], seed: int = 0
    ) -> tuple[torch.Tensor, TournamentStats]:
        """[N] win rate of every row (rows indexed as in ``groups``), and the comparison statistics.
        ``judge(first_rows, second_rows)`` answers a batch of ordered questions; ``seed`` drives the
        Swiss tie-breaks."""
        n_rows = max(r for g in groups for r in g) + 1
        out = torch.zeros(n_rows, dtype=torch.float64)  # [N]
        stats = TournamentStats()
        if self.method == "round_robin":
            self._round_robin(judge, groups, out, stats)
        else:
            self._swiss(judge, groups, out, stats, np.random.default_rng(seed))
        return out, stats

    def _ask(self, judge: PairJudge, pairs: list[tuple[int, int]], stats: TournamentStats) -> torch.Tensor:
        """[M] symmetrised P(a ≻ b) of row pairs, each judged in both orders in one batched call."""
        a = [p[0] for p in pairs]
        b = [p[1] for p in pairs]
        v = judge(a + b, b + a)
        forward, backward = v.prob[: len(pairs)].double(), v.prob[len(pairs) :].double()  # [M] each
        stats.calls += 2 * len(pairs)
        stats.unparseable += int(v.unparseable.sum())
        stats.pairs += len(pairs)
        stats.consistent += int(((forward - 0.5) * (backward - 0.5) < 0).sum())
        return symmetrise(forward, backward)  # [M]

    def _round_robin(
        self, judge: PairJudge, groups: list[list[int]], out: torch.Tensor, stats: TournamentStats
    ) -> None:
        pairs = [(g[i], g[j]) for g in groups for i in range(len(g)) for j in range(i + 1, len(g))]
        p = self._ask(judge, pairs, stats)  # [M]
        pos = 0
        for g in groups:
            G = len(g)
            pref = torch.full((G, G), 0.5, dtype=torch.float64)  # [G, G]
            iu = torch.triu_indices(G, G, offset=1)  # [2, G(G-1)/2]
            m = iu.shape[1]
            pref[iu[0], iu[1]] = p[pos : pos + m]
            pref[iu[1], iu[0]] = 1.0 - p[pos : pos + m]
            pos += m
            out[g] = win_rates(pref)  # [G]

    def _swiss(
        self,
        judge: PairJudge,
        groups: list[list[int]],
        out: torch.Tensor,
        stats: TournamentStats,
        rng: np.random.Generator,
    ) -> None:
        points = [np.zeros(len(g)) for g in groups]
        met = [np.eye(len(g), dtype=bool) for g in groups]
        wins = [np.zeros((len(g), len(g))) for g in groups]
        for r in range(max(self.swiss_rounds(len(g)) for g in groups)):
            local = [
                swiss_pairing(points[k], met[k], rng) if r < self.swiss_rounds(len(g)) else []
                for k, g in enumerate(groups)
            ]
            rows = [(groups[k][a], groups[k][b]) for k, pairs in enumerate(local) for a, b in pairs]
            p = self._ask(judge, rows, stats).numpy()  # [M]
            pos = 0
            for k, pairs in enumerate(local):
                for a, b in pairs:
                    points[k][a] += p[pos]
                    points[k][b] += 1 - p[pos]
                    wins[k][a, b] += p[pos]
                    wins[k][b, a] += 1 - p[pos]
                    met[k][a, b] = met[k][b, a] = True
                    pos += 1
        for k, g in enumerate(groups):
            theta = torch.from_numpy(bradley_terry(wins[k], alpha=self.bt_alpha))  # [G]
            out[g] = bt_win_rates(theta)  # [G]


# ------------------------------------------------------------------ the rule judge
VERDICTS = ("linear", "logistic", "hard")


def miscalibration(m: float) -> dict[str, float | int]:
    """The settings of a rule judge's absolute reports at miscalibration level ``m`` ≥ 0 (the study's knob;
    ours, the RcRL paper gives no numbers): m = 0 is a calibrated judge (HealthBench-like, RcRL paper §5.4),
    each unit of m adds a coarser scale (an L-point scale, L = ⌊1 + 10/m + ½⌋: 11 at m = 1, 6 at m = 2,
    4 at m = 3), leniency 0.1 (scores pile up at the top of the scale), a criterion-dependent scale spread 0.25 and a
    per-call offset of standard deviation 0.05.

    >>> miscalibration(2)
    {'levels': 6, 'leniency': 0.2, 'criterion_scale': 0.5, 'call_offset': 0.1}
    """
    if m < 0:
        raise ValueError(f"the miscalibration level must be >= 0; got {m}")
    levels = 0 if m == 0 else max(2, int(1 + 10 / m + 0.5))
    return {
        "levels": levels,
        "leniency": round(0.1 * m, 6),
        "criterion_scale": round(0.25 * m, 6),
        "call_offset": round(0.05 * m, 6),
    }


def standard_normal(*parts) -> float:
    """A standard normal draw that is a pure function of ``parts`` (the same on every machine)."""
    return NormalDist().inv_cdf((derive_seed(*parts) + 0.5) / 2**63)


@dataclass
class RuleJudgeConfig:
    """A programmatic judge with configurable imperfections (defaults: a perfect, calibrated judge)."""

    RANGES: ClassVar[dict[str, str]] = {
        "noise": "[0, inf)",
        "position_bias": "(-inf, inf)",
        "temperature": "[0, inf)",
        "length_bias": "[0, inf)",
        "unparseable_rate": "[0, 1)",
        "levels": "[0, inf)",
        "span": "(0, inf)",
        "leniency": "(-inf, inf)",
        "criterion_scale": "[0, inf)",
        "call_offset": "[0, inf)",
    }

    noise: float = 0.0
    """σ: standard deviation of the judge's perception noise, one draw per response, criterion and step, shared by
    every call that reads that response — comparisons and absolute scores see the same noisy perception."""
    position_bias: float = 0.0
    """β_pos: added to the first-shown response's perceived score in a comparison (> 0 favours position A)."""
    verdict: str = "linear"
    """How a comparison turns the perceived difference Δ into J: linear ½ + Δ/(2·span) (clipped to [0, 1]),
    logistic σ(Δ/τ) or hard (1, ½ on a tie, 0)."""
    span: float = 2.0
    """Linear verdicts stay linear while |Δ| ≤ span (checks differ by at most 1; the rest leaves room for the length
    preference, the noise and the position bias)."""
    temperature: float = 0.1
    """τ of logistic verdicts."""
    length_bias: float = 0.0
    """λ_len: added to every criterion's perceived score per word of the response as written (a verbosity
    preference)."""
    repetition_blind: bool = False
    """The judge overlooks a word repeated later in the text (not one repeated immediately): the checks read the
    view."""
    non_english_blind: bool = False
    """The judge overlooks a made-up word that looks like a word (has a vowel): the checks read the view."""
    unparseable_rate: float = 0.0
    """Probability that a call's answer cannot be read (it then counts as a tie, ½)."""
    levels: int = 0
    """Absolute reports on an L-point scale: clipped to [0, 1] (saturating) and rounded to L levels (0 = continuous,
    unclipped; else at least 2)."""
    leniency: float = 0.0
    """Added to every absolute report before clipping: a lenient judge's scores pile up at the top of the scale."""
    criterion_scale: float = 0.0
    """s: criterion c's absolute reports are ½ + a_c·(perceived − ½), a_c = exp(s·η_c), η_c ~ N(0, 1) fixed by the
    criterion's name (the same judge on every run and seed)."""
    call_offset: float = 0.0
    """σ_δ: an offset drawn once per judge call; an absolute report carries its own call's, the two responses of a
    comparison share one, so the difference never sees it."""

    def validate(self) -> None:
        """Raise ValueError, saying what to change, on settings that cannot run (ranges: ``RANGES``)."""
        if self.verdict not in VERDICTS:
            raise ValueError(f"judge.rule.verdict must be one of {', '.join(VERDICTS)}; got {self.verdict!r}")
        if self.levels == 1:
            raise ValueError("judge.rule.levels must be 0 (a continuous scale) or at least 2")
        if self.verdict == "logistic" and self.temperature <= 0:
            raise ValueError("judge.rule.temperature must be > 0 for logistic verdicts (or use verdict=hard)")


class RuleJudge:
    """Judges programmatic criteria (see the module docstring).  Its perception noise is a pure function of
    (seed, step, criterion, prompt, response); unparseable answers and call offsets come from its own seeded
    generator."""

    def __init__(self, cfg: RuleJudgeConfig | None = None, seed: int = 0):
        self.cfg = cfg = cfg or RuleJudgeConfig()
        check_section(cfg, "judge.rule")
        self.seed = seed
        self.generator = torch.Generator().manual_seed(derive_seed(seed, "rule-judge") % 2**63)
        self.calls = 0

    def perceived(
        self, criterion: Criterion, prompts: list[str], metas: list[dict], texts: list[str], step: int = 0
    ) -> torch.Tensor:
        """[M] ẑ_c = check_c(view(y)) + λ_len·words(y) + σ·ε(seed, step, c, prompt, y): what the judge perceives."""
        check, c = criterion.check_fn(), self.cfg
        memo: dict[tuple[str, str, int], float] = {}  # a round robin shows each response 2(G − 1) times

        def one(prompt: str, text: str, meta: dict) -> float:
            key = (prompt, text, id(meta))
            if key not in memo:
                seen = judge_view(text, c.repetition_blind, c.non_english_blind)
                eps = standard_normal(self.seed, "perception", step, criterion.name, prompt, text) if c.noise else 0.0
                memo[key] = check(seen, meta) + c.length_bias * len(tokens(text)) + c.noise * eps
            return memo[key]

        return torch.tensor([one(p, t, m) for p, t, m in zip(prompts, texts, metas)], dtype=torch.float64)  # [M]

    def report(self, criterion: Criterion, perceived: torch.Tensor, offset: torch.Tensor) -> torch.Tensor:
        """[M] absolute reports of perceived scores [M] with each call's offset [M]: ½ + a_c(ẑ − ½) + leniency + δ,
        then clipped to [0, 1] and rounded to the L-point scale when ``levels`` ≥ 2."""
        c = self.cfg
        a = (
            math.exp(c.criterion_scale * standard_normal("criterion-scale", criterion.name))
            if c.criterion_scale
            else 1.0
        )
        u = 0.5 + a * (perceived - 0.5) + c.leniency + offset  # [M]
        if c.levels == 0:
            return u
        return torch.round(u.clamp(0.0, 1.0) * (c.levels - 1)) / (c.levels - 1)  # [M]

    def _failures(self, M: int) -> torch.Tensor:
        self.calls += M
        return torch.rand(M, generator=self.generator, dtype=torch.float64) < self.cfg.unparseable_rate  # [M]

    def compare(
        self,
        criterion: Criterion,
        prompts: list[str],
        metas: list[dict],
        first: list[str],
        second: list[str],
        step: int = 0,
    ) -> Verdicts:
        """J from Δ = ẑ(first) − ẑ(second) + β_pos (the call's offset is in both and cancels): linear
        clip(½ + Δ/(2·span)), logistic σ(Δ/τ) or hard ½(sign Δ + 1)."""
        M = len(first)
        both = self.perceived(criterion, prompts + prompts, metas + metas, first + second, step)  # [2M]
        diff = both[:M] - both[M:] + self.cfg.position_bias  # [M]
        if self.cfg.verdict == "linear":
            prob = (0.5 + diff / (2 * self.cfg.span)).clamp(0.0, 1.0)  # [M]
        elif self.cfg.verdict == "logistic":
            prob = torch.sigmoid(diff / self.cfg.temperature)  # [M]
        else:
            prob = 0.5 * (torch.sign(diff) + 1)  # [M]
        failed = self._failures(M)  # [M]
        return Verdicts(torch.where(failed, 0.5, prob), failed)

    def score(
        self, criterion: Criterion, prompts: list[str], metas: list[dict], texts: list[str], step: int = 0
    ) -> Verdicts:
        """The absolute report of each response (one call each, with its own offset); an unparseable call scores ½."""
        M = len(texts)
        offset = self.cfg.call_offset * torch.randn(M, generator=self.generator, dtype=torch.float64)  # [M]
        failed = self._failures(M)  # [M]
        reports = self.report(criterion, self.perceived(criterion, prompts, metas, texts, step), offset)  # [M]
        return Verdicts(torch.where(failed, 0.5, reports), failed)

    def state_dict(self) -> dict:
        """The generator (unparseable answers, call offsets) and the call count."""
        return {"generator": self.generator.get_state(), "calls": self.calls}

    def load_state_dict(self, state: dict) -> None:
        """Restore :meth:`state_dict`."""
        self.generator.set_state(state["generator"])
        self.calls = state["calls"]


# ------------------------------------------------------------------ the LM judge
DEFAULT_PAIRWISE_TEMPLATE = (
    "You compare two responses to the same prompt on one criterion only.\n"
    "Criterion: {title}. {description}\n\n"
    "[PROMPT]\n{prompt}\n[/PROMPT]\n\n"
    "[RESPONSE A]\n{first}\n[/RESPONSE A]\n\n"
    "[RESPONSE B]\n{second}\n[/RESPONSE B]\n\n"
    "Which response is better on this criterion? Answer with A or B.\n"
)
DEFAULT_ABSOLUTE_TEMPLATE = (
    "You judge one response to a prompt on one criterion only.\n"
    "Criterion: {title}. {description}\n\n"
    "[PROMPT]\n{prompt}\n[/PROMPT]\n\n"
    "[RESPONSE]\n{response}\n[/RESPONSE]\n\n"
    "Does the response meet this criterion? Answer with Yes or No.\n"
)


@dataclass
class LMJudgeConfig:
    """A causal LM read as a judge (defaults are our own; the RcRL paper serves the base model through vLLM)."""

    RANGES: ClassVar[dict[str, str]] = {
        "batch_size": "[1, inf)",
        "max_response_chars": "[1, inf)",
        "max_length": "[8, inf)",
        "min_choice_mass": "[0, 1)",
    }

    model: str = "policy"
    """'policy' = the self-judge, the frozen starting policy (LoRA: adapters disabled); or a fetched model's
    name (``smollm2-135m-instruct``), a hub id or a local path."""
    dtype: str = "float32"
    """Parameter dtype of a judge loaded by name/path: float32, bfloat16 or float16."""
    pairwise_template: str = DEFAULT_PAIRWISE_TEMPLATE
    """Comparison prompt, with {title}, {description}, {prompt}, {first}, {second}; a criterion's own
    ``template`` replaces it."""
    absolute_template: str = DEFAULT_ABSOLUTE_TEMPLATE
    """Absolute-scoring prompt, with {title}, {description}, {prompt}, {response}."""
    answer_prefix: str = "Answer:"
    """Text after the prompt (and after the chat template's assistant header); the answer is the next token."""
    choices: list[str] = field(default_factory=lambda: [" A", " B"])
    """The two answers of a comparison as they follow answer_prefix (first shown, second shown)."""
    absolute_choices: list[str] = field(default_factory=lambda: [" Yes", " No"])
    """The two answers of an absolute question (meets, does not meet)."""
    chat_template: bool = False
    """Wrap the prompt as a user turn with the tokenizer's chat template (thinking disabled where supported)."""
    batch_size: int = 16
    """Judge prompts per forward pass."""
    max_response_chars: int = 4000
    """Each response is cut to this many characters before judging."""
    max_length: int = 4096
    """Longest judge input in tokens; longer inputs are cut from the left."""
    min_choice_mass: float = 0.01
    """A call whose two answer tokens together get less probability than this is unparseable (a tie)."""

    def validate(self) -> None:
        """Raise ValueError, saying what to change, on settings that cannot run (ranges: ``RANGES``)."""
        if self.model != "policy":
            check_model_source(self.model, "model")
        if len(self.choices) != 2 or len(self.absolute_choices) != 2:
            raise ValueError("choices and absolute_choices must each hold exactly two answers")
        if self.dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {', '.join(DTYPES)}; got {self.dtype!r}")


def answer_tokens(tokenizer, prefix: str, choices: list[str]) -> tuple[list[int], list[int]]:
    """(tokens every choice starts with after ``prefix``, the first token where each choice differs).

    The judge input is ``… + prefix`` followed by the shared tokens; the answer is read at the next
    position.  E.g. choices " A"/" B": a BPE tokenizer has no shared token (" A" and " B" are tokens),
    a character tokenizer shares " " and differs at "A"/"B".
    """
    base = tokenizer(prefix, add_special_tokens=False)["input_ids"]
    seqs = []
    for choice in choices:
        full = tokenizer(prefix + choice, add_special_tokens=False)["input_ids"]
        if full[: len(base)] != base or len(full) == len(base):
            raise ValueError(
                f"the judge's answer {choice!r} merges with the answer prefix {prefix!r} when tokenized; "
                f"change judge.lm.answer_prefix or judge.lm.choices"
            )
        seqs.append(full[len(base) :])
    shared = 0
    while all(len(s) > shared for s in seqs) and len({s[shared] for s in seqs}) == 1:
        shared += 1
    if any(len(s) == shared for s in seqs):
        raise ValueError(
            f"the judge's answers {choices} cannot be told apart by one token; choose other judge.lm.choices"
        )
    return seqs[0][:shared], [s[shared] for s in seqs]


class LMJudge:
    """A causal LM read as a pairwise (or absolute) judge from its next-token logits."""

    def __init__(
        self,
        model: Callable[[], contextlib.AbstractContextManager[torch.nn.Module]],
        tokenizer,
        cfg: LMJudgeConfig | None = None,
        share_prefixes: bool = True,
    ):
        """``model()`` yields the module to run (e.g. ``ReferencePolicy(policy).active``).  ``share_prefixes``
        reads a batch's questions through a KV-cache prefix tree (:mod:`rewardzoo.judges.prefix_tree`: the
        same verdicts to float rounding, each shared prefix read once); False reads each question as its own
        full input (a measurement switch, no configuration key: ``benchmarks/perf/judge_prefix.py``)."""
        self.cfg = cfg = cfg or LMJudgeConfig()
        check_section(cfg, "judge.lm")
        self.model = model
        self.tokenizer = tokenizer
        self.share_prefixes = share_prefixes
        self.pair_shared, self.pair_ids = answer_tokens(tokenizer, cfg.answer_prefix, cfg.choices)
        self.abs_shared, self.abs_ids = answer_tokens(tokenizer, cfg.answer_prefix, cfg.absolute_choices)
        self.calls = 0
        self.tokens_read = 0  # tokens run through the model so far, padding excluded (not checkpointed)

    @classmethod
    def self_judge(cls, policy: torch.nn.Module, tokenizer, cfg: LMJudgeConfig | None = None) -> LMJudge:
        """The frozen starting policy as judge: ``policy`` with adapters disabled under LoRA, else a frozen copy
        of its weights now (call this before any RL step)."""
        return cls(ReferencePolicy(policy).active, tokenizer, cfg)

    @classmethod
    def from_pretrained(cls, name: str, cfg: LMJudgeConfig | None = None, device: str = "cpu") -> LMJudge:
        """A frozen judge model loaded by a fetched model's name, a Hugging Face name or a local path."""
        cfg = cfg or LMJudgeConfig()
        check_section(cfg, "judge.lm")
        name = resolve_model(name)
        tokenizer = AutoTokenizer.from_pretrained(name)
        tokenizer.pad_token = tokenizer.pad_token or tokenizer.eos_token
        model = AutoModelForCausalLM.from_pretrained(name, dtype=DTYPES[cfg.dtype]).to(device).eval()
        model.requires_grad_(False)
        return cls(lambda: contextlib.nullcontext(model), tokenizer, cfg)

    def judge_text(self, body: str) -> str:
        """The full judge input for a filled-in template: chat-wrapped when asked, then the answer prefix."""
        if self.cfg.chat_template:
            body = self.tokenizer.apply_chat_template(
                [{"role": "user", "content": body}], tokenize=False, add_generation_prompt=True, enable_thinking=False
            )
        return body + self.cfg.answer_prefix

    def _cut(self, text: str) -> str:
        return text[: self.cfg.max_response_chars]

    def pairwise_texts(
        self, criterion: Criterion, prompts: list[str], first: list[str], second: list[str]
    ) -> list[str]:
        """The judge inputs of a batch of comparisons (template filled, prefix appended)."""
        template = criterion.template or self.cfg.pairwise_template
        return [
            self.judge_text(
                template.format(
                    title=criterion.title or criterion.name,
                    description=criterion.description,
                    prompt=p,
                    first=self._cut(a),
                    second=self._cut(b),
                )
            )
            for p, a, b in zip(prompts, first, second)
        ]

    def compare(
        self,
        criterion: Criterion,
        prompts: list[str],
        metas: list[dict],
        first: list[str],
        second: list[str],
        step: int = 0,
    ) -> Verdicts:
        """J = P(A) / (P(A) + P(B)) at the position after the answer prefix (deterministic: ``step`` is unused).
        Comparisons sharing a prompt, and then a first response, share their opening tokens."""
        keys = [(p, a) for p, a in zip(prompts, first)]
        texts = self.pairwise_texts(criterion, prompts, first, second)
        return self._read(texts, keys, self.pair_shared, self.pair_ids)

    def score(
        self, criterion: Criterion, prompts: list[str], metas: list[dict], texts: list[str], step: int = 0
    ) -> Verdicts:
        """P(Yes) / (P(Yes) + P(No)) for each response."""
        bodies = [
            self.cfg.absolute_template.format(
                title=criterion.title or criterion.name,
                description=criterion.description,
                prompt=p,
                response=self._cut(t),
            )
            for p, t in zip(prompts, texts)
        ]
        keys = [(p,) for p in prompts]
        return self._read([self.judge_text(b) for b in bodies], keys, self.abs_shared, self.abs_ids)

    @torch.no_grad()
    def choice_probs(
        self, texts: list[str], keys: list[tuple[Hashable, ...]], shared: list[int], ids: list[int]
    ) -> torch.Tensor:
        """[M, 2] next-token probabilities of the two answer tokens after each text (+ the shared tokens).
        ``keys`` group the texts, coarsest first, into those likely to share opening tokens (one tuple per
        text); only the prefix tree reads them, and they never change a probability beyond float rounding."""
        tok = self.tokenizer
        seqs = [(tok(t)["input_ids"] + shared)[-self.cfg.max_length :] for t in texts]
        with self.model() as model:
            was_training = model.training
            model.eval()
            if self.share_prefixes:
                roots = build_tree(seqs, [("",) + k for k in keys])  # one more level: what every question shares
                probs = read_tree(model, roots, len(seqs), ids, self.cfg.batch_size, tok.pad_token_id)  # [M, 2]
                self.tokens_read += tree_tokens(roots)
            else:
                self.tokens_read += sum(map(len, seqs))
                probs = torch.cat(
                    [
                        self._read_each(model, seqs[s : s + self.cfg.batch_size], ids)
                        for s in range(0, len(seqs), self.cfg.batch_size)
                    ]
                )  # [M, 2]
            model.train(was_training)
        return probs  # [M, 2]

    def _read_each(self, model: torch.nn.Module, seqs: list[list[int]], ids: list[int]) -> torch.Tensor:
        """[b, 2] the answer tokens' probabilities, each sequence read whole, left-padded into one forward pass."""
        device = next(model.parameters()).device
        S = max(map(len, seqs))
        input_ids = torch.full((len(seqs), S), self.tokenizer.pad_token_id, dtype=torch.long)  # [b, S] left-padded
        mask = torch.zeros(len(seqs), S, dtype=torch.long)  # [b, S]
        for i, q in enumerate(seqs):
            input_ids[i, S - len(q) :] = torch.tensor(q)
            mask[i, S - len(q) :] = 1
        positions = (mask.cumsum(1) - 1).clamp(min=0)  # [b, S]
        logits = model(
            input_ids=input_ids.to(device),
            attention_mask=mask.to(device),
            position_ids=positions.to(device),
            logits_to_keep=1,
        ).logits[:, -1]  # [b, V]
        return torch.softmax(logits.double(), dim=-1)[:, ids].cpu()  # [b, 2]

    def _read(self, texts: list[str], keys: list[tuple], shared: list[int], ids: list[int]) -> Verdicts:
        probs = self.choice_probs(texts, keys, shared, ids)  # [M, 2]
        mass = probs.sum(1)  # [M]
        failed = mass < self.cfg.min_choice_mass  # [M]
        self.calls += len(texts)
        return Verdicts(torch.where(failed, 0.5, probs[:, 0] / mass.clamp(min=1e-300)), failed)

    def state_dict(self) -> dict:
        """The call count (the judge's weights are frozen)."""
        return {"calls": self.calls}

    def load_state_dict(self, state: dict) -> None:
        """Restore :meth:`state_dict`."""
        self.calls = state["calls"]
