"""Divergences between discrete distributions (docs/rewards/transforms.md): pure torch functions, bottom layer.

Every function takes two tensors ``p, q [..., A]`` holding distributions along the *last* axis
(A = size of the support, e.g. the distinct answers y), broadcasts any leading shape, and returns
``[...]`` in the inputs' dtype (any float dtype):

    kl(p, q)      KL(p ‖ q) = Σ_y p(y) log(p(y) / q(y))                            ∈ [0, +inf]
    js(p, q)      JS(p, q)  = ½ KL(p ‖ m) + ½ KL(q ‖ m),   m = (p + q) / 2           ∈ [0, log 2]
    le_cam(p, q)  LC(p, q)  = ½ Σ_y (p(y) − q(y))² / (p(y) + q(y))                  ∈ [0, 1]

LC is the Vincze–Le Cam divergence, half the triangular discrimination; LC ≤ ½ Σ|p − q| ≤ 1.
JS and LC are symmetric; both reach their maximum exactly on distributions with disjoint supports.

Zeros: 0 · log 0 = 0 and 0 · log(0 / 0) = 0 (``torch.xlogy``), so ``kl`` is finite wherever q > 0
on the support of p and **+inf** where some q(y) = 0 < p(y); ``js`` is always finite (m ≥ p / 2);
an LC term with p(y) + q(y) = 0 is 0.  **No normalisation is done**: the inputs are used as given,
so pass distributions (non-negative, summing to 1 along the last axis).  Gradients are those of
the formulas on the interior of the simplex; at exact zeros they are not defined.
"""

from __future__ import annotations

import torch


def kl(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """KL(p ‖ q) = Σ p log(p / q) along the last axis, +inf where q = 0 < p (``[..., A]`` → ``[...]``).

    >>> kl(torch.tensor([0.5, 0.5]), torch.tensor([0.25, 0.75]))  # ½ log 2 + ½ log(2/3) = ½ log(4/3)
    tensor(0.1438)
    """
    terms = torch.xlogy(p, p) - torch.xlogy(p, q)  # [..., A] p log p − p log q, 0 where p = 0
    return terms.sum(-1)  # [...]


def js(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """Jensen–Shannon JS(p, q) = ½ KL(p ‖ m) + ½ KL(q ‖ m), m = (p + q) / 2 (``[..., A]`` → ``[...]``).

    >>> js(torch.tensor([1.0, 0.0]), torch.tensor([0.0, 1.0]))  # disjoint supports: log 2
    tensor(0.6931)
    """
    m = (p + q) / 2  # [..., A]
    return 0.5 * kl(p, m) + 0.5 * kl(q, m)  # [...]


def le_cam(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """Vincze–Le Cam LC(p, q) = ½ Σ (p − q)² / (p + q), a term with p + q = 0 is 0 (``[..., A]`` → ``[...]``).

    >>> le_cam(torch.tensor([0.5, 0.5]), torch.tensor([0.25, 0.75]))  # ½ (1/12 + 1/20) = 1/15
    tensor(0.0667)
    """
    total = p + q  # [..., A]
    support = total > 0  # [..., A] bool
    safe = torch.where(support, total, torch.ones_like(total))  # [..., A] 1 off the support: no 0 / 0
    terms = torch.where(support, (p - q) ** 2 / safe, torch.zeros_like(total))  # [..., A]
    return 0.5 * terms.sum(-1)  # [...]
