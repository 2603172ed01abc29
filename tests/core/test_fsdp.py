"""FSDP2 on CPU processes (gloo, started by torchrun): sharded training equals one process on the same
global batch, sharded checkpoints resume exactly and export to plain transformers, two nodes on
loopback equal one node with two processes, and bf16 / activation checkpointing stay within their
tolerances.  Slow tier (marker ``slow``, excluded from the default suite): ``make test-distributed``
(about ten launches of a tiny model for 2–3 steps)."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from rewardzoo.core.logger import read_metrics
from rewardzoo.core.models import char_tokenizer, tiny_causal_lm
from rewardzoo.core.sharded_checkpoint import read_full
from rewardzoo.zoo import load_config
from tests.helpers.launch import (
    REPO,
    STEP,
    assert_same,
    check,
    env,
    free_port,
    launch_train,
    policy_weights,
    reward_means,
    step_rows,
    torchrun,
)

pytestmark = pytest.mark.slow

RECIPE = "algorithms/rlvr_multiplication.yaml"
TINY = [
    "sft.enabled=false",
    "eval.n_examples=8",
    "logging.progress=false",
    "logging.tensorboard=false",
    "grpo.batch_size=16",
    "grpo.group_size=4",
    "grpo.micro_batch_size=8",
    "grpo.generation_chunk_prompts=2",
    "sampling.max_new_tokens=4",
    "model.tiny.hidden_size=32",
    "model.tiny.intermediate_size=64",
    "model.tiny.num_layers=2",
    "checkpoint_every=1",
    "keep_checkpoints=3",
    "steps=2",
]
DENSE = ["reward.name=callable", "reward.callable.functions=[dense_rewards:digit_share]"]
FSDP2 = ["distributed.strategy=fsdp2"]


def train(run_dir: Path, *overrides: str, procs: int = 1) -> Path:
    """``rewardzoo train`` of the tiny recipe on 1 process (python) or ``procs`` processes (torchrun)."""
    return launch_train(RECIPE, run_dir, *TINY, *overrides, procs=procs)


def train_two_nodes(run_dir: Path, *overrides: str) -> Path:
    """The same run as 2 nodes × 1 process on loopback: both node processes started here."""
    port = free_port()
    args = ["-m", "rewardzoo.cli", "train", RECIPE, *TINY, *overrides, f"run_dir={run_dir}"]
    nodes = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "torch.distributed.run",
                "--nnodes",
                "2",
                "--node_rank",
                str(rank),
                "--nproc_per_node",
                "1",
                "--master_addr",
                "127.0.0.1",
                "--master_port",
                str(port),
                *args,
            ],
            cwd=REPO,
            env=env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for rank in (0, 1)
    ]
    for node in nodes:
        stdout, stderr = node.communicate(timeout=900)
        check(subprocess.CompletedProcess(node.args, node.returncode, stdout, stderr))
    return run_dir


@pytest.fixture(scope="module")
def rlvr(tmp_path_factory) -> dict[str, Path]:
    """The dense-reward RLVR run on 1 process (DDP) and on 2 processes (FSDP2)."""
    root = tmp_path_factory.mktemp("rlvr")
    return {"one": train(root / "one", *DENSE), "two": train(root / "two", *DENSE, *FSDP2, procs=2)}


def test_fsdp2_two_processes_equal_one_process(rlvr):
    """Sharded weights, gradients and AdamW states on 2 processes give the one-process update: every
    parameter moved, the same to float tolerance; each process wrote its own shard."""
    one, two = policy_weights(rlvr["one"], 2), policy_weights(rlvr["two"], 2)
    assert_same(two, one)
    cfg = load_config(RECIPE, TINY)
    start = tiny_causal_lm(cfg.model.tiny, len(char_tokenizer()), seed=cfg.seed).state_dict()
    assert all(not torch.equal(one[n], start[n]) for n in one), "training must move every parameter"
    assert reward_means(rlvr["two"]) == pytest.approx(reward_means(rlvr["one"]))
    shards = sorted(p.name for p in (rlvr["two"] / STEP.format(2) / "sharded").glob("*.distcp"))
    assert shards == ["__0_0.distcp", "__1_0.distcp"]
    assert read_metrics(rlvr["two"] / "metrics.jsonl")[0]["system/num_processes"] == 2


def test_two_nodes_on_loopback_equal_one_node_with_two_processes(rlvr, tmp_path):
    """torchrun --nnodes 2 --node_rank 0/1 --master_addr 127.0.0.1, one process per node: the run of
    one node with two processes, bit for bit."""
    nodes = train_two_nodes(tmp_path / "nodes", *DENSE, *FSDP2)
    assert_same(policy_weights(nodes, 2), policy_weights(rlvr["two"], 2), exact=True)
    assert reward_means(nodes) == reward_means(rlvr["two"])


def test_export_loads_in_plain_transformers(rlvr, tmp_path):
    """`rewardzoo export` turns the sharded checkpoint into a directory that plain transformers loads, with
    the one-process run's weights; `rewardzoo generate` samples from the sharded run directly."""
    from transformers import AutoModelForCausalLM

    out = tmp_path / "exported"
    check(
        subprocess.run(
            [sys.executable, "-m", "rewardzoo.cli", "export", str(rlvr["two"]), str(out)],
            cwd=REPO,
            env=env(),
            capture_output=True,
            text=True,
            timeout=300,
        )
    )
    model = AutoModelForCausalLM.from_pretrained(out)
    assert_same({k: v for k, v in model.state_dict().items()}, policy_weights(rlvr["one"], 2))
    gen = check(
        subprocess.run(
            [sys.executable, "-m", "rewardzoo.cli", "generate", str(rlvr["two"]), "--prompt", "12*3=", "-n", "2"],
            cwd=REPO,
            env=env(),
            capture_output=True,
            text=True,
            timeout=300,
        )
    )
    assert len(json.loads(gen.stdout.strip().splitlines()[-1])["completions"]) == 2


