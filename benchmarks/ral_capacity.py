"""RAL's judge-capacity curve (issue 23): how much verification ability must a co-trained judge have
before its reference probability carries the reward as well as a verifier does?

    python benchmarks/ral_capacity.py                          # the full study (5 seeds, 100 steps)
    python benchmarks/ral_capacity.py --quick                  # the pilot size (2 seeds, 20 steps, 3 levels)
    python benchmarks/ral_capacity.py --settings tuned.json    # per-method settings (JSON)
    python benchmarks/ral_capacity.py --settings benchmarks/results/history/leaderboard_2026-12-02/tuning.csv  # the tuning stage's choices

Seed 002's judges get what they know from pretraining (Qwen3 0.6B–32B); §5 says larger judges learn
better rewards and some tasks need judges much larger than the generator.  This study varies the
deciding variable — the judge's measured verification ability — and reports the whole curve:

1. **Temperature.**  The shared SFT warm start is sampled on 500 RL prompts × 4 at each temperature
   of a grid: malformed rate, accuracy on valid answers, and the share of wrong answers that recur
   among a prompt's samples (systematic errors recur; sampling noise does not).  The study runs —
   sampling and held-out avg@2 alike — at ``--temperature`` (default 1.0, the model's own
   distribution; the measurement is printed beside the choice).
2. **Judge levels** (:data:`LEVELS`).  A judge backbone LM-pretrained on true ``a*b=c`` of operand
   pairs no prompt of the task uses (:mod:`rewardzoo.judges.pretrain`), at increasing budgets and
   sizes (one larger than the policy), plus a judge trained from scratch and the board's judge (the
   SFT policy's backbone).  No correctness label enters any judge.
3. **Verification ability before RL.**  For each level and each readout of
   :mod:`rewardzoo.judges.readouts`: AUC of the judge's logit for right vs wrong valid answers of the
   warm start on the **validation** prompts (2 samples each; never the test split, since these AUCs choose
   the readout and the board's level), at build (``auc_start``) and after RAL's
   own label-free warm-up (``auc_warm``: the recipe's warm-up rounds of BCE, references vs the warm
   start's answers on RL prompts, run through :class:`rewardzoo.rewards.ral.RAL`).  The hidden
   verifier labels the AUC's rows only.  The study's readout (``--readout``) is the judge's x-value.
4. **RL.**  The study's runs, declared once the levels are ordered (:func:`declare`: a
   :class:`rewardzoo.board.study.Study`, run by the path every study shares, :func:`rewardzoo.board.study.sweep`):
   for each level RAL with that judge, the
   format-only control (``reward.ral.format_only=true``: D ≡ 1 on valid answers, no judge) and RLVR,
   at the same settings (the multiplication recipes with the ``cpu`` board's 20 prompts a step, the
   temperature, 002's KL penalty to the initial policy β, judge warm-up, gate, GRPO group
   normalisation), ≥ 5 seeds.  Per-method settings (``--settings``: ``{"RAL": [...], "RLVR": [...],
   "RAL format-only": [...], "RAL frozen judge": [...]}``, key=value overrides under the board's row names,
   :data:`BOARD_ROWS`; "RAL" applies to every RAL run, the control and the frozen judges included, then a
   row's own: the control's, or "RAL frozen judge" for every frozen-judge row),
   or the ``tuning.csv`` of the leaderboard's tuning stage (:mod:`rewardzoo.protocol`: its chosen
   RLVR, RAL, format-only and frozen-judge settings), are inputs; the defaults are the recipes'.
   With ``--tune`` the study runs the protocol's tuning stage itself first, at its own settings
   (:func:`rewardzoo.board.tune`: each row of :data:`BOARD_ROWS` over the learning-rate grid
   ``--lr-factors`` × the recipe's ``grpo.lr``, extending at an edge as the board's grid does, on the validation
   split, the board's tuning seeds (``--tune-seeds``, default 1000-1002: successive halving); the RAL and
   frozen-judge rows at the highest-AUC level of the study, and every other level's RAL row too: each
   level gets the same tuning) and
   writes ``OUT/ral_capacity_tuning/{TUNING.md,tuning.csv}``: the board's choices were made at T = 2
   without a KL penalty, and a rate tuned there does not carry to T = 1.
   Verdicts are the protocol's (:func:`rewardzoo.protocol.verdict`: ≥ 3 seeds, RLVR as the positive
   control).
5. **The judge over training.**  Each RAL run keeps a checkpoint at every evaluation; the judge of
   each checkpoint is scored on the same validation probe (verification AUC: does it rise during
   co-training, 002's "curriculum" argument?) and on that evaluation's own held-out answers of the
   policy; plus the run's ``judge/*`` log (AUC of references vs generations, accuracy on each side,
   gate skips).
6. **The curve.**  RAL / RLVR held-out gain ratio (each seed's ratio, t-interval over seeds,
   :func:`rewardzoo.eval.seed_ci`) against the level's measured AUC, with the format-only
   control's ratio as a line.  The board's RAL row is the level with the highest validation AUC, chosen
   before RL (:func:`board_level`); ``OUT/ral_capacity.{md,csv,png}`` and ``ral_capacity_judges.csv``
   (every readout's AUCs), ``ral_capacity_temperature.csv``.  The Markdown starts with the command
   and ends with the measured cost and the estimated cost of the full size.

Runs live under ``RUNS/<slug(method)>[-<hash of its settings>]/seed<s>`` (``--runs``; the shared study layout,
:meth:`rewardzoo.board.study.Study.runs`, the hash only when ``--settings`` or ``--tune`` gives the row settings)
and are reused when finished (a killed study resumes); every run, the tuning stage's and the probe of stages 1–3
start from one SFT warm start, cached in ``RUNS/sft-cache`` (unless ``--override sft.cache_dir=…``); the
measurements of stages 1–3 are cached as JSON under ``RUNS/measure/``.  The report (``--out``) starts with the
command.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import hashlib
import json
import math
import shlex
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402

from rewardzoo.board import CPU_SETTINGS, PRESETS, Entry, claim_lines, markdown, tables, tune  # noqa: E402
from rewardzoo.board.report import default_tune_seeds  # noqa: E402
from rewardzoo.board.study import Call, RunKey, Study, header, sweep  # noqa: E402
from rewardzoo.core.logger import read_metrics  # noqa: E402
from rewardzoo.core.models import TinyModelConfig  # noqa: E402
from rewardzoo.core.types import Rollouts  # noqa: E402
from rewardzoo.eval import Estimate, auc, gain_ratio, mean_ci, seed_ci  # noqa: E402
from rewardzoo.judges.pretrain import JudgePretrainConfig, pretrain_backbone  # noqa: E402
from rewardzoo.protocol import LR_FACTORS, TUNING_SEEDS, Finding, Grid, word  # noqa: E402
from rewardzoo.protocol import verdict as protocol_verdict  # noqa: E402
from rewardzoo.recipes import generate, run_config, sft  # noqa: E402
from rewardzoo.rewards.context import RewardContext  # noqa: E402
from rewardzoo.rewards.ral import RAL  # noqa: E402
from rewardzoo.sweep import add_executor_arguments, eval_rows, executor_from_args  # noqa: E402
from rewardzoo.tasks.chat import QUESTION  # noqa: E402
from rewardzoo.tasks.multiplication import MultiplicationConfig  # noqa: E402
from rewardzoo.zoo import build_task, load_config  # noqa: E402

RAL_RECIPE, RLVR_RECIPE = "ral_multiplication", "rlvr_multiplication"
BOARD = CPU_SETTINGS["multiplication"]
"""The ``cpu`` board's multiplication settings (20 prompts a step), for every run alike."""
LARGE = TinyModelConfig(hidden_size=256, intermediate_size=768, num_layers=4, num_heads=8, num_kv_heads=4)
"""A judge about 4× the policy's parameters (the policy: hidden 128, 4 layers)."""


