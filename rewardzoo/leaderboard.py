"""``rewardzoo leaderboard``: every reward head-to-head on one core, under the fair comparison protocol.

    rewardzoo leaderboard --preset cpu --seeds 5 --out benchmarks/results/leaderboard
    rewardzoo leaderboard --preset cpu --plan                       # the grid and every run, nothing trained
    rewardzoo leaderboard --preset cpu --tune-only                  # the tuning stage alone: TUNING.md
    rewardzoo leaderboard --preset cpu --quick --out /tmp/lb        # 1 seed, short: the command's own test
    rewardzoo leaderboard --preset cpu --add-method "multiplication:My method:my.yaml:grpo.beta=0"

A preset is a literal list of :class:`Entry` rows (a task, a method label, a recipe, overrides and its
role: method, control or positive control).  The protocol (:mod:`rewardzoo.protocol`):

1. **Equal twins**: every entry of a task resolves to the same configuration outside the reward
   (:func:`check_twins`, before any work; exceptions only by :data:`TWIN_EXCEPTIONS`, with reasons);
2. **tuning**: each trained entry runs over the same :class:`~rewardzoo.protocol.Grid` on the task's
   validation split at tuning seeds disjoint from the reported ones, and its setting is chosen from
   those validation numbers alone (``TUNING.md``, ``tuning.csv``); the board then trains the chosen
   settings at the reported seeds and reports the **test** split only;
3. **controls as rows**: each learned reward beside the control that removes its learned part and a
   positive control per task (:data:`POSITIVE_CONTROLS`);
4. **verdicts need power**: a claim (:data:`CLAIMS`) gets a verdict only from ≥ 3 seeds and when its
   task's positive control shows its effect; ``--quick`` prints and writes none.

Runs go through :func:`rewardzoo.sweep.run_sweep`: in parallel up to ``--jobs`` processes, one
thread each, finished runs reused (a half-finished board, and its tuning, resume), one progress bar.
Then:

- ``LEADERBOARD.md``: one table per task, every column mean ± 95% t-interval over seeds of the
  run's final test value (held-out metrics, hack rate, token entropy, wall-clock), each row with
  its role and chosen setting; the best method of a column is **bold** only where its interval
  separates from the runner-up's; then the positive controls and one line per claim — control,
  verdict, interval (a paired bootstrap's as mean [low, high], a t-interval's as mean ± half-width), n;
- ``leaderboard.csv``: one row per run, every final metric and the hash of its resolved config,
- ``curves_<task>.png``: each method's headline metric over steps, mean and 95% band over seeds,
- ``TUNING.md`` and ``tuning.csv``: the grid, every tuning run's validation value, each choice.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import math
import shlex
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
from omegaconf import OmegaConf

from rewardzoo.core.config import as_dict, to_yaml
from rewardzoo.eval import Estimate, bootstrap_ci, mean_ci
from rewardzoo.protocol import (MIN_SEEDS, TUNING_OVERRIDES, TUNING_SEED_BASE, Choice, Finding, Grid, OwnKey, Setting,
                                TwinException, ValidationRow, choose, twin_differences, verdict, word, write_tuning)
from rewardzoo.sweep import RunResult, RunSpec, add_executor_arguments, eval_rows, executor_from_args, run_sweep
from rewardzoo.zoo import resolve_recipe, shipped_recipe, shipped_recipes


@dataclass(frozen=True)
class Entry:
    """One row of a task's table: ``method`` trained by ``recipe`` with ``overrides`` (or, with
    ``factory``, by the reward ``module:function`` builds, on the recipe's settings)."""

    task: str
    method: str
    recipe: str
    overrides: tuple[str, ...] = ()
    role: str = "method"
    """What the row is for: ``method``, ``control of X: …`` (removes X's learned part), ``positive
    control`` (a reward known to work on the task), ``warm start``."""
    factory: str = ""

    @property
    def trained(self) -> bool:
        """Whether the row trains (the SFT rows, ``steps=0``, evaluate the warm start)."""
        return "steps=0" not in self.overrides


@dataclass(frozen=True)
class Board:
    """How a task's table reads: its columns (final-row keys) and which way each is better."""

    title: str
    headline: str
    """The metric of the learning-curve plot."""
    columns: tuple[tuple[str, str], ...]
    """(metric key, direction): 'max', 'min' or '' (reported, no best marked)."""
    tune_by: tuple[str, str]
    """(validation metric key, direction) the tuning stage chooses settings by: the task's objective
    (on the hackable board strict accuracy, not the hack rate a claim measures)."""


QUICK = ("steps=4", "sft.steps=20", "eval.n_examples=64", "eval.every=2", "reward.ral.warmup_steps=2",
         "reward.varl.warmup_steps=2")
"""What ``--quick`` changes in every trained run (the SFT rows keep ``steps=0``; refdist keeps its 16
held-out prompts, fewer than 64)."""
QUICK_LR_FACTORS = (1.0, 0.5)
"""``--quick``'s tuning grid (two points: the command is checked, not the science)."""
COMMON = (("policy/entropy", ""), ("time/wall_s", "min"))
BOARDS = {
    "multiplication": Board("3-digit × 1-digit multiplication with a scratchpad, held-out avg@2 at T = 2",
                            "eval/accuracy", (("eval/accuracy", "max"), ("eval/relative_error", "min"), *COMMON),
                            ("eval/accuracy", "max")),
    "hackable_multiplication": Board("Hackable multiplication (RL rewards the lazy `contains` proxy)", "eval/hack_rate",
                                     (("eval/accuracy", "max"), ("eval/hack_rate", "min"), ("eval/proxy_pass", ""),
                                      *COMMON), ("eval/accuracy", "max")),
    "refdist": Board("Reference distribution (exact divergences of the policy's answer distribution to p_ref)",
                     "eval/js", (("eval/js", "min"), ("eval/kl_ref_pi", "min"), ("eval/kl_pi_ref", "min"),
                                 ("eval/top_answer_share", ""), ("eval/answer_entropy", ""), ("eval/outside_mass", "min"),
                                 *COMMON), ("eval/js", "min")),
    "rubric_writing": Board("Rubric writing (biased rule judge in training; unbiased oracle held out)", "eval/quality",
                            (("eval/quality", "max"), ("eval/repetition", "min"), ("eval/over_length", "min"),
                             ("eval/words", ""), *COMMON), ("eval/quality", "max")),
}


def recipe(name: str) -> str:
    """A shipped recipe, by name (found in the package from any directory; a typo fails here, at import)."""
    return shipped_recipe(name).stem


