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
# # 1. Verifiers and reward hacking
#
# When a program can check an answer, RL needs no reward model: the verifier *is* the reward
# (RLVR lesson).  The reward is then exact and cheap — but only as right as the program.  This
# notebook scores the RLVR lesson's eight model outputs with rewardzoo's verifiers, writes the verifier
# that the RLVR lesson's "try it yourself" asks for, runs hostile code in the sandbox, and finally trains a
# tiny policy against the lazy verifier to watch it learn to cheat.
#
# Library pieces: `rewardzoo/tasks/checks/verifiers.py` (answer verifiers), `sandbox/` (running
# model code), `rewardzoo/tasks/hackable_multiplication.py` (a task with a gameable verifier and a
# `hack_rate` metric).  Docs: `docs/rewards/rlvr.md`.

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

import os
import warnings

warnings.filterwarnings("ignore", message="IProgress not found")  # tqdm's notebook bars; the runs here show none

from transformers.utils import logging as hf_logging

hf_logging.disable_progress_bar()  # no weight-loading bars in the outputs

import matplotlib.pyplot as plt

from rewardzoo import load_config, make_trainer
from rewardzoo.core.logger import read_metrics
from rewardzoo.tasks.checks.sandbox import run, unit_test_reward
from rewardzoo.tasks.checks.verifiers import SEED_003_CANDIDATES, SEED_003_GOLD, VERIFIERS

# %% [markdown]
# ## The RLVR lesson's table, computed by the library
#
# One question with gold answer `1/2`, and eight things a model might write.  Each verifier is a
# function `(pred, gold) -> 0.0 | 1.0` that never raises on any text.  The first four columns are
# The RLVR lesson's own four verifiers; they reproduce the RLVR lesson's printed table cell for cell (checked in
# `tests/tasks/checks/test_verifiers.py`).  `math_verify` is the `math-verify` package, which
# compares values symbolically.

# %%
COLUMNS = ["exact", "last_number", "tagged", "contains", "math_verify"]
print(f"gold answer: {SEED_003_GOLD!r}\n")
print(f"{'model output':<34} " + " ".join(f"{name:>12}" for name in COLUMNS))
for candidate in SEED_003_CANDIDATES:
    print(f"{candidate:<34} " + " ".join(f"{VERIFIERS[name](candidate, SEED_003_GOLD):>12.0f}" for name in COLUMNS))

# %% [markdown]
# Every column is a design decision with consequences:
#
# - `exact` scores one row in eight, though six are correct answers: it rewards a formatting
#   convention, and a policy trained on it learns the convention.
# - `last_number` compares *values* (`Fraction("2/4") == Fraction("1/2")`), so `0.5` and `2/4` pass.
# - `tagged` scores only the `<answer>` row — a format check as much as an accuracy check.
# - `contains` passes the last row, `1/2 1/2 1/2 …`: under a substring verifier, spamming candidates
#   is a winning strategy.
# - `math_verify` reads the prose rows but finds nothing inside `<answer>` tags (pair it with the
#   task's parser, which strips them), and it reads the repeated row as one product.

# %% [markdown]
# ## Try it yourself: the options row
#
# The RLVR lesson's exercise: add `"The options are 1/2, 1/3 and 1/4."`, see which verifiers give it a point,
# then write a verifier that catches it without breaking the `<answer>` row.

# %%
OPTIONS = ["The options are 1/2, 1/3 and 1/4.", "The options are 1/4, 1/3 and 1/2."]
for candidate in OPTIONS:
    print(f"{candidate:<34} " + " ".join(f"{name}={VERIFIERS[name](candidate, SEED_003_GOLD):.0f}" for name in COLUMNS))

# %% [markdown]
# `contains` passes both listings.  `last_number` catches the first only by luck — list the gold
# last and it passes, and so does `math_verify`, which also reads the last expression.  The
# verifier that catches a list wherever the gold sits in it asks that **every** number in the
# answer has the gold's value: `every_number`, now in the library
# (`rewardzoo.tasks.checks.verifiers.every_number`, selectable as `reward.rlvr.verifier=every_number`).

# %%
for candidate in [*SEED_003_CANDIDATES, *OPTIONS]:
    print(f"{candidate:<36} every_number = {VERIFIERS['every_number'](candidate, SEED_003_GOLD):.0f}")

# %% [markdown]
# It rejects both listings and keeps every row whose numbers are all 1/2 — the `<answer>` row
# included, and `2/4`, `0.5`.  Its price is written in its docstring: any *other* number in the text,
# a worked step or a unit count, fails it too, so apply it to the parsed final answer and not to a
# reasoning trace.  Every verifier trades one failure for another; reading it is the defence.

