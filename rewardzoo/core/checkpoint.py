"""Atomic checkpoints: written to a temporary directory, then renamed into place.

Layout of ``run_dir/checkpoints/step_000100/``::

    policy/            save_pretrained of the policy (adapters only with LoRA) + tokenizer
    optimizer.pt       optimizer state
    scheduler.pt       learning-rate scheduler state
    reward.pt          the reward's state_dict (judges, buffers, curricula, generators)
    rng_<rank>.pt      Python, NumPy and torch RNG states of each process
    trainer_state.json {"step": 100}

A checkpoint directory exists under its final name only once it is complete, so a run killed at
any moment leaves either the previous checkpoint or the new one, never a torn one.
"""

from __future__ import annotations

import json
import random
import re
import shutil
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import load_file

_STEP_DIR = re.compile(r"step_(\d+)$")


def rng_state() -> dict:
    """The RNG states of this process."""
    return {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state(),
            "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None}


def set_rng_state(state: dict) -> None:
    """Restore what :func:`rng_state` returned."""
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if state.get("cuda") is not None and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def checkpoints(run_dir: Path) -> list[Path]:
    """Complete checkpoints of a run, oldest first."""
    root = Path(run_dir) / "checkpoints"
    if not root.is_dir():
        return []
    found = [p for p in root.iterdir() if p.is_dir() and _STEP_DIR.match(p.name) and (p / "trainer_state.json").exists()]
    return sorted(found, key=lambda p: int(_STEP_DIR.match(p.name).group(1)))


def save_checkpoint(run_dir: Path, step: int, *, policy, tokenizer, optimizer, scheduler, reward, accelerator,
                    keep: int = 2) -> Path:
    """Write a checkpoint of ``step`` atomically (every process calls this; the main one renames)."""
    root = Path(run_dir) / "checkpoints"
    final = root / f"step_{step:06d}"
    tmp = root / f".tmp-step_{step:06d}"
    if accelerator.is_main_process:
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        policy.save_pretrained(tmp / "policy", safe_serialization=True)
        tokenizer.save_pretrained(tmp / "policy")
        torch.save(optimizer.state_dict(), tmp / "optimizer.pt")
        torch.save(scheduler.state_dict(), tmp / "scheduler.pt")
        torch.save(reward.state_dict(), tmp / "reward.pt")
    accelerator.wait_for_everyone()
    torch.save(rng_state(), tmp / f"rng_{accelerator.process_index}.pt")
    accelerator.wait_for_everyone()
    if accelerator.is_main_process:
        (tmp / "trainer_state.json").write_text(json.dumps({"step": step}))
        shutil.rmtree(final, ignore_errors=True)
        tmp.rename(final)
        for old in checkpoints(run_dir)[:-keep]:
            shutil.rmtree(old, ignore_errors=True)
    accelerator.wait_for_everyone()
    return final


def load_policy_weights(policy: torch.nn.Module, directory: Path) -> None:
    """Load weights written by ``save_pretrained`` into an existing policy (full or LoRA)."""
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
        raise RuntimeError(f"checkpoint weights do not match the policy: missing {missing[:5]}, unexpected {unexpected[:5]}")


def load_checkpoint(path: Path, *, policy, optimizer, scheduler, reward, accelerator) -> int:
    """Restore everything :func:`save_checkpoint` wrote; returns the step to continue from."""
    load_policy_weights(policy, path / "policy")
    optimizer.load_state_dict(torch.load(path / "optimizer.pt", weights_only=False))
    scheduler.load_state_dict(torch.load(path / "scheduler.pt", weights_only=False))
    reward.load_state_dict(torch.load(path / "reward.pt", weights_only=False))
    rng_file = path / f"rng_{accelerator.process_index}.pt"
    if rng_file.exists():
        set_rng_state(torch.load(rng_file, weights_only=False))
    return json.loads((path / "trainer_state.json").read_text())["step"]
