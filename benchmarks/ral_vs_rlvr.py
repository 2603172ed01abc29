"""RAL against RLVR on the multiplication CPU preset: gains with 95% intervals, the RAL/RLVR ratio, two
judge sizes, the frozen judge, and the knobs tried to close the gap.

    python benchmarks/ral_vs_rlvr.py                                     # the full study (5 seeds; the knobs 3)
    python benchmarks/ral_vs_rlvr.py --seeds 0 1 2 --variants RLVR RAL "RAL small judge"
    python benchmarks/ral_vs_rlvr.py --few-seeds                         # every row on every seed
    python benchmarks/ral_vs_rlvr.py --out /tmp/runs --results /tmp/results --set steps=2   # a smoke run

The study is the declaration :data:`STUDY`, run by the path every study shares (:mod:`rewardzoo.board.study`:
``--out`` the run directories, finished runs reused; ``--results`` where the report goes; ``--seeds``,
``--variants``/``--rows``, ``--set``/``--override``, ``--settings``, ``--jobs``).  Every run is the library's
own ``rewardzoo train algorithms/<rlvr|ral>_multiplication.yaml seed=S …`` through
:func:`rewardzoo.sweep.run_sweep`, under ``OUT/<row>[-<hash of --settings and --set>]/seed<s>`` (the row's
directory name: :func:`rewardzoo.board.slug`), at the recipes' settings unless ``--settings`` gives others.
The committed ral_vs_rlvr.md was made from an earlier leaderboard's runs (``RUNS/multiplication/<row>/seed<s>``),
no longer present; the leaderboard now tunes every row on a validation split (docs/leaderboard.md), so this
study, a sweep of knobs at the recipes' settings, does not share runs with it.  All share one SFT warm start
(the recipes' ``sft.seed``, cached in ``OUT/sft-cache``), the step budget and the seeds; the rows of
``--few-seeds`` (default: the knobs tried, :data:`FEW`) run on the first :data:`FEW_SEEDS` seeds only, and say
so.  The judge-size rows start their judge from a warm start of that size on the same demonstrations
(``rewardzoo sft`` with the run's own overrides and ``model.tiny.*`` ones, cached beside the policy's), trained
just before the sweep and only for the rows it runs.

For each variant: the held-out gain over the warm start (mean and 95% t-interval over seeds), and the
ratio of its gain to RLVR's on each seed with the t-interval over seeds (:func:`rewardzoo.eval.seed_ci`),
with the verdict on the RAL paper's headline — RAL
reaches at least half of RLVR's gain: *reached* when the interval lies above ½, *excluded* when it
lies below, else *undecided*.  Writes ``RESULTS/ral_vs_rlvr.{md,csv,png}``; the Markdown starts with the
command (and a PILOT line when the call is smaller than the study).
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from rewardzoo.board import Entry  # noqa: E402
from rewardzoo.board.study import RunKey, Study, arguments, header, pilot_line, sweep  # noqa: E402
from rewardzoo.eval import gain_ratio, mean_ci, seed_ci  # noqa: E402
from rewardzoo.sweep import RunSpec, eval_rows  # noqa: E402

RAL = "algorithms/ral_multiplication.yaml"
JUDGE_SIZES = {  # judge size -> tiny-model overrides of its own warm start (the policy: hidden 128, 4 layers)
    "small": ("model.tiny.hidden_size=64", "model.tiny.intermediate_size=192", "model.tiny.num_layers=2"),
    "large": (
        "model.tiny.hidden_size=256",
        "model.tiny.intermediate_size=768",
        "model.tiny.num_layers=4",
        "model.tiny.num_heads=8",
        "model.tiny.num_kv_heads=4",
    ),
}
VARIANTS: dict[str, tuple[str, tuple[str, ...]]] = {
    "RLVR": ("algorithms/rlvr_multiplication.yaml", ()),
    "RAL": (RAL, ()),
    "RAL frozen judge": (RAL, ("reward.ral.frozen=true",)),
    "RAL small judge": (RAL, ("judge=small",)),
    "RAL large judge": (RAL, ("judge=large",)),
    "RAL judge lr 3e-3": (RAL, ("reward.ral.judge.lr=3e-3",)),
    "RAL 60 warm-up rounds": (RAL, ("reward.ral.warmup_steps=60",)),
    "RAL replay + Polyak": (RAL, ("reward.ral.replay_fraction=0.5", "reward.ral.polyak=true")),
    "RAL judge steps 4": (RAL, ("reward.ral.judge_steps=4",)),
    "RAL KL beta 0.04": (RAL, ("grpo.beta=0.04",)),
    "RAL dr_grpo": (RAL, ("grpo.advantage=dr_grpo",)),
    "RLVR policy lr 2.5e-4": ("algorithms/rlvr_multiplication.yaml", ("grpo.lr=2.5e-4",)),
    "RAL policy lr 2.5e-4": (RAL, ("grpo.lr=2.5e-4",)),
}
"""label -> (recipe, overrides); ``judge=SIZE`` stands for the judge warm start of that size."""
BASELINE = {"RAL policy lr 2.5e-4": "RLVR policy lr 2.5e-4"}
"""The RLVR run a variant's ratio is taken against when it is not the recipe's RLVR (a change to the shared
``grpo`` section is compared with RLVR under the same change); every other variant: ``RLVR``."""
WHAT = {
    "RAL": "the recipe: policy-sized judge initialised from the SFT warm start, lr 1e-3, 20 warm-up rounds",
    "RAL frozen judge": "judge trained in warm-up only (002 §4.2 baseline)",
    "RAL small judge": "judge hidden 64, 2 layers (own warm start on the same demonstrations)",
    "RAL large judge": "judge hidden 256, 4 layers (own warm start on the same demonstrations)",
    "RAL judge lr 3e-3": "judge learning rate ×3",
    "RAL 60 warm-up rounds": "judge warm-up 60 rounds instead of 20",
    "RAL replay + Polyak": "half of each judge batch replayed from past generations; Polyak reward judge (τ 0.1)",
    "RAL judge steps 4": "4 judge optimiser steps per RL step (and per warm-up round) instead of 1",
    "RAL KL beta 0.04": "KL penalty to the warm start, β = 0.04 (002 uses one; the RLVR twin has β = 0)",
    "RAL dr_grpo": "advantages without the group-std normalisation (VARL's recipe setting), so near-tied judge "
    "scores give small updates",
    "RAL policy lr 2.5e-4": "policy learning rate ÷4, so the policy moves no faster than the judge can follow; ratio "
    "to RLVR at the same learning rate",
    "RLVR policy lr 2.5e-4": "the exact verifier at policy learning rate ÷4 (the baseline of the row below); ratio to "
    "RLVR at 1e-3",
}
FEW = (
    "RAL judge lr 3e-3",
    "RAL 60 warm-up rounds",
    "RAL replay + Polyak",
    "RAL judge steps 4",
    "RAL KL beta 0.04",
    "RAL dr_grpo",
    "RAL policy lr 2.5e-4",
    "RLVR policy lr 2.5e-4",
    "RAL large judge",
)
"""The rows run on the first :data:`FEW_SEEDS` seeds only (the knobs tried; to save time), unless ``--few-seeds``
names others."""
FEW_SEEDS = 3
JUDGE = "judge="
"""The placeholder override ``judge=SIZE``: the judge starts from the warm start of that size (:data:`JUDGE_SIZES`)."""


def judge_warm_start(spec: RunSpec, size: str) -> str:
    """The directory of a judge-sized SFT warm start on the policy's demonstrations: ``rewardzoo sft`` of the run
    ``spec`` (its recipe, SFT settings and cache) at the judge's size, :data:`JUDGE_SIZES` (cached by the SFT
    cache: only the first call trains)."""
    sized = replace(spec, overrides=(*spec.overrides, *JUDGE_SIZES[size]))
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    out = subprocess.run(sized.command("sft"), env=env, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"the {size} judge's warm start failed:\n{out.stderr[-3000:]}")
    return out.stdout.strip().splitlines()[-1]


def with_judge(spec: RunSpec) -> RunSpec:
    """A run with its ``judge=SIZE`` placeholder replaced by ``reward.ral.judge.init_from=`` the judge warm start
    of that size for the rest of the run (:func:`judge_warm_start`); a run without one, as it is."""
    rest = replace(spec, overrides=tuple(o for o in spec.overrides if not o.startswith(JUDGE)))
    return replace(
        spec,
        overrides=tuple(
            f"reward.ral.judge.init_from={judge_warm_start(rest, o.removeprefix(JUDGE))}" if o.startswith(JUDGE) else o
            for o in spec.overrides
        ),
    )


STUDY = Study(
    name="ral_vs_rlvr",
    script="benchmarks/ral_vs_rlvr.py",
    task="multiplication",
    rows=tuple(Entry("multiplication", label, recipe, overrides) for label, (recipe, overrides) in VARIANTS.items()),
    seeds=(0, 1, 2, 3, 4),
    few=dict.fromkeys(FEW, FEW_SEEDS),
    resolve=with_judge,
)
"""The study, declared (:class:`rewardzoo.board.study.Study`): every variant on five seeds (the knobs of
:data:`FEW` on three), one shared SFT warm start; a judge-size row's placeholder resolved just before the sweep
(:func:`with_judge`)."""


def baselines(rows: list[str] | None = None) -> dict[str, str]:
    """Each row but RLVR → the row its ratio is taken against among ``rows`` (default: the study's): its
    :data:`BASELINE` where that runs too, else RLVR."""
    rows = STUDY.labels if rows is None else rows
    return {r: BASELINE[r] if BASELINE.get(r) in rows else "RLVR" for r in rows if r != "RLVR"}


def correct(run_dir: Path, which: str) -> list[float]:
    """Per-example held-out correctness at the first or last evaluation of a run."""
    rows = eval_rows(run_dir)
    return rows[min(rows) if which == "first" else max(rows)]["correct"]


def verdict(ratio) -> str:
    """002's headline (RAL ≥ ½ of RLVR's gain) against the ratio's interval."""
    if not (math.isfinite(ratio.low) and math.isfinite(ratio.high)):
        return "undecided"
    return "reached" if ratio.low > 0.5 else "excluded (CI below ½)" if ratio.high < 0.5 else "undecided (CI spans ½)"


