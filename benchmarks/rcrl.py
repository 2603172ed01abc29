"""RcRL against its four baselines of seed 004 Table 3 on the rubric-writing CPU preset.

    python benchmarks/rcrl.py                       # 3 seeds, the five recipes, one budget
    python benchmarks/rcrl.py --seeds 0 --steps 20  # a quick look
    python benchmarks/rcrl.py --runs runs/leaderboard   # the leaderboard's rubric_writing runs, reused
    python benchmarks/rcrl.py --name rcrl_unbiased --variants RcRL "Absolute RaR" \
        --set reward.rcrl.judge.rule.length_bias=0 reward.rcrl.judge.rule.repetition_blind=false \
              reward.rcrl.judge.rule.non_english_blind=false          # a control: the same judge without its biases

Every run is the library's own command, ``rewardzoo train algorithms/<variant>_rubric_writing.yaml
seed=S``; the five recipes share task, model, warm start (one per seed), judge and step budget and
differ only in ``reward.rcrl.scoring`` / ``schedule``.  The held-out judge is the task's unbiased
oracle (mean of the 13 checks; it prefers the higher-quality completion, ties count ½): each run's
per-example rows (``eval_rows.jsonl``) at step s are compared with the same run's step-0 rows —
the base model, the SFT warm start — on every held-out prompt.

Reported, each with a 95% interval: win rate against the base (paired bootstrap over seeds ×
held-out prompts), Bradley–Terry Elo with the base at 1000 (one joint fit of the base and the five
final policies on all pairs of their oracle verdicts, same bootstrap), the ratio of final to initial
token entropy (``policy/entropy``, last 10 over first 10 steps; t-interval over seeds) and the
held-out bias-exploitation metrics (words, over-length share, word repetition, non-English rate),
plus the paired differences RcRL − RaR that the seed's three claims are about.  Writes
``benchmarks/results/<name>.{md,csv,png}`` (``--name``, default ``rcrl``); the Markdown starts with
the command.  Finished runs under ``--out`` are reused (``--set`` overrides go into the run
directory's name).
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import os
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
from omegaconf import OmegaConf

from rewardzoo.core.logger import read_metrics
from rewardzoo.eval import Estimate, bootstrap_ci, elo, entropy_ratio, mean_ci, preferences
from rewardzoo.leaderboard import slug
from rewardzoo.sweep import eval_rows as sweep_eval_rows

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"
VARIANTS = {  # label -> recipe (004 Table 3 names)
    "RcRL": "rcrl_rubric_writing",
    "Absolute RcRL": "absolute_rcrl_rubric_writing",
    "Absolute RaR": "rar_rubric_writing",
    "Pairwise RaR": "pairwise_rar_rubric_writing",
    "Dropout Absolute RaR": "dropout_absolute_rar_rubric_writing",
}
BIAS_METRICS = ("words", "over_length", "repetition", "non_english_rate")
ENTROPY_WINDOW = 10


def rewardzoo(*args: str) -> None:
    """Run the rewardzoo CLI (one thread)."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
    out = subprocess.run([sys.executable, "-m", "rewardzoo.cli", *args], cwd=REPO, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"rewardzoo {' '.join(args)} failed:\n{out.stderr[-3000:]}")


def finished(run_dir: Path) -> bool:
    """True when ``run_dir`` holds a run that evaluated at its configured last step."""
    try:
        rows = read_metrics(run_dir / "metrics.jsonl")
        return any("eval/quality" in r and r["step"] == OmegaConf.load(run_dir / "config.yaml").steps for r in rows)
    except (OSError, ValueError):
        return False


def run(label: str, seed: int, out: Path, extra: list[str], runs: Path | None = None) -> Path:
    """One training run (reused when finished); returns its directory.  With ``runs`` (a leaderboard's run
    directory) the run is the leaderboard's ``runs/rubric_writing/<slug>/seed<s>``, reused when finished."""
    run_dir = runs / "rubric_writing" / slug(label) / f"seed{seed}" if runs else out / f"{VARIANTS[label]}-seed{seed}"
    if not finished(run_dir):
        rewardzoo("train", f"algorithms/{VARIANTS[label]}.yaml", f"seed={seed}", f"run_dir={run_dir}",
                  f"sft.cache_dir={out / 'sft-cache'}", "logging.progress=false", "logging.tensorboard=false",
                  "overwrite=true", *extra)  # an unfinished run is started again
    return run_dir


def eval_rows(run_dir: Path) -> dict[int, dict[str, np.ndarray]]:
    """{step: {row metric: [E]}} of a run's held-out evaluations, as arrays."""
    return {step: {k: np.asarray(v) for k, v in rows.items()} for step, rows in sweep_eval_rows(run_dir).items()}


