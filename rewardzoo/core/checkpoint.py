"""Atomic checkpoints, and the rules that keep one run's directory from destroying or mixing data.

Layout of ``run_dir/checkpoints/step_000100/``::

    policy/            save_pretrained of the policy (adapters only with LoRA) + tokenizer
    optimizer.pt       optimizer state
    scheduler.pt       learning-rate scheduler state
    reward.pt          the reward's state_dict (judges, buffers, curricula, generators)
    rng_<rank>.pt      Python, NumPy and torch RNG states of each process
    trainer_state.json {"step": 100, "run_id": "…", "files": [every file above]}

(Under ``distributed.strategy=fsdp2`` the policy, optimizer and the reward's sharded tensors are in
``sharded/`` instead, written by every process: :mod:`rewardzoo.core.sharded_checkpoint`.)

Writing: everything goes to ``.tmp-step_…``, ``trainer_state.json`` last, then one rename; so a
run killed at any moment leaves the previous checkpoint or the new one, never a torn one.
Deleting (pruning, ``overwrite``): a checkpoint is first renamed to ``.trash-…`` (one atomic step)
and only then removed, so a kill mid-delete leaves no half-deleted ``step_…``; and
:func:`checkpoints` lists a checkpoint only when every file its ``trainer_state.json`` names is
there.

Ownership: each run has a ``run_id`` (kept across resumes, recorded in every checkpoint it writes),
and a run prunes only its own checkpoints.  :func:`check_run_dir`, called before any work, refuses
a fresh run into a directory that holds a run (unless ``overwrite=true``, which deletes it first:
:func:`clear_run_dir`) and refuses to resume when a setting that shapes the run differs from the
saved ``config.yaml`` (``CoreConfig.RESUMABLE`` lists those that may change).
"""

from __future__ import annotations

import errno
import fnmatch
import gc
import json
import re
import shutil
import traceback
import uuid
import warnings
from pathlib import Path

import torch
from omegaconf import OmegaConf
from safetensors.torch import load_file

from rewardzoo.core.config import ConfigError, CoreConfig, as_dict, resolved_run_dir
from rewardzoo.core.rng import rng_state, set_rng_state

_STEP_DIR = re.compile(r"step_(\d+)$")
LEGACY_FILES = ("policy", "optimizer.pt", "scheduler.pt", "reward.pt")  # checkpoints written before the manifest
RUN_FILES = (
    "checkpoints",
    "policy",
    "config.yaml",
    "metrics.jsonl",
    "eval_rows.jsonl",
    "samples.jsonl",
    "tensorboard",
    "wandb",
)
"""What a run writes into its run_dir (and all that ``overwrite=true`` deletes); ``policy`` is a finished run's
trained policy once a sweep has dropped its checkpoints (:func:`keep_only_policy`)."""
FULL_DISK_BYTES = 64 * 2**20
"""Free space under which a failed checkpoint write is put down to a full disk (the write may have failed with
only a torch serialisation message, ``unexpected pos``, rather than ``ENOSPC``)."""


def checkpoint_state(path: Path) -> dict | None:
    """The ``trainer_state.json`` of a checkpoint directory, or None when it is missing or unreadable."""
    try:
        return json.loads((Path(path) / "trainer_state.json").read_text())
    except (OSError, ValueError):
        return None


def is_complete(path: Path) -> bool:
    """Whether every file the checkpoint's ``trainer_state.json`` names is there."""
    state = checkpoint_state(path)
    return state is not None and all((Path(path) / name).exists() for name in state.get("files", LEGACY_FILES))


def checkpoints(run_dir: Path, run_id: str | None = None) -> list[Path]:
    """Complete checkpoints of a run directory (only those of ``run_id`` when given), oldest first."""
    root = Path(run_dir) / "checkpoints"
    if not root.is_dir():
        return []
    found = [p for p in root.iterdir() if p.is_dir() and _STEP_DIR.match(p.name) and is_complete(p)]
    if run_id is not None:
        found = [p for p in found if checkpoint_state(p).get("run_id") == run_id]
    return sorted(found, key=lambda p: int(_STEP_DIR.match(p.name).group(1)))


