"""RcRL: the reward's math by hand, its App. A.2 properties (group mean exactly ½, P(i≻j) + P(j≻i) = 1 inside,
invariance to increasing rescalings of the judge's scores), the calibrated judge ranking a group identically in
both modes and the miscalibrated one not, the five Table 3 variants as switches at the board's level, the
self-judge bound through make_trainer (LoRA: adapters disabled), state round trip and an exact resume."""

import math
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from rewardzoo.core.advantages import compute_advantages
from rewardzoo.core.config import ConfigError
from rewardzoo.core.logger import read_metrics
from rewardzoo.core.types import Rollouts
from rewardzoo.judges.pairwise import RuleJudgeConfig, miscalibration
from rewardzoo.judges.rubric import Criterion, Rubric, load_rubric
from rewardzoo.recipes import make_trainer
from rewardzoo.rewards.rcrl import RcRL, RcRLConfig, RcRLJudgeConfig
from rewardzoo.tasks.checks.writing import CHECKS, LEXICON
from rewardzoo.tasks.rubric_writing import RubricWriting, RubricWritingConfig
from rewardzoo.zoo import load_config, shipped_recipe

ALGORITHMS = shipped_recipe("rcrl_rubric_writing").parent

TASK = RubricWriting(RubricWritingConfig(n_train=64, n_eval=8))
WORDS = list(LEXICON) + ["xqz", "Cat", "The"]


def rule(**kw) -> RcRLJudgeConfig:
    return RcRLJudgeConfig(kind="rule", rule=RuleJudgeConfig(**kw))


def rcrl(seed: int = 0, judge=None, rubric=None, **kw) -> RcRL:
    return RcRL(RcRLConfig(rubric="rubric_writing", judge=judge or rule(), **kw), seed=seed, rubric=rubric)


