"""RcRL, Rubric Curriculum RL (the RcRL paper, §3.3, App. A.2, C): pairwise self-judged win rates over a
curriculum of rubric criteria.

For a group of G rollouts of one prompt at step t, with active criteria A(t) and weights ω_c(t):

    P_c(i ≻ j) = ½ · [J_c(i, j) + 1 − J_c(j, i)]                position bias removed (both orders)
    w_c(i)     = 1/(G − 1) · Σ_{j ≠ i} P_c(i ≻ j)               win rate on criterion c   (scoring=pairwise)
    w_c(i)     = S_c(i)                                         the judge's absolute score (scoring=absolute)
    r_i        = Σ_{c ∈ A(t)} ω_c(t) · w_c(i)

    curriculum   A(t) = the first min(C, ⌊t/K⌋ + 1) criteria (criterion k from step k·K; K = 100 in the RcRL paper)
    all          A(t) = every criterion            dropout   a seeded random subset each step
    newest       ω = w_new (½) on the newest active criterion, (1 − w_new)/(|A| − 1) on each other one
    uniform      ω = 1/|A|                         (all / dropout: always uniform)

Because P(i ≻ j) + P(j ≻ i) = 1 and the ω sum to 1, the group mean of a pairwise reward is exactly
½ (App. A.2: "the mean reward cannot drift upward"); with hard verdicts it depends on the judge only
through the order of its scores, so it is invariant to any strictly increasing rescaling of them.
Both are property-tested.  The five methods of the RcRL paper, Table 3 are switches:

    RcRL                   scoring=pairwise  schedule=curriculum
    Absolute RcRL          scoring=absolute  schedule=curriculum
    Absolute RaR           scoring=absolute  schedule=all
    Pairwise RaR           scoring=pairwise  schedule=all
    Dropout Absolute RaR   scoring=absolute  schedule=dropout

plus ``weighting=uniform`` (Table 3's "Weighting" ablation) and ``ordering=1..3`` (Orderings 1–3).
Comparisons within a group run as a round robin (G(G − 1) ordered calls per criterion) or a Swiss
tournament with a Bradley–Terry fit (the RcRL paper, §6.1, :mod:`rewardzoo.judges.pairwise`).

Judges: ``judge.kind=lm`` with ``judge.lm.model=policy`` is the RcRL paper's **self-judge**, the frozen starting
policy (with LoRA: the live policy with its adapters disabled, no second copy).  It needs the policy,
which exists only once the trainer has built it, so RcRL has :meth:`bind_policy`, which
:func:`rewardzoo.recipes.make_trainer` calls once before the first step (the core knows nothing of
it).  ``judge.lm.model=<name or path>`` loads another frozen judge; ``judge.kind=rule`` is the rule
judge of programmatic criteria (the CPU toy).  RcRL never sees the task: the zoo builds it from its
config section alone.

Departures from the RcRL paper and choices of ours:

1. The judge reads the whole completion; the RcRL paper's prompts are not given, so the templates are ours.
2. Absolute scoring reads the judge's P(Yes) on "does the response meet the criterion?" (LM judge)
   or the rule judge's score; the RcRL paper's RaR judge writes scores.
3. Under ``all``/``dropout`` the weights are uniform (nothing is newest); dropout drops each
   criterion with probability 0.5 per step (ours), keeping at least one.
4. No KL term (the RcRL paper's "+ KL Term" row is ``grpo.beta``); bonuses are a wrapper
   (:mod:`rewardzoo.rewards.bonuses`, ``reward.bonuses.*``).

Example, the calibrated rule judge (linear verdicts) on the first criterion (required words) of the toy rubric —
the checks give 1, ½ and 0, so with J = ½ + Δ/4, P(0 ≻ 1) = ⅝, P(0 ≻ 2) = ¾, P(1 ≻ 2) = ⅝:

>>> import torch
>>> from dataclasses import replace
>>> from rewardzoo.core.types import Rollouts
>>> cfg = RcRLConfig(rubric="rubric_writing", judge=RcRLJudgeConfig(kind="rule"))
>>> meta = {"words": ["red", "cat"], "min_words": 2, "max_words": 4}
>>> batch = Rollouts(prompts=["red cat 2-4:"] * 3, completions=["The red cat.", "The cat.", "A dog."],
...                  answers=["The red cat.", "The cat.", "A dog."], references=[None] * 3,
...                  group_ids=torch.zeros(3, dtype=torch.long), meta=[meta] * 3, step=0)
>>> RcRL(cfg).score(batch).rewards.tolist()  # (⅝ + ¾)/2, (⅜ + ⅝)/2, (¼ + ⅜)/2
[0.6875, 0.5, 0.3125]
>>> RcRL(replace(cfg, scoring="absolute")).score(batch).rewards.tolist()  # the checks themselves (m = 0)
[1.0, 0.5, 0.0]

Untested: hub-model judges and GPU runs (the LM judge is tested end to end on the tiny model).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import torch

from rewardzoo.core.config import check_section
from rewardzoo.core.types import RewardOutput, Rollouts, derive_seed
from rewardzoo.judges.pairwise import (
    COMPARISONS,
    Judge,
    LMJudge,
    LMJudgeConfig,
    RuleJudge,
    RuleJudgeConfig,
    Tournament,
    group_rows,
)
from rewardzoo.judges.rubric import SCHEDULES, WEIGHTINGS, Rubric, RubricSchedule, load_rubric
from rewardzoo.rewards.context import RewardContext
from rewardzoo.tasks.chat import judge_prompts

SCORINGS = ("pairwise", "absolute")
JUDGE_KINDS = ("lm", "rule")


@dataclass
class RcRLJudgeConfig:
    """Which judge RcRL asks."""

    kind: str = "lm"
    """'lm' (a causal LM read from its A/B logits; the RcRL paper's self-judge by default) or 'rule' (programmatic
    checks)."""
    lm: LMJudgeConfig = field(default_factory=LMJudgeConfig)
    """Settings of the LM judge."""
    rule: RuleJudgeConfig = field(default_factory=RuleJudgeConfig)
    """Settings of the rule judge (noise, position bias and exploitable biases)."""


@dataclass
class RcRLConfig:
    """Settings of RcRL (defaults follow 004 where it gives them: creative-writing rubric, K = 100,
    newest weight ½, round robin, the self-judge)."""

    RANGES: ClassVar[dict[str, str]] = {
        "steps_per_criterion": "[0, inf)",
        "newest_weight": "(0, 1]",
        "dropout_rate": "[0, 1)",
        "ordering": "[0, inf)",
        "swiss_rounds": "[0, inf)",
        "bt_alpha": "[0, inf)",
    }

    rubric: str = "creative_writing"
    """Shipped rubric (creative_writing = RcRL paper Table 7, healthbench = Table 8, rubric_writing = the toy task's)
    or the path of a rubric YAML file."""
    scoring: str = "pairwise"
    """pairwise (within-group win rates) or absolute (the judge's score of each rollout alone)."""
    schedule: str = "curriculum"
    """curriculum (criterion k active from step k·K), all (every criterion from the start) or dropout."""
    steps_per_criterion: int = 0
    """K, steps between two criteria of the curriculum (0 = the rubric's own: 100 creative writing, 50 HealthBench)."""
    weighting: str = "newest"
    """newest (the newest active criterion gets newest_weight, the rest share the remainder) or uniform."""
    newest_weight: float = 0.5
    """w_new, the newest criterion's weight under newest weighting."""
    dropout_rate: float = 0.5
    """Probability of dropping each criterion at a step (schedule=dropout; our choice, the RcRL paper gives none)."""
    ordering: int = 0
    """Criterion order: 0 = the rubric's own, n >= 1 = random ordering n (the RcRL paper, Table 3 Ordering 1–3)."""
    comparisons: str = "round_robin"
    """round_robin (G(G−1) ordered judge calls per criterion and group) or swiss (Swiss rounds + Bradley–Terry)."""
    swiss_rounds: int = 0
    """Rounds of the Swiss tournament (0 = ⌈log2 G⌉)."""
    bt_alpha: float = 0.1
    """Regulariser of the Swiss tournament's Bradley–Terry fit."""
    judge: RcRLJudgeConfig = field(default_factory=RcRLJudgeConfig)
    """The judge."""

    def validate(self) -> None:
        """Raise ValueError, saying what to change, on settings that cannot run (ranges: ``RANGES``)."""
        for key, options in (
            ("scoring", SCORINGS),
            ("schedule", SCHEDULES),
            ("weighting", WEIGHTINGS),
            ("comparisons", COMPARISONS),
        ):
            if getattr(self, key) not in options:
                raise ValueError(f"{key} must be one of {', '.join(options)}; got {getattr(self, key)!r}")
        if self.judge.kind not in JUDGE_KINDS:
            raise ValueError(f"judge.kind must be one of {', '.join(JUDGE_KINDS)}; got {self.judge.kind!r}")


class RcRL:
    """Rubric-curriculum reward: weighted per-criterion win rates (or absolute scores) within each group.

    ``judge`` replaces the judge ``cfg.judge`` describes; ``rubric`` replaces the one ``cfg.rubric`` names
    (``cfg.ordering`` still applies).
    """

    warmup_steps = 0

    def __init__(
        self,
        cfg: RcRLConfig | None = None,
        *,
        seed: int = 0,
        judge: Judge | None = None,
        rubric: Rubric | None = None,
        device: str = "cpu",
    ):
        self.cfg = cfg = cfg or RcRLConfig()
        check_section(cfg, "reward.rcrl")
        base = rubric or load_rubric(cfg.rubric)
        self.rubric = base.reordered(cfg.ordering)
        self.schedule = RubricSchedule(
            len(self.rubric.criteria),
            cfg.schedule,
            cfg.steps_per_criterion or base.steps_per_criterion,
            cfg.weighting,
            cfg.newest_weight,
            cfg.dropout_rate,
            seed=derive_seed(seed, "rcrl"),
        )
        self.tournament = Tournament(cfg.comparisons, cfg.swiss_rounds, cfg.bt_alpha)
        self.seed = seed
        self.judge: Judge | None = judge
        if judge is None and cfg.judge.kind == "rule":
            for c in self.rubric.criteria:
                c.check_fn()  # every criterion must have a check: fail now, not at the first step
            self.judge = RuleJudge(cfg.judge.rule, seed=derive_seed(seed, "rcrl", "judge"))
        elif judge is None and cfg.judge.lm.model != "policy":
            self.judge = LMJudge.from_pretrained(cfg.judge.lm.model, cfg.judge.lm, device)
        self.last_step = -1

    SEES_TASK = False  # its judge is not the task's

    @classmethod
    def from_config(cls, cfg: RcRLConfig | None = None, ctx: RewardContext | None = None) -> RcRL:
        """RcRL from its config section and the run's seed and device (``ctx.task`` is not read)."""
        ctx = ctx or RewardContext()
        return cls(cfg, seed=ctx.seed, device=ctx.device)

    def bind_policy(self, policy: torch.nn.Module, tokenizer) -> None:
        """Give the self-judge its model: the policy as it is now (the starting policy), frozen — with LoRA the
        live policy with adapters disabled.  Called once by ``make_trainer`` before the first step; a no-op
        for other judges."""
        if self.judge is None:
            self.judge = LMJudge.self_judge(policy, tokenizer, self.cfg.judge.lm)

    def score(self, batch: Rollouts) -> RewardOutput:
        """r_i = Σ_c ω_c(t) · w_c(i) over the criteria active at ``batch.step``."""
        if self.judge is None:
            raise RuntimeError(
                "RcRL's self-judge has no model yet: call reward.bind_policy(policy, tokenizer) with the "
                "starting policy before scoring (rewardzoo.make_trainer does), or set judge.lm.model"
            )
        step, texts = batch.step, batch.completions
        weights = self.schedule.weights(step)  # [C]
        active = self.schedule.active(step)
        groups = _groups(batch.group_ids)
        rewards = torch.zeros(len(batch), dtype=torch.float64)  # [N]
        components: dict[str, torch.Tensor] = {}
        metrics: dict[str, float] = {"reward/active_criteria": float(len(active))}
        calls = unparseable = consistent = pairs = 0
        questions = judge_prompts(batch)  # a chat task's original prompts, not the policy's chat markup
        for k in active:
            c = self.rubric.criteria[k]
            if self.cfg.scoring == "pairwise":

                def ask(first: list[int], second: list[int], c=c):
                    return self.judge.compare(
                        c,
                        [questions[i] for i in first],
                        [batch.meta[i] for i in first],
                        [texts[i] for i in first],
                        [texts[i] for i in second],
                        step=step,
                    )

                w, stats = self.tournament.win_rates(ask, groups, seed=derive_seed(self.seed, "swiss", step, k))  # [N]
                calls, unparseable = calls + stats.calls, unparseable + stats.unparseable
                consistent, pairs = consistent + stats.consistent, pairs + stats.pairs
            else:
                v = self.judge.score(c, questions, batch.meta, texts, step=step)
                w = v.prob  # [N]
                calls, unparseable = calls + len(batch), unparseable + int(v.unparseable.sum())
            rewards += weights[k] * w  # [N]
            components[f"criterion/{c.name}"] = w.float()
            metrics[f"reward/criterion/{c.name}"] = w.mean().item()
        if self.cfg.schedule == "curriculum":
            metrics["reward/newest_criterion"] = float(active[-1])
        metrics.update(
            {
                "judge/calls": float(calls),
                "judge/unparseable": float(unparseable),
                "judge/unparseable_frac": unparseable / max(calls, 1),
            }
        )
        if pairs:
            metrics["judge/position_consistency"] = consistent / pairs
        self.last_step = step
        return RewardOutput(rewards=rewards.float(), components=components, metrics=metrics)

    def update(self, batch: Rollouts, out: RewardOutput) -> dict[str, float]:
        """Nothing is learned: the judge is frozen and the curriculum is a function of the step."""
        return {}

    def state_dict(self) -> dict:
        """The criterion order, the last step scored (the curriculum's position) and the judge's state."""
        judge = getattr(self.judge, "state_dict", None)
        return {
            "ordering": [c.name for c in self.rubric.criteria],
            "last_step": self.last_step,
            "active": self.schedule.active(self.last_step) if self.last_step >= 0 else [],
            "judge": judge() if judge else None,
        }

    def load_state_dict(self, state: dict) -> None:
        """Restore :meth:`state_dict` (the criterion order must be the one this config builds)."""
        order = [c.name for c in self.rubric.criteria]
        if state["ordering"] != order:
            raise ValueError(
                f"the checkpoint's rubric order {state['ordering']} is not this config's {order}; "
                f"resume with the rubric and ordering the run was started with"
            )
        self.last_step = state["last_step"]
        if state["judge"] is not None and hasattr(self.judge, "load_state_dict"):
            self.judge.load_state_dict(state["judge"])


def _groups(group_ids: torch.Tensor) -> list[list[int]]:
    """Row indices of each group; every group must have two rows at least."""
    groups = group_rows(group_ids)
    if any(len(g) < 2 for g in groups):
        raise ValueError(
            "RcRL compares rollouts within a group: every group needs at least 2 rows (grpo.group_size >= 2)"
        )
    return groups
