"""Checkpoints of a sharded run (``distributed.strategy=fsdp2``) through ``torch.distributed.checkpoint``
(DCP), and their export to a plain ``save_pretrained`` directory.

Layout of ``run_dir/checkpoints/step_000100/``::

    sharded/           DCP, written by every process (its own shards, in parallel): the policy's
                       weights ("policy.…", frozen LoRA base included), its optimizer state
                       ("optimizer.…"), and the reward's sharded tensors ("reward.…": a sharded judge's
                       weights and moments)
    policy/            config, generation config, tokenizer (+ adapter_config.json with LoRA): no weights
    scheduler.pt       learning-rate scheduler state
    reward.pt          the reward's state_dict with each sharded tensor replaced by the mark "<sharded>"
    rng_<rank>.pt      Python, NumPy and torch RNG states of each process
    trainer_state.json {"step": 100, "run_id": "…", "files": [every file above]}

It is written and renamed atomically, listed and pruned exactly as a DDP checkpoint
(:func:`~rewardzoo.core.checkpoint.write_atomically`).  Resuming (:func:`load_sharded_checkpoint`)
needs the same number of processes and the same settings (``CoreConfig.RESUMABLE``); it continues
exactly.  Nothing gathers the full model on one process while training: each process writes and
reads its own shards.

Reading without the run: :func:`read_full_policy` assembles the full weights in one process (no
process group) from every shard, which is what ``rewardzoo eval RUN_DIR`` / ``generate RUN_DIR``
do through :func:`~rewardzoo.core.sharded_checkpoint.load_any_policy_weights`; :func:`export_pretrained` writes
them as a plain transformers directory (LoRA adapters merged into the base weights).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import torch
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.metadata import TensorStorageMetadata
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict
from torch.distributed.tensor import DTensor

from rewardzoo.core.checkpoint import load_policy_weights, restore_rng, write_atomically
from rewardzoo.core.distributed import load_full_state
from rewardzoo.core.models import causal_lm, is_peft

SHARDED_DIR = "sharded"
SHARDED_MARK = "<sharded>"  # where a sharded tensor of the reward's state was, in reward.pt


def is_sharded_checkpoint(path: Path) -> bool:
    """Whether checkpoint directory ``path`` was written by a sharded run."""
    return (Path(path) / SHARDED_DIR / ".metadata").is_file()


def split_sharded(tree, path: str = "") -> tuple[object, dict[str, DTensor]]:
    """(``tree`` with every DTensor replaced by :data:`SHARDED_MARK`, {path: DTensor}) for a nested
    state of dicts, lists and tuples; a path names the keys and indices down to the tensor
    (``judge/model/score.weight``)."""
    if isinstance(tree, DTensor):
        return SHARDED_MARK, {path: tree}
    shards: dict[str, DTensor] = {}
    if isinstance(tree, dict):
        out = {}
        for key, value in tree.items():
            out[key], found = split_sharded(value, f"{path}/{key}" if path else str(key))
            shards.update(found)
        return out, shards
    if isinstance(tree, (list, tuple)):
        items = []
        for i, value in enumerate(tree):
            item, found = split_sharded(value, f"{path}/{i}" if path else str(i))
            items.append(item)
            shards.update(found)
        return type(tree)(items), shards
    return tree, shards


def fill_sharded(tree, shards: dict[str, DTensor], path: str = ""):
    """The inverse of :func:`split_sharded`: every :data:`SHARDED_MARK` replaced by ``shards[path]``."""
    if isinstance(tree, str) and tree == SHARDED_MARK:
        return shards[path]
    if isinstance(tree, dict):
        return {k: fill_sharded(v, shards, f"{path}/{k}" if path else str(k)) for k, v in tree.items()}
    if isinstance(tree, (list, tuple)):
        return type(tree)(fill_sharded(v, shards, f"{path}/{i}" if path else str(i)) for i, v in enumerate(tree))
    return tree


def save_sharded_checkpoint(
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
    """Write a sharded checkpoint of ``step`` (every process calls this and writes its own shards; see
    the module docstring), then prune this run's checkpoints beyond the ``keep`` newest."""
    model_state, optim_state = get_state_dict(policy, optimizer)
    reward_state, reward_shards = split_sharded(reward.state_dict())

    def write(tmp: Path) -> None:
        dcp.save(
            {"policy": model_state, "optimizer": optim_state, "reward": reward_shards}, checkpoint_id=tmp / SHARDED_DIR
        )
        if accelerator.is_main_process:
            save_policy_files(policy, tokenizer, tmp / "policy")
            torch.save(scheduler.state_dict(), tmp / "scheduler.pt")
            torch.save(reward_state, tmp / "reward.pt")

    return write_atomically(run_dir, step, write, accelerator=accelerator, keep=keep, run_id=run_id)


