# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 2. The GRPO core
#
# Every reward in rewardzoo trains on one shared GRPO core (`rewardzoo/core/`), so that a difference
# in results belongs to the reward and not to the trainer.  One step of `Trainer.train` reads:
#
# ```
# rollouts, gen = self.rollout(step)                          # sample G completions per prompt
# out           = self.score(rollouts)                        # reward.score  -> [N] rewards
# learned       = self.reward.update(rollouts, out)           # learned rewards learn here
# adv           = compute_advantages(out.rewards, group_ids)  # compare within each group
# stats         = self.policy_step(gen, adv)                  # clipped surrogate, KL, optimiser
# ```
#
# This notebook takes the pure functions behind the last two lines apart on small tensors you can
# read, then runs the whole loop for a few seconds.

# %%
# Outside this repository's environment (Colab, a fresh Jupyter) rewardzoo is not importable:
# this cell installs it from a checkout (by default the folder above this notebook) or from
# the git URL in REWARDZOO_REPO (in Colab: %env REWARDZOO_REPO=<url>).  Elsewhere it does nothing.
import importlib.util
import os
import subprocess
import sys

if importlib.util.find_spec("rewardzoo") is None:
    repo = os.environ.get("REWARDZOO_REPO", "..")
    if "://" in repo or repo.endswith(".git"):  # a git URL: clone it here
        subprocess.run(["git", "clone", "-q", "--depth=1", repo, "rewardzoo-src"], check=True)
        repo = "rewardzoo-src"
    if not os.path.isfile(os.path.join(repo, "rewardzoo", "__init__.py")):
        raise FileNotFoundError(
            f"no rewardzoo checkout at {os.path.abspath(repo)}: set REWARDZOO_REPO to one, or to its git URL"
        )
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "-e", repo], check=True)
    sys.path.insert(0, os.path.abspath(repo))  # importable at once, without a kernel restart

# %%
import time

notebook_start = time.perf_counter()

import warnings

warnings.filterwarnings("ignore", message="IProgress not found")  # tqdm's notebook bars; the runs here show none

from transformers.utils import logging as hf_logging

hf_logging.disable_progress_bar()  # no weight-loading bars in the outputs

import matplotlib.pyplot as plt
import torch

from rewardzoo import load_config, train
from rewardzoo.core.advantages import compute_advantages
from rewardzoo.core.logger import read_metrics
from rewardzoo.core.logprobs import fused_token_logprobs, naive_token_logprobs
from rewardzoo.core.loss import (
    LOSS_TYPES,
    LossNormalizer,
    aggregate,
    clipped_surrogate,
    expected_kl_gradient,
    kl_penalty,
)
from rewardzoo.core.memory import peak_tensor_bytes
from rewardzoo.divergences import kl

generator = torch.manual_seed(0)

# %% [markdown]
# ## Advantages: compare within the group
#
# GRPO samples G completions of the same prompt and asks only: which of them did better than their
# siblings?  The advantage of row i in group g is A_i = (r_i − mean_g) / (std_g + ε) (`grpo`);
# Dr. GRPO drops the division (`dr_grpo`), and `bnpo` divides by the whole batch's std.
#
# Two groups of four: the first has two right answers and two wrong ones, in the second every
# completion was right.  By hand first, with the unbiased std as `torch.std` computes it.

# %%
rewards = torch.tensor([1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0])
group_ids = torch.tensor([0, 0, 0, 0, 1, 1, 1, 1])
first = rewards[:4]
by_hand = (first - first.mean()) / (first.std() + 1e-4)
print(
    "group 0 by hand:      ",
    [round(x, 4) for x in by_hand.tolist()],
    f"(mean {first.mean():.2f}, std {first.std():.4f})",
)
for kind in ("grpo", "dr_grpo", "bnpo"):
    print(f"{kind:<8} library:      ", [round(x, 4) for x in compute_advantages(rewards, group_ids, kind).tolist()])

# %% [markdown]
# The library matches the hand computation, and the second group gets **exactly 0** in every
# variant: when all G completions score the same, there is nothing to prefer, and the prompt
# contributes no gradient at all.  That is why the trainer logs `reward/zero_std_frac` — the share
# of groups that teach nothing this step.  A reward that is 0 or 1 on a task the policy always (or
# never) solves wastes the whole batch.

# %% [markdown]
# ## Three ways to average a loss over tokens
#
# The per-token loss ℓ_it has to be reduced to one number per step.  Three conventions, named as in
# TRL, differ in how much each *token* counts (`rewardzoo/core/loss.py`, `aggregate`):
#
# - `grpo`: mean over each sequence's tokens, then mean over sequences — a token of a short answer
#   weighs more than a token of a long one;
# - `dapo`: sum over all tokens / number of tokens in the step — every token weighs the same;
# - `dr_grpo`: sum / (N × max_completion_length) — a constant denominator, no length dependence.
#
# One batch of three sequences of 1, 3 and 6 tokens: the derivative of the step loss with respect to
# each token's loss *is* that token's weight.