def remove_tree(path: Path) -> None:
    """Delete a directory by renaming it to ``.trash-…`` first (atomic), then removing that; leftover
    trash of an earlier kill is removed too."""
    path = Path(path)
    if path.exists():
        trash = path.with_name(f".trash-{path.name}-{uuid.uuid4().hex[:8]}")
        path.rename(trash)
    for old in path.parent.glob(".trash-*"):
        shutil.rmtree(old, ignore_errors=True)


def new_run_id() -> str:
    """A fresh run id (recorded in every checkpoint the run writes)."""
    return uuid.uuid4().hex


def save_checkpoint(
    run_dir: Path,
    step: int,
    *,
    policy,
    tokenizer,
    optimizer,
    scheduler,
    reward,
    accelerator,
    keep: int = 2,
    run_id: str | None = None,
) -> Path:
    """Write a checkpoint of ``step`` atomically (every process calls this; the main one writes the
    policy, optimizer, scheduler and reward, and renames), then prune this run's own checkpoints
    beyond the ``keep`` newest."""

    def write(tmp: Path) -> None:
        if accelerator.is_main_process:
            policy.save_pretrained(tmp / "policy", safe_serialization=True)
            tokenizer.save_pretrained(tmp / "policy")
            torch.save(optimizer.state_dict(), tmp / "optimizer.pt")
            torch.save(scheduler.state_dict(), tmp / "scheduler.pt")
            torch.save(reward.state_dict(), tmp / "reward.pt")

    return write_atomically(run_dir, step, write, accelerator=accelerator, keep=keep, run_id=run_id)


def write_atomically(run_dir: Path, step: int, write, *, accelerator, keep: int, run_id: str | None) -> Path:
    """The checkpoint protocol around ``write(tmp)``, which every process calls to put what it holds
    into the temporary directory: then each process's RNG states, ``trainer_state.json`` (the
    manifest) last, one rename by the main process, and pruning of this run's checkpoints beyond
    ``keep``."""
    root = Path(run_dir) / "checkpoints"
    final = root / f"step_{step:06d}"
    tmp = root / f".tmp-step_{step:06d}"
    if accelerator.is_main_process:
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
    accelerator.wait_for_everyone()
    try:
        write(tmp)
        torch.save(rng_state(), tmp / f"rng_{accelerator.process_index}.pt")
    except (OSError, RuntimeError) as err:
        raise disk_full_error(err, root, step) from err
    accelerator.wait_for_everyone()
    if accelerator.is_main_process:
        files = sorted(str(p.relative_to(tmp)) for p in tmp.rglob("*") if p.is_file())
        (tmp / "trainer_state.json").write_text(json.dumps({"step": step, "run_id": run_id, "files": files}))
        remove_tree(final)
        tmp.rename(final)
        for old in checkpoints(run_dir, run_id=run_id)[:-keep]:
            remove_tree(old)
    accelerator.wait_for_everyone()
    return final


def disk_full_error(err: BaseException, root: Path, step: int) -> BaseException:
    """The error to raise for a checkpoint write that failed with ``err``: when the disk is full (``ENOSPC``, or
    less than :data:`FULL_DISK_BYTES` left), an ``OSError`` that says so and what to change, after deleting the
    partial write so the space comes back; any other failure is ``err`` itself.  The run's earlier checkpoints
    are untouched either way."""
    tmp = root / f".tmp-step_{step:06d}"
    written = sum(p.stat().st_size for p in tmp.rglob("*") if p.is_file()) if tmp.is_dir() else 0
    free = shutil.disk_usage(root).free
    if getattr(err, "errno", None) != errno.ENOSPC and free >= FULL_DISK_BYTES:
        return err
    chained: BaseException | None = err
    while chained is not None:  # torch's failed zip writer keeps its file open from these frames: let it close
        traceback.clear_frames(chained.__traceback__)
        chained = chained.__context__
    gc.collect()
    shutil.rmtree(tmp, ignore_errors=True)
    newest = checkpoints(root.parent)
    kept, then = (
        (f"the newest complete checkpoint, {newest[-1].name}, is intact", "with resume=true to continue from it")
        if newest
        else ("no earlier checkpoint", "again (a run that fails before its first checkpoint starts afresh)")
    )
    return OSError(
        errno.ENOSPC,
        f"the disk under {root} is full: writing checkpoint step {step} stopped after {written / 2**20:.1f} MiB "
        f"with {free / 2**20:.0f} MiB left ({kept}; the partial write was deleted). Free space there, or keep "
        f"fewer checkpoints (keep_checkpoints=1) or write them less often (checkpoint_every=N), or point run_dir "
        f"at a larger disk; then run the same command {then}",
    )


