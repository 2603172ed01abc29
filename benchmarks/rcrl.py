"""RcRL's testbed (issue 24): seed 004's premise — absolute judge scores are miscalibrated on subjective
criteria, pairwise verdicts need only the order — as a knob, with a held-out oracle that is not the
training rubric.  Three studies, each resumable (finished runs are reused through rewardzoo.sweep):

    python benchmarks/rcrl.py pacing                 # 004 Fig. 8: train on one criterion; where does it stop helping?
    python benchmarks/rcrl.py study                  # RcRL vs Absolute RaR across the knob (the full size)
    python benchmarks/rcrl.py study --quick          # the pilot size (2 levels, 1 seed, 80 steps)
    python benchmarks/rcrl.py gv-gap                 # 004 §3: does the tiny model verify better than it generates?
    python benchmarks/rcrl.py gv-gap --recipe rcrl_rubric_writing_smollm2 --n 4 --prompts 48 \
        --results benchmarks/results/real_model --name gv_gap        # the same for SmolLM2-135M-Instruct
    python benchmarks/rcrl.py study --settings tuned.json   # each method's settings (JSON)
    python benchmarks/rcrl.py study --settings benchmarks/results/leaderboard/tuning.csv  # the board's choices

Every run is ``rewardzoo train <recipe> seed=S ...`` of the five ``*_rubric_writing`` recipes, all from
one SFT warm start (``sft.seed=0``: seeds vary RL only), differing only in ``reward.rcrl.scoring`` /
``schedule``, the judge's miscalibration level and the per-method settings of ``--settings`` (a JSON
object ``{"RcRL": ["grpo.lr=3e-4"], ...}``; the tuning stage of the fair protocol supplies it; default:
the recipes' own); the study is the declaration :data:`STUDY`, run by the path every study shares
(:mod:`rewardzoo.board.study`).  The miscalibration level m sets the rule judge's absolute reports through
:func:`rewardzoo.judges.pairwise.miscalibration` (m = 0: calibrated, the HealthBench-like end; the
recipes are at the board's level, m = 2).  Held-out quality is the task's oracle (ten criteria, four
hidden from the judge; ``rewardzoo/tasks/rubric_writing.py``), never a reward.

``study`` reports, per level and method (mean ± half-width of the 95% interval): the oracle win rate
of the final greedy completions against the warm start's on every held-out prompt (ties ½; each seed's
win rate over its prompts, t-interval over seeds: the seed is the unit), the best win rate on the way and its
step (a peak before the end is over-optimisation), RcRL's win rate against Absolute RaR prompt by prompt
(per seed, t over seeds), the
entropy ratio (``policy/entropy``, last 10 over first 10 steps; t over seeds), and on held-out outputs
the word repetition and the blind-spot exploitation (``overlooked``: share of tokens the judge cannot
see; over-length and non-English shares in the CSV).  ``pacing`` trains RcRL on each of the first four
rubric criteria alone and reports the oracle win rate against the warm start over steps (mean over
criteria and seeds) and the step where it peaks: the curriculum's K.  ``gv-gap`` samples n completions
per held-out prompt from the warm start and picks the one with the highest self-judged win rate
(004 §3: round robin of the frozen model as judge), against a random one, under the oracle.

Each writes ``benchmarks/results/rcrl*.{md,csv,png}`` whose Markdown starts with the command, and
prints the measured seconds per run and the cost of the full size.
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402

from rewardzoo.board import Entry  # noqa: E402
from rewardzoo.board.study import Knob, Quick, Study, arguments, header, pilot_line, sweep  # noqa: E402
from rewardzoo.core.engines import make_engine  # noqa: E402
from rewardzoo.core.logger import read_metrics  # noqa: E402
from rewardzoo.core.models import load_policy  # noqa: E402
from rewardzoo.core.types import Rollouts  # noqa: E402
from rewardzoo.eval import Estimate, bootstrap_ci, entropy_ratio, mean_ci, preferences, seed_ci  # noqa: E402
from rewardzoo.judges.pairwise import LMJudge, LMJudgeConfig, Tournament, miscalibration  # noqa: E402
from rewardzoo.judges.rubric import Criterion, load_rubric  # noqa: E402
from rewardzoo.protocol import overrides_tag  # noqa: E402
from rewardzoo.recipes import sft  # noqa: E402
from rewardzoo.rewards.rcrl import RcRL  # noqa: E402
from rewardzoo.sweep import RunResult, RunSpec, add_executor_arguments, eval_rows, executor_from_args, run_sweep  # noqa: E402
from rewardzoo.tasks.chat import QUESTION  # noqa: E402
from rewardzoo.tasks.checks.writing import CHECKS  # noqa: E402
from rewardzoo.tasks.rubric_writing import quality  # noqa: E402
from rewardzoo.zoo import as_chat_task, build_task, load_config  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"
VARIANTS = {  # label -> recipe (RcRL paper, Table 3 names)
    "RcRL": "rcrl_rubric_writing",
    "Absolute RaR": "rar_rubric_writing",
    "Absolute RcRL": "absolute_rcrl_rubric_writing",
    "Pairwise RaR": "pairwise_rar_rubric_writing",
    "Dropout Absolute RaR": "dropout_absolute_rar_rubric_writing",
}
KNOB_VARIANTS = ("RcRL", "Absolute RaR")
"""The two methods run at every miscalibration level; the other three run at the board's level only."""
BOARD_LEVEL = 2.0
"""The recipes' miscalibration level (docs/rewards/rcrl.md says why: 004 §5.4/§6 on creative-writing judges)."""
LEVELS = (0.0, 1.0, 2.0, 3.0)
SEEDS = (0, 1, 2, 3, 4)
QUICK_STEPS = 80
"""RL steps of ``study --quick``, the pilot size (levels 0 and 3, seed 0, RcRL and Absolute RaR)."""
PACING_CRITERIA = 4
"""004 Fig. 8 averages four criteria: here the first four of the toy rubric's curriculum order."""
ENTROPY_WINDOW = 10
SHOWN = ("repetition", "overlooked", "over_length", "non_english_rate")
COMMON = ("sft.seed=0", "logging.tensorboard=false", "checkpoint_every=0")
"""Overrides of every run: one warm start for all seeds, no TensorBoard, no checkpoints (a stopped sweep
re-runs an unfinished run from the start anyway)."""


