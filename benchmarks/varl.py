"""VARL and the g-transforms on the CPU presets: the reference-distribution study and the hacking study.

    python benchmarks/varl.py refdist              # → benchmarks/results/varl_refdist.{md,csv,png} (+ _collapse.png)
    python benchmarks/varl.py hacking              # → benchmarks/results/varl_hacking.{md,csv,png}
    python benchmarks/varl.py refdist --seeds 0    # a quick single-seed look
    python benchmarks/varl.py hacking --set steps=2 --out /tmp/smoke   # any key=value added to every run

Every run is the library's own command, ``rewardzoo train <recipe> seed=S run_dir=... <overrides>``, run by
:func:`rewardzoo.sweep.run_sweep` (``--jobs`` processes at a time, SFT warm starts first).  Finished runs
under ``--out`` are reused, so a second call only writes the reports.

**refdist** (``algorithms/ral_refdist.yaml`` and its overrides): RAL with each of the four g-transforms and
a co-trained judge, and RAL with a frozen judge (g = D).  For each
g the divergence its frozen-D* gradient descends (rewards/transforms.py) is read from the exact
``eval/…`` metrics at the first and last evaluation; the change is a t-interval over seeds
(:func:`rewardzoo.eval.mean_ci`).  Collapse is read from ``eval/top_answer_share`` and
``eval/answer_entropy`` against p_ref's own values.

**hacking** (``algorithms/*_hackable_multiplication.yaml``): RLVR on the lazy ``contains`` proxy, VARL
(r = v·D) and additive VARL (r = v + D), all with the paper's ``grpo.advantage=dr_grpo`` so that the
reward is the only difference.  Held-out ``eval/hack_rate`` and strict ``eval/accuracy`` at the last
step: per method a t-interval over seeds, and VARL − RLVR as a paired bootstrap over seeds × the
held-out prompts (:func:`rewardzoo.eval.bootstrap_ci` on ``eval_rows.jsonl``).
"""

from __future__ import annotations

import argparse
import csv
import re
import shlex
import sys
from pathlib import Path

import numpy as np

from rewardzoo.eval import Estimate, bootstrap_ci, mean_ci
from rewardzoo.leaderboard import DIVERGENCE_OF
from rewardzoo.sweep import RunSpec, eval_rows, run_sweep

RESULTS = Path(__file__).resolve().parents[1] / "benchmarks" / "results"

LABELS = {"D": "KL(p ‖ m)", "neg_log_one_minus_D": "2·JS(p, π)", "log_D": "2·KL(m ‖ p)", "logit": "KL(π ‖ p)"}
CLAIMED = {g: (DIVERGENCE_OF[g].removeprefix("eval/"), label) for g, label in LABELS.items()}
"""g → (the refdist metric of the divergence its gradient descends, as the leaderboard reads it; its label)."""
STUDIES = {
    "refdist": {
        **{f"RAL g={g}": ("ral_refdist", [f"reward.ral.g={g}"]) for g in CLAIMED},
        "RAL g=D, frozen judge": ("ral_refdist", ["reward.ral.frozen=true"]),
    },
    "hacking": {
        "RLVR": ("rlvr_hackable_multiplication", ["grpo.advantage=dr_grpo"]),
        "VARL (r = v·D)": ("varl_hackable_multiplication", []),
        "VARL additive (r = v + D)": ("varl_hackable_multiplication", ["reward.varl.combine=add"]),
    },
}
REFDIST_KEYS = ["kl_ref_pi", "kl_pi_ref", "js", "le_cam", "kl_ref_mix", "kl_mix_ref", "top_answer_share",
                "answer_entropy", "outside_mass", "ref_top_answer_share", "ref_answer_entropy", "accuracy"]
HACKING_KEYS = ["hack_rate", "accuracy", "proxy_pass", "format_rate"]


def spec(name: str, recipe: str, overrides: list[str], seed: int, out: Path, extra: list[str]) -> RunSpec:
    """One run of a study: the recipe at ``seed`` with the study's overrides, in its own directory."""
    slug = re.sub(r"[^A-Za-z0-9]+", "_", name).strip("_")
    return RunSpec(f"{name}/seed{seed}", f"algorithms/{recipe}.yaml", out / f"{slug}-seed{seed}",
                   (f"seed={seed}", f"sft.cache_dir={out / 'sft-cache'}", "logging.tensorboard=false",
                    "checkpoint_every=0", *overrides, *extra))


def curves(rows: list[dict], keys: list[str]) -> dict[str, dict[int, float]]:
    """{key: {step: value}} of a run's ``eval/<key>`` metrics."""
    evals = [r for r in rows if "eval/accuracy" in r]
    return {k: {r["step"]: r[f"eval/{k}"] for r in evals} for k in keys}


def fmt(e: Estimate, digits: int = 3) -> str:
    """'mean ± half-width' of a 95% interval."""
    return e.format(digits=digits)


def write_csv(path: Path, results: dict[str, list[dict]], keys: list[str]) -> None:
    """One row per method × seed × evaluated step."""
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["method", "seed", "step", *keys])
        for name, runs in results.items():
            for r in runs:
                for step in sorted(r["curves"][keys[0]]):
                    writer.writerow([name, r["seed"], step, *(r["curves"][k][step] for k in keys)])


