"""The policy loss: clipped surrogate, KL to the reference, truncated IS, and loss aggregation.

All functions are pure.  Per-token tensors are ``[n, T]`` (rows of a micro-batch × completion
tokens) with a boolean ``mask [n, T]`` of real completion tokens.

Clipped surrogate (PPO, Schulman et al. 2017, eq. 7; clip-higher from DAPO, Yu et al. 2025, eq. 10):

    ρ_t = π_θ(y_t) / π_old(y_t)
    ℓ_t = −min(ρ_t A, clip(ρ_t, 1 − ε_low, 1 + ε_high) A)

KL to the reference policy, ℓ_t += β · k_t (estimators from Schulman, "Approximating KL divergence",
2020).  With log r_t = log π_ref(y_t) − log π_θ(y_t) and ρ_t = π_θ(y_t)/π_old(y_t) (value 1 at μ = 1,
gradient ∇log π_θ), each estimator is named here by the *gradient* it gives as a loss term,
on-policy (y ~ π_θ), since that — not its value — is what training follows:

    name      k_t               E_π[k]           E_π[∇k]  (what β·k pulls the policy along)
    k1        −log r            KL(π‖π_ref)       0                      (no pull at all)
    k2        ½ (log r)²        ≥ KL, biased      ∇KL(π‖π_ref)
    k3        (r − 1) − log r   KL(π‖π_ref)       ∇KL(π_ref‖π)           (forward KL; TRL's default)
    k3_ratio  ρ · k3            KL(π‖π_ref)       ∇KL(π‖π_ref)           (our default; TRL's use_bias_correction_kl)

Derivation.  ∇KL(π‖π_ref) = Σ_y ∇π (log π − log π_ref) + Σ_y π ∇log π = E_π[(log π − log π_ref) ∇log π]
(the last sum is ∇Σπ = 0).  k1: ∇k1 = ∇log π, whose mean under π is 0.  k2: ∇k2 = −log r · ∇log π =
(log π − log π_ref) ∇log π, per sample the score-function gradient of KL(π‖π_ref).  k3: ∇r = −r ∇log π,
so ∇k3 = (1 − r) ∇log π and E_π[∇k3] = −Σ_y π_ref ∇log π = ∇KL(π_ref‖π).  k3_ratio: ∇(ρ k3) =
∇k3 + k3 ∇log π at ρ = 1, = (1 − r + r − 1 − log r) ∇log π = −log r ∇log π, the same per-sample
gradient as k2, while its value stays k3's unbiased estimate; for μ > 1, ρ = π_θ/π_old also
importance-weights the estimate to the current policy.  :func:`expected_kl_gradient` computes a
row's expected gradient exactly on a categorical policy; ``tests/core/test_loss.py`` checks it
against the exact ∇KL of :mod:`rewardzoo.divergences`.

Truncated importance sampling (Yao et al. 2025, "Your efficient RL framework secretly brings you
off-policy RL training"): when the engine that sampled reports its own log-probs,
ℓ_t ← min(π_old(y_t) / π_sampler(y_t), C) · ℓ_t.

Aggregation (names as TRL uses them).  To make micro-batching exact, every variant divides by a
*global* quantity of the whole step, carried in :class:`LossNormalizer`:

    grpo     Σ_i (Σ_t ℓ_it m_it / Σ_t m_it) / N              per-sequence token mean, then mean
    dapo     Σ_i Σ_t ℓ_it m_it / Σ_i Σ_t m_it                token mean over the global batch
    dr_grpo  Σ_i Σ_t ℓ_it m_it / (N · max_completion_length)

    luspo    Σ_i Σ_t ℓ_it m_it / N                           per-sequence token sum, then mean
    cispo    as dapo;   sapo   as grpo

Summing the micro-batch losses of a step therefore gives exactly the one-batch loss.  TRL's ``bnpo``
is dapo's token mean taken per micro-batch instead of over the step; with a global normalizer it *is*
dapo, so it is not a separate type here.

Importance-sampling level (GSPO, Zheng et al. 2025, arXiv 2507.18071; TRL's ``importance_sampling_level``).
``token`` uses ρ_t above; ``sequence`` replaces it by one ratio per row, the length-normalized sum
of token log-ratios, clipped per sequence:

    s_i = exp( Σ_t m_it (log π_θ(y_it) − log π_old(y_it)) / Σ_t m_it )      [n, 1]

GSPO is ``loss_type=grpo`` with ``importance_sampling_level=sequence``.  The sequence level only
applies to the per-sequence means (grpo, sapo, luspo): under dapo / dr_grpo / cispo a sequence
weight would be summed once per token, so ``GRPOConfig.validate`` refuses that combination (TRL only
warns).  With ``k3_ratio`` the KL term is weighted by the same ratio (s_i or ρ_t), as TRL's
``use_bias_correction_kl``.

Other objectives (w is ρ_t or s_i, sg = stop-gradient):

    cispo  ℓ_t = −sg(min(w, ε_high)) · A · log π_θ(y_t)       (MiniMax-M1, MiniMax 2025, arXiv 2506.13585:
           the clipped IS weight keeps every token's gradient; ε_high is the cap, as in TRL)
    sapo   ℓ_t = −(4/τ) σ(τ (w − 1)) · A,  τ = τ_pos if A > 0 else τ_neg
           (Soft Adaptive Policy Optimization, arXiv 2511.20347: a smooth gate in place of the clip;
           its gradient at w = 1 is the plain policy gradient)
    luspo  the clipped surrogate with a per-sequence token *sum* (length-unbiased sequence policy
           optimization, arXiv 2602.05261), meant for ``importance_sampling_level=sequence``, which the config requires.

Not implemented: TRL's ``vespo`` (its sequence-level gamma weights).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

LOSS_TYPES = ("grpo", "dapo", "dr_grpo", "luspo", "cispo", "sapo")
IS_LEVELS = ("token", "sequence")
SEQUENCE_LEVEL_LOSSES = ("grpo", "sapo", "luspo")  # the per-sequence means a sequence ratio fits
KL_ESTIMATORS = ("k3_ratio", "k2", "k3", "k1")


@dataclass(frozen=True)
class LossNormalizer:
    """Global sizes of one optimisation step (across micro-batches and processes)."""

    num_sequences: int  # N: rows in the step
    num_tokens: int  # real completion tokens in the step
    max_completion_length: int  # the configured max_new_tokens


def kl_penalty(
    logp: torch.Tensor, ref_logp: torch.Tensor, old_logp: torch.Tensor, estimator: str = "k3_ratio"
) -> torch.Tensor:
    """Per-token KL term of π_θ against π_ref from sampled-token log-probs ([n, T] each); the
    module docstring gives each estimator's gradient."""
    log_r = ref_logp - logp  # [n, T]
    if estimator == "k1":
        return -log_r  # [n, T]
    if estimator == "k2":
        return 0.5 * log_r**2  # [n, T]
    k3 = torch.expm1(log_r) - log_r  # [n, T]
    if estimator == "k3":
        return k3  # [n, T]
    if estimator == "k3_ratio":
        return torch.exp(logp - old_logp) * k3  # [n, T]
    raise ValueError(f"kl estimator must be one of {KL_ESTIMATORS}, got {estimator!r}")


