"""Behaviour preserved across refactors, on every CPU: a shortened RLVR and RAL multiplication run
must reproduce its recording (``tests/golden/``), and a wrong update must not.

How the replay is made independent of the machine — replayed completions, portable initial weights,
exact comparison of what is computed from text, bounded comparison of what passes through a model —
is in ``tests/helpers/golden.py``.  Each capability runs in a fresh process, because torch reads
``ATEN_CPU_CAPABILITY`` once, when it loads.
"""

import functools
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from rewardzoo.core import trainer as core_trainer
from tests.helpers import golden

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    """One directory for the module's in-process replays: they share the warm start."""
    return tmp_path_factory.mktemp("golden")


@pytest.fixture
def one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


CAPABILITIES = ["default", "avx2", "avx512"]
"""ATen's CPU kernel widths, narrowest first."""


@functools.cache
def native_capability() -> str:
    """The widest kernel width torch picks on this CPU by itself, read in a fresh process without
    ``ATEN_CPU_CAPABILITY`` (asked for a wider one, torch may dispatch kernels the CPU cannot run: on an
    AVX2-only AMD EPYC ``ATEN_CPU_CAPABILITY=avx512`` dies of SIGILL instead of falling back).  Read once per
    test process: the three cases share it."""
    env = {k: v for k, v in os.environ.items() if k != "ATEN_CPU_CAPABILITY"}
    out = (
        subprocess.run(
            [sys.executable, "-c", "import torch; print(torch.backends.cpu.get_cpu_capability())"],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=True,
        )
        .stdout.strip()
        .lower()
    )
    return out if out in CAPABILITIES else "default"


@pytest.mark.parametrize("capability", CAPABILITIES)
def test_the_recording_is_reproduced_under_each_cpu_capability(capability, tmp_path):
    native = native_capability()
    if CAPABILITIES.index(capability) > CAPABILITIES.index(native):
        pytest.skip(f"this CPU runs {native} kernels at most; {capability} is checked on a CPU that has it")
    env = {**os.environ, "ATEN_CPU_CAPABILITY": capability, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "helpers" / "golden.py"), "replay", str(tmp_path)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    last = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else ""
    if proc.returncode == 0 and f"({capability.upper()})" not in last:
        pytest.skip(f"this CPU cannot dispatch {capability} kernels (torch ran {last})")
    assert proc.returncode == 0, (
        f"under ATEN_CPU_CAPABILITY={capability}:\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    )


def test_advantages_of_the_wrong_sign_fail_the_comparison(monkeypatch, workdir, one_thread):
    """The opposite update: the KL, the losses after step 1 and the held-out log-likelihood move."""
    right = core_trainer.compute_advantages
    monkeypatch.setattr(core_trainer, "compute_advantages", lambda *a, **k: -right(*a, **k))
    bad = golden.replay("rlvr_multiplication", workdir)
    assert any("policy/kl" in line for line in bad), bad
    assert any("logp_heldout_end" in line for line in bad), bad


def test_a_dropped_micro_batch_fails_the_comparison(monkeypatch, workdir, one_thread):
    """Half of each step's rows never reach the gradient: the loss and gradient norm of step 1 move."""
    right = core_trainer.Trainer.micro_batches
    monkeypatch.setattr(
        core_trainer.Trainer, "micro_batches", lambda self, gen: (lambda b, n: (b[:-1], n))(*right(self, gen))
    )
    bad = golden.replay("ral_multiplication", workdir)
    assert any(line.startswith("step 1: policy/grad_norm") for line in bad), bad
    assert any("logp_heldout_end" in line for line in bad), bad


def test_the_replay_refuses_other_prompts_than_recorded(workdir, one_thread):
    """A change of the data pipeline (prompt order, group size) is caught at the first generate call."""
    calls = golden.load("rlvr_multiplication")[2]
    calls[0] = {**calls[0], "prompts": list(reversed(calls[0]["prompts"]))}
    with pytest.raises(AssertionError, match="generate call 0"):
        golden.run(golden.config("rlvr_multiplication", workdir), calls)