# %%
lengths = torch.tensor([1, 3, 6])
mask = torch.arange(6).unsqueeze(0) < lengths.unsqueeze(1)  # [3, 6] real tokens
per_token = torch.randn(3, 6).abs().requires_grad_()  # [3, 6] any per-token losses
norm = LossNormalizer(num_sequences=3, num_tokens=int(mask.sum()), max_completion_length=8)
weights = {}
for loss_type in LOSS_TYPES:
    (weights[loss_type],) = torch.autograd.grad(aggregate(per_token, mask, loss_type, norm), per_token)
    print(
        f"{loss_type:<8} loss {aggregate(per_token, mask, loss_type, norm).item():.4f}   weight of one token in "
        f"the 1-, 3-, 6-token sequence: " + ", ".join(f"{weights[loss_type][i, 0].item():.4f}" for i in range(3))
    )

fig, axes = plt.subplots(1, 3, figsize=(11, 2.6), sharey=True)
for ax, loss_type in zip(axes, LOSS_TYPES):
    ax.imshow(weights[loss_type].masked_fill(~mask, float("nan")), cmap="viridis", vmin=0, vmax=0.34)
    ax.set(title=loss_type, xlabel="token", yticks=range(3), yticklabels=["1 token", "3 tokens", "6 tokens"])
plt.show()

# %% [markdown]
# Under `grpo` the single token of the short answer carries a third of the loss on its own; under
# `dapo` every token carries 1/10.  With rewards that favour short answers (or long ones) the
# choice changes what length the policy drifts to — Dr. GRPO's argument for a constant denominator.
# The trainer divides by these *global* counts in every micro-batch, so gradient accumulation gives
# exactly the one-batch loss (a property test in `tests/core/test_loss.py`).

# %% [markdown]
# ## The clipped surrogate and clip-higher
#
# With ρ = π_θ(y_t) / π_old(y_t), the per-token loss is −min(ρ A, clip(ρ, 1 − ε_low, 1 + ε_high) A).
# Once ρ leaves the clip range in the direction the advantage favours, the gradient is zero: the
# step cannot move a token's probability too far from where it was sampled.  DAPO's *clip-higher*
# raises ε_high (0.28 instead of 0.2) so that a rare token with a positive advantage may grow
# more before it is clipped — rare tokens are where exploration lives.

# %%
ratio = torch.linspace(0.5, 1.6, 221)  # ρ = π_θ / π_old, one token per row: [221]
fig, axes = plt.subplots(1, 2, figsize=(11, 3.5), sharex=True)
for ax, advantage in zip(axes, (1.0, -1.0)):
    for eps_high in (0.2, 0.28):
        loss, low, high = clipped_surrogate(ratio.unsqueeze(1), torch.full((221,), advantage), 0.2, eps_high)
        ax.plot(ratio, -loss[:, 0], label=f"ε_high = {eps_high}")
    ax.set(title=f"A = {advantage:+.0f}", xlabel="ratio ρ = π_θ / π_old", ylabel="objective −ℓ")
    ax.axvline(1, color="grey", lw=0.5)
    ax.legend()
plt.show()
for eps_high in (0.2, 0.28):
    _, _, high = clipped_surrogate(torch.tensor([[1.25]]), torch.tensor([1.0]), eps_low=0.2, eps_high=eps_high)
    print(f"ρ = 1.25, A = +1, ε_high = {eps_high}: clipped (no gradient)? {bool(high)}")
print("(the trainer logs the share of clipped tokens as policy/clip_low_frac and policy/clip_high_frac)")

# %% [markdown]
# ## The KL estimators and what their gradients are
#
# With β > 0 the loss adds β·k_t, an estimate of KL(π_θ ‖ π_ref) from the sampled tokens only
# (log r = log π_ref − log π_θ).  What matters for training is not the estimator's value but its
# **expected gradient** — and the four estimators differ there:
#
# | name | k_t | E_π[k] | E_π[∇k] |
# | --- | --- | --- | --- |
# | `k1` | −log r | KL(π‖π_ref) | 0 — no pull at all |
# | `k2` | ½ (log r)² | biased | ∇KL(π‖π_ref) |
# | `k3` | (r − 1) − log r | KL(π‖π_ref) | ∇KL(π_ref‖π), the *forward* KL |
# | `k3_ratio` | ρ·k3 | KL(π‖π_ref) | ∇KL(π‖π_ref) — the library's default |
#
# Check it exactly on a categorical policy over 6 answers: `expected_kl_gradient` sums
# π(y)·∇_θ k(y) over every answer (sampling probabilities held fixed, as sampling does), and
# autograd through `rewardzoo.divergences.kl` gives the two true gradients.