# ------------------------------------------------------------------ the runs
def level_overrides(m: float) -> list[str]:
    """The judge's absolute-report settings at miscalibration level ``m``."""
    return [f"reward.rcrl.judge.rule.{k}={v}" for k, v in miscalibration(m).items()]


STUDY = Study(
    name="rcrl",
    script="benchmarks/rcrl.py",
    task="rubric_writing",
    rows=tuple(Entry("rubric_writing", label, recipe) for label, recipe in VARIANTS.items()),
    seeds=SEEDS,
    knob=Knob(
        "miscalibration m",
        {m: tuple(level_overrides(m)) for m in LEVELS},
        home=BOARD_LEVEL,
        rows=KNOB_VARIANTS,
        folder="m{:g}",
    ),
    common=COMMON,
    quick=Quick(overrides=(f"steps={QUICK_STEPS}",), seeds=(0,), levels=(0.0, 3.0), rows=KNOB_VARIANTS),
)
"""The study, declared (:class:`rewardzoo.board.study.Study`): RcRL and Absolute RaR at every miscalibration
level, the other three at the recipes' level, five seeds, one shared SFT warm start; ``--settings`` takes the
board's ``tuning.csv`` (its chosen rubric-writing rows)."""


def settings_tag(overrides: list[str]) -> str:
    """'' for the recipe's own settings, else a short hash, so that runs with other settings get other directories."""
    return "" if not overrides else "-" + overrides_tag(overrides)


def check_board_level() -> None:
    """The recipes must sit at :data:`BOARD_LEVEL` (else the board and the study disagree)."""
    rule = load_config(VARIANTS["RcRL"]).reward.rcrl.judge.rule
    if {k: getattr(rule, k) for k in miscalibration(BOARD_LEVEL)} != miscalibration(BOARD_LEVEL):
        raise SystemExit(
            f"the recipes' judge is not at miscalibration level {BOARD_LEVEL:g}: update BOARD_LEVEL "
            f"or the recipes' reward.rcrl.judge.rule (miscalibration({BOARD_LEVEL:g}))"
        )


