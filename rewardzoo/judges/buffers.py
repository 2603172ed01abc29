"""Buffers of past samples that learned judges mix into their batches (RAL replay, VARL negatives).

One small design, two eviction rules chosen by a named switch:

- ``fifo``: keep the ``capacity`` most recent items (VARL's buffer of recent samples).
- ``reservoir``: keep a uniform sample of *every* item ever added (Vitter's Algorithm R: the
  i-th item, counting from 0, replaces a random slot with probability capacity / (i + 1)).

``sample(n)`` draws min(n, len) distinct stored items uniformly.  Every random choice comes from the
buffer's own ``torch.Generator`` (seeded at construction, saved in ``state_dict``), so a buffer is
deterministic given its seed and independent of the global RNG, and a restored buffer continues
exactly.  The capacities and the replay share are our own defaults (the RAL paper gives none).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch

EVICTIONS = ("fifo", "reservoir")


def replay_count(n_current: int, fraction: float) -> int:
    """How many replayed items to add to ``n_current`` fresh ones so that replayed items make up
    ``fraction`` of the mix: round(n_current · f / (1 − f)).  E.g. 6 fresh at f = 0.25 → 2."""
    if not 0.0 <= fraction < 1.0:
        raise ValueError(f"replay fraction must be in [0, 1), got {fraction}")
    return round(n_current * fraction / (1.0 - fraction))


class ReplayBuffer:
    """A bounded store of past items with seeded uniform sampling (``eviction``: fifo | reservoir)."""

    def __init__(self, capacity: int, eviction: str = "fifo", seed: int = 0):
        if capacity < 1:
            raise ValueError(f"buffer capacity must be at least 1, got {capacity}")
        if eviction not in EVICTIONS:
            raise ValueError(f"buffer eviction must be one of {', '.join(EVICTIONS)}, got {eviction!r}")
        self.capacity = capacity
        self.eviction = eviction
        self.items: list[Any] = []
        self.seen = 0  # items ever added
        self.generator = torch.Generator().manual_seed(seed)

    def __len__(self) -> int:
        return len(self.items)

    def add(self, items: Iterable[Any]) -> None:
        """Store new items, evicting by the buffer's rule once it is full."""
        for item in items:
            if len(self.items) < self.capacity:
                self.items.append(item)
            elif self.eviction == "fifo":
                self.items.pop(0)
                self.items.append(item)
            else:
                slot = int(torch.randint(0, self.seen + 1, (1,), generator=self.generator))
                if slot < self.capacity:
                    self.items[slot] = item
            self.seen += 1

    def sample(self, n: int) -> list[Any]:
        """min(n, len) distinct stored items, drawn uniformly with the buffer's generator."""
        n = min(max(n, 0), len(self.items))
        if n == 0:
            return []
        order = torch.randperm(len(self.items), generator=self.generator)[:n]  # [n]
        return [self.items[i] for i in order.tolist()]

    def state_dict(self) -> dict:
        """Items, counter and generator state (a copy)."""
        return {
            "capacity": self.capacity,
            "eviction": self.eviction,
            "items": list(self.items),
            "seen": self.seen,
            "generator": self.generator.get_state(),
        }

    def load_state_dict(self, state: dict) -> None:
        """Restore :meth:`state_dict`; capacity and eviction must match the buffer's settings."""
        if (state["capacity"], state["eviction"]) != (self.capacity, self.eviction):
            raise ValueError(
                f"buffer state has capacity={state['capacity']}, eviction={state['eviction']!r} but this buffer "
                f"has capacity={self.capacity}, eviction={self.eviction!r}; use the settings it was saved with"
            )
        self.items = list(state["items"])
        self.seen = state["seen"]
        self.generator.set_state(state["generator"])