@dataclass(frozen=True)
class Level:
    """A judge level: where its backbone comes from, and what that is."""

    what: str
    pretrain: JudgePretrainConfig | None = None
    """Pretrain a backbone on the equation corpus (None: ``init_from`` below)."""
    init_from: str = ""
    """Without ``pretrain``: '' (a tiny judge trained from scratch, shaped ``tiny``) or 'policy'."""
    tiny: TinyModelConfig = field(default_factory=TinyModelConfig)


LEVELS: dict[str, Level] = {
    "scratch": Level("policy-sized judge, random init (no pretraining)"),
    "board": Level(
        "the board's judge: the SFT policy's backbone (it never saw an answer without its scratchpad)",
        init_from="policy",
    ),
    "pre100": Level("policy-sized, LM-pretrained 100 steps on the equation corpus", JudgePretrainConfig(steps=100)),
    "pre300": Level("policy-sized, LM-pretrained 300 steps", JudgePretrainConfig(steps=300)),
    "pre1000": Level("policy-sized, LM-pretrained 1,000 steps", JudgePretrainConfig(steps=1000)),
    "large300": Level(
        "4× the policy's parameters (hidden 256), LM-pretrained 300 steps", JudgePretrainConfig(tiny=LARGE, steps=300)
    ),
    "large1000": Level(
        "4× the policy's parameters (hidden 256), LM-pretrained 1,000 steps",
        JudgePretrainConfig(tiny=LARGE, steps=1000),
    ),
}
"""The judge levels (the study orders them by measured AUC).  No correctness label enters any of them."""
QUICK_LEVELS = ["scratch", "pre300", "pre1000"]
"""The levels the pilot (``--quick``) trains RL with; it measures every level but ``large1000``."""
READOUTS: dict[str, dict] = {
    "last_token": dict(readout="last_token"),
    "answer_mean+eos": dict(readout="answer_mean", end_token=True),
    "lm_likelihood+eos": dict(readout="lm_likelihood", end_token=True),
}
"""The readouts measured before RL (judges/readouts.py): 002's last-token classifier, the head on the mean of the
answer tokens' states with an end token, and the answer's likelihood under the backbone's LM head (mean over the
answer's tokens and EOS)."""
JUDGE = dict(lr=1e-4, head_lr=1e-2)
"""Judge optimiser settings of every level, fixed before any RL run on the warm-up AUC alone: at the recipe's judge lr
(1e-3) RAL's 20 warm-up rounds erode what a pretrained backbone knows (pre300, likelihood readout: AUC 0.735 at build,
0.634 after warm-up), at 1e-4 they keep it (0.732); the fresh readout parameters (a and b, or the head) learn at 1e-2
so they fit within the warm-up.  The judge lr is RAL's own key for a tuning stage (``--settings``)."""
BOARD_ROWS = ("RLVR", "RAL", "RAL format-only", "RAL frozen judge")
"""The leaderboard's multiplication rows whose tuned settings the study takes (``--settings tuning.csv``): RLVR's
for RLVR, RAL's for every RAL run, then the format-only control's and the frozen judge's for those rows."""
TEMPERATURES = (0.5, 0.75, 1.0, 1.5, 2.0)
"""The temperature grid of stage 1 (2.0 is the board's)."""
STUDY = Study(
    name="ral_capacity",
    script="benchmarks/ral_capacity.py",
    task="multiplication",
    rows=(
        Entry("multiplication", "RLVR", RLVR_RECIPE),
        Entry("multiplication", "RAL format-only", RAL_RECIPE, ("reward.ral.format_only=true",)),
    ),
    seeds=(0, 1, 2, 3, 4),
    layers={"RAL format-only": ("RAL", "RAL format-only")},
    names=BOARD_ROWS,
)
"""Stage 4's RL runs, declared (:class:`rewardzoo.board.study.Study`): RLVR and the format-only control on five
seeds, the settings of ``--settings`` under the board's names (:data:`BOARD_ROWS`); :func:`declare` adds a row per
judge level (and frozen judge) once the levels are measured, and the settings every run shares."""


def layers(method: str) -> tuple[str, ...]:
    """The names whose settings a row takes, in order: its family's (``RLVR``, or ``RAL`` for every RAL row), then
    its own (a frozen-judge row's: ``RAL frozen judge``, the board's row)."""
    if method == "RLVR":
        return ("RLVR",)
    return ("RAL", "RAL frozen judge" if method.endswith("frozen judge") else method)


def declare(levels: dict[str, list[str]], frozen: list[str], shared: list[str]) -> Study:
    """The study's RL runs: RLVR, the format-only control, ``RAL <level>`` with each level's judge overrides
    (``levels``, in the order of their measured AUC) and ``RAL <level> frozen judge`` for each of ``frozen``;
    every run at the ``shared`` settings (after the seed and the SFT cache), each row at its settings
    (:func:`layers`)."""
    rows = [Entry("multiplication", f"RAL {n}", RAL_RECIPE, tuple(o)) for n, o in levels.items()]
    rows += [
        Entry("multiplication", f"RAL {n} frozen judge", RAL_RECIPE, (*levels[n], "reward.ral.frozen=true"))
        for n in frozen
    ]
    rows = [*STUDY.rows, *rows]
    return dataclasses.replace(
        STUDY, rows=tuple(rows), common=tuple(shared), layers={e.method: layers(e.method) for e in rows}
    )


