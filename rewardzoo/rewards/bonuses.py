"""Exploration and usefulness bonuses (the RcRL paper, App. B), added to any reward by a wrapper.

For a group of G rollouts y_1..y_G of prompt x, with the current policy's last-layer hidden
states:

    h_i   = mean of the hidden states at the positions that produce y_i's tokens        [H]
    φ_i   = R·h_i − mean_j R·h_j          R: a fixed seeded Gaussian projection to d dims   [d]
    e_i   = φ_iᵀ (Σ_j φ_j φ_jᵀ + λ·I)⁻¹ φ_i      leverage / elliptical bonus (B.1)           [G]
            λ = ridge · tr(Σ_j φ_j φ_jᵀ) / d      (scale-free)
    ℓ_j   = −mean log π(y_j | x)                  log-perplexity of a sibling alone (B.2)
    ℓ_j|i = −mean log π(y_j | x, y_i, x)          … with y_i shown first as a demonstration
    u_i   = 1/(G − 1) · Σ_{j ≠ i} (ℓ_j − ℓ_j|i)   usefulness: how much y_i helps predict its siblings

    r'_i  = r_i + λ_exp · z(e)_i + λ_use · z(u)_i        z = (b − mean_group b) / (std_group b + 10⁻⁶)

B.3 ("Reward Normalization and Combination") is empty in the RcRL paper's text: the within-group z-score and
the additive combination are **our choice**.  They keep each group's mean reward unchanged (so
RcRL's pairwise mean stays ½) and make the weights scale-free.  Also ours: mean pooling of the last
layer, the random projection (d = 4 by default, below G so the leverage is informative), the
ridge, and the context layout ``x + y_i + separator + x`` before y_j.  The hidden states come from
the *current* policy (adapters on), without gradients; both bonuses need the policy, which
:meth:`WithBonuses.bind_policy` receives from ``make_trainer`` (and passes on to the wrapped
reward).

Switch on for any reward with ``reward.bonuses.exploration_weight`` / ``usefulness_weight`` > 0:
:func:`rewardzoo.zoo.build_reward` then wraps the named reward.  Untested: GPU and hub models.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch

from rewardzoo.core.config import check_section
from rewardzoo.core.logprobs import PolicyLogProbs, pack_rows
from rewardzoo.core.models import causal_lm
from rewardzoo.core.types import PolicyReadingReward, RewardOutput, Rollouts, ShardedReward, derive_seed
from rewardzoo.judges.pairwise import group_rows


@dataclass
class BonusConfig:
    """Exploration / usefulness bonuses on top of the named reward (the RcRL paper, App. B); both off by default."""

    RANGES: ClassVar[dict[str, str]] = {
        "exploration_weight": "[0, inf)",
        "usefulness_weight": "[0, inf)",
        "dim": "[1, inf)",
        "ridge": "(0, inf)",
        "micro_batch_size": "[1, inf)",
    }

    exploration_weight: float = 0.0
    """λ_exp: weight of the z-scored representation (leverage) bonus; 0 = off."""
    usefulness_weight: float = 0.0
    """λ_use: weight of the z-scored usefulness bonus; 0 = off."""
    dim: int = 4
    """d: dimensions of the random projection of the hidden states (keep it below the group size)."""
    ridge: float = 1e-3
    """Ridge of the leverage, relative to the trace of the group's covariance."""
    separator: str = "\n\n"
    """Text between the demonstration rollout and the repeated prompt in the usefulness context."""
    micro_batch_size: int = 64
    """Sequences per policy forward when computing the bonuses."""

    @property
    def enabled(self) -> bool:
        """Whether any bonus is switched on."""
        return self.exploration_weight > 0 or self.usefulness_weight > 0


def group_zscore(values: torch.Tensor, groups: list[list[int]]) -> torch.Tensor:
    """[N] values standardised within each group (mean 0; a constant group gives 0)."""
    out = torch.zeros_like(values, dtype=torch.float64)  # [N]
    for g in groups:
        v = values[g].double()  # [G]
        out[g] = (v - v.mean()) / (v.std(unbiased=False) + 1e-6)
    return out


