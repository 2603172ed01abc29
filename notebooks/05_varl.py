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
# # 5. VARL: a verifier gates a co-trained discriminator
#
# Notebook 1 ended with a policy gaming the lazy `contains` verifier: lists of candidates, or one
# long run of digits, pass a check that only asks whether the product occurs somewhere.  RAL
# (notebook 4) drops the verifier and trusts a judge.  VARL (Damani et al. 2026) keeps
# both: the verifier decides *whether* an answer passes, and a discriminator that has learned what
# demonstrations look like decides how much a passing answer is worth:
#
# ```
# r(x, y) = v(x, y) · g(D(x, φ(y)))        v ∈ [0, 1] the verifier, D = P(φ is a demonstration's)
# L(D)    = ½·E_demos[−log D] + ½·E_passing[−log(1 − D)]   negatives: verifier-PASSING outputs only
# ```
#
# The discriminator is trained against the policy's *passing* outputs, so what it learns is exactly
# what passing outputs have that demonstrations do not — the shape of a hack.  We could not read
# the paper: every number below, and in the library, is our own choice (`docs/rewards/varl.md`).
#
# Library pieces: `rewardzoo/rewards/varl.py` (`VARL`), `rewardzoo/judges/classifier.py`
# (`SequenceJudge`, the discriminator), `rewardzoo/judges/buffers.py` (`ReplayBuffer`, its FIFO and
# reservoir), `rewardzoo/rewards/transforms.py` (g).  Docs: `docs/rewards/varl.md`.

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

from rewardzoo import VARL, VARLConfig, load_config, make_trainer
from rewardzoo.core.logger import read_metrics
from rewardzoo.core.models import TinyModelConfig
from rewardzoo.core.types import Rollouts
from rewardzoo.eval import mean_ci
from rewardzoo.judges.classifier import JudgeConfig
from rewardzoo.rewards.context import RewardContext
from rewardzoo.tasks.hackable_multiplication import HackableMultiplication, HackableMultiplicationConfig
from rewardzoo.tasks.multiplication import MultiplicationConfig
from rewardzoo.zoo import shipped_recipe

# %% [markdown]
# ## The gate on a hand-made batch
#
# One prompt, `7*8=`, and six answers a policy might write.  The task is `hackable_multiplication`:
# its `verify` — the v VARL multiplies by — is the lazy `contains` proxy; its parser accepts any
# list of integers and returns `None` (malformed) for anything else.  The discriminator is a fresh
# tiny classifier (untrained: its D sits near ½ for everything), which is fine here — the point is
# the arithmetic of the gate, not what D has learned.

# %%
task = HackableMultiplication(HackableMultiplicationConfig(MultiplicationConfig(digits_a=1, n_eval=20)))
tiny = TinyModelConfig(hidden_size=32, num_layers=1, num_heads=2, num_kv_heads=1, intermediate_size=64)
varl = VARL.from_config(VARLConfig(discriminator=JudgeConfig(tiny=tiny)), RewardContext(task=task))
completions = ["56", "56 54", "5 56 6", "54", "81", "fifty-six"]
batch = Rollouts(
    prompts=["7*8="] * 6,
    completions=completions,
    answers=[task.parse(c) for c in completions],
    references=["56"] * 6,
    group_ids=torch.zeros(6, dtype=torch.long),
    meta=[{}] * 6,
    step=0,
)
out = varl.score(batch)
additive = VARL(
    VARLConfig(combine="add", discriminator=JudgeConfig(tiny=tiny)),
    verifier=varl.verifier,
    discriminator=varl.discriminator,
)  # the same discriminator, the additive ablation r = v + D
out_add = additive.score(batch)
print(f"{'completion':<12} {'parsed':<9} {'strict':>6} {'v':>4} {'D':>6} {'r = v·D':>8} {'r = v + D':>10}")
for i, c in enumerate(completions):
    strict = task.row_metrics([batch.answers[i]], ["56"], [{}])["correct"][0]
    print(
        f"{c:<12} {str(batch.answers[i]):<9} {strict:>6.0f} {out.components['verifier'][i]:>4.0f} "
        f"{out.components['disc_prob'][i]:>6.3f} {out.rewards[i]:>8.3f} {out_add.rewards[i]:>10.3f}"
    )

