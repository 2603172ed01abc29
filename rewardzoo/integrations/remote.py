"""The trainers' side of ``rewardzoo serve``: one small function per trainer, calling the service over HTTP
(docs/serving.md has the launch lines).

    TRL       GRPOTrainer(reward_funcs=[RemoteReward("http://127.0.0.1:8000")])        an async reward function
    veRL      custom_reward_function.path=<this file> custom_reward_function.name=compute_score
              (per row), or name=compute_score_batch with reward_model.reward_manager=batch (whole groups)
    OpenRLHF  --remote_rm_url http://127.0.0.1:8000/openrlhf                              no code at all

The service's address is the ``url`` argument, else ``$REWARDZOO_URL``, else http://127.0.0.1:8000; its
token (a service started with ``--tokens``) the ``token`` argument, else ``$REWARDZOO_TOKEN``, sent as
``Authorization: Bearer``; an ``https`` service's certificate is checked against the system's authorities,
or against ``ca_file`` / ``$REWARDZOO_CA_FILE`` (a self-signed one). Verification is never skipped here.
This file needs nothing but the standard library (veRL loads it by path), except :class:`RemoteReward`,
which reads TRL's prompt and completion forms with :mod:`rewardzoo.integrations.trl`.

Exactly once.  Every call sends a fresh ``request_id`` and retries with the same id while the service is
busy (503), throttles this client (429, after its ``Retry-After``) or is unreachable (restarting after a
kill), for up to ``retry_s`` seconds. The service remembers
the ids of the requests it answered, in its checkpoint: a retried request it had already scored and
learned from is answered from that record and not learned from twice; one it had not checkpointed is
scored by the restored judge — so each batch's update happens once.
"""

from __future__ import annotations

import asyncio
import json
import os
import ssl
import time
import urllib.error
import urllib.request
import uuid

DEFAULT_URL = "http://127.0.0.1:8000"


def service_url(url: str | None = None) -> str:
    """``url``, else ``$REWARDZOO_URL``, else :data:`DEFAULT_URL` (no trailing slash)."""
    return (url or os.environ.get("REWARDZOO_URL") or DEFAULT_URL).rstrip("/")


def request_headers(token: str | None = None) -> dict:
    """The JSON content type, and ``Authorization: Bearer`` with ``token``, else ``$REWARDZOO_TOKEN``, if any."""
    token = token or os.environ.get("REWARDZOO_TOKEN")
    return {"content-type": "application/json", **({"authorization": f"Bearer {token}"} if token else {})}


def tls_context(ca_file: str | None = None) -> ssl.SSLContext | None:
    """A verifying TLS context trusting ``ca_file``, else ``$REWARDZOO_CA_FILE``; None: the system's defaults."""
    ca_file = ca_file or os.environ.get("REWARDZOO_CA_FILE")
    return ssl.create_default_context(cafile=ca_file) if ca_file else None


def post_score(body: dict, url: str | None = None, **options) -> dict:
    """``POST /score`` with ``body`` (a ``request_id`` is added when absent) and the service's answer;
    ``options`` (``token``, ``ca_file``, ``timeout``, ``retry_s``) as for :func:`post_json`."""
    return post_json("/score", {"request_id": uuid.uuid4().hex, **body}, url, **options)


def push_policy(policy, url: str | None = None, **options) -> dict:
    """``POST /policy``: the policy's current trainable parameters (with LoRA, its adapters), so that a served
    reward reading the policy (RcRL's bonuses and self-judge) follows the policy being trained; ``policy`` is
    a module or a dict of tensors by parameter name. Needs a ``learn`` token; the answer is the service's
    ``policy_version``; ``options`` as for :func:`post_json`."""
    import base64
    import io

    import torch

    state = policy if isinstance(policy, dict) else {n: p for n, p in policy.named_parameters() if p.requires_grad}
    buffer = io.BytesIO()
    torch.save({n: t.detach().cpu() for n, t in state.items()}, buffer)
    return post_json("/policy", {"state": base64.b64encode(buffer.getvalue()).decode()}, url, **options)


def post_json(
    path: str,
    body: dict,
    url: str | None = None,
    *,
    token: str | None = None,
    ca_file: str | None = None,
    timeout: float = 600.0,
    retry_s: float = 120.0,
) -> dict:
    """POST ``body`` to the service's ``path``, retried while it is busy (503), throttling this client (429,
    after its Retry-After) or unreachable, for ``retry_s`` seconds; a RuntimeError with the service's message
    otherwise (a certificate that fails verification at once)."""
    base = service_url(url)
    data, headers, context = json.dumps(body).encode(), request_headers(token), tls_context(ca_file)
    deadline, delay = time.monotonic() + retry_s, 0.1
    while True:
        request = urllib.request.Request(f"{base}{path}", data=data, headers=headers)
        wait = delay
        try:
            with urllib.request.urlopen(request, timeout=timeout, context=context) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as err:
            detail = err.read().decode(errors="replace")
            if err.code not in (429, 503) or time.monotonic() > deadline:
                raise RuntimeError(f"rewardzoo serve at {base} answered {err.code}: {detail}") from None
            wait = max(delay, float(err.headers.get("Retry-After") or 0))
        except urllib.error.URLError as err:
            if isinstance(err.reason, ssl.SSLError):
                raise RuntimeError(
                    f"rewardzoo serve at {base}: TLS failed ({err.reason}); pass ca_file (or $REWARDZOO_CA_FILE) "
                    f"with the service's certificate"
                ) from err
            if time.monotonic() > deadline:
                raise RuntimeError(f"rewardzoo serve at {base} is unreachable ({err}); {START_IT}") from err
        except (ConnectionError, TimeoutError) as err:
            if time.monotonic() > deadline:
                raise RuntimeError(f"rewardzoo serve at {base} is unreachable ({err}); {START_IT}") from err
        time.sleep(min(wait, max(deadline - time.monotonic(), 0.0) + 0.01))
        delay = min(2 * delay, 2.0)