# %%
logits, ref_logits = torch.randn(6, dtype=torch.float64) * 2, torch.randn(6, dtype=torch.float64) * 2
pi, pi_ref = torch.softmax(logits, 0), torch.softmax(ref_logits, 0)
theta = logits.clone().requires_grad_()
(reverse,) = torch.autograd.grad(kl(torch.softmax(theta, 0), pi_ref), theta)  # ∇ KL(π‖π_ref)
theta = logits.clone().requires_grad_()
(forward,) = torch.autograd.grad(kl(pi_ref, torch.softmax(theta, 0)), theta)  # ∇ KL(π_ref‖π)
log_pi, log_ref = torch.log(pi).unsqueeze(0), torch.log(pi_ref).unsqueeze(0)
print(f"KL(π‖π_ref) = {kl(pi, pi_ref).item():.4f}\n")
print(f"{'estimator':<10} {'E_π[k]':>8} {'|E∇k − ∇KL(π‖π_ref)|':>22} {'|E∇k − ∇KL(π_ref‖π)|':>22} {'|E∇k|':>8}")
for name in ("k1", "k2", "k3", "k3_ratio"):
    value = (pi * kl_penalty(log_pi, log_ref, log_pi, name)[0]).sum().item()
    grad = expected_kl_gradient(logits, ref_logits, name)
    print(
        f"{name:<10} {value:>8.4f} {(grad - reverse).abs().max().item():>22.1e} "
        f"{(grad - forward).abs().max().item():>22.1e} {grad.abs().max().item():>8.4f}"
    )

# %% [markdown]
# Read the rows: `k1` has the right value and no expected gradient at all (a β·k1 term does
# nothing on average); `k3` is unbiased in value but pulls along the *forward* KL — what TRL's
# default does; `k2` and `k3_ratio` follow ∇KL(π‖π_ref), and `k3_ratio` keeps k3's unbiased value
# as well.  β = 0 (the default) skips the reference forward pass entirely.

# %% [markdown]
# ## Fused log-probs: the same numbers without the [tokens × vocab] tensor
#
# The policy loss needs log π_θ(y_t) of each sampled token, and the entropy of each next-token
# distribution.  The naive way materialises logits for every position and the whole vocabulary
# (fp32: 4 bytes × tokens × vocab — 2.3 GiB for 4,096 tokens of a 151,936-word vocabulary) and
# autograd keeps several such tensors for the backward pass.  `fused_token_logprobs` computes both
# in chunks of positions from the last hidden state and the output weight, and recomputes each
# chunk in backward.  Same values and gradients; the memory is measured by torch's tensor tracker
# (`rewardzoo.core.memory.peak_tensor_bytes`) on 1,024 positions and a 16,384-word vocabulary.

# %%
K, H, V = 1024, 64, 16384
hidden = torch.randn(K, H, requires_grad=True)
weight = (0.05 * torch.randn(V, H)).requires_grad_()
targets = torch.randint(0, V, (K,))
paths = {
    "fused": lambda: fused_token_logprobs(hidden, weight, targets, chunk_size=128),
    "naive": lambda: naive_token_logprobs(hidden, weight, targets),
}
values, grads, peaks = {}, {}, {}
for name, forward in paths.items():
    values[name] = [t.detach() for t in forward()]  # (log-probs [K], entropies [K])
    # forward and backward of Σ log p + Σ entropy, measured as one step
    grads[name], peaks[name] = peak_tensor_bytes(
        lambda forward=forward: torch.autograd.grad(sum(t.sum() for t in forward()), (hidden, weight))
    )
    print(f"{name:<6} forward + backward: peak {peaks[name] / 2**20:6.1f} MiB of tensors")
print(
    f"one [K x V] fp32 logits tensor: {K * V * 4 / 2**20:.0f} MiB; "
    f"ratio fused / naive {peaks['fused'] / peaks['naive']:.3f}"
)
print(
    "max |fused − naive|: "
    + ", ".join(
        f"{what} {(f - n).abs().max().item():.1e}"
        for what, f, n in zip(
            ("log-prob", "entropy", "grad hidden", "grad weight"),
            [*values["fused"], *grads["fused"]],
            [*values["naive"], *grads["naive"]],
        )
    )
)

