"""Behaviour preserved across refactors: the RLVR and RAL multiplication recipes, shortened to four
steps at one thread, must log exactly the metrics recorded before the layout moved.

The recorded runs live in ``tests/golden/`` (the resolved ``config.yaml`` each run wrote and its
``metrics.jsonl``); they were made with the code of commit 7a1d843 by ``rewardzoo train`` on
``algorithms/{rlvr,ral}_multiplication.yaml`` with ``steps=4 sft.steps=150 eval.n_examples=48
eval.every=2 grpo.batch_size=64 grpo.micro_batch_size=32 grpo.kl_estimator=k3`` (and
``reward.ral.warmup_steps=3``), ``OMP_NUM_THREADS=1``.  The KL estimator is pinned to plain k3,
the default of that commit, so the comparison covers the KL path too.  Timings are not compared.
The recording sampled with transformers' ``torch.multinomial``; the default sampler is now the
inverse-CDF one (same distribution, different draws), so the golden configs pin
``sampling.sampler: multinomial``.

Every value must be identical except the policy's continuous statistics.  Two deliberate numeric
changes since the recording move them by rounding alone: the token-summed statistics (loss,
entropy, KL, ratio, clip fractions) are summed in float64 where the recording rounded the sum to
float32, and the optimiser is torch's fused AdamW with a one-exponential fused forward
(docs/performance.md), whose float32 rounding differs from the loop AdamW's.  Those keys and the
gradient norm must agree to relative 1e-4 (observed ≤ 2e-5, and ≤ 2e-6 for the gradient norm);
rewards, judge metrics and held-out metrics — which a wrong update would move — are compared exactly.
"""

import math
from pathlib import Path

import pytest
import torch

from rewardzoo.core.logger import read_metrics
from rewardzoo.recipes import make_trainer
from rewardzoo.zoo import load_config

GOLDEN = Path(__file__).parent / "golden"
ROUNDING = {f"policy/{k}" for k in (
    "loss", "entropy", "kl", "ratio_mean", "clip_low_frac", "clip_high_frac", "grad_norm")}


@pytest.fixture
def one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.mark.parametrize("recipe", ["rlvr_multiplication", "ral_multiplication"])
def test_metrics_identical_to_the_recording(recipe, tmp_path, one_thread):
    cfg = load_config(GOLDEN / f"{recipe}.config.yaml", [f"run_dir={tmp_path / 'run'}", f"sft.cache_dir={tmp_path / 'sft'}"])
    make_trainer(cfg).train()
    got = read_metrics(tmp_path / "run" / "metrics.jsonl")
    want = read_metrics(GOLDEN / f"{recipe}.metrics.jsonl")
    assert [r["step"] for r in got] == [r["step"] for r in want]
    for g, w in zip(got, want):
        keys = {k for k in w if not k.startswith("time/")}
        assert keys <= set(g), f"step {w['step']}: keys missing now: {sorted(keys - set(g))}"
        for key in sorted(keys):
            if key in ROUNDING:
                assert math.isclose(g[key], w[key], rel_tol=1e-4, abs_tol=1e-12), f"step {w['step']} {key}: {g[key]} vs {w[key]}"
            else:
                assert g[key] == w[key], f"step {w['step']} {key}: now {g[key]}, recorded {w[key]}"
