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
# # 6. RcRL: pairwise win rates over a rubric curriculum
#
# Where nothing can verify an answer — a story, a health answer — a rubric lists what a good answer
# does, and a judge checks each criterion.  Rubrics-as-rewards (RaR) asks the judge for an
# absolute score of every rollout on every criterion.  The RcRL paper's RcRL changes two things: the
# judge only *compares* two rollouts of the same prompt (a generation–verification gap: comparing
# is easier than scoring), and the criteria arrive one by one, a curriculum, with the newest
# weighted most.  For a group of G rollouts at step t:
#
# ```
# P_c(i ≻ j) = ½·[J_c(i, j) + 1 − J_c(j, i)]          both orders: position bias cancels
# w_c(i)     = 1/(G − 1) · Σ_{j ≠ i} P_c(i ≻ j)       win rate on criterion c; its group mean is exactly ½
# r_i        = Σ_{c ∈ A(t)} ω_c(t) · w_c(i)            A(t): criteria active at t, ω: their weights
# ```
#
# Library pieces: `rewardzoo/judges/rubric.py` (`Rubric`, `RubricSchedule`), `rewardzoo/judges/pairwise.py`
# (`RuleJudge`, `Tournament`: round robin, Swiss + Bradley–Terry), `rewardzoo/rewards/rcrl.py` (`RcRL`,
# whose switches give RcRL and its four baselines), `rewardzoo/tasks/rubric_writing.py` (the CPU toy
# task).  Docs: `docs/rewards/rcrl.md`.

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

import random
import warnings
from dataclasses import replace

warnings.filterwarnings("ignore", message="IProgress not found")  # tqdm's notebook bars; the runs here show none

from transformers.utils import logging as hf_logging

hf_logging.disable_progress_bar()  # no weight-loading bars in the outputs

import matplotlib.pyplot as plt
import torch
from scipy.stats import spearmanr

from rewardzoo import RcRL, load_config, make_trainer
from rewardzoo.core.logger import read_metrics
from rewardzoo.core.types import Rollouts
from rewardzoo.eval import mean_ci
from rewardzoo.judges.pairwise import RuleJudge, RuleJudgeConfig, miscalibration
from rewardzoo.judges.rubric import RubricSchedule, load_rubric
from rewardzoo.tasks.checks.writing import overlooked_share
from rewardzoo.tasks.rubric_writing import RubricWriting, RubricWritingConfig, quality
from rewardzoo.zoo import shipped_recipe

# %% [markdown]
# ## A rubric curriculum
#
# The toy task's rubric has 13 programmatic criteria (`rewardzoo/judges/data/rubric_writing.yaml`,
# our own order: content, then form, then style) and K = 5 steps per criterion.  A
# `RubricSchedule` says, for any step, which criteria are active and with what weight:
# `curriculum` adds criterion k at step k·K and gives the newest ½, the others sharing the rest;
# `all` (RaR) weighs every criterion equally from step 0; `dropout` keeps a seeded random half each step.

# %%
rubric = load_rubric("rubric_writing")
names = [c.name for c in rubric.criteria]
STEPS = 70
fig, axes = plt.subplots(1, 3, figsize=(15, 3.8), sharey=True)
for ax, kind in zip(axes, ("curriculum", "all", "dropout")):
    schedule = RubricSchedule(len(names), kind, rubric.steps_per_criterion, "newest", 0.5, seed=0)
    weights = torch.stack([schedule.weights(t) for t in range(STEPS)])  # [steps, C]
    image = ax.imshow(weights.T, aspect="auto", cmap="viridis", vmin=0, vmax=1, interpolation="nearest")
    ax.set(title=f"schedule={kind}", xlabel="step")
axes[0].set_yticks(range(len(names)), names, fontsize=7)
fig.colorbar(image, ax=axes, label="weight ω_c(t)")
plt.show()
curriculum = RubricSchedule(len(names), "curriculum", rubric.steps_per_criterion, "newest", 0.5)
for t in (0, 4, 5, 12, 30, 60, 65):
    w, active = curriculum.weights(t), curriculum.active(t)
    older = f", each older one {w[0]:.3f}" if len(active) > 1 else ""
    print(f"step {t:>2}: {len(active):>2} active, newest {names[active[-1]]:<15} weight {w[active[-1]]:.3f}{older}")

# %% [markdown]
# The curriculum's reward is a moving target by design: every K steps a new criterion takes half
# the weight, so a policy that has maxed the old ones has something new to improve.  From step
# 12·K = 60 all 13 criteria are active and the schedule stops changing.  (With `newest`
# weighting the oldest criteria share the other half, so each gets less and less; `weighting=uniform`
# is the ablation.)