SHARED = "shared"
"""The board's ``share_dir`` under its runs directory: the work its runs would repeat exactly, done once
(a seed's step-0 evaluation, a learned reward's warm-up; :mod:`rewardzoo.core.shared_work`)."""
G_NAMES = ("D", "neg_log_one_minus_D", "log_D", "logit")
CPU_SETTINGS = {
    "multiplication": ("grpo.batch_size=160", "grpo.micro_batch_size=160", "eval.every=20"),
    "refdist": ("sft.seed=0", "steps=40"),
    "rubric_writing": ("sft.seed=0",),
    "hackable_multiplication": ("grpo.batch_size=160", "grpo.micro_batch_size=160", "eval.every=20"),
}
"""What the ``cpu`` board changes in a task's recipes, for every method of the task alike (docs/leaderboard.md,
"Running it"): on multiplication and hackable multiplication 20 prompts a step instead of the recipe's 32 and
held-out evaluations every 20 steps (the curves have fewer points; the table reads the final one); on refdist and rubric
writing one SFT warm start per task shared by every seed, as the multiplication recipes already do (seeds
vary RL only); on refdist 40 RL steps instead of 100 (on the 100-step board every claim of the task was
decided by step 40)."""
HACKABLE_SETTINGS = {"hackable_multiplication": (*CPU_SETTINGS["hackable_multiplication"], "grpo.advantage=dr_grpo")}
"""The ``hackable`` board's change: the ``cpu`` board's hackable rows under Dr. GRPO advantages for every row —
VARL's paper setting, run by its RLVR twins too (both recipes default to ``grpo``)."""
GPU = ("model.name=Qwen/Qwen3-0.6B", "model.dtype=bfloat16", "model.lora.enabled=true", "model.lora.r=32",
       "model.lora.alpha=64", "sampling.engine=vllm", "sampling.vllm.gpu_memory_utilization=0.3",
       "sampling.max_new_tokens=64", "grpo.lr=1e-5", "grpo.micro_batch_size=64", "sft.lr=1e-4", "sft.steps=300",
       "steps=300", "eval.every=50", "reward.ral.judge.lr=1e-5", "reward.varl.discriminator.lr=1e-5")
"""What the ``gpu`` preset changes in every CPU entry: Qwen3-0.6B from the hub in bfloat16 with LoRA r 32, the
vLLM engine, 300 SFT and 300 RL steps, learning rates for a pretrained model (our choices; not run here)."""

DR_GRPO = "VARL's paper setting (group size 8, advantages without std normalisation); RLVR runs it too as its twin"
TWIN_EXCEPTIONS: dict[tuple[str, str], TwinException] = {
    **{(task, "SFT"): TwinException({"steps": "the warm start itself, evaluated: it takes no RL step"}) for task in BOARDS},
    ("multiplication", "VARL"): TwinException({"grpo.advantage": DR_GRPO}, twin="RLVR (dr_grpo)"),
    ("multiplication", "VARL additive"): TwinException({"grpo.advantage": DR_GRPO}, twin="RLVR (dr_grpo)"),
    ("multiplication", "RLVR (dr_grpo)"): TwinException({"grpo.advantage": DR_GRPO}, twin="VARL"),
}
"""(task, method label) → the only settings outside ``reward.*`` in which a row may differ from its task's twins,
with the reason, and the twin that shares them (``rewardzoo.protocol.twin_differences``;
``tests/test_leaderboard.py`` checks every preset).  On multiplication RLVR and RAL run their papers'
``grpo`` advantages, VARL its paper's ``dr_grpo``, and the row ``RLVR (dr_grpo)`` is VARL's twin under
VARL's setting; every claim compares rows of one setting."""


def task_settings(preset: str, task: str) -> tuple[str, ...]:
    """The settings ``preset`` gives every entry of ``task`` (the gpu preset: the CPU ones, then :data:`GPU`)."""
    if preset == "gpu":
        return (*CPU_SETTINGS.get(task, ()), *GPU)
    return {"cpu": CPU_SETTINGS, "hackable": HACKABLE_SETTINGS}.get(preset, {}).get(task, ())


def entry(preset: str, task: str, method: str, name: str, *overrides: str, role: str = "method",
          factory: str = "") -> Entry:
    """A row of ``preset``: the recipe ``name`` with the task's :func:`task_settings`, then ``overrides``
    (an SFT row, ``steps=0``, takes no step budget)."""
    sft_row = "steps=0" in overrides
    settings = tuple(o for o in task_settings(preset, task) if not (sft_row and o.startswith("steps=")))
    return Entry(task, method, name, (*settings, *overrides), role, factory)


def _board(preset: str) -> Callable[..., Entry]:
    return lambda *args, **kw: entry(preset, *args, **kw)


def hackable_rows(board: Callable[..., Entry]) -> list[Entry]:
    """The reward-hacking rows (``hackable_multiplication``) of a board: the warm start, the two positive controls
    (RLVR hacks the proxy; RLVR on the strict check solves honestly), VARL and its additive control."""
    return [
        board("hackable_multiplication", "SFT", recipe("rlvr_hackable_multiplication"), "steps=0", role="warm start"),
        board("hackable_multiplication", "RLVR (proxy)", recipe("rlvr_hackable_multiplication"),
              role="positive control (it must hack); VARL's RLVR twin"),
        board("hackable_multiplication", "RLVR (strict check)", recipe("rlvr_hackable_multiplication"),
              "reward.rlvr.verifier=exact", role="positive control of honest solving: RL on the strict check"),
        board("hackable_multiplication", "VARL (proxy gate)", recipe("varl_hackable_multiplication")),
        board("hackable_multiplication", "VARL additive (proxy)", recipe("varl_hackable_multiplication"),
              "reward.varl.combine=add", role="control of VARL: r = v + D"),
    ]


