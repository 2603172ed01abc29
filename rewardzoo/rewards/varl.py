"""VARL: a verifier gates a co-trained discriminator (Damani et al. 2026, "Right in the Right Way",
arXiv 2607.01181; docs/rewards/varl.md is the contract, as the paper's text is not in this repository).

    v(x, y)   ∈ [0, 1]  the task's verifier on the parsed answer (1 = passes)
    φ(y)      features the discriminator sees: the parsed answer (default) or the whole completion
    D(x, φ)   = P(φ is a demonstration's for prompt x)                  judge input: prompt + φ only
    r(x, y)   = v · g(D(x, φ(y)))           combine: multiply (default)  — v = 0 gives exactly 0
              = v + λ · g(D(x, φ(y)))       combine: add                 (the additive ablation)
    L(D)      = ½·E_pos[−log D] + ½·E_neg[−log(1 − D)]       class-balanced BCE, one step per update
    pos       = one demonstration φ per prompt of the batch: its reference answer (answer features)
                or a demonstration text of the prompt (completion features)
    neg       = ⌈n/2⌉ from a FIFO buffer of recent verifier-PASSING outputs
              + ⌊n/2⌋ from a reservoir sample of all past passing outputs   (n = ``negatives`` or |pos|)

g is any transform of :mod:`rewardzoo.rewards.transforms` (``D`` by default), evaluated from the
discriminator's logit.  With g = D, r ∈ [0, 1] and passing never scores below failing; a transform
without *positive affinity* (g ≥ 0) or *boundedness* breaks that under the multiplicative gate, so
choosing one warns (once, at construction, naming the property and why it matters).

The discriminator never sees the verifier's output except through *which rows become negatives*:
``score`` runs it on every row that has features, whatever v says, and its training inputs are the
demonstrations and the stored passing outputs.  The verifier is the task's, so VARL is built from
the task (like RLVR); the discriminator object holds no reference to the task (tested).

One trainer step: ``score`` (v for every row, D on every row with features, r) → ``update`` (add this
step's passing (x, φ) to both buffers, draw the negatives, one BCE step).  The first
``warmup_steps`` update calls run before RL with the starting policy (the trainer's warm-up).

Whether D has learned anything is logged as a number: ``disc/auc_ref_vs_passing``, the AUC between
the step's positives and its verifier-passing generations, both scored before D's step on them
(held out from D's training so far; :func:`rewardzoo.judges.diagnostics.reference_auc`, ties count ½).
Where every passing output *is* its reference (an exact verifier with answer features) the AUC is ½ by
construction: D has nothing to learn; on a gameable verifier, or with completion features that show a
scratchpad, passing outputs differ from demonstrations and the AUC says how far D tells them apart.

Departures and choices of ours (we could not read the paper: nothing below is checked against it):

1. Every number is our own default: warm-up length, discriminator size and learning rate, buffer
   capacities, negatives per step, λ.  The discriminator architecture (a one-logit sequence
   classifier, :class:`~rewardzoo.judges.classifier.SequenceJudge`) and its input (prompt + φ, no
   separator) are ours; the paper's may differ.
2. v is the task's ``verify`` in [0, 1]; a row *passes* (may become a negative) when v ≥ 1.  The
   multiplicative reward is v · g(D) where v > 0 and exactly 0.0 where v = 0 (no −0.0).
3. A row without features (a malformed answer under answer features) gets no D: its g-term is 0 in
   both modes, and it never becomes a negative.
4. This step's passing outputs enter both buffers *before* the negatives are drawn, so the first
   steps' negatives are this step's outputs; each half is drawn without replacement from its
   buffer (an item may appear in both halves).  With completion features on a prompt with several
   demonstrations, the positive is one drawn uniformly with VARL's own generator.
5. The discriminator trains on every update call (warm-up included); there is no update gate,
   Polyak copy or frozen switch (RAL's stabilisers; the paper's buffers play that role here).
6. The paper's group size 8 is in the recipes (``grpo.group_size: 8``); its advantages without std
   normalisation are not forced on them: each VARL recipe keeps its RLVR twin's ``grpo.advantage``
   (``dr_grpo`` on refdist, ``grpo`` on hackable multiplication); on multiplication VARL keeps ``dr_grpo``
   and the board's twin is its ``RLVR (dr_grpo)`` row.
   KL to the reference policy is the core's ``grpo.beta``.

Untested: hub-model discriminators and GPU runs; whether our buffer split matches the paper's.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import torch

from rewardzoo.core.config import check_section
from rewardzoo.core.types import RewardOutput, Rollouts, derive_seed
from rewardzoo.judges.buffers import ReplayBuffer
from rewardzoo.judges.classifier import JudgeConfig, Pair, SequenceJudge, reference_pairs
from rewardzoo.judges.diagnostics import classifier_diagnostics, reference_auc
from rewardzoo.rewards.context import RewardContext
from rewardzoo.rewards.transforms import G_TRANSFORMS, GTransform, get_transform
from rewardzoo.tasks.chat import judge_prompts

Verifier = Callable[[str | None, str | None, dict], float]  # (answer, reference, meta) -> v in [0, 1]
COMBINES = ("multiply", "add")
FEATURES = ("answer", "completion")


@dataclass
class VARLConfig:
    """Settings of VARL.  The paper's hyperparameters were not available to us: every default is our own."""

    RANGES: ClassVar[dict[str, str]] = {
        "additive_weight": "[0, inf)",
        "warmup_steps": "[0, inf)",
        "negatives": "[0, inf)",
        "fifo_capacity": "[1, inf)",
        "reservoir_capacity": "[1, inf)",
    }

    discriminator: JudgeConfig = field(default_factory=JudgeConfig)
    """The discriminator model and its optimiser (a tiny Qwen3 trained from scratch by default)."""
    g: str = "D"
    """Transform of the discriminator probability (rewards/transforms.py): D, neg_log_one_minus_D, log_D or logit;
    only D has positive affinity and is bounded (others warn under combine=multiply)."""
    combine: str = "multiply"
    """'multiply': r = v·g(D) (VARL); 'add': r = v + additive_weight·g(D) (the additive ablation)."""
    additive_weight: float = 1.0
    """λ of the additive ablation (combine=add only)."""
    features: str = "answer"
    """φ(y) the discriminator sees: 'answer' (the task-parsed final answer; positives = reference answers) or
    'completion' (the whole completion — a scratchpad included — positives = demonstration texts)."""
    warmup_steps: int = 100
    """Discriminator updates on the starting policy's rollouts before RL."""
    negatives: int = 0
    """Negatives per discriminator step, half from the FIFO buffer and half from the reservoir; 0 = as many as the
    step's positives (a count-balanced batch)."""
    fifo_capacity: int = 512
    """Most recent verifier-passing (prompt, φ) pairs kept in the FIFO buffer."""
    reservoir_capacity: int = 4096
    """Size of the uniform reservoir sample of all past verifier-passing (prompt, φ) pairs."""

    def validate(self) -> None:
        """Raise ValueError, saying what to change, on settings that cannot run."""
        if self.g not in G_TRANSFORMS:
            raise ValueError(f"g must be one of {', '.join(G_TRANSFORMS)}; got {self.g!r}")
        if self.combine not in COMBINES:
            raise ValueError(f"combine must be one of {', '.join(COMBINES)}; got {self.combine!r}")
        if self.features not in FEATURES:
            raise ValueError(f"features must be one of {', '.join(FEATURES)}; got {self.features!r}")