def batch(texts: list[str], G: int, step: int = 0) -> Rollouts:
    """Groups of G rows, prompt k for group k (toy-task metas)."""
    ex = [TASK.train[i // G] for i in range(len(texts))]
    return Rollouts(
        prompts=[e.prompt for e in ex],
        completions=texts,
        answers=texts,
        references=[None] * len(texts),
        group_ids=torch.arange(len(texts)) // G,
        meta=[e.meta for e in ex],
        step=step,
    )


sentences = st.lists(st.sampled_from(WORDS), min_size=0, max_size=9).map(lambda ws: " ".join(ws) + ".")


def test_two_active_criteria_by_hand():
    """K = 1, step 1: required_words (weight ½) and length_window (newest, ½); meta words = the prompt's, window 3..6.
    Hard verdicts.  Texts: t0 has both words and 4 words; t1 one word, 4 words; t2 no word, 1 word (window score ⅔).
    required_words win rates: t0 1, t1 ½, t2 0; length_window: t0, t1 tie (½ each vs the other) and beat t2:
    t0 = t1 = (½ + 1)/2 = ¾, t2 = 0.  r = ½·(1, ½, 0) + ½·(¾, ¾, 0) = (0.875, 0.625, 0)."""
    ex = TASK.train[0]
    w0, w1 = ex.meta["words"]
    meta = {**ex.meta, "min_words": 3, "max_words": 6}
    texts = [f"{w0} {w1} the a.", f"{w0} the a the.", "the."]
    b = Rollouts(
        prompts=[ex.prompt] * 3,
        completions=texts,
        answers=texts,
        references=[None] * 3,
        group_ids=torch.zeros(3, dtype=torch.long),
        meta=[meta] * 3,
        step=1,
    )
    out = rcrl(judge=rule(verdict="hard"), steps_per_criterion=1).score(b)
    assert out.rewards.tolist() == pytest.approx([0.875, 0.625, 0.0])
    assert set(out.components) == {"criterion/required_words", "criterion/length_window"}
    assert out.metrics["reward/active_criteria"] == 2 and out.metrics["judge/calls"] == 12  # 2 criteria × 3·2


@settings(max_examples=40, deadline=None)
@given(
    st.lists(sentences, min_size=8, max_size=8),
    st.sampled_from(["curriculum", "all", "dropout"]),
    st.sampled_from(["round_robin", "swiss"]),
    st.integers(0, 200),
    st.integers(0, 99),
)
def test_group_mean_of_the_pairwise_reward_is_exactly_half(texts, schedule, comparisons, step, seed):
    """Whatever the texts, the schedule, the judge's noise, position and length biases: every group averages ½."""
    reward = rcrl(
        seed,
        judge=rule(noise=0.3, position_bias=0.2, length_bias=0.05, unparseable_rate=0.1),
        schedule=schedule,
        comparisons=comparisons,
        steps_per_criterion=7,
    )
    r = reward.score(batch(texts, G=4, step=step)).rewards.double()
    assert r.view(2, 4).mean(1).tolist() == pytest.approx([0.5, 0.5], abs=1e-6)


INCREASING = [lambda x: x**3 + 2 * x, lambda x: math.exp(3 * x) - 7, lambda x: math.log1p(x) * 10, lambda x: x / 100]


@settings(max_examples=30, deadline=None)
@given(st.lists(sentences, min_size=6, max_size=6), st.sampled_from(range(len(INCREASING))), st.integers(0, 40))
def test_pairwise_reward_is_invariant_to_increasing_rescaling_of_the_judge(texts, which, step):
    """App. A.2: hard pairwise verdicts depend only on the order of the judge's scores, so replacing every
    check c by f∘c (f strictly increasing) changes no reward; absolute scoring does change."""
    f = INCREASING[which]
    toy = load_rubric("rubric_writing")
    rescaled = Rubric(
        "rescaled",
        tuple(Criterion(c.name, c.description, check=lambda t, m, g=CHECKS[c.check]: f(g(t, m))) for c in toy.criteria),
        steps_per_criterion=3,
    )
    plain = Rubric("plain", toy.criteria, steps_per_criterion=3)
    b = batch(texts, G=3, step=step)
    hard = rule(verdict="hard")
    a, r = rcrl(judge=hard, rubric=plain).score(b).rewards, rcrl(judge=hard, rubric=rescaled).score(b).rewards
    assert torch.equal(a, r)


@settings(max_examples=40, deadline=None)
@given(st.lists(sentences, min_size=8, max_size=8), st.sampled_from(["curriculum", "all"]), st.integers(0, 60))
def test_calibrated_absolute_and_pairwise_judges_rank_a_group_identically(texts, schedule, step):
    """Miscalibration 0, noise 0, linear verdicts: within every group the pairwise reward is
    ½ + G/(2·span·(G − 1))·(absolute − group mean) = ½ + (absolute − mean)/3 at G = 4, so the two rank the group
    identically and the pooled advantages (the recipes' normalisation, here without its ε) are the same.  The
    position bias and the length preference do not break it."""
    judge = rule(position_bias=0.1, length_bias=0.01, repetition_blind=True, non_english_blind=True)
    b = batch(texts, G=4, step=step)
    pair = rcrl(judge=judge, schedule=schedule, steps_per_criterion=5).score(b).rewards.double().view(2, 4)
    absolute = (
        rcrl(judge=judge, schedule=schedule, steps_per_criterion=5, scoring="absolute")
        .score(b)
        .rewards.double()
        .view(2, 4)
    )
    assert torch.allclose(pair, 0.5 + (absolute - absolute.mean(1, keepdim=True)) / 3, atol=1e-6)
    order = lambda r: torch.sign(r[:, :, None] - r[:, None, :])  # noqa: E731 - [2, 4, 4] pairwise order in each group
    close = (absolute[:, :, None] - absolute[:, None, :]).abs() < 1e-6  # float ties may break either way
    assert torch.equal(order(pair)[~close], order(absolute)[~close])
    gids = torch.arange(8) // 4
    assert torch.allclose(
        compute_advantages(pair.flatten(), gids, "pooled", eps=0.0),
        compute_advantages(absolute.flatten(), gids, "pooled", eps=0.0),
        atol=1e-4,
    )


def test_a_saturating_absolute_scale_erases_what_the_pairwise_reward_still_sees():
    """Length window 3–6 (width 4): 6 words score 1, 7 words 1 − ¼ = ¾.  The calibrated absolute reward tells them
    apart; a lenient 6-point scale (leniency 0.2) reports 1.2 → 1 and 0.95 → 1: a tie, a group without advantage.
    The pairwise reward reads only what the judge perceives, so miscalibration does not touch it."""
    length = Rubric("length", (Criterion("length_window", "In the window?", check="length_window"),))
    meta = {"words": ["red", "cat"], "min_words": 3, "max_words": 6}
    texts = ["The red cat sees a sun.", "The red cat sees a big sun."]
    b = Rollouts(
        prompts=["red cat 3-6:"] * 2,
        completions=texts,
        answers=texts,
        references=[None] * 2,
        group_ids=torch.zeros(2, dtype=torch.long),
        meta=[meta] * 2,
        step=0,
    )
    calibrated, lenient = rule(), rule(levels=6, leniency=0.2)
    assert rcrl(judge=calibrated, rubric=length, scoring="absolute").score(b).rewards.tolist() == [1.0, 0.75]
    assert rcrl(judge=lenient, rubric=length, scoring="absolute").score(b).rewards.tolist() == [1.0, 1.0]
    pairwise = [rcrl(judge=j, rubric=length).score(b).rewards for j in (calibrated, lenient, rule(**miscalibration(3)))]
    assert pairwise[0].tolist() == pytest.approx([0.5 + 0.25 / 4, 0.5 - 0.25 / 4])
    assert torch.equal(pairwise[0], pairwise[1]) and torch.equal(pairwise[0], pairwise[2])


def test_the_recipes_judge_sits_at_the_boards_level():
    """The five recipes' rule judge: miscalibration level 2 (docs/rewards/rcrl.md), the rest of the judge shared."""
    for path in sorted(ALGORITHMS.glob("*rubric_writing.yaml")):
        judge = load_config(str(path)).reward.rcrl.judge.rule
        assert {k: getattr(judge, k) for k in miscalibration(2)} == miscalibration(2), path.name
        assert judge.verdict == "linear" and judge.repetition_blind and judge.non_english_blind


def test_absolute_scoring_is_not_invariant():
    toy = load_rubric("rubric_writing")
    doubled = Rubric(
        "doubled",
        tuple(
            Criterion(c.name, c.description, check=lambda t, m, g=CHECKS[c.check]: 2 * g(t, m)) for c in toy.criteria
        ),
    )
    b = batch(["The red cat.", "cat", "A dog runs.", "xqz"], G=2)
    a = rcrl(scoring="absolute", schedule="all").score(b).rewards
    d = rcrl(scoring="absolute", schedule="all", rubric=doubled).score(b).rewards
    assert torch.allclose(d, 2 * a) and not torch.equal(a, d)


@pytest.mark.parametrize(
    "scoring, schedule, step, n_active, newest",
    [
        ("pairwise", "curriculum", 25, 3, 0.5),  # RcRL: K = 10, criteria 0..2, the newest at ½
        ("absolute", "curriculum", 25, 3, 0.5),  # Absolute RcRL
        ("absolute", "all", 0, 13, 1 / 13),  # Absolute RaR: every criterion from step 0, uniform
        ("pairwise", "all", 0, 13, 1 / 13),  # Pairwise RaR
        ("absolute", "dropout", 5, None, None),  # Dropout Absolute RaR: a seeded subset, uniform
    ],
)
def test_the_five_table_3_methods_are_switches(scoring, schedule, step, n_active, newest):
    reward = rcrl(scoring=scoring, schedule=schedule, steps_per_criterion=10)
    out = reward.score(batch(["The red cat.", "cat", "A dog runs.", "xqz"], G=2, step=step))
    active = reward.schedule.active(step)
    w = reward.schedule.weights(step)
    assert out.metrics["reward/active_criteria"] == len(active)
    if n_active is not None:
        assert len(active) == n_active and w[active[-1]].item() == pytest.approx(newest)
    else:
        assert 1 <= len(active) < 13 and torch.allclose(
            w[active], torch.full((len(active),), 1 / len(active), dtype=w.dtype)
        )
    if scoring == "absolute":
        assert "judge/position_consistency" not in out.metrics and out.metrics["judge/calls"] == 4 * len(active)


def test_state_round_trip_and_wrong_ordering():
    reward = rcrl(3, judge=rule(noise=0.5, call_offset=0.5), scoring="absolute")
    b = batch(["The red cat.", "cat", "A dog runs.", "xqz"], G=4, step=2)
    reward.score(b)
    state = reward.state_dict()
    after = reward.score(b).rewards
    reward.load_state_dict(state)
    assert torch.equal(reward.score(b).rewards, after) and state["active"] == [0]
    with pytest.raises(ValueError, match="rubric order"):
        rcrl(3, ordering=2).load_state_dict(state)


def test_bad_settings_fail_before_work():
    with pytest.raises(ValueError, match="no programmatic check"):
        RcRL(RcRLConfig(rubric="creative_writing", judge=rule()))
    with pytest.raises(ValueError, match="scoring must be one of pairwise, absolute"):
        RcRL(RcRLConfig(scoring="holistic"))
    with pytest.raises(RuntimeError, match="bind_policy"):
        RcRL(RcRLConfig(rubric="rubric_writing")).score(batch(["a.", "b."], G=2))


RUN = [
    "task.name=rubric_writing",
    "task.rubric_writing.n_train=200",
    "task.rubric_writing.n_eval=16",
    "reward.name=rcrl",
    "reward.rcrl.rubric=rubric_writing",
    "reward.rcrl.steps_per_criterion=1",
    "sampling.max_new_tokens=8",
    "sft.disjoint_rl_prompts=false",
]


def test_config_errors_name_the_key(fast_config):
    with pytest.raises(ConfigError, match="reward.rcrl.weighting must be one of newest, uniform"):
        fast_config(*RUN, "reward.rcrl.weighting=oldest")


def test_self_judge_trains_through_make_trainer(fast_config):
    """The LM self-judge is bound by make_trainer to the starting policy (LoRA: the live policy with adapters
    disabled, no copy; the frozen copy without LoRA is tested in tests/judges/test_pairwise.py) and a run
    logs its keys: one criterion at step 0, 8 groups × 4·3 ordered calls."""
    cfg = fast_config(
        *RUN,
        "steps=1",
        "reward.rcrl.judge.kind=lm",
        "reward.rcrl.judge.lm.choices=[A,B]",
        "reward.rcrl.judge.lm.absolute_choices=[Y,N]",
        "reward.rcrl.judge.lm.min_choice_mass=0",
        "reward.rcrl.judge.lm.pairwise_template='{title}|{prompt}|{first}|{second}|'",
        "model.lora.enabled=true",
        "model.lora.r=4",
    )
    trainer = make_trainer(cfg)
    assert trainer.reward.judge.model.__self__.copy is None  # ReferencePolicy of a peft model: adapters off, no copy
    assert trainer.reward.judge.model.__self__.policy is trainer.policy
    trainer.train()
    rows = read_metrics(Path(cfg.run_dir) / "metrics.jsonl")
    assert rows[-1]["reward/active_criteria"] == 1 and rows[-1]["judge/calls"] == 8 * 4 * 3
    assert rows[-1]["reward/mean"] == pytest.approx(0.5, abs=1e-6)


def test_resume_through_the_trainer_is_exact(fast_config, tmp_path):
    """2 steps straight == 1 step, then resume for 1 more (the rule judge's noise generator is in the checkpoint)."""
    noisy = [
        *RUN,
        "reward.rcrl.judge.kind=rule",
        "reward.rcrl.judge.rule.noise=0.3",
        "checkpoint_every=1",
        "eval.every=0",
    ]
    straight = make_trainer(fast_config(*noisy, "steps=2", f"run_dir={tmp_path / 'a'}"))
    straight.train()
    make_trainer(fast_config(*noisy, "steps=1", f"run_dir={tmp_path / 'b'}")).train()
    resumed = make_trainer(fast_config(*noisy, "steps=2", f"run_dir={tmp_path / 'b'}", "resume=true"))
    resumed.train()
    a, b = (read_metrics(tmp_path / d / "metrics.jsonl")[-1] for d in "ab")
    assert a["reward/std"] == b["reward/std"] and a["policy/loss"] == b["policy/loss"]
    assert all(torch.equal(p, q) for p, q in zip(straight.policy.parameters(), resumed.policy.parameters()))
    assert resumed.reward.last_step == 1 and straight.reward.judge.calls == resumed.reward.judge.calls
