"""Two CPU processes (accelerate MULTI_CPU over gloo, started by torchrun) train to the same
parameters as one process with the same global batch."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from rewardzoo.zoo import load_config
from rewardzoo.core.logger import read_metrics
from rewardzoo.core.models import char_tokenizer, tiny_causal_lm

REPO = Path(__file__).resolve().parents[2]
ARGS = [
    "algorithms/rlvr_multiplication.yaml", "steps=2", "sft.enabled=false", "eval.n_examples=8",
    "logging.progress=false", "logging.tensorboard=false", "grpo.batch_size=32", "grpo.group_size=4",
    "grpo.micro_batch_size=8", "grpo.generation_chunk_prompts=4", "sampling.max_new_tokens=4",
    "model.tiny.hidden_size=32", "model.tiny.intermediate_size=64", "model.tiny.num_layers=2",
    "reward.name=callable", "reward.callable.functions=[dense_rewards:digit_share]", "checkpoint_every=2",
]


def _run(cmd, run_dir):
    env = {**os.environ, "PYTHONPATH": f"{REPO / 'tests' / 'helpers'}:{os.environ.get('PYTHONPATH', '')}",
           "OMP_NUM_THREADS": "1"}
    out = subprocess.run([*cmd, *ARGS, f"run_dir={run_dir}"], cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    return load_file(run_dir / "checkpoints" / "step_000002" / "policy" / "model.safetensors"), out


@pytest.mark.slow
def test_two_processes_equal_one_process(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(REPO / "tests" / "helpers"))
    single, _ = _run([sys.executable, "-m", "rewardzoo.cli", "train"], tmp_path / "one")
    double, out = _run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", "29533",
                        "-m", "rewardzoo.cli", "train"], tmp_path / "two")
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
