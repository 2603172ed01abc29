"""VARL: the multiplicative gate (failing rows exactly 0), the additive ablation, FIFO/reservoir negatives
of verifier-passing rows only, completion features (the scratchpad too), the discriminator's AUC, the
transform warning, no path from the discriminator to the verifier, state round trip, recipes that are
RLVR's twins (equal outside reward.*)."""

import doctest
import warnings
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from rewardzoo.core.config import ConfigError, as_dict
from rewardzoo.core.models import TinyModelConfig
from rewardzoo.core.types import Rollouts
from rewardzoo.judges.classifier import JudgeConfig, SequenceJudge
from rewardzoo.rewards import varl as varl_module
from rewardzoo.rewards.context import RewardContext
from rewardzoo.rewards.transforms import G_TRANSFORMS
from rewardzoo.rewards.varl import VARL, VARLConfig
from rewardzoo.tasks.hackable_multiplication import HackableMultiplication, HackableMultiplicationConfig
from rewardzoo.tasks.multiplication import Multiplication, MultiplicationConfig
from rewardzoo.zoo import build_reward, build_task, load_config
from tests.rewards.judged import batch, drive

TINY = TinyModelConfig(hidden_size=32, num_layers=1, num_heads=2, num_kv_heads=1, intermediate_size=64)
TASK = Multiplication(MultiplicationConfig(n_train=40, n_eval=5))
FOUR = ["D", "neg_log_one_minus_D", "log_D", "logit"]


