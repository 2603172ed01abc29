"""VARL and the g-transforms on the CPU presets: the reference-distribution study and the hacking study.

    python benchmarks/varl.py refdist              # → benchmarks/results/varl_refdist.{md,csv,png} (+ _collapse.png)
    python benchmarks/varl.py hacking              # → benchmarks/results/varl_hacking.{md,csv,png}, 5 seeds
    python benchmarks/varl.py hacking --quick      # the pilot size (200 held-out prompts)
    python benchmarks/varl.py hacking --methods "RLVR (proxy)" "VARL (proxy gate)" --seeds 0 1   # a subset
    python benchmarks/varl.py hacking --settings tuned.json   # per-method overrides (the tuning stage's lr, ...)
    python benchmarks/varl.py hacking --settings benchmarks/results/leaderboard/tuning.csv --out runs/leaderboard
                                                   # the board's choices, reusing the board's runs
    python benchmarks/varl.py hacking --set steps=2 --out /tmp/smoke   # any key=value added to every run

Every run is the library's own command, ``rewardzoo train <recipe> seed=S run_dir=... <overrides>``, run by
:func:`rewardzoo.sweep.run_sweep` (``--jobs`` processes at a time, SFT warm starts first).  Finished runs
under ``--out`` are reused, so a second call only writes the reports (a killed sweep resumes where it
stopped).  Each method's settings are inputs: ``--settings FILE`` maps a method's label to a list of
``key=value`` overrides added after the study's own (a tuning stage supplies each method's lr and its own
key this way); without it every method runs its recipe's.  Each study is a declaration in :data:`STUDIES`, run by
the path every study shares (:mod:`rewardzoo.board.study`: the flags, the settings, the runs, the sweep).
The report ends with the measured cost and the full study's cost estimated from it.

**refdist** (``algorithms/ral_refdist.yaml`` and its overrides): RAL with each of the four g-transforms and
a co-trained judge, and RAL with a frozen judge (g = D).  For each
g the divergence its frozen-D* gradient descends (rewards/transforms.py) is read from the exact
``eval/…`` metrics at the first and last evaluation; the change is a t-interval over seeds
(:func:`rewardzoo.eval.mean_ci`).  Collapse is read from ``eval/top_answer_share`` and
``eval/answer_entropy`` against p_ref's own values.

**hacking** (the cpu board's ``hackable_multiplication`` rows: ``algorithms/*_hackable_multiplication.yaml``,
scratchpad multiplication rewarded by the lazy ``contains`` proxy, where honest solving and listing candidates are
both learnable): the board's five rows, run exactly as ``rewardzoo leaderboard`` runs them and in its directory
layout (``--out`` = the board's ``--runs`` reuses its finished runs) — the SFT warm start; two controls, RLVR on the
proxy (it must hack more over training) and RLVR on the strict check (``reward.rlvr.verifier=exact``: honest
accuracy must be able to rise); VARL (r = v·D) and its additive twin (r = v + D) — and four VARL variants: completion
features (D reads the scratchpad too) and each other g-transform under the gate.  All are twins: they differ only
in ``reward.*``.  ``--settings`` takes the board's ``tuning.csv`` (each row's chosen lr; the variants take VARL's).
Read: held-out ``eval/hack_rate`` and strict ``eval/accuracy`` over training and at the end (t-intervals over
seeds; against RLVR each seed's paired difference of its held-out means, t-interval over seeds,
:func:`rewardzoo.eval.seed_ci` on ``eval_rows.jsonl``), ``train/hack_rate`` of every step, the discriminator's held-out AUC
(``disc/auc_ref_vs_passing``) over training, and each g's warning and outcome.  ``--set
task.hackable_multiplication.hedge_prob=0.1`` runs the testbed at another point of its deciding variable (how often
the warm start lists candidates), in directories of its own.
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import sys
import warnings
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np
from omegaconf import OmegaConf

from rewardzoo.board import DIVERGENCE_OF, PRESETS, Entry
from rewardzoo.board.study import Call, Quick, Study, arguments, header, pilot_line, sweep
from rewardzoo.eval import Estimate, mean_ci, seed_ci
from rewardzoo.rewards.transforms import G_TRANSFORMS
from rewardzoo.rewards.varl import warn_unless_safe_under_gate
from rewardzoo.sweep import eval_rows
from rewardzoo.zoo import TrainConfig, build_task

RESULTS = Path(__file__).resolve().parents[1] / "benchmarks" / "results"

LABELS = {"D": "KL(p ‖ m)", "neg_log_one_minus_D": "2·JS(p, π)", "log_D": "2·KL(m ‖ p)", "logit": "KL(π ‖ p)"}
CLAIMED = {g: (DIVERGENCE_OF[g].removeprefix("eval/"), label) for g, label in LABELS.items()}
"""g → (the refdist metric of the divergence its gradient descends, as the leaderboard reads it; its label)."""
HACKING_TASK = "hackable_multiplication"
BOARD_ROWS = {e.method: e for e in PRESETS["cpu"] if e.task == HACKING_TASK}
"""The cpu board's hackable rows (SFT, RLVR (proxy), RLVR (strict check), VARL (proxy gate), VARL additive (proxy)):
the hacking study runs them exactly as the board does, in the board's run directories, so a study given the
board's ``--runs`` as ``--out`` reuses the board's finished runs (and the other way round)."""
VARL_ROW = "VARL (proxy gate)"
VARIANTS = {
    "VARL, completion features": "reward.varl.features=completion",
    **{f"VARL g={g}": f"reward.varl.g={g}" for g in ("neg_log_one_minus_D", "log_D", "logit")},
}
"""The hacking study's rows beyond the board: VARL with one more override (they take VARL's settings unless
``--settings`` names them)."""
STUDIES = {
    "refdist": Study(
        name="varl_refdist",
        script="benchmarks/varl.py",
        task="refdist",
        rows=(
            *(Entry("refdist", f"RAL g={g}", "ral_refdist", (f"reward.ral.g={g}",)) for g in CLAIMED),
            Entry("refdist", "RAL g=D, frozen judge", "ral_refdist", ("reward.ral.frozen=true",)),
        ),
        seeds=(0, 1, 2),
        common=("logging.tensorboard=false", "checkpoint_every=0"),
        quick=Quick(overrides=("steps=40",)),
    ),
    "hacking": Study(
        name="varl_hacking",
        script="benchmarks/varl.py",
        task=HACKING_TASK,
        rows=(
            *BOARD_ROWS.values(),
            *(
                replace(BOARD_ROWS[VARL_ROW], method=label, overrides=(*BOARD_ROWS[VARL_ROW].overrides, override))
                for label, override in VARIANTS.items()
            ),
        ),
        seeds=(0, 1, 2, 3, 4),
        layout="board",
        borrow={label: VARL_ROW for label in VARIANTS},
        quick=Quick(overrides=("eval.n_examples=200", "eval.every=20")),
    ),
}
"""The two studies, declared (:class:`rewardzoo.board.study.Study`).  refdist: RAL with each g-transform and a
co-trained judge, and RAL with a frozen judge (g = D), 3 seeds; ``--quick`` runs 40 RL steps (the leaderboard's
cpu setting).  hacking: the cpu board's hackable rows in the board's own run directories (``--out`` = the board's
``--runs`` reuses its finished runs), and VARL's variants, which take VARL's settings unless ``--settings`` names
them; ``--quick`` evaluates 200 of the 1,000 held-out prompts (the pilot)."""
REFDIST_KEYS = [
    "kl_ref_pi",
    "kl_pi_ref",
    "js",
    "le_cam",
    "kl_ref_mix",
    "kl_mix_ref",
    "top_answer_share",
    "answer_entropy",
    "outside_mass",
    "ref_top_answer_share",
    "ref_answer_entropy",
    "accuracy",
]
HACKING_KEYS = ["hack_rate", "accuracy", "proxy_pass", "format_rate"]
AUC = "disc/auc_ref_vs_passing"
SERIES = ["train/hack_rate", "train/accuracy", "train/proxy_pass", AUC, "reward/g_passing_mean"]
"""Per-step keys the hacking study reads (the discriminator's AUC at step 0 is the warm-up's last, ``warmup/…``)."""
WINDOW = 5
"""RL steps averaged for a 'first' or 'last' value of a per-step series."""


def curves(rows: list[dict], keys: list[str]) -> dict[str, dict[int, float]]:
    """{key: {step: value}} of a run's ``eval/<key>`` metrics."""
    evals = [r for r in rows if "eval/accuracy" in r]
    return {k: {r["step"]: r[f"eval/{k}"] for r in evals} for k in keys}


