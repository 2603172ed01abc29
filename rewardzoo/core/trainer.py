"""The GRPO loop, shared by every reward.  One step (:meth:`Trainer.train_step`) reads top to bottom:

    rollouts, gen = self.rollout(step)                         # engine.generate → Rollouts (text)
    out           = self.score(rollouts)                       # reward.score (checked finite)
    learned       = self.reward.update(rollouts, out)          # learned rewards learn HERE
    adv           = compute_advantages(out.rewards, group_ids) # group-normalised advantages
    stats         = self.policy_step(gen, adv)                 # clipped surrogate, μ optimiser steps,
                                                               # engine.sync_weights(policy)

Distributed (``accelerate``): every process generates its share of the step's prompts, the texts
are gathered so that *every* process scores and updates the reward on the same global batch (so
learned rewards stay identical everywhere), and each process then trains on its own rows; the
loss of each micro-batch is divided by global counts, so the summed DDP update equals the
one-process update on the same global batch.

Generation is seeded per chunk of prompts by (seed, step, chunk), and prompts are drawn by
(seed, epoch): a run is reproducible, and resuming from a checkpoint continues exactly.
"""

from __future__ import annotations

import contextlib
import math
import time
from pathlib import Path
from typing import NamedTuple

import numpy as np
import torch
from accelerate import Accelerator
from accelerate.utils import gather_object
from tqdm.auto import tqdm

from rewardzoo.core.advantages import compute_advantages, group_mean_std
from rewardzoo.core.checkpoint import (
    check_run_dir,
    checkpoint_state,
    checkpoints,
    clear_run_dir,
    load_checkpoint,
    new_run_id,
    save_checkpoint,
)
from rewardzoo.core.config import (
    ConfigError,
    CoreConfig,
    as_dict,
    lr_multiplier,
    prompts_per_process,
    resolved_run_dir,
    to_yaml,
)
from rewardzoo.core.distributed import make_sharding, prepare_policy
from rewardzoo.core.engines import make_engine
from rewardzoo.core.interrupt import StopRequests
from rewardzoo.core.logger import MetricLogger, silence_library_progress_bars
from rewardzoo.core.logprobs import PackedBatch, PolicyLogProbs, pack_rows, tokenize_completions
from rewardzoo.core.loss import LossNormalizer, policy_loss, truncated_is_weights
from rewardzoo.core.memory import map_large_blocks, release_freed_memory, releases_heap
from rewardzoo.core.models import ReferencePolicy, causal_lm, load_policy, trainable_parameters
from rewardzoo.core.sharded_checkpoint import load_sharded_checkpoint, save_sharded_checkpoint
from rewardzoo.core.shared_work import SharedWork, step0_eval_key, warmup_key
from rewardzoo.core.types import (
    Example,
    Generation,
    NonFiniteError,
    PolicyEvaluatingTask,
    PolicyReadingReward,
    Reward,
    RewardOutput,
    Rollouts,
    ShardedReward,
    TaskProtocol,
    TrainingInterrupted,
    check_reward,
    derive_seed,
    held_out,
)
from rewardzoo.eval import batch_analysis

FUSED_ADAMW_DEVICES = ("cpu", "cuda")  # where torch's fused AdamW kernel runs (TRL's default optimiser too)


class MicroBatch(NamedTuple):
    """Rows of one forward/backward: their indices in the process's rows, the packed tokens and,
    when the engine reported them, the sampling log-probs ([n, T] or None)."""

    rows: list[int]
    batch: PackedBatch
    sampling_logprobs: torch.Tensor | None


def namespaced(metrics: dict[str, float], prefix: str = "reward/") -> dict[str, float]:
    """A reward's metrics with every key that names no namespace put under ``prefix`` (``mean_len`` →
    ``reward/mean_len``; ``judge/loss`` stays), so a custom reward's keys land where docs/metrics.md says."""
    return {k if "/" in k else f"{prefix}{k}": v for k, v in metrics.items()}


def make_accelerator() -> Accelerator:
    """An Accelerator for this machine: GPU when available, else CPU (MULTI_CPU/gloo under torchrun)."""
    return Accelerator(cpu=not torch.cuda.is_available())