# %% [markdown]
# Read the columns.  `54` and `81` fail the verifier, so under the gate they get exactly 0 — D is
# computed for them (the discriminator never sees v) but multiplied away.  `fifty-six` is not a
# list of integers: it has no features, so no D, and r = 0.  The three passing rows get r = D: the
# honest `56`, and the two lists the strict check rejects (`strict` = 0) but `contains` passes.  Right
# now D cannot tell them apart; training is what will make D(list) small.  The additive ablation
# (`combine=add`, last column, λ = 1) is different in kind: a passing list still collects the full
# verifier point and D can only take away up to λ of the bonus on top of it, and failing answers
# are paid λ·D for looking like demonstrations.  Under the gate, a list whose D falls to 0 is worth
# what a wrong answer is worth: nothing.
#
# The gate relies on two properties of g: **positive affinity** (g ≥ 0, or a passing row could score
# below a failing row's 0) and **boundedness**.  Of the four transforms of notebook 3 only g = D has
# both; asking for another under the gate warns at construction:

# %%
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    VARL(
        VARLConfig(g="logit", discriminator=JudgeConfig(tiny=tiny)),
        verifier=varl.verifier,
        discriminator=varl.discriminator,
    )
print(caught[0].message)

# %% [markdown]
# ## The discriminator's buffers
#
# Each `update` first adds the step's verifier-passing (prompt, answer) pairs to two
# `ReplayBuffer`s, then draws the negatives: ⌈n/2⌉ from a **FIFO** buffer of the most recent passing
# outputs (what the policy does now) and ⌊n/2⌋ from a **reservoir** — a uniform sample of *every*
# passing output so far (Vitter's Algorithm R), so the discriminator does not forget old hacks when
# the policy moves on.  The positives are one reference answer per prompt group.
#
# To make the two eviction rules visible, capacities of 4 and five hand-made steps on prompt `3*4=`
# whose passing answers are tagged by the step s they came from — `12 s`, `s 12` and `12 s s`, all
# passing `contains` — plus one wrong answer, `13`, which never enters a buffer.

# %%
small = VARL.from_config(
    VARLConfig(discriminator=JudgeConfig(tiny=tiny), fifo_capacity=4, reservoir_capacity=4), RewardContext(task=task)
)
for step in range(5):
    texts = [f"12 {step}", f"{step} 12", f"12 {step} {step}", "13"]
    step_batch = Rollouts(
        prompts=["3*4="] * 4,
        completions=texts,
        answers=[task.parse(t) for t in texts],
        references=["12"] * 4,
        group_ids=torch.zeros(4, dtype=torch.long),
        meta=[{}] * 4,
        step=step,
    )
    stats = small.update(step_batch, small.score(step_batch))
    print(
        f"after step {step}: FIFO {[a for _, a in small.fifo.items]}   "
        f"reservoir {[a for _, a in small.reservoir.items]}"
        f"   (passing {stats['disc/n_passing']:.0f}, negatives {stats['disc/n_negatives_fifo']:.0f} FIFO + "
        f"{stats['disc/n_negatives_reservoir']:.0f} reservoir, {stats['disc/n_positives']:.0f} positive)"
    )
recent, past = small.negatives(4)
print(f"\nnegatives for a 4-negative step now: FIFO {[a for _, a in recent]}, reservoir {[a for _, a in past]}")

# %% [markdown]
# The FIFO holds the last four passing answers — step 4's three and one of step 3's — while the
# reservoir keeps a mixture of old and new: each new item replaces a random slot with probability
# capacity / items-seen, so every passing output ever seen is equally likely to be held.  With one
# positive per prompt group and `negatives = 0` (as many negatives as positives), one step here
# contrasts one reference with one negative; in a real batch of 16 groups it is 16 against 8 + 8.
# The wrong answer `13` never appears: **only passing outputs become negatives**, so D never has
# to learn "wrong" (v already says so) — it learns what is odd about passing answers.

