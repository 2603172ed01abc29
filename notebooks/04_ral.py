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
# # 4. RAL: a judge as the only reward
#
# RAL paper needs prompts and *reference answers* — no verifier, no reward labels.  A judge
# D_φ(x, a) learns to tell the reference answer of prompt x from the policy's own answers, and its
# probability "this is a reference" is the policy's reward:
#
# ```
# r(x, y) = D_φ(x, a(y))   if the parsed answer a(y) is well formed, else 0
# L(φ)    = ½·E_ref[−log D_φ] + ½·E_policy[−log(1 − D_φ)]        class-balanced BCE, every step
# ```
#
# As the policy's answers come to look like references, the judge has to find subtler differences;
# on a task with one right answer per prompt the only thing all references share is being right.
# The library keeps the verifier out of RAL by construction (`RAL` takes no task), and uses it only
# to *log* how well the judge's score tracks correctness.
#
# Library pieces: `rewardzoo/judges/classifier.py` (`SequenceJudge`, the judge), `rewardzoo/rewards/ral.py`
# (`RAL`: warm-up, update gate, optional replay and Polyak judge), `rewardzoo/eval.py` (`pearson`).
# Docs: `docs/rewards/ral.md`.

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

from rewardzoo import RAL, Trainer, load_config, make_trainer, sft
from rewardzoo.core.logger import read_metrics
from rewardzoo.eval import pearson

# %% [markdown]
# ## The setting
#
# 1-digit × 1-digit products (61 training prompts, 20 held out), a tiny policy (2 layers, 64 wide,
# character tokenizer, built locally) after a 60-step SFT warm start, and a judge — a one-logit
# `SequenceJudge` — whose backbone is initialised from that warm start (`reward.ral.judge.init_from=policy`)
# under a fresh head.  `make_trainer` runs the SFT (cached under `runs/sft_cache`), builds the RAL
# reward from its config section alone, and the trainer around it; here we use its `rollout` to
# sample batches from the warm start.

# %%
common = [
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
    "grpo.batch_size=128",
    "grpo.micro_batch_size=128",
    "grpo.lr=1e-3",
    "grpo.beta=0.1",
    "sampling.max_new_tokens=4",
    "eval.every=5",
    "steps=30",
    "reward.name=ral",
    "reward.ral.judge.init_from=policy",
]
cfg = load_config(overrides=[*common, "run_dir=runs/nb04_warmup", "reward.ral.warmup_steps=40"])
trainer = make_trainer(cfg)
task, sft_dir = trainer.task, sft(cfg)  # sft() returns the cached warm start make_trainer just trained
print(
    f"{len(task.train)} training prompts, {len(task.eval)} held out; e.g. {task.train[0].prompt!r} -> "
    f"reference {task.train[0].reference!r}"
)

# %% [markdown]
# ## A judge learning to tell references from generated answers
#
# Before any RL, take the judge's warm-up apart.  Each round, `trainer.rollout` samples 8
# completions of each of 16 prompts from the warm start and returns them as `Rollouts` — text only,
# with the answers the task's *format* parser extracted (it says nothing about correctness).
# `RAL.score` gives each valid answer the judge's D; `RAL.update` measures the judge on this batch
# *before* training on it — so `judge/accuracy` is always measured on answers it has never seen —
# then takes one class-balanced BCE step: references (1) against the batch's answers (0).
#
# The verifier (`task.row_metrics`) enters only here in the notebook, to ask: does D also separate
# the *right* generated answers from the *wrong* ones?  (`rewardzoo.eval.pearson` of D with the
# verdict — the trainer logs the same number as `analysis/corr/judge_prob/correct`.)

# %%
ral = RAL(cfg.reward.ral, seed=cfg.seed, policy_dir=sft_dir)
history = []
for round_ in range(cfg.reward.ral.warmup_steps):
    batch, _ = trainer.rollout(-1000 - round_)  # a fresh batch of Rollouts (and its tokens) from the warm start
    out = ral.score(batch)
    correct = torch.tensor(task.row_metrics(batch.answers, batch.references, batch.meta)["correct"])
    valid = torch.tensor([a is not None for a in batch.answers])
    stats = ral.update(batch, out)
    d = out.components["judge_prob"]
    history.append(
        {
            "accuracy": stats["judge/accuracy"],
            "d_reference": stats["judge/d_reference_mean"],
            "d_right": d[valid & (correct == 1)].mean().item(),
            "d_wrong": d[valid & (correct == 0)].mean().item(),
            "corr": pearson(d[valid], correct[valid]),
        }
    )
