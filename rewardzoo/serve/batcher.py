"""Many callers, one judge: concurrent requests merged into bounded batches, scored and learned from by
one worker thread, in arrival order.

    answer = await batcher.submit(rows, step)    # waits for its batch; Busy when too many rows wait

A batch starts when ``max_batch_rows`` rows wait or when the oldest waiting request has waited
``max_wait_ms``; it takes waiting requests first come, first served, while they fit in ``max_batch_rows``
(a request larger than that is a batch alone) and carry the same ``step`` (a request without one takes
the service's count of batches). Requests are never split, so their groups stay whole. While the worker
scores one batch the next gathers. Back-pressure: a request that would make more than ``max_queue_rows``
rows wait is refused at once (:class:`Busy`, HTTP 503 with ``Retry-After``) instead of queueing without
bound. A batch that fails fails each of its requests with the same error; the reward is back at its
newest checkpoint (:meth:`~rewardzoo.serve.service.RewardService.process`) and the worker goes on.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from rewardzoo.core.types import Rollouts
from rewardzoo.serve.service import Part, RewardService


class Busy(Exception):
    """Too many rows are waiting for the judge; the caller should retry after a moment."""


@dataclass
class _Pending:
    rows: Rollouts
    step: int | None
    part: Part
    learn: bool
    future: asyncio.Future
    arrived: float


class Batcher:
    """Merges requests into batches for ``service`` (see the module docstring); start it inside the event loop."""

    def __init__(self, service: RewardService):
        self.service = service
        self.cfg = service.serve
        self.waiting: list[_Pending] = []
        self.rows_waiting = 0
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="rewardzoo-judge")
        self._wake: asyncio.Event | None = None
        self._task: asyncio.Task | None = None

    def start(self) -> None:
        """Start the batching loop on the running event loop."""
        self._wake = asyncio.Event()
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        """Stop taking batches; the batch being scored finishes (and is checkpointed) first."""
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
        await asyncio.get_running_loop().run_in_executor(None, self.executor.shutdown)

    async def submit(
        self, rows: Rollouts, step: int | None = None, part: Part | None = None, learn: bool = True
    ) -> dict:
        """Queue one request's rows and wait for its share of the batch they join
        (:meth:`~rewardzoo.serve.service.Processed.share`); ``learn=False`` rows join only batches that are
        scored, never learned from."""
        n = len(rows)
        if self.rows_waiting + n > self.cfg.max_queue_rows:
            raise Busy(
                f"{self.rows_waiting} rows are waiting for the judge (at most {self.cfg.max_queue_rows}, "
                f"--max-queue-rows); retry in a moment"
            )
        loop = asyncio.get_running_loop()
        part = part or Part(None, n)
        pending = _Pending(rows, step, part, learn, loop.create_future(), loop.time())
        self.waiting.append(pending)
        self.rows_waiting += n
        self._wake.set()
        return await asyncio.shield(pending.future)

    def _take(self) -> list[_Pending]:
        """The next batch's requests: first come, first served, while they fit and share a step and whether
        they are learned from."""
        taken, rows = [], 0
        while self.waiting:
            head = self.waiting[0]
            if taken and (
                rows + len(head.rows) > self.cfg.max_batch_rows
                or head.step != taken[0].step
                or head.learn != taken[0].learn
            ):
                break
            taken.append(self.waiting.pop(0))
            rows += len(head.rows)
        self.rows_waiting -= rows
        return taken

    def _process(self, taken: list[_Pending]):
        """The worker's part: merge the requests' rows into one batch and process it."""
        batch = self.service.merge([p.rows for p in taken], taken[0].step)
        return self.service.process(batch, [p.part for p in taken], learn=taken[0].learn)

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            while not self.waiting:
                self._wake.clear()
                await self._wake.wait()
            deadline = self.waiting[0].arrived + self.cfg.max_wait_ms / 1000
            while self.rows_waiting < self.cfg.max_batch_rows and loop.time() < deadline:
                self._wake.clear()
                try:
                    await asyncio.wait_for(self._wake.wait(), deadline - loop.time())
                except asyncio.TimeoutError:
                    break
            taken = self._take()
            try:
                processed = await loop.run_in_executor(self.executor, self._process, taken)
            except Exception as err:  # noqa: BLE001  (the reward is back at its checkpoint; its requests hear why)
                for p in taken:
                    if not p.future.done():
                        p.future.set_exception(err)
                continue
            start = 0
            for p in taken:
                if not p.future.done():
                    p.future.set_result(processed.share(start, start + len(p.rows)))
                start += len(p.rows)