class Trainer:
    """GRPO training of a policy against any :class:`~rewardzoo.core.types.Reward`.

    ``cfg`` is the core's configuration (:class:`~rewardzoo.core.config.CoreConfig`; the zoo's
    ``TrainConfig`` extends it, and the trainer reads only the core's sections).  ``init_dir`` is
    the directory of the starting weights (an SFT warm start); None builds ``cfg.model`` from
    scratch or from the hub.  ``prompts`` are the examples RL samples from (default: the task's
    whole train split).
    """

    def __init__(
        self,
        cfg: CoreConfig,
        *,
        task: TaskProtocol,
        reward: Reward,
        init_dir: str | Path | None = None,
        accelerator: Accelerator | None = None,
        prompts: list[Example] | None = None,
    ):
        check_reward(reward)
        if cfg.sft.enabled and init_dir is None:
            raise ConfigError(
                "sft.enabled=true, but a Trainer does not run the SFT warm start itself: call "
                "rewardzoo.train(cfg, task=task, reward=reward) (warm start, RL and evaluation, as the "
                "CLI does), or pass init_dir=rewardzoo.sft(cfg, task=task), or set sft.enabled=false"
            )
        self.cfg = cfg
        if not cfg.logging.progress:
            silence_library_progress_bars()
        self.task = task
        self.prompts = prompts if prompts is not None else task.train
        if not self.prompts:
            raise ValueError(
                "no training prompts left for RL; lower sft.n_examples or turn off sft.disjoint_rl_prompts"
            )
        self.reward = reward
        self.acc = accelerator or make_accelerator()
        self.run_dir = resolved_run_dir(cfg)
        g = cfg.grpo
        self.group_size = g.group_size
        self.num_prompts = g.batch_size // g.group_size
        self.local_prompts, self.chunk_prompts = prompts_per_process(g, self.acc.num_processes)
        torch.manual_seed(derive_seed(cfg.seed, "init"))
        self.policy, self.tokenizer = load_policy(cfg.model, init_dir, seed=cfg.seed)
        vocab = causal_lm(self.policy).get_output_embeddings().weight.shape[0]
        self.release_heap = releases_heap(g.release_heap, self.acc.device.type, vocab)
        """Whether freed heap memory goes back to the OS (``grpo.release_heap``, decided once)."""
        if self.release_heap:
            map_large_blocks()  # from here on every block of 1 MiB or more goes back to the OS when freed
        self.policy.to(self.acc.device)
        self.engine = make_engine(self.policy, self.tokenizer, cfg.sampling)
        if isinstance(reward, PolicyReadingReward):  # rewards that read the policy (RcRL's self-judge, bonuses)
            reward.bind_policy(self.policy, self.tokenizer)  # once, before any step: the starting policy
        self.ref = ReferencePolicy(self.policy) if g.beta > 0 else None
        module = PolicyLogProbs(
            self.policy,
            temperature=cfg.sampling.temperature,
            chunk_size=g.logprob_chunk_size or None,
            lean=g.lean_forward,
            recompute=self.release_heap,  # the CPU memory mode: elementwise intermediates recomputed in the backward
        )
        self.ref_module = None  # π_ref's log-probs module: the reference copy's (None: the policy's, adapters off)
        if self.ref is not None and self.ref.copy is not None:
            self.ref_module = PolicyLogProbs(
                self.ref.copy, temperature=module.temperature, chunk_size=module.chunk_size, lean=g.lean_forward
            )
        self.sharding = make_sharding(cfg.distributed, self.acc.device)  # None under DDP
        self.init_dir = init_dir
        one_process = self.acc.num_processes == 1 and self.sharding is None
        self.shared = SharedWork(cfg.share_dir if one_process else None)
        """Work the runs of one sweep repeat exactly (``share_dir``; one process only): step-0 evaluation, reward
        warm-up."""
        if self.sharding is not None:  # before the optimizer: it must hold the sharded parameters
            self.sharding.shard_policy(module, self.ref_module)
            if isinstance(reward, ShardedReward):  # rewards with judges shard them the same way
                reward.distribute(self.sharding)
        self.trainable = trainable_parameters(self.policy)  # (name, parameter) pairs the optimiser updates
        params = [p for _, p in self.trainable]
        fused = all(p.device.type in FUSED_ADAMW_DEVICES for p in params)  # one kernel: no [V, H] temporaries
        optimizer = torch.optim.AdamW(
            params, lr=g.lr, betas=tuple(g.adam_betas), weight_decay=g.weight_decay, fused=fused
        )
        total = cfg.steps * g.num_iterations
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(
            optimizer,
            lambda s: lr_multiplier(s, warmup_steps=g.warmup_steps, total_steps=total, schedule=g.lr_schedule),
        )
        self.module, self.optimizer = prepare_policy(
            self.acc, module, optimizer, cfg.distributed, self.sharding, reference=self.ref_module
        )
        self.step = 0
        self.run_id: str | None = None  # set by train(): new, or the resumed run's (checkpoint ownership)
        self.logger: MetricLogger | None = None
        self._last_eval: float | None = None
        self._epoch_orders: dict[int, np.ndarray] = {}

    # ------------------------------------------------------------------ the loop
    def train(self) -> dict[str, float]:
        """Run ``cfg.steps`` RL steps (resuming when asked); returns the last metrics row.  The run
        directory is checked first (:func:`~rewardzoo.core.checkpoint.check_run_dir`): a fresh run
        never mixes with or deletes another run's data, and a resumed one never changes experiment.

        SIGINT / SIGTERM stop the run at the end of the current step, write its checkpoint and raise
        :class:`~rewardzoo.core.types.TrainingInterrupted` (``resume=true`` continues exactly).  A run
        that fails (or is stopped) before its first checkpoint leaves nothing in ``run_dir``, so a plain
        rerun starts again; one that fails later keeps its checkpoints for ``resume=true``."""
        self._claim_run_dir()
        resumed = self._maybe_resume()
        self._open_logger(resume_step=self.step if resumed else None)
        try:
            with StopRequests() as stop:
                return self._run(stop)
        except BaseException:
            if self.logger is not None:
                self.logger.close()
                self.logger = None
            if not resumed and self.acc.is_main_process and not checkpoints(self.run_dir):
                clear_run_dir(self.run_dir)  # a failed start leaves no residue that would block a rerun
            raise

    def _run(self, stop: StopRequests) -> dict[str, float]:
        """The loop of :meth:`train`: step 0 (the reward's warm-up and the starting policy's evaluation),
        then step → evaluate → log → checkpoint until ``cfg.steps``, honouring a stop request after each step."""
        cfg = self.cfg
        last: dict[str, float] = {}
        if self.step == 0:
            last = {**self.warm_up_reward(), **self.evaluate(), "system/num_processes": self.acc.num_processes}
            self._log(0, last)
            self._last_eval = last.get("eval/accuracy")
            if self._stop_requested(stop):
                raise TrainingInterrupted(0, None, stop.signal_name or "a signal on another process")
        bar = tqdm(
            total=cfg.steps,
            initial=self.step,
            disable=not (cfg.logging.progress and self.acc.is_main_process),
            desc=cfg.recipe.name,
            dynamic_ncols=True,
        )
        while self.step < cfg.steps:
            t0 = time.perf_counter()
            metrics = self.train_step()
            if (cfg.eval.every and self.step % cfg.eval.every == 0) or self.step == cfg.steps:
                metrics.update(self.evaluate())
            metrics["time/step_s"] = time.perf_counter() - t0
            if self.step % cfg.logging.every == 0 or any(k.startswith("eval/") for k in metrics):
                self._log(self.step, metrics)
            stopping = self._stop_requested(stop)
            if (cfg.checkpoint_every and self.step % cfg.checkpoint_every == 0) or self.step == cfg.steps or stopping:
                saved = self.save()
            last = metrics
            bar.update(1)
            bar.set_postfix(self._progress(metrics), refresh=False)
            if stopping:
                bar.close()
                raise TrainingInterrupted(self.step, saved, stop.signal_name or "a signal on another process")
        bar.close()
        if self.logger is not None:
            self.logger.close()
            self.logger = None
        return last

    def _stop_requested(self, stop: StopRequests) -> bool:
        """Whether any process received a stop signal (one reduction across processes, so all stop together)."""
        if self.acc.num_processes == 1:
            return stop.requested
        return self._global_sums(torch.tensor([float(stop.requested)], dtype=torch.float64))[0] > 0

    def train_step(self) -> dict[str, float]:
        """One RL step — rollout → score → update → advantages → policy step — and its metrics row
        (evaluation, logging and checkpoints are :meth:`train`'s)."""
        t0 = time.perf_counter()
        rollouts, gen = self.rollout(self.step)
        self._release_heap()
        t1 = time.perf_counter()
        out = self.score(rollouts)
        learned = namespaced(self.reward.update(rollouts, out))
        t2 = time.perf_counter()
        adv = compute_advantages(out.rewards, rollouts.group_ids, self.cfg.grpo.advantage)
        stats = self.policy_step(gen, self._local(adv))
        self._release_heap()
        t3 = time.perf_counter()
        self.step += 1
        return {
            **self._reward_metrics(rollouts, out),
            **self.analysis(rollouts, out),
            **learned,
            **stats,
            "time/generate_s": t1 - t0,
            "time/reward_s": t2 - t1,
            "time/policy_s": t3 - t2,
        }

    def _release_heap(self) -> None:
        """When the trainer releases the heap (``grpo.release_heap``: on the CPU, forced or from a large
        vocabulary), hand the heap pages freed by the rollout's, a
        forward's, the backward's or the policy step's temporaries back to the OS
        (:func:`~rewardzoo.core.memory.release_freed_memory`), so the next phase's peak does not
        stack on them (blocks of 1 MiB or more already went back when freed: the switch also calls
        :func:`~rewardzoo.core.memory.map_large_blocks` when the trainer is built)."""
        if self.release_heap:
            release_freed_memory()

    # ------------------------------------------------------------------ the verbs
    def prompts_for(self, step: int) -> list[Example]:
        """The step's prompts: consecutive positions of a per-epoch seeded permutation of the
        RL prompts (each epoch's permutation is built once)."""
        n, out = len(self.prompts), []
        for pos in range(step * self.num_prompts, (step + 1) * self.num_prompts):
            epoch, i = divmod(pos, n)
            if epoch not in self._epoch_orders:
                self._epoch_orders = {e: o for e, o in self._epoch_orders.items() if e >= epoch - 1}
                rng = np.random.default_rng(derive_seed(self.cfg.seed, "epoch", epoch) % 2**63)
                self._epoch_orders[epoch] = rng.permutation(n)
            out.append(self.prompts[self._epoch_orders[epoch][i]])
        return out

    def rollout(self, step: int) -> tuple[Rollouts, Generation]:
        """Sample G completions of this process's prompts; return the *global* Rollouts and the
        local Generation (tokens for the policy step)."""
        examples = self.prompts_for(step)
        rank = self.acc.process_index
        local = examples[rank * self.local_prompts : (rank + 1) * self.local_prompts]
        parts = []
        with self.generating():
            for start in range(0, len(local), self.chunk_prompts):
                chunk_index = (rank * self.local_prompts + start) // self.chunk_prompts
                torch.manual_seed(derive_seed(self.cfg.seed, "rollout", step, chunk_index))
                parts.append(
                    self.engine.generate(
                        [e.prompt for e in local[start : start + self.chunk_prompts]], n=self.group_size
                    )
                )
        gen = Generation.concat(parts, self.tokenizer.pad_token_id)
        texts = gather_object(gen.texts) if self.acc.num_processes > 1 else gen.texts
        rows = [e for e in examples for _ in range(self.group_size)]
        rollouts = Rollouts(
            prompts=[e.prompt for e in rows],
            completions=texts,
            answers=[self.task.parse(t) for t in texts],
            references=[e.reference for e in rows],
            group_ids=torch.arange(self.num_prompts).repeat_interleave(self.group_size) + step * self.num_prompts,
            meta=[e.meta for e in rows],
            step=step,
        )
        return rollouts, gen

    def warm_up_reward(self) -> dict[str, float]:
        """Before RL, let a learned reward learn from the starting policy's rollouts.

        The reward's ``warmup_steps`` (e.g. RAL's judge warm-up) rollout → score → update rounds
        run with the policy unchanged — or, when another run of the sweep (``share_dir``) warmed up
        the same reward from the same start, its state after them is loaded.  Returns the last
        round's update statistics, prefixed ``warmup/``.
        """
        stats: dict[str, float] = {}
        rounds = self.reward.warmup_steps
        key = (
            warmup_key(as_dict(self.cfg), self.reward, self.prompts, self.init_dir)
            if rounds and self.shared.root
            else None
        )
        done = self.shared.load("warmup", key) if key else None
        if done is not None:  # another run of this sweep warmed up this very reward: its state after the rounds
            self.reward.load_state_dict(done["state"])
            return done["stats"]
        show = rounds > 0 and self.cfg.logging.progress and self.acc.is_main_process
        with tqdm(
            total=rounds, desc=f"{self.cfg.recipe.name}: reward warm-up", disable=not show, dynamic_ncols=True
        ) as bar:
            for w in range(rounds):
                rollouts, _ = self.rollout(-(w + 1))
                stats = self.reward.update(rollouts, self.score(rollouts))
                bar.update()
                bar.set_postfix({k: f"{v:.3f}" for k, v in stats.items() if k.endswith("/accuracy")}, refresh=False)
        stats = {f"warmup/{k}": v for k, v in stats.items()}
        if key:
            self.shared.save("warmup", key, {"state": self.reward.state_dict(), "stats": stats})
        return stats

    def score(self, rollouts: Rollouts) -> RewardOutput:
        """The reward's output, checked: one finite float per row (a reward that reads the policy scores
        with its full weights gathered under FSDP2)."""
        with self.full_weights() if isinstance(self.reward, PolicyReadingReward) else contextlib.nullcontext():
            out = self.reward.score(rollouts)
        name = type(self.reward).__name__
        if out.rewards.shape != (len(rollouts),):
            raise ValueError(
                f"reward {name} returned rewards of shape {tuple(out.rewards.shape)}, expected [{len(rollouts)}]"
            )
        bad = (~torch.isfinite(out.rewards)).nonzero().flatten().tolist()
        if bad:
            raise NonFiniteError(
                f"reward {name} returned non-finite rewards at step {rollouts.step}, rows {bad[:10]} "
                f"(values {out.rewards[bad[:10]].tolist()}); no update was made"
            )
        out.rewards = out.rewards.float()
        return out

    def policy_step(self, gen: Generation, adv: torch.Tensor) -> dict[str, float]:
        """μ optimiser steps of the clipped surrogate on this process's rows: pack micro-batches,
        fix the old and reference log-probs, then per iteration one accumulated loss and one
        optimiser step, and push the new weights to the engine (a no-op for the hf engine, which
        samples from the policy itself); the log holds the first iteration's statistics."""
        g = self.cfg.grpo
        batches, norm = self.micro_batches(gen)
        old = self.fixed_logprobs(batches) if g.num_iterations > 1 else None
        ref = self.fixed_logprobs(batches, reference=True) if g.beta > 0 else None
        first = None
        for it in range(g.num_iterations):
            sums = self.accumulate_loss(batches, adv, norm, old, ref, iteration=it)
            first = sums if first is None else first
            grad_norm = self.optimizer_step()
        self.engine.sync_weights(self.policy)
        return self.policy_metrics(first, grad_norm, gen, norm)

    # ------------------------------------------------------------------ the policy step's parts
    def micro_batches(self, gen: Generation) -> tuple[list[MicroBatch], LossNormalizer]:
        """This process's rows packed into micro-batches (longest first when sorting), and the
        step's global loss normaliser.  With ``mask_truncated_completions`` the rows that hit the
        token limit keep no loss tokens."""
        g = self.cfg.grpo
        mask = gen.completion_mask  # [N_local, T]
        if g.mask_truncated_completions:
            mask = mask & ~gen.truncated.unsqueeze(1)  # [N_local, T]
        n_rows = len(gen.prompt_ids)
        full = gen.completion_mask.sum(1)  # [N_local]
        order = (
            sorted(range(n_rows), key=lambda i: -(len(gen.prompt_ids[i]) + int(full[i])))
            if g.sort_by_length
            else list(range(n_rows))
        )
        micro = [order[s : s + g.micro_batch_size] for s in range(0, n_rows, g.micro_batch_size)]
        pad = self.tokenizer.pad_token_id
        batches = []
        for rows in micro:
            packed = pack_rows(gen.prompt_ids, gen.completion_ids, mask, rows, pad).to(self.acc.device)
            samp = (
                None if gen.sampling_logprobs is None else gen.sampling_logprobs[rows, : packed.mask.shape[1]]
            )  # [n, T]
            batches.append(MicroBatch(rows, packed, samp))
        tokens = int(self._global_sums(mask.sum().reshape(1).double())[0])
        norm = LossNormalizer(
            num_sequences=g.batch_size, num_tokens=tokens, max_completion_length=self.cfg.sampling.max_new_tokens
        )
        return batches, norm

    def accumulate_loss(
        self,
        batches: list[MicroBatch],
        adv: torch.Tensor,
        norm: LossNormalizer,
        old: list[torch.Tensor] | None,
        ref: list[torch.Tensor] | None,
        iteration: int,
    ) -> dict[str, torch.Tensor]:
        """Forward and backward every micro-batch into one accumulated gradient of the step loss
        (DDP syncs on the last); returns the summed, detached loss statistics, which stay on the
        device.  The losses are checked for finiteness once, after the last backward (one host sync
        per step); a non-finite one stops the step before the optimiser with the gradients cleared."""
        g = self.cfg.grpo
        scale = self.acc.num_processes  # DDP averages gradients; each process holds a share of the global loss
        sums: dict[str, torch.Tensor] = {}
        losses = []
        self.optimizer.zero_grad(set_to_none=True)
        for j, (rows, batch, samp) in enumerate(batches):
            last = j == len(batches) - 1
            with contextlib.nullcontext() if last else self.acc.no_sync(self.module):
                logp, entropy = self.module(batch)  # [n, T] each
                old_logp = old[j] if old is not None else logp.detach()  # [n, T]
                is_w = (
                    None if samp is None else truncated_is_weights(old_logp, samp.to(logp.device), g.is_cap)
                )  # [n, T]
                loss, stats = policy_loss(
                    logp,
                    old_logp,
                    adv[rows].to(logp.device),
                    batch.mask,
                    norm,
                    loss_type=g.loss_type,
                    eps_low=g.epsilon_low,
                    eps_high=g.epsilon_high,
                    beta=g.beta,
                    ref_logp=None if ref is None else ref[j],
                    kl_estimator=g.kl_estimator,
                    is_weights=is_w,
                    importance_sampling_level=g.importance_sampling_level,
                    sapo_tau_pos=g.sapo_temperature_pos,
                    sapo_tau_neg=g.sapo_temperature_neg,
                )
                self._release_heap()  # the forward's freed logits chunks, before the backward allocates gradients
                self.acc.backward(loss * scale)
            losses.append(loss.detach())
            stats["loss_sum"] = loss.detach() * scale
            stats["entropy_sum"] = (entropy.detach() * batch.mask).sum()
            for k, v in stats.items():
                sums[k] = sums.get(k, 0.0) + v.double()
        finite = torch.isfinite(torch.stack(losses))  # [micro-batches]
        if not finite.all():
            j = int((~finite).nonzero()[0])
            self.optimizer.zero_grad(set_to_none=True)
            raise NonFiniteError(
                f"policy loss is {losses[j].item()} at step {self.step}, iteration {iteration}, "
                f"micro-batch {j} (check the advantages and log-probs); no update was made"
            )
        return sums

    def optimizer_step(self) -> float:
        """Clip, check and apply the accumulated gradient, then free it (no gradient memory is held
        through the next generation); returns its norm before clipping.

        A non-finite norm stops the step, naming the parameters whose gradients are not finite,
        with the parameters untouched (the norm is checked before clipping, which would smear NaN
        over every gradient).  Parameters that are not finite *after* the update (a finite gradient
        times an absurd learning rate or weight decay) stop the run too, naming the step, before
        any checkpoint of it is written: the previous checkpoint stays the latest."""
        self._release_heap()  # the backward's temporaries, before AdamW's first step allocates its moments
        named = self.trainable
        params = [p for _, p in named]
        grads = [p.grad for p in params if p.grad is not None]
        total = torch.nn.utils.get_total_norm(grads) if grads else torch.zeros(())  # []
        norm = float(total)  # the step's one host sync here
        if not math.isfinite(norm):
            bad = [n for n, p in named if p.grad is not None and not torch.isfinite(p.grad).all()]
            self.optimizer.zero_grad(set_to_none=True)
            raise NonFiniteError(
                f"non-finite gradient at step {self.step} in {bad[:5]}; "
                f"no update was made (lower grpo.lr or check the reward scale)"
            )
        if self.cfg.grpo.max_grad_norm:
            torch.nn.utils.clip_grads_with_norm_(params, self.cfg.grpo.max_grad_norm, total)
        self.optimizer.step()
        # max |θ| over all parameters (torch's foreach kernel, NaN propagates): finite iff every parameter is
        if params and not math.isfinite(float(torch.nn.utils.get_total_norm(params, norm_type=math.inf))):
            bad = [n for n, p in named if not torch.isfinite(p).all()]
            raise NonFiniteError(
                f"parameters became non-finite in the optimizer step of step {self.step} ({bad[:5]}); "
                f"stopped before writing a checkpoint, so the previous one is the latest (lower "
                f"grpo.lr or grpo.weight_decay)"
            )
        self.scheduler.step()
        self.optimizer.zero_grad(set_to_none=True)
        return norm

    def policy_metrics(
        self, sums: dict[str, torch.Tensor], grad_norm: float, gen: Generation, norm: LossNormalizer
    ) -> dict[str, float]:
        """The ``policy/*`` log keys from the first iteration's summed statistics (one reduction
        across processes and one host sync for all of them)."""
        keys = sorted(sums)
        device = sums[keys[0]].device
        counts = [gen.completion_mask.sum(), gen.truncated.sum()]
        values = self._global_sums(torch.stack([sums[k] for k in keys] + [c.to(device).double() for c in counts]))
        summed = dict(zip(keys, values))
        completion_tokens, truncated = values[len(keys) :]
        tokens = max(norm.num_tokens, 1)
        n = self.cfg.grpo.batch_size
        out = {
            "policy/loss": summed["loss_sum"] / self.acc.num_processes,
            "policy/entropy": summed["entropy_sum"] / tokens,
            "policy/clip_low_frac": summed["clip_low_sum"] / tokens,
            "policy/clip_high_frac": summed["clip_high_sum"] / tokens,
            "policy/ratio_mean": summed["ratio_sum"] / tokens,
            "policy/grad_norm": grad_norm,
            "policy/lr": self.scheduler.get_last_lr()[0],
            "policy/completion_length": completion_tokens / n,
            "policy/truncated_frac": truncated / n,
        }
        if self.cfg.grpo.mask_truncated_completions:
            out["policy/masked_truncated_frac"] = out["policy/truncated_frac"]
        if "kl_sum" in summed:
            out["policy/kl"] = summed["kl_sum"] / tokens
        if "is_weight_sum" in summed:
            out["policy/is_weight_mean"] = summed["is_weight_sum"] / tokens
        return out

    @torch.no_grad()
    def fixed_logprobs(self, batches: list[MicroBatch], reference: bool = False) -> list[torch.Tensor]:
        """[n, T] log-probs of every micro-batch that stay fixed through the step's μ iterations:
        the old policy's (before any update) or, with ``reference``, π_ref's."""
        module = self.acc.unwrap_model(self.module)
        if not reference:
            return [module(b.batch)[0] for b in batches]
        with self.ref.active():  # with LoRA: the policy's own module, adapters disabled
            ref_module = self.ref_module if self.ref_module is not None else module
            return [ref_module(b.batch)[0] for b in batches]

    @torch.no_grad()
    def evaluate(self) -> dict[str, float]:
        """Held-out completions — greedy, or ``eval.samples`` sampled per prompt (seeded by the held-out
        position and the step) — scored by the task's own ``evaluate``; in a run, each example's row
        metrics (averaged over its samples) also go to ``eval_rows.jsonl`` (for paired intervals).  A
        task with ``evaluate_policy`` (:class:`~rewardzoo.core.types.PolicyEvaluatingTask`) adds
        metrics of the policy's exact log-probabilities (:meth:`score_completions`), computed on every
        process for all held-out examples.  At step 0 the completions and policy metrics come from the
        sweep's ``share_dir`` when another run computed them (:mod:`~rewardzoo.core.shared_work`)."""
        examples = held_out(self.task, self.cfg.eval.split)[: self.cfg.eval.n_examples or None]
        k = self.cfg.eval.samples
        n = max(k, 1)  # completions per held-out prompt
        key = (
            step0_eval_key(as_dict(self.cfg), examples, self.init_dir) if self.step == 0 and self.shared.root else None
        )
        done = self.shared.load("eval0", key) if key else None
        if done is None:
            done = {"completions": self.held_out_completions(examples, n, greedy=not k), "policy": {}}
            if isinstance(self.task, PolicyEvaluatingTask):
                done["policy"] = self.task.evaluate_policy(self.score_completions, examples)
            if key:
                self.shared.save("eval0", key, done)
        completions = done["completions"]
        repeated = [e for e in examples for _ in range(n)]
        if self.logger is not None:
            answers = [self.task.parse(c) for c in completions]
            rows = self.task.row_metrics(answers, [e.reference for e in repeated], [e.meta for e in repeated])
            self.logger.log_rows(
                self.step, {key: [sum(v[i : i + n]) / n for i in range(0, len(v), n)] for key, v in rows.items()}
            )
            self.logger.log_samples(
                self.step,
                [
                    {
                        "prompt": e.prompt,
                        "completion": c,
                        "answer": a,
                        "reference": e.reference,
                        **{key: v[i] for key, v in rows.items()},
                    }
                    for i, (e, c, a) in enumerate(zip(repeated, completions, answers))
                ],
            )
        metrics = {**self.task.evaluate(completions, repeated), **done["policy"]}
        return {f"eval/{name}": v for name, v in metrics.items()}

    def held_out_completions(self, examples: list[Example], n: int, greedy: bool) -> list[str]:
        """``n`` completions of every held-out example (this process's share generated here, gathered):
        sampled ones seeded by the held-out position and the step."""
        world, rank = self.acc.num_processes, self.acc.process_index
        per = math.ceil(len(examples) / world)
        local = examples[rank * per : (rank + 1) * per]
        texts: list[str] = []
        bs = self.cfg.eval.batch_size
        with self.generating():
            for s in range(0, len(local), bs):
                if not greedy:
                    torch.manual_seed(derive_seed(self.cfg.seed, "eval", self.step, rank * per + s))
                texts += self.engine.generate([e.prompt for e in local[s : s + bs]], n=n, greedy=greedy).texts
        return gather_object(texts) if world > 1 else texts

    @torch.no_grad()
    def score_completions(self, prompts: list[str], completions: list[str]) -> torch.Tensor:
        """[n] log π(completion, EOS | prompt) of the current policy at the sampling temperature, summed
        over the completion's tokens (a :data:`~rewardzoo.core.types.SequenceScorer`; on the CPU)."""
        module = self.acc.unwrap_model(self.module)
        prompt_ids, comp_ids, comp_mask = tokenize_completions(prompts, completions, self.tokenizer)
        mb = self.cfg.grpo.micro_batch_size
        sums = []
        for s in range(0, len(prompts), mb):
            batch = pack_rows(
                prompt_ids, comp_ids, comp_mask, list(range(s, min(s + mb, len(prompts)))), self.tokenizer.pad_token_id
            ).to(self.acc.device)
            logp, _ = module(batch)  # [n, T] zero off the mask
            sums.append(logp.sum(1).cpu())  # [n]
        return torch.cat(sums) if sums else torch.zeros(0)  # [n]

    # ------------------------------------------------------------------ checkpoints
    def save(self) -> Path:
        """Write an atomic checkpoint of the current step (sharded under FSDP2:
        :mod:`~rewardzoo.core.sharded_checkpoint`)."""
        if self.sharding is not None:
            return save_sharded_checkpoint(
                self.run_dir,
                self.step,
                policy=self.policy,
                tokenizer=self.tokenizer,
                optimizer=self.optimizer,
                scheduler=self.scheduler,
                reward=self.reward,
                accelerator=self.acc,
                keep=self.cfg.keep_checkpoints,
                run_id=self.run_id,
            )
        return save_checkpoint(
            self.run_dir,
            self.step,
            policy=self.acc.unwrap_model(self.module).model,
            tokenizer=self.tokenizer,
            optimizer=self.optimizer,
            scheduler=self.scheduler,
            reward=self.reward,
            accelerator=self.acc,
            keep=self.cfg.keep_checkpoints,
            run_id=self.run_id,
        )

    def _claim_run_dir(self) -> None:
        """Check the run directory on every process; with ``overwrite``, the main one deletes the old run."""
        check_run_dir(self.cfg)
        if self.cfg.overwrite and self.acc.is_main_process:
            clear_run_dir(self.run_dir)
        self.acc.wait_for_everyone()

    def _maybe_resume(self) -> bool:
        if not self.cfg.resume:
            self.run_id = new_run_id()
            return False
        latest = checkpoints(self.run_dir)[-1]
        load = load_checkpoint if self.sharding is None else load_sharded_checkpoint
        self.step = load(
            latest,
            policy=self.policy,
            optimizer=self.optimizer,
            scheduler=self.scheduler,
            reward=self.reward,
            accelerator=self.acc,
        )
        self.engine.sync_weights(self.policy)
        self.run_id = checkpoint_state(latest).get("run_id") or new_run_id()
        return True

    # ------------------------------------------------------------------ helpers
    def full_weights(self):
        """A context in which the policy's parts can be called directly: under FSDP2 its full weights are
        gathered for the block (:meth:`~rewardzoo.core.distributed.Sharding.gathered`); else nothing."""
        return contextlib.nullcontext() if self.sharding is None else self.sharding.gathered(self.module)

    def generating(self):
        """The context of generation calls: :meth:`full_weights` for an engine that runs the policy
        itself, nothing for one with its own copy of the weights (vLLM)."""
        return self.full_weights() if self.engine.runs_policy else contextlib.nullcontext()

    def _local(self, rows_global: torch.Tensor) -> torch.Tensor:
        n = self.local_prompts * self.group_size
        return rows_global[self.acc.process_index * n : (self.acc.process_index + 1) * n]

    def _global_sums(self, values: torch.Tensor) -> list[float]:
        """[k] values summed over processes, as floats (one reduction, one host sync)."""
        if self.acc.num_processes == 1:
            return values.tolist()
        return self.acc.reduce(values.to(self.acc.device), reduction="sum").tolist()

    def analysis(self, rollouts: Rollouts, out: RewardOutput) -> dict[str, float]:
        """``train/…`` and ``analysis/corr/…`` diagnostics from the task's exact checker, computed
        outside the reward (:func:`rewardzoo.eval.batch_analysis`)."""
        rows = self.task.row_metrics(rollouts.answers, rollouts.references, rollouts.meta)
        return batch_analysis(
            rows,
            {"reward": out.rewards, **out.components},
            valid=[a is not None for a in rollouts.answers],
            groups=rollouts.group_ids,
        )

    def _reward_metrics(self, rollouts: Rollouts, out: RewardOutput) -> dict[str, float]:
        r = out.rewards
        _, _, constant = group_mean_std(r, rollouts.group_ids)
        metrics = {
            "reward/mean": r.mean().item(),
            "reward/std": r.std().item() if len(r) > 1 else 0.0,
            "reward/zero_std_frac": constant.float().mean().item(),
            "reward/malformed_frac": sum(a is None for a in rollouts.answers) / len(rollouts),
        }
        metrics.update(namespaced(out.metrics))
        return metrics

    def _open_logger(self, resume_step: int | None) -> None:
        if not self.acc.is_main_process:
            return
        self.run_dir.mkdir(parents=True, exist_ok=True)
        (self.run_dir / "config.yaml").write_text(to_yaml(self.cfg))
        log = self.cfg.logging
        self.logger = MetricLogger(
            self.run_dir,
            tensorboard=log.tensorboard,
            wandb=log.wandb,
            wandb_project=log.wandb_project,
            config=as_dict(self.cfg),
            resume_step=resume_step,
        )

    def _log(self, step: int, metrics: dict[str, float]) -> None:
        if self.logger is not None:
            self.logger.log(step, metrics)

    def _progress(self, metrics: dict[str, float]) -> dict[str, str]:
        self._last_eval = metrics.get("eval/accuracy", self._last_eval)
        shown = {
            "reward": metrics.get("reward/mean"),
            "eval_acc": self._last_eval,
            "s/step": metrics.get("time/step_s"),
        }
        return {k: f"{v:.3f}" for k, v in shown.items() if v is not None}
