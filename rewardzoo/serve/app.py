"""The HTTP face of ``rewardzoo serve`` (FastAPI, served by uvicorn): four routes, who may call them, and the
request limits.

    POST /score      {"prompts": [...], "completions": [...], "references": [...], "group_ids": [...],
                      "meta": [{...}], "step": 3, "request_id": "...", "learn": true}
                     (all but prompts/completions optional)
                  →  {"rewards": [...], "components": {"name": [...]}, "answers": [...], "metrics": {...},
                      "learned": {...}, "batch": 7, "batch_rows": 64}
    POST /openrlhf   OpenRLHF's remote reward model: {"query": [...], "prompts": [...], "labels": [...]}
                  →  {"rewards": [...], "scores": [...], "extra_logs": {"name": [...]}}
    POST /policy     {"state": "<base64 of torch.save({name: tensor})>"}: the trainer's current trainable
                     parameters (LoRA adapters), for rewards that read the policy  →  {"policy_version": 3}
    GET  /health     {"status": "ok"}; with a valid token (or without --tokens): the reward, batches done,
                     warm-up, lost updates, the limits

Who learns.  With ``--tokens`` every request carries ``Authorization: Bearer <token>`` (:mod:`.auth`); its
client's scope and the request's ``learn`` (true, false, or absent: learn when the scope allows) decide
whether the judge learns from its rows. Rows whose references are the client's own (not the service's)
train the judge only with a ``learn+references`` token. Without ``--tokens`` (loopback only) every caller
is :data:`~rewardzoo.serve.auth.ANONYMOUS`, scope ``learn``.

Errors are an HTTP status and ``{"detail": "what to change"}``, decided before the judge sees a row:
401 no token or an unknown one; 403 a request asking to learn that its token or the service
(``--no-learn``) does not allow, or client references from a token that may not teach them; 429
(``Retry-After``) a client over its request rate or its share of the updates (:mod:`.limits`); 408 a body
slower than ``body_timeout_s``; 413 a body over ``max_request_bytes`` or more than ``max_request_rows``
rows; 422 malformed JSON, wrong types, lists of different lengths, a group of mixed prompts or of the
wrong size (a group split across requests), a row the service cannot place (not a task example, no
reference); 503 (``Retry-After: 1``) when too many rows wait (back-pressure); 500 when the reward itself
failed on a batch — its state is then back at its newest checkpoint, and the service goes on. Every
401/403/429 is a ``refused`` line of the audit log (:mod:`.audit`).

OpenRLHF sends ``query`` = the prompt followed by the response, decoded with special tokens: the
completion is what follows the prompt, with trailing end-of-sequence strings (:data:`EOS_STRINGS`,
``--eos``) removed; a query that does not start with its prompt is refused (422). ``labels`` are the
references. OpenRLHF sends one sample per request, so its rows reach the judge merged by the batcher;
group-comparing rewards (RcRL) cannot be served this way and refuse such rows (a group of 1).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import io
import json
import pickle
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict

from rewardzoo.serve.auth import ANONYMOUS, Client, Tokens, presented_token
from rewardzoo.serve.batcher import Batcher, Busy
from rewardzoo.serve.limits import Limited, Limits
from rewardzoo.serve.service import Part, RewardService, answer_key

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
    learn: bool | None = None


class Refused(Exception):
    """A request its client may not make (401, 403, 429): the status, the one-line reason, the headers."""

    def __init__(self, status: int, detail: str, client: Client | None = None, headers: dict | None = None):
        super().__init__(detail)
        self.status, self.detail, self.client, self.headers = status, detail, client, headers or {}


class PolicyRequest(BaseModel):
    """The body of ``POST /policy``: a ``torch.save`` of the policy's trainable parameters, base64."""

    model_config = ConfigDict(extra="forbid")
    state: str