right = correct[valid].mean().item()
print(
    f"share of the warm start's sampled answers that are right: {right:.2f}, so even a perfect judge's balanced "
    f"accuracy is capped at ½·(1 + {1 - right:.2f}) = {(2 - right) / 2:.2f}"
)

fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.6))
rounds = range(1, len(history) + 1)
left.plot(rounds, [h["accuracy"] for h in history], label="judge/accuracy (before its step)")
left.plot(rounds, [h["corr"] for h in history], label="corr(D, correct)")
left.set(xlabel="judge update", ylim=(-0.2, 1))
left.legend(fontsize=8)
for key, label in (("d_reference", "references"), ("d_right", "generated, right"), ("d_wrong", "generated, wrong")):
    right.plot(rounds, [h[key] for h in history], label=label)
right.set(xlabel="judge update", ylabel="mean D (judge's P(reference))", ylim=(0, 1))
right.legend(fontsize=8)
plt.show()
for label, h in (("first update", history[0]), ("last update", history[-1])):
    print(
        f"{label:<12}: judge/accuracy {h['accuracy']:.2f}, mean D: references {h['d_reference']:.2f}, "
        f"right answers {h['d_right']:.2f}, wrong answers {h['d_wrong']:.2f}; corr(D, correct) {h['corr']:.2f}"
    )

# %% [markdown]
# The judge was never told which answers are right.  It learns what references look like, and
# because every reference is a correct product, "looks like a reference" comes to mean "is the
# product": D of the right generated answers stays with D of the references, D of the wrong ones
# falls away, and the correlation of D with correctness climbs from about zero.  Its accuracy stays
# modest for a reason that is not a bug: a right generated answer *is* a reference string, so no
# judge can call it "generated" — with a share q of the answers right, the balanced accuracy of
# even a perfect judge is capped at ½·(1 + (1 − q)), printed above.  That is RAL's bet: once the
# policy is right, references and answers become indistinguishable and the reward stops pushing.

# %% [markdown]
# ## Co-trained versus frozen judge
#
# Now the real loop, twice, both from the warm start and from a copy of the judge just warmed up
# (its `state_dict`), so the two runs differ only in whether the judge keeps learning: RAL
# (updated every step, behind its gate) and the frozen-judge baseline of 002
# (`reward.ral.frozen=true`).  Each is `Trainer(cfg, task=..., reward=...)`, 30 GRPO steps at a
# deliberately high learning rate (1e-3) with a KL term to the warm start (β = 0.1: this notebook's
# choice; the repository's RAL recipes use β = 0, and 0.05 on refdist).  The logs hold, per step:
# `judge/accuracy`, `analysis/corr/judge_prob/correct` (the correlation above, over the valid answers,
# computed by the trainer outside the reward), `train/accuracy` (share of sampled answers that are right) and
# `eval/accuracy` (greedy, held out).

# %%
runs = {}
for name, frozen in (("co-trained", "false"), ("frozen", "true")):
    run_cfg = load_config(
        overrides=[*common, f"run_dir=runs/nb04_{name}", f"reward.ral.frozen={frozen}", "reward.ral.warmup_steps=0"]
    )  # the warm-up is done: start from its judge
    reward = RAL(run_cfg.reward.ral, seed=run_cfg.seed, policy_dir=sft_dir)
    reward.load_state_dict(ral.state_dict())
    Trainer(run_cfg, task=task, reward=reward, init_dir=sft_dir).train()
    runs[name] = read_metrics(f"{run_cfg.run_dir}/metrics.jsonl")

