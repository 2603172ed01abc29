"""Learning-rate schedules: the constant and cosine factors by hand, SFT's floored cosine unchanged,
and a real run that logs the cosine it was asked for."""

import math
from pathlib import Path

import pytest

from rewardzoo.core.config import ConfigError, lr_multiplier
from rewardzoo.core.logger import read_metrics
from rewardzoo.recipes import make_trainer


def test_cosine_by_hand():
    """warm-up 2, 6 steps: steps 0, 1 warm up (1/2, 2/2); then progress p = (s − 2)/4 and
    factor ½(1 + cos πp): s=2 → 1, s=3 → ½(1 + cos π/4) = 0.8536, s=4 → ½, s=5 → 0.1464."""
    got = [lr_multiplier(s, warmup_steps=2, total_steps=6, schedule="cosine") for s in range(6)]
    assert got == pytest.approx(
        [0.5, 1.0, 1.0, 0.5 * (1 + math.cos(math.pi / 4)), 0.5, 0.5 * (1 + math.cos(3 * math.pi / 4))]
    )
    assert [lr_multiplier(s, warmup_steps=2, total_steps=6, schedule="constant") for s in range(4)] == [0.5, 1, 1, 1]
    assert lr_multiplier(100, warmup_steps=2, total_steps=6, schedule="cosine") == pytest.approx(0.0)


def test_sft_floor_keeps_the_old_formula():
    """The SFT warm start's schedule (cosine to 10%) as it was written before it moved here."""
    warm, steps = 20, 300
    for step in (0, 19, 20, 150, 299):
        old = (
            (step + 1) / warm
            if step < warm
            else 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * (step - warm) / (steps - warm)))
        )
        assert lr_multiplier(step, warmup_steps=warm, total_steps=steps, schedule="cosine", floor=0.1) == pytest.approx(
            old
        )


def test_a_run_logs_the_cosine_learning_rate(fast_config):
    cfg = fast_config("steps=4", "grpo.lr=0.001", "grpo.warmup_steps=1", "grpo.lr_schedule=cosine", "eval.every=0")
    make_trainer(cfg).train()
    lrs = [row["policy/lr"] for row in read_metrics(Path(cfg.run_dir) / "metrics.jsonl") if "policy/lr" in row]
    # the logged lr is the one after each step's scheduler.step(): factors of steps 1..4 of a 4-step run
    assert lrs == pytest.approx(
        [1e-3 * lr_multiplier(s, warmup_steps=1, total_steps=4, schedule="cosine") for s in range(1, 5)]
    )


def test_unknown_schedule_is_rejected(fast_config):
    with pytest.raises(ConfigError, match="grpo.lr_schedule must be one of constant, cosine"):
        fast_config("grpo.lr_schedule=linear")
