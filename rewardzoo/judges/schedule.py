"""When a co-trained judge learns (the update gate) and how a reward judge trails it (Polyak).

**Update gate** (the RAL paper, §3): after warm-up, skip a judge update while the moving average of the
judge's batch accuracy exceeds a threshold, but never more than ``max_skip_streak`` skips in a row::

    ā_t   = a_t                          (first call)
    ā_t   = (1 − α) · ā_{t−1} + α · a_t  (then; α = ema_rate)
    skip_t = can_skip ∧ ā_t > threshold ∧ streak_{t−1} < max_skip_streak
    streak_t = streak_{t−1} + 1 if skip_t else 0

The accuracy a_t of the current batch is folded in *before* the decision, so the gate reacts to
the batch it is about to train on.  ``max_skip_streak = 0`` or ``threshold >= 1`` disables skipping.

**Polyak averaging** (the RAL paper, §3, the reward judge): φ_r ← (1 − τ)·φ_r + τ·φ over every parameter
and floating buffer (integer buffers are copied); the gap ‖φ_r − φ‖₂ over parameters is logged.

The RAL paper gives no numbers for the threshold, α, the streak cap or τ: the defaults live in
:class:`rewardzoo.rewards.ral.RALConfig` and are our own choices.
"""

from __future__ import annotations

import torch


class UpdateGate:
    """Skip judge updates while the moving-average batch accuracy is above ``threshold``, at most
    ``max_skip_streak`` in a row."""

    def __init__(self, threshold: float, ema_rate: float, max_skip_streak: int):
        if not 0.0 < ema_rate <= 1.0:
            raise ValueError(f"gate ema_rate must be in (0, 1], got {ema_rate}")
        if max_skip_streak < 0:
            raise ValueError(f"gate max_skip_streak must be >= 0, got {max_skip_streak}")
        self.threshold = threshold
        self.ema_rate = ema_rate
        self.max_skip_streak = max_skip_streak
        self.ema: float | None = None
        self.streak = 0  # skips in a row, up to and including the last decision
        self.skips = 0  # skips in total
        self.skipped = False  # the last decision

    def step(self, accuracy: float, can_skip: bool = True) -> bool:
        """Fold in this batch's accuracy and decide: True = update the judge now, False = skip.
        ``can_skip=False`` (warm-up) always updates but still tracks the average."""
        self.ema = accuracy if self.ema is None else (1.0 - self.ema_rate) * self.ema + self.ema_rate * accuracy
        self.skipped = can_skip and self.ema > self.threshold and self.streak < self.max_skip_streak
        self.streak = self.streak + 1 if self.skipped else 0
        self.skips += int(self.skipped)
        return not self.skipped

    def metrics(self) -> dict[str, float]:
        """Log scalars: the last decision, the current streak, total skips and the average."""
        return {
            "gate_skipped": float(self.skipped),
            "gate_streak": float(self.streak),
            "gate_skips": float(self.skips),
            "gate_ema_accuracy": float("nan") if self.ema is None else self.ema,
        }

    def state_dict(self) -> dict:
        """The gate's counters and average."""
        return {"ema": self.ema, "streak": self.streak, "skips": self.skips, "skipped": self.skipped}

    def load_state_dict(self, state: dict) -> None:
        """Restore :meth:`state_dict`."""
        self.ema, self.streak, self.skips, self.skipped = (
            state["ema"],
            state["streak"],
            state["skips"],
            state["skipped"],
        )


@torch.no_grad()
def polyak_update(target: torch.nn.Module, source: torch.nn.Module, tau: float) -> None:
    """In place: target ← (1 − τ)·target + τ·source, over parameters and floating buffers
    (other buffers are copied).  Both modules must have the same structure."""
    if not 0.0 < tau <= 1.0:
        raise ValueError(f"Polyak tau must be in (0, 1], got {tau}")
    for t, s in zip(target.parameters(), source.parameters(), strict=True):
        t.lerp_(s, tau)
    for t, s in zip(target.buffers(), source.buffers(), strict=True):
        if t.is_floating_point():
            t.lerp_(s, tau)
        else:
            t.copy_(s)


@torch.no_grad()
def parameter_distance(a: torch.nn.Module, b: torch.nn.Module) -> float:
    """‖φ_a − φ_b‖₂ over all parameters of two modules of the same structure (sharded ones too: the norm
    of the per-tensor norms, reduced over processes)."""
    diffs = [p.double() - q.double() for p, q in zip(a.parameters(), b.parameters(), strict=True)]
    return float(torch.nn.utils.get_total_norm(diffs)) if diffs else 0.0
