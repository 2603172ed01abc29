"""Pairwise judges and the schedules of comparisons behind RcRL's win rates (seed 004 §3.3, §6.1).

A judge answers, for one rubric criterion c, "which of two responses to this prompt is better?"
as J_c(a, b) = P(the first-shown response a is better), and, for absolute scoring, "how well does
this response meet c?" as a score.  Position bias is removed by asking in both orders
(004 App. D.2.4)::

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
  reports of real judges, each a switch: the judged score is ŝ_c(y) = check_c(view(y)) +
  λ_len · words(view(y)), where ``view`` hides repeated words (``repetition_blind``) and/or
  non-English tokens (``non_english_blind``) — the judge does not see them at all, so they neither
  help nor hurt — and λ_len ≥ 0 is a preference for longer outputs; then
  J = σ((ŝ(a) − ŝ(b) + β_pos + σ_noise·ε)/τ) (τ = 0: a hard verdict 1 / ½ / 0), an absolute score is
  ŝ + σ_noise·ε, and with probability ``unparseable_rate`` a call is unparseable.
- :class:`LMJudge` — any transformers causal LM: a prompt template per criterion, the answer read
  from the next-token distribution as P(A) / (P(A) + P(B)) (absolute: P(Yes) / (P(Yes) + P(No))),
  no sampling, batched with left padding.  The **self-judge** is the frozen starting policy: with
  LoRA the policy itself with its adapters disabled, otherwise a frozen copy
  (:class:`rewardzoo.core.models.ReferencePolicy`).  A call is unparseable when P(A) + P(B) falls
  below ``min_choice_mass``.

An unparseable verdict counts as a tie (½) and is counted in :class:`Verdicts`.

Choices of ours: the default templates, the answer prefix ``Answer:``, ``min_choice_mass`` 0.01,
responses cut to 4,000 characters (004 App. D.2.4 truncates to 4,000 for its evaluation judge), the
Swiss pairing rule and the BT regulariser α = 0.1 (measured in ``benchmarks/judge_cost.py``).
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass, field
from typing import Callable, ClassVar, ContextManager, Protocol

import numpy as np
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from rewardzoo.core.config import check_section
from rewardzoo.core.models import DTYPES, ReferencePolicy
from rewardzoo.core.types import derive_seed
from rewardzoo.eval import bradley_terry
from rewardzoo.judges.rubric import Criterion
from rewardzoo.tasks.checks.writing import tokens, without_non_english, without_repeats

COMPARISONS = ("round_robin", "swiss")


@dataclass
class Verdicts:
    """A judge's answers to M questions."""

    prob: torch.Tensor  # [M] float64: P(first shown is better) for comparisons, the score for absolute questions
    unparseable: torch.Tensor  # [M] bool: the answer could not be read (prob is then the tie value ½)


class Judge(Protocol):
    """What RcRL needs of a judge."""

    calls: int  # questions answered so far

    def compare(self, criterion: Criterion, prompts: list[str], metas: list[dict], first: list[str],
                second: list[str]) -> Verdicts:
        """J_c(first_m, second_m) for every m."""
        ...

    def score(self, criterion: Criterion, prompts: list[str], metas: list[dict], texts: list[str]) -> Verdicts:
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

    def win_rates(self, judge: PairJudge, groups: list[list[int]], seed: int = 0) -> tuple[torch.Tensor, TournamentStats]:
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

    def _round_robin(self, judge: PairJudge, groups: list[list[int]], out: torch.Tensor, stats: TournamentStats) -> None:
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

    def _swiss(self, judge: PairJudge, groups: list[list[int]], out: torch.Tensor, stats: TournamentStats,
               rng: np.random.Generator) -> None:
        points = [np.zeros(len(g)) for g in groups]
        met = [np.eye(len(g), dtype=bool) for g in groups]
        wins = [np.zeros((len(g), len(g))) for g in groups]
        for r in range(max(self.swiss_rounds(len(g)) for g in groups)):
            local = [swiss_pairing(points[k], met[k], rng) if r < self.swiss_rounds(len(g)) else []
                     for k, g in enumerate(groups)]
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
@dataclass
class RuleJudgeConfig:
    """A programmatic judge with configurable imperfections (defaults: a perfect judge)."""

    RANGES: ClassVar[dict[str, str]] = {"noise": "[0, inf)", "position_bias": "(-inf, inf)", "temperature": "[0, inf)",
                                        "length_bias": "[0, inf)", "unparseable_rate": "[0, 1)"}

    noise: float = 0.0
    """σ_noise: standard deviation of Gaussian noise added to each call's score difference (or absolute score)."""
    position_bias: float = 0.0
    """β_pos: added to the first-shown response's score in a comparison (> 0 favours position A)."""
    temperature: float = 0.1
    """τ: J = σ(Δ/τ); 0 gives hard verdicts (1, ½ on a tie, 0)."""
    length_bias: float = 0.0
    """λ_len: added to every criterion's score per word the judge sees (a preference for longer outputs)."""
    repetition_blind: bool = False
    """The checks see the response with repeated words removed (insensitive to repetition)."""
    non_english_blind: bool = False
    """The checks see the response with non-English tokens removed (indifferent to them)."""
    unparseable_rate: float = 0.0
    """Probability that a call's answer cannot be read (it then counts as a tie, ½)."""


