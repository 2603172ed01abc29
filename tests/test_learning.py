"""Slow end-to-end learning runs (``make test-slow``): the recipes must actually learn.

Each run is the recipe as shipped, shortened, with its own SFT warm start built in a temporary
cache; the assertions are on the held-out metric the recipe reports and on the parameters.
"""

import pytest
import torch

from rewardzoo.core.logger import read_metrics
from rewardzoo.recipes import make_trainer
from rewardzoo.zoo import load_config

pytestmark = pytest.mark.slow


def run(tmp_path, recipe: str, *overrides: str):
    cfg = load_config(
        recipe,
        [
            f"run_dir={tmp_path / 'run'}",
            f"sft.cache_dir={tmp_path / 'sft'}",
            "logging.progress=false",
            "logging.tensorboard=false",
            "checkpoint_every=0",
            *overrides,
        ],
    )
    trainer = make_trainer(cfg)
    before = {n: p.detach().clone() for n, p in trainer.policy.named_parameters()}
    trainer.train()
    unchanged = [n for n, p in trainer.policy.named_parameters() if torch.equal(before[n], p.detach())]
    curve = [r["eval/accuracy"] for r in read_metrics(trainer.run_dir / "metrics.jsonl") if "eval/accuracy" in r]
    return curve, unchanged


def test_rlvr_multiplication_raises_held_out_accuracy(tmp_path):
    curve, unchanged = run(tmp_path, "algorithms/rlvr_multiplication.yaml", "steps=60")
    assert not unchanged, f"parameters that did not change: {unchanged}"
    assert max(curve[1:]) >= curve[0] + 0.05, f"held-out accuracy by eval: {curve}"


def test_rlvr_countdown_raises_held_out_accuracy(tmp_path):
    curve, unchanged = run(tmp_path, "algorithms/rlvr_countdown.yaml", "steps=100")
    assert not unchanged, f"parameters that did not change: {unchanged}"
    assert max(curve[1:]) >= curve[0] + 0.03, f"held-out accuracy by eval: {curve}"


def test_ral_multiplication_trains_its_judge_and_moves_the_policy(tmp_path):
    curve, unchanged = run(tmp_path, "algorithms/ral_multiplication.yaml", "steps=20", "reward.ral.warmup_steps=100")
    assert not unchanged, f"parameters that did not change: {unchanged}"
    rows = read_metrics(tmp_path / "run" / "metrics.jsonl")
    assert rows[0]["warmup/judge/accuracy"] > 0.6  # the judge has learned something before RL starts
    assert sum(r.get("judge/updated", 0) for r in rows) > 0
