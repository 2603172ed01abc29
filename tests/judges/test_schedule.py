"""The update gate's skip/streak logic and Polyak averaging, checked by hand."""

import pytest
import torch

from rewardzoo.judges.schedule import UpdateGate, parameter_distance, polyak_update


def test_gate_skips_above_threshold_at_most_max_streak_in_a_row():
    """threshold 0.8, α = 1 (the average is the last accuracy), streak cap 2:

    acc   0.9  0.9  0.9  0.9  0.5  0.9
    skip   y    y    n*   y    n    y      (* forced: two skips in a row already)
    streak 1    2    0    1    0    1
    """
    gate = UpdateGate(threshold=0.8, ema_rate=1.0, max_skip_streak=2)
    decisions, streaks = [], []
    for acc in [0.9, 0.9, 0.9, 0.9, 0.5, 0.9]:
        decisions.append(gate.step(acc))
        streaks.append(gate.streak)
    assert decisions == [False, False, True, False, True, False]
    assert streaks == [1, 2, 0, 1, 0, 1]
    assert gate.skips == 4
    assert gate.metrics() == {"gate_skipped": 1.0, "gate_streak": 1.0, "gate_skips": 4.0, "gate_ema_accuracy": 0.9}


def test_gate_moving_average_by_hand():
    """α = 0.5: ā = 1.0 → 0.5·1.0 + 0.5·0.5 = 0.75 → 0.5·0.75 + 0.5·0.95 = 0.85."""
    gate = UpdateGate(threshold=0.8, ema_rate=0.5, max_skip_streak=10)
    assert gate.step(1.0) is False  # ā = 1.0 > 0.8: skip
    assert gate.ema == 1.0
    assert gate.step(0.5) is True  # ā = 0.75: update
    assert gate.ema == pytest.approx(0.75)
    assert gate.step(0.95) is False  # ā = 0.85: skip
    assert gate.ema == pytest.approx(0.85)


def test_gate_never_skips_during_warm_up_but_tracks_the_average():
    gate = UpdateGate(threshold=0.5, ema_rate=1.0, max_skip_streak=3)
    assert all(gate.step(1.0, can_skip=False) for _ in range(5))
    assert gate.skips == 0 and gate.streak == 0 and gate.ema == 1.0
    assert gate.step(1.0) is False


@pytest.mark.parametrize("threshold, cap", [(0.8, 0), (1.0, 5)])
def test_gate_disabled_by_zero_cap_or_threshold_one(threshold, cap):
    gate = UpdateGate(threshold=threshold, ema_rate=1.0, max_skip_streak=cap)
    assert all(gate.step(1.0) for _ in range(5))


def test_gate_state_round_trip():
    gate = UpdateGate(0.7, 0.3, 3)
    for acc in [0.9, 0.8, 0.95]:
        gate.step(acc)
    other = UpdateGate(0.7, 0.3, 3)
    other.load_state_dict(gate.state_dict())
    assert [other.step(a) for a in [0.9, 0.9, 0.1]] == [gate.step(a) for a in [0.9, 0.9, 0.1]]
    assert other.state_dict() == gate.state_dict()


def test_gate_rejects_bad_settings():
    with pytest.raises(ValueError, match="ema_rate"):
        UpdateGate(0.8, 0.0, 2)
    with pytest.raises(ValueError, match="max_skip_streak"):
        UpdateGate(0.8, 0.5, -1)


def _pair():
    torch.manual_seed(0)
    a, b = torch.nn.BatchNorm1d(2), torch.nn.BatchNorm1d(2)
    with torch.no_grad():
        a.weight.copy_(torch.tensor([1.0, 2.0]))
        a.bias.copy_(torch.tensor([0.0, 0.0]))
        b.weight.copy_(torch.tensor([3.0, -2.0]))
        b.bias.copy_(torch.tensor([4.0, 0.0]))
        a.running_mean.copy_(torch.tensor([0.0, 10.0]))
        b.running_mean.copy_(torch.tensor([10.0, 0.0]))
        b.num_batches_tracked.fill_(7)
    return a, b


def test_polyak_by_hand():
    """τ = 0.25: weight (1−τ)·[1, 2] + τ·[3, −2] = [1.5, 1.0]; bias τ·[4, 0] = [1, 0];
    running_mean 0.75·[0, 10] + 0.25·[10, 0] = [2.5, 7.5]; the integer counter is copied (7).
    Distance before: ‖[−2, 4, −4, 0]‖ = 6; after: 0.75·6 = 4.5."""
    target, source = _pair()
    assert parameter_distance(target, source) == pytest.approx(6.0)
    polyak_update(target, source, 0.25)
    assert torch.allclose(target.weight, torch.tensor([1.5, 1.0]))
    assert torch.allclose(target.bias, torch.tensor([1.0, 0.0]))
    assert torch.allclose(target.running_mean, torch.tensor([2.5, 7.5]))
    assert int(target.num_batches_tracked) == 7
    assert parameter_distance(target, source) == pytest.approx(4.5)
    assert torch.equal(source.weight, torch.tensor([3.0, -2.0]))  # the source is untouched


def test_polyak_tau_one_copies_and_bad_tau_raises():
    target, source = _pair()
    polyak_update(target, source, 1.0)
    assert parameter_distance(target, source) == 0.0
    with pytest.raises(ValueError, match="tau"):
        polyak_update(target, source, 0.0)