# ------------------------------------------------------------------------------------------ stage 1
def sample(
    policy_dir: Path, prompts: list[str], n: int, temperature: float, seed: int, max_new_tokens: int = 20
) -> list[list[str]]:
    """``n`` completions per prompt of the warm start at ``temperature`` (seeded)."""
    torch.manual_seed(seed)
    return generate(
        policy_dir,
        prompts,
        n=n,
        overrides=[
            f"sampling.temperature={temperature}",
            f"sampling.max_new_tokens={max_new_tokens}",
            "logging.progress=false",
        ],
    )


def temperature_row(task, policy_dir: Path, examples, temperature: float, n: int = 4) -> dict:
    """Malformed rate, accuracy, accuracy on valid answers and the recurrence of wrong answers at one temperature."""
    texts = sample(policy_dir, [e.prompt for e in examples], n, temperature, seed=11)
    answers = [[task.parse(c) for c in row] for row in texts]
    valid = [(a, e) for row, e in zip(answers, examples) for a in row if a is not None]
    right = [a == e.reference for a, e in valid]
    recurring = []
    for row, e in zip(answers, examples):
        wrong = [a for a in row if a is not None and a != e.reference]
        recurring += [wrong.count(a) > 1 for a in wrong]
    total = n * len(examples)
    return {
        "temperature": temperature,
        "malformed": 1 - len(valid) / total,
        "accuracy": sum(right) / total,
        "valid_accuracy": sum(right) / max(len(valid), 1),
        "wrong_recurring": sum(recurring) / max(len(recurring), 1),
        "n_wrong": len(recurring),
    }


# ------------------------------------------------------------------------------------------ stage 2
def level_overrides(name: str, task: MultiplicationConfig, cache: str | None) -> list[str]:
    """The ``reward.ral.judge.*`` overrides of a level (pretraining its backbone first when it is not cached)."""
    level = LEVELS[name]
    if level.pretrain is not None:
        cfg = level.pretrain if cache is None else dataclasses.replace(level.pretrain, cache_dir=cache)
        return [f"reward.ral.judge.init_from={pretrain_backbone(cfg, task)}"]
    shape = [f"reward.ral.judge.tiny.{k}={v}" for k, v in asdict(level.tiny).items()]
    return [f"reward.ral.judge.init_from={level.init_from}", *shape]


def judge_overrides(readout: dict) -> list[str]:
    """``reward.ral.judge.*`` overrides of a readout and the study's judge optimiser settings."""
    return [
        f"reward.ral.judge.{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in {**JUDGE, **readout}.items()
    ]


# ------------------------------------------------------------------------------------------ stage 3
@dataclass
class Probe:
    """Warm-start answers for measuring judges: the validation probe (valid answers with their correctness,
    for AUC only) and the warm-up batches on RL prompts (what RAL's own warm-up sees)."""

    prompts: list[str]
    answers: list[str]
    correct: list[bool]
    warmup: list[Rollouts]


def make_probe(cfg, task, policy_dir: Path, temperature: float, warmup_steps: int | None = None) -> Probe:
    """Sample the probe: 2 completions per **validation** prompt (never the test split: the probe's AUCs choose
    the readout and the board's judge level), and ``warmup_steps`` (default: the recipe's) RL-shaped batches, at
    ``cfg.sampling.max_new_tokens`` when the task is a chat task (an instruct model's reply), else 20 tokens.  A
    chat task's judge reads the question, not the rendered conversation (:func:`judge_prompts`)."""
    examples = task.validation
    if not examples:
        raise ValueError(
            "the judge probe reads the task's validation split, which is empty: give "
            "task.multiplication.n_validation > 0 (the probe's AUCs make choices, so never the test split)"
        )
    tokens = cfg.sampling.max_new_tokens if cfg.task.chat else 20
    texts = sample(policy_dir, [e.prompt for e in examples], 2, temperature, seed=12, max_new_tokens=tokens)
    prompts, answers, correct = [], [], []
    for e, row in zip(examples, texts):
        for c in row:
            a = task.parse(c)
            if a is not None:
                prompts.append(e.meta.get(QUESTION, e.prompt)), answers.append(a), correct.append(a == e.reference)
    rl = task.train[cfg.sft.n_examples :]
    per, G = cfg.grpo.batch_size // cfg.grpo.group_size, cfg.grpo.group_size
    batches = []
    for r in range(cfg.reward.ral.warmup_steps if warmup_steps is None else warmup_steps):
        chunk = rl[(r * per) % len(rl) :][:per]
        texts = sample(policy_dir, [e.prompt for e in chunk], G, temperature, seed=100 + r, max_new_tokens=tokens)
        comps = [c for row in texts for c in row]
        rows = [e for e in chunk for _ in range(G)]
        batches.append(
            Rollouts(
                prompts=[e.prompt for e in rows],
                completions=comps,
                answers=[task.parse(c) for c in comps],
                references=[e.reference for e in rows],
                meta=[e.meta for e in rows],
                step=0,
                group_ids=torch.arange(len(chunk)).repeat_interleave(G),
            )
        )
    return Probe(prompts, answers, correct, batches)


def verification_auc(judge, probe: Probe) -> float:
    """AUC of the judge's logit for right vs wrong valid answers of the probe (the verifier labels rows only)."""
    z = judge.logit_reference(probe.prompts, probe.answers)  # [n]
    right = torch.tensor(probe.correct)  # [n]
    return auc(z[right], z[~right])


def measure_judge(cfg, probe: Probe, policy_dir: Path) -> dict:
    """AUC at build and after RAL's own warm-up, for the judge ``cfg.reward.ral`` describes."""
    start = time.perf_counter()
    reward = RAL.from_config(cfg.reward.ral, RewardContext(seed=0, init_dir=policy_dir))
    before = verification_auc(reward.judge, probe)
    for b in probe.warmup:
        stats = reward.update(b, reward.score(b))
    return {
        "auc_start": before,
        "auc_warm": verification_auc(reward.judge, probe),
        "warm_judge_auc": stats.get("judge/auc", math.nan),
        "warm_accuracy": stats.get("judge/accuracy", math.nan),
        "seconds": time.perf_counter() - start,
    }


