"""Supervised warm start on a task's demonstrations, cached by the settings that shape it.

Loss: the mean negative log-likelihood of the demonstration tokens (prompt tokens are context only;
the completion ends with EOS so the policy learns to stop), computed with the same fused
log-prob path as RL.  The result is saved with ``save_pretrained`` under
``sft.cache_dir/<task>-<hash>``, where the hash covers the model, the task's name, SFT settings,
seed and the demonstrations themselves (so an edited data file is noticed), so a recipe re-run reuses its warm
start and any change of those trains a new one.  The key has no thread count: on the CPU the warm
start trains under one intra-op thread whatever the caller's (float sums round by the number of
threads), so every caller of a key trains the same weights.  It has no number of processes either: a
warm start trained by N processes (each its share of a batch, gradients summed) equals one trained
by one process up to the rounding of those sums.

What is cached is always a complete model that loads offline: with LoRA the trained adapters are
merged into the base weights before saving (RL then adds fresh adapters on top, and its reference
policy — the adapters-disabled model — is the warm start, as without LoRA).  A warm start is
marked done (``sft_done.json``) only after its loss and every weight are finite and the saved
directory has been loaded back, offline, with identical weights; a failed one is never cached.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import shutil
import uuid
from pathlib import Path

import numpy as np
import torch
from accelerate import Accelerator
from tqdm.auto import tqdm

from rewardzoo.core.config import CoreConfig, as_dict, lr_multiplier
from rewardzoo.core.logger import MetricLogger
from rewardzoo.core.logprobs import PolicyLogProbs, pack_rows, tokenize_completions
from rewardzoo.core.models import LoraSettings, is_peft, load_policy, trainable_parameters
from rewardzoo.core.rng import one_cpu_thread
from rewardzoo.core.types import NonFiniteError, TaskProtocol

# Bumped when the SFT procedure changes, so cached warm starts are retrained (2: LoRA merged; 3: on the
# CPU trained under one intra-op thread: before, the caller's thread count decided the weights of a key).
SFT_FORMAT_VERSION = 3
SFT_READS_GRPO = ("micro_batch_size", "max_grad_norm")
"""The ``grpo`` settings SFT training reads (its micro-batches and gradient clipping), which its cache key
therefore covers; nothing else of ``grpo`` shapes a warm start."""


def sft_seed(cfg: CoreConfig) -> int:
    """The warm start's seed: ``sft.seed`` when set, else the run's seed."""
    return cfg.seed if cfg.sft.seed is None else cfg.sft.seed


def sft_cache_dir(cfg: CoreConfig, task: TaskProtocol) -> Path:
    """Where the warm start for these settings lives (the task enters through its name and the
    demonstrations themselves, which are all of it that SFT reads)."""
    sft = as_dict(cfg.sft)
    for key in ("cache_dir", "disjoint_rl_prompts", "seed"):  # not shaping it, or entering as "seed" below
        sft.pop(key)
    demos = [(e.prompt, e.demonstration) for e in task.train[: cfg.sft.n_examples or None]]
    grpo = {k: getattr(cfg.grpo, k) for k in SFT_READS_GRPO}
    key = {
        "model": as_dict(cfg.model),
        "task_name": task.name,
        "sft": sft,
        "seed": sft_seed(cfg),
        "version": SFT_FORMAT_VERSION,
        "grpo": grpo,
        "data": hashlib.sha256(json.dumps(demos).encode()).hexdigest(),
    }
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
    return Path(cfg.sft.cache_dir).expanduser() / f"{task.name}-{digest}"


def warm_start(cfg: CoreConfig, task: TaskProtocol, accelerator: Accelerator) -> Path:
    """The SFT warm start for ``cfg``: reused from the cache when present, else trained and saved."""
    out = sft_cache_dir(cfg, task)
    if (out / "sft_done.json").exists():
        return out
    model, tokenizer = load_policy(cfg.model, None, seed=sft_seed(cfg))
    model.to(accelerator.device)
    tmp = (
        out.parent / f".tmp-{out.name}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    )  # private: concurrent runs never share it
    stats = train_sft(cfg, task, model, tokenizer, accelerator, log_dir=tmp if accelerator.is_main_process else None)
    if accelerator.is_main_process:
        tmp.mkdir(parents=True, exist_ok=True)
        try:
            save_verified(model, tokenizer, cfg, tmp, stats)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        (tmp / "sft_done.json").write_text(json.dumps(stats))
        if out.exists() and not (out / "sft_done.json").exists():
            shutil.rmtree(out, ignore_errors=True)  # an incomplete directory of an older version
        try:
            tmp.rename(out)
        except OSError:  # another run finished the same warm start first: theirs is identical, keep it
            shutil.rmtree(tmp, ignore_errors=True)
    accelerator.wait_for_everyone()
    accelerator.free_memory()
    return out


def save_verified(model: torch.nn.Module, tokenizer, cfg: CoreConfig, directory: Path, stats: dict) -> None:
    """Save a trained warm start as a complete model (LoRA adapters merged) and prove it: a
    non-finite loss or weight is a :class:`NonFiniteError`, and the directory must load back
    offline, as RL will load it, with identical weights."""
    if is_peft(model):
        model = model.merge_and_unload()
    bad = [name for name, p in model.named_parameters() if not torch.isfinite(p).all()]
    if bad or not math.isfinite(stats["sft/loss"]):
        raise NonFiniteError(
            f"the SFT warm start diverged (loss {stats['sft/loss']}, non-finite weights {bad[:5]}); "
            f"nothing was cached: lower sft.lr or check the demonstrations"
        )
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    plain = dataclasses.replace(cfg.model, lora=LoraSettings(enabled=False), gradient_checkpointing=False)
    reloaded, _ = load_policy(plain, directory)
    saved = dict(model.named_parameters())
    loaded = dict(reloaded.named_parameters())
    differ = [n for n in saved if n not in loaded or not torch.equal(saved[n].detach().cpu(), loaded[n].detach())]
    if differ or len(loaded) != len(saved):
        raise RuntimeError(
            f"the saved SFT warm start in {directory} does not load back as trained ({differ[:5]}); nothing was cached"
        )


def train_sft(
    cfg: CoreConfig,
    task: TaskProtocol,
    model: torch.nn.Module,
    tokenizer,
    accelerator: Accelerator,
    log_dir: Path | None = None,
) -> dict[str, float]:
    """Train ``model`` in place on the task's demonstrations; returns the final loss.  On the CPU it
    trains under one intra-op thread (:func:`~rewardzoo.core.rng.one_cpu_thread`), whatever the
    caller's count, so a cached warm start is the same bits for every caller of its key."""
    with one_cpu_thread(accelerator.device):
        s = cfg.sft
        demos = task.train[: s.n_examples or None]
        prompts, comp_ids, comp_mask = tokenize_completions(
            [e.prompt for e in demos], [e.demonstration for e in demos], tokenizer
        )
        params = [p for _, p in trainable_parameters(model)]
        optimizer = torch.optim.AdamW(params, lr=s.lr, betas=(0.9, 0.99), weight_decay=s.weight_decay)

        scheduler = torch.optim.lr_scheduler.LambdaLR(
            optimizer,
            lambda step: lr_multiplier(
                step, warmup_steps=s.warmup_steps, total_steps=s.steps, schedule="cosine", floor=0.1
            ),
        )
        module, optimizer = accelerator.prepare(PolicyLogProbs(model), optimizer)
        world, rank = accelerator.num_processes, accelerator.process_index
        n, per = len(demos), math.ceil(s.batch_size / world)
        logger = MetricLogger(log_dir, tensorboard=False) if (log_dir and accelerator.is_main_process) else None
        bar = tqdm(
            range(s.steps),
            desc="sft",
            disable=not (cfg.logging.progress and accelerator.is_main_process),
            dynamic_ncols=True,
        )
        loss_value = float("nan")
        for step in bar:
            positions = range(step * s.batch_size, (step + 1) * s.batch_size)
            rows_global = []
            for pos in positions:
                epoch, i = divmod(pos, n)
                order = np.random.default_rng([sft_seed(cfg), 7, epoch]).permutation(n)
                rows_global.append(int(order[i]))
            rows = rows_global[rank * per : (rank + 1) * per]
            total_tokens = float(comp_mask[rows_global].sum())
            optimizer.zero_grad(set_to_none=True)
            micro = [rows[j : j + cfg.grpo.micro_batch_size] for j in range(0, len(rows), cfg.grpo.micro_batch_size)]
            loss_sum = 0.0
            for mb in micro:
                batch = pack_rows(prompts, comp_ids, comp_mask, mb, tokenizer.pad_token_id).to(accelerator.device)
                logp, _ = module(batch)  # [n, T]
                loss = -(logp * batch.mask).sum() / total_tokens * world
                accelerator.backward(loss)
                loss_sum += loss.item() / world
            if cfg.grpo.max_grad_norm:
                accelerator.clip_grad_norm_(params, cfg.grpo.max_grad_norm)
            optimizer.step()
            scheduler.step()
            loss_value = (
                float(accelerator.reduce(torch.tensor([loss_sum], device=accelerator.device), reduction="sum"))
                if world > 1
                else loss_sum
            )
            if logger is not None and (step % 20 == 0 or step == s.steps - 1):
                logger.log(step, {"sft/loss": loss_value, "sft/lr": scheduler.get_last_lr()[0]})
            bar.set_postfix(loss=f"{loss_value:.4f}", refresh=False)
        if logger is not None:
            logger.close()
        return {"sft/loss": loss_value}