def summarise(result: RunResult) -> dict:
    """What the tables need of one run: its held-out rows by step, the entropy series and its wall time."""
    rows = {step: {k: np.asarray(v) for k, v in r.items()} for step, r in eval_rows(result.spec.run_dir).items()}
    entropy = [r["policy/entropy"] for r in result.rows if "policy/entropy" in r]  # one per RL step
    return {
        "rows": rows,
        "entropy": entropy,
        "wall_s": result.wall_s,
        "steps": len(entropy),
        "entropy_ratio": entropy_ratio(entropy, ENTROPY_WINDOW) if entropy else float("nan"),
    }


def cost_line(runs: dict, n_full: int, jobs: int, full_steps: int) -> str:
    """Measured seconds per run and per RL step, and the wall time of ``n_full`` runs of ``full_steps`` steps on
    ``jobs`` processes at that per-step cost (a pilot's runs are shorter than the full size's)."""
    walls = [r["wall_s"] for r in runs.values()]
    per_step = sum(walls) / max(sum(r["steps"] for r in runs.values()), 1)
    mean = float(np.mean(walls))
    return (
        f"measured {len(walls)} runs: {mean:.0f} s per run on average ({per_step:.2f} s per RL step, evaluations "
        f"included); the full size is {n_full} runs of {full_steps} steps ≈ "
        f"{n_full * full_steps * per_step / jobs / 3600:.2f} h wall on {jobs} processes (plus one SFT warm start)"
    )


def win_table(runs: dict, keys: list) -> np.ndarray:
    """[S, E] oracle verdicts of each run's final held-out rows against its warm start's."""
    return np.stack(
        [preferences(runs[k]["rows"][max(runs[k]["rows"])]["quality"], runs[k]["rows"][0]["quality"]) for k in keys]
    )


def metric_table(runs: dict, keys: list, metric: str, step: str = "last") -> np.ndarray:
    """[S, E] a held-out row metric at the first or last evaluation of each run."""
    return np.stack(
        [runs[k]["rows"][min(runs[k]["rows"]) if step == "first" else max(runs[k]["rows"])][metric] for k in keys]
    )


def win_curve(runs: dict, keys: list) -> tuple[list[int], np.ndarray]:
    """Evaluation steps and the oracle win rate against the warm start at each, per run: [S, T]."""
    steps = sorted(runs[keys[0]]["rows"])
    return steps, np.array(
        [
            [preferences(runs[k]["rows"][t]["quality"], runs[k]["rows"][0]["quality"]).mean() for t in steps]
            for k in keys
        ]
    )


def verdict(e: Estimate, null: float, scale: float = 100.0, digits: int = 1) -> str:
    """'mean [low, high] → above / below / undecided' against ``null``."""
    shown = e.bounds(scale, digits)
    if e.low > null:
        return f"{shown} → above {null * scale:g}"
    if e.high < null:
        return f"{shown} → below {null * scale:g}"
    return f"{shown} → undecided"


