"""Peak tensor memory of a computation, on the CPU too (where torch keeps no allocator statistics),
and handing freed heap memory back to the operating system.

    result, peak = peak_tensor_bytes(lambda: fused_token_logprobs(h, W, y))

counts the bytes of tensor storage that ``fn`` allocates and has alive at the same time, at their
highest, per device and summed — tensors that existed before the call (inputs, weights) are not
counted, their gradients are.  It uses torch's ``MemTracker`` (a dispatch-mode tracker of tensor
storages, ``torch.distributed._tools.mem_tracker``: a private torch API, present since torch 2.5),
so it measures what the tensors need, not what the allocator or the process holds; the fused
log-prob benchmark (``benchmarks/logprob_memory.py``) measures the process's resident set instead.
"""

from __future__ import annotations

import ctypes
import functools
import sys
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def peak_tensor_bytes(fn: Callable[[], T]) -> tuple[T, int]:
    """``fn()``'s result and the peak bytes of tensor storage it had alive at once (all devices)."""
    try:
        from torch.distributed._tools.mem_tracker import MemTracker
    except ImportError as err:  # a torch without torch.distributed, or older than 2.5
        raise ImportError(
            "peak_tensor_bytes needs torch >= 2.5 built with torch.distributed (torch.distributed._tools.mem_tracker)"
        ) from err
    tracker = MemTracker()
    with tracker:
        result = fn()
    peaks = tracker.get_tracker_snapshot("peak")
    return result, int(sum(device["Total"] for device in peaks.values()))


@functools.cache
def _libc():
    """The C library, or None off Linux (macOS, Windows)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None)
    except OSError:
        return None


M_MMAP_THRESHOLD = -3
"""glibc's ``mallopt`` parameter number for the mmap threshold (malloc.h)."""


def map_large_blocks(threshold: int = 1 << 20) -> bool:
    """Serve every allocation of ``threshold`` bytes or more (1 MiB) with its own mmap, so that freeing
    it returns its pages to the OS at once (glibc ``mallopt(M_MMAP_THRESHOLD)``, which also stops glibc
    from raising the threshold as large blocks are freed); False where there is no such call.

    Process-wide and for the rest of the process. Without it, freed tensors of 1–32 MiB stay in the
    heap as free pages, and the next phase's peak stacks on them: at S2 of benchmarks/grpo_vs_trl.py
    (a 152k vocabulary) the peak resident set fell from 1.39 to 1.24 GiB in a 3-step probe. The price
    is a page fault per page of every such block when it is allocated again."""
    libc = _libc()
    if libc is None or not hasattr(libc, "mallopt"):
        return False
    return bool(libc.mallopt(M_MMAP_THRESHOLD, int(threshold)))


def _malloc_trim():
    """glibc's ``malloc_trim``, or None where the C library has none (macOS, musl, Windows)."""
    return getattr(_libc(), "malloc_trim", None)


def release_freed_memory() -> bool:
    """Return the C heap's free pages to the operating system (glibc ``malloc_trim(0)``); False
    where there is no such call.

    On the CPU torch frees a tensor's storage to the C allocator. Once a large block has been freed,
    glibc raises its mmap threshold (up to 32 MiB), so later blocks of that size come from the heap,
    and when they are freed glibc keeps the pages for reuse. After a step's large temporaries (a
    decode step's logits of 64 rows at a 152k vocabulary are 37 MiB) the resident set then stays
    hundreds of MiB above the live tensors. With ``grpo.release_heap`` the trainer calls this on
    the CPU after each rollout, after each micro-batch's forward, before the optimiser step and after
    the policy step. The call costs milliseconds (~1–100 ms); nothing alive moves, but the next
    phase faults the released pages in again.
    """
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True


AUTO_RELEASE_VOCAB = 32_768
"""Vocabulary size from which ``grpo.release_heap: null`` releases the heap: a [64 × vocabulary] float32
logits buffer is then 8 MiB or more, the blocks glibc would keep after a decode step or a log-prob chunk."""


def releases_heap(setting: bool | None, device_type: str, vocab_size: int) -> bool:
    """Whether the trainer releases freed heap memory (``grpo.release_heap``): never off the CPU; as
    ``setting`` says when it is a bool; when None, from :data:`AUTO_RELEASE_VOCAB` vocabulary entries."""
    if device_type != "cpu":
        return False
    return vocab_size >= AUTO_RELEASE_VOCAB if setting is None else setting