# ------------------------------------------------------------------------------------------ stage 5
def judge_over_training(run_dir: Path, probe: Probe, policy_dir: Path) -> dict[int, dict]:
    """For every checkpoint of a RAL run: the training judge's verification AUC on the probe and on that
    evaluation's held-out answers of the policy (cached in ``run_dir/judge_auc.json``)."""
    cache = run_dir / "judge_auc.json"
    if cache.is_file():
        return {int(k): v for k, v in json.loads(cache.read_text()).items()}
    cfg = run_config(run_dir)
    reward = RAL.from_config(cfg.reward.ral, RewardContext(seed=cfg.seed, init_dir=policy_dir))
    samples: dict[int, list[dict]] = {}
    for row in read_metrics(run_dir / "samples.jsonl"):
        if row["answer"] is not None:
            samples.setdefault(row["step"], []).append(row)
    out = {}
    for ckpt in sorted((run_dir / "checkpoints").glob("step_*")):
        step = int(ckpt.name.removeprefix("step_"))
        reward.load_state_dict(torch.load(ckpt / "reward.pt", weights_only=False))
        rows = samples.get(step, [])
        z = reward.judge.logit_reference([r["prompt"] for r in rows], [r["answer"] for r in rows])  # [n]
        right = torch.tensor([bool(r["correct"]) for r in rows], dtype=torch.bool)  # [n]
        out[step] = {
            "probe_auc": verification_auc(reward.judge, probe),
            "policy_auc": auc(z[right], z[~right]) if rows else math.nan,
        }
    cache.write_text(json.dumps(out))
    return out


# ------------------------------------------------------------------------------------------ helpers
def digest(key: dict) -> str:
    """A short hash of a JSON-able key."""
    return hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()[:12]


def cached(path: Path, key: dict, compute):
    """``compute()``, stored in ``path`` as JSON under a hash of ``key`` (recomputed when the key changes)."""
    store = json.loads(path.read_text()) if path.is_file() else {}
    if digest(key) not in store:
        store[digest(key)] = compute()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(store, indent=1))
    return store[digest(key)]


def final_and_first(run_dir: Path) -> tuple[list[float], list[float]]:
    """Per-example held-out correctness at the first and the last evaluation of a run."""
    rows = eval_rows(run_dir)
    return rows[min(rows)]["correct"], rows[max(rows)]["correct"]


def ratio_ci(base: tuple[np.ndarray, np.ndarray], arm: tuple[np.ndarray, np.ndarray]) -> Estimate:
    """The arm's held-out gain over RLVR's: each seed's ratio of gains ([S, E] tables, paired on the seed), with the
    t-interval over seeds (:func:`rewardzoo.eval.seed_ci`: the seed is the unit)."""
    return seed_ci(gain_ratio, *base, *arm)


def settings_of(text: str) -> dict[str, list[str]]:
    """``--settings``: a JSON object (inline or a file) of method or family name (:data:`BOARD_ROWS`) →
    key=value overrides, or the ``tuning.csv`` of the leaderboard's tuning stage (``rewardzoo leaderboard
    --tune-only``): the chosen setting of each multiplication row of :data:`BOARD_ROWS`
    (:meth:`rewardzoo.board.study.Study.settings`)."""
    return STUDY.settings(text)


def level_of(method: str) -> str:
    """The judge level of a RAL method's name (``RAL pre1000 frozen judge`` → ``pre1000``)."""
    return method.removeprefix("RAL ").removesuffix(" frozen judge")


def nanmean(xs: list[float]) -> float:
    """The mean of the defined values, NaN when none is."""
    xs = [x for x in xs if math.isfinite(x)]
    return float(np.mean(xs)) if xs else math.nan


def number(x: float) -> str:
    """A value to 3 decimals, '—' when undefined."""
    return "—" if not math.isfinite(x) else f"{x:.3f}"


def verdict(ratio: Estimate, rlvr_gain: Estimate, n_seeds: int) -> str:
    """002's headline "RAL reaches ½ of RLVR's gain", then parity, read by the protocol
    (:func:`rewardzoo.protocol.verdict`: no verdict from fewer than ``MIN_SEEDS`` seeds, and "testbed
    cannot decide" unless the positive control, RLVR's gain over the warm start, lies above 0)."""
    n = f"{n_seeds} seeds"
    positive = Finding(
        "multiplication",
        "RLVR gains on the warm start",
        "the warm start",
        rlvr_gain,
        0.0,
        True,
        f"RLVR gain {rlvr_gain.format(scale=100, sign=True)} points",
        n,
    )
    half = protocol_verdict(
        Finding(
            "multiplication",
            "RAL reaches ½ of RLVR's gain",
            "RLVR",
            ratio,
            0.5,
            True,
            f"ratio {ratio.bounds(digits=2)}",
            n,
        ),
        n_seeds,
        positive,
    )
    if half.startswith(("no verdict", "testbed cannot decide")):
        return half
    if not math.isfinite(ratio.mean):
        return "undecided (CI)"
    return f"½: {half}; parity: {word(ratio, 1.0)}"


# ------------------------------------------------------------------------------------------ stage 4
def tuned_settings(
    methods: dict[str, list[str]], top: str, shared: list[str], args, command: str
) -> dict[str, list[str]]:
    """The protocol's tuning stage at the study's settings: each row of :data:`BOARD_ROWS` (RAL and its
    frozen judge at level ``top``) and every other judge level's RAL row (``RAL <level>``: every level gets the
    same tuning as the top one) over ``--lr-factors`` on the validation split; the choices, as ``--settings``
    would give them (the RAL row's for every RAL run, then each control's and each level's own)."""
    rows = {
        "RLVR": (RLVR_RECIPE, methods["RLVR"]),
        "RAL": (RAL_RECIPE, methods[f"RAL {top}"]),
        "RAL format-only": (RAL_RECIPE, methods["RAL format-only"]),
        "RAL frozen judge": (RAL_RECIPE, [*methods[f"RAL {top}"], "reward.ral.frozen=true"]),
    }
    rows |= {
        m: (RAL_RECIPE, extra)
        for m, extra in methods.items()
        if m.startswith("RAL ") and m not in (f"RAL {top}", "RAL format-only") and not m.endswith("frozen judge")
    }
    entries = [Entry("multiplication", m, recipe, (*shared, *extra)) for m, (recipe, extra) in rows.items()]
    choices = tune(
        entries,
        Grid(tuple(args.lr_factors)),
        default_tune_seeds(args.quick, args.tune_seeds),
        args.runs,
        args.out / "ral_capacity_tuning",
        args.jobs,
        quick=False,
        progress=True,
        by_hand={},
        command=command,
        executor=executor_from_args(args),
    )
    return {method: list(choice.setting.overrides) for (_, method), choice in choices.items()}