# ------------------------------------------------------------------ study
def study(args, argv) -> int:
    """RcRL and Absolute RaR at every level, the other three at the board's, then the table, CSV and plot."""
    check_board_level()
    call = sweep(STUDY, args, [f"steps={args.steps}"] if args.steps else [])
    levels, seeds, variants = call.levels, call.seeds, call.rows
    plan = list(dict.fromkeys((k.level, k.row) for k in call.specs))
    runs = {k: summarise(r) for k, r in call.results.items()}

    base = metric_table(runs, list(runs), "quality", "first")
    assert (base == base[0]).all(), "every run must start from the one warm start (sft.seed=0)"
    lines = [
        header(STUDY, argv),
        *pilot_line(call),
        "",
        f"Rubric-writing testbed, {len(seeds)} seed(s) ({', '.join(map(str, seeds))}), "
        f"{runs[next(iter(runs))]['steps']} RL steps, {base.shape[1]} held-out prompts, greedy completions judged by "
        "the held-out oracle against the warm start's (oracle quality "
        f"{base[0].mean():.3f}).  Mean [95% interval]: each seed's mean over its prompts, t-interval over seeds "
        "(the seed is the unit; entropy ratio: mean ± half-width, t over seeds).  m = the judge's miscalibration of absolute scores "
        f"(0 = calibrated; the recipes: {BOARD_LEVEL:g}).",
        "",
        "| m | method | win rate vs warm start (%) | best on the way (%) @ step | oracle quality | entropy ratio "
        "| word repetition (%) | overlooked tokens (%) |",
        "|---" * 8 + "|",
        f"| — | warm start | — | — | {base[0].mean():.3f} | — | "
        f"{100 * metric_table(runs, list(runs)[:1], 'repetition', 'first').mean():.1f} | "
        f"{100 * metric_table(runs, list(runs)[:1], 'overlooked', 'first').mean():.1f} |",
    ]
    csv_rows, summary = [], {}
    for m, v in plan:
        keys = call.keys(v, m)
        win = seed_ci(lambda p: p.mean(), win_table(runs, keys))
        t, curve = win_curve(runs, keys)
        best = int(np.argmax(curve.mean(0)))
        ratio = mean_ci([runs[k]["entropy_ratio"] for k in keys])
        shown = {x: seed_ci(lambda a: a.mean(), metric_table(runs, keys, x)) for x in SHOWN}
        q = seed_ci(lambda a: a.mean(), metric_table(runs, keys, "quality"))
        summary[(m, v)] = {"win": win, "ratio": ratio, **shown, "curve": (t, curve.mean(0))}
        lines.append(
            f"| {m:g} | {v} | {win.bounds(scale=100)} | {100 * curve.mean(0)[best]:.1f} @ {t[best]} | "
            f"{q.bounds(digits=3)} | {ratio.format(digits=2)} | {shown['repetition'].bounds(scale=100)} | "
            f"{shown['overlooked'].bounds(scale=100)} |"
        )
        for k in keys:
            for step, rows in sorted(runs[k]["rows"].items()):
                csv_rows.append(
                    [
                        m,
                        v,
                        k.seed,
                        step,
                        float(preferences(rows["quality"], runs[k]["rows"][0]["quality"]).mean()),
                        float(rows["quality"].mean()),
                        *(float(rows[x].mean()) for x in SHOWN),
                    ]
                )
    if set(KNOB_VARIANTS) <= set(variants):
        lines += [
            "",
            "RcRL against Absolute RaR at each level, prompt by prompt (oracle verdicts of the final outputs, "
            "ties ½; each seed's win rate over its prompts, t-interval over seeds), entropy ratio RcRL − RaR (t over seeds) and "
            "blind-spot exploitation RaR − RcRL (overlooked tokens, points):",
            "",
            "| m | RcRL vs RaR win rate (%) | entropy ratio RcRL − RaR | overlooked RaR − RcRL (points) |",
            "|---|---|---|---|",
        ]
        for m in levels:
            a, b = (call.keys(v, m) for v in KNOB_VARIANTS)
            head = seed_ci(
                lambda x, y: preferences(x, y).mean(),
                metric_table(runs, a, "quality"),
                metric_table(runs, b, "quality"),
            )
            d_ratio = mean_ci([runs[i]["entropy_ratio"] - runs[j]["entropy_ratio"] for i, j in zip(a, b)])
            d_over = seed_ci(
                lambda x, y: x.mean() - y.mean(),
                metric_table(runs, b, "overlooked"),
                metric_table(runs, a, "overlooked"),
            )
            summary[(m, "head")] = head
            lines.append(
                f"| {m:g} | {verdict(head, 0.5)} | {d_ratio.format(digits=2, sign=True)} | "
                f"{d_over.bounds(scale=100, sign=True)} |"
            )
    lines += [
        "",
        cost_line(
            runs,
            len(call.full),
            args.jobs,
            load_config(VARIANTS["RcRL"]).steps,
        )
        + ".",
        "",
        f"![across the knob]({args.name}.png)",
    ]
    results_dir = Path(args.results)
    results_dir.mkdir(parents=True, exist_ok=True)
    (results_dir / f"{args.name}.md").write_text("\n".join(lines) + "\n")
    with open(results_dir / f"{args.name}.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["miscalibration", "method", "seed", "step", "win_rate_vs_warm_start", "quality", *SHOWN])
        w.writerows(csv_rows)
    plot_study(summary, levels, variants, seeds, results_dir / f"{args.name}.png")
    print("\n".join(lines))
    return 0


def plot_study(summary: dict, levels, variants, seeds, path: Path) -> None:
    """Four panels across the knob (win rate vs warm start, RcRL vs RaR, entropy ratio, overlooked tokens) and
    the win-rate curves over steps at the board's level."""
    fig, axes = plt.subplots(1, 5, figsize=(24, 4.2))
    panels = (
        ("win", "oracle win rate vs warm start (%)", 100),
        ("ratio", "entropy ratio (final/initial)", 1),
        ("overlooked", "overlooked tokens (%)", 100),
        ("repetition", "word repetition (%)", 100),
    )
    for ax, (key, title, scale) in zip(axes[[0, 2, 3, 4]], panels):
        for v in variants:
            pts = [(m, summary[(m, v)][key]) for m in levels if (m, v) in summary]
            xs = [m for m, _ in pts]
            ys = np.array([e.mean for _, e in pts]) * scale
            err = np.array([[e.mean - e.low, e.high - e.mean] for _, e in pts]).T * scale
            ax.errorbar(
                xs,
                ys,
                yerr=np.nan_to_num(err, posinf=0),
                marker="o",
                capsize=3,
                label=v,
                ls="-" if len(xs) > 1 else "none",
            )
        ax.set(xlabel="miscalibration m of absolute scores", title=title)
    axes[0].axhline(50, color="grey", lw=0.8, ls="--")
    axes[0].legend(fontsize=7)
    heads = [(m, summary[(m, "head")]) for m in levels if (m, "head") in summary]
    if heads:
        axes[1].errorbar(
            [m for m, _ in heads],
            [100 * e.mean for _, e in heads],
            yerr=np.nan_to_num(np.array([[e.mean - e.low, e.high - e.mean] for _, e in heads]).T * 100, posinf=0),
            marker="o",
            capsize=3,
            color="black",
        )
        axes[1].axhline(50, color="grey", lw=0.8, ls="--")
    axes[1].set(xlabel="miscalibration m of absolute scores", title="RcRL vs Absolute RaR, prompt by prompt (%)")
    fig.suptitle(f"RcRL testbed, {len(seeds)} seed(s); mean and 95% interval", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    fig2, ax = plt.subplots(figsize=(6.5, 4.2))
    board = BOARD_LEVEL if any((BOARD_LEVEL, v) in summary for v in variants) else levels[-1]
    for v in variants:
        if (board, v) in summary:
            t, c = summary[(board, v)]["curve"]
            ax.plot(t, 100 * c, marker="o", ms=3, label=v)
    ax.axhline(50, color="grey", lw=0.8, ls="--")
    ax.set(xlabel="RL step", ylabel="oracle win rate vs warm start (%)", title=f"over steps at m = {board:g}")
    ax.legend(fontsize=7)
    fig2.tight_layout()
    fig2.savefig(path.with_name(path.stem + "_curves.png"), dpi=110)


# ------------------------------------------------------------------ pacing (004 Fig. 8)
def pacing(args, argv) -> int:
    """RcRL on one criterion at a time; the oracle win rate against the warm start over steps; its peak is K."""
    out = Path(args.out) / "pacing"
    out.mkdir(parents=True, exist_ok=True)
    rubric = load_rubric("rubric_writing")
    criteria = (
        [c for c in rubric.criteria if c.name in args.criteria]
        if args.criteria
        else list(rubric.criteria[:PACING_CRITERIA])
    )
    settings = STUDY.settings(args.settings).get("RcRL", [])
    specs = {}
    for c in criteria:
        path = out / f"rubric_{c.name}.yaml"
        path.write_text(
            json.dumps(
                {
                    "name": f"only_{c.name}",
                    "steps_per_criterion": 1,
                    "criteria": [{"name": c.name, "description": c.description, "check": c.check}],
                }
            )
        )
        for s in args.seeds:
            specs[(c.name, s)] = RunSpec(
                f"pacing/{c.name}/seed{s}",
                VARIANTS["RcRL"],
                out / (c.name + settings_tag([*settings, *args.set])) / f"seed{s}",
                (
                    f"seed={s}",
                    f"sft.cache_dir={Path(args.out) / 'sft-cache'}",
                    *COMMON,
                    f"reward.rcrl.rubric={path}",
                    f"steps={args.steps}",
                    f"eval.every={args.every}",
                    *settings,
                    *args.set,
                ),
            )
    results = run_sweep(list(specs.values()), desc="rcrl pacing", executor=executor_from_args(args))
    runs = {k: summarise(results[sp.name]) for k, sp in specs.items()}
    task = build_task(load_config(VARIANTS["RcRL"]).task)
    meta = {e.prompt: e.meta for e in task.eval}
    own = {}  # the trained criterion's own held-out check (calibrated, on the text as written), by step
    for (name, s), sp in specs.items():
        by_step: dict[int, list[float]] = {}
        for row in read_metrics(sp.run_dir / "samples.jsonl"):
            by_step.setdefault(row["step"], []).append(CHECKS[name](row["completion"], meta[row["prompt"]]))
        own[(name, s)] = {t: float(np.mean(v)) for t, v in by_step.items()}
    keys = list(runs)
    steps, curves = win_curve(runs, keys)  # [runs, T]
    mean = curves.mean(0)
    peak = int(np.argmax(mean))
    per = {c.name: win_curve(runs, [k for k in keys if k[0] == c.name])[1].mean(0) for c in criteria}
    lines = [
        header(STUDY, argv),
        "",
        f"004 Fig. 8 on the rubric-writing testbed: RcRL trained on one criterion alone (each of {len(criteria)}: "
        f"{', '.join(c.name for c in criteria)}), {len(args.seeds)} seed(s), {args.steps} RL steps, held-out "
        "greedy completions judged by the oracle against the warm start's (ties ½).",
        "",
        "| step | " + " | ".join(c.name for c in criteria) + " | mean win rate (%) | mean ± 95% (runs) |",
        "|---" * (len(criteria) + 3) + "|",
    ]
    for i, t in enumerate(steps):
        e = mean_ci(curves[:, i])
        lines.append(
            f"| {t} | "
            + " | ".join(f"{100 * per[c.name][i]:.1f}" for c in criteria)
            + f" | {100 * mean[i]:.1f} | {e.format(scale=100)} |"
        )
    lines += [
        "",
        "The trained criterion's own held-out check (the calibrated check on the text as written, mean over "
        "prompts and seeds):",
        "",
        "| step | " + " | ".join(c.name for c in criteria) + " |",
        "|---" * (len(criteria) + 1) + "|",
    ]
    for t in steps:
        lines.append(
            f"| {t} | "
            + " | ".join(f"{np.mean([own[(c.name, s)][t] for s in args.seeds]):.3f}" for c in criteria)
            + " |"
        )
    lines += [
        "",
        f"**Turning point: step {steps[peak]}** (the mean win rate peaks at {100 * mean[peak]:.1f}%; "
        f"{'it then declines to ' + format(100 * mean[-1], '.1f') + '% at step ' + str(steps[-1]) if peak < len(steps) - 1 else 'it has not declined by the last step: run longer'}).",
        "",
        cost_line(runs, PACING_CRITERIA * len(args.seeds), args.jobs, args.steps) + ".",
        "",
        "![pacing](rcrl_pacing.png)",
    ]
    results_dir = Path(args.results)
    results_dir.mkdir(parents=True, exist_ok=True)
    (results_dir / "rcrl_pacing.md").write_text("\n".join(lines) + "\n")
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(11, 4))
    for c in criteria:
        ax.plot(steps, 100 * per[c.name], alpha=0.5, label=c.name)
        bx.plot(steps, [np.mean([own[(c.name, s)][t] for s in args.seeds]) for t in steps], label=c.name)
    ax.plot(steps, 100 * mean, color="black", lw=2, label="mean")
    ax.axvline(steps[peak], color="grey", ls=":")
    ax.axhline(50, color="grey", lw=0.8, ls="--")
    ax.set(xlabel="RL step", ylabel="oracle win rate vs warm start (%)", title="overall quality (held-out oracle)")
    bx.set(xlabel="RL step", ylabel="held-out check", title="the trained criterion")
    ax.legend(fontsize=7)
    bx.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(results_dir / "rcrl_pacing.png", dpi=110)
    print("\n".join(lines))
    return 0


# ------------------------------------------------------------------ the generation-verification gap (004 §3)
GV_TEMPLATE = (
    "Two answers to a writing prompt. Which one is better overall?\nPrompt: {prompt}\nA: {first}\nB: {second}\n"
)


def gv_gap(args, argv) -> int:
    """Best-of-n by the frozen warm start's own pairwise verdicts against a random sample, under the oracle."""
    cfg = load_config(args.recipe, [f"sft.cache_dir={Path(args.out) / 'sft-cache'}", *COMMON, *args.set])
    task = as_chat_task(cfg, build_task(cfg.task))
    policy, tokenizer = load_policy(cfg.model, sft(cfg) if cfg.sft.enabled else None, seed=cfg.seed)
    policy.eval()
    torch.manual_seed(args.seed)
    examples = task.eval[: args.prompts]
    n = args.n
    texts = make_engine(policy, tokenizer, cfg.sampling).generate([e.prompt for e in examples], n=n).texts
    group_ids = torch.arange(len(examples)).repeat_interleave(n)
    metas = [e.meta for e in examples for _ in range(n)]
    prompts = [e.meta.get(QUESTION, e.prompt) for e in examples for _ in range(n)]  # judges read the question
    q = np.array([quality(t, m) for t, m in zip(texts, metas)]).reshape(len(examples), n)  # [P, n]
    # a chat recipe's judge is its own (its template through the model's chat template); the tiny model's, GV_TEMPLATE
    judge_cfg = (
        cfg.reward.rcrl.judge.lm
        if cfg.task.chat
        else LMJudgeConfig(pairwise_template=GV_TEMPLATE, max_length=500, min_choice_mass=0.0)
    )
    judge = LMJudge.self_judge(policy, tokenizer, judge_cfg)
    overall = Criterion("overall", "Which answer is better overall?", title="Overall")
    groups = [list(range(i * n, (i + 1) * n)) for i in range(len(examples))]

    def ask(first, second):
        return judge.compare(
            overall,
            [prompts[i] for i in first],
            [metas[i] for i in first],
            [texts[i] for i in first],
            [texts[i] for i in second],
        )

    lm, stats = Tournament("round_robin").win_rates(ask, groups)
    batch = Rollouts(
        prompts=prompts,
        completions=texts,
        answers=texts,
        references=[None] * len(texts),
        group_ids=group_ids,
        meta=metas,
        step=0,
    )
    board_rule = load_config(VARIANTS["Pairwise RaR"], args.set).reward.rcrl  # every criterion, the board's judge
    rule = RcRL(board_rule, seed=args.seed).score(batch).rewards.double()
    rng = random.Random(args.seed)
    random_pick = np.array([rng.randrange(n) for _ in examples])
    picks = {
        "self-judge (frozen warm start, round robin)": lm.view(-1, n).argmax(1).numpy(),
        "rule judge at the board's level (every criterion)": rule.view(-1, n).argmax(1).numpy(),
        "oracle (upper bound)": q.argmax(1),
    }
    rows = np.arange(len(examples))
    start = "the tiny warm start" if cfg.model.name == "tiny" else f"{cfg.model.name} as it starts (`{args.recipe}`)"
    lines = [
        header(STUDY, argv),
        "",
        f"004 §3 on {start}: {n} samples per held-out prompt ({len(examples)} prompts, temperature "
        f"{cfg.sampling.temperature:g}); the pick with the highest win rate in a round robin of pairwise verdicts "
        "against one drawn at random, judged by the held-out oracle (ties ½; bootstrap over prompts).",
        "",
        "| selector | oracle win rate of its pick vs a random sample (%) | oracle quality of the pick |",
        "|---|---|---|",
        f"| random sample | 50 | {q[rows, random_pick].mean():.3f} |",
    ]
    for label, pick in picks.items():
        e = bootstrap_ci(
            lambda a, b: preferences(a.ravel(), b.ravel()).mean(), q[rows, pick][None], q[rows, random_pick][None]
        )
        lines.append(f"| {label} | {verdict(e, 0.5)} | {q[rows, pick].mean():.3f} |")
    consistency = stats.consistent / max(stats.pairs, 1)
    lines += [
        "",
        f"The self-judge answered {stats.calls} ordered comparisons; its two orders agreed strictly on the "
        f"winner in {100 * consistency:.1f}% of pairs (position consistency; ½ = the order decides).  "
        "Spearman correlation of its within-group win rates with oracle quality: "
        f"{spearman_within(lm.view(-1, n).numpy(), q):.3f} (mean over prompts).",
    ]
    results_dir = Path(args.results)
    results_dir.mkdir(parents=True, exist_ok=True)
    (results_dir / f"{args.name}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


def spearman_within(scores: np.ndarray, q: np.ndarray) -> float:
    """Mean over rows of the Spearman correlation of two [P, n] tables (rows with a constant side skipped)."""
    from scipy.stats import spearmanr

    rhos = [spearmanr(a, b).statistic for a, b in zip(scores, q) if np.ptp(a) > 0 and np.ptp(b) > 0]
    return float(np.mean(rhos)) if rhos else float("nan")


def main(argv: list[str] | None = None) -> int:
    """Parse the subcommand and run it."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--out", default=str(REPO / "runs" / "rcrl"), help="run directories (finished runs are reused)")
    common.add_argument("--results", default=str(RESULTS), help="where the tables, CSV and plots go")
    common.add_argument("--jobs", type=int, default=2, help="runs in parallel")
    add_executor_arguments(common)
    common.add_argument(
        "--settings",
        help="JSON {method: [override, ...]}, or the leaderboard's tuning.csv "
        "(its chosen rubric-writing rows; default: the recipes' settings)",
    )
    common.add_argument(
        "--set", nargs="*", default=[], help="key=value overrides of every run (after the level and settings)"
    )
    s = sub.add_parser("study", help="RcRL vs Absolute RaR across the miscalibration knob")
    arguments(s, STUDY, str(REPO / "runs" / "rcrl"), str(RESULTS))
    s.add_argument("--steps", type=int, default=0, help="RL steps (0 = the recipes' own)")
    s.add_argument("--name", default="rcrl", help="stem of the results files")
    p = sub.add_parser("pacing", parents=[common], help="004 Fig. 8: one criterion at a time")
    p.add_argument(
        "--criteria", nargs="+", help=f"criterion names (default: the first {PACING_CRITERIA} of the rubric)"
    )
    p.add_argument("--seeds", type=int, nargs="+", default=[0])
    p.add_argument("--steps", type=int, default=120)
    p.add_argument("--every", type=int, default=10, help="evaluate every this many steps")
    g = sub.add_parser("gv-gap", parents=[common], help="004 §3: the starting model's generation-verification gap")
    g.add_argument(
        "--recipe",
        default=VARIANTS["RcRL"],
        help="the RcRL recipe whose start is measured (rcrl_rubric_writing_smollm2: the real model, its own judge)",
    )
    g.add_argument("--name", default="rcrl_gv_gap", help="stem of the results file")
    g.add_argument("--n", type=int, default=8, help="samples per prompt")
    g.add_argument("--prompts", type=int, default=96)
    g.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    return {"study": study, "pacing": pacing, "gv-gap": gv_gap}[args.command](args, argv)


if __name__ == "__main__":
    sys.exit(main())