cpu = _board("cpu")
PRESETS: dict[str, list[Entry]] = {
    "cpu": [
        cpu("multiplication", "SFT", recipe("rlvr_multiplication"), "steps=0", role="warm start"),
        cpu("multiplication", "RLVR", recipe("rlvr_multiplication"), role="positive control; RAL's twin"),
        cpu("multiplication", "RAL", recipe("ral_multiplication")),
        cpu("multiplication", "RAL frozen judge", recipe("ral_multiplication"), "reward.ral.frozen=true",
            role="control of RAL: judge frozen after warm-up"),
        cpu("multiplication", "RAL format-only", recipe("ral_multiplication"), "reward.ral.format_only=true",
            role="control of RAL: D ≡ 1 on valid answers, no judge"),
        cpu("multiplication", "RLVR (dr_grpo)", recipe("rlvr_multiplication"), "grpo.advantage=dr_grpo",
            role="VARL's twin: RLVR under VARL's paper setting (D ≡ 1)"),
        cpu("multiplication", "VARL", recipe("varl_multiplication")),
        cpu("multiplication", "VARL additive", recipe("varl_multiplication"), "reward.varl.combine=add",
            role="control of VARL: r = v + D"),
        cpu("refdist", "SFT", recipe("rlvr_refdist"), "steps=0", role="warm start"),
        cpu("refdist", "RLVR", recipe("rlvr_refdist"), role="null control: every valid answer earns 1 (VARL with D ≡ 1)"),
        cpu("refdist", "RLVR exact reference", recipe("rlvr_refdist"), "reward.rlvr.verifier=exact",
            role="positive control: 1 when the answer is the drawn reference (mean reward p_ref)"),
        *(cpu("refdist", f"RAL g={g}", recipe("ral_refdist"), f"reward.ral.g={g}") for g in G_NAMES),
        cpu("refdist", "RAL g=D frozen judge", recipe("ral_refdist"), "reward.ral.frozen=true",
            role="control of RAL g=D: judge frozen after warm-up"),
        cpu("refdist", "VARL", recipe("varl_refdist")),
        *hackable_rows(cpu),
        cpu("rubric_writing", "SFT", recipe("rcrl_rubric_writing"), "steps=0", role="warm start"),
        cpu("rubric_writing", "RLVR oracle", recipe("rcrl_rubric_writing"), "reward.name=rlvr",
            role="positive control: RL on the held-out oracle's own quality"),
        cpu("rubric_writing", "RcRL", recipe("rcrl_rubric_writing")),
        cpu("rubric_writing", "Absolute RcRL", recipe("absolute_rcrl_rubric_writing"),
            role="control of RcRL: its absolute twin (no pairwise comparison)"),
        cpu("rubric_writing", "Absolute RaR", recipe("rar_rubric_writing"), role="baseline (004 Table 3)"),
        cpu("rubric_writing", "Pairwise RaR", recipe("pairwise_rar_rubric_writing"), role="baseline (004 Table 3)"),
        cpu("rubric_writing", "Dropout Absolute RaR", recipe("dropout_absolute_rar_rubric_writing"),
            role="baseline (004 Table 3)"),
    ],
    "hackable": hackable_rows(_board("hackable")),
}
"""``cpu``: the CPU leaderboard — the tasks whose presets have the power to separate methods
(benchmarks/results/power/power.md), hackable multiplication (where RL on the lazy proxy measurably hacks:
benchmarks/results/varl_hacking.md) and rubric writing, the one task of RcRL and its baselines.
``hackable``: the cpu board's hackable rows under VARL's paper setting (Dr. GRPO advantages for every row);
``rewardzoo leaderboard --preset hackable``."""
PRESETS["gpu"] = [replace(e, overrides=(*e.overrides, *(o for o in GPU if e.trained or not o.startswith("steps="))))
                  for e in PRESETS["cpu"]
                  if e.task in ("multiplication", "hackable_multiplication")]


@dataclass(frozen=True)
class PositiveControl:
    """A task's positive control: ``method`` moves ``metric`` (row key ``row_key`` per held-out example;
    None: an exact metric) from the warm start in direction ``up``."""

    method: str
    metric: str
    row_key: str | None
    up: bool
    meaning: str


POSITIVE_CONTROLS = {
    "multiplication": PositiveControl("RLVR", "eval/accuracy", "correct", True,
                                      "the exact verifier raises held-out accuracy"),
    "hackable_multiplication": PositiveControl("RLVR (proxy)", "eval/hack_rate", "hack_rate", True,
                                               "RLVR on the lazy proxy raises the held-out hack rate (the hack VARL "
                                               "is to prevent)"),
    "refdist": PositiveControl("RLVR exact reference", "eval/js", None, False,
                               "a reward whose mean is p_ref(y | x) lowers JS(p_ref, π)"),
    "rubric_writing": PositiveControl("RLVR oracle", "eval/quality", "quality", True,
                                      "RL on the oracle's own quality raises held-out oracle quality"),
}
"""Per task, the reward known to work there and the effect it must show before any claim of the task is
decided (a testbed whose positive control fails cannot tell methods apart)."""


# ---------------------------------------------------------------------------------------------- runs
def slug(method: str) -> str:
    """A method label as a directory name: ``RAL g=D frozen judge`` → ``ral_g_d_frozen_judge``."""
    return "".join(c if c.isalnum() else "_" for c in method.lower().replace("(", "").replace(")", "")).strip("_")


def _spec(name: str, e: Entry, seed: int, run_dir: Path, quick: bool, extra: tuple[str, ...] = ()) -> RunSpec:
    quick_overrides = () if not quick else QUICK[1:] if not e.trained else QUICK
    if e.task == "refdist":
        quick_overrides = tuple(o for o in quick_overrides if not o.startswith("eval.n_examples="))
    return RunSpec(name, e.recipe, run_dir, (f"seed={seed}", *e.overrides, *quick_overrides, *extra), e.factory)


def specs(entries: list[Entry], seeds: list[int], runs: Path, quick: bool,
          choices: dict[tuple[str, str], Choice] | None = None) -> list[RunSpec]:
    """The board's runs: one per entry and seed under ``runs/<task>/<slug(method)>/<setting>/seed<s>``
    at the entry's chosen setting (none: the recipe's), seed by seed (a stopped sweep leaves whole boards
    for its first seeds); named ``<task>/<method>/seed<s>``."""
    choices = choices or {}
    result = []
    for s in seeds:
        for e in entries:
            setting = choices[(e.task, e.method)].setting if (e.task, e.method) in choices else Setting()
            result.append(_spec(f"{e.task}/{e.method}/seed{s}", e, s, runs / e.task / slug(e.method) / setting.slug /
                                f"seed{s}", quick, setting.overrides))
    return result


def base_lr(e: Entry) -> float:
    """The task's shared policy learning rate (the twins' ``grpo.lr``), from the entry's resolved config."""
    return float(_spec("lr", e, 0, Path("unused"), False).config().grpo.lr)


def grid_points(entries: list[Entry], grid: Grid, by_hand: dict[tuple[str, str], Setting]) -> dict[tuple[str, str], list[Setting]]:
    """Each trained entry's settings in the grid's tie-break order, but for the ``by_hand`` ones (not
    tuned); every task's tuned methods checked for an equal tuning budget
    (:meth:`~rewardzoo.protocol.Grid.check_equal_budget`)."""
    unknown = sorted(f"{t}/{m}" for t, m in set(by_hand) - {(e.task, e.method) for e in entries if e.trained})
    if unknown:
        raise ValueError(f"--choose names no trained row of this board: {unknown}")
    entries = [e for e in entries if (e.task, e.method) not in by_hand]
    for task in dict.fromkeys(e.task for e in entries):
        grid.check_equal_budget(task, [e.method for e in entries if e.task == task and e.trained])
    unknown = [k.method for k in grid.own if k.method not in {f"{e.task}/{e.method}" for e in entries if e.trained}]
    if unknown:
        raise ValueError(f"--tune-key names no trained row of this board: {unknown}")
    return {(e.task, e.method): grid.points(e.task, e.method, base_lr(e)) for e in entries if e.trained}


def tuning_specs(entries: list[Entry], points: dict[tuple[str, str], list[Setting]], seeds: list[int], runs: Path,
                 quick: bool) -> dict[str, tuple[Entry, Setting, int, RunSpec]]:
    """One tuning run per trained entry, setting and tuning seed, on the validation split
    (:data:`~rewardzoo.protocol.TUNING_OVERRIDES`), under ``runs/tuning/<task>/<slug>/<setting>/seed<s>``;
    by name ``tune/<task>/<method>/<setting>/seed<s>``."""
    out = {}
    for s in seeds:
        for e in entries:
            for setting in points.get((e.task, e.method), []):
                name = f"tune/{e.task}/{e.method}/{setting.label}/seed{s}"
                run_dir = runs / "tuning" / e.task / slug(e.method) / setting.slug / f"seed{s}"
                out[name] = (e, setting, s, _spec(name, e, s, run_dir, quick, (*setting.overrides, *TUNING_OVERRIDES)))
    return out


