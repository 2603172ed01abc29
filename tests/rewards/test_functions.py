"""FunctionReward: TRL-style callables as rewardzoo rewards (hand-computed cases, bad output, a real run)."""

from __future__ import annotations

import functools
import math
import sys
import types

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from rewardzoo.core.advantages import compute_advantages
from rewardzoo.core.config import ConfigError
from rewardzoo.core.trainer import NonFiniteError, Trainer
from rewardzoo.core.types import Reward, Rollouts
from rewardzoo.rewards.functions import CallableRewardConfig, FunctionReward, callable_name, load_callable
from rewardzoo.zoo import build_reward, build_task, load_config


def make_batch(completions: list[str], group_size: int = 2) -> Rollouts:
    """Rows of prompts 'p0', 'p1', … with ``group_size`` rows each, meta {'a': prompt index}."""
    n = len(completions)
    groups = [i // group_size for i in range(n)]
    return Rollouts(
        prompts=[f"p{g}" for g in groups],
        completions=completions,
        answers=[c.strip() or None for c in completions],
        references=[f"ref{g}" for g in groups],
        group_ids=torch.tensor(groups, dtype=torch.long),
        meta=[{"a": g} for g in groups],
        step=7,
    )


def length(prompts, completions, **kwargs):
    """Reward = number of characters."""
    return [float(len(c)) for c in completions]


def test_scores_are_the_function_values_and_it_is_a_reward():
    reward = FunctionReward(length)
    out = reward.score(make_batch(["a", "abc", "", "ab"]))
    assert isinstance(reward, Reward)
    assert out.rewards.tolist() == [1.0, 3.0, 0.0, 2.0]
    assert out.rewards.dtype == torch.float32
    assert out.components["fn/length"].tolist() == [1.0, 3.0, 0.0, 2.0]
    assert out.metrics == {"reward/fn/length_mean": 1.5, "reward/none_frac": 0.0}
    assert reward.update(make_batch(["a", "b"]), out) == {} and reward.state_dict() == {}
    assert reward.name == "length"


def test_function_receives_the_documented_columns():
    seen = {}

    def spy(prompts, completions, **kwargs):
        seen.update(prompts=prompts, completions=completions, **kwargs)
        kwargs["log_metric"]("spy_calls", 1)
        return [0.0] * len(completions)

    out = FunctionReward(spy).score(make_batch(["1", " 2 ", "", "x"]))
    assert seen["prompts"] == ["p0", "p0", "p1", "p1"]
    assert seen["completions"] == ["1", " 2 ", "", "x"]
    assert seen["reference"] == ["ref0", "ref0", "ref1", "ref1"]
    assert seen["parsed_answer"] == ["1", "2", None, "x"]
    assert seen["group_id"] == [0, 0, 1, 1]
    assert seen["a"] == [0, 0, 1, 1]
    assert seen["step"] == 7
    assert set(seen) == {"prompts", "completions", "reference", "parsed_answer", "group_id", "a", "step", "log_metric"}
    assert out.metrics["reward/spy_calls"] == 1.0


def test_weighted_functions_sum_and_skip_none():
    """Hand computation, weights (2, -1):
    row 0: 2·1 + (-1)·10 = -8;  row 1: f2 is None → 2·3 = 6;  row 2: f1 is None → -1·30 = -30;
    row 3: both None → mean of scored rows of group 1 = -30."""

    def f1(prompts, completions, **kw):
        return [1, 3, None, None]

    def f2(prompts, completions, **kw):
        return [10.0, None, 30.0, None]

    out = FunctionReward([f1, f2], weights=[2.0, -1.0]).score(make_batch(["w", "x", "y", "z"]))
    assert out.rewards.tolist() == [-8.0, 6.0, -30.0, -30.0]
    assert out.components["fn/f1"].tolist() == [1.0, 3.0, 0.0, 0.0]
    assert out.metrics["reward/fn/f1_mean"] == 2.0 and out.metrics["reward/fn/f2_mean"] == 20.0
    assert out.metrics["reward/none_frac"] == 0.25


def test_unscored_row_gets_its_group_mean_so_its_advantage_is_zero():
    def sometimes(prompts, completions, **kw):
        return [None if c == "skip" else float(len(c)) for c in completions]

    out = FunctionReward(sometimes).score(make_batch(["a", "abc", "skip", "ab", "skip", "skip"], group_size=3))
    # group 0: rows 1, 3, 2 chars -> row 2 gets (1 + 3) / 2 = 2; group 1: rows 2 chars, skip, skip -> 2, 2
    assert out.rewards.tolist() == [1.0, 3.0, 2.0, 2.0, 2.0, 2.0]
    assert out.metrics["reward/none_frac"] == pytest.approx(0.5)
    for kind in ("grpo", "dr_grpo"):
        adv = compute_advantages(out.rewards, torch.tensor([0, 0, 0, 1, 1, 1]), kind)
        assert adv[2].item() == pytest.approx(0.0, abs=1e-6) and adv[3:].abs().max().item() == 0.0
        assert adv[0].item() < 0 < adv[1].item()


def test_group_with_no_scored_row_gets_zero():
    out = FunctionReward(lambda prompts, completions, **kw: [None] * len(completions)).score(make_batch(["a", "b"]))
    assert out.rewards.tolist() == [0.0, 0.0]
    assert out.metrics["reward/none_frac"] == 1.0
    assert out.metrics["reward/fn/<lambda>_mean"] == 0.0


def test_accepts_bools_numpy_and_torch_scalars_and_arrays():
    mixed = lambda prompts, completions, **kw: [True, np.float32(0.5), torch.tensor(2.0), np.int64(3)]  # noqa: E731
    assert FunctionReward(mixed).score(make_batch(["a"] * 4)).rewards.tolist() == [1.0, 0.5, 2.0, 3.0]
    array = lambda prompts, completions, **kw: np.array([1.0, 2.0])  # noqa: E731
    assert FunctionReward(array).score(make_batch(["a", "b"])).rewards.tolist() == [1.0, 2.0]
    tensor = lambda prompts, completions, **kw: torch.tensor([0.25, 4.0])  # noqa: E731
    assert FunctionReward(tensor).score(make_batch(["a", "b"])).rewards.tolist() == [0.25, 4.0]


def test_wrong_length_names_the_function_and_both_lengths():
    def short(prompts, completions, **kw):
        return [1.0]

    with pytest.raises(ValueError, match=r"'short' returned 1 rewards for 4 completions"):
        FunctionReward(short).score(make_batch(["a", "b", "c", "d"]))


@pytest.mark.parametrize(
    "bad, match",
    [
        (["1.0", 2.0], r"returned str '1.0' at row 0"),
        ([1.0, [2.0]], r"returned list \[2.0\] at row 1"),
        ("10", r"returned a str; return a list"),
        (3.0, r"returned a float; return a list"),
    ],
)
def test_wrong_type_is_a_clear_error(bad, match):
    def odd(prompts, completions, **kw):
        return bad

    with pytest.raises(TypeError, match=match):
        FunctionReward(odd).score(make_batch(["a", "b"]))


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_non_finite_is_a_clear_error(value):
    def broken(prompts, completions, **kw):
        return [0.0, value]

    with pytest.raises(NonFiniteError, match=r"'broken' returned non-finite rewards at step 7, rows \[1\]"):
        FunctionReward(broken).score(make_batch(["a", "b"]))


def test_bad_construction():
    with pytest.raises(TypeError, match="one or more callables"):
        FunctionReward([])
    with pytest.raises(ValueError, match="2 weights"):
        FunctionReward(length, weights=[1.0, 2.0])
    with pytest.raises(ValueError, match="one finite weight"):
        FunctionReward(length, weights=[math.nan])


def test_meta_key_clashing_with_an_argument_is_an_error():
    batch = make_batch(["a", "b"])
    batch.meta = [{"reference": 1}, {"reference": 2}]
    with pytest.raises(ValueError, match="meta key 'reference'"):
        FunctionReward(length).score(batch)


def test_names_of_partials_callables_and_duplicates():
    class Scorer:
        def __call__(self, prompts, completions, **kw):
            return [0.0] * len(completions)

    assert callable_name(functools.partial(length, x=1)) == "length"
    assert callable_name(Scorer()) == "Scorer"
    assert FunctionReward([length, length]).names == ["length_0", "length_1"]


def test_load_callable_and_from_config(monkeypatch):
    module = types.ModuleType("rz_test_rewards")
    module.length = length
    module.not_callable = 3
    monkeypatch.setitem(sys.modules, "rz_test_rewards", module)
    assert load_callable("rz_test_rewards:length") is length
    reward = FunctionReward.from_config(CallableRewardConfig(functions=["rz_test_rewards:length"], weights=[0.5]))
    assert reward.score(make_batch(["ab", "abcd"])).rewards.tolist() == [1.0, 2.0]
    for path, match in [
        ("rz_test_rewards.length", "must look like"),
        ("no_such_module_xyz:f", "cannot import module"),
        ("rz_test_rewards:missing", "no callable 'missing'"),
        ("rz_test_rewards:not_callable", "no callable"),
    ]:
        with pytest.raises(ValueError, match=match):
            load_callable(path)
    with pytest.raises(ValueError, match="no function named"):
        FunctionReward.from_config(CallableRewardConfig())


def test_config_names_callables_and_rejects_bad_paths_before_any_work(monkeypatch):
    module = types.ModuleType("rz_test_rewards")
    module.length = length
    monkeypatch.setitem(sys.modules, "rz_test_rewards", module)
    cfg = load_config(
        None,
        ["reward.name=callable", "reward.callable.functions=[rz_test_rewards:length]", "reward.callable.weights=[2.0]"],
    )
    reward = build_reward(cfg.reward, build_task(cfg.task))
    assert isinstance(reward, FunctionReward) and reward.funcs == [length]
    assert reward.score(make_batch(["ab", "abcd"])).rewards.tolist() == [4.0, 8.0]
    with pytest.raises(ConfigError, match="reward.callable: cannot import module 'nope_xyz'"):
        load_config(None, ["reward.name=callable", "reward.callable.functions=[nope_xyz:f]"])
    with pytest.raises(ConfigError, match="reward.callable: no function named"):
        load_config(None, ["reward.name=callable"])


@settings(max_examples=50, deadline=None)
@given(st.lists(st.one_of(st.none(), st.floats(-100, 100)), min_size=2, max_size=12).filter(lambda v: len(v) % 2 == 0))
def test_property_scored_rows_keep_their_value_and_unscored_rows_do_not_move_the_group_mean(values):
    batch = make_batch([str(i) for i in range(len(values))], group_size=2)
    out = FunctionReward(lambda prompts, completions, **kw: values).score(batch)
    for i, v in enumerate(values):
        if v is not None:
            assert out.rewards[i].item() == pytest.approx(v, abs=1e-4)
    for g in range(len(values) // 2):
        pair = values[2 * g : 2 * g + 2]
        scored = [v for v in pair if v is not None]
        mean = sum(scored) / len(scored) if scored else 0.0
        assert out.rewards[2 * g : 2 * g + 2].mean().item() == pytest.approx(mean, abs=1e-4)


def digit_fraction(prompts, completions, reference, a, **kwargs):
    """TRL-style: share of digit characters in the completion (None for an empty completion)."""
    assert len(reference) == len(a) == len(completions)
    return [sum(ch.isdigit() for ch in c) / len(c) if c else None for c in completions]


def test_function_reward_drives_the_rewardzoo_trainer(tmp_path):
    cfg = load_config(
        "algorithms/rlvr_multiplication.yaml",
        [
            "steps=2",
            "sft.enabled=false",
            "eval.n_examples=8",
            f"run_dir={tmp_path}",
            "grpo.batch_size=32",
            "logging.progress=false",
            "logging.tensorboard=false",
        ],
    )
    task = build_task(cfg.task)
    calls = []

    def recorded(prompts, completions, **kwargs):
        calls.append((list(prompts), kwargs["reference"], kwargs["a"], kwargs["b"], kwargs["step"]))
        return digit_fraction(prompts, completions, **kwargs)

    trainer = Trainer(cfg, task=task, reward=FunctionReward(recorded))
    before = {n: p.detach().clone() for n, p in trainer.policy.named_parameters()}
    last = trainer.train()
    assert [c[4] for c in calls] == [0, 1]
    for prompts, refs, a, b, _ in calls:
        assert len(prompts) == 32
        assert refs == [str(x * y) for x, y in zip(a, b)]
        assert prompts == [f"{x}*{y}=" for x, y in zip(a, b)]
    assert math.isfinite(last["reward/mean"]) and "reward/fn/recorded_mean" in last
    changed = [n for n, p in trainer.policy.named_parameters() if not torch.equal(before[n], p)]
    assert len(changed) == len(before)


def trl_normalize_then_sum(rewards_per_func: torch.Tensor, weights: torch.Tensor, num_generations: int):
    """TRL 1.16's ``multi_objective_aggregation="normalize_then_sum"`` advantages, its lines as they stand
    (grpo_trainer.py, ``_generate_and_score_completions``), contiguous groups of ``num_generations``."""
    from trl.trainer.utils import nanstd

    grouped = rewards_per_func.view(-1, num_generations, rewards_per_func.shape[1])
    mean_k = torch.nanmean(grouped, dim=1, keepdim=True)
    std_k = nanstd(grouped, dim=1, keepdim=True)
    reward_k = ((grouped - mean_k) / (std_k + 1e-4)).view(-1, rewards_per_func.shape[1])
    rewards = (reward_k * weights.unsqueeze(0)).nansum(dim=1)
    rewards[rewards_per_func.isnan().all(1)] = torch.nan
    advantages = (rewards - torch.nanmean(rewards)) / (nanstd(rewards).expand_as(rewards) + 1e-4)
    return torch.nan_to_num(advantages, nan=0.0)


def test_normalize_then_sum_gives_trls_advantages():
    """Two functions on different scales (characters, digit count ×100), one returning None on three rows:
    rewardzoo's rewards under grpo.advantage=bnpo equal TRL's advantages.  (A row that every function
    leaves unscored still counts in the batch std here: the module docstring's convention 3.)"""
    pytest.importorskip("trl")
    completions = ["a1", "bbb22", "c", "dd4444", "e5", "ffffff", "", "g7", "hh", "i999"]

    def digits(prompts, completions, **kwargs):
        """100 × the number of digits; None on rows 2 and 3, and on the empty row."""
        return [None if i in (2, 3, 6) else 100.0 * sum(ch.isdigit() for ch in c) for i, c in enumerate(completions)]

    def chars(prompts, completions, **kwargs):
        """The number of characters."""
        return [float(len(c)) for c in completions]

    batch = make_batch(completions, group_size=5)
    weights = [1.0, 0.5]
    out = FunctionReward([digits, chars], weights=weights, aggregation="normalize_then_sum").score(batch)
    ours = compute_advantages(out.rewards, batch.group_ids, "bnpo")  # [N]
    per_func = torch.tensor(
        [[math.nan if v is None else v for v in f(None, completions)] for f in (digits, chars)]
    ).T  # [N, K]
    theirs = trl_normalize_then_sum(per_func, torch.tensor(weights), 5)  # [N]
    torch.testing.assert_close(ours, theirs, rtol=0, atol=1e-5)
    assert theirs.abs().max() > 0.5
    assert out.metrics["reward/fn/digits_mean"] == pytest.approx(sum([100, 200, 100, 0, 100, 300]) / 7)
    summed = compute_advantages(FunctionReward([digits, chars], weights=weights).score(batch).rewards, batch.group_ids)
    assert (summed - theirs).abs().max() > 0.1  # the default sums first: a different signal


def test_an_unknown_aggregation_is_refused():
    """A misspelt aggregation fails at construction, naming the choices."""
    with pytest.raises(ValueError, match="normalize_then_sum"):
        FunctionReward(length, aggregation="normalise")