RAL = [
    "reward.name=ral",
    "reward.ral.warmup_steps=1",
    "reward.ral.polyak=true",
    "reward.ral.replay_fraction=0.5",
    "reward.ral.gate_threshold=1.0",
    "reward.ral.judge.init_from=",
    "reward.ral.judge.tiny.hidden_size=32",
    "reward.ral.judge.tiny.intermediate_size=64",
    "reward.ral.judge.tiny.num_layers=2",
    "grpo.beta=0.1",
    # a short warm start so that most answers parse and the judge learns from step 1
    "sft.enabled=true",
    "sft.steps=60",
    "sft.batch_size=32",
    "task.multiplication.scratchpad=false",
    "sampling.max_new_tokens=6",
    "sampling.temperature=0.5",
]


@pytest.fixture(scope="module")
def ral(tmp_path_factory) -> dict[str, Path]:
    """RAL (judge + Polyak reward judge + replay) with a KL term to a full reference copy: 2 steps on one
    process (DDP), 3 steps on two processes (FSDP2); both read one cached warm start."""
    root = tmp_path_factory.mktemp("ral")
    common = [*RAL, f"sft.cache_dir={root / 'sft'}"]
    return {
        "one": train(root / "one", *common),
        "two": train(root / "two", *common, *FSDP2, "steps=3", procs=2),
        "common": common,
    }


def test_fsdp2_ral_judges_and_reference_copy_equal_one_process(ral):
    """Under FSDP2 the reference copy, the judge (with its AdamW) and the Polyak judge are sharded too, and
    every process scores the same global batch: policy, judge, Polyak judge, judge moments and every logged
    judge statistic equal the one-process run's."""
    assert_same(policy_weights(ral["two"], 2), policy_weights(ral["one"], 2))
    one = torch.load(ral["one"] / STEP.format(2) / "reward.pt", weights_only=False)
    shards = read_full(ral["two"] / STEP.format(2), "reward")
    assert_same(
        {k.removeprefix("judge/model/"): v for k, v in shards.items() if k.startswith("judge/model/")},
        one["judge"]["model"],
    )
    assert_same(
        {k.removeprefix("reward_judge/"): v for k, v in shards.items() if k.startswith("reward_judge/")},
        one["reward_judge"],
    )
    moments = {k for k in shards if k.startswith("judge/optimizer/state/") and k.endswith("exp_avg_sq")}
    assert len(moments) == len(one["judge"]["model"])
    rows_one, rows_two = step_rows(ral["one"]), step_rows(ral["two"])
    assert sorted(rows_one) == [1, 2]
    for step, row in rows_one.items():
        for key in ("reward/mean", "judge/loss", "judge/accuracy", "judge/polyak_distance", "policy/kl"):
            got, expected = rows_two[step].get(key), row.get(key)
            assert (got is None) == (expected is None), (step, key)
            if expected is not None:
                assert got == pytest.approx(expected, rel=1e-4, abs=1e-6), (step, key)
    assert rows_one[2]["judge/updated"] == 1.0 and rows_one[2]["judge/n_negatives"] > 0


def test_sharded_checkpoint_resume_continues_exactly(ral, tmp_path):
    """Stopped after step 2 and resumed on the same two processes, the run reaches step 3 with the very bits
    of the run that never stopped: policy, AdamW moments, the judges' shards, the reward's buffers and gate."""
    resumed = tmp_path / "resumed"
    shutil.copytree(ral["two"], resumed)
    shutil.rmtree(resumed / STEP.format(3))
    train(resumed, *ral["common"], *FSDP2, "steps=3", "resume=true", procs=2)
    straight, again = ral["two"] / STEP.format(3), resumed / STEP.format(3)
    for part in ("policy", "optimizer", "reward"):
        assert_same(read_full(again, part), read_full(straight, part), exact=True)
    rest = [torch.load(p / "reward.pt", weights_only=False) for p in (straight, again)]
    assert rest[0]["buffer"]["items"] == rest[1]["buffer"]["items"] and rest[0]["gate"] == rest[1]["gate"]
    assert reward_means(resumed) == reward_means(ral["two"])