def leverage_scores(reps: torch.Tensor, ridge: float) -> torch.Tensor:
    """[G] e_i = φ_iᵀ (ΦᵀΦ + λI)⁻¹ φ_i of centred representations φ = reps − mean, λ = ridge · tr(ΦᵀΦ) / d."""
    phi = reps.double() - reps.double().mean(0, keepdim=True)  # [G, d]
    cov = phi.T @ phi  # [d, d]
    d = cov.shape[0]
    lam = ridge * max(float(torch.trace(cov)), 1e-12) / d
    solved = torch.linalg.solve(cov + lam * torch.eye(d, dtype=cov.dtype), phi.T)  # [d, G]
    return (phi * solved.T).sum(1)  # [G]


def usefulness_scores(nll_alone: torch.Tensor, nll_given: torch.Tensor) -> torch.Tensor:
    """[G] u_i = 1/(G − 1) Σ_{j≠i} (ℓ_j − ℓ_j|i) from [G] ℓ_j and [G, G] ℓ_j|i (row i = the demonstration)."""
    G = nll_alone.shape[0]
    gain = nll_alone.unsqueeze(0) - nll_given  # [G, G]
    gain = gain * (1 - torch.eye(G, dtype=gain.dtype))  # [G, G]
    return gain.sum(1) / (G - 1)  # [G]