# %% [markdown]
# ## RLVR vs VARL on the hackable task
#
# Now the two recipes, `algorithms/rlvr_hackable_multiplication.yaml` and
# `algorithms/varl_hackable_multiplication.yaml`.  They are **twins**: every setting outside `reward.*`
# is the same (tested), so within a seed the reward is the only difference — same warm start, same
# prompts, same advantage normalisation.  The recipes themselves are the study's testbed (3-digit ×
# 1-digit products with a partial-products scratchpad, an 800-step SFT warm start): too slow for a
# notebook, so here they are shrunk by overrides to notebook 1's setting — 1-digit × 1-digit products
# without a scratchpad, a 2-layer, 64-wide policy, 60 SFT steps with `hedge_prob = 0.3` (the reported
# nudge that makes 30% of demonstrations list two candidates), 30 GRPO steps of 128 completions at
# temperature 1, Dr. GRPO advantages for both, greedy evaluation — over three seeds.  Know what this
# small setting is: the warm start is nearly never right by accident and hacking is the easy way up,
# so it shows the mechanism, not the choice between honest solving and hacking; the testbed where both
# are learnable is the next section's.  What the overrides leave alone is VARL's reward section: the
# discriminator starts from the SFT warm start (`init_from=policy`) and gets 20 warm-up updates on the
# warm start's rollouts before RL.
#
# Measured outside the reward, by the task's strict checker: `train/hack_rate` (share of the 128
# sampled answers of a step that pass the proxy but are wrong) and `eval/hack_rate` (greedy, on 20
# held-out products).  And, from the discriminator itself, `disc/auc_ref_vs_passing`: its AUC between
# the step's reference answers and its proxy-passing answers, both scored before it trains on them —
# 0.5 means it cannot tell them apart, 1 that it ranks every reference above every passing answer.

# %%
shrink = [
    "sft.cache_dir=runs/sft_cache",
    "overwrite=true",
    "logging.progress=false",
    "logging.tensorboard=false",
    "checkpoint_every=0",
    "task.hackable_multiplication.hedge_prob=0.3",
    "task.hackable_multiplication.multiplication.digits_a=1",
    "task.hackable_multiplication.multiplication.n_eval=20",
    "task.hackable_multiplication.multiplication.scratchpad=false",
    "grpo.lr_schedule=constant",
    "model.tiny.hidden_size=64",
    "model.tiny.intermediate_size=192",
    "model.tiny.num_layers=2",
    "sft.steps=60",
    "sft.n_examples=0",
    "sft.disjoint_rl_prompts=false",
    "steps=30",
    "grpo.batch_size=128",
    "grpo.micro_batch_size=128",
    "grpo.warmup_steps=0",
    "grpo.advantage=dr_grpo",
    "sampling.temperature=1.0",
    "sampling.max_new_tokens=8",
    "eval.every=5",
    "eval.samples=0",
]
METHODS = {"RLVR": "rlvr_hackable_multiplication", "VARL": "varl_hackable_multiplication"}
SEEDS = [0, 1, 2]
runs = {name: {} for name in METHODS}
for seed in SEEDS:
    for name, recipe in METHODS.items():
        cfg = load_config(shipped_recipe(recipe), [*shrink, f"seed={seed}", f"run_dir=runs/nb05_{name.lower()}_{seed}"])
        run_start = time.perf_counter()
        trainer = make_trainer(cfg)  # SFT warm start (cached per seed), the reward, the policy
        trainer.train()
        runs[name][seed] = read_metrics(f"{cfg.run_dir}/metrics.jsonl")
        print(
            f"seed {seed} {name}: SFT + {trainer.reward.warmup_steps} reward warm-up updates + {cfg.steps} RL "
            f"steps in {time.perf_counter() - run_start:.1f} s"
        )
probe = [e.prompt for e in trainer.task.eval[:8]]
greedy = trainer.engine.generate(probe, greedy=True).texts
print("\nVARL's greedy answers after RL (last seed):", dict(zip(probe, greedy)))

