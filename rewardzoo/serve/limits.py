"""Per-client limits of ``rewardzoo serve``: a request rate and a share of the judge's updates, each answered
429 with ``Retry-After`` when exceeded (docs/serving.md, "Limits against poisoning").

Rate.  A token bucket per client: ``max_requests_per_s`` tokens a second, holding at most
max(1, ``max_requests_per_s``); each request takes one. An empty bucket refuses the request, and
``Retry-After`` is the time until the next token (rounded up to whole seconds, as HTTP wants).

Share of the updates.  Over the last ``share_window_s`` seconds, a client may start a request the judge
learns from while its rows learned so far are at most ``max_update_share`` of

    max(all clients' rows learned in the window,  share_min_rows)

so one client cannot dominate what the judge learns (it overshoots by at most its one request), and a
client alone learns about ``max_update_share · share_min_rows`` rows per window (with ``max_update_share=1``,
the default, the cap is off). ``Retry-After`` is the time until enough of the client's oldest rows leave the
window. The counts live in memory: a restarted service starts with an empty window.
"""

from __future__ import annotations

import math
import time
from collections import deque


class Limited(Exception):
    """A client over one of its limits; ``retry_after`` seconds until it may try again."""

    def __init__(self, message: str, retry_after: float):
        super().__init__(message)
        self.retry_after = max(1, math.ceil(retry_after))


class Limits:
    """The rate buckets and the update window of every client (one event loop calls it: no locking)."""

    def __init__(
        self,
        max_requests_per_s: float = 0.0,
        max_update_share: float = 1.0,
        share_window_s: float = 60.0,
        share_min_rows: int = 256,
        clock=time.monotonic,
    ):
        self.rate, self.share, self.window_s, self.min_rows = (
            max_requests_per_s,
            max_update_share,
            share_window_s,
            share_min_rows,
        )
        self.clock = clock
        self.buckets: dict[str, tuple[float, float]] = {}  # client → (tokens, when)
        self.learned: deque[tuple[float, str, int]] = deque()  # (when, client, rows), oldest first

    def admit(self, client: str) -> None:
        """Take one request from ``client``'s bucket, or raise :class:`Limited`."""
        if self.rate <= 0:
            return
        now, capacity = self.clock(), max(1.0, self.rate)
        tokens, when = self.buckets.get(client, (capacity, now))
        tokens = min(capacity, tokens + (now - when) * self.rate)
        if tokens < 1:
            self.buckets[client] = (tokens, now)
            raise Limited(
                f"client {client!r} is over {self.rate:g} requests/s (--max-requests-per-s); slow down",
                (1 - tokens) / self.rate,
            )
        self.buckets[client] = (tokens - 1, now)

    def admit_learning(self, client: str, rows: int) -> None:
        """Count ``rows`` as ``client``'s learned rows, or raise :class:`Limited` when its rows so far are over
        its share of the window's updates (module docstring)."""
        if self.share >= 1:
            return
        now = self.clock()
        while self.learned and self.learned[0][0] <= now - self.window_s:
            self.learned.popleft()
        total = sum(n for _, _, n in self.learned)
        mine = [(when, n) for when, who, n in self.learned if who == client]
        excess = sum(n for _, n in mine) - self.share * max(total, self.min_rows)
        if excess > 0:
            freed, wait = 0, self.window_s
            for when, n in mine:  # the client's oldest rows leave the window first
                freed += n
                if freed >= excess:
                    wait = when + self.window_s - now
                    break
            raise Limited(
                f"client {client!r} is over its share of the judge's updates ({self.share:g} of the rows learned "
                f"in {self.window_s:g} s, --max-update-share); send learn=false to score only, or retry later",
                wait,
            )
        self.learned.append((now, client, rows))