# ------------------------------------------------------------------------------------------ stage 7
def board_level(levels: list[str], auc_of: dict[str, float]) -> tuple[str, str]:
    """The level the board's RAL row takes, and why: the level whose judge verifies best before RL — the highest
    verification AUC on the **validation** probe (:func:`make_probe`) — chosen before any RL run, so no test
    number enters the choice (the study's curve then reports every level on the test split)."""
    best = max(levels, key=lambda n: (math.isfinite(auc_of[n]), auc_of[n] if math.isfinite(auc_of[n]) else 0.0))
    return (
        best,
        f"the judge level with the highest verification AUC on validation prompts before RL ({auc_of[best]:.3f})",
    )


def board_lines(
    call: Call,
    seeds: list[int],
    level: str,
    why: str,
    temperature: float,
    beta: float,
) -> list[str]:
    """The board's RAL rows at the study's settings, drawn from the study's own runs (``call``): RLVR, RAL at
    ``level``, its frozen judge (when run) and the format-only control, in the leaderboard's table and with its
    claim lines (:func:`rewardzoo.board.claim_lines`)."""
    board = {e.method: e for e in PRESETS["cpu"] if e.task == "multiplication"}
    study = {
        "RLVR": "RLVR",
        "RAL": f"RAL {level}",
        "RAL frozen judge": f"RAL {level} frozen judge",
        "RAL format-only": "RAL format-only",
    }
    study = {row: m for row, m in study.items() if m in call.rows}
    entries = [Entry("multiplication", row, board[row].recipe, role=board[row].role) for row in study]
    aliased = {
        f"multiplication/{row}/seed{s}": call.results[RunKey(None, m, s)] for row, m in study.items() for s in seeds
    }
    tabs = tables(entries, aliased, seeds)
    for row, m in study.items():  # the settings the row's runs trained with (Study.own): each key's last value
        own = dict(o.split("=", 1) for o in call.study.own(call.settings, m))
        tabs["multiplication"].settings[row] = " ".join(f"{k}={v}" for k, v in own.items()) or "recipe"
    return [
        f"## The board's RAL rows at the study's settings: T = {temperature}, KL β = {beta}, judge `{level}`",
        "",
        f"Judge level `{level}`: {why}. The rows are the study's own runs (RAL = `RAL {level}`), in the leaderboard's "
        "table and with its claim lines.",
        "",
        *markdown("multiplication", tabs["multiplication"], len(seeds))[2:],
        *claim_lines(tabs, aliased, seeds)[2:],
        "",
    ]


# ------------------------------------------------------------------------------------------ main
def parse(argv: list[str] | None) -> argparse.Namespace:
    """The command line, its size's defaults filled in (``seeds``, ``steps``, ``every``, ``levels``, and
    ``measure_levels``, which holds the RL levels too) and ``command``, the line that made the report."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--quick",
        action="store_true",
        help="pilot size: seeds 0 1, 20 steps, evaluations every 10, levels scratch pre300 pre1000 (unless given)",
    )
    parser.add_argument("--seeds", type=int, nargs="+")
    parser.add_argument("--steps", type=int, help="RL steps (full: 100)")
    parser.add_argument(
        "--every", type=int, help="held-out evaluation (and judge checkpoint) every this many steps (full: 20)"
    )
    parser.add_argument("--levels", nargs="+", choices=list(LEVELS), help="judge levels for RL (default: all)")
    parser.add_argument(
        "--measure-levels",
        nargs="+",
        choices=list(LEVELS),
        help="judge levels whose AUCs are measured (default: all; --quick: all but large1000)",
    )
    parser.add_argument("--readout", default="lm_likelihood+eos", choices=list(READOUTS), help="the RAL runs' readout")
    parser.add_argument("--temperature", type=float, default=1.0, help="sampling and held-out avg@2 temperature")
    parser.add_argument(
        "--beta",
        type=float,
        default=0.04,
        help="KL penalty to the initial policy, every method (002 §3 uses one; the tuning stage chooses it)",
    )
    parser.add_argument(
        "--frozen",
        nargs="*",
        default=None,
        help="levels that also get a frozen-judge row (default: the last level; none with --quick)",
    )
    parser.add_argument(
        "--settings",
        default="",
        help='per-method overrides, JSON or a file: {"RAL": [...], "RLVR": [...]}, or the '
        "leaderboard tuning stage's tuning.csv",
    )
    parser.add_argument(
        "--tune",
        action="store_true",
        help="run the protocol's tuning stage at the study's own settings "
        "first and train its choices (instead of --settings)",
    )
    parser.add_argument(
        "--lr-factors",
        type=float,
        nargs="+",
        default=list(LR_FACTORS),
        help="--tune's learning-rate grid, as multiples of the recipe's grpo.lr",
    )
    parser.add_argument(
        "--tune-seeds",
        type=int,
        help=f"--tune's tuning seeds, 1000..1000+N-1 (default {TUNING_SEEDS}, as the board; --quick: 1)",
    )
    parser.add_argument("--override", "--set", dest="override", nargs="*", default=[], help="key=value for every run")
    parser.add_argument("--judge-cache", default=None, help="cache directory of pretrained judge backbones")
    parser.add_argument(
        "--runs", type=Path, default=Path("runs/ral_capacity"), help="run directories (finished runs are reused)"
    )
    parser.add_argument(
        "--out", type=Path, default=Path("benchmarks/results"), help="where the Markdown, CSV and figures go"
    )
    parser.add_argument("--jobs", type=int, default=2, help="runs at a time (one thread each)")
    add_executor_arguments(parser)
    parser.add_argument(
        "--measure-only",
        action="store_true",
        help="stop after stages 1-3 (temperature, judge levels, their AUCs), printing them",
    )
    parser.add_argument(
        "--full-size",
        nargs=3,
        type=int,
        default=[5, 100, 20],
        metavar=("SEEDS", "STEPS", "EVERY"),
        help="the full study's size, for the printed cost estimate",
    )
    args = parser.parse_args(argv)
    if args.tune and args.settings:
        raise SystemExit("--tune chooses the per-method settings itself: give --tune or --settings, not both")
    args.argv = argv
    args.command = "python benchmarks/ral_capacity.py " + " ".join(
        shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:])
    )
    args.seeds = args.seeds or ([0, 1] if args.quick else [0, 1, 2, 3, 4])
    args.steps = args.steps or (20 if args.quick else 100)
    args.every = args.every or (10 if args.quick else 20)
    args.levels = args.levels or (QUICK_LEVELS if args.quick else list(LEVELS))
    measured = args.measure_levels or [n for n in LEVELS if not (args.quick and n == "large1000")]
    args.measure_levels = list(dict.fromkeys([*measured, *args.levels]))
    if unknown := sorted(set(args.frozen or ()) - set(args.levels)):
        parser.error(f"--frozen {unknown}: a frozen judge is one of the RL levels, {args.levels}")
    return args


def shared_settings(args: argparse.Namespace) -> list[str]:
    """The settings every run shares (twins differ only in the reward), the study's SFT cache first (the shared
    layout's, ``RUNS/sft-cache``), so the probe, the tuning stage and the RL runs start from one model."""
    return [
        f"sft.cache_dir={args.runs / 'sft-cache'}",
        *BOARD,
        f"sampling.temperature={args.temperature}",
        f"grpo.beta={args.beta}",
        f"steps={args.steps}",
        f"eval.every={args.every}",
        f"checkpoint_every={args.every}",
        f"keep_checkpoints={args.steps // args.every + 1}",
        *args.override,
    ]