def log_importance_weights(logp: torch.Tensor, old_logp: torch.Tensor, mask: torch.Tensor, level: str) -> torch.Tensor:
    """log ρ_t per token ([n, T]) or GSPO's length-normalized log s_i per row ([n, 1])."""
    log_ratio = logp - old_logp  # [n, T]
    if level == "token":
        return log_ratio  # [n, T]
    if level == "sequence":
        return ((log_ratio * mask).sum(1) / mask.sum(1).clamp(min=1)).unsqueeze(1)  # [n, 1]
    raise ValueError(f"importance sampling level must be one of {IS_LEVELS}, got {level!r}")


def expected_kl_gradient(logits: torch.Tensor, ref_logits: torch.Tensor, estimator: str = "k3_ratio") -> torch.Tensor:
    """E_{y~π}[∇_θ k(y)]: what β·k pulls on average, exactly, for a categorical policy π = softmax(θ)
    with θ = ``logits [V]`` against π_ref = softmax(``ref_logits [V]``), on-policy (π_old = π).

    Every answer y is one "token"; the sum Σ_y π(y) ∇_θ k(y) holds the sampling probability π(y)
    fixed, as sampling does.  Returns ``[V]``; by the table above it equals ∇_θ KL(π‖π_ref) for k2
    and k3_ratio, ∇_θ KL(π_ref‖π) for k3, and 0 for k1.
    """
    theta = logits.detach().clone().requires_grad_(True)  # [V]
    logp = torch.log_softmax(theta, -1)  # [V]
    ref = torch.log_softmax(ref_logits.detach(), -1)  # [V]
    k = kl_penalty(logp[None], ref[None], logp.detach()[None], estimator)[0]  # [V] one token per answer
    (grad,) = torch.autograd.grad((logp.exp().detach() * k).sum(), theta)  # [V] Σ_y π(y) ∇k(y)
    return grad


def truncated_is_weights(old_logp: torch.Tensor, sampling_logp: torch.Tensor, cap: float) -> torch.Tensor:
    """min(π_old / π_sampler, cap) per token, no gradient ([n, T])."""
    return torch.exp(old_logp - sampling_logp).clamp(max=cap).detach()  # [n, T]


