"""Launching ``rewardzoo train`` on one process or several (torchrun, gloo) from a test, and reading
what the runs wrote: the multi-process tiers (tests/core/test_fsdp.py, tests/core/test_vllm_engine.py)."""

import os
import socket
import subprocess
import sys
from pathlib import Path

import torch
from safetensors.torch import load_file

from rewardzoo.core.logger import read_metrics
from rewardzoo.core.sharded_checkpoint import read_full_policy

REPO = Path(__file__).resolve().parents[2]
STEP = "checkpoints/step_{:06d}"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def env() -> dict:
    """The environment of a launched run: the test helpers importable (the dense rewards), one thread."""
    return {
        **os.environ,
        "PYTHONPATH": f"{REPO / 'tests' / 'helpers'}:{os.environ.get('PYTHONPATH', '')}",
        "OMP_NUM_THREADS": "1",
    }


def torchrun(*args: str, nproc: int = 2) -> list[str]:
    return [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc_per_node",
        str(nproc),
        "--master_port",
        str(free_port()),
        *args,
    ]


def check(out: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    assert out.returncode == 0, (out.stdout or "")[-2000:] + (out.stderr or "")[-4000:]
    return out


def launch_train(recipe: str, run_dir: Path, *overrides: str, procs: int = 1, timeout: int = 900) -> Path:
    """``rewardzoo train recipe overrides run_dir=…`` on 1 process (python) or ``procs`` processes (torchrun)."""
    train_args = ["-m", "rewardzoo.cli", "train", recipe, *overrides, f"run_dir={run_dir}"]
    cmd = [sys.executable, *train_args] if procs == 1 else torchrun(*train_args, nproc=procs)
    check(subprocess.run(cmd, cwd=REPO, env=env(), capture_output=True, text=True, timeout=timeout))
    return run_dir


def policy_weights(run_dir: Path, step: int) -> dict[str, torch.Tensor]:
    """The policy's full weights of a run's checkpoint, DDP (save_pretrained) or sharded (DCP)."""
    ckpt = run_dir / STEP.format(step)
    if (ckpt / "sharded").is_dir():
        return read_full_policy(ckpt)
    policy = ckpt / "policy"
    name = "adapter_model.safetensors" if (policy / "adapter_model.safetensors").exists() else "model.safetensors"
    return load_file(policy / name)


def assert_same(got: dict, expected: dict, exact: bool = False) -> None:
    assert set(got) == set(expected)
    for name in expected:
        if exact:
            assert torch.equal(got[name], expected[name]), name
        else:
            torch.testing.assert_close(got[name], expected[name], rtol=1e-4, atol=1e-5, msg=name)


def step_rows(run_dir: Path) -> dict[int, dict]:
    """{step: metrics row} of a run's training steps (rows with a reward; eval-only rows left out)."""
    return {row["step"]: row for row in read_metrics(run_dir / "metrics.jsonl") if "reward/mean" in row}


def reward_means(run_dir: Path) -> list[float]:
    return [row["reward/mean"] for row in read_metrics(run_dir / "metrics.jsonl") if "reward/mean" in row]
