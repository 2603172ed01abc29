"""Two CPU processes (accelerate MULTI_CPU over gloo, started by torchrun) train to the same
parameters as one process with the same global batch; a ``distributed`` setting the run cannot use
fails in the config check (the FSDP2 strategy itself: tests/core/test_fsdp.py)."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from rewardzoo.core.config import ConfigError
from rewardzoo.core.distributed import DistributedConfig, check_combination
from rewardzoo.core.logger import read_metrics
from rewardzoo.core.models import char_tokenizer, tiny_causal_lm
from rewardzoo.zoo import load_config

REPO = Path(__file__).resolve().parents[2]
ARGS = [
    "algorithms/rlvr_multiplication.yaml",
    "steps=2",
    "sft.enabled=false",
    "eval.n_examples=8",
    "logging.progress=false",
    "logging.tensorboard=false",
    "grpo.batch_size=32",
    "grpo.group_size=4",
    "grpo.micro_batch_size=8",
    "grpo.generation_chunk_prompts=4",
    "sampling.max_new_tokens=4",
    "model.tiny.hidden_size=32",
    "model.tiny.intermediate_size=64",
    "model.tiny.num_layers=2",
    "reward.name=callable",
    "reward.callable.functions=[dense_rewards:digit_share]",
    "checkpoint_every=2",
]


def _run(cmd, run_dir):
    env = {
        **os.environ,
        "PYTHONPATH": f"{REPO / 'tests' / 'helpers'}:{os.environ.get('PYTHONPATH', '')}",
        "OMP_NUM_THREADS": "1",
    }
    out = subprocess.run(
        [*cmd, *ARGS, f"run_dir={run_dir}"], cwd=REPO, env=env, capture_output=True, text=True, timeout=900
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return load_file(run_dir / "checkpoints" / "step_000002" / "policy" / "model.safetensors"), out


@pytest.mark.slow
def test_two_processes_equal_one_process(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(REPO / "tests" / "helpers"))
    single, _ = _run([sys.executable, "-m", "rewardzoo.cli", "train"], tmp_path / "one")
    double, out = _run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--nproc_per_node",
            "2",
            "--master_port",
            "29533",
            "-m",
            "rewardzoo.cli",
            "train",
        ],
        tmp_path / "two",
    )
    cfg = load_config(ARGS[0], ARGS[1:])
    start = tiny_causal_lm(cfg.model.tiny, len(char_tokenizer()), seed=cfg.seed).state_dict()
    assert set(single) == set(double)
    for name in single:
        torch.testing.assert_close(double[name], single[name], rtol=1e-4, atol=1e-5, msg=name)
    moved = [n for n in single if not torch.equal(single[n], start[n])]
    assert len(moved) == len(single), "training must move every parameter"
    one = read_metrics(tmp_path / "one" / "metrics.jsonl")
    two = read_metrics(tmp_path / "two" / "metrics.jsonl")
    assert one[0]["system/num_processes"] == 1 and two[0]["system/num_processes"] == 2
    assert [r["reward/mean"] for r in one[1:]] == pytest.approx([r["reward/mean"] for r in two[1:]])


@pytest.mark.parametrize(
    "overrides, says",
    [
        (["distributed.strategy=fsdp3"], "distributed.strategy must be one of ddp, fsdp2; got 'fsdp3'"),
        (["distributed.mixed_precision=fp16"], "distributed.mixed_precision must be one of no, bf16"),
        (
            ["distributed.strategy=fsdp2", "distributed.mixed_precision=bf16", "model.dtype=bfloat16"],
            "keeps fp32 master weights",
        ),
        (["distributed.reshard_after_forward=false"], "applies to distributed.strategy=fsdp2 only"),
    ],
)
def test_a_distribution_setting_the_run_cannot_use_is_a_config_error(overrides, says):
    """Each impossible distribution setting fails in the config check, saying what to change."""
    with pytest.raises(ConfigError, match=re.escape(says)) as err:
        load_config(ARGS[0], [*ARGS[1:], *overrides])
    assert "\n" not in str(err.value)


def test_fsdp2_with_the_vllm_engine_is_a_valid_setting():
    """FSDP2 and the vLLM engine combine (each process runs its own engine, pushed from the shards:
    tests/core/test_vllm_engine.py runs it); the combination check passes both strategies."""
    for strategy in ("ddp", "fsdp2"):
        check_combination(DistributedConfig(strategy=strategy), model_dtype="float32")


def test_fsdp2_bf16_on_bf16_weights_fails_in_one_line_before_any_work(tmp_path):
    """``rewardzoo train … distributed.strategy=fsdp2 distributed.mixed_precision=bf16 model.dtype=bfloat16``:
    exit 2, one line saying what to set, no run directory, no warm start."""
    run_dir = tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": str(REPO / "tests" / "helpers"), "OMP_NUM_THREADS": "1"}
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "rewardzoo.cli",
            "train",
            *ARGS,
            "sft.enabled=true",
            "distributed.strategy=fsdp2",
            "distributed.mixed_precision=bf16",
            "model.dtype=bfloat16",
            f"run_dir={run_dir}",
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr
    assert "set model.dtype=float32" in out.stderr and not run_dir.exists() and not any(tmp_path.iterdir())