# %%
fig, axes = plt.subplots(1, 4, figsize=(19, 3.8))
for (name, seeds), colour in zip(runs.items(), ("tab:red", "tab:green")):
    for seed, rows in seeds.items():
        steps = [r for r in rows if "train/hack_rate" in r]
        label = name if seed == SEEDS[0] else None
        axes[0].plot(
            [r["step"] for r in steps], [r["train/hack_rate"] for r in steps], color=colour, alpha=0.7, label=label
        )
        axes[1].plot(
            [r["step"] for r in steps], [r["train/accuracy"] for r in steps], color=colour, alpha=0.7, label=label
        )
        evals = [r for r in rows if "eval/hack_rate" in r]
        axes[2].plot(
            [r["step"] for r in evals],
            [r["eval/hack_rate"] for r in evals],
            "o--",
            color=colour,
            alpha=0.7,
            label=label,
        )
        aucs = [r for r in rows if "disc/auc_ref_vs_passing" in r]
        if aucs:
            axes[3].plot(
                [r["step"] for r in aucs],
                [r["disc/auc_ref_vs_passing"] for r in aucs],
                color=colour,
                alpha=0.7,
                label=label,
            )
axes[0].set(title="train/hack_rate (sampled; one line per seed)", xlabel="RL step", ylim=(0, 1))
axes[1].set(title="train/accuracy (strict)", xlabel="RL step", ylim=(0, 1))
axes[2].set(title="eval/hack_rate (greedy, 20 held out)", xlabel="RL step", ylim=(0, 1))
axes[3].set(title="VARL's disc/auc_ref_vs_passing", xlabel="RL step", ylim=(0, 1))
axes[3].axhline(0.5, color="k", lw=0.8, ls=":")
for ax in axes:
    ax.legend(fontsize=8)
plt.show()

late = {
    name: [
        sum(r["train/hack_rate"] for r in [r for r in rows if "train/hack_rate" in r][-10:]) / 10
        for rows in seeds.values()
    ]
    for name, seeds in runs.items()
}
final_eval = {
    name: [[r for r in rows if "eval/hack_rate" in r][-1]["eval/hack_rate"] for rows in seeds.values()]
    for name, seeds in runs.items()
}
start = mean_ci([[r for r in rows if "train/hack_rate" in r][0]["train/hack_rate"] for rows in runs["RLVR"].values()])
print(f"train/hack_rate at the first RL step (the shared warm start): {start.format(digits=2)}")
for name in METHODS:
    print(
        f"{name:<5} train/hack_rate, mean of the last 10 steps: per seed {[round(x, 2) for x in late[name]]}, "
        f"{mean_ci(late[name]).format(digits=2)};  final eval/hack_rate per seed {final_eval[name]}"
    )
diff = mean_ci([v - r for v, r in zip(late["VARL"], late["RLVR"])])
print(
    f"VARL − RLVR, late train/hack_rate, paired by seed: {diff.format(digits=2, sign=True)} (95% t-interval over "
    f"{diff.n} seeds) — the interval {'excludes' if diff.low > 0 or diff.high < 0 else 'includes'} 0"
)
disc = [[r for r in rows if "disc/accuracy" in r] for rows in runs["VARL"].values()]
print(
    f"VARL discriminator: disc/accuracy at the first RL step {[round(d[0]['disc/accuracy'], 2) for d in disc]}, "
    f"at the last {[round(d[-1]['disc/accuracy'], 2) for d in disc]} (per seed)"
)
auc = [[r["disc/auc_ref_vs_passing"] for r in rows if "disc/auc_ref_vs_passing" in r] for rows in runs["VARL"].values()]
print(
    f"VARL discriminator: disc/auc_ref_vs_passing, mean of the first 5 RL steps "
    f"{[round(sum(a[:5]) / len(a[:5]), 2) for a in auc if a]}, of the last 5 {[round(sum(a[-5:]) / len(a[-5:]), 2) for a in auc if a]} "
    f"(per seed; 0.5 = chance)"
)

