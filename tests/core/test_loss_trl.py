"""Every policy loss against TRL's own ``GRPOTrainer._compute_loss`` on one fixed fp64 batch.

TRL's method runs unbound on a stand-in ``self`` holding the settings it reads (one process, one
micro-batch, no entropy bonus or masks), and its log-probs come from the same two parameters
(hidden states ``h`` and output weight ``w``) as ours.  Over every loss type × importance-sampling
level × β ∈ {0, 0.05} × μ ∈ {1, >1} × truncated IS on / off, the loss and both parameters'
gradients agree to ≤ 1e-12.  Then the summed micro-batch losses equal the one-batch loss.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from types import SimpleNamespace

import pytest
import torch

from rewardzoo.core.loss import SEQUENCE_LEVEL_LOSSES, LossNormalizer, policy_loss, truncated_is_weights

trl = pytest.importorskip("trl")

N, T, H, V = 6, 5, 3, 7
# (our loss type, TRL's loss_type, importance sampling level); GSPO is grpo at the sequence level
VARIANTS = [
    ("grpo", "grpo", "token"),
    ("dapo", "dapo", "token"),
    ("dr_grpo", "dr_grpo", "token"),
    ("cispo", "cispo", "token"),
    ("sapo", "sapo", "token"),
    ("grpo", "grpo", "sequence"),
    ("sapo", "sapo", "sequence"),
    ("luspo", "luspo", "sequence"),
]
EPS_LOW, EPS_HIGH, CISPO_CAP = 0.2, 0.28, 1.1


def batch():
    """The fixed batch: parameters, sampled ids, mask of ragged lengths, advantages, old / ref / sampler log-probs."""
    g = torch.Generator().manual_seed(0)
    h = torch.randn(N, T, H, generator=g, dtype=torch.float64)  # [N, T, H]
    w = torch.randn(H, V, generator=g, dtype=torch.float64)  # [H, V]
    ids = torch.randint(V, (N, T), generator=g)  # [N, T]
    lengths = torch.tensor([5, 3, 1, 4, 5, 2])  # [N]
    mask = torch.arange(T)[None] < lengths[:, None]  # [N, T]
    adv = torch.tensor([1.2, -0.7, 0.4, -1.1, 0.0, 0.9], dtype=torch.float64)  # [N]
    noise = lambda s: s * torch.randn(N, T, generator=g, dtype=torch.float64)  # noqa: E731
    return h, w, ids, mask, adv, noise(0.3), noise(0.5), noise(0.3)


def logprobs(h, w, ids):
    """log π of the sampled ids under logits h @ w ([N, T])."""
    return torch.log_softmax(h @ w, -1).gather(-1, ids[..., None])[..., 0]  # [N, T]


def trl_loss(trl_type, level, beta, bias_kl, logp, inputs, use_is):
    """TRL 1.16's ``_compute_loss`` on a stand-in trainer whose forward returns ``logp``."""
    cap = CISPO_CAP if trl_type == "cispo" else EPS_HIGH
    ident = lambda x, **_: x  # noqa: E731
    fake = SimpleNamespace(
        _get_per_token_logps_and_entropies=lambda *a, **k: (logp, torch.zeros_like(logp), None),
        top_entropy_quantile=1.0,
        off_policy_mask_threshold=None,
        importance_sampling_level=level,
        beta=beta,
        loss_type=trl_type,
        epsilon_low=EPS_LOW,
        epsilon_high=cap,
        use_vllm=use_is,
        vllm_importance_sampling_correction=use_is,
        model=SimpleNamespace(training=True),
        current_gradient_accumulation_steps=1,
        max_completion_length=T,
        accelerator=SimpleNamespace(num_processes=1, gather=ident, reduce=ident),
        _entropy_bonus_enabled=False,
        aux_loss_enabled=False,
        _metrics=defaultdict(lambda: defaultdict(list)),
        args=SimpleNamespace(
            use_bias_correction_kl=bias_kl,
            delta=None,
            sapo_temperature_pos=1.0,
            sapo_temperature_neg=1.05,
            steps_per_generation=1,
        ),
    )
    return trl.GRPOTrainer._compute_loss(fake, None, inputs)


def ours(loss_type, level, beta, estimator, logp, old, ref, adv, mask, is_w, rows=slice(None)):
    """rewardzoo's loss on ``rows`` of the batch, normalized by the whole batch's sizes."""
    norm = LossNormalizer(num_sequences=N, num_tokens=int(mask.sum()), max_completion_length=T)
    loss, _ = policy_loss(
        logp[rows],
        old[rows],
        adv[rows],
        mask[rows],
        norm,
        loss_type=loss_type,
        eps_low=EPS_LOW,
        eps_high=CISPO_CAP if loss_type == "cispo" else EPS_HIGH,
        beta=beta,
        ref_logp=ref[rows],
        kl_estimator=estimator,
        is_weights=None if is_w is None else is_w[rows],
        importance_sampling_level=level,
    )
    return loss