@dataclass
class Measured:
    """Stages 1–3, before any RL run: the warm start at every temperature, the probe, every level's judge by
    readout, and each level's AUC under the study's readout (the curve's x-value)."""

    temperatures: list[dict]
    n_prompts: int
    """The RL prompts stage 1 sampled."""
    probe: Probe
    judges: list[dict]
    auc_of: dict[str, float]


def measure(args: argparse.Namespace, cfg, task, policy_dir: Path, shared: list[str]) -> Measured:
    """Stages 1–3 (cached under ``RUNS/measure``): the temperature grid, the probe, and every measured level's
    verification AUC at build and after warm-up, for every readout."""
    store = args.runs / "measure"
    rl_examples = task.train[cfg.sft.n_examples :][:500]
    temperatures = [
        cached(
            store / "temperature.json",
            {"policy": str(policy_dir), "T": t, "n": 4, "prompts": 500},
            lambda t=t: temperature_row(task, policy_dir, rl_examples, t),
        )
        for t in TEMPERATURES
    ]
    probe_key = {
        "policy": str(policy_dir),
        "T": args.temperature,
        "task": asdict(cfg.task),
        "batch": cfg.grpo.batch_size,
        "group": cfg.grpo.group_size,
        "warmup": cfg.reward.ral.warmup_steps,
    }
    probe_file = store / f"probe-{digest(probe_key)}.pt"
    if not probe_file.is_file():
        probe_file.parent.mkdir(parents=True, exist_ok=True)
        torch.save(make_probe(cfg, task, policy_dir, args.temperature), probe_file)
    probe = torch.load(probe_file, weights_only=False)
    judges = []
    for name in args.measure_levels:
        level = level_overrides(name, cfg.task.multiplication, args.judge_cache)
        for readout, spec in READOUTS.items():
            jcfg = load_config(RAL_RECIPE, [*shared, *level, *judge_overrides(spec)])
            key = {
                "policy": str(policy_dir),
                "T": args.temperature,
                "level": level,
                "judge": asdict(jcfg.reward.ral),
                "warmup_batch": cfg.grpo.batch_size,
            }
            row = cached(store / "judges.json", key, lambda jcfg=jcfg: measure_judge(jcfg, probe, policy_dir))
            judges.append({"level": name, "readout": readout, **row})
    auc_of = {j["level"]: j["auc_warm"] for j in judges if j["readout"] == args.readout}
    return Measured(temperatures, len(rl_examples), probe, judges, auc_of)


