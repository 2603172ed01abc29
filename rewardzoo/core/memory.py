"""Peak tensor memory of a computation, on the CPU too (where torch keeps no allocator statistics).

    result, peak = peak_tensor_bytes(lambda: fused_token_logprobs(h, W, y))

counts the bytes of tensor storage that ``fn`` allocates and has alive at the same time, at their
highest, per device and summed — tensors that existed before the call (inputs, weights) are not
counted, their gradients are.  It uses torch's ``MemTracker`` (a dispatch-mode tracker of tensor
storages, ``torch.distributed._tools.mem_tracker``: a private torch API, present since torch 2.5),
so it measures what the tensors need, not what the allocator or the process holds; the fused
log-prob benchmark (``benchmarks/logprob_memory.py``) measures the process's resident set instead.
"""

from __future__ import annotations

from typing import Callable, TypeVar

T = TypeVar("T")


def peak_tensor_bytes(fn: Callable[[], T]) -> tuple[T, int]:
    """``fn()``'s result and the peak bytes of tensor storage it had alive at once (all devices)."""
    try:
        from torch.distributed._tools.mem_tracker import MemTracker
    except ImportError as err:  # a torch without torch.distributed, or older than 2.5
        raise ImportError("peak_tensor_bytes needs torch >= 2.5 built with torch.distributed "
                          "(torch.distributed._tools.mem_tracker)") from err
    tracker = MemTracker()
    with tracker:
        result = fn()
    peaks = tracker.get_tracker_snapshot("peak")
    return result, int(sum(device["Total"] for device in peaks.values()))