# %% [markdown]
# ## Pairwise win rates on a hand-made group
#
# One prompt — required words `red`, `cat`, a window of 4–7 words — and seven completions, chosen to
# show the judge's blind spots.  First a **perfect** rule judge (no noise, no bias, calibrated,
# hard verdicts: `verdict=hard`) with every criterion active (`schedule=all`), so each row's reward
# is its mean win rate over the 13 criteria.  `RcRL.score` returns the per-criterion win rates as
# components.

# %%
prompt, meta = "red cat 4-7:", {"words": ["red", "cat"], "min_words": 4, "max_words": 7}
group = [
    "The red cat sleeps.",
    "the cat sleeps",
    "The red cat sleeps sleeps.",
    "The red cat sees the red cat.",
    "The old red cat sleeps on the big stone by the river.",
    "The red cat bimo sleeps.",
    "The red cat xqzt sleeps.",
]
G = len(group)
batch = Rollouts(
    prompts=[prompt] * G,
    completions=group,
    answers=group,
    references=[None] * G,
    group_ids=torch.zeros(G, dtype=torch.long),
    meta=[meta] * G,
    step=0,
)
fair = [
    "schedule=all",
    "judge.rule.noise=0",
    "judge.rule.position_bias=0",
    "judge.rule.verdict=hard",
    "judge.rule.length_bias=0",
    "judge.rule.repetition_blind=false",
    "judge.rule.non_english_blind=false",
    *(f"judge.rule.{k}={v}" for k, v in miscalibration(0).items()),
]
perfect = load_config(shipped_recipe("rcrl_rubric_writing"), [f"reward.rcrl.{kv}" for kv in fair]).reward.rcrl
out = RcRL(perfect).score(batch)
table = torch.stack([out.components[f"criterion/{n}"] for n in names], dim=1)  # [G, C]
fig, ax = plt.subplots(figsize=(12, 3.4))
ax.imshow(table, cmap="RdYlGn", vmin=0, vmax=1, aspect="auto")
ax.set_xticks(range(len(names)), names, rotation=40, ha="right", fontsize=8)
ax.set_yticks(range(G), group, fontsize=8)
for i in range(G):
    for k in range(len(names)):
        ax.text(k, i, f"{table[i, k]:.2f}", ha="center", va="center", fontsize=7)
ax.set_title("w_c(i): win rate of each completion on each criterion (perfect judge)")
plt.show()
print(
    f"group mean of every criterion's win rates: {sorted({round(x, 6) for x in table.mean(0).tolist()})}; "
    f"of the reward: {out.rewards.mean():.6f}"
)
print(f"judge calls: {out.metrics['judge/calls']:.0f} = 13 criteria × G(G − 1) = 13 × {G * (G - 1)}")

# %% [markdown]
# Each column sums to G/2 — a win for one row is a loss for another — so the group mean of the
# reward is ½ whatever the completions are: the reward cannot drift upward as the policy improves,
# only *differences within the group* are rewarded (the RcRL paper, App. A.2).  A tie (both rows meet the
# criterion, or both fail it) is worth ½ to each.
#
# Now the judge RcRL trains against in this repository's CPU preset (`algorithms/rcrl_rubric_writing.yaml`):
# it perceives each response once per criterion with noise (σ = 0.1), has a position bias and a
# preference for longer outputs, and overlooks a word repeated *later* in the text and a made-up
# word that *looks* like a word (it does notice `sleeps sleeps` and the consonant string `xqzt`) —
# The RcRL paper's reported judge failures, simulated.  Next to it, Absolute RaR's reward with the same judge
# (`scoring=absolute`: each completion's judged score, alone), and two held-out measures no reward
# reads: the oracle's quality (ten criteria, four of them hidden from the judge: grammar and the
# penalties for repetition, non-English words and padding) and the share of tokens the judge overlooks.

# %%
preset = load_config(shipped_recipe("rcrl_rubric_writing")).reward.rcrl
biased_pairwise = RcRL(replace(preset, schedule="all")).score(batch).rewards
biased_absolute = RcRL(replace(preset, schedule="all", scoring="absolute")).score(batch).rewards
print(f"{'completion':<55} {'oracle':>7} {'perfect':>8} {'biased':>7} {'biased':>9} {'overlooked':>10}")
print(f"{'':<55} {'quality':>7} {'pairwise':>8} {'pairwise':>7} {'absolute':>9} {'tokens':>10}")
for i, text in enumerate(group):
    print(
        f"{text:<55} {quality(text, meta):>7.3f} {out.rewards[i]:>8.3f} {biased_pairwise[i]:>7.3f} "
        f"{biased_absolute[i]:>9.3f} {overlooked_share(text):>10.2f}"
    )

