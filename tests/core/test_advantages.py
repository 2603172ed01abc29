"""Advantages: hand-computed cases for every variant and Hypothesis properties."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from rewardzoo.core.advantages import compute_advantages, group_mean_std

GIDS = torch.tensor([0, 0, 0, 0, 1, 1, 1, 1])
R = torch.tensor([1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0])


def test_grpo_hand_computed():
    """Group 0: mean 0.25, unbiased std sqrt(0.1875·4/3) = 0.5 → A = (1−0.25)/0.5 = 1.5, (0−0.25)/0.5 = −0.5.
    Group 1: mean 0.5, std sqrt(4·0.25/3) = 0.57735 → A = ±0.866025."""
    adv = compute_advantages(R, GIDS, "grpo", eps=0.0)
    s1 = math.sqrt(1 / 3)
    expected = [1.5, -0.5, -0.5, -0.5, 0.5 / s1, 0.5 / s1, -0.5 / s1, -0.5 / s1]
    assert adv.tolist() == pytest.approx(expected, rel=1e-6)


def test_dr_grpo_hand_computed():
    """No std division: A = r − group mean."""
    adv = compute_advantages(R, GIDS, "dr_grpo")
    assert adv.tolist() == pytest.approx([0.75, -0.25, -0.25, -0.25, 0.5, 0.5, -0.5, -0.5])


def test_bnpo_hand_computed():
    """Batch std: r = [1,0,0,0,1,1,0,0] has mean 3/8 and unbiased std sqrt((3·(5/8)²+5·(3/8)²)/7)."""
    adv = compute_advantages(R, GIDS, "bnpo", eps=0.0)
    std = math.sqrt((3 * (5 / 8) ** 2 + 5 * (3 / 8) ** 2) / 7)
    assert adv.tolist() == pytest.approx([x / std for x in [0.75, -0.25, -0.25, -0.25, 0.5, 0.5, -0.5, -0.5]], rel=1e-6)


def test_pooled_hand_computed():
    """Pooled within-group std: centred rows (0.75, −0.25 ×3) and (±0.5 ×4) give Σ² = 0.75 + 1 = 1.75 over
    N − P = 6 degrees of freedom; a reward affine in R within every group (slope 3, any offsets) gets the same."""
    adv = compute_advantages(R, GIDS, "pooled", eps=0.0)
    s = math.sqrt(1.75 / 6)
    assert adv.tolist() == pytest.approx([x / s for x in [0.75, -0.25, -0.25, -0.25, 0.5, 0.5, -0.5, -0.5]], rel=1e-6)
    affine = 3 * R + torch.tensor([0.2] * 4 + [-5.0] * 4)
    assert torch.allclose(compute_advantages(affine, GIDS, "pooled", eps=0.0), adv, atol=1e-6)


@pytest.mark.parametrize("kind", ["grpo", "dr_grpo", "bnpo", "pooled"])
def test_constant_group_gets_exactly_zero(kind):
    rewards = torch.tensor([0.1, 0.1, 0.1, 0.7, 0.2, 0.9])
    adv = compute_advantages(rewards, torch.tensor([0, 0, 0, 1, 1, 1]), kind)
    assert adv[:3].tolist() == [0.0, 0.0, 0.0]
    assert (adv[3:] != 0).all()


def test_unknown_kind_is_rejected():
    with pytest.raises(ValueError, match="advantage type must be one of"):
        compute_advantages(R, GIDS, "ppo")


def test_group_ids_need_not_be_contiguous():
    perm = torch.tensor([3, 6, 0, 5, 1, 7, 2, 4])
    a = compute_advantages(R, GIDS, "grpo")
    b = compute_advantages(R[perm], GIDS[perm], "grpo")
    assert torch.allclose(a[perm], b)


groups = st.lists(
    st.lists(st.floats(-100, 100, allow_nan=False, width=32), min_size=2, max_size=8), min_size=1, max_size=6
)


def _flatten(gs):
    rewards = torch.tensor([x for g in gs for x in g], dtype=torch.float32)
    gids = torch.tensor([i for i, g in enumerate(gs) for _ in g])
    return rewards, gids


@settings(max_examples=100, deadline=None)
@given(groups, st.sampled_from(["grpo", "dr_grpo", "bnpo", "pooled"]))
def test_group_advantages_sum_to_zero(gs, kind):
    rewards, gids = _flatten(gs)
    adv = compute_advantages(rewards, gids, kind).double()
    scale = 1 + adv.abs().max().item()
    for g in range(len(gs)):
        assert abs(adv[gids == g].sum().item()) <= 1e-4 * scale


@settings(max_examples=100, deadline=None)
@given(groups, st.floats(-50, 50, allow_nan=False), st.sampled_from(["grpo", "dr_grpo", "bnpo", "pooled"]))
def test_shift_invariance(gs, shift, kind):
    rewards, gids = _flatten(gs)
    a = compute_advantages(rewards.double(), gids, kind)
    b = compute_advantages(rewards.double() + shift, gids, kind)
    assert torch.allclose(a, b, atol=1e-3, rtol=1e-3)


def test_group_mean_std_matches_torch():
    torch.manual_seed(0)
    r = torch.randn(12)
    gids = torch.arange(3).repeat_interleave(4)
    mean, std, constant = group_mean_std(r, gids)
    for g in range(3):
        rows = r[gids == g].double()
        assert torch.allclose(mean[gids == g], rows.mean().expand(4))
        assert torch.allclose(std[gids == g], rows.std().expand(4))
    assert not constant.any()