START_IT = "start it with `rewardzoo serve RECIPE --port PORT` and pass its URL"


# ------------------------------------------------------------------ TRL
class RemoteReward:
    """A rewardzoo service as a TRL ``GRPOTrainer`` reward function, async (TRL awaits it on its own event
    loop while it computes its other rewards). Rows are read as :func:`rewardzoo.integrations.trl.as_reward_func`
    reads them: prompt and completion texts, ``reference_column`` as references, consecutive rows of one
    prompt as a group (or blocks of ``num_generations``, checked); the service parses the answers. Each
    component's batch mean goes to TRL's ``log_metric`` as ``<name>/<component>``."""

    def __init__(
        self,
        url: str | None = None,
        *,
        reference_column: str | None = "reference",
        num_generations: int | None = None,
        name: str = "rewardzoo",
        token: str | None = None,
        ca_file: str | None = None,
        timeout: float = 600.0,
    ):
        self.url, self.reference_column, self.num_generations = url, reference_column, num_generations
        self.token, self.ca_file, self.timeout = token, ca_file, timeout
        self.__name__ = name

    def body(self, prompts: list, completions: list, columns: dict) -> dict:
        """The ``/score`` request of one TRL call."""
        from rewardzoo.integrations.trl import (
            completion_text,
            group_ids_of,
            prompt_text,
        )

        texts = [prompt_text(p) for p in prompts]
        body = {
            "prompts": texts,
            "completions": [completion_text(c) for c in completions],
            "group_ids": group_ids_of(texts, self.num_generations).tolist(),
        }
        if self.reference_column is not None and self.reference_column in columns:
            body["references"] = [None if r is None else str(r) for r in columns[self.reference_column]]
        state = columns.get("trainer_state")
        if state is not None:
            body["step"] = int(state.global_step)
        return body

    async def __call__(self, prompts: list, completions: list, **columns) -> list[float]:
        """Score TRL's rows at the service (which learns from them); one float per row."""
        body = self.body(prompts, completions, columns)
        got = await asyncio.to_thread(
            post_score, body, self.url, token=self.token, ca_file=self.ca_file, timeout=self.timeout
        )
        log_metric = columns.get("log_metric")
        if log_metric is not None:
            for key, values in got["components"].items():
                log_metric(f"{self.__name__}/{key}", sum(values) / max(len(values), 1))
        return got["rewards"]


# ------------------------------------------------------------------ veRL
def prompt_of(extra_info: dict | None, prompt_key: str) -> str:
    """The prompt text veRL passes in ``extra_info[prompt_key]`` (a string, or chat messages: the last user
    message's content); a ValueError saying how to add it otherwise."""
    value = (extra_info or {}).get(prompt_key)
    if isinstance(value, (list, tuple)) and value and isinstance(value[-1], dict):
        value = [m for m in value if m.get("role") == "user"][-1]["content"]
    if not isinstance(value, str):
        raise ValueError(  # noqa: TRY004  (a missing key, said the same way)
            f"veRL gave no prompt text in extra_info[{prompt_key!r}] (it passes compute_score no prompt); "
            f"add the prompt to each row's extra_info when you make the parquet files, or set "
            f"custom_reward_function.reward_kwargs.prompt_key to the key that holds it"
        )
    return value


def compute_score(
    data_source,
    solution_str: str,
    ground_truth,
    extra_info: dict | None = None,
    *,
    url: str | None = None,
    token: str | None = None,
    prompt_key: str = "prompt",
    **_,
) -> dict:
    """veRL's ``custom_reward_function`` (one row per call, the naive reward manager): the service's reward
    for ``solution_str``, as ``{"score": r, <component>: value, ...}`` (veRL logs the extra keys). Groups
    are single rows here: a group-comparing reward (RcRL) needs :func:`compute_score_batch`."""
    body = {
        "prompts": [prompt_of(extra_info, prompt_key)],
        "completions": [solution_str],
        "references": [None if ground_truth is None else str(ground_truth)],
    }
    got = post_score(body, url, token=token)
    return {"score": got["rewards"][0], **{k: v[0] for k, v in got["components"].items()}}


def compute_score_batch(
    data_sources,
    solution_strs,
    ground_truths,
    extra_infos,
    *,
    url: str | None = None,
    token: str | None = None,
    prompt_key: str = "prompt",
    **_,
) -> list[dict]:
    """veRL's batched ``custom_reward_function`` (``reward_model.reward_manager=batch``): the whole batch in
    one request, consecutive rows of one prompt as a group (veRL repeats each prompt's rollouts together)."""
    body = {
        "prompts": [prompt_of(e, prompt_key) for e in extra_infos],
        "completions": list(solution_strs),
        "references": [None if g is None else str(g) for g in ground_truths],
    }
    got = post_score(body, url, token=token)
    parts = got["components"]
    return [{"score": r, **{k: v[i] for k, v in parts.items()}} for i, r in enumerate(got["rewards"])]
