"""The OpenReward Standard adapter against the real ORS stack: the ``openreward`` SDK's own server (``Server``, on
uvicorn, 127.0.0.1) hosting :func:`~rewardzoo.integrations.ors.ors_environment`, in front of a real tokened
``rewardzoo serve``, called by the SDK's own client and by TRL's ``trl.experimental.openreward`` adapter."""

from __future__ import annotations

import threading
import time

import pytest

from rewardzoo.integrations.ors import ors_environment, ors_secrets
from rewardzoo.serve.audit import audit_rows
from rewardzoo.serve.auth import new_token
from tests.helpers.serving import free_port, serving
from tests.serve.test_serve_service import TASK

openreward = pytest.importorskip("openreward")
uvicorn = pytest.importorskip("uvicorn")


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    """(ORS URL, rewardzoo service, tokens): a tokened RAL service and an ORS server in front of it. The SDK's
    clients reach a self-hosted server at ``$OPENREWARD_SESSION_URL`` (else they prefix the host with
    ``sessions.``), which TRL's adapter reads too."""
    from openreward.environments import Server

    patch = pytest.MonkeyPatch()

    path = tmp_path_factory.mktemp("ors") / "tokens.txt"
    made = {"trainer": new_token(path, "trainer", "learn"), "eval": new_token(path, "eval", "score")}
    with serving(path.parent / "svc", flags=["--tokens", str(path)], token=made["trainer"]) as served:
        app = Server([ors_environment(TASK, served.url)]).app
        port = free_port()
        server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        while not server.started:
            time.sleep(0.05)
        patch.setenv("OPENREWARD_SESSION_URL", f"http://127.0.0.1:{port}")
        try:
            yield f"http://127.0.0.1:{port}", served, made
        finally:
            patch.undo()
            server.should_exit = True
            thread.join(10)


def test_the_sdk_client_lists_the_tasks_and_a_submitted_answer_is_scored_and_learned(stack):
    url, served, made = stack
    env = openreward.OpenReward(base_url=url).environments.get("rewardzoo")
    assert [t.task_spec["prompt"] for t in env.list_tasks("train")][:3] == [e.prompt for e in TASK.train[:3]]
    assert "reference" not in env.get_task("train", 0).task_spec  # the reference stays with the service
    before = served.health()["batches"]
    e = TASK.train[0]
    with env.session(split="train", index=0, secrets=ors_secrets(made["trainer"], served.url)) as session:
        assert session.get_prompt()[0].text == e.prompt
        out = session.call_tool("submit_answer", {"answer": e.demonstration})
    assert out.finished and 0 < out.reward <= 1 and out.metadata["answer"] == e.reference
    assert served.health()["batches"] == before + 1 and out.metadata["judge_step"] == before + 1
    assert audit_rows(served.out_dir)[-1]["client"] == "trainer"  # the ORS client, by its own token


def test_an_ors_client_without_a_token_trains_nothing(stack):
    url, served, made = stack
    env = openreward.OpenReward(base_url=url).environments.get("rewardzoo")
    before = served.health()["batches"]
    with env.session(split="train", index=1) as session:
        with pytest.raises(Exception, match="401"):
            session.call_tool("submit_answer", {"answer": TASK.train[1].demonstration})
    with env.session(split="train", index=1, secrets=ors_secrets(made["eval"], served.url)) as session:
        out = session.call_tool("submit_answer", {"answer": TASK.train[1].demonstration})  # a score token: scored
    assert out.reward is not None and served.health()["batches"] == before


def test_score_group_scores_a_group_in_one_request_without_learning_twice(stack):
    url, served, made = stack
    from openreward.api.environments.types import GroupCandidate, Message, TextBlock

    env = openreward.OpenReward(base_url=url).environments.get("rewardzoo")
    e = TASK.train[2]
    before = served.health()["batches"]
    texts = [e.demonstration, "no answer"]
    candidates = [GroupCandidate(messages=[Message(role="assistant", blocks=[TextBlock(text=t)])]) for t in texts]
    with env.session(split="train", index=2, secrets=ors_secrets(made["trainer"], served.url)) as session:
        scores = session.score_group(candidates)
    assert [s.reward for s in scores][1] == 0.0 and scores[0].reward > 0 and "judge_prob" in scores[0].metadata
    assert served.health()["batches"] == before
    assert audit_rows(served.out_dir)[-1]["event"] == "scored" and audit_rows(served.out_dir)[-1]["rows"] == 2


def test_trl_s_openreward_adapter_trains_on_the_environment(stack):
    """TRL's OpenRewardSpec (trl.experimental.openreward): the dataset from the ORS task list, one rollout
    environment per episode with the bound ``submit_answer`` tool, and its outcome reward function."""
    pytest.importorskip("datasets")
    spec_module = pytest.importorskip("trl.experimental.openreward")
    url, served, made = stack
    spec = spec_module.OpenRewardSpec(
        url, num_tasks=4, env_name="rewardzoo", secrets=ors_secrets(made["trainer"], served.url)
    )
    assert spec.train_dataset["task_index"] == [0, 1, 2, 3]
    assert spec.train_dataset["prompt"][0] == [{"role": "user", "content": ""}]  # TRL appends the env's prompt
    envs = [spec.environment_factory() for _ in range(2)]
    before = served.health()["batches"]
    for i, env in enumerate(envs):
        assert env.reset(task_index=i) == TASK.train[i].prompt
        env.submit_answer(answer=TASK.train[i].demonstration if i == 0 else "no answer")
    rewards = spec.reward_funcs(environments=envs)
    assert rewards[0] > 0 and rewards[1] == 0.0 and all(env.finished for env in envs)
    assert served.health()["batches"] == before + 2