def save_policy_files(policy: torch.nn.Module, tokenizer, directory: Path) -> None:
    """What a sharded checkpoint keeps beside the shards to rebuild the policy: the transformers config,
    generation config, tokenizer and, with LoRA, the adapter config."""
    lm = causal_lm(policy)
    lm.config.save_pretrained(directory)
    if getattr(lm, "generation_config", None) is not None:
        lm.generation_config.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    if is_peft(policy):
        policy.peft_config[policy.active_adapter].save_pretrained(directory)


def load_sharded_checkpoint(path: Path, *, policy, optimizer, scheduler, reward, accelerator) -> int:
    """Restore what :func:`save_sharded_checkpoint` wrote, every process its own shards, into the sharded
    policy, its optimizer, the scheduler and the reward (whose sharded judges take their shards);
    returns the step to continue from."""
    path = Path(path)
    model_state, optim_state = get_state_dict(policy, optimizer)
    _, reward_shards = split_sharded(reward.state_dict())  # this run's sharded tensors, loaded into in place
    dcp.load(
        {"policy": model_state, "optimizer": optim_state, "reward": reward_shards}, checkpoint_id=path / SHARDED_DIR
    )
    set_state_dict(policy, optimizer, model_state_dict=model_state, optim_state_dict=optim_state)
    scheduler.load_state_dict(torch.load(path / "scheduler.pt", weights_only=False))
    reward.load_state_dict(fill_sharded(torch.load(path / "reward.pt", weights_only=False), reward_shards))
    return restore_rng(path, accelerator)


def read_full(path: Path, prefix: str) -> dict[str, torch.Tensor]:
    """The full tensors saved under ``prefix`` ("policy", "optimizer" or "reward") in sharded checkpoint
    ``path``, assembled in this one process from every process's shards (no process group needed),
    keyed without the prefix."""
    reader = dcp.FileSystemReader(str(Path(path) / SHARDED_DIR))
    entries = reader.read_metadata().state_dict_metadata
    head = f"{prefix}."
    full = {
        key: torch.empty(meta.size, dtype=meta.properties.dtype)
        for key, meta in entries.items()
        if key.startswith(head) and isinstance(meta, TensorStorageMetadata)
    }
    dcp.load(full, storage_reader=reader, no_dist=True)
    return {key[len(head) :]: value for key, value in full.items()}


def read_full_policy(path: Path) -> dict[str, torch.Tensor]:
    """The policy's full state dict (under the names of the trained policy: a peft model's with LoRA)."""
    return read_full(path, "policy")


def export_pretrained(checkpoint: Path, out: Path) -> Path:
    """Write checkpoint ``checkpoint`` (sharded or not) as a plain transformers directory ``out`` that
    ``AutoModelForCausalLM.from_pretrained(out)`` loads, LoRA adapters merged into the base weights;
    returns ``out``.  Runs in one process on the CPU (it needs the memory of one full copy)."""
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    checkpoint, out = Path(checkpoint).expanduser(), Path(out).expanduser()
    source = checkpoint / "policy"
    if not is_sharded_checkpoint(checkpoint):
        if (source / "adapter_config.json").exists():
            raise ValueError(
                f"{source} holds LoRA adapters only (a DDP checkpoint): merge them into their base "
                f"model with peft (PeftModel.from_pretrained(base, {source}).merge_and_unload())"
            )
        shutil.copytree(source, out, dirs_exist_ok=True)
        return out
    state = read_full_policy(checkpoint)
    config = AutoConfig.from_pretrained(source)
    dtype = next(iter(state.values())).dtype
    model = AutoModelForCausalLM.from_config(config, dtype=dtype)
    if (source / "adapter_config.json").exists():
        from peft import LoraConfig, get_peft_model

        model = get_peft_model(model, LoraConfig.from_pretrained(str(source)))
    missing, unexpected = model.load_state_dict(state, strict=False)
    tied = set(getattr(causal_lm(model), "_tied_weights_keys", None) or [])
    if unexpected or [k for k in missing if k.split("base_model.model.")[-1] not in tied]:
        raise RuntimeError(
            f"{checkpoint} does not match its own config: missing {missing[:5]}, unexpected {unexpected[:5]}"
        )
    if is_peft(model):
        model = model.merge_and_unload()
    model.save_pretrained(out)
    AutoTokenizer.from_pretrained(source).save_pretrained(out)
    (out / "rewardzoo_export.json").write_text(json.dumps({"checkpoint": str(checkpoint)}))
    return out


def load_any_policy_weights(policy: torch.nn.Module, directory: Path) -> None:
    """Load a checkpoint's ``policy/`` into an existing policy in this one process: the full weights read
    from the shards of a sharded checkpoint (FSDP2), else :func:`~rewardzoo.core.checkpoint.load_policy_weights`."""
    directory = Path(directory)
    if not is_sharded_checkpoint(directory.parent):
        return load_policy_weights(policy, directory)
    missing, unexpected = load_full_state(policy, read_full_policy(directory.parent))
    if unexpected or missing:
        raise RuntimeError(
            f"sharded checkpoint {directory.parent} does not match the policy: missing {missing[:5]}, "
            f"unexpected {unexpected[:5]}"
        )