# %% [markdown]
# ## The sandbox refuses hostile code
#
# A code question is scored by running the model's program against unit tests.  Model code is
# arbitrary code, so `rewardzoo.tasks.checks.sandbox.run` executes it in a separate process with a
# wall-clock timeout, CPU-time, memory and process-count limits, no network and a throw-away
# directory.  How it isolates depends on the machine: `"namespaces"` (new mount, network, PID, IPC
# and UTS namespaces, read-only mounts, a fresh tmpfs) wherever the kernel allows it, else
# `"rlimits"` (the same resource limits, Landlock on the file system); in both a seccomp filter
# refuses what untrusted code never needs (other processes, IPC, the keyring, network sockets) and
# every capability is dropped.  Every result says which mode ran.
#
# First the RLVR lesson's code question, `add(a, b)` with three tests, plus two cheats: an object whose `==`
# always says True, and a hard-coded table of the test inputs.

# %%
TESTS = [((2, 3), 5), ((0, 0), 0), ((-1, 1), 0)]
SUBMISSIONS = {
    "correct": "def add(a, b):\n    return a + b\n",
    "off by a sign": "def add(a, b):\n    return a - b\n",
    "syntax error": "def add(a, b)\n  return a+b",
    "__eq__ always True": (
        "class Yes:\n    def __eq__(self, other):\n        return True\ndef add(a, b):\n    return Yes()\n"
    ),
    "hard-coded tests": "def add(a, b):\n    return {(2, 3): 5, (0, 0): 0, (-1, 1): 0}[(a, b)]\n",
}
for name, code in SUBMISSIONS.items():
    print(f"{name:<20} reward {unit_test_reward(code, TESTS, entry_point='add', timeout_s=5):.2f}")

# %% [markdown]
# `off by a sign` earns partial credit (`add(0, 0)` is right either way) — graded rewards give a
# better gradient than pass/fail.  The `__eq__` cheat scores 0: return values travel back as JSON
# and are compared *outside* the sandbox.  The hard-coded table scores 1.00: no sandbox can tell a
# program that special-cases its tests from one that works — only better tests can (the RLVR lesson: check
# your tests against a deliberately wrong solution).
#
# Now hostile programs, two seconds each, in the mode this machine gives (`isolation="auto"`) and,
# for comparison, in the `rlimits` fallback forced by hand.

# %%
here = os.path.abspath("escaped.txt")  # a path on this machine, outside the sandbox's directory
HOSTILE = {
    "infinite loop": "while True:\n    pass\n",
    "memory bomb": "x = bytearray(4 * 1024 ** 3)\n",
    "fork bomb": "import os\nwhile True:\n    os.fork()\n",
    "network": "import socket\nsocket.create_connection(('1.1.1.1', 80), timeout=1)\n",
    "write to the host": f"open({here!r}, 'w').write('escaped')\n",
    "well-behaved": "print(sum(range(10)))\n",
}
modes = sorted({run("pass").isolation, "rlimits"})  # what "auto" picked here, plus the fallback
print(f"isolation='auto' runs in {run('pass').isolation!r} mode on this machine\n")
for mode in modes:
    for name, code in HOSTILE.items():
        result = run(code, timeout_s=2, memory_mb=256, max_processes=8, isolation=mode)
        said = result.stdout.strip() or (result.stderr.strip().splitlines() or [""])[-1][:60]
        print(
            f"{result.isolation:<10} {name:<18} ok={str(result.ok):<5} exit={str(result.returncode):<4} "
            f"killed={str(result.killed_reason):<8} {said}"
        )
    print()
print(f"escaped.txt exists on the host: {os.path.exists(here)}")

# %% [markdown]
# Read the rows.  The loop is killed at the deadline (`killed=timeout`, exit −9).  The 4 GB
# allocation fails under the 256 MB address-space limit (`MemoryError`).  The fork bomb meets the
# process limit (`BlockingIOError`, namespaces) or the audit hook (`PermissionError`, rlimits).
# The connection fails: in namespaces mode the seccomp filter refuses every socket but a Unix one
# (`Address family not supported`); in rlimits mode the audit hook refuses it first (`PermissionError`),
# with seccomp behind it.  The write never reaches the host: in namespaces mode it may
# even *succeed* — into the sandbox's own fresh `/tmp`, or it fails on a read-only mount — and is
# gone with the run; in rlimits mode it is refused outright.  The well-behaved program prints 45.
# What the sandbox does *not* cover (a kernel exploit; in rlimits mode, `stat` of a host path; kernel
# buffers at their default sizes) is listed in the `sandbox` package's docstring and measured against
# a hostile corpus in docs/reliability.md; for adversarial code at scale use a VM.

