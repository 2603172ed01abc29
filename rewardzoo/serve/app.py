"""The HTTP face of ``rewardzoo serve`` (FastAPI, served by uvicorn): three routes and the request limits.

    POST /score      {"prompts": [...], "completions": [...], "references": [...], "group_ids": [...],
                      "meta": [{...}], "step": 3, "request_id": "..."}  (all but prompts/completions optional)
                  →  {"rewards": [...], "components": {"name": [...]}, "answers": [...], "metrics": {...},
                      "learned": {...}, "batch": 7, "batch_rows": 64}
    POST /openrlhf   OpenRLHF's remote reward model: {"query": [...], "prompts": [...], "labels": [...]}
                  →  {"rewards": [...], "scores": [...], "extra_logs": {"name": [...]}}
    GET  /health     the reward, batches done, warm-up, lost updates, the limits

Errors are an HTTP status and ``{"detail": "what to change"}``, decided before the judge sees a row:
413 a body over ``max_request_bytes`` or more than ``max_request_rows`` rows; 422 malformed JSON, wrong
types, lists of different lengths, a group of mixed prompts or of the wrong size (a group split across
requests); 503 (``Retry-After: 1``) when too many rows wait (back-pressure); 500 when the reward itself
failed on a batch — its state is then back at its newest checkpoint, and the service goes on.

OpenRLHF sends ``query`` = the prompt followed by the response, decoded with special tokens: the
completion is what follows the prompt, with trailing end-of-sequence strings (:data:`EOS_STRINGS`,
``--eos``) removed; a query that does not start with its prompt is refused (422). ``labels`` are the
references. OpenRLHF sends one sample per request, so its rows reach the judge merged by the batcher;
group-comparing rewards (RcRL) cannot be served this way and refuse such rows (a group of 1).
"""

from __future__ import annotations

import json
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict

from rewardzoo.serve.batcher import Batcher, Busy
from rewardzoo.serve.service import RewardService

EOS_STRINGS = ("</s>", "<|im_end|>", "<|endoftext|>", "<|eot_id|>", "<eos>", "<|end_of_text|>", "<end_of_turn>")
"""End-of-sequence strings removed from the end of an OpenRLHF completion (its queries keep special tokens)."""


class ScoreRequest(BaseModel):
    """The body of ``POST /score``: one entry per row in every list."""

    model_config = ConfigDict(extra="forbid")
    prompts: list[str]
    completions: list[str]
    references: list[str | None] | None = None
    group_ids: list[int] | None = None
    meta: list[dict[str, Any]] | None = None
    step: int | None = None
    request_id: str | None = None


class OpenRLHFRequest(BaseModel):
    """The body OpenRLHF's remote reward client sends (``--remote_rm_url``)."""

    query: list[str]
    prompts: list[str]
    labels: list[Any] | None = None


def completion_of(query: str, prompt: str, eos: tuple[str, ...]) -> str:
    """The response part of an OpenRLHF query (prompt + response, special tokens kept), trailing ``eos`` removed."""
    if not query.startswith(prompt):
        raise ValueError(
            f"an OpenRLHF query does not start with its prompt ({prompt[:60]!r}); send query = prompt + "
            f"response, as OpenRLHF's remote reward client does"
        )
    text = query[len(prompt) :]
    stripped = True
    while stripped:
        stripped = False
        for s in eos:
            if s and text.endswith(s):
                text, stripped = text[: -len(s)], True
    return text


class BodyLimit:
    """ASGI middleware: a request body over ``max_bytes`` (by its Content-Length, or as it streams) is
    answered 413 before the app reads it."""

    def __init__(self, app, max_bytes: int):
        self.app, self.max_bytes = app, max_bytes

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        length = dict(scope["headers"]).get(b"content-length")
        if length is not None and length.isdigit() and int(length) > self.max_bytes:
            return await self._too_large(send)
        body, more = b"", True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                return
            body += message.get("body", b"")
            more = message.get("more_body", False)
            if len(body) > self.max_bytes:
                return await self._too_large(send)
        sent = False

        async def replay():
            nonlocal sent
            if sent:
                return await receive()
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}

        return await self.app(scope, replay, send)

    async def _too_large(self, send) -> None:
        detail = json.dumps(
            {"detail": f"request body over {self.max_bytes} bytes (--max-request-bytes); send fewer rows per request"}
        ).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(detail)).encode())],
            }
        )
        await send({"type": "http.response.body", "body": detail})


def create_app(service: RewardService, eos: tuple[str, ...] = EOS_STRINGS) -> FastAPI:
    """The ASGI app serving ``service`` (its batcher starts and stops with the app)."""
    batcher = Batcher(service)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        batcher.start()
        yield
        await batcher.stop()

    app = FastAPI(title="rewardzoo serve", lifespan=lifespan)
    app.state.batcher = batcher
    app.add_middleware(BodyLimit, max_bytes=service.serve.max_request_bytes)

    @app.exception_handler(ValueError)
    async def bad_rows(request: Request, err: ValueError):
        status = 413 if "--max-request-rows" in str(err) else 422
        return JSONResponse({"detail": str(err)}, status_code=status)

    @app.exception_handler(Busy)
    async def busy(request: Request, err: Busy):
        return JSONResponse({"detail": str(err)}, status_code=503, headers={"Retry-After": "1"})

    @app.exception_handler(Exception)
    async def failed(request: Request, err: Exception):
        return JSONResponse(
            {
                "detail": f"the reward failed on this batch ({type(err).__name__}: {err}); it was not "
                f"learned from, and the reward is back at its newest checkpoint"
            },
            status_code=500,
        )

    @app.get("/health")
    async def health() -> dict:
        return {**service.health(), "rows_waiting": batcher.rows_waiting}

    @app.post("/score")
    async def score(body: ScoreRequest) -> dict:
        done = service.answered.get(body.request_id) if body.request_id is not None else None
        if done is not None:  # a retry of a request already answered (and learned from): answered again, not relearned
            return {**done, "replayed": True}
        rows = service.rows(body.prompts, body.completions, body.references, body.group_ids, body.meta)
        return await batcher.submit(rows, body.step, body.request_id)

    @app.post("/openrlhf")
    async def openrlhf(body: OpenRLHFRequest) -> dict:
        if len(body.prompts) != len(body.query) or (body.labels is not None and len(body.labels) != len(body.query)):
            raise ValueError(
                f"query has {len(body.query)} rows, prompts {len(body.prompts)}, labels "
                f"{len(body.labels or [])}; send one of each per row"
            )
        completions = [completion_of(q, p, eos) for q, p in zip(body.query, body.prompts)]
        labels = None if body.labels is None else [None if x is None else str(x) for x in body.labels]
        rows = service.rows(body.prompts, completions, labels)
        got = await batcher.submit(rows)
        return {"rewards": got["rewards"], "scores": got["rewards"], "extra_logs": got["components"]}

    return app