def policy_state(body: PolicyRequest) -> dict:
    """The pushed tensors (``torch.load(weights_only=True)``: tensors only, never code); a ValueError otherwise."""
    import torch

    try:
        state = torch.load(io.BytesIO(base64.b64decode(body.state, validate=True)), weights_only=True)
    except (binascii.Error, pickle.UnpicklingError, RuntimeError, EOFError, ValueError) as err:
        raise ValueError(
            f"state is not a base64 torch.save of tensors ({type(err).__name__}); send "
            f"rewardzoo.integrations.remote.push_policy's body"
        ) from None
    if not isinstance(state, dict) or not state:
        raise ValueError("state must hold a dict of tensors by parameter name")
    return state


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
    answered 413, and one still arriving after ``timeout_s`` 408, before the app reads it."""

    def __init__(self, app, max_bytes: int, timeout_s: float):
        self.app, self.max_bytes, self.timeout_s = app, max_bytes, timeout_s

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        length = dict(scope["headers"]).get(b"content-length")
        too_large = f"request body over {self.max_bytes} bytes (--max-request-bytes); send fewer rows per request"
        if length is not None and length.isdigit() and int(length) > self.max_bytes:
            return await self._refuse(send, 413, too_large)
        body, more = b"", True
        deadline = asyncio.get_running_loop().time() + self.timeout_s
        while more:
            try:
                message = await asyncio.wait_for(receive(), deadline - asyncio.get_running_loop().time())
            except asyncio.TimeoutError:
                return await self._refuse(
                    send, 408, f"the request body took over {self.timeout_s:g} s to arrive (--body-timeout-s)"
                )
            if message["type"] != "http.request":
                return
            body += message.get("body", b"")
            more = message.get("more_body", False)
            if len(body) > self.max_bytes:
                return await self._refuse(send, 413, too_large)
        sent = False

        async def replay():
            nonlocal sent
            if sent:
                return await receive()
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}

        return await self.app(scope, replay, send)

    async def _refuse(self, send, status: int, reason: str) -> None:
        detail = json.dumps({"detail": reason}).encode()
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(detail)).encode())],
            }
        )
        await send({"type": "http.response.body", "body": detail})


def create_app(service: RewardService, eos: tuple[str, ...] = EOS_STRINGS, tokens: Tokens | None = None) -> FastAPI:
    """The ASGI app serving ``service`` (its batcher starts and stops with the app); with ``tokens`` every
    request must carry one of their tokens."""
    batcher = Batcher(service)
    cfg = service.serve
    limits = Limits(cfg.max_requests_per_s, cfg.max_update_share, cfg.share_window_s, cfg.share_min_rows)

    def caller(request: Request) -> Client:
        """The request's client, its rate taken (401 for no or an unknown token, 429 over its rate)."""
        if tokens is None:
            client = ANONYMOUS
        else:
            token = presented_token(request.headers.get("authorization"))
            client = tokens.client(token)
            if client is None:
                raise Refused(
                    401,
                    "unknown token: send Authorization: Bearer <token> with a token of this service's --tokens file"
                    if token
                    else "no token: send Authorization: Bearer <token> (this service was started with --tokens)",
                )
        try:
            limits.admit(client.name)
        except Limited as err:
            raise Refused(429, str(err), client, {"Retry-After": str(err.retry_after)}) from None
        return client

    def learns(client: Client, asked: bool | None, n: int, own: list) -> bool:
        """Whether the judge learns from a request's ``n`` rows (403 when it asks for what it may not have,
        429 over its share); ``own`` are the rows whose references are the client's."""
        if asked is False:
            return False
        if not client.may_learn or not cfg.learn:
            if asked:
                why = (
                    f"client {client.name!r} has a score token: it may not train the judge"
                    if not client.may_learn
                    else "this service serves a frozen judge (--no-learn)"
                )
                raise Refused(403, f"{why}; send learn=false to be scored only", client)
            return False
        if own and not client.may_teach_references:
            rows = [i for i, _, _ in own]
            raise Refused(
                403,
                f"rows {rows[:8]} carry references that are not the service's own, and client {client.name!r} "
                f"may not train the judge on its references (scope {client.scope}); send learn=false to be scored "
                f"on them, or use a learn+references token",
                client,
            )
        try:
            limits.admit_learning(client.name, n)
        except Limited as err:
            raise Refused(429, str(err), client, {"Retry-After": str(err.retry_after)}) from None
        return True

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        batcher.start()
        yield
        await batcher.stop()

    app = FastAPI(title="rewardzoo serve", lifespan=lifespan)
    app.state.batcher = batcher
    app.add_middleware(BodyLimit, max_bytes=cfg.max_request_bytes, timeout_s=cfg.body_timeout_s)

    @app.exception_handler(Refused)
    async def refused(request: Request, err: Refused):
        service.audit.write(
            {
                "client": err.client.name if err.client else None,
                "event": "refused",
                "status": err.status,
                "path": request.url.path,
                "reason": err.detail,
            }
        )
        return JSONResponse({"detail": err.detail}, status_code=err.status, headers=err.headers)

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
    async def health(request: Request) -> dict:
        if tokens is not None and tokens.client(presented_token(request.headers.get("authorization"))) is None:
            return {"status": "ok"}  # alive; the rest only to a client of this service
        return {**service.health(), "rows_waiting": batcher.rows_waiting}

    @app.post("/score")
    async def score(body: ScoreRequest, request: Request) -> dict:
        client = caller(request)
        key = answer_key(client.name, body.request_id) if body.request_id is not None else None
        done = service.answered.get(key) if key is not None else None
        if done is not None:  # a retry of a request already answered (and learned from): answered again, not relearned
            return {**done, "replayed": True}
        rows = service.rows(body.prompts, body.completions, body.references, body.group_ids, body.meta)
        own = service.client_references(body.prompts, body.references)
        learn = learns(client, body.learn, len(rows), own)
        return await batcher.submit(rows, body.step, Part(body.request_id, len(rows), client.name, own), learn)

    @app.post("/policy")
    async def policy(body: PolicyRequest, request: Request) -> dict:
        client = caller(request)
        if not client.may_learn or not cfg.learn:
            raise Refused(
                403,
                f"client {client.name!r} may not move the served policy (a learn token, a learning service)",
                client,
            )
        state = policy_state(body)
        loop = asyncio.get_running_loop()  # on the judge's worker: never while a batch is being scored
        version = await loop.run_in_executor(batcher.executor, service.push_policy, state, client.name)
        return {"policy_version": version, "tensors": len(state)}

    @app.post("/openrlhf")
    async def openrlhf(body: OpenRLHFRequest, request: Request) -> dict:
        client = caller(request)
        if len(body.prompts) != len(body.query) or (body.labels is not None and len(body.labels) != len(body.query)):
            raise ValueError(
                f"query has {len(body.query)} rows, prompts {len(body.prompts)}, labels "
                f"{len(body.labels or [])}; send one of each per row"
            )
        completions = [completion_of(q, p, eos) for q, p in zip(body.query, body.prompts)]
        labels = None if body.labels is None else [None if x is None else str(x) for x in body.labels]
        rows = service.rows(body.prompts, completions, labels)
        own = service.client_references(body.prompts, labels)
        learn = learns(client, None, len(rows), own)
        got = await batcher.submit(rows, None, Part(None, len(rows), client.name, own), learn)
        return {"rewards": got["rewards"], "scores": got["rewards"], "extra_logs": got["components"]}

    return app