fig, axes = plt.subplots(1, 3, figsize=(14, 3.6))
for (name, rows), colour in zip(runs.items(), ("tab:blue", "tab:orange")):
    steps = [r for r in rows if "judge/accuracy" in r]
    evals = [r for r in rows if "eval/accuracy" in r]
    axes[0].plot([r["step"] for r in steps], [r["judge/accuracy"] for r in steps], color=colour, label=name)
    axes[1].plot(
        [r["step"] for r in steps], [r["analysis/corr/judge_prob/correct"] for r in steps], color=colour, label=name
    )
    axes[2].plot(
        [r["step"] for r in steps], [r["train/accuracy"] for r in steps], color=colour, label=f"{name}: train/accuracy"
    )
    axes[2].plot(
        [r["step"] for r in evals],
        [r["eval/accuracy"] for r in evals],
        "o--",
        color=colour,
        label=f"{name}: eval/accuracy",
    )
axes[0].set(title="judge/accuracy", xlabel="RL step", ylim=(0, 1))
axes[1].set(title="analysis/corr/judge_prob/correct", xlabel="RL step", ylim=(-0.3, 1))
axes[2].set(title="policy correctness (hidden verifier, logging only)", xlabel="RL step", ylim=(0, 1))
for ax in axes:
    ax.legend(fontsize=7)
plt.show()
for name, rows in runs.items():
    steps = [r for r in rows if "judge/accuracy" in r]
    corr = [r["analysis/corr/judge_prob/correct"] for r in steps]
    print(
        f"{name:<11} judge/accuracy {steps[0]['judge/accuracy']:.2f} -> {steps[-1]['judge/accuracy']:.2f}   "
        f"corr {corr[0]:.2f} -> {corr[-1]:.2f}   "
        f"train/accuracy {steps[0]['train/accuracy']:.2f} -> {steps[-1]['train/accuracy']:.2f}   "
        f"eval/accuracy {rows[0]['eval/accuracy']:.2f} -> {rows[-1]['eval/accuracy']:.2f}"
    )

# %% [markdown]
# What this tiny run shows, and what it does not:
#
# - **The frozen judge is exploited.**  Its accuracy drifts down toward ½ and below: the policy
#   learns to write answers the frozen judge rates as reference-like as the references themselves.
#   A fixed learned reward is a target the policy can walk around, as the lazy verifier of notebook
#   1 was.  The co-trained judge keeps up — its accuracy stays above the frozen one's, and its score
#   keeps more of its correlation with correctness — because every step it learns from the
#   policy's newest answers.
# - **Neither run teaches multiplication here.**  Policy correctness falls in both: 30 steps at a
#   high learning rate against a 0.1M-parameter judge whose reward correlates with correctness only
#   partly at the start (the warm-up's last correlation, printed above), and whose correlation the
#   moving policy erodes.  This is one seed on 61
#   prompts; nothing here is evidence for or against RAL at scale.
# - The repository's CPU benchmark (`benchmarks/ral_vs_rlvr.py`: 3-digit products, 40 steps, one
#   shared warm start, RLVR and RAL variants over 3–5 seeds) is where the comparison is made
#   properly: `benchmarks/results/ral_vs_rlvr.md`. There RAL with the recipe's settings climbs for
#   ten steps and then collapses on every seed, whatever the judge's size, warm-up, learning rate,
#   replay or Polyak averaging; only a smaller policy learning rate keeps it from collapsing (a
#   real but smaller gain than RLVR's). The failure is the one this notebook shows in miniature: the
#   policy moves faster than its judge can follow.

# %%
print(f"wall time of this notebook: {time.perf_counter() - notebook_start:.1f} s")

# %% [markdown]
# ## What to try next
#
# - `reward.ral.warmup_steps`: how long must the judge train before RL for the correlation to start high?
# - `reward.ral.replay_fraction=0.25` with `reward.ral.polyak=true` — the RAL paper's final-experiment extras.
# - `reward.ral.g=logit` (notebook 3): the same judge, a reward that descends KL(π ‖ p).
# - The CPU-scale comparison, with every knob tried and its interval, is `benchmarks/ral_vs_rlvr.py` (`benchmarks/results/ral_vs_rlvr.md`).
