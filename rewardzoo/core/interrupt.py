"""Stopping a run cleanly: SIGINT (Ctrl-C) and SIGTERM (a scheduler's kill) end it at the end of the
current step, with a checkpoint, instead of in the middle of a write.

    with StopRequests() as stop:
        while training:
            step()
            if stop.requested:          # a signal arrived during the step
                save(); raise TrainingInterrupted(...)

A second SIGINT while the first is being honoured raises KeyboardInterrupt at once (the way out of
a step that hangs).  Outside the main thread, where Python cannot install signal handlers, the
context does nothing and signals act as usual.
"""

from __future__ import annotations

import signal
import threading

from rewardzoo.core.types import TrainingInterrupted

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class StopRequests:
    """A context that turns SIGINT / SIGTERM into a request (:attr:`requested`, :attr:`signal_name`)."""

    def __init__(self):
        self.signal_name: str | None = None
        self._previous: dict[int, object] = {}

    @property
    def requested(self) -> bool:
        """Whether a stop signal arrived since the context was entered."""
        return self.signal_name is not None

    def _handle(self, signum: int, frame) -> None:
        if self.requested and signum == signal.SIGINT:
            raise KeyboardInterrupt  # the second Ctrl-C: stop now
        self.signal_name = signal.Signals(signum).name

    def __enter__(self) -> StopRequests:
        if threading.current_thread() is threading.main_thread():
            self._previous = {s: signal.signal(s, self._handle) for s in SIGNALS}
        return self

    def __exit__(self, *exc) -> None:
        for s, handler in self._previous.items():
            signal.signal(s, handler)
        self._previous = {}


__all__ = ["StopRequests", "TrainingInterrupted"]