def warn_unless_safe_under_gate(g: GTransform) -> None:
    """Warn when g lacks positive affinity or boundedness, the two properties r = v·g(D) relies on."""
    problems = []
    if not g.positive_affinity:
        problems.append(
            "it lacks positive affinity (g(D) < 0 for some D, so a verifier-PASSING row can score below "
            "a failing row's 0 and the gate then rewards failing)"
        )
    if not g.bounded:
        problems.append(
            "it is unbounded (|g(D)| grows without limit as D nears 0 or 1, so a few rows can dominate "
            "a group's advantages)"
        )
    if problems:
        warnings.warn(
            f"reward.varl: g={g.name} under the multiplicative gate r = v·g(D): {'; and '.join(problems)}. "
            f"Only g=D has both properties; use g=D or combine=add",
            stacklevel=3,
        )


class VARL:
    """r = v · g(D(x, φ(y))) (or v + λ·g(D) with ``combine='add'``); see the module docstring.

    ``verifier(answer, reference, meta)`` is the task's v; ``demonstrations`` maps a prompt to its
    demonstration texts (needed for ``features='completion'``).  ``discriminator`` replaces the one
    ``cfg.discriminator`` describes; ``g`` replaces the transform ``cfg.g`` names.

    >>> from rewardzoo.core.models import TinyModelConfig
    >>> from rewardzoo.tasks.multiplication import Multiplication, MultiplicationConfig
    >>> tiny = TinyModelConfig(hidden_size=16, num_layers=1, num_heads=2, num_kv_heads=1, intermediate_size=32)
    >>> task = Multiplication(MultiplicationConfig(n_train=20, n_eval=5))
    >>> varl = VARL.from_config(VARLConfig(discriminator=JudgeConfig(tiny=tiny)), RewardContext(task=task))
    >>> batch = Rollouts(prompts=["12*3="] * 3, completions=["36", "35", "x"], answers=["36", "35", None],
    ...                  references=["36"] * 3, group_ids=torch.zeros(3, dtype=torch.long), meta=[{}] * 3, step=0)
    >>> out = varl.score(batch)
    >>> out.components["verifier"].tolist(), out.rewards[1:].tolist()      # 35 fails, x is malformed: exactly 0
    ([1.0, 0.0, 0.0], [0.0, 0.0])
    >>> out.rewards[0].item() == out.components["disc_prob"][0].item() > 0  # 36 passes: r = D (g = D)
    True
    """

    def __init__(
        self,
        cfg: VARLConfig | None = None,
        *,
        verifier: Verifier,
        demonstrations: dict[str, list[str]] | None = None,
        seed: int = 0,
        policy_dir: str | Path | None = None,
        device: str = "cpu",
        discriminator: SequenceJudge | None = None,
        g: GTransform | None = None,
    ):
        self.cfg = cfg = cfg or VARLConfig()
        check_section(cfg, "reward.varl")
        self.g = g or get_transform(cfg.g)
        if cfg.combine == "multiply":
            warn_unless_safe_under_gate(self.g)
        if cfg.features == "completion" and not demonstrations:
            raise ValueError(
                "features='completion' needs the task's demonstrations (build VARL with "
                "VARL.from_config(cfg, RewardContext(task=task)))"
            )
        self.verifier = verifier
        self.demonstrations = demonstrations or {}
        self.warmup_steps = cfg.warmup_steps
        self.discriminator = discriminator or SequenceJudge.build(
            cfg.discriminator, policy_dir=policy_dir, seed=derive_seed(seed, "varl", "discriminator"), device=device
        )
        self.fifo = ReplayBuffer(cfg.fifo_capacity, "fifo", seed=derive_seed(seed, "varl", "fifo"))
        self.reservoir = ReplayBuffer(cfg.reservoir_capacity, "reservoir", seed=derive_seed(seed, "varl", "reservoir"))
        self.generator = torch.Generator().manual_seed(derive_seed(seed, "varl", "demonstrations"))
        self.updates = 0  # update calls so far (the first warmup_steps are the warm-up)

    SEES_TASK = True  # v is the task's verifier; the discriminator's positives are its demonstrations
    WARMUP_FREE = ("g", "combine", "additive_weight")  # how D enters the reward: the updates read v and D only

    @classmethod
    def from_config(cls, cfg: VARLConfig | None = None, ctx: RewardContext | None = None) -> VARL:
        """VARL with ``ctx.task``'s verifier and demonstrations, its seed, starting weights and device."""
        ctx = ctx or RewardContext()
        task = ctx.require_task("VARL")
        demos: dict[str, list[str]] = {}
        for e in task.train:
            demos.setdefault(e.prompt, []).append(e.demonstration)
        return cls(
            cfg,
            verifier=lambda answer, reference, meta: task.verify(answer, reference, meta),
            demonstrations=demos,
            seed=ctx.seed,
            policy_dir=ctx.init_dir,
            device=ctx.device,
        )

    def distribute(self, sharding) -> None:
        """Shard the discriminator (with its optimizer) over the run's processes (FSDP2; the trainer calls
        this once, before any step)."""
        self.discriminator.distribute(sharding)

    def features(self, batch: Rollouts) -> list[str | None]:
        """[N] φ(y) of every row: the parsed answer (None when malformed) or the whole completion."""
        return list(batch.answers) if self.cfg.features == "answer" else list(batch.completions)

    def score(self, batch: Rollouts) -> RewardOutput:
        """v of every row, D on every row with features (whatever v says), and r = v·g(D) or v + λ·g(D)."""
        rows_in = zip(batch.answers, batch.references, batch.meta)
        v = torch.tensor([float(self.verifier(a, r, m)) for a, r, m in rows_in], dtype=torch.float32)  # [N]
        phi = self.features(batch)
        rows = [i for i, f in enumerate(phi) if f is not None]
        prompts = judge_prompts(batch)
        z = self.discriminator.logit_reference([prompts[i] for i in rows], [phi[i] for i in rows])  # [n_feat]
        d = torch.zeros(len(batch))  # [N]
        g = torch.zeros(len(batch))  # [N] g(D) on rows with features, 0 elsewhere
        if rows:
            index = torch.tensor(rows)  # [n_feat]
            d[index] = torch.sigmoid(z)
            g[index] = self.g.from_logit(z).float()
        if self.cfg.combine == "multiply":
            rewards = torch.where(v > 0, v * g, torch.zeros_like(g))  # [N] exactly 0.0 where v = 0
        else:
            rewards = v + self.cfg.additive_weight * g  # [N]
        passing = v >= 1.0  # [N]
        metrics = {
            "reward/verifier_mean": v.mean().item(),
            "reward/disc_prob_mean": d[rows].mean().item() if rows else 0.0,
            "reward/disc_prob_passing_mean": d[passing].mean().item() if passing.any() else 0.0,
            "reward/g_passing_mean": g[passing].mean().item() if passing.any() else 0.0,
        }
        return RewardOutput(rewards=rewards, components={"verifier": v, "disc_prob": d}, metrics=metrics)

    def positives(self, batch: Rollouts) -> list[Pair]:
        """One (prompt, demonstration φ) pair per group: the reference answer, or a demonstration text of
        the prompt."""
        if self.cfg.features == "answer":
            return reference_pairs(batch)
        seen: set[int] = set()
        pairs = []
        for gid, prompt, question in zip(batch.group_ids.tolist(), batch.prompts, judge_prompts(batch)):
            demos = self.demonstrations.get(prompt)
            if gid not in seen and demos:
                seen.add(gid)
                pick = int(torch.randint(len(demos), (1,), generator=self.generator)) if len(demos) > 1 else 0
                pairs.append((question, demos[pick]))
        return pairs

    def negatives(self, n: int) -> tuple[list[Pair], list[Pair]]:
        """⌈n/2⌉ recent passing pairs from the FIFO buffer and ⌊n/2⌋ past ones from the reservoir."""
        return self.fifo.sample((n + 1) // 2), self.reservoir.sample(n // 2)

    def update(self, batch: Rollouts, out: RewardOutput) -> dict[str, float]:
        """Store this step's verifier-passing (prompt, φ) pairs, then one class-balanced BCE step of the
        discriminator on the batch's positives against FIFO + reservoir negatives.  ``out`` must be this
        reward's ``score(batch)`` (its ``verifier`` component says which rows pass, its ``disc_prob`` is D on
        them before the step).  Returns ``disc/…`` scalars, with ``disc/auc_ref_vs_passing`` when a row passed."""
        warm = self.updates < self.warmup_steps
        self.updates += 1
        phi = self.features(batch)
        passing = out.components["verifier"] >= 1.0  # [N]
        rows = passing.nonzero().flatten().tolist()
        prompts = judge_prompts(batch)
        fresh: list[Pair] = [(prompts[i], phi[i]) for i in rows if phi[i] is not None]
        self.fifo.add(fresh)
        self.reservoir.add(fresh)
        positives = self.positives(batch)
        recent, past = self.negatives(self.cfg.negatives or len(positives))
        metrics = {
            "disc/warmup": float(warm),
            "disc/n_positives": float(len(positives)),
            "disc/n_passing": float(len(fresh)),
            "disc/n_negatives_fifo": float(len(recent)),
            "disc/n_negatives_reservoir": float(len(past)),
            "disc/fifo_size": float(len(self.fifo)),
            "disc/reservoir_size": float(len(self.reservoir)),
        }
        negatives = recent + past
        if not positives or not negatives:  # nothing passed yet: no negative to contrast
            return {**metrics, "disc/updated": 0.0, "disc/empty_batch": 1.0}
        pairs = positives + negatives
        d_pos, d_neg = self.discriminator.prob_reference([p for p, _ in pairs], [a for _, a in pairs]).split(
            [len(positives), len(negatives)]
        )  # [n_pos], [n_neg]
        metrics.update({f"disc/{k}": v for k, v in classifier_diagnostics(d_pos, d_neg).items()})
        d_fresh = out.components["disc_prob"][[i for i in rows if phi[i] is not None]]  # [n_passing] D before this step
        if len(d_fresh):
            metrics["disc/auc_ref_vs_passing"] = reference_auc(d_pos, d_fresh)
        stats = self.discriminator.train_step(positives, negatives)
        metrics.update(
            {
                "disc/loss": stats["loss"],
                "disc/grad_norm": stats["grad_norm"],
                "disc/updated": 1.0,
                "disc/empty_batch": 0.0,
            }
        )
        return metrics

    def state_dict(self) -> dict:
        """Discriminator (+ optimizer), both buffers (+ generators), the demonstration generator and the
        update count."""
        return {
            "discriminator": self.discriminator.state_dict(),
            "fifo": self.fifo.state_dict(),
            "reservoir": self.reservoir.state_dict(),
            "generator": self.generator.get_state(),
            "updates": self.updates,
        }

    def load_state_dict(self, state: dict) -> None:
        """Restore :meth:`state_dict`."""
        self.discriminator.load_state_dict(state["discriminator"])
        self.fifo.load_state_dict(state["fifo"])
        self.reservoir.load_state_dict(state["reservoir"])
        self.generator.set_state(state["generator"])
        self.updates = state["updates"]
