"""A zoo reward behind the OpenReward Standard (ORS): a task's examples as an ORS environment whose answers are
scored, and learned from, by a running ``rewardzoo serve`` (docs/serving.md, "The OpenReward Standard").

    from openreward.environments import Server
    from rewardzoo.integrations.ors import ors_environment
    from rewardzoo.zoo import build_task, load_config

    task = build_task(load_config("ral_multiplication").task)
    Server([ors_environment(task, "http://127.0.0.1:8000")]).run(host="127.0.0.1", port=8080)

and any ORS client trains on it: the ``openreward`` SDK's client (a self-hosted server is reached at
``$OPENREWARD_SESSION_URL=http://127.0.0.1:8080``),
or TRL's ``trl.experimental.openreward.OpenRewardSpec("http://127.0.0.1:8080", secrets=ors_secrets(T))``.

The environment, in ORS terms:

    splits        the task's ``train`` and ``eval`` (those it has)
    tasks         ``{"index": i, "prompt": <the example's prompt>}``: never its reference, which the service keeps
    prompt        the example's prompt, one text block
    submit_answer the one tool: the model's final reply, scored by the service as a row of that prompt (the
                  service parses it with the task's parser and finds the reference itself); its reward, its
                  components as metadata, ``finished=True``
    score_group   a GRPO group of candidates for one task, scored in one request as one group (what a
                  group-comparing reward, RcRL, needs); by default not learned from (``group_learn``), since
                  the same rollouts' answers already were

Who may train the judge.  The ORS server holds no credential of its own unless given ``token``: each ORS
client passes its rewardzoo token as the session secret ``rewardzoo_token`` (:func:`ors_secrets`; TRL:
``OpenRewardSpec(..., secrets=...)``; the SDK: ``env.session(..., secrets=...)``), so the service's scopes,
limits and audit log apply to each client by name. ORS itself has no authentication: listen on loopback, or
put the ORS server behind your own gateway.

Needs the ``ors`` extra (``pip install 'rewardzoo[ors]'``: the ``openreward`` SDK, tested with 0.1.167).
"""

from rewardzoo.core.types import TaskProtocol
from rewardzoo.integrations.remote import post_score, service_url

# No ``from __future__ import annotations`` here: the SDK reads the tool's argument model from its live annotation.

SECRET = "rewardzoo_token"
"""The session secret that carries an ORS client's rewardzoo token."""

SPLITS = ("train", "eval")


def ors_secrets(token: str, url: str | None = None) -> dict[str, tuple[str, list[str]]]:
    """The session secrets that carry ``token`` to the rewardzoo service at ``url`` (else ``$REWARDZOO_URL``):
    the SDK wants each secret with the domains it may be sent to (here the service's host)."""
    from urllib.parse import urlparse

    return {SECRET: (token, [urlparse(service_url(url)).hostname or ""])}


def ors_environment(
    task: TaskProtocol,
    url: str | None = None,
    *,
    token: str | None = None,
    ca_file: str | None = None,
    name: str = "rewardzoo",
    group_learn: bool = False,
) -> type:
    """An ORS ``Environment`` class serving ``task``'s examples, scored at the rewardzoo service ``url`` (else
    ``$REWARDZOO_URL``) with the session's ``rewardzoo_token`` secret, else ``token`` (else
    ``$REWARDZOO_TOKEN``). ``name`` is its ORS environment name; ``group_learn`` lets ``score_group``'s
    requests train the judge."""
    from openreward.environments import Environment, GroupScore, TextBlock, ToolOutput, tool
    from pydantic import BaseModel

    examples = {split: list(getattr(task, split, None) or []) for split in SPLITS}
    examples = {split: rows for split, rows in examples.items() if rows}

    class Answer(BaseModel):
        answer: str
        """The model's final reply, in the task's answer format."""

    class ZooEnvironment(Environment):
        """One session: one example of the task, answered once (module docstring of rewardzoo.integrations.ors)."""

        def __init__(self, task_spec: dict | None = None, secrets: dict | None = None):
            super().__init__(task_spec or {}, secrets or {})
            self.token = (secrets or {}).get(SECRET) or token
            self.prompt = str((task_spec or {}).get("prompt", ""))

        @classmethod
        def list_splits(cls) -> list[str]:
            return list(examples)

        @classmethod
        def list_tasks(cls, split: str) -> list[dict]:
            if split not in examples:
                raise ValueError(f"split {split!r} is not one of {list(examples)}")
            return [{"index": i, "prompt": e.prompt} for i, e in enumerate(examples[split])]

        def get_prompt(self) -> list:
            return [TextBlock(text=self.prompt)]

        def _score(self, completions: list[str], learn: bool | None) -> dict:
            body = {"prompts": [self.prompt] * len(completions), "completions": completions}
            if learn is not None:
                body["learn"] = learn
            return post_score(body, url, token=self.token, ca_file=ca_file)

        @tool(exclusive=True)
        async def submit_answer(self, params: Answer) -> ToolOutput:
            """Submit your final answer to the task; it ends the episode and is scored."""
            import asyncio

            got = await asyncio.to_thread(self._score, [params.answer], None)
            reward = got["rewards"][0]
            components = {k: v[0] for k, v in got["components"].items()}
            return ToolOutput(
                blocks=[TextBlock(text=f"reward {reward:.4f}")],
                metadata={"answer": got["answers"][0], "judge_step": got["batch"], **components},
                reward=reward,
                finished=True,
            )

        async def score_group(self, candidates) -> list:
            import asyncio

            texts = [_final_text(c.messages) for c in candidates]
            got = await asyncio.to_thread(self._score, texts, None if group_learn else False)
            return [
                GroupScore(reward=r, metadata={k: v[i] for k, v in got["components"].items()})
                for i, r in enumerate(got["rewards"])
            ]

    ZooEnvironment.__name__ = ZooEnvironment.__qualname__ = name
    return ZooEnvironment


def _final_text(messages) -> str:
    """The text of a transcript's last assistant message (its text blocks joined)."""
    for message in reversed(messages):
        if message.role == "assistant":
            return "".join(b.text for b in message.blocks if getattr(b, "type", "") == "text")
    raise ValueError("a group candidate has no assistant message: send each rollout's transcript")