def main(argv: list[str] | None = None) -> int:
    """Run (or reuse) every variant × seed, then write the table, CSV and plot."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    arguments(parser, STUDY, "runs/ral_vs_rlvr", "benchmarks/results")
    parser.add_argument(
        "--few-seeds",
        nargs="*",
        default=list(FEW),
        metavar="ROW",
        help=f"rows run on the first {FEW_SEEDS} seeds only, marked (default: the knobs tried, to save time; "
        "none given: every row on every seed)",
    )
    args = parser.parse_args(argv)
    if args.rows and "RLVR" not in args.rows:
        parser.error("--variants must include RLVR (every ratio is to its gain)")
    if short := sorted({b for r, b in baselines(args.rows).items() if b in args.few_seeds and r not in args.few_seeds}):
        parser.error(
            f"--few-seeds names {short}, the baseline of rows run on more seeds (each ratio is taken seed by "
            "seed): name those rows too, or leave it out"
        )
    try:
        study = replace(STUDY, few=dict.fromkeys(args.few_seeds, FEW_SEEDS))
    except ValueError as err:
        parser.error(f"--few-seeds: {err}")
    call = sweep(study, args)
    result = lambda name, seed: call.results[RunKey(None, name, seed)]  # noqa: E731

    def tables(name: str, seeds: list[int], which: str) -> np.ndarray:  # [S, E]
        return np.array([correct(result(name, s).spec.run_dir, which) for s in seeds], dtype=float)

    lines = [
        header(STUDY, argv),
        *pilot_line(call),
        "",
        "# RAL vs RLVR on multiplication",
        "",
        "Held-out accuracy (avg@2 at T = 2, 1,000 examples) on the multiplication CPU preset; every run starts "
        "from one shared SFT warm start. Gains over it in points, mean ± half-width of the 95% t-interval over "
        "seeds. Ratio = the variant's gain / RLVR's on each seed, mean [95% t-interval over seeds] (the seed is "
        "the unit). The RAL paper's headline asks for a ratio of at least ½.",
        "",
        "| variant | what changes | seeds | final accuracy | gain (t-CI) | ratio to RLVR | "
        "RAL ≥ ½ RLVR? | run (s, median) |",
        "| --- | --- | ---: | ---: | ---: | ---: | --- | ---: |",
    ]
    csv_rows, curves = [], {}
    for name in call.rows:
        seeds = [k.seed for k in call.keys(name)]
        start, end = tables(name, seeds, "first"), tables(name, seeds, "last")
        gains = end.mean(axis=1) - start.mean(axis=1)
        ratio_cell, word = "—", "—"
        if name != "RLVR":
            base = baselines(call.rows)[name]
            r_start, r_end = tables(base, seeds, "first"), tables(base, seeds, "last")
            ratio = seed_ci(gain_ratio, r_start, r_end, start, end)
            ratio_cell, word = ratio.bounds(digits=2), verdict(ratio) if name.startswith("RAL") else "—"
        walls = [result(name, s).wall_s for s in seeds]
        label = name if len(seeds) == len(call.seeds) else f"{name} ({len(seeds)} seeds)"
        lines.append(
            f"| {label} | {WHAT.get(name, 'exact verifier (the baseline)')} | {len(seeds)} | "
            f"{mean_ci(end.mean(axis=1)).format(scale=100)} | {mean_ci(gains).format(scale=100, sign=True)} | "
            f"{ratio_cell} | {word} | {np.median(walls):.0f} |"
        )
        for s, g in zip(seeds, gains):
            csv_rows.append([name, s, float(start[seeds.index(s)].mean()), float(end[seeds.index(s)].mean()), float(g)])
        curves[name] = [
            {r["step"]: r["eval/accuracy"] for r in result(name, s).rows if "eval/accuracy" in r} for s in seeds
        ]
    lines += [
        "",
        "Gain over the warm start by seed (points): "
        + "; ".join(
            f"{name}: " + ", ".join(f"{100 * g:+.1f}" for n, _, _, _, g in csv_rows if n == name) for name in call.rows
        ),
        "",
        "![held-out accuracy](ral_vs_rlvr.png)",
        "",
    ]
    where = Path(args.results)
    where.mkdir(parents=True, exist_ok=True)
    (where / "ral_vs_rlvr.md").write_text("\n".join(lines))
    with open(where / "ral_vs_rlvr.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["variant", "seed", "warm_start_accuracy", "final_accuracy", "gain"])
        w.writerows(csv_rows)
    fig, ax = plt.subplots(figsize=(8, 4.8))
    for name, runs in curves.items():
        steps = sorted(set.intersection(*(set(c) for c in runs)))
        band = [mean_ci([c[t] for c in runs]) for t in steps]
        ax.plot(steps, [100 * e.mean for e in band], marker="o", ms=3, label=f"{name} ({len(runs)} seeds)")
        ax.fill_between(steps, [100 * e.low for e in band], [100 * e.high for e in band], alpha=0.12)
    ax.set_xlabel("RL step")
    ax.set_ylabel("held-out accuracy (%)")
    ax.set_title("multiplication: mean and 95% band over seeds")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(where / "ral_vs_rlvr.png", dpi=120)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