def series(rows: list[dict], keys: list[str]) -> dict[str, dict[int, float]]:
    """{key: {step: value}} of the per-step ``keys`` a run logged (a warm-up's ``warmup/<key>`` as step 0)."""
    out: dict[str, dict[int, float]] = {}
    for r in rows:
        for k in keys:
            for name in (k, f"warmup/{k}"):
                if name in r:
                    out.setdefault(k, {})[r["step"]] = r[name]
    return out


def fmt(e: Estimate, digits: int = 3) -> str:
    """'mean ± half-width' of a 95% interval."""
    return e.format(digits=digits)


def write_csv(path: Path, results: dict[str, list[dict]], keys: list[str], per_step: list[str] = ()) -> None:
    """One row per method × seed × step that has a held-out evaluation (``eval/<key>`` columns) or a
    ``per_step`` series value; a blank cell where the step has none."""
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["method", "seed", "step", *(f"eval/{k}" for k in keys), *per_step])
        for name, runs in results.items():
            for r in runs:
                columns = [r["curves"][k] for k in keys] + [r["series"].get(k, {}) for k in per_step]
                for step in sorted(set().union(*columns)):
                    writer.writerow([name, r["seed"], step, *(c.get(step, "") for c in columns)])


def band(ax, runs: list[dict], key: str, label: str, color=None) -> None:
    """Mean over seeds of ``eval/<key>`` with its 95% t-interval as a shaded band (in ``color`` when given)."""
    steps = sorted(set.intersection(*(set(r["curves"][key]) for r in runs)))  # steps every seed logged
    est = [mean_ci([r["curves"][key][s] for r in runs]) for s in steps]
    (line,) = ax.plot(steps, [e.mean for e in est], marker="o", ms=2, label=label, color=color)
    if len(runs) > 1:
        ax.fill_between(steps, [e.low for e in est], [e.high for e in est], color=line.get_color(), alpha=0.2)


