"""benchmarks/real_judge_control.py: the AUC with its bootstrap over prompts, against a hand computation."""

import importlib.util
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def control(monkeypatch):
    """The script, imported from benchmarks/ with its sibling ral_capacity (both are scripts, not the package)."""
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    spec = importlib.util.spec_from_file_location("real_judge_control", ROOT / "benchmarks" / "real_judge_control.py")
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "real_judge_control", module)
    spec.loader.exec_module(module)
    return module


def test_auc_interval_is_the_pooled_auc_with_bounds_around_it(control):
    """Three prompts, right answers scored 3, 2 and 0.5, wrong ones 1 and 0: AUC = (2 + 2 + 1) / 6 pairs won."""
    probe = control.Probe(
        prompts=["a", "a", "b", "b", "c"],
        answers=["1", "2", "3", "4", "5"],
        correct=[True, False, True, False, True],
        warmup=[],
    )
    z = torch.tensor([3.0, 1.0, 2.0, 0.0, 0.5])
    value, low, high = control.auc_interval(probe, z, n_boot=200)
    assert value == pytest.approx(5 / 6)
    assert 0.0 <= low <= value <= high <= 1.0


def test_a_perfect_judge_has_a_degenerate_interval_at_one(control):
    """Every right answer above every wrong one: every resample with both classes gives AUC 1."""
    probe = control.Probe(prompts=list("aabbcc"), answers=list("123456"), correct=[True, False] * 3, warmup=[])
    z = torch.tensor([5.0, 0.0, 4.0, 1.0, 3.0, 2.0])
    assert control.auc_interval(probe, z, n_boot=100) == (1.0, 1.0, 1.0)


def test_every_setting_names_only_judge_keys(control):
    """The settings are judge keys the config accepts (a typo would fail before any work, at load_config); the
    models are swapped for the tiny one, so the check needs no fetched model."""
    from rewardzoo.zoo import load_config

    tiny = ["model.name=tiny", "task.chat=false", control.JUDGE + "model=tiny", control.JUDGE + "chat_template=false"]
    for keys in control.SETTINGS.values():
        cfg = load_config(control.RECIPE, [*tiny, *(control.JUDGE + k for k in keys)])
        assert cfg.reward.name == "ral"
