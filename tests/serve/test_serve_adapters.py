"""The trainers' own code calling ``rewardzoo serve`` (a real service on 127.0.0.1, started with ``--tokens``: each
adapter passes its token, and the audit log names it): TRL's GRPOTrainer with
the async :class:`~rewardzoo.integrations.remote.RemoteReward`, OpenRLHF's remote reward client
(``--remote_rm_url``), and veRL's naive and batch reward managers loading
:mod:`rewardzoo.integrations.remote` by path as their ``custom_reward_function``. Each is skipped when its
trainer does not import (OpenRLHF and veRL install on the CPU with ``pip install --no-deps openrlhf verl``
plus ``aiohttp pylatexenc`` and ``tensordict pyvers``: docs/serving.md)."""

from __future__ import annotations

import asyncio
import importlib
import os

import numpy as np
import pytest
import torch

from rewardzoo.core.models import ModelConfig, load_policy
from rewardzoo.integrations import remote
from rewardzoo.serve.audit import audit_rows
from rewardzoo.serve.auth import new_token
from tests.helpers.serving import serving
from tests.helpers.trl_config import cpu_grpo_config
from tests.serve.test_serve_service import TASK, batch_rows

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")


def _trainer_module(name: str):
    """A trainer's module, or a skip when it is not installed; under ``make test-trainers``
    (REWARDZOO_REQUIRE_TRAINERS=1) a missing trainer fails instead of skipping."""
    if os.environ.get("REWARDZOO_REQUIRE_TRAINERS"):
        return importlib.import_module(name)
    return pytest.importorskip(name, exc_type=ImportError)


CLIENTS = ("trl", "openrlhf", "verl")


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    """A tokened service; ``served.tokens`` holds one learn token per trainer."""
    path = tmp_path_factory.mktemp("adapters") / "tokens.txt"
    tokens = {name: new_token(path, name, "learn") for name in CLIENTS}
    with serving(path.parent / "svc", flags=["--tokens", str(path)], token=tokens["trl"]) as served:
        served.tokens = tokens
        yield served


def last_client(service) -> str:
    """The client the audit log's newest line names."""
    return audit_rows(service.out_dir)[-1]["client"]


def test_trl_grpo_trainer_trains_with_the_served_reward(service, tmp_path):
    """A real TRL GRPOTrainer run of 2 steps on the tiny model (CPU) whose only reward is the service's RAL, through
    TRL's async reward-function path: the service scores and learns from each generation batch, whole groups."""
    datasets = pytest.importorskip("datasets")
    trl = pytest.importorskip("trl")
    from trl.trainer.utils import is_async_callable

    reward = remote.RemoteReward(service.url, num_generations=4, name="ral", token=service.tokens["trl"])
    assert is_async_callable(reward)
    dataset = datasets.Dataset.from_list([{"prompt": e.prompt, "reference": e.reference} for e in TASK.train[:8]])
    model, tokenizer = load_policy(ModelConfig(name="tiny"))
    before = service.health()["batches"]
    args = cpu_grpo_config(tmp_path, max_steps=2, max_completion_length=4, learning_rate=1e-3)
    trainer = trl.GRPOTrainer(
        model=model, processing_class=tokenizer, train_dataset=dataset, args=args, reward_funcs=[reward]
    )
    trainer.train()
    assert service.health()["batches"] - before == 2 and last_client(service) == "trl"
    logged = {k for row in trainer.state.log_history for k in row}
    assert {"rewards/ral/mean", "ral/judge_prob"} <= logged