def keep_only_policy(run_dir: Path) -> Path | None:
    """Drop a finished run's checkpoints but the trained policy of the newest: its ``policy/`` (the
    ``save_pretrained`` directory: adapters only under LoRA) moves to ``run_dir/policy`` first, then
    ``checkpoints/`` goes.  What a sweep keeps of a run whose table needs only its metrics (``rewardzoo
    leaderboard`` without ``--keep-checkpoints``).  Returns ``run_dir/policy``, or None when the run has no
    complete checkpoint or its newest is sharded (FSDP2, no ``policy/``), which are left as they are."""
    run_dir = Path(run_dir)
    found = checkpoints(run_dir)
    if not found or not (found[-1] / "policy").is_dir():
        return None
    target = run_dir / "policy"
    remove_tree(target)
    (found[-1] / "policy").rename(target)  # a kill from here on leaves the policy and an incomplete checkpoint
    remove_tree(run_dir / "checkpoints")
    return target


def load_policy_weights(policy: torch.nn.Module, directory: Path) -> None:
    """Load weights written by ``save_pretrained`` into an existing policy (full or LoRA); a sharded
    checkpoint's (FSDP2) ``policy/``: :func:`~rewardzoo.core.sharded_checkpoint.load_any_policy_weights`."""
    directory = Path(directory)
    adapter = directory / "adapter_model.safetensors"
    if adapter.exists():
        from peft import set_peft_model_state_dict

        result = set_peft_model_state_dict(policy, load_file(adapter))
        unexpected = getattr(result, "unexpected_keys", [])
        if unexpected:
            raise RuntimeError(f"checkpoint adapters do not match the policy: unexpected {unexpected[:5]}")
        return
    state = {}
    for shard in sorted(directory.glob("model*.safetensors")):
        state.update(load_file(shard))
    if not state:
        raise FileNotFoundError(f"no model weights (*.safetensors) in {directory}")
    missing, unexpected = policy.load_state_dict(state, strict=False)
    tied = set(getattr(policy, "_tied_weights_keys", None) or [])
    if unexpected or [k for k in missing if k not in tied]:
        raise RuntimeError(
            f"checkpoint weights do not match the policy: missing {missing[:5]}, unexpected {unexpected[:5]}"
        )


def load_checkpoint(path: Path, *, policy, optimizer, scheduler, reward, accelerator) -> int:
    """Restore everything :func:`save_checkpoint` wrote; returns the step to continue from (the run id
    is in :func:`checkpoint_state`)."""
    load_policy_weights(policy, path / "policy")
    optimizer.load_state_dict(torch.load(path / "optimizer.pt", weights_only=False))
    scheduler.load_state_dict(torch.load(path / "scheduler.pt", weights_only=False))
    reward.load_state_dict(torch.load(path / "reward.pt", weights_only=False))
    return restore_rng(path, accelerator)


def restore_rng(path: Path, accelerator) -> int:
    """Restore this process's RNG states from checkpoint ``path`` (when it holds them); returns the
    checkpoint's step."""
    rng_file = Path(path) / f"rng_{accelerator.process_index}.pt"
    if rng_file.exists():
        set_rng_state(torch.load(rng_file, weights_only=False))
    return json.loads((Path(path) / "trainer_state.json").read_text())["step"]


# ---------------------------------------------------------------------------------------- the run directory
def run_data(run_dir: Path) -> list[str]:
    """The things in ``run_dir`` that a run wrote (:data:`RUN_FILES`; an empty checkpoints/ does not count)."""
    run_dir = Path(run_dir)
    found = [name for name in RUN_FILES if (run_dir / name).exists()]
    if "checkpoints" in found and not any((run_dir / "checkpoints").iterdir()):
        found.remove("checkpoints")
    return found