def start_order(planned: dict[str, tuple[Entry, Setting, int, RunSpec]], points: dict[tuple[str, str], list[Setting]],
                seeds: list[int]) -> list[RunSpec]:
    """The tuning runs in the order the sweep starts them: round-robin, so runs that share work
    (:mod:`rewardzoo.core.shared_work`: one task's runs at a seed share the step-0 evaluation, one
    row's learning rates its reward's warm-up) start apart.  Seed by seed, then grid point by grid
    point, then the rows' place in their task, then task: every task's first row at the first grid
    point, every task's second row there, …, then the second grid point.  (Row by row, a row's
    learning rates were adjacent, and with two jobs its first two started together and both computed
    what the second should have read.)  The same runs as ``planned``; only the order differs.  Not
    spread: on a one-task board its first two runs (their step-0 evaluation), nor rows whose warm-ups
    coincide when they sit side by side in their task (RAL and RAL frozen judge)."""
    tasks = list(dict.fromkeys(task for task, _ in points))
    rank = {row: [r for r in points if r[0] == row[0]].index(row) for row in points}  # the row's place in its task

    def place(run: tuple[Entry, Setting, int, RunSpec]) -> tuple[int, int, int, int]:
        e, setting, seed, _ = run
        row = (e.task, e.method)
        return seeds.index(seed), points[row].index(setting), rank[row], tasks.index(e.task)

    return [spec for *_, spec in sorted(planned.values(), key=place)]


def validation_rows(planned: dict[str, tuple[Entry, Setting, int, RunSpec]],
                    results: dict[str, RunResult]) -> list[ValidationRow]:
    """Every tuning run's final value of its board's tuning metric, with the split its saved
    configuration says it evaluated on (NaN when the run logged no value)."""
    rows = []
    for name, (e, setting, seed, spec) in planned.items():
        key = BOARDS[e.task].tune_by[0]
        values = [r[key] for r in results[name].rows if r.get(key) is not None]
        split = OmegaConf.load(Path(spec.run_dir) / "config.yaml").eval.split
        rows.append(ValidationRow(e.task, e.method, setting, seed, split, values[-1] if values else math.nan))
    return rows


def tune(entries: list[Entry], grid: Grid, seeds: list[int], runs: Path, out: Path, jobs: int, quick: bool,
         progress: bool, by_hand: dict[tuple[str, str], Setting], command: str = "", executor=None) -> dict[tuple[str, str], Choice]:
    """The tuning stage: run (or reuse) every tuning run, choose each trained entry's setting from the
    validation rows alone (:func:`~rewardzoo.protocol.choose`; ``by_hand`` settings are taken as given),
    write ``out/TUNING.md`` and ``out/tuning.csv``; returns the choices."""
    points = grid_points(entries, grid, by_hand)
    planned = tuning_specs(entries, points, seeds, runs, quick)
    results = run_sweep(start_order(planned, points, seeds), jobs=jobs, progress=progress, desc="tuning",
                        share_dir=runs / SHARED, executor=executor)
    rows = validation_rows(planned, results)
    choices = {key: Choice(setting, by="hand") for key, setting in by_hand.items()}
    for (task, method), order in points.items():
        mine = [r for r in rows if (r.task, r.method) == (task, method)]
        choices[(task, method)] = choose(mine, BOARDS[task].tune_by[1], order)
    grids = {}
    for e in entries:
        if e.trained:
            grid_of = grids.setdefault(e.task, {"metric": BOARDS[e.task].tune_by[0], "direction": BOARDS[e.task].tune_by[1],
                                                "points": {}})
            grid_of["points"][e.method] = points.get((e.task, e.method), [])
    write_tuning(out, grids, rows, choices, [r.wall_s for r in results.values()], seeds, command)
    return choices


def final(result: RunResult) -> dict[str, float]:
    """The run's final values: the last value of every logged key, plus its wall time."""
    values: dict[str, float] = {}
    for row in result.rows:
        values.update({k: v for k, v in row.items() if v is not None})
    values["time/wall_s"] = result.wall_s
    return values


def config_hash(spec: RunSpec) -> str:
    """A short hash of the run's resolved configuration (seed and run directory excluded)."""
    cfg = spec.config()
    cfg.run_dir, cfg.seed = "", 0
    return hashlib.sha256(to_yaml(cfg).encode()).hexdigest()[:12]


def check_twins(entries: list[Entry]) -> None:
    """Raise ValueError, before any work, when two entries of a task resolve to configurations that
    differ outside the reward and the :data:`TWIN_EXCEPTIONS` (``rewardzoo.protocol.twin_differences``)."""
    found = []
    for task in dict.fromkeys(e.task for e in entries):
        mine = [e for e in entries if e.task == task]
        configs = {e.method: as_dict(_spec(e.method, e, 0, Path("twin"), False).config()) for e in mine}
        excepted = {e.method: TWIN_EXCEPTIONS[(task, e.method)] for e in mine if (task, e.method) in TWIN_EXCEPTIONS}
        found += [f"{task}/{line}" for line in twin_differences(configs, excepted)]
    if found:
        raise ValueError("twins differ outside the reward (a board compares rewards, so every other setting must be "
                         "shared):\n  " + "\n  ".join(found) + "\nGive every row of the task the same settings (or "
                         "name the exception, with its reason, in rewardzoo.leaderboard.TWIN_EXCEPTIONS)")


def parse_added(preset: str, text: str, entries: list[Entry]) -> Entry:
    """An ``--add-method`` row: ``TASK:LABEL:RECIPE[:OVERRIDES]`` (a YAML path or a shipped recipe's name)
    or ``TASK:LABEL:MODULE:FUNCTION[:OVERRIDES]`` (a reward factory, trained on the task's SFT row's
    recipe); ``OVERRIDES`` are space-separated ``key=value``.  The row gets the preset's settings of
    the task, like every shipped row."""
    parts = text.split(":")
    if len(parts) < 3 or not parts[0] or not parts[1] or not parts[2]:
        raise ValueError(f"--add-method takes TASK:LABEL:RECIPE[:OVERRIDES] or TASK:LABEL:MODULE:FUNCTION[:OVERRIDES]; "
                         f"got {text!r}")
    task, label, source, rest = parts[0], parts[1], parts[2], parts[3:]
    tasks = list(dict.fromkeys(e.task for e in entries))
    if task not in tasks:
        raise ValueError(f"--add-method {text!r}: task {task!r} is not on this board; its tasks: {', '.join(tasks)}")
    if label in {e.method for e in entries if e.task == task}:
        raise ValueError(f"--add-method {text!r}: the {task} board already has a row {label!r}; choose another label")
    is_recipe = source.endswith((".yaml", ".yml")) or source in shipped_recipes()
    factory = ""
    if not is_recipe:
        if not rest or "=" in rest[0]:
            raise ValueError(f"--add-method {text!r}: {source!r} is neither a YAML recipe nor a shipped recipe's name, "
                             f"and a reward factory needs MODULE:FUNCTION")
        factory, rest = f"{source}:{rest[0]}", rest[1:]
        source = next(e.recipe for e in entries if e.task == task and not e.trained)
    elif not resolve_recipe(source).is_file():
        raise ValueError(f"--add-method {text!r}: no recipe file {source!r}")
    overrides = " ".join(rest).split()
    if any("=" not in o for o in overrides):
        raise ValueError(f"--add-method {text!r}: overrides are space-separated key=value; got {overrides}")
    return entry(preset, task, label, str(source), *overrides, role="method (added)", factory=factory)


