"""RAL, Reinforced Adversarial Learning (the RAL paper, §3): a co-trained judge's reference probability is
the *only* reward — no verifier, no reward labels, no reasoning demonstrations.

    D_φ(x, a)  = P_φ(a is a reference answer to x)        judge input: prompt + final answer only
    r(x, y)    = g(D_φr(x, a(y)))   if the parsed answer a(y) is well formed   (g = D by default: r = D)
               = 0                  if a(y) is None (malformed)
    L(φ)       = ½·E_(x,a*)~ref[−log D_φ] + ½·E_(x,a)~neg[−log(1 − D_φ)]     class-balanced BCE
    neg        = valid answers of this batch  ∪  replayed past answers (a share f of neg)
    gate       : after warm-up, skip the step on φ while EMA(batch accuracy) > threshold,
                 never more than max_skip_streak times in a row
    Polyak     : φ_r ← (1 − τ)·φ_r + τ·φ after every update call   (φ_r ≡ φ when polyak is off)
    frozen     : after warm-up neither φ nor φ_r changes (the frozen-judge baseline)
    format_only: D ≡ 1, no judge at all: r = 1 on a well-formed answer, 0 on a malformed one — the
                 control that removes RAL's learned part (what the format parser alone rewards)

One step, as the trainer runs it: ``score`` (reward judge φ_r on this batch) → ``update``
(measure the training judge φ on references vs. this batch's answers, gate, one BCE step on φ,
Polyak-average φ_r); ``judge_steps`` > 1 takes that many BCE steps on the call's batch.  The first
``warmup_steps`` update calls are the judge warm-up: the trainer runs them with the starting policy
before RL, and they are never gated.

RAL never sees the task: its constructor takes no task or verifier, and
:mod:`rewardzoo.zoo` builds it from its config section alone.  It reads only ``prompts``,
``answers`` (from the task's *format parser*) and ``references`` of :class:`Rollouts`.

Departures from the RAL paper and choices of ours:

1. Every number (warm-up length, gate threshold, EMA rate, skip-streak cap, replay capacity and
   share, τ, judge learning rate) is our own default; the RAL paper gives none.
2. The judge's input is ``prompt + separator + answer`` (see :mod:`rewardzoo.judges.classifier`);
   one reference per prompt of the batch is a positive; classes are balanced by loss weights.
3. The gate's batch accuracy is the balanced accuracy (references vs. this batch's generated
   answers, threshold D = 0.5) of the training judge *before* its step; replayed answers are
   trained on and their accuracy is logged, but they do not enter the gate.
4. Polyak averaging also runs during warm-up and on gated (skipped) steps, so φ_r keeps closing
   the gap to φ; with ``frozen`` both stop after warm-up.
5. The logged ``judge_prob`` component is D on valid rows and 0 on malformed rows (like the reward).
6. The KL penalty to the initial policy is the GRPO core's ``grpo.beta``, not part of RAL.
7. g is any of the four transforms of :mod:`rewardzoo.rewards.transforms` by name (``D`` — alias
   ``identity`` — ``neg_log_one_minus_D``, ``log_D``, ``logit``), evaluated from the judge's logit
   (``g.from_logit(z)``), so no clamp is needed; the RAL paper uses D.
8. The RAL paper's judge is a binary sequence classifier (``judge.readout="last_token"``, the default); the
   ``answer_mean`` and ``lm_likelihood`` readouts (:mod:`rewardzoo.judges.readouts`) are ours.
   ``judge/auc`` (references vs this batch's answers, before the step) and, for ``lm_likelihood``,
   the calibration ``judge/calibration_scale`` / ``judge/calibration_bias`` are logged with the
   other judge diagnostics; none of them uses a correctness label.

Untested: hub-model judges and GPU runs.  Multi-process runs: every process trains on the same
global batch — under DDP its own full judge copy, identically (deterministic on CPU); under FSDP2
the judge and the Polyak copy are sharded (:meth:`RAL.distribute`) and every process still runs the
whole batch through them (tested: 2 processes = 1, tests/core/test_fsdp.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import torch

from rewardzoo.core.config import check_section
from rewardzoo.core.types import RewardOutput, Rollouts, derive_seed
from rewardzoo.judges.buffers import EVICTIONS, ReplayBuffer, replay_count
from rewardzoo.judges.classifier import JudgeConfig, Pair, SequenceJudge, reference_pairs
from rewardzoo.judges.diagnostics import classifier_diagnostics
from rewardzoo.judges.schedule import UpdateGate, parameter_distance, polyak_update
from rewardzoo.rewards.context import RewardContext
from rewardzoo.rewards.transforms import G_TRANSFORMS, GTransform, get_transform
from rewardzoo.tasks.chat import judge_prompts


@dataclass
class RALConfig:
    """Settings of RAL.  The RAL paper gives no numeric hyperparameters: every default is our own."""

    RANGES: ClassVar[dict[str, str]] = {
        "warmup_steps": "[0, inf)",
        "gate_threshold": "(-inf, inf)",
        "gate_ema_rate": "(0, 1]",
        "max_skip_streak": "[0, inf)",
        "replay_capacity": "[1, inf)",
        "replay_fraction": "[0, 1)",
        "polyak_tau": "(0, 1]",
        "judge_steps": "[1, inf)",
    }

    judge: JudgeConfig = field(default_factory=JudgeConfig)
    """The judge model and its optimiser (a tiny Qwen3 trained from scratch by default)."""
    g: str = "D"
    """Reward transform g of the judge probability (rewards/transforms.py): D (= identity, r = D), neg_log_one_minus_D,
    log_D or logit."""
    warmup_steps: int = 100
    """Judge updates on the starting policy's rollouts before RL (never gated)."""
    frozen: bool = False
    """Baseline: stop updating the judge (and the reward judge) after warm-up."""
    format_only: bool = False
    """Control: no judge at all — D ≡ 1, so r = 1 on every well-formed answer and 0 on a malformed one (no
    warm-up, no judge forward or update): what RAL gets from the format parser alone."""
    judge_steps: int = 1
    """Judge optimiser steps per update call (per RL step and per warm-up round), all on that call's
    batch; the gate decides once per call."""
    gate_threshold: float = 0.8
    """Skip a judge update while the moving-average batch accuracy exceeds this (>= 1 = never skip)."""
    gate_ema_rate: float = 0.1
    """Weight α of the newest batch in the moving average of judge accuracy."""
    max_skip_streak: int = 4
    """Most judge updates skipped in a row (0 = never skip)."""
    replay_capacity: int = 4096
    """Past generated (prompt, answer) pairs kept for replay."""
    replay_fraction: float = 0.0
    """Share of a judge batch's negatives drawn from the replay buffer, in [0, 1) (0 = no replay)."""
    replay_eviction: str = "reservoir"
    """How a full replay buffer makes room: 'reservoir' (uniform over all past answers) or 'fifo' (most recent)."""
    polyak: bool = False
    """Reward comes from a Polyak-averaged copy φ_r of the judge instead of the judge itself."""
    polyak_tau: float = 0.1
    """Soft-update rate τ of the reward judge, in (0, 1]."""

    def validate(self) -> None:
        """Raise ValueError, saying what to change, on settings that cannot run."""
        if self.g not in G_TRANSFORMS:
            raise ValueError(f"g must be one of {', '.join(G_TRANSFORMS)}; got {self.g!r}")
        if self.replay_eviction not in EVICTIONS:
            raise ValueError(f"replay_eviction must be one of {', '.join(EVICTIONS)}; got {self.replay_eviction!r}")


