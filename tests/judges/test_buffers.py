"""Replay buffers: capacity, eviction rules, sampling, the replay share, determinism and state."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rewardzoo.judges.buffers import ReplayBuffer, replay_count


def test_fifo_keeps_the_most_recent_items():
    buf = ReplayBuffer(capacity=3, eviction="fifo")
    buf.add(range(5))
    assert buf.items == [2, 3, 4] and len(buf) == 3 and buf.seen == 5


def test_reservoir_keeps_capacity_and_only_seen_items():
    buf = ReplayBuffer(capacity=4, eviction="reservoir", seed=1)
    buf.add(range(100))
    assert len(buf) == 4 and buf.seen == 100
    assert len(set(buf.items)) == 4 and set(buf.items) <= set(range(100))


def test_reservoir_is_uniform_over_everything_ever_added():
    """Each of 10 items survives in a 2-slot reservoir with probability 2/10; over 2,000 seeds the
    count of each item is Binomial(2000, 0.2): mean 400, sd ≈ 18, so [320, 480] is > 4 sd wide."""
    counts = [0] * 10
    for seed in range(2000):
        buf = ReplayBuffer(capacity=2, eviction="reservoir", seed=seed)
        buf.add(range(10))
        for item in buf.items:
            counts[item] += 1
    assert all(320 <= c <= 480 for c in counts), counts


def test_sample_is_distinct_capped_and_deterministic():
    a, b = ReplayBuffer(10, seed=3), ReplayBuffer(10, seed=3)
    for buf in (a, b):
        buf.add([("p", str(i)) for i in range(6)])
    draw = a.sample(4)
    assert draw == b.sample(4)
    assert len(draw) == 4 and len(set(draw)) == 4
    assert sorted(a.sample(100)) == sorted(a.items)  # capped at len
    assert a.sample(0) == [] and ReplayBuffer(3).sample(5) == []
    assert ReplayBuffer(10, seed=4).sample(0) == []


def test_different_seeds_sample_differently():
    draws = set()
    for seed in range(5):
        buf = ReplayBuffer(50, seed=seed)
        buf.add(range(50))
        draws.add(tuple(buf.sample(5)))
    assert len(draws) == 5


@pytest.mark.parametrize("n, fraction, expected", [(6, 0.25, 2), (6, 0.0, 0), (10, 0.5, 10), (3, 0.75, 9)])
def test_replay_count_by_hand(n, fraction, expected):
    """replayed / (fresh + replayed) = fraction: 2/(6+2) = 0.25, 10/20 = 0.5, 9/12 = 0.75."""
    assert replay_count(n, fraction) == expected


def test_replay_count_rejects_fraction_one():
    with pytest.raises(ValueError, match=r"\[0, 1\)"):
        replay_count(4, 1.0)


@settings(max_examples=30, deadline=None)
@given(
    eviction=st.sampled_from(["fifo", "reservoir"]),
    capacity=st.integers(1, 8),
    first=st.lists(st.integers(), max_size=20),
    second=st.lists(st.integers(), max_size=20),
)
def test_state_dict_round_trip_continues_exactly(eviction, capacity, first, second):
    a = ReplayBuffer(capacity, eviction, seed=7)
    a.add(first)
    b = ReplayBuffer(capacity, eviction, seed=99)
    b.load_state_dict(a.state_dict())
    for buf in (a, b):
        buf.add(second)
    assert a.items == b.items and a.seen == b.seen
    assert a.sample(3) == b.sample(3)


def test_bad_settings_and_mismatched_state_raise():
    with pytest.raises(ValueError, match="capacity"):
        ReplayBuffer(0)
    with pytest.raises(ValueError, match="eviction"):
        ReplayBuffer(3, eviction="lifo")
    with pytest.raises(ValueError, match="settings it was saved with"):
        ReplayBuffer(3).load_state_dict(ReplayBuffer(4).state_dict())