def clipped_surrogate(
    ratio: torch.Tensor,  # [n, T] ρ_t, or [n, 1] s_i
    advantages: torch.Tensor,  # [n]
    eps_low: float,
    eps_high: float,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Clipped surrogate loss, and where the low / high clip was active (each shaped as ``ratio``)."""
    adv = advantages.unsqueeze(1)  # [n, 1]
    unclipped = ratio * adv  # [n, T]
    clipped = ratio.clamp(1 - eps_low, 1 + eps_high) * adv  # [n, T]
    loss = -torch.minimum(unclipped, clipped)  # [n, T]
    low = (ratio < 1 - eps_low) & (adv < 0)  # [n, T]
    high = (ratio > 1 + eps_high) & (adv > 0)  # [n, T]
    return loss, low, high


def cispo_surrogate(
    ratio: torch.Tensor, logp: torch.Tensor, advantages: torch.Tensor, cap: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """CISPO's −sg(min(w, cap)) · A · log π_θ ([n, T]) and where the cap was active (shaped as ``ratio``)."""
    adv = advantages.unsqueeze(1)  # [n, 1]
    loss = -ratio.clamp(max=cap).detach() * adv * logp  # [n, T]
    return loss, (ratio > cap) & (adv > 0)


def sapo_surrogate(ratio: torch.Tensor, advantages: torch.Tensor, tau_pos: float, tau_neg: float) -> torch.Tensor:
    """SAPO's soft gate −(4/τ) σ(τ (w − 1)) · A (shaped as ``ratio``)."""
    adv = advantages.unsqueeze(1)  # [n, 1]
    tau = torch.where(adv > 0, tau_pos, tau_neg)  # [n, 1]
    return -torch.sigmoid(tau * (ratio - 1)) * 4 / tau * adv  # [n, T]


def aggregate(per_token: torch.Tensor, mask: torch.Tensor, loss_type: str, norm: LossNormalizer) -> torch.Tensor:
    """This micro-batch's share of the step loss (see the module docstring for the formulas)."""
    masked = per_token * mask  # [n, T]
    if loss_type in ("grpo", "sapo"):
        per_seq = masked.sum(1) / mask.sum(1).clamp(min=1)  # [n]
        return per_seq.sum() / norm.num_sequences
    if loss_type in ("dapo", "cispo"):
        return masked.sum() / max(norm.num_tokens, 1)
    if loss_type == "luspo":
        return masked.sum() / norm.num_sequences
    if loss_type == "dr_grpo":
        return masked.sum() / (norm.num_sequences * norm.max_completion_length)
    raise ValueError(f"loss type must be one of {LOSS_TYPES}, got {loss_type!r}")


def policy_loss(
    logp: torch.Tensor,  # [n, T]
    old_logp: torch.Tensor,  # [n, T]
    advantages: torch.Tensor,  # [n]
    mask: torch.Tensor,  # [n, T] bool
    norm: LossNormalizer,
    *,
    loss_type: str = "grpo",
    eps_low: float = 0.2,
    eps_high: float = 0.2,
    beta: float = 0.0,
    ref_logp: torch.Tensor | None = None,  # [n, T], required when beta > 0
    kl_estimator: str = "k3_ratio",
    is_weights: torch.Tensor | None = None,  # [n, T] truncated IS weights, or None
    importance_sampling_level: str = "token",
    sapo_tau_pos: float = 1.0,
    sapo_tau_neg: float = 1.05,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """The micro-batch's share of the GRPO step loss and summed statistics for the log.

    The statistics are sums over real tokens (``*_sum``), so the trainer can add them over
    micro-batches and processes and divide by the token count once.  ``sapo_tau_*`` are SAPO's
    temperatures (TRL's defaults); for cispo, ``eps_high`` is the IS-weight cap.
    """
    ratio = torch.exp(log_importance_weights(logp, old_logp, mask, importance_sampling_level))  # [n, T] or [n, 1]
    false = torch.zeros_like(mask)  # [n, T]
    if loss_type == "cispo":
        per_token, high = cispo_surrogate(ratio, logp, advantages, eps_high)  # [n, T], ratio's shape
        low = false
    elif loss_type == "sapo":
        per_token, low, high = sapo_surrogate(ratio, advantages, sapo_tau_pos, sapo_tau_neg), false, false
    else:
        per_token, low, high = clipped_surrogate(ratio, advantages, eps_low, eps_high)  # ratio's shape each
    if is_weights is not None:
        per_token = per_token * is_weights  # [n, T]
    stats = {
        "clip_low_sum": (low & mask).sum().float(),
        "clip_high_sum": (high & mask).sum().float(),
        "ratio_sum": (torch.exp(logp - old_logp).detach() * mask).sum(),
    }
    if beta > 0:
        if ref_logp is None:
            raise ValueError("beta > 0 needs the reference log-probs (ref_logp)")
        if kl_estimator == "k3_ratio":  # weighted by the loss's own ratio, token or sequence
            kl = ratio * kl_penalty(logp, ref_logp, old_logp, "k3")  # [n, T]
        else:
            kl = kl_penalty(logp, ref_logp, old_logp, kl_estimator)  # [n, T]
        per_token = per_token + beta * kl  # [n, T]
        stats["kl_sum"] = (kl.detach() * mask).sum()
    if is_weights is not None:
        stats["is_weight_sum"] = (is_weights * mask).sum()
    return aggregate(per_token, mask, loss_type, norm), stats