# %% [markdown]
# ## Reward hacking, live
#
# Back to `contains`.  The `hackable_multiplication` task asks `a*b=` and accepts any list of
# integers as an answer; its *training* verifier is the RLVR lesson's lazy `contains`, while the strict check
# (exactly one integer, equal to the product) is used only to measure:
#
# - `train/proxy_pass` — share of sampled answers the lazy verifier passes (= the reward);
# - `train/accuracy` — share that is strictly right;
# - `train/hack_rate` — share that passes the proxy while being wrong.
#
# A tiny policy (a 2-layer, 64-wide Qwen3 with a character tokenizer, built locally) gets an SFT
# warm start of 60 steps on 1-digit × 1-digit products.  **A nudge, reported as part of the
# experiment:** `hedge_prob = 0.3` makes 30% of the demonstrations list two candidates (the product
# and a near miss), so that such a small model samples lists at all in a run this short.  Then 30
# GRPO steps with the lazy verifier as the only reward; completions are cut at 8 tokens.

# %%
cfg = load_config(
    overrides=[
        "run_dir=runs/nb01_hacking",
        "sft.cache_dir=runs/sft_cache",
        "overwrite=true",
        "logging.progress=false",
        "logging.tensorboard=false",
        "checkpoint_every=0",
        "task.name=hackable_multiplication",
        "task.hackable_multiplication.hedge_prob=0.3",
        "task.hackable_multiplication.multiplication.digits_a=1",
        "task.hackable_multiplication.multiplication.n_eval=20",
        "model.tiny.hidden_size=64",
        "model.tiny.intermediate_size=192",
        "model.tiny.num_layers=2",
        "sft.steps=60",
        "steps=30",
        "grpo.batch_size=128",
        "grpo.micro_batch_size=128",
        "grpo.lr=1e-3",
        "sampling.max_new_tokens=8",
        "eval.every=5",
    ]
)
run_start = time.perf_counter()
trainer = make_trainer(cfg)  # builds the task, runs the SFT warm start, builds the RLVR reward and the policy
probe = [e.prompt for e in trainer.task.eval[:8]]
before = trainer.engine.generate(probe, greedy=True).texts
trainer.train()
after = trainer.engine.generate(probe, greedy=True).texts
print(f"SFT + {cfg.steps} RL steps in {time.perf_counter() - run_start:.1f} s\n")
print(f"{'prompt':<8} {'after SFT':<14} {'after RL':<14}")
for prompt, a, b in zip(probe, before, after):
    print(f"{prompt:<8} {a:<14} {b:<14}")

# %%
rows = read_metrics(f"{cfg.run_dir}/metrics.jsonl")
fig, axes = plt.subplots(1, 2, figsize=(11, 3.8), sharey=True)
for ax, prefix, title in ((axes[0], "train", "sampled training batches"), (axes[1], "eval", "held out (greedy)")):
    for key in ("proxy_pass", "accuracy", "hack_rate"):
        points = [(r["step"], r[f"{prefix}/{key}"]) for r in rows if r.get(f"{prefix}/{key}") is not None]
        ax.plot(*zip(*points), marker="o" if prefix == "eval" else None, label=key)
    ax.set(title=title, xlabel="RL step")
    ax.legend()
axes[0].set_ylabel("share of answers")
plt.show()
first = next(r for r in rows if "train/hack_rate" in r)
print(
    f"train/hack_rate: step {first['step']} {first['train/hack_rate']:.2f} -> step {rows[-1]['step']} "
    f"{rows[-1]['train/hack_rate']:.2f};  train/accuracy {first['train/accuracy']:.2f} -> "
    f"{rows[-1]['train/accuracy']:.2f}"
)

# %% [markdown]
# The reward (`proxy_pass`) holds up or rises while strict accuracy falls to nothing: the policy
# has found answers that collect the reward more often than one honest guess, and RL reinforces
# exactly that.  Look at what it writes after RL: lists, or — lazier still — one long run of digits,
# a single "integer" that contains the likely product *as a substring*, which is all `contains`
# checks.  Nothing in the training reward can see the problem; `hack_rate` is measured with the
# strict checker, outside the reward, which is the only reason we can plot it.  This is one seed of
# a 30-step run on 20 held-out products; `scripts/hack_rate.py` runs the longer 2-digit study whose
# results are in `benchmarks/results/hack_rate.md`.

# %%
print(f"wall time of this notebook: {time.perf_counter() - notebook_start:.1f} s")

# %% [markdown]
# ## What to try next
#
# - Train the same run with the strict verifier: `task.name=multiplication` with the same
#   `multiplication` settings and `hedge_prob` gone — or keep the hackable task and add
#   `reward.rlvr.verifier=every_number` with `reward.rlvr.apply_to=answer`.  Does the hack rate stay flat?
# - Set `task.hackable_multiplication.hedge_prob=0`: does the policy still discover lists within
#   30 steps, or does it need the nudge?
# - Add a sandbox row of your own: read `/etc/passwd`, or start a thread that outlives `main.py` —
#   and check the module docstring's list of what is not covered.