class RuleJudge:
    """Judges programmatic criteria (see the module docstring); its noise comes from its own seeded generator."""

    def __init__(self, cfg: RuleJudgeConfig | None = None, seed: int = 0):
        self.cfg = cfg = cfg or RuleJudgeConfig()
        check_section(cfg, "judge.rule")
        self.generator = torch.Generator().manual_seed(derive_seed(seed, "rule-judge") % 2**63)
        self.calls = 0

    def judged_scores(self, criterion: Criterion, metas: list[dict], texts: list[str]) -> torch.Tensor:
        """[M] ŝ_c: the check on the judge's view of each text plus the length preference on that view (no noise)."""
        check, c = criterion.check_fn(), self.cfg
        def view(text: str) -> str:
            text = without_repeats(text) if c.repetition_blind else text
            return without_non_english(text) if c.non_english_blind else text
        memo: dict[tuple[str, int], float] = {}  # a round robin shows each text 2(G − 1) times

        def judged(text: str, meta: dict) -> float:
            key = (text, id(meta))
            if key not in memo:
                seen = view(text)
                memo[key] = check(seen, meta) + c.length_bias * len(tokens(seen))
            return memo[key]
        return torch.tensor([judged(t, m) for t, m in zip(texts, metas)], dtype=torch.float64)  # [M]

    def _noise_and_failures(self, M: int) -> tuple[torch.Tensor, torch.Tensor]:
        eps = torch.randn(M, generator=self.generator, dtype=torch.float64)  # [M]
        failed = torch.rand(M, generator=self.generator, dtype=torch.float64) < self.cfg.unparseable_rate  # [M]
        self.calls += M
        return self.cfg.noise * eps, failed

    def compare(self, criterion: Criterion, prompts: list[str], metas: list[dict], first: list[str],
                second: list[str]) -> Verdicts:
        """J = σ((ŝ(first) − ŝ(second) + β_pos + noise)/τ), or a hard verdict when τ = 0."""
        both = self.judged_scores(criterion, metas + metas, first + second)  # [2M]
        noise, failed = self._noise_and_failures(len(first))  # [M], [M]
        diff = both[: len(first)] - both[len(first) :] + self.cfg.position_bias + noise  # [M]
        t = self.cfg.temperature
        prob = torch.sigmoid(diff / t) if t > 0 else 0.5 * (torch.sign(diff) + 1)  # [M]
        return Verdicts(torch.where(failed, 0.5, prob), failed)

    def score(self, criterion: Criterion, prompts: list[str], metas: list[dict], texts: list[str]) -> Verdicts:
        """ŝ + noise; an unparseable call scores ½."""
        noise, failed = self._noise_and_failures(len(texts))  # [M], [M]
        return Verdicts(torch.where(failed, 0.5, self.judged_scores(criterion, metas, texts) + noise), failed)

    def state_dict(self) -> dict:
        """The noise generator and the call count."""
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
    """A causal LM read as a judge (defaults are our own; 004 serves the base model through vLLM)."""

    RANGES: ClassVar[dict[str, str]] = {"batch_size": "[1, inf)", "max_response_chars": "[1, inf)",
                                        "max_length": "[8, inf)", "min_choice_mass": "[0, 1)"}

    model: str = "policy"
    """'policy' = the self-judge, the frozen starting policy (LoRA: adapters disabled); or a model name/path."""
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
            raise ValueError(f"the judge's answer {choice!r} merges with the answer prefix {prefix!r} when tokenized; "
                             f"change judge.lm.answer_prefix or judge.lm.choices")
        seqs.append(full[len(base) :])
    shared = 0
    while all(len(s) > shared for s in seqs) and len({s[shared] for s in seqs}) == 1:
        shared += 1
    if any(len(s) == shared for s in seqs):
        raise ValueError(f"the judge's answers {choices} cannot be told apart by one token; choose other judge.lm.choices")
    return seqs[0][:shared], [s[shared] for s in seqs]