def flatten(tree: dict, prefix: str = "") -> dict:
    """A nested dict as ``{"dotted.key": leaf}``."""
    out = {}
    for key, value in tree.items():
        if isinstance(value, dict):
            out.update(flatten(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def resume_changes(saved: dict, current: dict, resumable: tuple[str, ...]) -> tuple[list[str], list[str]]:
    """(refused, applied) differences between the saved and the current config, as ``key: old → new``
    lines: refused when the key matches none of the ``resumable`` patterns.  A key on one side only
    (a setting added or removed by another rewardzoo version) is applied with the current value."""
    old, new = flatten(saved), flatten(current)
    refused, applied = [], []
    for key in sorted((set(old) | set(new)) - {"resume", "overwrite"}):
        if key in old and key in new and old[key] == new[key]:
            continue
        line = f"{key}: {old.get(key, '<not saved>')!r} → {new.get(key, '<not set>')!r}"
        both = key in old and key in new
        (refused if both and not any(fnmatch.fnmatchcase(key, p) for p in resumable) else applied).append(line)
    return refused, applied


def check_run_dir(cfg: CoreConfig) -> None:
    """Refuse, before any work, a run that would destroy or mix another run's data.

    * fresh (``resume=false``) into a run_dir that holds a run: refused unless ``overwrite=true``;
    * ``resume=true``: needs a complete checkpoint and ``config.yaml``, and every difference from the
      saved config must be in ``RESUMABLE`` (those are applied, and said in a warning); any other is
      refused whole, naming each key.
    """
    run_dir = resolved_run_dir(cfg)
    if not cfg.resume:
        found = run_data(run_dir)
        if found and not cfg.overwrite:
            raise ConfigError(
                f"run_dir {str(run_dir)!r} already holds a run ({', '.join(found)}); a fresh run would "
                f"mix with or destroy it. Choose: resume=true to continue it, run_dir=<a new directory>, "
                f"or overwrite=true to DELETE it and start again"
            )
        return
    if not checkpoints(run_dir):
        kept = (
            f" (a sweep kept only the finished run's trained policy, {run_dir / 'policy'}: train on from it with "
            f"init_from={run_dir / 'policy'} run_dir=<a new directory>)"
            if (run_dir / "policy").is_dir()
            else ""
        )
        raise ConfigError(
            f"resume=true but {run_dir}/checkpoints holds no complete checkpoint{kept}; run without "
            f"resume=true to start fresh (overwrite=true if run_dir holds a run)"
        )
    saved_path = run_dir / "config.yaml"
    if not saved_path.exists():
        raise ConfigError(
            f"resume=true but {saved_path} is missing, so the settings of the run cannot be checked; "
            f"start a new run (init_from=<checkpoint>/policy run_dir=<a new directory>)"
        )
    saved = OmegaConf.to_container(OmegaConf.load(saved_path))
    refused, applied = resume_changes(saved, as_dict(cfg), type(cfg).RESUMABLE)
    if refused:
        raise ConfigError(
            f"resume=true with settings that differ from {saved_path}, which would make it a different "
            f"experiment: {'; '.join(refused)}. Set them back, or start a new run from the checkpoint "
            f"(init_from=<checkpoint>/policy run_dir=<a new directory>)"
        )
    if applied:
        warnings.warn(f"resuming {run_dir} with changed settings, applied: {'; '.join(applied)}", stacklevel=2)


def clear_run_dir(run_dir: Path) -> None:
    """Delete what a run wrote into ``run_dir`` (:data:`RUN_FILES`, and the evaluations of ``rewardzoo
    eval`` in ``eval/``), checkpoints first; other files stay."""
    run_dir = Path(run_dir)
    root = run_dir / "checkpoints"
    if root.is_dir():
        for path in list(root.iterdir()):
            remove_tree(path) if path.is_dir() else path.unlink()
    for name in (*RUN_FILES, "eval"):
        path = run_dir / name
        if path.is_dir():
            remove_tree(path)
        elif path.exists():
            path.unlink()
