"""The random-number states of a process: read, restore, and keep across code that reseeds them.

Checkpoints save :func:`rng_state` per process and restore it on resume (so a resumed run draws what
the uninterrupted one would have drawn); :func:`kept_rng_state` restores the states after code that
reseeds the global generators behind the caller's back (an in-process vLLM engine does when it
starts).  Below every other core module: it imports nothing from rewardzoo.
"""

from __future__ import annotations

import contextlib
import random

import numpy as np
import torch


def rng_state() -> dict:
    """The Python, NumPy, torch (and CUDA, where there is one) RNG states of this process."""
    return {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state(),
            "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None}


def set_rng_state(state: dict) -> None:
    """Restore what :func:`rng_state` returned."""
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if state.get("cuda") is not None and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


@contextlib.contextmanager
def kept_rng_state():
    """Restore this process's RNG states (:func:`rng_state`) on exit, whatever the body reseeded."""
    state = rng_state()
    try:
        yield
    finally:
        set_rng_state(state)