def band(ax, runs: list[dict], key: str, label: str) -> None:
    """Mean over seeds of ``eval/<key>`` with its 95% t-interval as a shaded band."""
    steps = sorted(runs[0]["curves"][key])
    est = [mean_ci([r["curves"][key][s] for r in runs]) for s in steps]
    line, = ax.plot(steps, [e.mean for e in est], marker="o", ms=2, label=label)
    if len(runs) > 1:
        ax.fill_between(steps, [e.low for e in est], [e.high for e in est], color=line.get_color(), alpha=0.2)


def report_refdist(results: dict[str, list[dict]], command: str, seeds: list[int]) -> list[str]:
    """The refdist tables and figures."""
    import matplotlib.pyplot as plt

    first = lambda r, k: r["curves"][k][min(r["curves"][k])]  # noqa: E731
    last = lambda r, k: r["curves"][k][max(r["curves"][k])]  # noqa: E731
    n_steps = max(max(r["curves"]["js"]) for runs in results.values() for r in runs)
    lines = [f"<!-- command: {command} -->", "",
             f"# The g-transforms on the reference-distribution task (seeds {', '.join(map(str, seeds))})", "",
             f"`refdist`: 16 prompts, 4–8 answers each, p_ref known; tiny policy warm-started to be uniform over "
             f"each answer set; {n_steps} GRPO steps. Divergences are exact (every answer scored with the policy, "
             f"renormalised over the set); mean ± 95% t-interval over seeds (`rewardzoo.eval.mean_ci`).", "",
             "## Each g descends its divergence (co-trained judge)", "",
             "| reward | divergence it claims to descend | start | end | change (end − start) | falls? |",
             "| --- | --- | --- | --- | --- | --- |"]
    for g, (key, label) in CLAIMED.items():
        runs = results[f"RAL g={g}"]
        change = mean_ci([last(r, key) - first(r, key) for r in runs])
        verdict = "yes (CI below 0)" if change.high < 0 else "no (CI includes 0)" if change.low <= 0 else "no: it rises"
        lines.append(f"| RAL g={g} | {label} (`eval/{key}`) | {fmt(mean_ci([first(r, key) for r in runs]))} | "
                     f"{fmt(mean_ci([last(r, key) for r in runs]))} | {fmt(change)} | {verdict} |")
    lines += ["", "All divergences at the end:", "",
              "| reward | KL(p ‖ π) | KL(π ‖ p) | JS | Le Cam | mass outside the set |",
              "| --- | --- | --- | --- | --- | --- |"]
    for name, runs in results.items():
        cells = [fmt(mean_ci([last(r, k) for r in runs]))
                 for k in ["kl_ref_pi", "kl_pi_ref", "js", "le_cam", "outside_mass"]]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    co = results["RAL g=D"]
    target = co[0]["curves"]
    lines += ["", "## Frozen judge: collapse; co-trained: matching", "",
              f"p_ref itself has top-answer share {first(co[0], 'ref_top_answer_share'):.3f} and entropy "
              f"{first(co[0], 'ref_answer_entropy'):.3f} nats (means over prompts); the warm start "
              f"{fmt(mean_ci([first(r, 'top_answer_share') for r in co]))} and "
              f"{fmt(mean_ci([first(r, 'answer_entropy') for r in co]))}.", "",
              "| reward | top-answer share, end | change | answer entropy, end | change | KL(p ‖ π), end |",
              "| --- | --- | --- | --- | --- | --- |"]
    for name, runs in results.items():
        cells = []
        for k in ["top_answer_share", "answer_entropy"]:
            cells += [fmt(mean_ci([last(r, k) for r in runs])), fmt(mean_ci([last(r, k) - first(r, k) for r in runs]))]
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {fmt(mean_ci([last(r, 'kl_ref_pi') for r in runs]))} |")
    fr = results["RAL g=D, frozen judge"]
    for k in ["top_answer_share", "answer_entropy", "kl_ref_pi"]:
        a, b = mean_ci([last(r, k) for r in co]), mean_ci([last(r, k) for r in fr])
        lines.append(f"\n`{k}` at the end, co-trained {fmt(a)} vs frozen {fmt(b)}: "
                     f"{'the intervals separate' if a.separates(b) else 'the intervals overlap (not separated)'}.")
    lines += ["", "![claimed divergences](varl_refdist.png)", "", "![collapse](varl_refdist_collapse.png)"]

    fig, axes = plt.subplots(1, 4, figsize=(16, 3.6))
    for ax, (g, (key, label)) in zip(axes, CLAIMED.items()):
        band(ax, results[f"RAL g={g}"], key, f"RAL g={g}")
        ax.set_title(f"g = {g}: {label}")
        ax.set_xlabel("RL step")
    axes[0].set_ylabel("exact divergence (mean over prompts)")
    fig.tight_layout()
    fig.savefig(RESULTS / "varl_refdist.png", dpi=120)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, key in zip(axes, ["top_answer_share", "answer_entropy"]):
        for name in ["RAL g=D", "RAL g=D, frozen judge"]:
            band(ax, results[name], key, name)
        ax.axhline(target[f"ref_{key}"][0], color="k", ls="--", lw=1, label="p_ref")
        ax.set_title(key)
        ax.set_xlabel("RL step")
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(RESULTS / "varl_refdist_collapse.png", dpi=120)
    return lines