# ------------------------------------------------------------------------------------------ tables
@dataclass
class Table:
    """Per method: per column, the final values over seeds."""

    board: Board
    methods: list[str] = field(default_factory=list)
    values: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    roles: dict[str, str] = field(default_factory=dict)
    settings: dict[str, str] = field(default_factory=dict)

    def estimate(self, method: str, column: str) -> Estimate:
        """Mean and 95% t-interval over seeds (NaN when the column is absent for the method)."""
        return mean_ci(self.values[method].get(column, []))

    def best(self, column: str, direction: str) -> str | None:
        """The best method of a column, only when its interval separates from the runner-up's."""
        if not direction:
            return None
        ranked = [m for m in self.methods if math.isfinite(self.estimate(m, column).mean)]
        ranked.sort(key=lambda m: self.estimate(m, column).mean, reverse=direction == "max")
        if len(ranked) < 2:
            return None
        first, second = self.estimate(ranked[0], column), self.estimate(ranked[1], column)
        return ranked[0] if first.separates(second) else None


def tables(entries: list[Entry], results: dict[str, RunResult], seeds: list[int],
           choices: dict[tuple[str, str], Choice] | None = None) -> dict[str, Table]:
    """The tables of every task, from the finished runs."""
    out: dict[str, Table] = {}
    for e in entries:
        table = out.setdefault(e.task, Table(BOARDS[e.task]))
        table.methods.append(e.method)
        table.roles[e.method] = e.role
        choice = (choices or {}).get((e.task, e.method))
        table.settings[e.method] = "—" if not e.trained else "recipe" if choice is None else choice.setting.label
        runs = [final(results[f"{e.task}/{e.method}/seed{s}"]) for s in seeds]
        table.values[e.method] = {col: [r[col] for r in runs if col in r] for col, _ in table.board.columns}
    return out


def _cell(est: Estimate, column: str) -> str:
    if column.startswith("time/"):
        return est.format(digits=0)
    points = column.endswith(("accuracy", "hack_rate", "proxy_pass", "win_rate"))
    return est.format(scale=100, digits=1) if points else est.format(digits=3)


def markdown(task: str, table: Table, seeds: int) -> list[str]:
    """One task's table as Markdown lines."""
    cols = table.board.columns
    lines = [f"## {table.board.title} (`{task}`)", "",
             "| method | role | setting | " + " | ".join(f"`{c}`{' ↑' if d == 'max' else ' ↓' if d == 'min' else ''}"
                                                     for c, d in cols) + " |",
             "| --- | --- | --- |" + " ---: |" * len(cols)]
    best = {c: table.best(c, d) for c, d in cols}
    for m in table.methods:
        cells = []
        for c, _ in cols:
            text = _cell(table.estimate(m, c), c)
            cells.append(f"**{text}**" if best[c] == m else text)
        setting = table.settings.get(m, "recipe")
        lines.append(f"| {m} | {table.roles.get(m, '')} | {setting if setting in ('—', 'recipe') else f'`{setting}`'} | "
                     + " | ".join(cells) + " |")
    lines += ["", f"Test split. Mean ± half-width of the 95% t-interval over {seeds} seed(s); accuracy-like columns in "
              "points. Bold: best, and its interval does not overlap the runner-up's. Setting: the one the tuning "
              "stage chose on the validation split (TUNING.md).", ""]
    return lines


# ------------------------------------------------------------------------------------------ claims
Claim = Callable[[dict[str, Table], dict[str, RunResult], list[int]], "list[Finding]"]


def _rows(results: dict[str, RunResult], name: str, key: str, seeds: list[int], which: str) -> np.ndarray:
    """[S, E] per-example held-out rows of a method at its first or last evaluation."""
    tables_ = []
    for s in seeds:
        rows = eval_rows(results[f"{name}/seed{s}"].spec.run_dir)
        tables_.append(rows[min(rows) if which == "first" else max(rows)][key])
    return np.array(tables_, dtype=float)


def _has(tabs: dict[str, Table], task: str, *methods: str) -> bool:
    return task in tabs and set(methods) <= set(tabs[task].methods)


def _examples(seeds: list[int], table: np.ndarray) -> str:
    return f"{len(seeds)} seeds × {table.shape[1]} held-out examples"


def _start_end(result: RunResult, key: str) -> tuple[float, float]:
    values = [r[key] for r in result.rows if r.get(key) is not None]
    return values[0], values[-1]


def positive_control(task: str, tabs: dict[str, Table], results: dict[str, RunResult], seeds: list[int]) -> Finding | None:
    """The effect of the task's positive control (:data:`POSITIVE_CONTROLS`) over its runs, from its
    warm start to its end: a paired bootstrap over seeds × held-out examples, or a t-interval over seeds
    for an exact metric; None when the task has no positive control on the board."""
    pc = POSITIVE_CONTROLS.get(task)
    if pc is None or not _has(tabs, task, pc.method):
        return None
    name = f"{task}/{pc.method}"
    if pc.row_key is not None:
        start, end = (_rows(results, name, pc.row_key, seeds, w) for w in ("first", "last"))
        change, n = bootstrap_ci(lambda a, b: b.mean() - a.mean(), start, end), _examples(seeds, start)
        shown = change.bounds  # a percentile interval: not symmetric about its mean
    else:
        change = mean_ci([b - a for a, b in (_start_end(results[f"{name}/seed{s}"], pc.metric) for s in seeds)])
        n, shown = f"{len(seeds)} seeds (exact metric)", change.format
    points = pc.metric.endswith(("accuracy", "hack_rate"))
    text = shown(scale=100, sign=True) + " points" if points else shown(digits=3, sign=True)
    return Finding(task, f"positive control of `{task}`: {pc.meaning}", f"{pc.method} at its own start",
                   change, 0.0, pc.up, f"{pc.metric.removeprefix('eval/')} change {text}", n)