class LMJudge:
    """A causal LM read as a pairwise (or absolute) judge from its next-token logits."""

    def __init__(self, model: Callable[[], ContextManager[torch.nn.Module]], tokenizer, cfg: LMJudgeConfig | None = None):
        """``model()`` yields the module to run (e.g. ``ReferencePolicy(policy).active``)."""
        self.cfg = cfg = cfg or LMJudgeConfig()
        check_section(cfg, "judge.lm")
        self.model = model
        self.tokenizer = tokenizer
        self.pair_shared, self.pair_ids = answer_tokens(tokenizer, cfg.answer_prefix, cfg.choices)
        self.abs_shared, self.abs_ids = answer_tokens(tokenizer, cfg.answer_prefix, cfg.absolute_choices)
        self.calls = 0

    @classmethod
    def self_judge(cls, policy: torch.nn.Module, tokenizer, cfg: LMJudgeConfig | None = None) -> "LMJudge":
        """The frozen starting policy as judge: ``policy`` with adapters disabled under LoRA, else a frozen copy
        of its weights now (call this before any RL step)."""
        return cls(ReferencePolicy(policy).active, tokenizer, cfg)

    @classmethod
    def from_pretrained(cls, name: str, cfg: LMJudgeConfig | None = None, device: str = "cpu") -> "LMJudge":
        """A frozen judge model loaded by Hugging Face name or local path."""
        cfg = cfg or LMJudgeConfig()
        check_section(cfg, "judge.lm")
        tokenizer = AutoTokenizer.from_pretrained(name)
        tokenizer.pad_token = tokenizer.pad_token or tokenizer.eos_token
        model = AutoModelForCausalLM.from_pretrained(name, dtype=DTYPES[cfg.dtype]).to(device).eval()
        model.requires_grad_(False)
        return cls(lambda: contextlib.nullcontext(model), tokenizer, cfg)

    def judge_text(self, body: str) -> str:
        """The full judge input for a filled-in template: chat-wrapped when asked, then the answer prefix."""
        if self.cfg.chat_template:
            body = self.tokenizer.apply_chat_template([{"role": "user", "content": body}], tokenize=False,
                                                      add_generation_prompt=True, enable_thinking=False)
        return body + self.cfg.answer_prefix

    def _cut(self, text: str) -> str:
        return text[: self.cfg.max_response_chars]

    def pairwise_texts(self, criterion: Criterion, prompts: list[str], first: list[str], second: list[str]) -> list[str]:
        """The judge inputs of a batch of comparisons (template filled, prefix appended)."""
        template = criterion.template or self.cfg.pairwise_template
        return [self.judge_text(template.format(title=criterion.title or criterion.name, description=criterion.description,
                                                prompt=p, first=self._cut(a), second=self._cut(b)))
                for p, a, b in zip(prompts, first, second)]

    def compare(self, criterion: Criterion, prompts: list[str], metas: list[dict], first: list[str],
                second: list[str]) -> Verdicts:
        """J = P(A) / (P(A) + P(B)) at the position after the answer prefix."""
        return self._read(self.pairwise_texts(criterion, prompts, first, second), self.pair_shared, self.pair_ids)

    def score(self, criterion: Criterion, prompts: list[str], metas: list[dict], texts: list[str]) -> Verdicts:
        """P(Yes) / (P(Yes) + P(No)) for each response."""
        bodies = [self.cfg.absolute_template.format(title=criterion.title or criterion.name,
                                                    description=criterion.description, prompt=p, response=self._cut(t))
                  for p, t in zip(prompts, texts)]
        return self._read([self.judge_text(b) for b in bodies], self.abs_shared, self.abs_ids)

    @torch.no_grad()
    def choice_probs(self, texts: list[str], shared: list[int], ids: list[int]) -> torch.Tensor:
        """[M, 2] next-token probabilities of the two answer tokens after each text (+ the shared tokens)."""
        tok, out = self.tokenizer, []
        with self.model() as model:
            was_training = model.training
            model.eval()
            device = next(model.parameters()).device
            for s in range(0, len(texts), self.cfg.batch_size):
                seqs = [(tok(t)["input_ids"] + shared)[-self.cfg.max_length :] for t in texts[s : s + self.cfg.batch_size]]
                S = max(map(len, seqs))
                input_ids = torch.full((len(seqs), S), tok.pad_token_id, dtype=torch.long)  # [b, S] left-padded
                mask = torch.zeros(len(seqs), S, dtype=torch.long)  # [b, S]
                for i, q in enumerate(seqs):
                    input_ids[i, S - len(q) :] = torch.tensor(q)
                    mask[i, S - len(q) :] = 1
                positions = (mask.cumsum(1) - 1).clamp(min=0)  # [b, S]
                logits = model(input_ids=input_ids.to(device), attention_mask=mask.to(device),
                               position_ids=positions.to(device), logits_to_keep=1).logits[:, -1]  # [b, V]
                out.append(torch.softmax(logits.double(), dim=-1)[:, ids].cpu())  # [b, 2]
            model.train(was_training)
        return torch.cat(out)  # [M, 2]

    def _read(self, texts: list[str], shared: list[int], ids: list[int]) -> Verdicts:
        probs = self.choice_probs(texts, shared, ids)  # [M, 2]
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