def last_rows(run_dir: Path, key: str) -> np.ndarray:
    """[E] per-example ``key`` of the run's last held-out evaluation."""
    rows = eval_rows(run_dir)
    return np.array(rows[max(rows)][key])


def report_hacking(results: dict[str, list[dict]], command: str, seeds: list[int]) -> list[str]:
    """The hacking tables and figure."""
    import matplotlib.pyplot as plt

    last = lambda r, k: r["curves"][k][max(r["curves"][k])]  # noqa: E731
    first = lambda r, k: r["curves"][k][0]  # noqa: E731
    n_steps = max(max(r["curves"]["accuracy"]) for runs in results.values() for r in runs)
    n_prompts = len(last_rows(results["RLVR"][0]["dir"], "correct"))
    lines = [f"<!-- command: {command} -->", "",
             f"# VARL against reward hacking: the lazy `contains` proxy (seeds {', '.join(map(str, seeds))})", "",
             f"`algorithms/*_hackable_multiplication.yaml`: 3-digit × 1-digit products, tiny policy, SFT warm start "
             f"(`hedge_prob` 0.1), {n_steps} GRPO steps of 32 prompts × 8, `grpo.advantage=dr_grpo` for all three "
             f"(the RLVR recipe's default is `grpo`); the proxy verifier passes any answer that contains the "
             f"product. Held-out metrics on {n_prompts} prompts, two completions each sampled at the rollout "
             f"temperature (avg@2); mean ± 95% t-interval over seeds; step 0 is the shared warm start.", "",
             "| method | `eval/hack_rate` start | end | strict `eval/accuracy` start | end | `eval/proxy_pass` end |",
             "| --- | --- | --- | --- | --- | --- |"]
    for name, runs in results.items():
        columns = [(first, "hack_rate"), (last, "hack_rate"), (first, "accuracy"), (last, "accuracy"),
                   (last, "proxy_pass")]
        cells = [fmt(mean_ci([at(r, k) for r in runs])) for at, k in columns]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += ["", "Paired differences at the last step against RLVR (bootstrap over seeds × held-out prompts, "
              "`rewardzoo.eval.bootstrap_ci`):", "",
              "| method − RLVR | hack rate | strict accuracy | separated from 0? |", "| --- | --- | --- | --- |"]
    base = results["RLVR"]
    for name, runs in results.items():
        if name == "RLVR":
            continue
        diff = {metric: bootstrap_ci(lambda a, b: a.mean() - b.mean(),
                                     np.stack([last_rows(r["dir"], row) for r in runs]),
                                     np.stack([last_rows(r["dir"], row) for r in base]))
                for metric, row in [("hack_rate", "hack_rate"), ("accuracy", "correct")]}
        sep = ", ".join(f"{k}: {'yes' if d.low > 0 or d.high < 0 else 'no'}" for k, d in diff.items())
        lines.append(f"| {name} | {fmt(diff['hack_rate'])} | {fmt(diff['accuracy'])} | {sep} |")
    lines += ["", "![hack rate and accuracy](varl_hacking.png)"]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, key in zip(axes, ["hack_rate", "accuracy"]):
        for name, runs in results.items():
            band(ax, runs, key, name)
        ax.set_title(f"held-out {key}")
        ax.set_xlabel("RL step")
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(RESULTS / "varl_hacking.png", dpi=120)
    return lines


def main() -> int:
    """Run (or reuse) a study's runs, then write its Markdown, CSV and figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("study", choices=sorted(STUDIES))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--out", default="/tmp/rewardzoo-varl")
    parser.add_argument("--jobs", type=int, default=1, help="runs at a time (one thread each)")
    parser.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE", help="overrides added to every run")
    args = parser.parse_args()
    import matplotlib

    matplotlib.use("Agg")
    out = Path(args.out)
    keys = REFDIST_KEYS if args.study == "refdist" else HACKING_KEYS
    specs = {(name, seed): spec(name, recipe, overrides, seed, out, args.set)
             for seed in args.seeds for name, (recipe, overrides) in STUDIES[args.study].items()}
    done = run_sweep(list(specs.values()), jobs=args.jobs, desc=f"varl {args.study}")
    results: dict[str, list[dict]] = {}
    for (name, seed), s in specs.items():
        results.setdefault(name, []).append({"seed": seed, "dir": s.run_dir, "curves": curves(done[s.name].rows, keys)})
    RESULTS.mkdir(parents=True, exist_ok=True)
    command = shlex.join(["python", "benchmarks/varl.py", *sys.argv[1:]])
    report = report_refdist if args.study == "refdist" else report_hacking
    lines = report(results, command, args.seeds)
    write_csv(RESULTS / f"varl_{args.study}.csv", results, keys)
    (RESULTS / f"varl_{args.study}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