def summarise(run_dir: Path) -> dict:
    """What the tables need of one run."""
    rows = eval_rows(run_dir)
    metrics = read_metrics(run_dir / "metrics.jsonl")
    entropy = [r["policy/entropy"] for r in metrics if "policy/entropy" in r]
    base, last = rows[0], rows[max(rows)]
    return {"rows": rows, "base": base, "final": last, "entropy": entropy,
            "entropy_ratio": entropy_ratio(entropy, ENTROPY_WINDOW),
            "win_curve": {s: float(preferences(r["quality"], base["quality"]).mean()) for s, r in sorted(rows.items())},
            "reward": [r["reward/mean"] for r in metrics if "reward/mean" in r]}


def joint_elo(*quality: np.ndarray) -> np.ndarray:
    """Elo of every player (player 0 = the base, at 1000) from all pairs of oracle verdicts on [S, E] quality tables."""
    n = len(quality)
    wins = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            if i != j:
                wins[i, j] = preferences(quality[i].ravel(), quality[j].ravel()).sum()
    return elo(wins, anchor=0, alpha=0.01)


def main(argv: list[str] | None = None) -> int:
    """Run every variant × seed, then write the tables, CSV and plot."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    parser.add_argument("--steps", type=int, default=0, help="RL steps (0 = the recipes' own)")
    parser.add_argument("--set", nargs="*", default=[], help="key=value overrides for every run")
    parser.add_argument("--name", default="rcrl", help="stem of the results files")
    parser.add_argument("--out", default="/tmp/rewardzoo-rcrl")
    parser.add_argument("--results", default=str(RESULTS), help="where the table, CSV and plot go")
    parser.add_argument("--runs", type=Path, help="a leaderboard's run directory (rewardzoo leaderboard --runs): "
                                                  "its rubric_writing runs are reused (no --set / --steps then)")
    args = parser.parse_args(argv)
    if args.runs and (args.set or args.steps):
        parser.error("--runs reads the leaderboard's runs as they are; drop --set / --steps, or drop --runs")
    tag = "-".join(s.rpartition(".")[2] for s in args.set) or "recipe"
    out = Path(args.out) / (tag if len(tag) <= 80 else hashlib.sha256(tag.encode()).hexdigest()[:16])
    extra = ([f"steps={args.steps}"] if args.steps else []) + args.set
    runs = {(v, s): summarise(run(v, s, out, extra, args.runs)) for s in args.seeds for v in args.variants}
    labels, seeds = args.variants, args.seeds

    def table(label: str, key: str, where: str = "final") -> np.ndarray:  # [S, E]
        return np.stack([runs[(label, s)][where][key] for s in seeds])

    base_q = table(labels[0], "quality", "base")
    for label in labels:  # every variant of a seed starts from the same warm start, so the base rows agree
        assert np.array_equal(table(label, "quality", "base"), base_q), f"{label} has another base than {labels[0]}"
    prefs = {v: preferences(table(v, "quality"), base_q) for v in labels}  # [S, E] each
    win = {v: bootstrap_ci(lambda p: p.mean(), prefs[v]) for v in labels}
    elos = {v: bootstrap_ci(lambda *q, k=k: joint_elo(*q)[k + 1], base_q, *(table(u, "quality") for u in labels), n_boot=500)
            for k, v in enumerate(labels)}
    ratio = {v: mean_ci([runs[(v, s)]["entropy_ratio"] for s in seeds]) for v in labels}
    bias = {(v, m): bootstrap_ci(lambda x: x.mean(), table(v, m)) for v in labels for m in BIAS_METRICS}
    base_bias = {m: bootstrap_ci(lambda x: x.mean(), table(labels[0], m, "base")) for m in BIAS_METRICS}
    quality = {v: bootstrap_ci(lambda x: x.mean(), table(v, "quality")) for v in labels}

    command = shlex.join(["python", "benchmarks/rcrl.py", *(sys.argv[1:] if argv is None else argv)])
    results = Path(args.results)
    steps = max(runs[(labels[0], seeds[0])]["rows"])
    lines = [f"<!-- command: {command} -->", "",
             f"Rubric-writing CPU preset, {len(seeds)} seeds ({', '.join(map(str, seeds))}), {steps} RL steps each, "
             f"{base_q.shape[1]} held-out prompts, greedy completions judged by the unbiased oracle.  Mean ± half-width "
             "of the 95% interval (paired bootstrap over seeds × prompts; entropy ratio: t-interval over seeds).", "",
             "| method | win rate vs base (%) | Elo (base 1000) | oracle quality | entropy ratio (final/initial) | words "
             "| over-length (%) | word repetition (%) | non-English (%) |", "|---" * 9 + "|",
             f"| base (SFT warm start) | — | 1000 | {bootstrap_ci(lambda x: x.mean(), base_q).format(digits=3)} | — | "
             + " | ".join(base_bias[m].format(scale=1 if m == "words" else 100, digits=2 if m == "words" else 1)
                          for m in BIAS_METRICS) + " |"]
    for v in labels:
        lines.append(f"| {v} | {win[v].format(scale=100)} | {elos[v].format(digits=0)} | {quality[v].format(digits=3)} | "
                     f"{ratio[v].format(digits=2)} | "
                     + " | ".join(bias[(v, m)].format(scale=1 if m == "words" else 100, digits=2 if m == "words" else 1)
                                  for m in BIAS_METRICS) + " |")
    if "RcRL" in labels and "Absolute RaR" in labels:
        diff = lambda a, b: a.mean() - b.mean()
        d_win = bootstrap_ci(diff, prefs["RcRL"], prefs["Absolute RaR"])
        d_ratio = mean_ci([runs[("RcRL", s)]["entropy_ratio"] - runs[("Absolute RaR", s)]["entropy_ratio"] for s in seeds])
        d_bias = {m: bootstrap_ci(diff, table("Absolute RaR", m), table("RcRL", m)) for m in BIAS_METRICS}

        def verdict(e: Estimate, scale: float = 1.0, digits: int = 1) -> str:
            """'mean [low, high] → reproduced / the opposite holds / undecided' for a difference expected > 0."""
            shown = f"{e.mean * scale:+.{digits}f} [{e.low * scale:+.{digits}f}, {e.high * scale:+.{digits}f}]"
            if e.low > 0:
                return f"{shown} → reproduced"
            if e.high < 0:
                return f"{shown} → the opposite holds"
            return f"{shown} → undecided (the interval contains 0)"

        lines += ["", "The seed's claims, RcRL against Absolute RaR: each difference with its 95% interval [low, high] "
                  "(paired bootstrap over seeds × prompts; entropy: t over seeds) and the verdict:", "",
                  f"1. RcRL beats RaR — win rate RcRL − RaR (points): {verdict(d_win, 100)}.",
                  f"2. RcRL's entropy ratio stays near 1 while RaR's falls — RcRL {ratio['RcRL'].format(digits=2)}, "
                  f"RaR {ratio['Absolute RaR'].format(digits=2)}; RcRL − RaR: {verdict(d_ratio, digits=2)}.",
                  "3. RaR exploits the judge's biases more — RaR − RcRL on held-out outputs (the judge prefers longer "
                  "outputs and does not see repeated or non-English words): "
                  + "; ".join(f"{m} {verdict(d_bias[m], 1 if m == 'words' else 100, 2 if m == 'words' else 1)}"
                              for m in BIAS_METRICS) + "."]
    lines += ["", f"![entropy and win rate over steps]({args.name}.png)"]
    results.mkdir(parents=True, exist_ok=True)
    (results / f"{args.name}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))

    with open(results / f"{args.name}.csv", "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["method", "seed", "step", "win_rate_vs_base", "quality", *BIAS_METRICS])
        for (v, s), r in sorted(runs.items()):
            for step, rows in sorted(r["rows"].items()):
                writer.writerow([v, s, step, r["win_curve"][step], rows["quality"].mean(), *(rows[m].mean() for m in BIAS_METRICS)])

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_h, ax_w) = plt.subplots(1, 2, figsize=(11, 4.2))
    for v in labels:
        ent = np.array([runs[(v, s)]["entropy"] for s in seeds])  # [S, steps]; entropy[:, i] is step i + 1
        k = min(5, ent.shape[1])
        ax_h.plot(np.arange(k, ent.shape[1] + 1), np.convolve(ent.mean(0), np.ones(k) / k, mode="valid"), label=v)
        curve = [runs[(v, s)]["win_curve"] for s in seeds]
        steps_ = sorted(curve[0])
        ax_w.plot(steps_, [100 * np.mean([c[t] for c in curve]) for t in steps_], marker="o", ms=3, label=v)
    ax_h.set(xlabel="RL step", ylabel="token entropy (nats, 5-step mean)", title="policy entropy, mean over seeds")
    ax_w.set(xlabel="RL step", ylabel="held-out win rate vs base (%)", title="oracle win rate vs the base, mean over seeds")
    ax_w.axhline(50, color="grey", lw=0.8, ls="--")
    ax_w.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(results / f"{args.name}.png", dpi=120)
    return 0


if __name__ == "__main__":
    sys.exit(main())