def report_refdist(results: dict[str, list[dict]], head: str, seeds: list[int], where: Path) -> list[str]:
    """The refdist tables and figures."""
    import matplotlib.pyplot as plt

    first = lambda r, k: r["curves"][k][min(r["curves"][k])]  # noqa: E731
    last = lambda r, k: r["curves"][k][max(r["curves"][k])]  # noqa: E731
    n_steps = max(max(r["curves"]["js"]) for runs in results.values() for r in runs)
    lines = [
        head,
        "",
        f"# The g-transforms on the reference-distribution task (seeds {', '.join(map(str, seeds))})",
        "",
        f"`refdist`: 16 prompts, 4–8 answers each, p_ref known; tiny policy warm-started to be uniform over "
        f"each answer set; {n_steps} GRPO steps. Divergences are exact (every answer scored with the policy, "
        f"renormalised over the set); mean ± 95% t-interval over seeds (`rewardzoo.eval.mean_ci`).",
        "",
        "## Each g descends its divergence (co-trained judge)",
        "",
        "| reward | divergence it claims to descend | start | end | change (end − start) | falls? |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for g, (key, label) in CLAIMED.items():
        runs = results[f"RAL g={g}"]
        change = mean_ci([last(r, key) - first(r, key) for r in runs])
        verdict = "yes (CI below 0)" if change.high < 0 else "no (CI includes 0)" if change.low <= 0 else "no: it rises"
        lines.append(
            f"| RAL g={g} | {label} (`eval/{key}`) | {fmt(mean_ci([first(r, key) for r in runs]))} | "
            f"{fmt(mean_ci([last(r, key) for r in runs]))} | {fmt(change)} | {verdict} |"
        )
    lines += [
        "",
        "All divergences at the end:",
        "",
        "| reward | KL(p ‖ π) | KL(π ‖ p) | JS | Le Cam | mass outside the set |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for name, runs in results.items():
        cells = [
            fmt(mean_ci([last(r, k) for r in runs])) for k in ["kl_ref_pi", "kl_pi_ref", "js", "le_cam", "outside_mass"]
        ]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    co = results["RAL g=D"]
    target = co[0]["curves"]
    lines += [
        "",
        "## Frozen judge: collapse; co-trained: matching",
        "",
        f"p_ref itself has top-answer share {first(co[0], 'ref_top_answer_share'):.3f} and entropy "
        f"{first(co[0], 'ref_answer_entropy'):.3f} nats (means over prompts); the warm start "
        f"{fmt(mean_ci([first(r, 'top_answer_share') for r in co]))} and "
        f"{fmt(mean_ci([first(r, 'answer_entropy') for r in co]))}.",
        "",
        "| reward | top-answer share, end | change | answer entropy, end | change | KL(p ‖ π), end |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for name, runs in results.items():
        cells = []
        for k in ["top_answer_share", "answer_entropy"]:
            cells += [fmt(mean_ci([last(r, k) for r in runs])), fmt(mean_ci([last(r, k) - first(r, k) for r in runs]))]
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {fmt(mean_ci([last(r, 'kl_ref_pi') for r in runs]))} |")
    fr = results["RAL g=D, frozen judge"]
    for k in ["top_answer_share", "answer_entropy", "kl_ref_pi"]:
        a, b = mean_ci([last(r, k) for r in co]), mean_ci([last(r, k) for r in fr])
        lines.append(
            f"\n`{k}` at the end, co-trained {fmt(a)} vs frozen {fmt(b)}: "
            f"{'the intervals separate' if a.separates(b) else 'the intervals overlap (not separated)'}."
        )
    lines += ["", "![claimed divergences](varl_refdist.png)", "", "![collapse](varl_refdist_collapse.png)"]

    fig, axes = plt.subplots(1, 4, figsize=(16, 3.6))
    for ax, (g, (key, label)) in zip(axes, CLAIMED.items()):
        band(ax, results[f"RAL g={g}"], key, f"RAL g={g}")
        ax.set_title(f"g = {g}: {label}")
        ax.set_xlabel("RL step")
    axes[0].set_ylabel("exact divergence (mean over prompts)")
    fig.tight_layout()
    fig.savefig(where / "varl_refdist.png", dpi=120)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, key in zip(axes, ["top_answer_share", "answer_entropy"]):
        for name in ["RAL g=D", "RAL g=D, frozen judge"]:
            band(ax, results[name], key, name)
        ax.axhline(target[f"ref_{key}"][0], color="k", ls="--", lw=1, label="p_ref")
        ax.set_title(key)
        ax.set_xlabel("RL step")
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(where / "varl_refdist_collapse.png", dpi=120)
    return lines


def last_rows(run_dir: Path, key: str) -> np.ndarray:
    """[E] per-example ``key`` of the run's last held-out evaluation."""
    rows = eval_rows(run_dir)
    return np.array(rows[max(rows)][key])


def window(run: dict, key: str, where: str, k: int = WINDOW) -> float:
    """Mean of a per-step series over its first or last ``k`` RL steps (NaN when the run logged none)."""
    steps = sorted(s for s in run["series"].get(key, {}) if s >= 1)
    chosen = steps[:k] if where == "first" else steps[-k:]
    return float(np.mean([run["series"][key][s] for s in chosen])) if chosen else math.nan


def at(run: dict, key: str, where: str) -> float:
    """A held-out ``eval/<key>`` at the first (the warm start) or last evaluation."""
    curve = run["curves"][key]
    return curve[min(curve) if where == "first" else max(curve)]


def change(runs: list[dict], value: Callable[[dict, str], float]) -> Estimate:
    """Per-seed end − start of ``value(run, 'first' | 'last')``, as a t-interval over seeds."""
    return mean_ci([value(r, "last") - value(r, "first") for r in runs])


def excludes_zero(e: Estimate) -> str:
    """'yes, up' / 'yes, down' when the interval lies on one side of 0, else 'no'."""
    return "yes, up" if e.low > 0 else "yes, down" if e.high < 0 else "no"


def gate_warning(g: str) -> str:
    """What VARL says at construction about g under the multiplicative gate ('none' for g = D)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warn_unless_safe_under_gate(G_TRANSFORMS[g])
    text = str(caught[0].message) if caught else ""
    return (
        "; ".join(
            p
            for p, word in (("no positive affinity", "lacks positive affinity"), ("unbounded", "unbounded"))
            if word in text
        )
        or "none"
    )


def controls(results: dict[str, list[dict]]) -> tuple[list[str], bool]:
    """The testbed's two controls — RLVR on the proxy hacks more over training, RLVR on the strict check
    gets more accurate — and whether both intervals exclude 0 (the testbed can decide VARL's claim).  The hack is
    read on the held-out rate, as the board's positive control reads it (one gate rule for board and study);
    ``train/hack_rate`` is shown beside it, not part of the gate."""
    hack = lambda r, where: at(r, "hack_rate", where)  # noqa: E731
    acc = lambda r, where: at(r, "accuracy", where)  # noqa: E731
    train_hack = lambda r, where: window(r, "train/hack_rate", where)  # noqa: E731
    rows = [
        ("RLVR (proxy)", "held-out `eval/hack_rate`", hack),
        ("RLVR (proxy)", f"`train/hack_rate` (mean of the first vs last {WINDOW} RL steps)", train_hack),
        ("RLVR (proxy)", "held-out strict `eval/accuracy`", acc),
        ("RLVR (strict check)", "held-out strict `eval/accuracy`", acc),
    ]
    lines = [
        "| control | measure | start | end | change (end − start) | interval excludes 0? |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    verdicts = {}
    for name, label, value in rows:
        if name not in results:
            continue
        runs = results[name]
        d = change(runs, value)
        verdicts[(name, label)] = d
        lines.append(
            f"| {name} | {label} | {fmt(mean_ci([value(r, 'first') for r in runs]))} | "
            f"{fmt(mean_ci([value(r, 'last') for r in runs]))} | {fmt(d)} | {excludes_zero(d)} |"
        )
    hacks = [d for (n, label), d in verdicts.items() if n == "RLVR (proxy)" and label == "held-out `eval/hack_rate`"]
    honest = verdicts.get(("RLVR (strict check)", "held-out strict `eval/accuracy`"))
    decides = bool(hacks) and all(d.low > 0 for d in hacks) and honest is not None and honest.low > 0
    return lines, decides


def report_hacking(results: dict[str, list[dict]], head: str, seeds: list[int], where: Path) -> list[str]:
    """The hacking study's tables and figure: the controls, every method at the end, paired differences
    against RLVR on the proxy, the discriminator's AUC over training and the g-transforms under the gate."""
    import matplotlib.pyplot as plt

    base_name = "RLVR (proxy)"
    base = results[base_name]
    cfg = OmegaConf.load(Path(base[0]["dir"]) / "config.yaml")
    task = cfg.task.hackable_multiplication
    n_prompts = len(last_rows(base[0]["dir"], "correct"))
    lines = [
        head,
        "",
        f"# VARL against reward hacking: the lazy `contains` proxy (seeds {', '.join(map(str, seeds))})",
        "",
        f"`algorithms/*_hackable_multiplication.yaml`: {task.multiplication.digits_a}-digit × "
        f"{task.multiplication.digits_b}-digit products with a partial-products scratchpad, tiny policy, one SFT warm "
        f"start ({cfg.sft.steps} steps, `hedge_prob` {task.hedge_prob}: that share of demonstrations ends in two "
        f"candidates), {cfg.steps} GRPO steps of {cfg.grpo.batch_size // cfg.grpo.group_size} prompts × "
        f"{cfg.grpo.group_size} at temperature {cfg.sampling.temperature}, `grpo.advantage={cfg.grpo.advantage}` "
        f"for every method (the twins differ only in `reward.*`). The proxy passes any answer list that contains "
        f"the product; `hack_rate` = passes the proxy and fails the strict check (exactly the product). Held-out "
        f"metrics on {n_prompts} prompts × {max(cfg.eval.samples, 1)} completions sampled at the rollout "
        f"temperature; `train/…` on each step's sampled batch; mean ± 95% t-interval over seeds; step 0 is the "
        f"shared warm start.",
        "",
        "## The controls: can this testbed decide?",
        "",
    ]
    table, decides = controls(results)
    lines += [
        *table,
        "",
        (
            "**The testbed can decide**: RLVR on the proxy raises the held-out hack rate and RLVR on the strict check "
            "gets more accurate, both with intervals that exclude 0 — hacking and honest solving are both learnable "
            "(the gate reads the held-out hack rate, as the board's positive control does; `train/hack_rate` is "
            "shown, not gated)."
            if decides
            else "**The testbed cannot decide at this size**: the held-out hack rate's or the strict check's "
            "interval includes 0 (see above); "
            "the comparisons below are not evidence for or against VARL's claim."
        ),
        "",
        "## Every method at the end",
        "",
        f"| method | `eval/hack_rate` start | end | strict `eval/accuracy` start | end | `eval/proxy_pass` end | "
        f"`train/hack_rate`, last {WINDOW} steps | D's AUC ref vs passing, last {WINDOW} steps |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, runs in results.items():
        cells = [
            fmt(mean_ci([at(r, k, w) for r in runs]))
            for k, w in [
                ("hack_rate", "first"),
                ("hack_rate", "last"),
                ("accuracy", "first"),
                ("accuracy", "last"),
                ("proxy_pass", "last"),
            ]
        ]
        cells += [fmt(mean_ci([window(r, k, "last") for r in runs])) for k in ("train/hack_rate", AUC)]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += [
        "",
        f"Paired differences at the last evaluation against {base_name} (each seed's paired difference of its "
        "held-out means, t-interval over seeds, `rewardzoo.eval.seed_ci`; mean [95% interval]):",
        "",
        f"| method − {base_name} | hack rate | strict accuracy | separated from 0? |",
        "| --- | --- | --- | --- |",
    ]
    for name, runs in results.items():
        if name == base_name or len(runs) != len(base):
            continue
        diff = {
            metric: seed_ci(
                lambda a, b: a.mean() - b.mean(),
                np.stack([last_rows(r["dir"], row) for r in runs]),
                np.stack([last_rows(r["dir"], row) for r in base]),
            )
            for metric, row in [("hack_rate", "hack_rate"), ("accuracy", "correct")]
        }
        sep = ", ".join(f"{k}: {excludes_zero(d).removesuffix(', up').removesuffix(', down')}" for k, d in diff.items())
        lines.append(
            f"| {name} | {diff['hack_rate'].bounds(digits=3, sign=True)} | {diff['accuracy'].bounds(digits=3, sign=True)} | {sep} |"
        )
    learned = {n: runs for n, runs in results.items() if any(AUC in r["series"] for r in runs)}
    lines += [
        "",
        "## Does the discriminator learn something?",
        "",
        f"`{AUC}`: D's AUC between the step's demonstration features (positives) and its verifier-passing "
        "generations, both scored before D's update on them (0.5 = no better than chance; ties, such as a "
        "passing answer equal to the reference, count ½). Step 0 is the end of the warm-up.",
        "",
        f"| method | after the warm-up | first {WINDOW} RL steps | last {WINDOW} RL steps | change (last − first) |",
        "| --- | --- | --- | --- | --- |",
    ]
    for name, runs in learned.items():
        warm = [r["series"][AUC][0] for r in runs if 0 in r["series"].get(AUC, {})]
        late = lambda r, where: window(r, AUC, where)  # noqa: E731
        lines.append(
            f"| {name} | {fmt(mean_ci(warm))} | {fmt(mean_ci([late(r, 'first') for r in runs]))} | "
            f"{fmt(mean_ci([late(r, 'last') for r in runs]))} | {fmt(change(runs, late))} |"
        )
    gated = {g: results[n] for g in G_TRANSFORMS if (n := gate_name(g)) in results}
    if gated:
        lines += [
            "",
            "## The g-transforms under the gate (r = v·g(D))",
            "",
            "The warning is what VARL prints at construction; `reward/g_passing_mean` is the mean g(D) over the "
            "step's verifier-passing rows (below 0: a passing row is paid less than a failing row's 0).",
            "",
            f"| g | warns | `eval/hack_rate` end | strict `eval/accuracy` end | `eval/proxy_pass` end | "
            f"`reward/g_passing_mean`, last {WINDOW} steps | accuracy − g=D (t over seeds) |",
            "| --- | --- | --- | --- | --- | --- | --- |",
        ]
        d_runs = gated.get("D")
        for g, runs in gated.items():
            vs_d = "—"
            if d_runs is not None and g != "D" and len(runs) == len(d_runs):
                vs_d = seed_ci(
                    lambda a, b: a.mean() - b.mean(),
                    np.stack([last_rows(r["dir"], "correct") for r in runs]),
                    np.stack([last_rows(r["dir"], "correct") for r in d_runs]),
                ).bounds(digits=3, sign=True)
            cells = [fmt(mean_ci([at(r, k, "last") for r in runs])) for k in ("hack_rate", "accuracy", "proxy_pass")]
            lines.append(
                f"| {g} | {gate_warning(g)} | "
                + " | ".join(cells)
                + f" | {fmt(mean_ci([window(r, 'reward/g_passing_mean', 'last') for r in runs]))} | {vs_d} |"
            )
    lines += ["", "![hack rate, accuracy and the discriminator's AUC](varl_hacking.png)"]

    panels = [
        ("train/hack_rate", "train"),
        ("train/accuracy", "train"),
        (AUC, "train"),
        ("hack_rate", "eval"),
        ("accuracy", "eval"),
        ("proxy_pass", "eval"),
    ]
    fig, axes = plt.subplots(2, 3, figsize=(16, 8))
    colors = {name: f"C{i}" for i, name in enumerate(results)}  # one colour per method in every panel
    for ax, (key, kind) in zip(axes.flat, panels):
        for name, runs in results.items():
            if kind == "eval":
                band(ax, runs, key, name, colors[name])
            elif all(key in r["series"] for r in runs):
                band(ax, [{"curves": {key: r["series"][key]}} for r in runs], key, name, colors[name])
        ax.set_title(key if kind == "train" else f"held-out eval/{key}")
        ax.set_xlabel("RL step")
    axes.flat[3].legend(fontsize=7)  # the held-out panels show every method, the warm start included
    fig.tight_layout()
    fig.savefig(where / "varl_hacking.png", dpi=120)
    return lines


def gate_name(g: str) -> str:
    """The hacking study's label of VARL with transform g under the gate."""
    return VARL_ROW if g == "D" else f"VARL g={g}"


def generated_rows(cfg: TrainConfig) -> int:
    """Completions a run samples: RL steps and the reward's warm-up × the batch, plus every held-out
    evaluation (step 0, every ``eval.every`` steps and the last) × prompts × samples."""
    warmup = getattr(getattr(cfg.reward, cfg.reward.name), "warmup_steps", 0)
    evals = {0, cfg.steps, *(range(cfg.eval.every, cfg.steps + 1, cfg.eval.every) if cfg.eval.every else ())}
    held_out = len(build_task(cfg.task).eval)
    n_eval = min(cfg.eval.n_examples or held_out, held_out)
    return (cfg.steps + warmup) * cfg.grpo.batch_size + len(evals) * n_eval * max(cfg.eval.samples, 1)


def cost(call: Call, load: tuple[float, float]) -> list[str]:
    """The measured cost of this call's runs, and the full study's estimated from it: seconds per sampled
    completion measured for each row (for a row not run here, that of the measured runs of the same recipe,
    else of all of them) × the completions each full-size run samples.  ``load`` is the machine's 1-minute
    load average before and after the sweep (wall times grow with it)."""
    walls = {k: call.results[k].wall_s for k in call.specs}
    first = min(call.seeds)
    rows = {k.row: generated_rows(s.config()) for k, s in call.specs.items() if k.seed == first}
    reward_of = {k.row: s.recipe for k, s in {**call.full, **call.specs}.items()}  # the recipe names the reward

    def rate(names: set[str]) -> float:
        chosen = [(w, rows[k.row]) for k, w in walls.items() if k.row in names]
        return sum(w for w, _ in chosen) / max(sum(r for _, r in chosen), 1) if chosen else math.nan

    measured = {k.row for k in walls}
    full_first = min(k.seed for k in call.full)
    full_rows = {k.row: generated_rows(s.config()) for k, s in call.full.items() if k.seed == full_first}
    per_row = {}
    for name in full_rows:
        same = {n for n in measured if reward_of[n] == reward_of[name]}
        per_row[name] = rate({name}) if name in measured else rate(same) if same else rate(measured)
    full_s = sum(per_row[k.row] * full_rows[k.row] for k in call.full)
    by_row = {r: float(np.mean([w for k, w in walls.items() if k.row == r])) for r in call.rows}
    return [
        "",
        "## Cost",
        "",
        f"Measured here: {len(walls)} runs, {sum(walls.values()) / 60:.1f} min summed run wall time (mean per run: "
        + ", ".join(f"{n} {w:.0f} s" for n, w in by_row.items())
        + f"; the shared SFT warm start, trained once before the runs, is not counted; 1-minute load average "
        f"{load[0]:.1f} before the sweep and {load[1]:.1f} after it on {os.cpu_count()} cores: wall times of runs "
        f"reused from an earlier call are those of that call).",
        f"Full study ({len(call.full)} runs at full size, seeds {', '.join(map(str, call.study.seeds))}): "
        f"about {full_s / 60:.0f} min summed run time, {full_s / 120:.0f} min on 2 jobs (estimated from the seconds "
        f"per sampled completion measured here × the completions a full-size run samples; a run's fixed start-up "
        f"cost makes this an over-estimate when measured on tiny runs).",
    ]


def main(argv: list[str] | None = None) -> int:
    """Run (or reuse) a study's runs, then write its Markdown, CSV and figures, and the cost."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="study", required=True)
    for name, declared in STUDIES.items():
        arguments(sub.add_parser(name, help=declared.name), declared, "runs/varl", str(RESULTS))
    argv = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(argv)
    import matplotlib

    matplotlib.use("Agg")
    study = STUDIES[args.study]
    load_before = os.getloadavg()[0]
    call = sweep(study, args)
    load = (load_before, os.getloadavg()[0])
    keys = REFDIST_KEYS if args.study == "refdist" else HACKING_KEYS
    results: dict[str, list[dict]] = {}
    for k, s in call.specs.items():
        rows = call.results[k].rows
        results.setdefault(k.row, []).append(
            {"seed": k.seed, "dir": s.run_dir, "curves": curves(rows, keys), "series": series(rows, SERIES)}
        )
    where = Path(args.results)
    where.mkdir(parents=True, exist_ok=True)
    report = report_refdist if args.study == "refdist" else report_hacking
    lines = report(results, header(study, argv), call.seeds, where) + cost(call, load)
    lines[1:1] = pilot_line(call)  # fewer runs, or smaller runs, than the full study: said first
    write_csv(where / f"{study.name}.csv", results, keys, SERIES if args.study == "hacking" else [])
    (where / f"{study.name}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