def test_openrlhf_remote_reward_client_reads_the_served_rewards(service):
    """OpenRLHF's own HTTP client of ``--remote_rm_url`` (SingleTurnAgentExecutor) against /openrlhf: its
    query is the prompt and the response decoded with special tokens; the reply is what it reads. It sends no
    headers of its own, so the token rides in the URL (``http://openrlhf:TOKEN@host/openrlhf``), which its aiohttp
    client sends as HTTP Basic."""
    agent = _trainer_module("openrlhf.utils.agent")
    prompts, completions = batch_rows(0)
    queries = [p + c + "<eos>" for p, c in zip(prompts, completions)]
    labels = [TASK.train[i // 4].reference for i in range(len(prompts))]
    authed = service.url.replace("http://", f"http://openrlhf:{service.tokens['openrlhf']}@")
    executor = agent.SingleTurnAgentExecutor(f"{authed}/openrlhf")
    before = service.health()["batches"]
    [answer] = asyncio.run(executor._fetch_rewards_via_http(queries, prompts, labels))
    assert len(answer["rewards"]) == len(answer["scores"]) == 16 and answer["rewards"][3::4] == [0.0] * 4
    assert answer["rewards"][0] > 0 and set(answer["extra_logs"]) == {"judge_prob"}
    assert service.health()["batches"] - before == 1 and last_client(service) == "openrlhf"


def verl_batch(tokenizer):
    """A veRL DataProto of batch 0's rows as veRL's rollout leaves it: left-padded prompt ids, right-padded
    response ids, the attention mask, the data source, the ground truth and (for rewardzoo) the prompt text."""
    from verl import DataProto

    prompts, completions = batch_rows(0)

    def enc(texts):
        return [tokenizer(t, add_special_tokens=False)["input_ids"] for t in texts]

    p_ids, r_ids = enc(prompts), enc(completions)
    lp, lr = max(map(len, p_ids)), max(map(len, r_ids))
    pad = tokenizer.pad_token_id
    prompt = torch.tensor([[pad] * (lp - len(x)) + x for x in p_ids])  # [N, Lp]
    response = torch.tensor([x + [pad] * (lr - len(x)) for x in r_ids])  # [N, Lr]
    mask = torch.tensor(
        [[0] * (lp - len(p)) + [1] * (len(p) + len(r)) + [0] * (lr - len(r)) for p, r in zip(p_ids, r_ids)]
    )  # [N, Lp + Lr]
    refs = [TASK.train[i // 4].reference for i in range(len(prompts))]
    data = DataProto.from_dict(
        tensors={"prompts": prompt, "responses": response, "attention_mask": mask},
        non_tensors={
            "data_source": np.array(["multiplication"] * len(prompts), dtype=object),
            "reward_model": np.array([{"ground_truth": r} for r in refs], dtype=object),
            "extra_info": np.array([{"prompt": p} for p in prompts], dtype=object),
        },
    )
    return data, [len(r) for r in r_ids]


def test_verl_reward_loop_scores_rows_concurrently_and_the_service_batches_them(service):
    """veRL's reward loop (its default path: the ``naive`` manager of verl.experimental.reward_loop) scores each
    row by its own ``run_single``, concurrently, calling the function loaded by path in a thread each: the
    service merges the concurrent rows into fewer batches for the judge, and each row gets its own reward."""
    loop = _trainer_module("verl.experimental.reward_loop.reward_manager.naive")
    from omegaconf import OmegaConf
    from verl.trainer.ppo.reward import get_custom_reward_fn

    config = OmegaConf.create(
        {
            "reward": {
                "custom_reward_function": {
                    "path": remote.__file__,
                    "name": "compute_score",
                    "reward_kwargs": {"url": service.url, "token": service.tokens["verl"]},
                }
            }
        }
    )
    _, tokenizer = load_policy(ModelConfig(name="tiny"))
    manager = loop.NaiveRewardManager(config, tokenizer, get_custom_reward_fn(config))
    data, _ = verl_batch(tokenizer)
    before = service.health()["batches"]
    results = manager.loop.run_until_complete(
        asyncio.gather(*(manager.run_single(data[i : i + 1]) for i in range(len(data))))
    )
    rewards = [r["reward_score"] for r in results]
    assert rewards[3::4] == [0.0] * 4 and rewards[0] > 0
    assert [r["reward_extra_info"]["judge_prob"] for r in results] == rewards
    assert 1 <= service.health()["batches"] - before < 16 and last_client(service) == "verl"


@pytest.mark.parametrize("manager,name", [("naive", "compute_score"), ("batch", "compute_score_batch")])
def test_verl_reward_managers_load_the_remote_function_by_path(service, manager, name):
    """veRL's legacy reward managers (verl.workers.reward_manager: ``naive``, one row per call, and ``batch``,
    whole groups in one call) load ``custom_reward_function.path/name`` (get_custom_reward_fn) and put each
    row's served reward on the row's last response token; the components land in reward_extra_info."""
    _trainer_module("verl")
    from omegaconf import OmegaConf
    from verl.trainer.ppo.reward import get_custom_reward_fn
    from verl.workers.reward_manager.batch import BatchRewardManager
    from verl.workers.reward_manager.naive import NaiveRewardManager

    config = OmegaConf.create(
        {
            "reward": {
                "custom_reward_function": {
                    "path": remote.__file__,
                    "name": name,
                    "reward_kwargs": {"url": service.url, "token": service.tokens["verl"]},
                }
            }
        }
    )
    fn = get_custom_reward_fn(config)
    _, tokenizer = load_policy(ModelConfig(name="tiny"))
    cls = NaiveRewardManager if manager == "naive" else BatchRewardManager
    data, lengths = verl_batch(tokenizer)
    before = service.health()["batches"]
    out = cls(tokenizer, 0, compute_score=fn)(data, return_dict=True)
    rewards = [out["reward_tensor"][i, n - 1].item() for i, n in enumerate(lengths)]
    assert out["reward_tensor"].sum().item() == pytest.approx(sum(rewards), abs=1e-5)
    assert rewards[3::4] == [0.0] * 4 and rewards[0] > 0
    assert out["reward_extra_info"]["judge_prob"] == pytest.approx(rewards, abs=1e-6)
    assert service.health()["batches"] - before == (16 if manager == "naive" else 1) and last_client(service) == "verl"
