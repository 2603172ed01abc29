"""Evaluation and diagnostics: pure functions of numbers that any layer may use.

Nothing here imports the rest of rewardzoo; the trainer, the benchmarks and the leaderboard call
these on what the task's exact checker and the reward returned.

    pearson(x, y)                 correlation of two [N] tensors (0 when either is constant)
    batch_analysis(rows, signals) train/<m> means of a batch's row metrics and the correlation of
                                  every reward signal with each (analysis/corr/<signal>/<m>)
"""

from __future__ import annotations

import torch


def pearson(x: torch.Tensor, y: torch.Tensor) -> float:
    """Pearson correlation of two [N] tensors (0 when either is constant).

    >>> pearson(torch.tensor([1., 2., 3.]), torch.tensor([2., 4., 7.]))  # doctest: +ELLIPSIS
    0.99...
    """
    x, y = x.double() - x.double().mean(), y.double() - y.double().mean()  # [N] each
    denom = float(x.norm() * y.norm())
    return float((x * y).sum()) / denom if denom > 0 else 0.0


def batch_analysis(rows: dict[str, list[float]], signals: dict[str, torch.Tensor]) -> dict[str, float]:
    """Diagnostics of one training batch from the task's exact checker, computed outside the reward.

    ``rows`` are the task's per-row metrics (``correct`` plus extras such as ``relative_error``);
    ``signals`` are [N] tensors the reward produced (the reward itself and its components).
    Returns ``train/<m>`` (the mean of each row metric; ``correct`` is reported as ``accuracy``)
    and ``analysis/corr/<signal>/<m>`` (002 Figure 2's judge-score correlations when the signal is
    a judge probability).
    """
    metrics = {f"train/{'accuracy' if k == 'correct' else k}": sum(v) / len(v) for k, v in rows.items()}
    for name, signal in signals.items():
        for key, values in rows.items():
            metrics[f"analysis/corr/{name}/{key}"] = pearson(signal.float(), torch.tensor(values))
    return metrics