class WithBonuses:
    """``reward`` plus the z-scored exploration and usefulness bonuses (see the module docstring)."""

    def __init__(self, reward, cfg: BonusConfig, *, seed: int = 0):
        check_section(cfg, "reward.bonuses")
        self.reward = reward
        self.cfg = cfg
        self.seed = seed
        self.policy = self.tokenizer = None
        self.projection: torch.Tensor | None = None  # [d, H]

    @property
    def warmup_steps(self) -> int:
        """The wrapped reward's warm-up."""
        return self.reward.warmup_steps

    def bind_policy(self, policy: torch.nn.Module, tokenizer) -> None:
        """Keep the (live) policy for the bonuses and pass it on to the wrapped reward when it wants it."""
        self.policy, self.tokenizer = policy, tokenizer
        H = causal_lm(policy).config.get_text_config().hidden_size
        gen = torch.Generator().manual_seed(derive_seed(self.seed, "bonus-projection") % 2**63)
        R = torch.randn(self.cfg.dim, H, generator=gen, dtype=torch.float64)  # [d, H]
        self.projection = R / self.cfg.dim**0.5  # [d, H]
        if isinstance(self.reward, PolicyReadingReward):
            self.reward.bind_policy(policy, tokenizer)

    def distribute(self, sharding) -> None:
        """Let the wrapped reward shard its judges (FSDP2), when it has any."""
        if isinstance(self.reward, ShardedReward):
            self.reward.distribute(sharding)

    def score(self, batch: Rollouts) -> RewardOutput:
        """The wrapped reward's output with the weighted, z-scored bonuses added."""
        if self.policy is None:
            raise RuntimeError(
                "the exploration/usefulness bonuses need the policy: call bind_policy(policy, tokenizer) "
                "before scoring (rewardzoo.make_trainer does)"
            )
        out = self.reward.score(batch)
        groups = group_rows(batch.group_ids)
        rewards = out.rewards.double()  # [N]
        parts = {}
        if self.cfg.exploration_weight > 0:
            parts["exploration"] = (self.cfg.exploration_weight, self.exploration(batch, groups))
        if self.cfg.usefulness_weight > 0:
            parts["usefulness"] = (self.cfg.usefulness_weight, self.usefulness(batch, groups))
        for name, (weight, raw) in parts.items():
            rewards = rewards + weight * group_zscore(raw, groups)  # [N]
            out.components[f"bonus/{name}"] = raw.float()
            out.metrics[f"reward/bonus/{name}_mean"] = raw.mean().item()
        out.rewards = rewards.float()
        return out

    @torch.no_grad()
    def exploration(self, batch: Rollouts, groups: list[list[int]]) -> torch.Tensor:
        """[N] leverage of each rollout's projected mean hidden state within its group."""
        tok = self.tokenizer
        prompts = [tok(p)["input_ids"] for p in batch.prompts]
        comps = [tok(c, add_special_tokens=False)["input_ids"] for c in batch.completions]
        starts = range(0, len(batch), self.cfg.micro_batch_size)
        reps = torch.cat([self._mean_hidden(prompts, comps, s) for s in starts])  # [N, H]
        phi = reps @ self.projection.T  # [N, d]
        out = torch.zeros(len(batch), dtype=torch.float64)  # [N]
        for g in groups:
            out[g] = leverage_scores(phi[g], self.cfg.ridge)  # [G]
        return out

    @torch.no_grad()
    def usefulness(self, batch: Rollouts, groups: list[list[int]]) -> torch.Tensor:
        """[N] mean reduction of the siblings' log-perplexity when the rollout is shown first."""
        tok, sep = self.tokenizer, self.cfg.separator
        prompts, comps, index = [], [], []
        for g in groups:
            for i in [None, *g]:  # None: the siblings alone; i: rollout i as the demonstration
                for j in g:
                    if i != j:
                        x = batch.prompts[j]
                        context = x if i is None else batch.prompts[i] + batch.completions[i] + sep + x
                        prompts.append(tok(context)["input_ids"])
                        comps.append(tok(batch.completions[j], add_special_tokens=False)["input_ids"])
                        index.append((i, j))
        nll = torch.cat(
            [self._nll(prompts, comps, s) for s in range(0, len(prompts), self.cfg.micro_batch_size)]
        )  # [M]
        value = dict(zip(index, nll.tolist()))
        out = torch.zeros(len(batch), dtype=torch.float64)  # [N]
        for g in groups:
            alone = torch.tensor([value[(None, j)] for j in g], dtype=torch.float64)  # [G]
            given = torch.tensor(
                [[value[(i, j)] if i != j else 0.0 for j in g] for i in g], dtype=torch.float64
            )  # [G, G]
            out[g] = usefulness_scores(alone, given)  # [G]
        return out

    def _packed(self, prompts: list[list[int]], comps: list[list[int]], start: int):
        """Rows start … start + micro_batch_size − 1 packed for one policy forward."""
        prompts, comps = (
            prompts[start : start + self.cfg.micro_batch_size],
            comps[start : start + self.cfg.micro_batch_size],
        )
        ids = torch.zeros(len(comps), max(max(map(len, comps)), 1), dtype=torch.long)  # [n, T]
        mask = torch.zeros_like(ids, dtype=torch.bool)  # [n, T]
        for i, c in enumerate(comps):
            ids[i, : len(c)] = torch.tensor(c, dtype=torch.long)
            mask[i, : len(c)] = True
        device = next(self.policy.parameters()).device
        return pack_rows(prompts, ids, mask, list(range(len(comps))), self.tokenizer.pad_token_id).to(device)

    def _mean_hidden(self, prompts: list[list[int]], comps: list[list[int]], start: int) -> torch.Tensor:
        """[n, H] mean last hidden state over the positions producing each completion's tokens (0 for an empty one)."""
        b = self._packed(prompts, comps, start)
        was_training = self.policy.training
        self.policy.eval()
        decoder = causal_lm(self.policy).get_decoder()
        hidden = decoder(input_ids=b.input_ids, attention_mask=b.attention_mask).last_hidden_state  # [n, S, H]
        self.policy.train(was_training)
        n, T = b.positions.shape
        h = hidden.gather(1, b.positions.unsqueeze(-1).expand(n, T, hidden.shape[-1])).double()  # [n, T, H]
        m = b.mask.unsqueeze(-1).double()  # [n, T, 1]
        return ((h * m).sum(1) / m.sum(1).clamp(min=1)).cpu()  # [n, H]

    def _nll(self, prompts: list[list[int]], comps: list[list[int]], start: int) -> torch.Tensor:
        """[n] mean negative log-likelihood of each completion given its prompt (0 for an empty one)."""
        b = self._packed(prompts, comps, start)
        was_training = self.policy.training
        self.policy.eval()
        logp, _ = PolicyLogProbs(self.policy)(b)  # [n, T]
        self.policy.train(was_training)
        return (-(logp * b.mask).sum(1) / b.mask.sum(1).clamp(min=1)).double().cpu()  # [n]

    def update(self, batch: Rollouts, out: RewardOutput) -> dict[str, float]:
        """The wrapped reward's update (the bonuses learn nothing)."""
        return self.reward.update(batch, out)

    def state_dict(self) -> dict:
        """The wrapped reward's state (the projection is derived from the seed)."""
        return {"reward": self.reward.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        """Restore :meth:`state_dict`."""
        self.reward.load_state_dict(state["reward"])