def ral_approaches_rlvr(tabs, results, seeds):
    """002: RAL's gain over the warm start approaches RLVR's (target: at least half)."""
    if not _has(tabs, "multiplication", "RLVR", "RAL"):
        return []
    start = _rows(results, "multiplication/RLVR", "correct", seeds, "first")  # the shared warm start
    rlvr = _rows(results, "multiplication/RLVR", "correct", seeds, "last")
    ral = _rows(results, "multiplication/RAL", "correct", seeds, "last")
    ratio = bootstrap_ci(lambda s, a, b: (b.mean() - s.mean()) / (a.mean() - s.mean()) if a.mean() > s.mean() else math.nan,
                         start, rlvr, ral)
    numbers = (f"RAL/RLVR gain ratio {ratio.bounds(digits=2)} (paired bootstrap; ½ = the claim's threshold); gains "
               f"RLVR {100 * (rlvr.mean() - start.mean()):+.1f}, RAL {100 * (ral.mean() - start.mean()):+.1f} points")
    return [Finding("multiplication", "RAL reaches at least half of RLVR's held-out gain (002: about parity)", "RLVR",
                    ratio, 0.5, True, numbers, _examples(seeds, start))]


def ral_judge_beats_format_only(tabs, results, seeds):
    """Issue 22: RAL's learned judge adds to what the format reward alone (D ≡ 1) gives."""
    if not _has(tabs, "multiplication", "RAL", "RAL format-only"):
        return []
    ral, fmt = (_rows(results, f"multiplication/{m}", "correct", seeds, "last") for m in ("RAL", "RAL format-only"))
    diff = bootstrap_ci(lambda a, b: a.mean() - b.mean(), ral, fmt)
    return [Finding("multiplication", "RAL's judge adds to the format reward alone", "RAL format-only (D ≡ 1)", diff, 0.0,
                    True, f"held-out accuracy RAL − format-only: {diff.bounds(scale=100, sign=True)} points (final "
                          f"{100 * ral.mean():.1f}% vs {100 * fmt.mean():.1f}%)", _examples(seeds, ral))]


def frozen_judge_is_exploited(tabs, results, seeds):
    """002 §4.2: a judge frozen after warm-up is exploited — the policy gains less than with a co-trained one."""
    if not _has(tabs, "multiplication", "RAL", "RAL frozen judge"):
        return []
    start = _rows(results, "multiplication/RAL", "correct", seeds, "first")
    co, frozen = (_rows(results, f"multiplication/{m}", "correct", seeds, "last") for m in ("RAL", "RAL frozen judge"))
    diff = bootstrap_ci(lambda a, b: a.mean() - b.mean(), co, frozen)
    below = " — both below the warm start" if max(co.mean(), frozen.mean()) < start.mean() else ""
    return [Finding("multiplication", "a co-trained judge beats a frozen one (002 §4.2)", "RAL frozen judge", diff, 0.0,
                    True, f"held-out accuracy co-trained − frozen: {diff.bounds(scale=100, sign=True)} points (final "
                          f"{100 * co.mean():.1f}% vs {100 * frozen.mean():.1f}%, warm start {100 * start.mean():.1f}%{below})",
                    _examples(seeds, co))]


def varl_resists_the_proxy(tabs, results, seeds):
    """VARL (SPEC §4.3): gating a discriminator of reference answers by the lazy verifier hacks less than
    RLVR on that verifier alone."""
    if not _has(tabs, "hackable_multiplication", "RLVR (proxy)", "VARL (proxy gate)"):
        return []
    name = "hackable_multiplication/{}"
    rlvr = _rows(results, name.format("RLVR (proxy)"), "hack_rate", seeds, "last")
    diff = bootstrap_ci(lambda a, b: a.mean() - b.mean(), rlvr,
                        _rows(results, name.format("VARL (proxy gate)"), "hack_rate", seeds, "last"))
    return [Finding("hackable_multiplication", "VARL hacks the lazy verifier less than RLVR on it (VARL's reward-hacking "
                    "claim)", "RLVR (proxy)", diff, 0.0, True,
                    f"held-out hack rate RLVR − VARL: {diff.bounds(scale=100, sign=True)} points", _examples(seeds, rlvr))]


DIVERGENCE_OF = {"D": "eval/kl_ref_mix", "neg_log_one_minus_D": "eval/js", "log_D": "eval/kl_mix_ref",
                 "logit": "eval/kl_pi_ref"}
"""The divergence each g's frozen-D* policy gradient descends (rewards/transforms.py), as its eval key."""


def each_g_descends_its_divergence(tabs, results, seeds):
    """SPEC §4.4: RAL with transform g and a co-trained judge lowers the divergence g's gradient descends."""
    found = []
    for g, key in DIVERGENCE_OF.items():
        if not _has(tabs, "refdist", f"RAL g={g}"):
            continue
        change = mean_ci([b - a for a, b in (_start_end(results[f"refdist/RAL g={g}/seed{s}"], key) for s in seeds)])
        found.append(Finding("refdist", f"RAL g={g} descends its divergence `{key.removeprefix('eval/')}` (SPEC §4.4)",
                             f"RAL g={g} at its own start", change, 0.0, False,
                             f"{key.removeprefix('eval/')} change {change.format(digits=3, sign=True)} (t-interval)",
                             f"{len(seeds)} seeds (exact metric)"))
    return found


def frozen_judge_collapses(tabs, results, seeds):
    """002 §4.2 on refdist: a frozen judge drives the policy onto fewer answers than a co-trained one."""
    if not _has(tabs, "refdist", "RAL g=D", "RAL g=D frozen judge"):
        return []
    key = "eval/top_answer_share"
    diff = mean_ci([final(results[f"refdist/RAL g=D frozen judge/seed{s}"])[key]
                    - final(results[f"refdist/RAL g=D/seed{s}"])[key] for s in seeds])
    return [Finding("refdist", "a frozen judge collapses the answer distribution (002 §4.2)", "RAL g=D (co-trained judge)",
                    diff, 0.0, True, f"top-answer share frozen − co-trained: {diff.format(digits=3, sign=True)} "
                                     "(t-interval)", f"{len(seeds)} seeds (exact metric)")]


def _win_rate(tabs, results, seeds, method: str, other: str, claim: str) -> list[Finding]:
    """``method``'s held-out oracle win rate over ``other``'s, prompt by prompt (paired bootstrap; > 50%)."""
    if not _has(tabs, "rubric_writing", method, other):
        return []
    a = _rows(results, f"rubric_writing/{method}", "quality", seeds, "last")
    b = _rows(results, f"rubric_writing/{other}", "quality", seeds, "last")
    win = bootstrap_ci(lambda x, y: float(np.mean(0.5 * (np.sign(x - y) + 1.0))), a, b)
    return [Finding("rubric_writing", claim, other, win, 0.5, True,
                    f"held-out oracle win rate of {method} over {other}, prompt by prompt: {win.bounds(scale=100)}% "
                    "(50% = parity)", _examples(seeds, a))]


def rcrl_beats_rar(tabs, results, seeds):
    """004 Table 3: RcRL's outputs win against Absolute RaR's under the held-out judge (the oracle)."""
    return _win_rate(tabs, results, seeds, "RcRL", "Absolute RaR", "RcRL beats Absolute RaR (004 Table 3)")