class RAL:
    """Judge-only reward: r = g(D_φr(x, a)) on valid answers, 0 on malformed ones (see module docstring).

    ``policy_dir`` is the policy's starting weights (for ``judge.init_from='policy'``); ``judge``
    replaces the judge that ``cfg.judge`` describes; ``g`` replaces the transform ``cfg.g`` names.
    """

    def __init__(
        self,
        cfg: RALConfig | None = None,
        *,
        seed: int = 0,
        policy_dir: str | Path | None = None,
        device: str = "cpu",
        judge: SequenceJudge | None = None,
        g: GTransform | None = None,
    ):
        self.cfg = cfg = cfg or RALConfig()
        check_section(cfg, "reward.ral")
        self.g = g or get_transform(cfg.g)
        self.warmup_steps = 0 if cfg.format_only else cfg.warmup_steps
        self.updates = 0  # update calls so far (the first warmup_steps are the warm-up)
        if cfg.format_only:
            self.judge = self.reward_judge = None
            return
        self.judge = judge or SequenceJudge.build(
            cfg.judge, policy_dir=policy_dir, seed=derive_seed(seed, "ral", "judge"), device=device
        )
        self.reward_judge = self.judge.frozen_copy() if cfg.polyak else self.judge
        self.buffer = ReplayBuffer(cfg.replay_capacity, cfg.replay_eviction, seed=derive_seed(seed, "ral", "replay"))
        self.gate = UpdateGate(cfg.gate_threshold, cfg.gate_ema_rate, cfg.max_skip_streak)

    SEES_TASK = False  # never the task: its verifier must not reach the reward
    WARMUP_FREE = ("frozen", "g")  # settings the warm-up never reads (update uses D, not g(D); frozen acts after it)

    @classmethod
    def from_config(cls, cfg: RALConfig | None = None, ctx: RewardContext | None = None) -> RAL:
        """RAL from its config section and the run's seed, starting weights and device (``ctx.task``, if a
        hand-built context carries one, is not read)."""
        ctx = ctx or RewardContext()
        return cls(cfg, seed=ctx.seed, policy_dir=ctx.init_dir, device=ctx.device)

    def distribute(self, sharding) -> None:
        """Shard the judge (with its optimizer) and the Polyak reward judge over the run's processes (FSDP2;
        the trainer calls this once, before any step)."""
        if self.judge is None:
            return
        self.judge.distribute(sharding)
        if self.reward_judge is not self.judge:
            self.reward_judge.distribute(sharding)

    def score(self, batch: Rollouts) -> RewardOutput:
        """r_i = g(D_φr(x_i, a_i)) where a_i is well formed, exactly 0 where it is None (``format_only``: 1
        where it is well formed)."""
        valid = [i for i, a in enumerate(batch.answers) if a is not None]
        if self.cfg.format_only:
            well_formed = torch.tensor([float(a is not None) for a in batch.answers])  # [N]
            return RewardOutput(
                rewards=well_formed,
                components={"judge_prob": well_formed.clone()},
                metrics={"reward/judge_prob_mean": 1.0 if valid else 0.0, "reward/judge_prob_std": 0.0},
            )
        prompts = judge_prompts(batch)
        z = self.reward_judge.logit_reference(
            [prompts[i] for i in valid], [batch.answers[i] for i in valid]
        )  # [n_valid]
        d = torch.sigmoid(z)  # [n_valid]
        prob = torch.zeros(len(batch))  # [N]
        rewards = torch.zeros(len(batch))  # [N]
        if valid:
            rows = torch.tensor(valid)  # [n_valid]
            prob[rows] = d
            rewards[rows] = self.g.from_logit(z).float()
        metrics = {
            "reward/judge_prob_mean": d.mean().item() if valid else 0.0,
            "reward/judge_prob_std": d.std().item() if len(valid) > 1 else 0.0,
        }
        return RewardOutput(rewards=rewards, components={"judge_prob": prob}, metrics=metrics)

    def update(self, batch: Rollouts, out: RewardOutput) -> dict[str, float]:
        """Train the judge on this batch's references (1) vs. its valid answers plus replayed ones (0),
        through the gate; then Polyak-average the reward judge.  ``out`` must be this reward's
        ``score(batch)`` (its ``judge_prob`` is reused when the reward judge is the judge itself).
        Returns ``judge/…`` scalars (none with ``format_only``: there is no judge)."""
        if self.cfg.format_only:
            return {}
        warm = self.updates < self.warmup_steps
        learns = warm or not self.cfg.frozen
        self.updates += 1
        positives = reference_pairs(batch)
        negatives: list[Pair] = [(p, a) for p, a in zip(judge_prompts(batch), batch.answers) if a is not None]
        replayed: list[Pair] = []
        if self.cfg.replay_fraction > 0:
            replayed = self.buffer.sample(replay_count(len(negatives), self.cfg.replay_fraction))
            self.buffer.add(negatives)
        metrics = {
            "judge/warmup": float(warm),
            "judge/n_positives": float(len(positives)),
            "judge/n_negatives": float(len(negatives)),
            "judge/n_replayed": float(len(replayed)),
            "judge/buffer_size": float(len(self.buffer)),
        }
        if not positives or not negatives:  # nothing to contrast (e.g. every answer malformed)
            return {**metrics, "judge/updated": 0.0, "judge/empty_batch": 1.0}
        if self.reward_judge is self.judge:  # score() just ran this very judge on this batch's valid answers
            d_neg = out.components["judge_prob"][[i for i, a in enumerate(batch.answers) if a is not None]]  # [n_neg]
            d_pos, d_rep = self._probs(positives + replayed).split([len(positives), len(replayed)])  # [n_pos], [n_rep]
        else:
            d_pos, d_neg, d_rep = self._probs(positives + negatives + replayed).split(
                [len(positives), len(negatives), len(replayed)]
            )  # [n_pos], [n_neg], [n_rep]
        diagnostics = classifier_diagnostics(d_pos, d_neg)  # accuracy, auc, brier, ece, mean D per class
        accuracy = diagnostics["accuracy"]
        metrics.update({**{f"judge/{k}": v for k, v in diagnostics.items()}, "judge/empty_batch": 0.0})
        if replayed:
            metrics["judge/accuracy_replay"] = (d_rep < 0.5).float().mean().item()
            metrics["judge/d_replay_mean"] = d_rep.mean().item()
        updated = learns and self.gate.step(accuracy, can_skip=not warm)
        if updated:
            for _ in range(self.cfg.judge_steps):
                stats = self.judge.train_step(positives, negatives + replayed)
            metrics.update({"judge/loss": stats["loss"], "judge/grad_norm": stats["grad_norm"]})
        if learns and self.cfg.polyak:
            polyak_update(self.reward_judge.model, self.judge.model, self.cfg.polyak_tau)
            metrics["judge/polyak_distance"] = parameter_distance(self.reward_judge.model, self.judge.model)
        metrics["judge/updated"] = float(updated)
        metrics.update({f"judge/{k}": v for k, v in self.judge.calibration().items()})
        metrics.update({f"judge/{k}": v for k, v in self.gate.metrics().items()})
        return metrics

    def _probs(self, pairs: list[Pair]) -> torch.Tensor:
        """[n] D_φ of the training judge on (prompt, answer) pairs."""
        return self.judge.prob_reference([p for p, _ in pairs], [a for _, a in pairs])  # [n]

    def state_dict(self) -> dict:
        """Judge (+ optimizer), reward judge, replay buffer (+ generator), gate and update count."""
        if self.cfg.format_only:
            return {"updates": self.updates}
        return {
            "judge": self.judge.state_dict(),
            "reward_judge": self.reward_judge.model.state_dict() if self.cfg.polyak else None,
            "buffer": self.buffer.state_dict(),
            "gate": self.gate.state_dict(),
            "updates": self.updates,
        }

    def load_state_dict(self, state: dict) -> None:
        """Restore :meth:`state_dict`."""
        if self.cfg.format_only:
            self.updates = state["updates"]
            return
        self.judge.load_state_dict(state["judge"])
        if self.cfg.polyak:
            self.reward_judge.model.load_state_dict(state["reward_judge"])
        self.buffer.load_state_dict(state["buffer"])
        self.gate.load_state_dict(state["gate"])
        self.updates = state["updates"]