# %% [markdown]
# The naive path holds several full [K × V] tensors at its peak (logits, their log-softmax, its
# exponential, the gradient), the fused one a few chunks of 128 positions — and the gap grows with
# the number of tokens, so at real sizes it decides whether a batch fits at all
# (`benchmarks/results/logprob_memory.txt`: 0.53 vs 11.47 GiB at 4,096 tokens of Qwen's vocabulary).
# The trainer always takes the fused path through `PolicyLogProbs`, unless the model's output head
# is not a scaled linear layer (then it warns and uses the model's own logits).

# %% [markdown]
# ## The whole loop, for a few seconds
#
# Finally the real thing: the tiny policy (a 2-layer, 64-wide Qwen3 with a character tokenizer,
# built locally — no download), an SFT warm start of 60 steps on 1-digit × 1-digit products, then
# 30 GRPO steps of RLVR with the task's exact verifier as the reward.  Every setting is a config key
# (`rewardzoo train --help-config` lists them all); the run writes `metrics.jsonl` under `run_dir`.

# %%
cfg = load_config(
    overrides=[
        "run_dir=runs/nb02_rlvr",
        "sft.cache_dir=runs/sft_cache",
        "overwrite=true",
        "logging.progress=false",
        "logging.tensorboard=false",
        "checkpoint_every=0",
        "task.multiplication.digits_a=1",
        "task.multiplication.n_eval=20",
        "model.tiny.hidden_size=64",
        "model.tiny.intermediate_size=192",
        "model.tiny.num_layers=2",
        "sft.steps=60",
        "steps=30",
        "grpo.batch_size=128",
        "grpo.micro_batch_size=128",
        "grpo.lr=1e-3",
        "sampling.max_new_tokens=4",
        "eval.every=5",
    ]
)
run_start = time.perf_counter()
last = train(cfg)
print(
    f"SFT + {cfg.steps} RL steps in {time.perf_counter() - run_start:.1f} s; "
    f"held-out accuracy at the end {last['eval/accuracy']:.2f}"
)

# %%
rows = read_metrics(f"{cfg.run_dir}/metrics.jsonl")
train_rows = [r for r in rows if "reward/mean" in r]
eval_rows = [r for r in rows if "eval/accuracy" in r]
steps = [r["step"] for r in train_rows]
fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.5))
left.plot(steps, [r["reward/mean"] for r in train_rows], label="reward/mean (sampled)")
left.plot([r["step"] for r in eval_rows], [r["eval/accuracy"] for r in eval_rows], "o-", label="eval/accuracy (greedy)")
left.plot(steps, [r["reward/zero_std_frac"] for r in train_rows], label="reward/zero_std_frac")
left.set(xlabel="RL step", ylim=(0, 1))
left.legend(fontsize=8)
right.plot(steps, [r["policy/entropy"] for r in train_rows], label="policy/entropy")
right.plot(steps, [r["policy/clip_high_frac"] for r in train_rows], label="policy/clip_high_frac")
right.set(xlabel="RL step")
right.legend(fontsize=8)
plt.show()

# %% [markdown]
# Reading the curves: the sampled reward — the share of right answers on the 61 training prompts —
# climbs as the policy puts its mass on the products it already half-knew, and the entropy of its
# next-token distributions falls with it.  `reward/zero_std_frac`, the share of groups whose eight
# completions all scored the same, grows as more prompts become always-right: those groups teach
# nothing any more.  The greedy held-out accuracy does **not** follow: 20 products the policy never
# saw, in SFT or in RL, move by a product or two either way (one product = 0.05).  RL sharpens what
# the warm start can already sample; it cannot invent a multiplication fact it has never been
# shown — the same pattern as the repository's 2-digit benchmark (`docs/rewards/rlvr.md`).  At
# μ = 1 (one optimiser step per batch) the ratio is exactly 1, so the clip fractions stay 0; raise
# `grpo.num_iterations` to see them move.

# %%
print(f"wall time of this notebook: {time.perf_counter() - notebook_start:.1f} s")

# %% [markdown]
# ## What to try next
#
# - Rerun the loop with `grpo.advantage=dr_grpo` or `grpo.loss_type=dapo` and compare the curves
#   (one seed proves little: `seed=1`, `seed=2`, and `rewardzoo.eval.mean_ci` over them).
# - Set `grpo.beta=0.1` and `grpo.kl_estimator=k1`, then `k3_ratio`: `policy/kl` is logged either
#   way, but only one of them holds the policy near the warm start.
# - `grpo.num_iterations=2` with `grpo.epsilon_high=0.28`: now the ratio leaves 1 and
#   `policy/clip_high_frac` measures clip-higher at work.
# - Raise `K` and `V` in the fused cell until the naive path no longer fits in your memory.
