"""RcRL served with the policy it judges: the trainer pushes its current LoRA adapters (``POST /policy``, a learn
token) before each batch, so the bonuses, which read the live policy, follow it; the served rewards then equal
the in-process reward bound to that policy, step after step and across a SIGKILL restart."""

from __future__ import annotations

import pytest
import torch

from rewardzoo.core.types import Rollouts
from rewardzoo.integrations.remote import post_score, push_policy
from rewardzoo.serve.auth import new_token
from rewardzoo.serve.service import build_served_reward, serve_config_for
from rewardzoo.zoo import build_task
from tests.helpers.serving import Served

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

RECIPE = "rcrl_rubric_writing"
OVERRIDES = [
    "sft.enabled=false",
    "model.lora.enabled=true",
    "reward.bonuses.exploration_weight=1.0",
    "reward.bonuses.usefulness_weight=1.0",
]
CFG = serve_config_for(RECIPE, OVERRIDES)
TASK = build_task(CFG.task)
P, G = 2, CFG.grpo.group_size  # prompts per batch; RcRL compares whole groups of the recipe's size (8)


def batch_body(b: int) -> dict:
    """Batch ``b``: P rubric-writing prompts × G completions (the demonstration, cut short, repeated, garbage)."""
    prompts, completions = [], []
    for e in TASK.train[b * P : (b + 1) * P]:
        words = e.demonstration.split()
        prompts += [e.prompt] * G
        completions += [" ".join(words[: max(1, len(words) - k)]) for k in range(G - 2)]
        completions += [e.demonstration + " " + e.demonstration, "zzz"]
    return {"prompts": prompts, "completions": completions}


def adapters_after(policy, step: int) -> dict[str, torch.Tensor]:
    """The adapters as a trainer would have moved them by ``step``: the starting LoRA weights plus seeded steps."""
    gen = torch.Generator().manual_seed(1000 + step)
    return {
        n: (p.detach() + 0.2 * torch.randn(p.shape, generator=gen)).clone()
        for n, p in policy.named_parameters()
        if p.requires_grad
    }


def in_process_rewards(bodies: list[dict], states: list[dict]) -> list[list[float]]:
    """The reward built as make_trainer builds it, its policy moved to ``states[k]`` before scoring batch k."""
    reward, policy = build_served_reward(CFG, TASK)
    examples = {e.prompt: e for e in TASK.train}
    own = dict(policy.named_parameters())
    rewards = []
    for k, (body, state) in enumerate(zip(bodies, states)):
        with torch.no_grad():
            for n, t in state.items():
                own[n].copy_(t)
        prompts, completions = body["prompts"], body["completions"]
        batch = Rollouts(
            prompts=prompts,
            completions=completions,
            answers=[TASK.parse(c) for c in completions],
            references=[examples[p].reference for p in prompts],
            group_ids=torch.arange(P).repeat_interleave(G),
            meta=[examples[p].meta for p in prompts],
            step=k,
        )
        out = reward.score(batch)
        reward.update(batch, out)
        rewards.append(out.rewards.tolist())
    return rewards


@pytest.mark.slow
def test_served_rcrl_follows_the_pushed_policy_and_equals_in_process(tmp_path):
    path = tmp_path / "tokens.txt"
    trainer, viewer = new_token(path, "trainer", "learn"), new_token(path, "viewer", "score")
    _, start_policy = build_served_reward(CFG, TASK)
    n = 3
    bodies = [batch_body(b) for b in range(n + 1)]
    states = [adapters_after(start_policy, k) for k in range(n + 1)]
    served = Served(tmp_path / "svc", RECIPE, OVERRIDES, ["--tokens", str(path)], token=trainer).start()
    try:
        with pytest.raises(RuntimeError, match="403"):
            push_policy(states[0], served.url, token=viewer)
        got = []
        for k in range(n):
            assert push_policy(states[k], served.url, token=trainer)["policy_version"] == k + 1
            got.append(post_score(bodies[k], served.url, token=trainer)["rewards"])
        served.kill()  # the pushed policy is on disk: a restart judges with it, not with the starting policy
        served.start()
        assert served.health()["policy_version"] == n
        push_policy(states[n], served.url, token=trainer)
        got.append(post_score(bodies[n], served.url, token=trainer)["rewards"])
    finally:
        served.stop()
    expected = in_process_rewards(bodies, states)
    for k in range(n + 1):
        assert got[k] == pytest.approx(expected[k], abs=1e-5), k
    frozen = in_process_rewards(bodies[:2], [{}, {}])  # the starting policy throughout: what a bound service gave
    assert got[1] != pytest.approx(frozen[1], abs=1e-3)  # the pushes moved the bonuses
