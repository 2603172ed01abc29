"""``rewardzoo serve`` through real HTTP on 127.0.0.1: the same rewards and judge weights as in-process, a
SIGKILL restart that resumes exactly, and clear refusals of bad input that never reach the judge."""

from __future__ import annotations

import concurrent.futures
import json
import sys

import pytest
import torch

from rewardzoo.core.checkpoint import checkpoints
from rewardzoo.core.types import Rollouts
from rewardzoo.integrations.remote import post_score
from rewardzoo.serve.service import RewardService, serve_config_for
from rewardzoo.zoo import RewardContext, build_reward, build_task
from tests.helpers.serving import OVERRIDES, RECIPE, Served, post, serving

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

CFG = serve_config_for(RECIPE, OVERRIDES)
TASK = build_task(CFG.task)
P, G = 4, 4  # prompts per batch, completions per prompt


def batch_rows(b: int) -> tuple[list[str], list[str]]:
    """Batch ``b``: P task prompts × G completions (the demonstration, a wrong answer, the bare answer, garbage)."""
    prompts, completions = [], []
    for e in TASK.train[b * P : (b + 1) * P]:
        wrong = e.demonstration[:-1] + str((int(e.demonstration[-1]) + 1) % 10)
        prompts += [e.prompt] * G
        completions += [e.demonstration, wrong, f"={e.reference}", "no answer"]
    return prompts, completions


def in_process(n_batches: int):
    """The reward built as a recipe builds it, driven as the core drives it (warm-up rounds on the first batch,
    then score → update per batch) over batches 0 … n_batches − 1; returns the rewards of each batch and the reward."""
    return in_process_on([dict(zip(("prompts", "completions"), batch_rows(b))) for b in range(n_batches)])


def in_process_on(bodies: list[dict]):
    """:func:`in_process` over these ``/score`` bodies, in order (their references, else the task's)."""
    reward = build_reward(CFG.reward, TASK, RewardContext(seed=CFG.seed, init_dir=None, device="cpu"))
    examples = {e.prompt: e for e in TASK.train}
    rewards = []
    for b, body in enumerate(bodies):
        prompts, completions = body["prompts"], body["completions"]
        references = body.get("references") or [examples[p].reference for p in prompts]
        batch = Rollouts(
            prompts=prompts,
            completions=completions,
            answers=[TASK.parse(c) for c in completions],
            references=references,
            group_ids=torch.arange(len(prompts) // G).repeat_interleave(G),
            meta=[examples[p].meta for p in prompts],
            step=b,
        )
        if b == 0:
            for _ in range(reward.warmup_steps):
                reward.update(batch, reward.score(batch))
        out = reward.score(batch)
        reward.update(batch, out)
        rewards.append(out.rewards.tolist())
    return rewards, reward


def assert_same_state(a, b, path="state"):
    """Two state dicts equal: tensors to float tolerance, everything else exactly."""
    if isinstance(a, torch.Tensor):
        assert a.shape == b.shape and torch.allclose(a.double(), b.double(), atol=1e-6, rtol=1e-5), path
    elif isinstance(a, dict):
        assert a.keys() == b.keys(), path
        for k in a:
            assert_same_state(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same_state(x, y, f"{path}[{i}]")
    else:
        assert a == b, path


def served_state(out_dir):
    return torch.load(checkpoints(out_dir)[-1] / "reward.pt", weights_only=False)


def test_served_ral_equals_in_process_rewards_and_judge_weights(tmp_path):
    """Three batches through the service (real uvicorn, real HTTP) and in-process: the same rewards, and after
    them the same judge weights, optimiser and buffers (the service's checkpoint vs the in-process reward)."""
    with serving(tmp_path / "svc") as served:
        answers = [post_score(dict(zip(("prompts", "completions"), batch_rows(b))), served.url) for b in range(3)]
        assert served.health()["batches"] == 3
    expected, reward = in_process(3)
    for got, want in zip(answers, expected):
        assert got["rewards"] == pytest.approx(want, abs=1e-5)
        assert got["components"]["judge_prob"][3] == 0.0 and got["answers"][3] is None  # garbage: malformed, 0
    assert answers[0]["learned"]["warmup/judge/updated"] == 1.0  # the warm-up ran on the first batch
    assert_same_state(served_state(tmp_path / "svc"), reward.state_dict())


@pytest.mark.slow
def test_a_sigkilled_service_resumes_its_judge_exactly(tmp_path):
    """Two batches, SIGKILL, a restart on the same directory, a third batch: the judge equals the in-process
    one after three batches, and no batch's update was lost."""
    served = Served(tmp_path / "svc").start()
    try:
        for b in range(2):
            post_score(dict(zip(("prompts", "completions"), batch_rows(b))), served.url)
        served.kill()
        served.start()
        health = served.health()
        assert health["batches"] == 2 and health["warmed"] and health["lost_updates"] == []
        third = post_score(dict(zip(("prompts", "completions"), batch_rows(2))), served.url)
    finally:
        served.stop()
    expected, reward = in_process(3)
    assert third["rewards"] == pytest.approx(expected[2], abs=1e-5) and third["batch"] == 3
    assert_same_state(served_state(tmp_path / "svc"), reward.state_dict())


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    flags = [
        "--max-request-rows",
        "64",
        "--max-queue-rows",
        "64",
        "--max-wait-ms",
        "1000",
        "--group-size",
        "4",
        "--max-request-bytes",
        "20000",
    ]
    with serving(tmp_path_factory.mktemp("serve") / "svc", flags=flags) as served:
        yield served


def test_bad_requests_are_refused_with_a_status_and_never_reach_the_judge(service):
    before = service.health()["batches"]
    prompts, completions = batch_rows(0)
    cases = [
        (b"{not json", 422, ""),
        ({"prompts": prompts}, 422, "completions"),
        ({"prompts": prompts, "completions": completions[:-1]}, 422, "completions has 15 rows but prompts has 16"),
        ({"prompts": [1], "completions": ["x"]}, 422, "valid string"),
        ({"prompts": prompts, "completions": completions, "surprise": 1}, 422, "surprise"),
        ({"prompts": [], "completions": []}, 422, "no rows"),
        ({"prompts": prompts, "completions": completions, "group_ids": [0] * 16}, 422, "different prompts"),
        ({"prompts": ["p"] * 65, "completions": ["c"] * 65}, 413, "--max-request-rows"),
        ({"prompts": ["p" * 30000], "completions": ["c"]}, 413, "--max-request-bytes"),
        ({"query": ["12*3=36"], "prompts": ["7*7="]}, 422, "does not start with its prompt"),
        ({"prompts": prompts[:6], "completions": completions[:6]}, 422, "split across requests"),
    ]
    for body, status, says in cases:
        path = "/openrlhf" if isinstance(body, dict) and "query" in body else "/score"
        code, answer = post(service.url, body, path)
        assert code == status, (body, answer)
        assert says in json.dumps(answer), answer
    assert service.health()["batches"] == before


def test_concurrent_requests_are_merged_into_bounded_batches_and_groups_kept_apart(service):
    """Eight concurrent requests of 16 rows: fewer batches than requests (merged, at most 512 rows each), each
    request gets its own rows' rewards (the garbage row of every group scores 0), and each batch is learned once."""
    before = service.health()["batches"]
    bodies = [dict(zip(("prompts", "completions"), batch_rows(b % 3))) for b in range(8)]
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda body: post_score(body, service.url), bodies))
    batches = {a["batch"] for a in answers}
    assert service.health()["batches"] - before == len(batches) < 8
    for a in answers:
        assert len(a["rewards"]) == 16 and a["rewards"][3::4] == [0.0] * 4 and a["batch_rows"] % 16 == 0


