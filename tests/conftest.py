"""Shared fixtures: a tiny, fast training config for end-to-end tests."""

import gc
import os
import types

import pytest
import torch

from rewardzoo.zoo import load_config

if os.environ.get("PYTEST_XDIST_WORKER"):
    # Several test workers share the cores: one intra-op thread each avoids oversubscription.
    torch.set_num_threads(1)

FAST = [
    "sft.enabled=false",
    "eval.n_examples=16",
    "logging.progress=false",
    "logging.tensorboard=false",
    "grpo.batch_size=32",
    "grpo.micro_batch_size=16",
    "grpo.group_size=4",
    "sampling.max_new_tokens=4",
    "model.tiny.hidden_size=32",
    "model.tiny.intermediate_size=64",
    "model.tiny.num_layers=2",
]


@pytest.fixture
def fast_config(tmp_path):
    """``fast_config(*overrides)`` → a validated TrainConfig for a few-second run in tmp_path."""

    def make(*overrides: str):
        return load_config(
            "algorithms/rlvr_multiplication.yaml",
            [*FAST, f"run_dir={tmp_path / 'run'}", f"sft.cache_dir={tmp_path / 'sft'}", *overrides],
        )

    return make


@pytest.fixture
def fast_overrides() -> list[str]:
    """The ``key=value`` overrides behind :func:`fast_config`, for scripts that take them on a command line."""
    return list(FAST)


def _reachable(root, target) -> bool:
    """Whether ``target`` can be reached from ``root`` by following object references (module
    globals and classes are not followed: they are shared code, not the reward's state)."""
    seen, stack = set(), [root]
    while stack:
        obj = stack.pop()
        if obj is target:
            return True
        if id(obj) in seen or isinstance(obj, (types.ModuleType, type)):
            continue
        seen.add(id(obj))
        if isinstance(obj, types.FunctionType):
            stack.extend([c.cell_contents for c in obj.__closure__ or ()] + list(obj.__defaults__ or ()))
        else:
            stack.extend(gc.get_referents(obj))
    return False


@pytest.fixture
def reachable():
    """``reachable(root, target)``: whether ``target`` is reachable from ``root`` by object references
    (the "a reward cannot reach the verifier" tests)."""
    return _reachable
