"""RAL against RLVR on the multiplication CPU preset, several seeds, judges of several sizes.

    python benchmarks/ral_vs_rlvr.py                      # 3 seeds, 2 runs at a time
    python benchmarks/ral_vs_rlvr.py --seeds 0 --jobs 1   # a quick single-seed look
    python benchmarks/ral_vs_rlvr.py --variants RAL "RAL large judge"

Every run is the library's own command, ``rewardzoo train <recipe> seed=S run_dir=...``: RLVR
(``algorithms/rlvr_multiplication.yaml``), RAL with the recipe's judge (policy-sized, initialised
from the SFT warm start), RAL with a smaller and a larger judge (each initialised from a warm start
of its own size on the same demonstrations — ``rewardzoo sft`` with ``model.tiny.*`` overrides),
and the frozen-judge baseline.  The SFT row is the warm start's held-out accuracy (every run's
step-0 evaluation).  Writes ``benchmarks/results/ral_vs_rlvr.{md,csv,png}``; the Markdown starts
with the command.  Finished runs under ``--out`` are reused, so adding a variant or a seed runs only
what is new.
"""

from __future__ import annotations

import argparse
import csv
import os
import shlex
import statistics
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from omegaconf import OmegaConf

from rewardzoo.core.logger import read_metrics

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"
JUDGE_SIZES = {  # name -> tiny-model overrides of a judge's own warm start
    "small": ["model.tiny.hidden_size=64", "model.tiny.intermediate_size=192", "model.tiny.num_layers=2"],
    "large": ["model.tiny.hidden_size=256", "model.tiny.intermediate_size=768", "model.tiny.num_layers=4",
              "model.tiny.num_heads=8", "model.tiny.num_kv_heads=4"],
}


def rewardzoo(*args: str) -> subprocess.CompletedProcess:
    """Run the rewardzoo CLI (one thread: several runs share the cores)."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
    out = subprocess.run([sys.executable, "-m", "rewardzoo.cli", *args], cwd=REPO, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"rewardzoo {' '.join(args)} failed:\n{out.stderr[-3000:]}")
    return out


def judge_warm_start(size: str, seed: int, cache: str) -> str:
    """The directory of a judge-sized warm start on the same demonstrations (cached)."""
    out = rewardzoo("sft", "algorithms/ral_multiplication.yaml", f"seed={seed}", f"sft.cache_dir={cache}",
                    "logging.progress=false", *JUDGE_SIZES[size])
    return out.stdout.strip().splitlines()[-1]


def run(name: str, seed: int, out_dir: Path, cache: str) -> dict:
    """One training run (reused when ``run_dir`` already holds a finished one); returns its eval/accuracy curve."""
    run_dir = out_dir / f"{name}-seed{seed}"
    if finished(run_dir):
        return {"name": name, "seed": seed, "curve": curve_of(run_dir)}
    common = [f"seed={seed}", f"run_dir={run_dir}", f"sft.cache_dir={cache}", "logging.progress=false",
              "logging.tensorboard=false", "checkpoint_every=0", "overwrite=true"]  # an unfinished run starts over
    if name == "RLVR":
        rewardzoo("train", "algorithms/rlvr_multiplication.yaml", *common)
    elif name == "RAL":
        rewardzoo("train", "algorithms/ral_multiplication.yaml", *common)
    elif name == "RAL frozen judge":
        rewardzoo("train", "algorithms/ral_multiplication.yaml", *common, "reward.ral.frozen=true")
    else:
        size = name.split()[1]
        judge = judge_warm_start(size, seed, cache)
        rewardzoo("train", "algorithms/ral_multiplication.yaml", *common, f"reward.ral.judge.init_from={judge}")
    return {"name": name, "seed": seed, "curve": curve_of(run_dir)}


def curve_of(run_dir: Path) -> dict[int, float]:
    """{step: eval/accuracy} of a run."""
    return {r["step"]: r["eval/accuracy"] for r in read_metrics(run_dir / "metrics.jsonl") if "eval/accuracy" in r}


def finished(run_dir: Path) -> bool:
    """True when ``run_dir`` holds a run that reached its configured last step."""
    try:
        return max(curve_of(run_dir)) == OmegaConf.load(run_dir / "config.yaml").steps
    except (OSError, ValueError):  # no run there yet, or one that never evaluated
        return False


def gain(result: dict, step: int) -> float:
    """Held-out accuracy at ``step`` minus the warm start's (step 0)."""
    return result["curve"][step] - result["curve"][0]


def mean_std(values: list[float]) -> str:
    """'mean ± std' in percent."""
    m = 100 * statistics.mean(values)
    s = 100 * statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{m:.1f} ± {s:.1f}"


