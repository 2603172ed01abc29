"""How well a reference-vs-generated classifier separates and is calibrated: one set of definitions for RAL's
judge and VARL's discriminator, computed from its probabilities D = P(reference) on the two classes.

With D⁺ [n₊] its probabilities on reference (positive) pairs and D⁻ [n₋] on generated (negative) ones, every
statistic weighs the two classes equally, as the classifier's class-balanced loss does::

    accuracy_reference  mean[D⁺ > ½]
    accuracy_generated  mean[D⁻ < ½]
    accuracy            ½ (accuracy_reference + accuracy_generated)      balanced accuracy
    auc                 P(D⁺ > D⁻) + ½ P(D⁺ = D⁻) over all pairs          (rewardzoo.eval.pairwise_auc)
    d_reference_mean    mean D⁺
    d_generated_mean    mean D⁻
    brier               ½ (mean (1 − D⁺)² + mean (D⁻)²)                   balanced Brier score
    ece                 Σ_b |Σ_{i ∈ b} w_i (y_i − D_i)|                   balanced expected calibration error

For ``ece`` the two classes are pooled with weights w = 1/(2 n₊) on a positive (y = 1) and 1/(2 n₋) on a
negative (y = 0), so the weights sum to 1, and cut into ``bins`` equal-width bins of D ([0, 1/B), …,
[(B−1)/B, 1]); in each bin the weighted gap between the share of references and the mean D, weighted by
the bin's mass, is |Σ w (y − D)|.  0 is a calibrated classifier; a constant D = ½ scores ½ on each class and
has ece 0 but brier ¼ and auc ½.

A classifier that separates perfectly has auc 1 and accuracy 1; auc is label-free of the ½ threshold, so it
moves first when the classes start to separate.
"""

from __future__ import annotations

import math

import torch

from rewardzoo.eval import pairwise_auc

ECE_BINS = 10
"""Equal-width bins of D for :func:`classifier_diagnostics`'s ``ece``."""


def reference_auc(d_reference: torch.Tensor, d_generated: torch.Tensor) -> float:
    """P(D⁺ > D⁻) + ½ P(D⁺ = D⁻) over every (reference, generated) pair; NaN when either side is empty.

    >>> reference_auc(torch.tensor([0.9, 0.4]), torch.tensor([0.4, 0.1, 0.2]))  # pairs won: 3 + (½ + 1 + 1) of 6
    0.9166666666666666
    """
    pos, neg = (
        d_reference.detach().double().cpu().flatten(),
        d_generated.detach().double().cpu().flatten(),
    )  # [n₊], [n₋]
    scores = torch.cat([pos, neg])  # [n₊ + n₋]
    labels = torch.cat([torch.ones_like(pos), torch.zeros_like(neg)])  # [n₊ + n₋]
    return pairwise_auc(scores, labels)


def balanced_ece(d_reference: torch.Tensor, d_generated: torch.Tensor, bins: int = ECE_BINS) -> float:
    """Class-balanced expected calibration error over ``bins`` equal-width bins of D (module docstring);
    NaN when either side is empty."""
    if bins < 1:
        raise ValueError(f"bins must be >= 1; got {bins}")
    pos, neg = (
        d_reference.detach().double().cpu().flatten(),
        d_generated.detach().double().cpu().flatten(),
    )  # [n₊], [n₋]
    if not len(pos) or not len(neg):
        return math.nan
    d = torch.cat([pos, neg])  # [n]
    y = torch.cat([torch.ones_like(pos), torch.zeros_like(neg)])  # [n]
    w = torch.cat([torch.full_like(pos, 0.5 / len(pos)), torch.full_like(neg, 0.5 / len(neg))])  # [n], sums to 1
    which = (d * bins).floor().clamp(0, bins - 1).long()  # [n] bin of each D; D = 1 falls in the last
    gap = torch.zeros(bins, dtype=torch.float64).index_add_(0, which, w * (y - d))  # [bins] Σ w (y − D) per bin
    return float(gap.abs().sum())


def classifier_diagnostics(
    d_reference: torch.Tensor, d_generated: torch.Tensor, bins: int = ECE_BINS
) -> dict[str, float]:
    """Accuracy (balanced and per class), AUC, mean D per class, balanced Brier score and balanced ECE of a
    classifier's probabilities ``d_reference`` [n₊] on references and ``d_generated`` [n₋] on generated
    answers (definitions in the module docstring).  Both sides must be non-empty.

    >>> out = classifier_diagnostics(torch.tensor([0.9, 0.6]), torch.tensor([0.2, 0.7]))
    >>> out["accuracy"], out["auc"], round(out["brier"], 4)
    (0.75, 0.75, 0.175)
    """
    if not len(d_reference) or not len(d_generated):
        raise ValueError(
            f"classifier_diagnostics needs references and generated answers; got "
            f"{len(d_reference)} and {len(d_generated)}"
        )
    pos, neg = d_reference.detach().float().cpu(), d_generated.detach().float().cpu()  # [n₊], [n₋]
    acc_ref = (pos > 0.5).float().mean().item()
    acc_gen = (neg < 0.5).float().mean().item()
    brier = 0.5 * ((1 - pos.double()) ** 2).mean().item() + 0.5 * (neg.double() ** 2).mean().item()
    return {
        "accuracy": 0.5 * (acc_ref + acc_gen),
        "accuracy_reference": acc_ref,
        "accuracy_generated": acc_gen,
        "auc": reference_auc(pos, neg),
        "d_reference_mean": pos.mean().item(),
        "d_generated_mean": neg.mean().item(),
        "brier": brier,
        "ece": balanced_ece(pos, neg, bins),
    }