def rcrl_beats_its_absolute_twin(tabs, results, seeds):
    """004 Table 3: pairwise scoring beats absolute scoring on the same curriculum (RcRL vs Absolute RcRL)."""
    return _win_rate(tabs, results, seeds, "RcRL", "Absolute RcRL",
                     "RcRL beats its absolute twin, Absolute RcRL (004 Table 3)")


def rcrl_keeps_entropy(tabs, results, seeds):
    """004 §5.3: RcRL keeps more token entropy than Absolute RaR."""
    if not _has(tabs, "rubric_writing", "RcRL", "Absolute RaR"):
        return []
    diff = mean_ci([final(results[f"rubric_writing/RcRL/seed{s}"])["policy/entropy"]
                    - final(results[f"rubric_writing/Absolute RaR/seed{s}"])["policy/entropy"] for s in seeds])
    return [Finding("rubric_writing", "RcRL keeps more entropy than Absolute RaR (004 §5.3)", "Absolute RaR", diff, 0.0,
                    True, f"final token entropy RcRL − Absolute RaR: {diff.format(digits=3, sign=True)} nats "
                          "(t-interval)", f"{len(seeds)} seeds")]


CLAIMS: list[Claim] = [ral_approaches_rlvr, ral_judge_beats_format_only, frozen_judge_is_exploited,
                       varl_resists_the_proxy, each_g_descends_its_divergence, frozen_judge_collapses, rcrl_beats_rar,
                       rcrl_beats_its_absolute_twin, rcrl_keeps_entropy]


def claim_lines(tabs: dict[str, Table], results: dict[str, RunResult], seeds: list[int]) -> list[str]:
    """The positive controls, then one line per claim: control, verdict (:func:`rewardzoo.protocol.verdict`),
    interval, n."""
    lines = ["## Positive controls and the seeds' claims", "",
             f"A claim is decided only from ≥ {MIN_SEEDS} seeds, and only when its task's positive control shows its "
             "effect with a 95% interval beyond 0; otherwise its line reads *testbed cannot decide* with the control's "
             "number. *Undecided (CI)* means the interval contains the threshold: the seeds and held-out examples run "
             "cannot tell, and it is never read as a win either way.", "",
             "| claim | control | verdict | measurement (95% interval) | n |", "| --- | --- | --- | --- | --- |"]
    positives = {task: positive_control(task, tabs, results, seeds) for task in tabs}
    for task, pc in positives.items():
        if pc is not None:
            shown = (verdict(pc, len(seeds), pc) if len(seeds) < MIN_SEEDS else
                     "works" if word(pc.estimate, pc.threshold, pc.above) == "reproduced" else "does not work")
            lines.append(f"| {pc.claim} | {pc.control} | {shown} | {pc.numbers} | {pc.n} |")
    for claim in CLAIMS:
        for f in claim(tabs, results, seeds):
            lines.append(f"| {f.claim} | {f.control} | {verdict(f, len(seeds), positives.get(f.task))} | {f.numbers} | "
                         f"{f.n} |")
    return lines


# ------------------------------------------------------------------------------------------- output
def write_csv(path: Path, entries: list[Entry], results: dict[str, RunResult], seeds: list[int],
              tabs: dict[str, Table]) -> None:
    """One row per run: task, method, role, setting, seed, config hash, every final metric."""
    rows = []
    for e in entries:
        for s in seeds:
            r = results[f"{e.task}/{e.method}/seed{s}"]
            rows.append({"task": e.task, "method": e.method, "role": e.role, "setting": tabs[e.task].settings[e.method],
                         "seed": s, "config_hash": config_hash(r.spec), **final(r)})
    first = ["task", "method", "role", "setting", "seed", "config_hash"]
    keys = first + sorted({k for r in rows for k in r} - set(first))
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=keys)
        writer.writeheader()
        writer.writerows(rows)


def plot_curves(path: Path, task: str, table: Table, entries: list[Entry], results: dict[str, RunResult], seeds: list[int]) -> None:
    """The headline metric of every method of a task over steps, mean and 95% band over seeds."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    key = table.board.headline
    fig, ax = plt.subplots(figsize=(6, 4))
    for i, e in enumerate(x for x in entries if x.task == task and x.trained):
        curves = [{r["step"]: r[key] for r in results[f"{task}/{e.method}/seed{s}"].rows if r.get(key) is not None}
                  for s in seeds]
        steps = sorted(set.intersection(*(set(c) for c in curves)))
        est = [mean_ci([c[t] for c in curves]) for t in steps]
        ax.plot(steps, [v.mean for v in est], color=f"C{i % 10}", label=e.method)
        if len(seeds) > 1:
            ax.fill_between(steps, [v.low for v in est], [v.high for v in est], color=f"C{i % 10}", alpha=0.2)
    ax.set_xlabel("RL step")
    ax.set_ylabel(key)
    ax.set_title(table.board.title, fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def board_entries(preset: str, tasks: list[str] | None = None, added: list[str] | None = None) -> list[Entry]:
    """The preset's entries (of ``tasks`` only, when given) plus the ``--add-method`` rows, twins checked."""
    if preset not in PRESETS:
        raise ValueError(f"unknown leaderboard preset {preset!r}; choose one of {', '.join(PRESETS)}")
    entries = [e for e in PRESETS[preset] if tasks is None or e.task in tasks]
    if not entries:
        raise ValueError(f"no entry of preset {preset!r} is on tasks {tasks}; its tasks: "
                         f"{', '.join(dict.fromkeys(e.task for e in PRESETS[preset]))}")
    for text in added or []:
        entries.append(parse_added(preset, text, entries))
    check_twins(entries)
    return entries


