"""The policy loss: hand-computed surrogate, KL estimators, IS weights, aggregation variants,
and the property that micro-batch shares sum to the one-batch loss."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from rewardzoo.core.loss import (
    LossNormalizer,
    aggregate,
    clipped_surrogate,
    expected_kl_gradient,
    kl_penalty,
    policy_loss,
    truncated_is_weights,
)
from rewardzoo.divergences import kl


def test_clipped_surrogate_hand_computed():
    """ε_low = 0.2, ε_high = 0.3.
    ratio 1.5, A = +1 → clipped at 1.3 → loss −1.3 (high clip active)
    ratio 0.5, A = −1 → min(−0.5, −0.8) = −0.8 → loss 0.8 (low clip active)
    ratio 1.1, A = +2 → inside → loss −2.2
    ratio 0.5, A = +1 → min(0.5, 0.8) = 0.5 → loss −0.5 (no clip: it only limits improvement)."""
    logp = torch.log(torch.tensor([[1.5, 0.5], [1.1, 0.5]]))
    old = torch.zeros(2, 2)
    adv = torch.tensor([1.0, -1.0])
    loss, low, high = clipped_surrogate(torch.exp(logp[:1] - old[:1]), adv[:1], 0.2, 0.3)
    assert loss[0, 0].item() == pytest.approx(-1.3)
    assert high[0, 0] and not low[0, 0]
    loss, low, high = clipped_surrogate(torch.exp(logp[:1, 1:] - old[:1, 1:]), adv[1:], 0.2, 0.3)
    assert loss.item() == pytest.approx(0.8) and low.item()
    loss, _, _ = clipped_surrogate(torch.exp(logp[1:] - old[1:]), torch.tensor([2.0]), 0.2, 0.3)
    assert loss[0, 0].item() == pytest.approx(-2.2)
    assert loss[0, 1].item() == pytest.approx(-1.0)  # ratio 0.5, A = 2 → 0.5·2


def test_kl_estimators_hand_computed():
    """log π = −1, log π_ref = −2 → log r = −1: k1 = 1, k2 = 0.5, k3 = e^{−1} − 1 + 1 = 0.3679;
    k3_ratio with log π_old = −1.5 → ρ = e^{0.5}, value ρ·k3 = 0.6065."""
    logp, ref, old = torch.tensor([[-1.0]]), torch.tensor([[-2.0]]), torch.tensor([[-1.0]])
    assert kl_penalty(logp, ref, old, "k1").item() == pytest.approx(1.0)
    assert kl_penalty(logp, ref, old, "k2").item() == pytest.approx(0.5)
    assert kl_penalty(logp, ref, old, "k3").item() == pytest.approx(math.exp(-1))
    assert kl_penalty(logp, ref, old, "k3_ratio").item() == pytest.approx(math.exp(-1))  # on-policy: ρ = 1
    assert kl_penalty(logp, ref, torch.tensor([[-1.5]]), "k3_ratio").item() == pytest.approx(math.exp(0.5 - 1))
    with pytest.raises(ValueError, match="kl estimator"):
        kl_penalty(logp, ref, old, "k4")


def test_k3_is_nonnegative_and_zero_at_equality():
    x = torch.randn(100, 3)
    assert (kl_penalty(x, x, x, "k3") == 0).all()
    assert (kl_penalty(x, torch.randn(100, 3), x, "k3") >= 0).all()


def _exact_kl_gradients(logits: torch.Tensor, ref_logits: torch.Tensor):
    """∇_θ KL(π‖π_ref) and ∇_θ KL(π_ref‖π) for π = softmax(θ) by autograd through divergences.kl."""
    ref = torch.softmax(ref_logits, -1)  # [V]
    theta = logits.clone().requires_grad_(True)
    (reverse,) = torch.autograd.grad(kl(torch.softmax(theta, -1), ref), theta)  # [V]
    theta = logits.clone().requires_grad_(True)
    (forward,) = torch.autograd.grad(kl(ref, torch.softmax(theta, -1)), theta)  # [V]
    return reverse, forward


def test_expected_kl_gradient_hand_computed():
    """V = 2, θ = (0, 0) → π = (½, ½); θ_ref = (log 3, 0) → π_ref = (¾, ¼).  Softmax: ∇_θ log π_y = e_y − π.
    k1: ∇k1 = ∇log π, mean Σ_y π(y)(e_y − π) = 0.
    k3: ∇k3 = (1 − r) ∇log π with r = π_ref/π = (3/2, 1/2): ½·(−½)(½, −½) + ½·(½)(−½, ½) = (−¼, ¼),
        which is ∇KL(π_ref‖π) = π − π_ref = (−¼, ¼)."""
    logits = torch.zeros(2, dtype=torch.float64)
    ref_logits = torch.tensor([math.log(3), 0.0], dtype=torch.float64)
    assert expected_kl_gradient(logits, ref_logits, "k1").abs().max().item() < 1e-15
    assert expected_kl_gradient(logits, ref_logits, "k3").tolist() == pytest.approx([-0.25, 0.25], abs=1e-15)


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 12), st.integers(0, 2**31 - 1))
def test_kl_estimators_expected_gradient_is_what_their_name_says(vocab, seed):
    """On a categorical policy with V answers (float64, exact expectation):
    k3_ratio and k2 → ∇KL(π‖π_ref); plain k3 → ∇KL(π_ref‖π) (the forward KL); k1 → 0."""
    gen = torch.Generator().manual_seed(seed)
    logits = torch.randn(vocab, generator=gen, dtype=torch.float64) * 2
    ref_logits = torch.randn(vocab, generator=gen, dtype=torch.float64) * 2
    reverse, forward = _exact_kl_gradients(logits, ref_logits)
    for name, exact in (("k3_ratio", reverse), ("k2", reverse), ("k3", forward), ("k1", torch.zeros_like(reverse))):
        expected = expected_kl_gradient(logits, ref_logits, name)
        assert torch.allclose(expected, exact, atol=1e-12), (name, expected, exact)
    if not torch.allclose(logits.softmax(-1), ref_logits.softmax(-1), atol=1e-3):
        assert not torch.allclose(reverse, forward, atol=1e-6)  # the two KLs really differ here


def test_truncated_is_weights():
    """old log-prob −1, sampler −2 → weight e = 2.718 capped at 2; old −2, sampler −1 → e^{−1}."""
    w = truncated_is_weights(torch.tensor([[-1.0, -2.0]]), torch.tensor([[-2.0, -1.0]]), cap=2.0)
    assert w.tolist()[0] == pytest.approx([2.0, math.exp(-1)])


def test_aggregation_hand_computed():
    """per-token losses [[1, 2, 3], [4, 0, 0]] with masks [[1,1,1],[1,0,0]], N = 2, L = 5:
    grpo    = ((1+2+3)/3 + 4/1) / 2 = 3
    dapo    = (1+2+3+4) / 4 = 2.5
    dr_grpo = (1+2+3+4) / (2·5) = 1."""
    per = torch.tensor([[1.0, 2.0, 3.0], [4.0, 9.0, 9.0]])
    mask = torch.tensor([[1, 1, 1], [1, 0, 0]], dtype=torch.bool)
    norm = LossNormalizer(num_sequences=2, num_tokens=4, max_completion_length=5)
    assert aggregate(per, mask, "grpo", norm).item() == pytest.approx(3.0)
    assert aggregate(per, mask, "dapo", norm).item() == pytest.approx(2.5)
    assert aggregate(per, mask, "dr_grpo", norm).item() == pytest.approx(1.0)
    with pytest.raises(ValueError, match="loss type"):
        aggregate(per, mask, "sum", norm)


def test_policy_loss_adds_beta_kl_and_is_weights():
    logp = torch.tensor([[-1.0, -1.0]])
    mask = torch.ones(1, 2, dtype=torch.bool)
    norm = LossNormalizer(1, 2, 2)
    base, _ = policy_loss(logp, logp, torch.tensor([1.0]), mask, norm)
    assert base.item() == pytest.approx(-1.0)  # ratio 1, A = 1
    with_kl, stats = policy_loss(
        logp, logp, torch.tensor([1.0]), mask, norm, beta=0.5, ref_logp=torch.tensor([[-2.0, -2.0]]), kl_estimator="k1"
    )
    assert with_kl.item() == pytest.approx(-1.0 + 0.5 * 1.0)
    assert stats["kl_sum"].item() == pytest.approx(2.0)
    weighted, stats = policy_loss(logp, logp, torch.tensor([1.0]), mask, norm, is_weights=torch.tensor([[0.5, 0.5]]))
    assert weighted.item() == pytest.approx(-0.5)
    with pytest.raises(ValueError, match="ref_logp"):
        policy_loss(logp, logp, torch.tensor([1.0]), mask, norm, beta=0.1)


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(1, 9),
    T=st.integers(1, 6),
    split=st.integers(1, 9),
    loss_type=st.sampled_from(["grpo", "dapo", "dr_grpo"]),
    seed=st.integers(0, 10_000),
)
def test_micro_batch_shares_sum_to_one_batch_loss_and_gradient(n, T, split, loss_type, seed):
    g = torch.Generator().manual_seed(seed)
    logp = torch.randn(n, T, generator=g, dtype=torch.float64).requires_grad_()
    old = logp.detach() + 0.1 * torch.randn(n, T, generator=g, dtype=torch.float64)
    adv = torch.randn(n, generator=g, dtype=torch.float64)
    lengths = torch.randint(1, T + 1, (n,), generator=g)
    mask = torch.arange(T).unsqueeze(0) < lengths.unsqueeze(1)
    norm = LossNormalizer(num_sequences=n, num_tokens=int(mask.sum()), max_completion_length=T)
    whole, _ = policy_loss(logp, old, adv, mask, norm, loss_type=loss_type, eps_high=0.28)
    (g_whole,) = torch.autograd.grad(whole, logp)
    parts = sum(
        policy_loss(
            logp[s : s + split],
            old[s : s + split],
            adv[s : s + split],
            mask[s : s + split],
            norm,
            loss_type=loss_type,
            eps_high=0.28,
        )[0]
        for s in range(0, n, split)
    )
    (g_parts,) = torch.autograd.grad(parts, logp)
    assert torch.allclose(whole, parts, atol=1e-12)
    assert torch.allclose(g_whole, g_parts, atol=1e-12)
