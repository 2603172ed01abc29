"""Work that the runs of one sweep repeat exactly, done by the first of them and read by the others
(``share_dir``: off by default; the leaderboard sets it for its runs):

    step-0 evaluation   the starting policy's held-out completions (and a policy-scoring task's metrics)
                        at step 0: the same for every run of a seed with the same warm start, task,
                        held-out settings and sampling — whatever the reward or the policy's optimiser
    reward warm-up      a learned reward's warm-up rounds on the starting policy (its state after them,
                        and their last statistics): the same for runs that differ only in what the
                        warm-up never reads — the policy's optimisation, the evaluation, how long the
                        run lasts, and the reward's own after-warm-up switches (its ``WARMUP_FREE``)

Each entry is keyed by a hash of every setting that can shape it (:func:`work_key`: the whole run
config minus the keys named as not shaping it, plus the prompts' own text and the starting weights'
file identity), written once (atomically: concurrent runs may both compute it, the first file
wins, both identical) and read with ``torch.load``.  The directory belongs to one sweep and one code
version: a cache across code changes would replay results the new code would not compute.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import uuid
from pathlib import Path
from typing import Any

import torch

from rewardzoo.core.checkpoint import flatten
from rewardzoo.core.config import as_dict
from rewardzoo.core.types import ConfiguredReward, WarmupFreeSettings

FORMAT_VERSION = 1


def _selected(config: dict, drop: tuple[str, ...], keep: tuple[str, ...] = ()) -> dict:
    """``config`` as ``{"dotted.key": leaf}`` (:func:`~rewardzoo.core.checkpoint.flatten`) without the keys
    matching a ``drop`` pattern, unless they match a ``keep`` pattern (fnmatch patterns, as
    ``CoreConfig.RESUMABLE``)."""

    def match(key: str, patterns: tuple[str, ...]) -> bool:
        return any(fnmatch.fnmatchcase(key, p) for p in patterns)

    return {k: v for k, v in flatten(config).items() if match(k, keep) or not match(k, drop)}


def weights_identity(path: str | Path | None) -> list:
    """What identifies a starting-weights directory's content cheaply: its path and each file's size and
    modification time (None: weights built from the seed)."""
    if not path:
        return []
    root = Path(path)
    files = sorted(p for p in root.rglob("*") if p.is_file()) if root.is_dir() else []
    return [str(root.resolve())] + [[str(p.relative_to(root)), p.stat().st_size, p.stat().st_mtime_ns] for p in files]


def work_key(name: str, config: dict, drop: tuple[str, ...], keep: tuple[str, ...] = (), **inputs: Any) -> str:
    """The hash of work ``name`` for a run config (a plain dict) without the dotted keys ``drop`` names
    but those ``keep`` names (fnmatch patterns), and the ``inputs`` that are not settings (prompts,
    starting weights)."""
    blob = json.dumps(
        {"work": name, "version": FORMAT_VERSION, "config": _selected(config, drop, keep), "inputs": inputs},
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


class SharedWork:
    """The entries of one sweep's ``share_dir`` (``None``: nothing is shared, every call computes)."""

    def __init__(self, root: str | Path | None):
        self.root = Path(root).expanduser() if root else None

    def path(self, name: str, key: str) -> Path | None:
        """Where the entry of work ``name`` under ``key`` lives (None when sharing is off)."""
        return None if self.root is None else self.root / f"{name}-{key}.pt"

    def load(self, name: str, key: str) -> dict | None:
        """The stored entry, or None (sharing off, or not computed yet)."""
        path = self.path(name, key)
        if path is None or not path.exists():
            return None
        return torch.load(path, map_location="cpu", weights_only=False)  # our own files, written by save

    def save(self, name: str, key: str, value: dict) -> None:
        """Store an entry atomically (a private temporary file renamed into place); a no-op when sharing is off."""
        path = self.path(name, key)
        if path is None:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}-{uuid.uuid4().hex[:8]}")
        try:
            torch.save(value, tmp)
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)


# Keys of a run config that shape neither piece of shared work: where and how long it runs, what it writes.
BOOKKEEPING = (
    "recipe.*",
    "run_dir",
    "resume",
    "overwrite",
    "steps",
    "checkpoint_every",
    "keep_checkpoints",
    "share_dir",
    "logging.*",
)
ROLLOUT_KEYS = ("grpo.batch_size", "grpo.group_size", "grpo.generation_chunk_prompts")  # the grpo keys a rollout reads
SCORING_KEYS = ("grpo.lean_forward", "grpo.micro_batch_size", "grpo.logprob_chunk_size")  # the policy's scoring's


def examples_digest(examples: list) -> str:
    """A hash of examples' prompts and references (what a piece of work reads of them)."""
    blob = json.dumps([[e.prompt, e.reference] for e in examples], default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


def step0_eval_key(config: dict, examples: list, init_dir: str | Path | None) -> str:
    """The key of the step-0 evaluation: the run config without its reward, bookkeeping, evaluation
    schedule and optimisation (every ``grpo`` key but those the policy's scoring reads), the held-out
    examples and the starting weights."""
    return work_key(
        "eval0",
        config,
        (*BOOKKEEPING, "reward.*", "eval.every", "grpo.*"),
        SCORING_KEYS,
        examples=examples_digest(examples),
        weights=weights_identity(init_dir),
    )


def warmup_key(config: dict, reward, prompts: list, init_dir: str | Path | None) -> str | None:
    """The key of a learned reward's warm-up, or None when the reward does not expose its settings
    (``reward.cfg``: a reward object built by hand may hold parts no config describes, so its warm-up
    is never shared).  The run config without bookkeeping, evaluation and every ``grpo`` key but the
    rollout's, and the reward's own settings without the ones its class declares the warm-up never
    reads (``WARMUP_FREE``, names in its section), with the RL prompts and the starting weights."""
    if not isinstance(reward, ConfiguredReward) or reward.cfg is None:
        return None
    settings = reward.cfg
    free = tuple(reward.WARMUP_FREE) if isinstance(reward, WarmupFreeSettings) else ()
    section = config.get("reward", {}).get("name")
    drop = (*BOOKKEEPING, "eval.*", "grpo.*", *(f"reward.{section}.{k}" for k in free if section))
    own = _selected(as_dict(settings), free)
    return work_key(
        "warmup",
        config,
        drop,
        ROLLOUT_KEYS,
        reward=[type(reward).__qualname__, own],
        prompts=examples_digest(prompts),
        weights=weights_identity(init_dir),
    )
