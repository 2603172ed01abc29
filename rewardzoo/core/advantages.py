"""Advantages from rewards: pure functions of ``rewards [N]`` and ``group_ids [N]``.

    grpo     A_i = (r_i − mean_g) / (std_g + eps)      DeepSeekMath (Shao et al. 2024), eq. 3
    dr_grpo  A_i =  r_i − mean_g                         Dr. GRPO (Liu et al. 2025): no std division
    bnpo     A_i = (r_i − mean_g) / (std_batch + eps)    batch-level std, as TRL's scale_rewards="batch"
    pooled   A_i = (r_i − mean_g) / (s_pooled + eps)     s_pooled² = Σ_i (r_i − mean_g)² / (N − P), P groups:
                                                         Dr. GRPO's centring on one scale for the whole batch (ours)

``pooled`` divides by the pooled *within-group* standard deviation, so two rewards that are affine
functions of each other within every group with one common slope (e.g. a pairwise win rate and the
absolute score it ranks, the RcRL paper) get identical advantages, while a near-tied group is not blown
up to unit scale as ``grpo`` does; ``bnpo``'s batch std also counts the differences between
prompts, which a group-centred reward (mean ½ in every group) does not have.

``std_g`` is the unbiased standard deviation within the group (``torch.std``, as TRL computes it).
A group whose rewards are all equal carries no preference: its advantages are exactly zero in
every variant (set explicitly, so floating-point noise in the mean cannot leak through).
"""

from __future__ import annotations

import torch

ADVANTAGE_TYPES = ("grpo", "dr_grpo", "bnpo", "pooled")


def group_mean_std(values: torch.Tensor, group_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per-row group mean, unbiased group std and whether the group is constant.

    Returns three [N] tensors broadcast back to the rows.  Groups may be of any size and order.
    """
    _, inverse = torch.unique(group_ids, return_inverse=True)  # [N] group index per row
    n_groups = int(inverse.max()) + 1 if inverse.numel() else 0
    values = values.double()  # [N] accumulate in fp64 so sums cancel exactly for equal rewards
    count = torch.zeros(n_groups, dtype=values.dtype).index_add_(0, inverse, torch.ones_like(values))  # [P]
    total = torch.zeros(n_groups, dtype=values.dtype).index_add_(0, inverse, values)  # [P]
    mean = (total / count)[inverse]  # [N]
    sq = torch.zeros(n_groups, dtype=values.dtype).index_add_(0, inverse, (values - mean) ** 2)  # [P]
    std = (sq / (count - 1).clamp(min=1)).sqrt()[inverse]  # [N]
    vmax = values.new_zeros(n_groups).scatter_reduce(0, inverse, values, "amax", include_self=False)  # [P]
    vmin = values.new_zeros(n_groups).scatter_reduce(0, inverse, values, "amin", include_self=False)  # [P]
    constant = (vmax == vmin)[inverse]  # [N] bool
    return mean, std, constant


def compute_advantages(
    rewards: torch.Tensor,  # [N] float
    group_ids: torch.Tensor,  # [N] int64
    kind: str = "grpo",
    eps: float = 1e-4,
) -> torch.Tensor:  # [N] float32
    """Advantages of one step's rows under the named variant (see the module docstring)."""
    if kind not in ADVANTAGE_TYPES:
        raise ValueError(f"advantage type must be one of {ADVANTAGE_TYPES}, got {kind!r}")
    mean, std, constant = group_mean_std(rewards, group_ids)  # [N] each
    centred = rewards.double() - mean  # [N]
    if kind == "grpo":
        adv = centred / (std + eps)  # [N]
    elif kind == "dr_grpo":
        adv = centred  # [N]
    elif kind == "pooled":
        n_groups = int(torch.unique(group_ids).numel())
        pooled = (centred.pow(2).sum() / max(rewards.numel() - n_groups, 1)).sqrt()  # []
        adv = centred / (pooled + eps)  # [N]
    else:
        batch_std = rewards.double().std() if rewards.numel() > 1 else rewards.new_zeros((), dtype=torch.float64)
        adv = centred / (batch_std + eps)  # [N]
    return adv.masked_fill(constant, 0.0).float()  # [N]