def test_back_pressure_refuses_what_would_queue_beyond_the_limit_and_the_service_goes_on(service):
    """Eight concurrent requests of 16 rows against --max-queue-rows 64 while the first batch waits 1 s for more:
    at most four queue, the rest are refused at once with 503 and Retry-After; the service then serves as before."""
    body = dict(zip(("prompts", "completions"), batch_rows(2)))
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        codes = list(pool.map(lambda _: post(service.url, body), range(8)))
    refused = [answer for code, answer in codes if code == 503]
    assert refused and len(refused) <= 4 and all("--max-queue-rows" in a["detail"] for a in refused)
    assert sum(code == 200 for code, _ in codes) == 8 - len(refused)
    assert post(service.url, body)[0] == 200 and service.health()["rows_waiting"] == 0


def test_a_retried_request_is_answered_again_not_learned_twice(service):
    body = {**dict(zip(("prompts", "completions"), batch_rows(1))), "request_id": "retry-me"}
    code, first = post(service.url, body)
    batches = service.health()["batches"]
    code2, again = post(service.url, body)
    assert code == code2 == 200 and again["replayed"] and again["rewards"] == first["rewards"]
    assert service.health()["batches"] == batches


def test_a_group_comparing_reward_takes_whole_groups_of_the_recipe_s_size(tmp_path):
    """RcRL compares the rows of a group: its service takes the recipe's grpo.group_size as every group's size,
    refuses a group split across requests, and scores whole groups (in-process, the service's own code)."""
    cfg = serve_config_for("rcrl_rubric_writing", ["sft.enabled=false"])
    service = RewardService(cfg, tmp_path / "svc")
    assert service.serve.group_size == cfg.grpo.group_size == 8
    e = service.task.train[0]
    with pytest.raises(ValueError, match="split across requests"):
        service.rows([e.prompt] * 4, [e.demonstration] * 4)
    done = service.process(service.merge([service.rows([e.prompt] * 8, [e.demonstration] * 4 + ["no"] * 4)]))
    assert done.batch == 1 and done.out.rewards[:4].mean() > done.out.rewards[4:].mean()


def test_without_the_serve_extra_the_command_names_it(monkeypatch, capsys):
    from rewardzoo.cli import main

    monkeypatch.setitem(sys.modules, "uvicorn", None)  # what Python holds for a package that is not installed
    assert main(["serve", RECIPE]) == 2
    assert "pip install 'rewardzoo[serve]'" in capsys.readouterr().err