def main() -> int:
    """Run every variant × seed, then write the table, CSV and plot."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--variants", nargs="+",
                        default=["RLVR", "RAL", "RAL small judge", "RAL large judge", "RAL frozen judge"],
                        help="RLVR, RAL, 'RAL small judge', 'RAL large judge', 'RAL frozen judge'")
    parser.add_argument("--first-seed-only", nargs="*", default=["RAL frozen judge", "RAL large judge"],
                        help="variants run at the first seed only (to save time); marked in the table")
    parser.add_argument("--out", default="/tmp/rewardzoo-ral-vs-rlvr")
    args = parser.parse_args()
    out_dir, cache = Path(args.out), str(Path(args.out) / "sft-cache")
    for seed in args.seeds:  # build the shared warm starts once, before runs race for them
        rewardzoo("sft", "algorithms/rlvr_multiplication.yaml", f"seed={seed}", f"sft.cache_dir={cache}", "logging.progress=false")
    jobs = [(v, s) for s in args.seeds for v in args.variants if s == args.seeds[0] or v not in args.first_seed_only]
    cost = {"RAL large judge": 0, "RAL": 1, "RAL frozen judge": 1, "RAL small judge": 2, "RLVR": 3}
    jobs.sort(key=lambda job: cost.get(job[0], 0))  # the longest runs first, the short RLVR runs fill the gaps
    with ThreadPoolExecutor(args.jobs) as pool:
        results = list(pool.map(lambda job: run(job[0], job[1], out_dir, cache), jobs))

    RESULTS.mkdir(parents=True, exist_ok=True)
    command = shlex.join(["python", "benchmarks/ral_vs_rlvr.py", *sys.argv[1:]])
    last = max(max(r["curve"]) for r in results)
    lines = [f"<!-- command: {command.strip()} -->", "",
             f"Held-out accuracy (%) on the multiplication recipes' task, mean ± std over seeds "
             f"{', '.join(map(str, args.seeds))}; step 0 is the SFT warm start.", "",
             "| method | step 0 (SFT) | step 100 | final (step %d) | gain over SFT | mean of steps 100–%d − SFT |" % (last, last),
             "|---|---|---|---|---|---|"]
    with open(RESULTS / "ral_vs_rlvr.csv", "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["method", "seed", "step", "eval_accuracy"])
        for r in results:
            for step, acc in sorted(r["curve"].items()):
                writer.writerow([r["name"], r["seed"], step, acc])
    gains = {}
    for name in args.variants:
        runs = [r for r in results if r["name"] == name]
        start = [r["curve"][0] for r in runs]
        mid = [r["curve"].get(100, float("nan")) for r in runs]
        end = [r["curve"][last] for r in runs]
        gains[name] = [gain(r, last) for r in runs]
        late = [statistics.mean(a for step, a in r["curve"].items() if step >= 100) - r["curve"][0] for r in runs]
        label = f"{name} (seed {runs[0]['seed']} only)" if len(runs) == 1 and len(args.seeds) > 1 else name
        lines.append(f"| {label} | {mean_std(start)} | {mean_std(mid)} | {mean_std(end)} | {mean_std(gains[name])} | {mean_std(late)} |")
    sft = [r["curve"][0] for r in results if r["name"] == args.variants[0]]
    lines.append(f"| SFT only | {mean_std(sft)} | — | {mean_std(sft)} | 0.0 | 0.0 |")
    if "RLVR" in gains and "RAL" in gains:
        ratio = statistics.mean(gains["RAL"]) / statistics.mean(gains["RLVR"]) if statistics.mean(gains["RLVR"]) else float("nan")
        lines += ["", f"RAL's mean gain / RLVR's mean gain: {ratio:.2f} (the paper's headline asks for at least 0.5)"]
    for size in ("small", "large"):
        if f"RAL {size} judge" in gains and "RAL" in gains:  # compared on the seeds both were run with
            seeds = sorted({r["seed"] for r in results if r["name"] == f"RAL {size} judge"})
            common = {name: 100 * statistics.mean(gain(r, last) for r in results
                                                  if r["name"] == name and r["seed"] in seeds)
                      for name in (f"RAL {size} judge", "RAL")}
            lines.append(f"\nSeeds {', '.join(map(str, seeds))}: mean gain with the {size} judge "
                         f"{common[f'RAL {size} judge']:+.1f} points, with the policy-sized judge {common['RAL']:+.1f}.")
    lines += ["", "Gain over SFT (points) by seed:", "", "| method | " + " | ".join(f"seed {s}" for s in args.seeds) + " |",
              "|---|" + "---|" * len(args.seeds)]
    for name in args.variants:
        by_seed = {r["seed"]: 100 * gain(r, last) for r in results if r["name"] == name}
        lines.append(f"| {name} | " + " | ".join(f"{by_seed[s]:+.1f}" if s in by_seed else "—" for s in args.seeds) + " |")
    lines += ["", "![held-out accuracy](ral_vs_rlvr.png)"]
    (RESULTS / "ral_vs_rlvr.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name in args.variants:
        runs = [r["curve"] for r in results if r["name"] == name]
        steps = sorted(runs[0])
        label = name if len(runs) > 1 or len(args.seeds) == 1 else f"{name} (seed {args.seeds[0]} only)"
        ax.plot(steps, [100 * statistics.mean(c[s] for c in runs) for s in steps], marker="o", ms=3, label=label)
    ax.set_xlabel("RL step")
    ax.set_ylabel("held-out accuracy (%)")
    ax.set_title("multiplication, mean over seeds")
    ax.legend()
    fig.tight_layout()
    fig.savefig(RESULTS / "ral_vs_rlvr.png", dpi=120)
    return 0


if __name__ == "__main__":
    sys.exit(main())