def held_out(call: Call, method: str, seeds: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """A method's per-example held-out correctness at its runs' first and last evaluations: ([S, E], [S, E])."""
    pairs = [final_and_first(call.results[RunKey(None, method, s)].spec.run_dir) for s in seeds]
    return np.array([p[0] for p in pairs], dtype=float), np.array([p[1] for p in pairs], dtype=float)


def logged(logs: list[list[dict]], read) -> float:
    """The mean over runs of ``read(run's judge log rows)``, NaN unless every run logged its judge."""
    return float(np.mean([read(rows) for rows in logs])) if all(logs) else math.nan


@dataclass
class Curve:
    """Stages 5–6: RLVR's gain (the positive control and the ratios' denominator), a row per RAL method (its gain,
    final accuracy, ratio to RLVR's gain and ``judge/*`` log) and its judge's verification AUC at every checkpoint
    (``training``: method → step → (probe, policy's answers), mean over seeds)."""

    rlvr_gain: Estimate
    rlvr_final: Estimate
    n_examples: int
    """RLVR's held-out examples per evaluation."""
    rows: list[dict]
    training: dict[str, dict]


def curve(call: Call, methods: list[str], seeds: list[int], measured: Measured, policy_dir: Path) -> Curve:
    """Stages 5–6 from the study's runs (scoring each RAL run's checkpointed judges, cached in the run)."""
    rlvr = held_out(call, "RLVR", seeds)
    rows, training = [], {}
    for method in methods:
        if method == "RLVR":
            continue
        arm = held_out(call, method, seeds)
        runs = [call.results[RunKey(None, method, s)] for s in seeds]
        level = level_of(method)
        logs = [[r for r in run.rows if "judge/accuracy" in r and r["step"] > 0] for run in runs]
        judge_auc = {}
        if level in LEVELS:
            per_seed = [judge_over_training(run.spec.run_dir, measured.probe, policy_dir) for run in runs]
            judge_auc = {
                step: (
                    nanmean([p[step]["probe_auc"] for p in per_seed]),
                    nanmean([p[step]["policy_auc"] for p in per_seed]),
                )
                for step in sorted(set.intersection(*(set(p) for p in per_seed)))
            }
            training[method] = judge_auc
        rows.append(
            {
                "method": method,
                "auc": measured.auc_of.get(level, math.nan),
                "gain": mean_ci(arm[1].mean(1) - arm[0].mean(1)),
                "final": mean_ci(arm[1].mean(1)),
                "ratio": ratio_ci(rlvr, arm),
                "judge_auc_last": logged(logs, lambda lg: lg[-1]["judge/auc"]),
                "acc_ref": logged(logs, lambda lg: np.mean([r["judge/accuracy_reference"] for r in lg])),
                "acc_gen": logged(logs, lambda lg: np.mean([r["judge/accuracy_generated"] for r in lg])),
                "skips": logged(logs, lambda lg: lg[-1]["judge/gate_skips"]),
                "verif_end": judge_auc[max(judge_auc)] if judge_auc else (math.nan, math.nan),
                "wall": float(np.median([run.wall_s for run in runs])),
            }
        )
    rlvr_gain = mean_ci(rlvr[1].mean(1) - rlvr[0].mean(1))
    return Curve(rlvr_gain, mean_ci(rlvr[1].mean(1)), rlvr[0].shape[1], rows, training)


def report(
    args: argparse.Namespace,
    call: Call,
    cfg,
    measured: Measured,
    result: Curve,
    settings: dict[str, list[str]],
    wall: float,
) -> list[str]:
    """The Markdown: the command, the curve's table with verdicts, the board's rows at the study's settings, the
    judge over training, every level's AUCs, the temperature grid, and the cost (this call's, the full size's)."""
    seeds, steps, auc_of = args.seeds, args.steps, measured.auc_of
    rlvr_gain, rows, training = result.rlvr_gain, result.rows, result.training
    pilot = (len(seeds), steps, args.every) != tuple(args.full_size)
    title = "# RAL's judge-capacity curve (issue 23)" + (
        " — PILOT (reduced size: a check of the study, not a result)" if pilot else ""
    )
    tuned = (
        (
            f" (chosen by the study's tuning stage on the validation split at these settings, RAL's at level "
            f"{args.levels[-1]}: ral_capacity_tuning/TUNING.md)"
        )
        if args.tune
        else ""
    )
    lines = [
        header(call.study, args.argv),
        "",
        title,
        "",
        f"Multiplication 3×1 digits, one shared SFT warm start, {steps} RL steps, seeds {seeds}, sampling and held-out "
        f"avg@2 at T = {args.temperature}, KL β = {args.beta} to the warm start, the `cpu` board's 20 prompts a step; "
        f"RAL readout `{args.readout}`, judge {JUDGE}. Per-method settings: {settings or 'the recipes'}{tuned}. Gains in "
        "points over the first held-out evaluation (mean ± 95% t-interval over seeds); ratio = gain / RLVR's gain "
        f"on each seed (its mean over {result.n_examples:,} held-out examples), t-interval over seeds.",
        "",
        f"RLVR gain: {rlvr_gain.format(scale=100, sign=True)} points (final {result.rlvr_final.format(scale=100)}%).",
        "",
        "| method | judge AUC before RL | final accuracy | gain | ratio to RLVR | verdict | verification AUC at the end "
        "(probe / policy's answers) | judge/auc ref vs gen (last step) | acc. refs / gens | gate skips | run (s) |",
        "| --- | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        ve = f"{number(r['verif_end'][0])} / {number(r['verif_end'][1])}"
        lines.append(
            f"| {r['method']} | {number(r['auc'])} | "
            f"{r['final'].format(scale=100)} | {r['gain'].format(scale=100, sign=True)} | {r['ratio'].format(digits=2)} | "
            f"{verdict(r['ratio'], rlvr_gain, len(seeds))} | {ve} | {number(r['judge_auc_last'])} | {number(r['acc_ref'])} / "
            f"{number(r['acc_gen'])} | {number(r['skips'])} | {r['wall']:.0f} |"
        )
    level, why = board_level(args.levels, auc_of)
    lines += ["", *board_lines(call, seeds, level, why, args.temperature, args.beta)]
    steps_logged = sorted({s for t in training.values() for s in t})
    lines += [
        "## Does the judge's verification AUC rise during co-training?",
        "",
        "Training judge of each checkpoint, mean over seeds: AUC on the validation probe (warm-start answers, as before "
        "RL) / on that evaluation's own held-out answers of the policy. Step 0 = after warm-up, measured before RL.",
        "",
        "| method | " + " | ".join(f"step {s}" for s in steps_logged) + " |",
        "| --- |" + " ---: |" * len(steps_logged),
    ]
    for method, curve in training.items():
        lines.append(
            f"| {method} (start {number(auc_of[level_of(method)])}) | "
            + " | ".join(f"{number(a)} / {number(b)}" for a, b in curve.values())
            + " |"
        )
    probe = measured.probe
    lines += [
        "",
        "## Verification ability of every judge level and readout, before RL",
        "",
        f"AUC of the judge's logit, right vs wrong valid warm-start answers on the validation prompts ({len(probe.answers)} "
        f"answers, {sum(not c for c in probe.correct)} wrong; T = {args.temperature}): at build, and after RAL's own "
        f"{cfg.reward.ral.warmup_steps} warm-up rounds (references vs the warm start's answers, no labels).",
        "",
        "| level | what | " + " | ".join(f"{r} (build / warm)" for r in READOUTS) + " |",
        "| --- | --- |" + " ---: |" * len(READOUTS),
    ]
    for name in sorted(args.measure_levels, key=lambda n: auc_of[n]):
        cells = [next(j for j in measured.judges if j["level"] == name and j["readout"] == r) for r in READOUTS]
        lines.append(
            f"| {name} | {LEVELS[name].what} | "
            + " | ".join(f"{number(c['auc_start'])} / {number(c['auc_warm'])}" for c in cells)
            + " |"
        )
    lines += [
        "",
        f"## The warm start against the temperature (stage 1: {measured.n_prompts} RL prompts × 4 samples)",
        "",
        "| T | malformed | accuracy | accuracy on valid answers | wrong answers that recur in the prompt's samples |",
        "| ---: | ---: | ---: | ---: | ---: |",
    ]
    lines += [
        f"| {t['temperature']} | {t['malformed']:.3f} | {t['accuracy']:.3f} | {t['valid_accuracy']:.3f} | "
        f"{t['wrong_recurring']:.3f} (of {t['n_wrong']}) |"
        for t in measured.temperatures
    ]
    return [
        *lines,
        "",
        *cost_lines(args, call, wall),
        "",
        "![RAL / RLVR gain ratio against judge AUC](ral_capacity.png)",
        "",
    ]


def cost_lines(args: argparse.Namespace, call: Call, wall: float) -> list[str]:
    """This call's wall time, each method's median run time a step, and the full size's estimated run time (a RAL
    level not run here costed at the median step of the RAL levels that were)."""
    methods = [e.method for e in call.study.rows]
    per_step = {
        m: float(np.median([call.results[RunKey(None, m, s)].wall_s for s in args.seeds])) / args.steps for m in methods
    }
    n_full, steps_full, every_full = args.full_size
    ral_steps = [v for m, v in per_step.items() if m.startswith("RAL ") and m != "RAL format-only"]
    ral_step = float(np.median(ral_steps)) if ral_steps else per_step["RAL format-only"]
    full_methods = ["RLVR", "RAL format-only", *[f"RAL {n}" for n in LEVELS], "RAL frozen judge"]
    full = sum(per_step.get(m, ral_step) * steps_full * n_full for m in full_methods)
    return [
        f"Cost: this invocation {wall / 60:.1f} min wall (finished runs reused); runs' median wall per step "
        + ", ".join(f"{m} {v:.2f} s" for m, v in per_step.items())
        + f". Estimated full size ({n_full} seeds × {steps_full} steps × {len(full_methods)} methods = "
        f"{n_full * len(full_methods)} runs; levels not run here at the median RAL step, {ral_step:.2f} s): "
        f"{full / 3600:.1f} h of run time, ≈ {full / 3600 / args.jobs:.1f} h wall on {args.jobs} jobs (per-step "
        f"cost scaled from this size; evaluations every {every_full} steps; judge pretraining and measurement "
        "of levels not measured here come on top).",
    ]


def write_tables(out: Path, call: Call, seeds: list[int], measured: Measured) -> None:
    """The CSVs beside the Markdown: each run's first and final held-out accuracy (``ral_capacity.csv``), every
    level's AUCs by readout (``ral_capacity_judges.csv``) and the temperature grid."""
    with open(out / "ral_capacity.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["method", "judge_auc_before_rl", "seed", "first_accuracy", "final_accuracy", "gain"])
        for m in [e.method for e in call.study.rows]:
            first, last = held_out(call, m, seeds)
            for s, a, b in zip(seeds, first.mean(1), last.mean(1)):
                w.writerow([m, measured.auc_of.get(level_of(m), ""), s, float(a), float(b), float(b - a)])
    columns = ["level", "readout", "auc_start", "auc_warm", "warm_judge_auc", "warm_accuracy", "seconds"]
    with open(out / "ral_capacity_judges.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(columns)
        w.writerows([[j[c] for c in columns] for j in measured.judges])
    with open(out / "ral_capacity_temperature.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(measured.temperatures[0]))
        w.writeheader()
        w.writerows(measured.temperatures)


def main(argv: list[str] | None = None) -> int:
    """Run (or reuse) every stage, then write the tables and the plot."""
    args = parse(argv)
    per_method = settings_of(args.settings)
    wall_start = time.perf_counter()
    shared = shared_settings(args)
    cfg = load_config(RAL_RECIPE, shared)
    task = build_task(cfg.task)
    policy_dir = sft(RAL_RECIPE, shared)
    measured = measure(args, cfg, task, policy_dir, shared)
    if args.measure_only:
        print(json.dumps({"temperature": measured.temperatures, "judges": measured.judges}, indent=1))
        return 0
    args.levels = sorted(args.levels, key=lambda n: measured.auc_of[n])
    frozen = args.frozen if args.frozen is not None else ([] if args.quick else args.levels[-1:])

    # 4. RL: the study declared at the measured levels, run by the shared path (RUNS/<row>[-settings]/seed<s>)
    readout = judge_overrides(READOUTS[args.readout])
    levels = {n: [*level_overrides(n, cfg.task.multiplication, args.judge_cache), *readout] for n in args.levels}
    study = declare(levels, frozen, shared)
    methods = {e.method: list(e.overrides) for e in study.rows}
    if args.tune:
        per_method = tuned_settings(methods, args.levels[-1], shared, args, args.command)
    at = {"out": args.runs, "seeds": args.seeds, "rows": None, "levels": None, "set": []}  # --override is in shared
    call = sweep(study, argparse.Namespace(**{**vars(args), **at}), settings=per_method)

    # 5-7. the judge over training, the curve, the board's rows; then the report
    result = curve(call, list(methods), args.seeds, measured, policy_dir)
    lines = report(args, call, cfg, measured, result, per_method, time.perf_counter() - wall_start)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "ral_capacity.md").write_text("\n".join(lines))
    write_tables(args.out, call, args.seeds, measured)
    plot(args.out / "ral_capacity.png", result, measured.auc_of)
    print("\n".join(lines))
    return 0


def plot(path: Path, result: Curve, auc_of: dict[str, float]) -> None:
    """Left: ratio vs judge AUC with the format-only line (the held-out gains instead, RLVR's as a line, when
    no ratio is defined because RLVR's gain is not above 0); right: the judge's probe AUC over training."""
    rows, training, rlvr_gain = result.rows, result.training, result.rlvr_gain
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.5))
    curve = [r for r in rows if r["method"].removeprefix("RAL ") in auc_of and not r["method"].endswith("frozen judge")]
    as_ratio = all(math.isfinite(r["ratio"].mean) for r in rows)
    key, scale = ("ratio", 1.0) if as_ratio else ("gain", 100.0)

    def bar(r: dict) -> tuple[float, float, float]:  # mean, minus, plus
        e = r[key]
        return scale * e.mean, scale * (e.mean - e.low), scale * (e.high - e.mean)

    left.errorbar(
        [r["auc"] for r in curve],
        [bar(r)[0] for r in curve],
        fmt="o-",
        yerr=[[bar(r)[1] for r in curve], [bar(r)[2] for r in curve]],
        capsize=3,
        label="RAL (co-trained judge)",
    )
    for r in curve:
        left.annotate(
            r["method"].removeprefix("RAL "),
            (r["auc"], bar(r)[0]),
            fontsize=7,
            xytext=(4, 4),
            textcoords="offset points",
        )
    for r in rows:
        if r["method"].endswith("frozen judge"):
            m, lo, hi = bar(r)
            left.errorbar([r["auc"]], [m], yerr=[[lo], [hi]], fmt="s", capsize=3, label=r["method"])
    m, lo, hi = bar(next(r for r in rows if r["method"] == "RAL format-only"))
    left.axhline(m, color="gray", ls="--", label="format-only control")
    if math.isfinite(lo) and math.isfinite(hi):
        left.axhspan(m - lo, m + hi, color="gray", alpha=0.15)
    if as_ratio:
        left.axhline(1.0, color="k", lw=0.8, label="RLVR (parity)")
        left.axhline(0.5, color="k", lw=0.8, ls=":", label="½ of RLVR (002's headline)")
        left.set_ylabel("RAL gain / RLVR gain (held out)")
    else:
        left.axhline(100 * rlvr_gain.mean, color="k", lw=0.8, label=f"RLVR ({rlvr_gain.format(scale=100, sign=True)})")
        left.set_ylabel("held-out gain, points (no ratio: RLVR ≤ 0)")
    left.set_xlabel("judge verification AUC before RL (after warm-up)")
    left.legend(fontsize=7)
    for method, curve_t in training.items():
        right.plot(
            [0, *curve_t], [auc_of[level_of(method)], *[a for a, _ in curve_t.values()]], marker="o", ms=3, label=method
        )
    right.set_xlabel("RL step")
    right.set_ylabel("judge verification AUC (validation probe)")
    right.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    sys.exit(main())