CASES = list(itertools.product(VARIANTS, (0.0, 0.05), (1, 2), (False, True), (True, False)))


@pytest.mark.parametrize(("variant", "beta", "mu", "use_is", "bias_kl"), CASES)
def test_loss_and_gradients_equal_trl(variant, beta, mu, use_is, bias_kl):
    """Loss and ∇h, ∇w equal TRL's to 1e-12 (k3_ratio ↔ use_bias_correction_kl, k3 ↔ without)."""
    if beta == 0 and not bias_kl:
        pytest.skip("the KL estimator only matters at β > 0")
    loss_type, trl_type, level = variant
    h, w, ids, mask, adv, d_old, d_ref, d_samp = batch()
    results = []
    for side in ("trl", "ours"):
        hp, wp = h.clone().requires_grad_(True), w.clone().requires_grad_(True)
        logp = logprobs(hp, wp, ids)  # [N, T]
        old = logp.detach() + (d_old if mu > 1 else 0)  # [N, T]
        ref = logp.detach() + d_ref  # [N, T]
        is_w = truncated_is_weights(old, old + d_samp, 2.0) if use_is else None  # [N, T]
        if side == "trl":
            inputs = {
                "prompt_ids": torch.zeros(N, 1, dtype=torch.long),
                "prompt_mask": torch.ones(N, 1, dtype=torch.long),
                "completion_ids": ids,
                "completion_mask": mask.to(torch.float64),
                "advantages": adv,
                "old_per_token_logps": old if mu > 1 else None,
                "ref_per_token_logps": ref,
                "importance_sampling_ratio": is_w,
                "num_items_in_batch": mask.sum().to(torch.float64),
            }
            loss = trl_loss(trl_type, level, beta, bias_kl, logp, inputs, use_is)
        else:
            estimator = "k3_ratio" if bias_kl else "k3"
            loss = ours(loss_type, level, beta, estimator, logp, old, ref, adv, mask, is_w)
        loss.backward()
        results.append((loss.detach(), hp.grad, wp.grad))
    (l_trl, gh_trl, gw_trl), (l_ours, gh_ours, gw_ours) = results
    assert abs(l_trl - l_ours) <= 1e-12
    assert (gh_trl - gh_ours).abs().max() <= 1e-12
    assert (gw_trl - gw_ours).abs().max() <= 1e-12
    assert gw_ours.abs().max() > 0  # the comparison is not of two zeros


@pytest.mark.parametrize("variant", VARIANTS)
def test_micro_batches_sum_to_the_one_batch_loss(variant):
    """Rows {0, 1, 2} and {3, 4, 5} as two micro-batches: their losses add to the whole batch's."""
    loss_type, _, level = variant
    h, w, ids, mask, adv, d_old, d_ref, d_samp = batch()
    logp = logprobs(h, w, ids)  # [N, T]
    old, ref = logp + d_old, logp + d_ref  # [N, T] each
    is_w = truncated_is_weights(old, old + d_samp, 2.0)  # [N, T]
    args = (loss_type, level, 0.05, "k3_ratio", logp, old, ref, adv, mask, is_w)
    whole = ours(*args)
    parts = ours(*args, rows=slice(0, 3)) + ours(*args, rows=slice(3, N))
    assert abs(whole - parts) <= 1e-14


def test_gspo_is_one_clipped_ratio_per_row_by_hand():
    """One row, two tokens with log-ratios 0.3 and 0.1: s = e^0.2 ≈ 1.2214 > 1 + 0.2, A = 1, so the
    clipped term 1.2 is the min and the grpo loss is −1.2; at the token level (e^0.3, e^0.1) → −(1.2 + e^0.1)/2."""
    logp = torch.tensor([[0.3, 0.1]], dtype=torch.float64)  # [1, 2]
    old = torch.zeros(1, 2, dtype=torch.float64)  # [1, 2]
    mask = torch.ones(1, 2, dtype=torch.bool)  # [1, 2]
    adv = torch.ones(1, dtype=torch.float64)  # [1]
    norm = LossNormalizer(1, 2, 2)
    seq, _ = policy_loss(logp, old, adv, mask, norm, importance_sampling_level="sequence")
    tok, _ = policy_loss(logp, old, adv, mask, norm)
    assert seq.item() == pytest.approx(-1.2, abs=1e-15)
    assert tok.item() == pytest.approx(-(1.2 + torch.e**0.1) / 2, abs=1e-15)


def test_a_sequence_ratio_with_a_token_sum_fails_in_the_config():
    """dapo / dr_grpo / cispo at the sequence level, and luspo at the token level, are refused."""
    from rewardzoo.core.config import GRPOConfig

    for loss_type in ("dapo", "dr_grpo", "cispo"):
        assert loss_type not in SEQUENCE_LEVEL_LOSSES
        with pytest.raises(ValueError, match="set loss_type=grpo"):
            GRPOConfig(loss_type=loss_type, importance_sampling_level="sequence").validate()
    with pytest.raises(ValueError, match="importance_sampling_level=sequence"):
        GRPOConfig(loss_type="luspo").validate()
