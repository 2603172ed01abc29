"""The process state that decides which bits a computation gives: the random-number states (read,
restore, and keep across code that reseeds them) and the intra-op thread count.

Checkpoints save :func:`rng_state` per process and restore it on resume (so a resumed run draws what
the uninterrupted one would have drawn); :func:`kept_rng_state` restores the states after code that
reseeds the global generators behind the caller's back (an in-process vLLM engine does when it
starts); :func:`one_cpu_thread` fixes the thread count of a CPU computation whose result is cached
for callers with other counts (the SFT warm start).  Below every other core module: it imports
nothing from rewardzoo.
"""

from __future__ import annotations

import contextlib
import random

import numpy as np
import torch


def rng_state() -> dict:
    """The Python, NumPy, torch (and CUDA, where there is one) RNG states of this process."""
    return {
        "python": random.getstate(),
        "numpy": np.random.get_state(),
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None,
    }


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


@contextlib.contextmanager
def one_cpu_thread(device: torch.device | str):
    """On the CPU, run the body under exactly one intra-op thread and give the caller's count back on
    exit (on an exception too); on an accelerator change nothing.

    A float sum that torch splits over threads rounds by how many there are, so the same training on
    the CPU at 1 and at 2 threads differs in the last bits, and hundreds of optimiser steps amplify
    that (two 800-step SFT warm starts of one cache key, trained at 1 and 2 threads, had weights up
    to 0.28 apart).  One thread is the count every sweep run already has, and any caller can have it.
    """
    if torch.device(device).type != "cpu":
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)