# %% [markdown]
# The blind spots show up as rewards the oracle would not give.  The perfect judge ranks the clean
# sentence first.  The biased judge reads `The red cat sees the red cat.` as `The red cat sees.` and
# `bimo` not at all, so those two lose nothing for what the oracle penalises, and the over-long
# sentence gains from the length preference; the immediate repeat and `xqzt` it does see.  A
# policy can climb each of these; the oracle's quality and the overlooked share are how the runs
# below measure whether it did.
# Note also the scale: the pairwise rewards average ½ in every group, the absolute ones do not —
# under absolute scoring a group of uniformly better answers scores higher, which is exactly the
# "stationary target" RcRL avoids.

# %% [markdown]
# ## The knob: miscalibrated absolute scores
#
# The RcRL paper argues (§5.4) that pairwise rewards help *where absolute scores are not calibrated*:
# HealthBench's verifiable criteria admit calibrated absolute scores, creative writing's subjective
# ones do not.  The rule judge makes that a knob.  Both modes see the same perception ẑ of a
# response; a comparison reads only the difference of two perceptions, while an absolute score has
# to *report* ẑ on a scale — at level m the report is coarser (an L-point scale), lenient (it piles
# up at the top and saturates), scaled differently for each criterion, and shifted by an offset
# drawn once per call (a comparison is one call, so its two responses share the offset).
# `miscalibration(m)` gives the settings; m = 0 is the calibrated judge, the recipes use m = 2.

# %%
perceived = torch.linspace(0, 1, 101, dtype=torch.float64)
fig, axes = plt.subplots(1, 4, figsize=(15, 3.2), sharey=True)
for ax, m in zip(axes, (0, 1, 2, 3)):
    judge = RuleJudge(RuleJudgeConfig(**{**miscalibration(m), "call_offset": 0.0}))
    for criterion in rubric.criteria[:4]:
        ax.plot(perceived, judge.report(criterion, perceived, torch.zeros_like(perceived)), label=criterion.name)
    ax.plot([0, 1], [0, 1], "k:", lw=0.8)
    ax.set(title=f"m = {m}: {miscalibration(m)}"[:48], xlabel="perceived ẑ")
axes[0].set_ylabel("absolute report (no call offset)")
axes[0].legend(fontsize=7)
plt.show()
for m in (0, 1, 2, 3):
    judged = replace(
        preset, schedule="all", judge=replace(preset.judge, rule=replace(preset.judge.rule, **miscalibration(m)))
    )
    absolute = RcRL(replace(judged, scoring="absolute")).score(batch).rewards
    pairwise = RcRL(judged).score(batch).rewards
    print(
        f"m = {m}: Spearman of the absolute reward with the pairwise one over the group "
        f"{spearmanr(absolute, pairwise).statistic:+.2f};  distinct absolute rewards {len(set(absolute.tolist()))} of {G}"
    )

# %% [markdown]
# The pairwise reward is the same at every level — it never reads the reports — and at m = 0 the
# absolute reward ranks the group exactly as it does (with linear verdicts the pairwise reward is
# an increasing affine function of the absolute one within a group: `tests/judges/test_pairwise.py`).
# As m grows the absolute reports saturate and coarsen: responses the judge can still *compare*
# collapse onto one score.  Whether that matters for training — where the crossover lies, if any —
# is what `python benchmarks/rcrl.py study` measures across m.

# %% [markdown]
# ## Round robin vs Swiss + Bradley–Terry
#
# A round robin asks the judge G(G − 1) ordered questions per criterion and group — quadratic in G.
# The RcRL paper, §6.1 suggests a Swiss tournament: ⌈log2 G⌉ rounds pairing rollouts of similar standing, each
# pair judged in both orders, then a Bradley–Terry fit of all outcomes, whose implied win rates
# replace the round robin's.  Here both, with the preset's noisy, biased judge on groups of G
# demonstrations of the toy task (mediocre sentences of varied quality), every criterion active:
# the number of judge calls, and how well the Swiss ranking agrees with the round robin's (Spearman
# correlation of the rewards within each group).  The ceiling is the judge's own noise: a second
# round robin with fresh noise (another seed) agrees with the first only so well.