def varl(seed: int = 0, verifier=None, demonstrations=None, **kw) -> VARL:
    """A VARL with a tiny discriminator on the multiplication task; ``kw`` overrides VARLConfig fields,
    ``verifier`` and ``demonstrations`` replace the task's."""
    cfg = VARLConfig(discriminator=JudgeConfig(tiny=TINY, lr=1e-2), **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the transform warning has its own test
        reward = VARL.from_config(cfg, RewardContext(seed=seed, task=TASK))
    if verifier is not None:
        reward.verifier = verifier
    if demonstrations is not None:
        reward.demonstrations = demonstrations
    return reward


def exact(answer, reference, meta) -> float:
    return float(answer is not None and answer == reference)


def constant_logit(judge: SequenceJudge, z: float) -> None:
    """Make the discriminator say logit z (D = σ(z)) on every input: a zero-weight score head with bias z."""
    head = torch.nn.Linear(judge.model.score.in_features, 1, bias=True)
    torch.nn.init.zeros_(head.weight)
    torch.nn.init.constant_(head.bias, z)
    judge.model.score = head


def params(module: torch.nn.Module) -> list[torch.Tensor]:
    return [p.detach().clone() for p in module.parameters()]


def same(a, b) -> bool:
    return all(torch.equal(x, y) for x, y in zip(a, b))


GATE_REWARD = varl()


# ---------------------------------------------------------------------- the reward
@settings(max_examples=40, deadline=None)
@given(z=st.floats(-40.0, 40.0), passes=st.lists(st.booleans(), min_size=6, max_size=6), g=st.sampled_from(FOUR))
def test_failing_rows_get_exactly_zero_whatever_the_discriminator_says(z, passes, g):
    """r = v·g(D): rows with v = 0 are exactly +0.0 for any D (D ≈ 0, ½, ≈ 1; any g, incl. negative ones);
    rows with v = 1 get g(D) computed from the logit."""
    reward = GATE_REWARD
    reward.g = G_TRANSFORMS[g]
    constant_logit(reward.discriminator, z)
    verdicts = iter(passes)
    reward.verifier = lambda answer, reference, meta: float(next(verdicts))
    out = reward.score(batch())
    v = torch.tensor(passes, dtype=torch.float32)
    fail = v == 0
    assert torch.equal(out.rewards[fail], torch.zeros(int(fail.sum())))
    assert not torch.signbit(out.rewards[fail]).any()  # +0.0, never −0.0
    has_features = torch.tensor([a is not None for a in batch().answers])
    want = G_TRANSFORMS[g].from_logit(torch.tensor(z)).float()
    assert torch.equal(out.rewards[~fail & has_features], want.expand(int((~fail & has_features).sum())))
    assert torch.equal(out.components["verifier"], v)


def test_additive_ablation_is_v_plus_lambda_g():
    """combine=add, λ = 0.5, g = logit, the discriminator's logit fixed at z = −2:
    rows 36 (v=1) → 1 + 0.5·(−2) = 0; 35 (v=0) → 0 + 0.5·(−2) = −1; malformed (no features) → 0 + 0 = 0;
    84 (v=1) → 0; malformed → 0; 48 (v=0) → −1."""
    reward = varl(combine="add", additive_weight=0.5, g="logit", verifier=exact)
    constant_logit(reward.discriminator, -2.0)
    out = reward.score(batch())
    assert out.rewards.tolist() == [0.0, -1.0, 0.0, 0.0, 0.0, -1.0]
    reward.cfg.combine = "multiply"  # the same rows under the gate: v·g = −2 where v = 1, 0 elsewhere
    assert reward.score(batch()).rewards.tolist() == [-2.0, 0.0, 0.0, -2.0, 0.0, 0.0]


def test_default_reward_is_v_times_d_and_logs_its_parts():
    reward = varl(verifier=exact)
    b = batch()
    out = reward.score(b)
    d = reward.discriminator.prob_reference(["12*3=", "12*3=", "21*4=", "21*4="], ["36", "35", "84", "48"])
    assert torch.equal(out.components["disc_prob"][[0, 1, 3, 5]], d)
    assert torch.equal(out.rewards, torch.tensor([d[0], 0.0, 0.0, d[2], 0.0, 0.0]))
    assert out.metrics["reward/verifier_mean"] == pytest.approx(2 / 6)
    assert out.metrics["reward/disc_prob_passing_mean"] == pytest.approx(d[[0, 2]].mean().item())


def test_completion_features_show_the_whole_completion_and_demonstration_texts():
    reward = varl(features="completion", verifier=exact)
    b = batch()
    b.completions = ["36", "35", "3 6", "84", "eight", "48"]
    seen = []
    real = reward.discriminator.logit_reference
    reward.discriminator.logit_reference = lambda prompts, answers: seen.append(list(answers)) or real(prompts, answers)
    reward.score(b)
    assert seen == [b.completions]  # every row has features, malformed or not
    demo_of = {e.prompt: e.demonstration for e in TASK.train}
    task_batch = Rollouts(
        prompts=[TASK.train[0].prompt] * 2,
        completions=["1", "2"],
        answers=["1", "2"],
        references=[TASK.train[0].reference] * 2,
        group_ids=torch.zeros(2, dtype=torch.long),
        meta=[{}] * 2,
        step=0,
    )
    assert reward.positives(task_batch) == [(TASK.train[0].prompt, demo_of[TASK.train[0].prompt])]


def test_completion_features_show_the_scratchpad_of_the_hackable_task():
    """On the scratchpad testbed (hackable multiplication, plain format) completion features are the whole
    text — scratchpad, '=', answer list — for the rows D scores and for its negatives; its positive is the
    prompt's demonstration text, scratchpad included."""
    task = HackableMultiplication(
        HackableMultiplicationConfig(
            multiplication=MultiplicationConfig(digits_a=3, n_train=40, n_eval=5, scratchpad=True)
        )
    )
    cfg = VARLConfig(discriminator=JudgeConfig(tiny=TINY), features="completion", warmup_steps=0, negatives=4)
    reward = VARL.from_config(cfg, RewardContext(task=task))
    e = task.train[0]
    scratch = e.demonstration.rpartition("=")[0]
    completions = [e.demonstration, f"{scratch}={e.reference} 7", "1+2=3", "no answer"]
    b = Rollouts(
        prompts=[e.prompt] * 4,
        completions=completions,
        answers=[task.parse(c) for c in completions],
        references=[e.reference] * 4,
        group_ids=torch.zeros(4, dtype=torch.long),
        meta=[e.meta] * 4,
        step=0,
    )
    scored, trained = [], []
    real_score, real_train = reward.discriminator.logit_reference, reward.discriminator.train_step
    reward.discriminator.logit_reference = lambda p, a: scored.append(list(a)) or real_score(p, a)
    reward.discriminator.train_step = lambda pos, neg: trained.append((list(pos), list(neg))) or real_train(pos, neg)
    reward.update(b, reward.score(b))
    assert scored[0] == completions and "+" in scratch  # D read the scratchpads, not only the answers
    positives, negatives = trained[0]
    assert positives == [(e.prompt, e.demonstration)]
    assert set(negatives) == {(e.prompt, e.demonstration), (e.prompt, f"{scratch}={e.reference} 7")}  # the passing two


# ---------------------------------------------------------------------- the discriminator's held-out AUC
def test_auc_of_references_against_passing_generations_by_hand():
    """D fixed by a lookup of logits (answer features): references 36 → 2 and 84 → 0; the passing rows
    36 (2), 35 (1), 84 (0), 48 (−1) (the verifier passes every well-formed answer).  Pairs won by each
    reference: z=2 beats 1, 0, −1 and ties 2 → 3.5; z=0 beats −1, ties 0, loses to 2 and 1 → 1.5;
    AUC = (3.5 + 1.5) / (2 · 4) = 0.625, computed before D's step on them."""
    reward = varl(verifier=lambda a, r, m: float(a is not None), warmup_steps=0)
    logit = {"36": 2.0, "84": 0.0, "35": 1.0, "48": -1.0}
    reward.discriminator.logit_reference = lambda prompts, answers: torch.tensor([logit[a] for a in answers])
    b = batch()
    stats = reward.update(b, reward.score(b))
    assert stats["disc/auc_ref_vs_passing"] == pytest.approx(0.625)
    assert stats["disc/updated"] == 1.0


def test_auc_is_not_logged_without_passing_rows_and_counts_ties_as_half():
    """Nothing passes: no AUC key (nothing to rank).  Every passing answer is the reference (the exact
    verifier): all pairs are ties of equal strings, AUC ½ whatever D has learned."""
    nothing = varl(verifier=lambda a, r, m: 0.0)
    b = batch()
    assert "disc/auc_ref_vs_passing" not in nothing.update(b, nothing.score(b))
    reward = varl(verifier=exact, warmup_steps=0)
    for step in range(3):
        b = batch(step)
        stats = reward.update(b, reward.score(b))
        assert stats["disc/auc_ref_vs_passing"] == 0.5


# ---------------------------------------------------------------------- negatives: FIFO + reservoir, passing only
def test_negatives_are_half_recent_half_past_and_only_verifier_passing_rows():
    """FIFO capacity 4, reservoir 100, 6 negatives per step.  Steps 0..4 each pass 4 distinct answers
    (the other two rows fail).  At step 4 the FIFO half (3) comes from the 4 answers of step 4, the
    reservoir half (3) from all 20 passing answers; no failing answer is ever a negative."""

    def odd_fails(answer, reference, meta):
        return float(answer is not None and int(answer) % 2 == 0)

    reward = varl(fifo_capacity=4, reservoir_capacity=100, negatives=6, verifier=odd_fails, warmup_steps=0)
    trained = []
    real = reward.discriminator.train_step
    reward.discriminator.train_step = lambda pos, neg: trained.append((list(pos), list(neg))) or real(pos, neg)
    passing_by_step = []
    for step in range(5):
        answers = [str(10 * step + k) for k in (0, 2, 4, 6)] + [str(10 * step + 1), str(10 * step + 3)]
        b = batch(step, answers=answers)
        stats = reward.update(b, reward.score(b))
        passing_by_step.append({(p, a) for p, a in zip(b.prompts, answers) if int(a) % 2 == 0})
        assert stats["disc/n_passing"] == 4.0 and stats["disc/n_positives"] == 2.0
        assert stats["disc/n_negatives_fifo"] == 3.0 and stats["disc/n_negatives_reservoir"] == 3.0
    positives, negatives = trained[-1]
    recent, past = negatives[:3], negatives[3:]
    assert set(recent) <= passing_by_step[-1]
    assert set(past) <= set.union(*passing_by_step)
    failing = {(b.prompts[i], str(10 * s + k)) for s in range(5) for i, k in [(4, 1), (5, 3)]}
    assert not failing & {n for _, neg in trained for n in neg}
    assert reward.fifo.items == sorted(passing_by_step[-1], key=lambda pa: int(pa[1]))  # the 4 most recent, in order
    assert len(reward.reservoir) == 20 and set(reward.reservoir.items) == set.union(*passing_by_step)


def test_no_passing_rows_means_no_discriminator_step():
    reward = varl(verifier=lambda a, r, m: 0.0)
    before = params(reward.discriminator.model)
    b = batch()
    stats = reward.update(b, reward.score(b))
    assert stats["disc/updated"] == 0.0 and stats["disc/empty_batch"] == 1.0
    assert same(before, params(reward.discriminator.model))


def test_discriminator_learns_demonstrations_from_passing_hacks():
    """Passing rows are lists that contain the product (a hack); the references are the bare product:
    after a few steps D prefers the references."""
    reward = varl(verifier=lambda a, r, m: float(a is not None and r in a.split()), warmup_steps=0)
    b = batch(answers=["36 35", "35 36", "36 30", "84 85", "80 84", "83 84"])
    first = reward.update(b, reward.score(b))
    for _ in range(10):
        last = reward.update(b, reward.score(b))
    assert last["disc/d_reference_mean"] > last["disc/d_generated_mean"]
    assert last["disc/accuracy"] >= first["disc/accuracy"]


# ---------------------------------------------------------------------- the transform warning
@pytest.mark.parametrize(
    "g, says",
    [
        ("log_D", ["positive affinity", "unbounded"]),
        ("logit", ["positive affinity"]),
        ("neg_log_one_minus_D", ["unbounded"]),
        ("D", []),
    ],
)
def test_a_transform_without_affinity_or_bound_warns_once_under_the_gate(g, says):
    cfg = VARLConfig(discriminator=JudgeConfig(tiny=TINY), g=g)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        reward = VARL.from_config(cfg, RewardContext(task=TASK))
        for step in range(3):
            b = batch(step)
            reward.update(b, reward.score(b))
    messages = [str(w.message) for w in caught if "reward.varl" in str(w.message)]
    assert len(messages) == (1 if says else 0)
    for word in says:
        assert word in messages[0] and f"g={g}" in messages[0]
    if g == "neg_log_one_minus_D":
        assert "lacks positive affinity" not in messages[0]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        VARL.from_config(VARLConfig(discriminator=JudgeConfig(tiny=TINY), g=g, combine="add"), RewardContext(task=TASK))
    assert not [w for w in caught if "reward.varl" in str(w.message)]  # no gate, nothing to warn about


# ---------------------------------------------------------------------- the verifier stays out of the discriminator
def test_the_discriminator_cannot_reach_the_task_or_its_verifier(reachable):
    shape = dict(hidden_size=32, num_layers=1, num_heads=2, num_kv_heads=1, intermediate_size=64)
    cfg = load_config(
        None,
        [
            "reward.name=varl",
            "sft.enabled=false",
            *[f"reward.varl.discriminator.tiny.{k}={v}" for k, v in shape.items()],
        ],
    )
    task = build_task(cfg.task)
    reward = build_reward(cfg.reward, task, RewardContext(seed=0))
    assert isinstance(reward, VARL)
    assert reachable(reward, task)  # VARL itself holds the verifier: the check can fail
    assert not reachable(reward.discriminator, task)
    assert not reachable(reward.discriminator, task.verify.__func__)


def test_the_discriminator_sees_the_verifier_only_through_which_rows_become_negatives():
    """Two verifiers (all pass / only even answers pass) on the same batch: the discriminator scores
    exactly the same inputs, trains on the same positives, and its negatives differ only by the rows
    the verifier let through."""
    calls = {}
    for name, verifier in [
        ("all", lambda a, r, m: float(a is not None)),
        ("even", lambda a, r, m: float(a is not None and int(a) % 2 == 0)),
    ]:
        reward = varl(verifier=verifier, negatives=10, warmup_steps=0)  # 5 + 5: each half holds every stored pair
        scored, trained = [], []
        real_score, real_train = reward.discriminator.logit_reference, reward.discriminator.train_step
        reward.discriminator.logit_reference = lambda p, a, scored=scored, real_score=real_score: (
            scored.append((list(p), list(a))) or real_score(p, a)
        )
        reward.discriminator.train_step = lambda pos, neg, trained=trained, real_train=real_train: (
            trained.append((pos, neg)) or real_train(pos, neg)
        )
        b = batch(answers=["36", "35", None, "84", "81", "48"])
        reward.update(b, reward.score(b))
        calls[name] = (scored[0], trained[0])
    assert calls["all"][0] == calls["even"][0]  # the same inputs scored, whatever v says
    assert calls["all"][1][0] == calls["even"][1][0]  # the same positives
    assert set(calls["all"][1][1]) == {
        ("12*3=", "36"),
        ("12*3=", "35"),
        ("21*4=", "84"),
        ("21*4=", "81"),
        ("21*4=", "48"),
    }
    assert set(calls["even"][1][1]) == {("12*3=", "36"), ("21*4=", "84"), ("21*4=", "48")}


# ---------------------------------------------------------------------- state and config
def test_state_dict_round_trip_continues_exactly():
    kw = dict(
        fifo_capacity=3,
        reservoir_capacity=5,
        negatives=4,
        features="completion",
        verifier=lambda a, r, m: float(a is not None),
        demonstrations={"12*3=": ["36", "6*3+6*30=36", "=36"], "21*4=": ["84", "4+80=84"]},
    )
    a = varl(seed=0, **kw)
    drive(a, range(5))
    b = varl(seed=1, **kw)
    b.load_state_dict(a.state_dict())
    assert drive(a, range(5, 9)) == drive(b, range(5, 9))
    assert same(params(a.discriminator.model), params(b.discriminator.model))
    assert a.fifo.items == b.fifo.items and a.reservoir.items == b.reservoir.items and a.updates == b.updates == 9


def test_bad_settings_fail_at_config_time_with_a_hint():
    with pytest.raises(ConfigError, match=r"reward\.varl\.combine must be one of multiply, add"):
        load_config(None, ["reward.name=varl", "reward.varl.combine=max"])
    with pytest.raises(ConfigError, match=r"reward\.varl\.features"):
        load_config(None, ["reward.name=varl", "reward.varl.features=reasoning"])
    with pytest.raises(ConfigError, match=r"reward\.varl\.g must be one of D"):
        load_config(None, ["reward.name=varl", "reward.varl.g=fancy"])
    with pytest.raises(ConfigError, match=r"reward\.varl\.additive_weight"):
        load_config(None, ["reward.name=varl", "reward.varl.additive_weight=-1"])
    with pytest.raises(ValueError, match="features='completion' needs the task's demonstrations"):
        VARL(VARLConfig(features="completion"), verifier=exact)


def test_doctests_pass():
    assert doctest.testmod(varl_module).failed == 0


@pytest.mark.parametrize("task", ["multiplication", "hackable_multiplication", "refdist"])
def test_varl_recipes_are_twins_of_their_rlvr_recipes(task):
    """Same task, policy, warm start, RL budget and advantage normalisation as RLVR: every key outside
    ``reward.*`` (and the recipe's own description) is equal, so the reward is the only difference."""
    algorithms = Path(__file__).parents[2] / "algorithms"
    varl_cfg = as_dict(load_config(algorithms / f"varl_{task}.yaml"))
    rlvr_cfg = as_dict(load_config(algorithms / f"rlvr_{task}.yaml"))
    assert varl_cfg.pop("reward")["name"] == "varl" and rlvr_cfg.pop("reward")["name"] == "rlvr"
    assert varl_cfg.pop("recipe")["name"] == f"varl_{task}"
    rlvr_cfg.pop("recipe")
    assert varl_cfg["grpo"]["group_size"] == 8
    if task == "multiplication":  # the paper's dr_grpo; the board's twin is the row "RLVR (dr_grpo)" (TWIN_EXCEPTIONS)
        assert varl_cfg["grpo"].pop("advantage") == "dr_grpo" and rlvr_cfg["grpo"].pop("advantage") == "grpo"
    assert varl_cfg == rlvr_cfg