# %% [markdown]
# How to read this (every figure quoted is one printed above, from this run):
#
# - Under RLVR nothing in the reward opposes listing: every extra candidate raises the chance that
#   `contains` passes, so `train/hack_rate` can climb from the warm start's value, as in notebook 1.
# - Under VARL a passing list earns only D, and the discriminator is trained on exactly those
#   passing lists against clean references; once D(list) falls below D(clean answer), a list is
#   worth less than a single honest guess and the advantage turns against it.  The paired
#   difference printed above, and whether its interval excludes 0, is what this run says about the
#   paper's claim at toy scale — whichever way it falls.
# - Compare VARL's late hack rate with the warm start's, printed first: a gate that lowers the hack
#   rate relative to RLVR need not keep it at the warm start's level.  Look at VARL's greedy answers:
#   a single long run of digits is *one integer*, so it has the form of a reference, and a
#   discriminator that reads only the answer has to learn its length and digit pattern to spot it —
#   a harder hack to see than a list.
# - `disc/accuracy` and `disc/auc_ref_vs_passing` cannot reach 1, for the reason notebook 4 gave for
#   RAL's judge: a clean, right answer passes the verifier, so it *is* a negative, and it is the same
#   string as the reference — those pairs are ties (½ each in the AUC).  Only the odd-looking passing
#   answers can be told apart; the AUC above ½ is how well they are.
# - **What this is not.** Three seeds, 30 steps, 61 training prompts, 20 held-out products, and a
#   setting where honest accuracy has little room to move: the greedy `eval/hack_rate` moves in steps
#   of 1/20 and a t-interval over three seeds is wide.

# %% [markdown]
# ## The testbed where both ways up are learnable
#
# VARL's claim is about a policy that *could* improve honestly but finds the hack easier.  The recipes
# are built for that (`docs/rewards/varl.md`, "The hacking testbed"): 3-digit × 1-digit products with a
# partial-products scratchpad (`347*6=` → `42+240+1800=2082`), the preset on which RLVR with an exact
# check is known to learn, rewarded instead by `contains` on the answer list after the `=`.  Two
# controls say whether the testbed can decide: RLVR on the proxy must hack more over training
# (`eval/hack_rate` rising, interval over ≥ 5 seeds excluding 0), and RLVR on the strict check
# (`reward.rlvr.verifier=exact`) must get more accurate from the same warm start.  The study runs both,
# VARL, its additive twin, VARL with completion features (the discriminator reads the scratchpad too)
# and VARL under each g-transform:
#
# ```bash
# rewardzoo leaderboard --preset cpu --seeds 5 --tasks hackable_multiplication   # the board: tuned, 5 seeds
# python benchmarks/varl.py hacking --settings benchmarks/results/history/leaderboard_hackable/tuning.csv --out runs/lb
# ```
#
# What the board measured (`benchmarks/results/history/leaderboard_hackable/LEADERBOARD.md`: 30% of the
# demonstrations hedge, 80 steps of 20 prompts × 8, every row at the learning rate the tuning stage chose
# on the validation split, 5 seeds, 1,000 test products): RLVR on the proxy raised the test hack rate
# from 3.6 to 6.7% (+3.0 [-1.0, +7.1] points, a t-interval over the 5 seeds: the positive control does not
# show its effect) while its strict accuracy rose from 5.4 to 44.7%; RLVR on the strict check reached
# 52.4 ± 1.6%.  VARL ended at a hack rate of 2.7 ± 1.5% and a strict accuracy of 50.2 ± 2.2%: RLVR − VARL
# +4.0 [-0.4, +8.5] points of hack rate, so at this scale the testbed cannot decide the claim (a percentile
# bootstrap over seeds × examples, too narrow at 5 seeds, had first called it reproduced).  The study (`docs/rewards/varl.md`, "The hacking
# testbed") adds VARL's variants and each g-transform, D's AUC over training, and the same comparison at
# the recipes' higher learning rate and at a warm start that hedges less.
# %%
print(f"wall time of this notebook: {time.perf_counter() - notebook_start:.1f} s")

# %% [markdown]
# ## What to try next
#
# - The additive ablation: add `reward.varl.combine=add` to VARL's overrides.  Failing answers now
#   earn λ·D; does the hack rate, or the strict accuracy, change?
# - `reward.varl.features=completion`: the discriminator sees the whole completion and contrasts it
#   with demonstration texts instead of reference answers.
# - `reward.varl.warmup_steps=0`: how much of VARL's effect comes from a discriminator that already
#   knows demonstrations before RL starts?
# - `reward.varl.g=neg_log_one_minus_D`: read the warning, then see what an unbounded g does to the
#   advantages of a group.
# - The full study over seeds: `python benchmarks/varl.py hacking` (`--quick` for the pilot size).