def leaderboard(preset: str, seeds: list[int], out: Path, jobs: int = 2, quick: bool = False, command: str = "",
                progress: bool = True, runs: Path | None = None, tasks: list[str] | None = None, grid: Grid | None = None,
                tune_seeds: list[int] | None = None, tuning: bool = True, by_hand: dict[tuple[str, str], Setting] | None = None,
                added: list[str] | None = None, tune_only: bool = False, executor=None) -> Path:
    """Run (or resume) a preset under the protocol and write LEADERBOARD.md, leaderboard.csv, the curves,
    TUNING.md and tuning.csv into ``out``; the run directories go under ``runs`` (default ``out/runs``);
    ``tasks`` keeps only those tasks' entries, ``added`` adds ``--add-method`` rows.  ``tuning=False``
    trains the recipes' settings (no TUNING.md; the table says so); ``tune_only`` stops after the tuning
    stage (its runs are then reused by the board).  Returns the path of LEADERBOARD.md (TUNING.md when
    ``tune_only``)."""
    if tune_only and not tuning:
        raise ValueError("--tune-only runs the tuning stage, which --no-tune turns off; give one of them")
    entries = board_entries(preset, tasks, added)
    grid = grid or Grid(QUICK_LR_FACTORS if quick else Grid().lr_factors)
    runs = runs or out / "runs"
    out.mkdir(parents=True, exist_ok=True)
    choices: dict[tuple[str, str], Choice] = {}
    if tuning:
        choices = tune(entries, grid, tune_seeds or [TUNING_SEED_BASE], runs, out, jobs, quick, progress, by_hand or {},
                       command, executor)
    if tune_only:
        return out / "TUNING.md"
    results = run_sweep(specs(entries, seeds, runs, quick, choices), jobs=jobs, progress=progress, desc=f"leaderboard {preset}",
                        share_dir=runs / SHARED, executor=executor)
    tabs = tables(entries, results, seeds, choices)
    lines = [f"`{command}`" if command else "", "", f"# rewardzoo leaderboard — preset `{preset}`{' (quick)' if quick else ''}", "",
             "Every row tuned on the validation split (TUNING.md) and reported on the test split." if tuning else
             "**Untuned**: every row at its recipe's settings (`--no-tune`); not the fair protocol.", ""]
    for task, table in tabs.items():
        lines += markdown(task, table, len(seeds))
        plot_curves(out / f"curves_{task}.png", task, table, entries, results, seeds)
        lines += [f"![{task}](curves_{task}.png)", ""]
    if quick:
        lines += ["No verdicts: `--quick` checks the command, not the science (1 seed, a few steps).", ""]
    else:
        lines += claim_lines(tabs, results, seeds)
    walls = [r.wall_s for r in results.values()]
    lines += ["", f"{len(results)} board runs; summed run wall time {sum(walls) / 60:.1f} min."]
    write_csv(out / "leaderboard.csv", entries, results, seeds, tabs)
    path = out / "LEADERBOARD.md"
    path.write_text("\n".join(lines) + "\n")
    return path


def plan(preset: str, tasks: list[str] | None, added: list[str] | None, grid: Grid, seeds: list[int],
         tune_seeds: list[int], by_hand: dict[tuple[str, str], Setting]) -> str:
    """What a board would run, nothing trained: each trained row's grid (the learning rates as values)
    and the run counts."""
    entries = board_entries(preset, tasks, added)
    points = grid_points(entries, grid, by_hand)
    lines = [f"preset {preset}: {len(entries)} rows × {len(seeds)} seeds = {len(entries) * len(seeds)} board runs; "
             f"{sum(map(len, points.values())) * len(tune_seeds)} tuning runs (seeds {', '.join(map(str, tune_seeds))}, "
             f"validation split)"]
    for e in entries:
        if (e.task, e.method) in by_hand:
            lines.append(f"  {e.task}/{e.method}: by hand: {by_hand[(e.task, e.method)].label}")
        elif e.trained:
            lines.append(f"  {e.task}/{e.method}: " + " | ".join(s.label for s in points[(e.task, e.method)]))
    return "\n".join(lines)


def _by_hand(texts: list[str]) -> dict[tuple[str, str], Setting]:
    """``--choose TASK/METHOD=key=value ...``: settings taken as given, not tuned."""
    out = {}
    for text in texts:
        target, _, overrides = text.partition("=")
        task, _, method = target.partition("/")
        if not task or not method or "=" not in overrides:
            raise ValueError(f"--choose takes TASK/METHOD=key=value [key=value ...]; got {text!r}")
        out[(task, method)] = Setting(tuple(overrides.split()))
    return out


def main(argv: list[str] | None = None) -> int:
    """``rewardzoo leaderboard`` (also reachable as ``python -m rewardzoo.leaderboard``)."""
    parser = argparse.ArgumentParser(prog="rewardzoo leaderboard", description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", default="cpu", choices=list(PRESETS))
    parser.add_argument("--seeds", type=int, default=5, help="seeds 0..N-1 (--quick: 1)")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/leaderboard"),
                        help="where LEADERBOARD.md, leaderboard.csv, the curves and TUNING.md go")
    parser.add_argument("--runs", type=Path, default=Path("runs/leaderboard"),
                        help="where the run directories go (finished runs there, tuning runs too, are reused)")
    parser.add_argument("--tasks", nargs="+", help="only these tasks' entries (default: all of the preset)")
    parser.add_argument("--jobs", type=int, default=2, help="runs in parallel, one thread each (default: 2 cores)")
    parser.add_argument("--quick", action="store_true",
                        help="1 seed, a few steps per run, a 2-point grid, no verdicts: checks the command itself")
    parser.add_argument("--add-method", action="append", default=[], metavar="TASK:LABEL:SOURCE[:OVERRIDES]",
                        help="add a row: SOURCE a recipe (YAML path or shipped name) or MODULE:FUNCTION, a reward "
                             "factory(cfg, ctx); OVERRIDES space-separated key=value (repeatable)")
    parser.add_argument("--lr-factors", type=float, nargs="+", help=f"the learning-rate grid, × the task's shared "
                        f"grpo.lr (default {' '.join(map(str, Grid().lr_factors))}; --quick: "
                        f"{' '.join(map(str, QUICK_LR_FACTORS))})")
    parser.add_argument("--tune-key", action="append", default=[], metavar="TASK/METHOD=KEY=V1,V2",
                        help="a method's own tuned key (every tuned method of the task needs one of one size)")
    parser.add_argument("--tune-seeds", type=int, default=1, help="tuning seeds 1000..1000+N-1 (default 1)")
    parser.add_argument("--choose", action="append", default=[], metavar="TASK/METHOD=key=value",
                        help="take this setting for the row instead of tuning it (marked 'by hand' in TUNING.md)")
    parser.add_argument("--no-tune", action="store_true", help="train the recipes' settings (not the fair protocol)")
    parser.add_argument("--tune-only", action="store_true",
                        help="run the tuning stage alone and write TUNING.md (the board reuses its runs later)")
    parser.add_argument("--plan", action="store_true", help="print the grid and the runs, train nothing")
    add_executor_arguments(parser)
    args = parser.parse_args(argv)
    command = "rewardzoo leaderboard " + " ".join(shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:]))
    seeds = [0] if args.quick else list(range(args.seeds))
    factors = tuple(args.lr_factors) if args.lr_factors else QUICK_LR_FACTORS if args.quick else Grid().lr_factors
    if args.tune_only and args.no_tune:
        parser.error("--tune-only runs the tuning stage, which --no-tune turns off; give one of them")
    try:
        grid = Grid(factors, tuple(OwnKey.parse(t) for t in args.tune_key))
        by_hand = _by_hand(args.choose)
        executor = executor_from_args(args)
    except ValueError as err:
        parser.error(str(err))
    tune_seeds = [TUNING_SEED_BASE + i for i in range(args.tune_seeds)]
    if args.plan:
        print(plan(args.preset, args.tasks, args.add_method, grid, seeds, tune_seeds, by_hand))
        return 0
    path = leaderboard(args.preset, seeds, args.out, args.jobs, args.quick, command, runs=args.runs, tasks=args.tasks,
                       grid=grid, tune_seeds=tune_seeds, tuning=not args.no_tune, by_hand=by_hand, added=args.add_method,
                       tune_only=args.tune_only, executor=executor)
    print(path.read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