# %%
task = RubricWriting(RubricWritingConfig(n_train=500, n_eval=10))
rng = random.Random(0)
N_GROUPS = 20
agreement = {}
for G_size in (8, 16):
    prompts, texts, metas = [], [], []
    for _ in range(N_GROUPS):
        example = task.train[rng.randrange(len(task.train))]
        prompts += [example.prompt] * G_size
        texts += [task.train[rng.randrange(len(task.train))].demonstration for _ in range(G_size)]
        metas += [example.meta] * G_size
    groups_batch = Rollouts(
        prompts=prompts,
        completions=texts,
        answers=texts,
        references=[None] * len(texts),
        group_ids=torch.arange(N_GROUPS).repeat_interleave(G_size),
        meta=metas,
        step=0,
    )
    results = {}
    for label, comparisons, seed in (
        ("round robin", "round_robin", 0),
        ("round robin, fresh noise", "round_robin", 1),
        ("Swiss + BT", "swiss", 0),
    ):
        scored = RcRL(replace(preset, schedule="all", comparisons=comparisons), seed=seed).score(groups_batch)
        results[label] = (scored.rewards.view(N_GROUPS, G_size), scored.metrics["judge/calls"])
    reference = results["round robin"][0]
    for label in ("round robin, fresh noise", "Swiss + BT"):
        rho = mean_ci([spearmanr(reference[g], results[label][0][g]).statistic for g in range(N_GROUPS)])
        agreement[(G_size, label)] = rho
        print(
            f"G = {G_size:>2}  {label:<25} judge calls per group and criterion "
            f"{results[label][1] / N_GROUPS / len(names):>5.0f} (round robin "
            f"{results['round robin'][1] / N_GROUPS / len(names):.0f});  Spearman with the round robin "
            f"{rho.format(digits=2)} (mean ± 95% CI over {N_GROUPS} groups)"
        )

fig, ax = plt.subplots(figsize=(6, 3.6))
ax.scatter(reference.flatten(), results["Swiss + BT"][0].flatten(), s=8, label="Swiss + BT")
ax.scatter(reference.flatten(), results["round robin, fresh noise"][0].flatten(), s=8, label="round robin, fresh noise")
ax.plot([0, 1], [0, 1], "k:", lw=1)
ax.set(xlabel="round-robin reward", ylabel="other schedule's reward", title=f"G = {G_size}, {N_GROUPS} groups")
ax.legend(fontsize=8)
plt.show()

# %% [markdown]
# Read the printed lines: the Swiss tournament's calls grow as 2·⌊G/2⌋·⌈log2 G⌉ instead of G(G − 1).
# Its agreement with the round robin is to be read against the fresh-noise line above it: a second
# round robin disagrees with the first only through the judge's noise, so the gap between the two
# printed correlations is what the cheaper schedule costs in ranking fidelity beyond that noise —
# the price of the saved calls.  The full measurement, with wall times of a real LM judge and more
# group sizes, is `python benchmarks/judge_cost.py`.

# %% [markdown]
# ## Entropy of RaR vs RcRL
#
# The RcRL paper reports that RcRL keeps the policy's token entropy up where absolute-score RaR collapses it
# (§5.3): a stationary absolute target lets the policy settle on one kind of high-scoring output,
# while a pairwise reward always ranks the group against itself and the curriculum keeps moving the
# target.  Here the two CPU recipes, `algorithms/rar_rubric_writing.yaml` (Absolute RaR) and
# `algorithms/rcrl_rubric_writing.yaml`, shrunk by overrides (a 2-layer, 64-wide policy, 100 SFT
# steps, 30 RL steps, 32 held-out prompts); everything else — the biased judge, Dr. GRPO, 4 prompts
# × G = 8 per step — is the recipes'.  `policy/entropy` is the mean next-token entropy of the policy
# over the sampled completion tokens (nats), logged every step.

# %%
shrink = [
    "sft.cache_dir=runs/sft_cache",
    "overwrite=true",
    "logging.progress=false",
    "logging.tensorboard=false",
    "checkpoint_every=0",
    "model.tiny.hidden_size=64",
    "model.tiny.intermediate_size=192",
    "model.tiny.num_layers=2",
    "sft.steps=100",
    "steps=30",
    "task.rubric_writing.n_eval=32",
    "eval.every=10",
]
METHODS = {"Absolute RaR": "rar_rubric_writing", "RcRL": "rcrl_rubric_writing"}
runs = {}
for name, recipe in METHODS.items():
    cfg = load_config(shipped_recipe(recipe), [*shrink, f"run_dir=runs/nb06_{recipe}"])
    run_start = time.perf_counter()
    trainer = make_trainer(cfg)
    trainer.train()
    runs[name] = read_metrics(f"{cfg.run_dir}/metrics.jsonl")
    print(
        f"{name}: SFT + {cfg.steps} RL steps in {time.perf_counter() - run_start:.1f} s (one warm start: cached "
        f"after the first run)"
    )