def test_lora_under_fsdp2_equals_one_process(tmp_path):
    """LoRA adapters on sharded frozen base weights, the reference = the adapters-disabled policy (β > 0,
    μ = 2): the adapters equal the one-process run's, the base stays the starting weights, and the export
    merges them into a plain model."""
    from transformers import AutoModelForCausalLM

    lora = [
        *DENSE,
        "model.lora.enabled=true",
        "model.lora.r=4",
        "grpo.beta=0.1",
        "grpo.num_iterations=2",
        "grpo.lr=1e-2",
    ]
    one, two = train(tmp_path / "one", *lora), train(tmp_path / "two", *lora, *FSDP2, procs=2)
    sharded = policy_weights(two, 2)
    adapters = {k.replace(".default", ""): v for k, v in sharded.items() if "lora_" in k}
    assert_same(adapters, policy_weights(one, 2))
    cfg = load_config(RECIPE, TINY)
    start = tiny_causal_lm(cfg.model.tiny, len(char_tokenizer()), seed=cfg.seed).state_dict()
    base = {
        k.removeprefix("base_model.model.").replace(".base_layer", ""): v
        for k, v in sharded.items()
        if "lora_" not in k
    }
    assert_same(base, start, exact=True)
    out = tmp_path / "merged"
    check(
        subprocess.run(
            [sys.executable, "-m", "rewardzoo.cli", "export", str(two), str(out)],
            cwd=REPO,
            env=env(),
            capture_output=True,
            text=True,
            timeout=300,
        )
    )
    merged = AutoModelForCausalLM.from_pretrained(out).state_dict()
    assert set(merged) == set(start)
    assert not torch.equal(
        merged["model.layers.0.self_attn.q_proj.weight"], start["model.layers.0.self_attn.q_proj.weight"]
    )


def test_sharded_modules_match_the_unsharded_ones(tmp_path):
    """One torchrun of tests/helpers/fsdp_checks.py: the fused log-prob head under sharding (output weight a
    DTensor outside the root's forward, gathered inside it) gives the unsharded log-probs and, summed over
    processes, the one-process gradient; generation from the gathered weights samples the same tokens
    (processes decoding different numbers of rows); the vLLM push's state dict from shards equals the
    unsharded one (full and LoRA); bf16 mixed precision keeps fp32 master weights within the stated
    tolerance of fp32; activation checkpointing recomputes each block and changes nothing."""
    out = tmp_path / "checks.json"
    check(
        subprocess.run(
            torchrun(str(REPO / "tests" / "helpers" / "fsdp_checks.py"), str(out)),
            cwd=REPO,
            env=env(),
            capture_output=True,
            text=True,
            timeout=900,
        )
    )
    r = json.loads(out.read_text())
    assert r["head_weight_is_dtensor_outside_forward"]
    assert r["fused_logp"] <= 1e-6 and r["fused_grad"] <= 1e-5
    assert r["generation_equal"]
    assert r["pushed_keys_equal"] and r["pushed"] == 0.0 and r["pushed_lora_keys_equal"] and r["pushed_lora"] == 0.0
    # bf16 tolerance (measured on this tiny model: 1.5e-3 and 0.8%): per-token log-probs within 2e-2, the
    # gradient within 5% relative error of fp32
    assert r["bf16_logp"] <= 2e-2 and r["bf16_grad"] <= 5e-2 and r["bf16_master_dtype"] == "{torch.float32}"
    assert r["checkpointing_forwards"] == [3, 2]  # initialising forward, training forward, recompute
    assert r["checkpointing_logp"] <= 1e-6 and r["checkpointing_grad"] <= 1e-6


def test_bf16_with_checkpointing_trains_and_saves_fp32_masters(tmp_path):
    """fsdp2 + bf16 + activation checkpointing + reshard_after_forward=false, end to end on 2 processes: the
    run finishes, every saved (master) weight and moment is fp32 and finite, and training moved them."""
    run = train(
        tmp_path / "bf16",
        *DENSE,
        *FSDP2,
        "distributed.mixed_precision=bf16",
        "distributed.reshard_after_forward=false",
        "model.gradient_checkpointing=true",
        procs=2,
    )
    ckpt = run / STEP.format(2)
    weights, moments = read_full(ckpt, "policy"), read_full(ckpt, "optimizer")
    assert {t.dtype for t in weights.values()} == {torch.float32}
    assert all(torch.isfinite(t).all() for t in [*weights.values(), *moments.values()])
    cfg = load_config(RECIPE, TINY)
    start = tiny_causal_lm(cfg.model.tiny, len(char_tokenizer()), seed=cfg.seed).state_dict()
    assert all(not torch.equal(weights[n], start[n]) for n in start)