fig, axes = plt.subplots(1, 3, figsize=(15, 3.8))
for (name, rows), colour in zip(runs.items(), ("tab:orange", "tab:blue")):
    steps = [r for r in rows if "policy/entropy" in r]
    evals = [r for r in rows if "eval/quality" in r]
    axes[0].plot([r["step"] for r in steps], [r["policy/entropy"] for r in steps], color=colour, label=name)
    axes[1].plot([r["step"] for r in steps], [r["train/quality"] for r in steps], color=colour, label=name)
    axes[1].plot(
        [r["step"] for r in evals],
        [r["eval/quality"] for r in evals],
        "o--",
        color=colour,
        label=f"{name}: eval (held out)",
    )
    axes[2].plot([r["step"] for r in steps], [r["train/repetition"] for r in steps], color=colour, label=name)
axes[0].set(title="policy/entropy (nats per token)", xlabel="RL step")
axes[1].set(title="oracle quality (never a reward)", xlabel="RL step")
axes[2].set(title="train/repetition (the judge is blind to it)", xlabel="RL step")
for ax in axes:
    ax.legend(fontsize=7)
plt.show()
for name, rows in runs.items():
    steps = [r for r in rows if "policy/entropy" in r]
    evals = [r for r in rows if "eval/quality" in r]
    first, last = [r["policy/entropy"] for r in steps[:5]], [r["policy/entropy"] for r in steps[-5:]]
    print(
        f"{name:<13} policy/entropy mean of the first 5 steps {sum(first) / 5:.3f} -> last 5 {sum(last) / 5:.3f} "
        f"(ratio {sum(last) / sum(first):.2f});  eval/quality {evals[0]['eval/quality']:.3f} -> "
        f"{evals[-1]['eval/quality']:.3f};  train/repetition {steps[0]['train/repetition']:.3f} -> "
        f"{steps[-1]['train/repetition']:.3f};  active criteria at the last step "
        f"{steps[-1]['reward/active_criteria']:.0f}"
    )

# %% [markdown]
# How to read it, with the numbers printed above:
#
# - **Entropy.**  Compare the two entropy ratios (last five steps over the first five;
#   `rewardzoo.eval.entropy_ratio` is the same statistic over ten, as in the RcRL paper, §5.3).  A ratio well
#   below 1 is the collapse the RcRL paper attributes to absolute rewards; one near 1 is a policy still
#   exploring.  Both runs start from the same warm start, so their first values agree.
# - **Quality and repetition.**  The oracle's `eval/quality` and `train/repetition` are measured
#   outside the reward.  Where quality falls while repetition climbs, the policy is climbing the
#   judge's blind spot — and a pairwise reward does not protect against that: a judge that cannot
#   see repetition cannot rank against it, in either order.
# - **What this is not.**  One seed, 30 steps, in which RcRL's curriculum has not reached all 13
#   criteria (its active count at the last step is printed above): it shows how to measure the
#   claim, not a verdict on it.  The study — 5 seeds of 200 steps, each method at the learning rate
#   the board's tuning stage chose, across the miscalibration knob — is `python benchmarks/rcrl.py
#   study`; it measured an entropy ratio of 0.92 for RcRL against 0.78–0.79 for Absolute RaR, and the
#   head-to-head prompt by prompt undecided at every level of the knob, every point estimate below 50%
#   (`docs/rewards/rcrl.md` has the table and what it does not show).

# %%
print(f"wall time of this notebook: {time.perf_counter() - notebook_start:.1f} s")

# %% [markdown]
# ## What to try next
#
# - The other three baselines of the RcRL paper, Table 3 are recipes too: `pairwise_rar_rubric_writing.yaml`
#   (pairwise, no curriculum), `absolute_rcrl_rubric_writing.yaml` (curriculum, absolute scores) and
#   `dropout_absolute_rar_rubric_writing.yaml`.  Which of the two changes keeps the entropy up?
# - `reward.rcrl.comparisons=swiss` in the RcRL run: fewer judge calls (`judge/calls` in the logs) —
#   does the entropy curve change?
# - Make the judge fair (`reward.rcrl.judge.rule.repetition_blind=false`, `non_english_blind=false`,
#   `length_bias=0`) and watch `train/repetition`.
# - `reward.rcrl.ordering=1`: the same criteria in a random order (Table 3's Orderings).
