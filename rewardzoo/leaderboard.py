"""``rewardzoo leaderboard``: every reward head-to-head on one core, with confidence intervals.

    rewardzoo leaderboard --preset cpu --seeds 5 --out benchmarks/results/leaderboard
    rewardzoo leaderboard --preset cpu --quick --out /tmp/lb        # 1 seed, short: the command's own test

A preset is a literal list of :class:`Entry` rows (a task, a method label, a recipe and overrides).
Every entry of a task shares the task's recipe settings — model, SFT warm start (per task and seed,
trained once through the SFT cache), step budget — and differs only in the reward section, as the
recipe twin tests enforce; ``SFT`` is the warm start itself (the RLVR recipe with ``steps=0``).

Runs go through :func:`rewardzoo.sweep.run_sweep`: in parallel up to ``--jobs`` processes, one
thread each, finished runs reused (a half-finished leaderboard resumes), one progress bar.  Then:

- ``LEADERBOARD.md``: one table per task, every column mean ± 95% t-interval over seeds of the
  run's final value (held-out metrics, hack rate, token entropy, wall-clock); the best method of
  a column is **bold** only where its interval separates from the runner-up's; then one line per
  claim of the seeds that the preset tests — reproduced / not reproduced / undecided (CI) — with
  the numbers (:data:`CLAIMS`),
- ``leaderboard.csv``: one row per run, every final metric and the hash of its resolved config,
- ``curves_<task>.png``: each method's headline metric over steps, mean and 95% band over seeds.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import math
import shlex
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from rewardzoo.core.config import to_yaml
from rewardzoo.eval import Estimate, bootstrap_ci, mean_ci
from rewardzoo.sweep import RunResult, RunSpec, eval_rows, run_sweep
from rewardzoo.zoo import shipped_recipe


@dataclass(frozen=True)
class Entry:
    """One row of a task's table: ``method`` trained by ``recipe`` with ``overrides``."""

    task: str
    method: str
    recipe: str
    overrides: tuple[str, ...] = ()


@dataclass(frozen=True)
class Board:
    """How a task's table reads: its columns (final-row keys) and which way each is better."""

    title: str
    headline: str
    """The metric of the learning-curve plot."""
    columns: tuple[tuple[str, str], ...]
    """(metric key, direction): 'max', 'min' or '' (reported, no best marked)."""


QUICK = ("steps=4", "sft.steps=20", "eval.n_examples=64", "eval.every=2", "reward.ral.warmup_steps=2",
         "reward.varl.warmup_steps=2")
"""What ``--quick`` changes in every trained run (the SFT rows keep ``steps=0``; refdist keeps its 16
held-out prompts, fewer than 64)."""
COMMON = (("policy/entropy", ""), ("time/wall_s", "min"))
BOARDS = {
    "multiplication": Board("3-digit × 1-digit multiplication with a scratchpad, held-out avg@2 at T = 2",
                            "eval/accuracy", (("eval/accuracy", "max"), ("eval/relative_error", "min"), *COMMON)),
    "hackable_multiplication": Board("Hackable multiplication (RL rewards the lazy `contains` proxy)", "eval/hack_rate",
                                     (("eval/accuracy", "max"), ("eval/hack_rate", "min"), ("eval/proxy_pass", ""),
                                      *COMMON)),
    "refdist": Board("Reference distribution (exact divergences of the policy's answer distribution to p_ref)",
                     "eval/js", (("eval/js", "min"), ("eval/kl_ref_pi", "min"), ("eval/kl_pi_ref", "min"),
                                 ("eval/top_answer_share", ""), ("eval/answer_entropy", ""), ("eval/outside_mass", "min"),
                                 *COMMON)),
    "rubric_writing": Board("Rubric writing (biased rule judge in training; unbiased oracle held out)", "eval/quality",
                            (("eval/quality", "max"), ("eval/repetition", "min"), ("eval/over_length", "min"),
                             ("eval/words", ""), *COMMON)),
}

def recipe(name: str) -> str:
    """A shipped recipe, by name (found in the package from any directory; a typo fails here, at import)."""
    return shipped_recipe(name).stem


G_NAMES = ("D", "neg_log_one_minus_D", "log_D", "logit")
CPU_SETTINGS = {
    "multiplication": ("grpo.batch_size=160", "grpo.micro_batch_size=160", "eval.every=20"),
    "refdist": ("sft.seed=0", "steps=40"),
    "rubric_writing": ("sft.seed=0",),
}
"""What the ``cpu`` board changes in a task's recipes, for every method of the task alike, so that the
board fits 45 minutes on 2 cores (docs/leaderboard.md, "Running it"): on multiplication 20 prompts a
step instead of the recipe's 32 (40 steps still never repeat one of the 1,000 RL prompts) and held-out
evaluations every 20 steps (the curves have fewer points; the table reads the final one); on refdist
and rubric writing one SFT warm start per task shared by every seed, as the multiplication recipes
already do (seeds vary RL only); on refdist 40 RL steps instead of 100 (on the 100-step board every
claim of the task was decided by step 40)."""


def cpu_entry(task: str, method: str, name: str, *overrides: str) -> Entry:
    """A ``cpu`` board row: the recipe ``name`` with the task's :data:`CPU_SETTINGS`, then ``overrides``
    (an SFT row, ``steps=0``, takes no step budget)."""
    sft_row = "steps=0" in overrides
    settings = tuple(o for o in CPU_SETTINGS.get(task, ()) if not (sft_row and o.startswith("steps=")))
    return Entry(task, method, recipe(name), (*settings, *overrides))


PRESETS: dict[str, list[Entry]] = {
    "cpu": [
        cpu_entry("multiplication", "SFT", "rlvr_multiplication", "steps=0"),
        cpu_entry("multiplication", "RLVR", "rlvr_multiplication"),
        cpu_entry("multiplication", "RAL", "ral_multiplication"),
        cpu_entry("multiplication", "RAL frozen judge", "ral_multiplication", "reward.ral.frozen=true"),
        cpu_entry("multiplication", "VARL", "varl_multiplication"),
        cpu_entry("multiplication", "VARL additive", "varl_multiplication", "reward.varl.combine=add"),
        cpu_entry("refdist", "SFT", "rlvr_refdist", "steps=0"),
        cpu_entry("refdist", "RLVR", "rlvr_refdist"),
        *(cpu_entry("refdist", f"RAL g={g}", "ral_refdist", f"reward.ral.g={g}") for g in G_NAMES),
        cpu_entry("refdist", "RAL g=D frozen judge", "ral_refdist", "reward.ral.frozen=true"),
        cpu_entry("refdist", "VARL", "varl_refdist"),
        cpu_entry("rubric_writing", "SFT", "rcrl_rubric_writing", "steps=0"),
        cpu_entry("rubric_writing", "RcRL", "rcrl_rubric_writing"),
        cpu_entry("rubric_writing", "Absolute RcRL", "absolute_rcrl_rubric_writing"),
        cpu_entry("rubric_writing", "Absolute RaR", "rar_rubric_writing"),
        cpu_entry("rubric_writing", "Pairwise RaR", "pairwise_rar_rubric_writing"),
        cpu_entry("rubric_writing", "Dropout Absolute RaR", "dropout_absolute_rar_rubric_writing"),
    ],
    "hackable": [
        Entry("hackable_multiplication", "SFT", recipe("rlvr_hackable_multiplication"), ("steps=0",)),
        Entry("hackable_multiplication", "RLVR (proxy)", recipe("rlvr_hackable_multiplication")),
        Entry("hackable_multiplication", "VARL (proxy gate)", recipe("varl_hackable_multiplication")),
        Entry("hackable_multiplication", "VARL additive (proxy)", recipe("varl_hackable_multiplication"),
              ("reward.varl.combine=add",)),
    ],
}
"""``cpu``: the CPU leaderboard — the tasks whose presets have the power to separate methods
(benchmarks/results/power/power.md) plus rubric writing, the one task of RcRL and its baselines.
``hackable``: the reward-hacking board, kept off ``cpu`` because at CPU scale RLVR does not hack the
proxy (its hack-rate gain is within noise), so the board cannot show VARL preventing it; it runs
with ``--preset hackable``."""

GPU = ("model.name=Qwen/Qwen3-0.6B", "model.dtype=bfloat16", "model.lora.enabled=true", "model.lora.r=32",
       "model.lora.alpha=64", "sampling.engine=vllm", "sampling.vllm.gpu_memory_utilization=0.3",
       "sampling.max_new_tokens=64", "grpo.lr=1e-5", "grpo.micro_batch_size=64", "sft.lr=1e-4", "sft.steps=300",
       "steps=300", "eval.every=50", "reward.ral.judge.lr=1e-5", "reward.varl.discriminator.lr=1e-5")
"""What the ``gpu`` preset changes in every CPU entry: Qwen3-0.6B from the hub in bfloat16 with LoRA r 32, the
vLLM engine, 300 SFT and 300 RL steps, learning rates for a pretrained model (our choices; not run here)."""
PRESETS["gpu"] = [Entry(e.task, e.method, e.recipe, (*e.overrides, *(o for o in GPU if "steps=0" not in e.overrides
                                                                 or not o.startswith("steps="))))
                  for e in (*PRESETS["cpu"], *PRESETS["hackable"])
                  if e.task in ("multiplication", "hackable_multiplication")]


# ---------------------------------------------------------------------------------------------- runs
def slug(method: str) -> str:
    """A method label as a directory name: ``RAL g=D frozen judge`` → ``ral_g_d_frozen_judge``."""
    return "".join(c if c.isalnum() else "_" for c in method.lower().replace("(", "").replace(")", "")).strip("_")


def specs(entries: list[Entry], seeds: list[int], runs: Path, quick: bool) -> list[RunSpec]:
    """One run per entry and seed under ``runs/<task>/<slug(method)>/seed<s>``, seed by seed (a
    stopped sweep leaves whole boards for its first seeds)."""
    result = []
    for s in seeds:
        for e in entries:
            quick_overrides = () if not quick else QUICK[1:] if "steps=0" in e.overrides else QUICK
            if e.task == "refdist":
                quick_overrides = tuple(o for o in quick_overrides if not o.startswith("eval.n_examples="))
            result.append(RunSpec(f"{e.task}/{e.method}/seed{s}", e.recipe, runs / e.task / slug(e.method) / f"seed{s}",
                                  (f"seed={s}", *e.overrides, *quick_overrides)))
    return result


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


# ------------------------------------------------------------------------------------------ tables
@dataclass
class Table:
    """Per method: per column, the final values over seeds."""

    board: Board
    methods: list[str] = field(default_factory=list)
    values: dict[str, dict[str, list[float]]] = field(default_factory=dict)

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


def tables(entries: list[Entry], results: dict[str, RunResult], seeds: list[int]) -> dict[str, Table]:
    """The tables of every task, from the finished runs."""
    out: dict[str, Table] = {}
    for e in entries:
        table = out.setdefault(e.task, Table(BOARDS[e.task]))
        table.methods.append(e.method)
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
             "| method | " + " | ".join(f"`{c}`{' ↑' if d == 'max' else ' ↓' if d == 'min' else ''}" for c, d in cols) + " |",
             "| --- |" + " ---: |" * len(cols)]
    best = {c: table.best(c, d) for c, d in cols}
    for m in table.methods:
        cells = []
        for c, _ in cols:
            text = _cell(table.estimate(m, c), c)
            cells.append(f"**{text}**" if best[c] == m else text)
        lines.append(f"| {m} | " + " | ".join(cells) + " |")
    lines += ["", f"Mean ± half-width of the 95% t-interval over {seeds} seed(s); accuracy-like columns in points. "
              "Bold: best, and its interval does not overlap the runner-up's.", ""]
    return lines


# ------------------------------------------------------------------------------------------ claims
Claim = Callable[[dict[str, Table], dict[str, RunResult], list[int]], "tuple[str, str, str] | None"]


def _verdict(estimate: Estimate, threshold: float, above: bool = True) -> str:
    """'reproduced' when the interval lies strictly beyond ``threshold`` in the claimed direction, 'not
    reproduced' when it lies at or on the other side of it, else 'undecided (CI)' (a tie is no win)."""
    if not (math.isfinite(estimate.low) and math.isfinite(estimate.high)):
        return "undecided (CI)"
    if (estimate.low > threshold) if above else (estimate.high < threshold):
        return "reproduced"
    if (estimate.high <= threshold) if above else (estimate.low >= threshold):
        return "not reproduced"
    return "undecided (CI)"


def _rows(results: dict[str, RunResult], name: str, key: str, seeds: list[int], which: str) -> np.ndarray:
    """[S, E] per-example held-out rows of a method at its first or last evaluation."""
    tables_ = []
    for s in seeds:
        rows = eval_rows(results[f"{name}/seed{s}"].spec.run_dir)
        tables_.append(rows[min(rows) if which == "first" else max(rows)][key])
    return np.array(tables_, dtype=float)


def ral_approaches_rlvr(tabs, results, seeds):
    """002: RAL's gain over the warm start approaches RLVR's (target: at least half)."""
    if "multiplication" not in tabs or not {"RLVR", "RAL"} <= set(tabs["multiplication"].methods):
        return None
    start = _rows(results, "multiplication/RLVR", "correct", seeds, "first")  # the shared warm start
    rlvr = _rows(results, "multiplication/RLVR", "correct", seeds, "last")
    ral = _rows(results, "multiplication/RAL", "correct", seeds, "last")
    ratio = bootstrap_ci(lambda s, a, b: (b.mean() - s.mean()) / (a.mean() - s.mean()) if a.mean() > s.mean() else math.nan,
                         start, rlvr, ral)
    numbers = (f"RAL/RLVR gain ratio {ratio.format(digits=2)} (paired bootstrap over {len(seeds)} seeds × "
               f"{start.shape[1]} held-out examples); gains RLVR {100 * (rlvr.mean() - start.mean()):+.1f}, "
               f"RAL {100 * (ral.mean() - start.mean()):+.1f} points")
    return "RAL reaches at least half of RLVR's held-out gain (002: about parity)", _verdict(ratio, 0.5), numbers


def frozen_judge_is_exploited(tabs, results, seeds):
    """002 §4.2: a judge frozen after warm-up is exploited — the policy gains less than with a co-trained one."""
    t = tabs.get("multiplication")
    if t is None or not {"RAL", "RAL frozen judge"} <= set(t.methods):
        return None
    start = _rows(results, "multiplication/RAL", "correct", seeds, "first")
    co, frozen = (_rows(results, f"multiplication/{m}", "correct", seeds, "last") for m in ("RAL", "RAL frozen judge"))
    diff = bootstrap_ci(lambda a, b: a.mean() - b.mean(), co, frozen)
    below = " — both below the warm start" if max(co.mean(), frozen.mean()) < start.mean() else ""
    return ("a co-trained judge beats a frozen one (002 §4.2)", _verdict(diff, 0.0),
            f"held-out accuracy co-trained − frozen: {diff.format(scale=100, sign=True)} points (final {100 * co.mean():.1f}% "
            f"vs {100 * frozen.mean():.1f}%, warm start {100 * start.mean():.1f}%{below})")


def varl_resists_the_proxy(tabs, results, seeds):
    """VARL (SPEC §4.3): gating a discriminator of reference answers by the lazy verifier hacks less than
    RLVR on that verifier alone."""
    t = tabs.get("hackable_multiplication")
    if t is None or not {"RLVR (proxy)", "VARL (proxy gate)"} <= set(t.methods):
        return None
    name = "hackable_multiplication/{}"
    diff = bootstrap_ci(lambda a, b: a.mean() - b.mean(),
                        _rows(results, name.format("RLVR (proxy)"), "hack_rate", seeds, "last"),
                        _rows(results, name.format("VARL (proxy gate)"), "hack_rate", seeds, "last"))
    return ("VARL hacks the lazy verifier less than RLVR on it (VARL's reward-hacking claim)", _verdict(diff, 0.0),
            f"held-out hack rate RLVR − VARL: {diff.format(scale=100, sign=True)} points")


DIVERGENCE_OF = {"D": "eval/kl_ref_mix", "neg_log_one_minus_D": "eval/js", "log_D": "eval/kl_mix_ref",
                 "logit": "eval/kl_pi_ref"}
"""The divergence each g's frozen-D* policy gradient descends (rewards/transforms.py), as its eval key."""


def _start_end(result: RunResult, key: str) -> tuple[float, float]:
    values = [r[key] for r in result.rows if r.get(key) is not None]
    return values[0], values[-1]


def each_g_descends_its_divergence(tabs, results, seeds):
    """SPEC §4.4: RAL with transform g and a co-trained judge lowers the divergence g's gradient descends."""
    t = tabs.get("refdist")
    if t is None:
        return None
    parts, verdicts = [], []
    for g, key in DIVERGENCE_OF.items():
        if f"RAL g={g}" not in t.methods:
            continue
        change = mean_ci([b - a for a, b in (_start_end(results[f"refdist/RAL g={g}/seed{s}"], key) for s in seeds)])
        verdicts.append(_verdict(change, 0.0, above=False))
        parts.append(f"g={g}: {key.removeprefix('eval/')} {change.format(digits=3, sign=True)}")
    if not parts:
        return None
    verdict = verdicts[0] if len(set(verdicts)) == 1 else "mixed: " + ", ".join(verdicts)
    return ("each g-transform descends its own divergence (change over the run, t-interval over seeds)", verdict,
            "; ".join(parts))


def frozen_judge_collapses(tabs, results, seeds):
    """002 §4.2 on refdist: a frozen judge drives the policy onto fewer answers than a co-trained one."""
    t = tabs.get("refdist")
    if t is None or not {"RAL g=D", "RAL g=D frozen judge"} <= set(t.methods):
        return None
    key = "eval/top_answer_share"
    diff = mean_ci([final(results[f"refdist/RAL g=D frozen judge/seed{s}"])[key]
                    - final(results[f"refdist/RAL g=D/seed{s}"])[key] for s in seeds])
    return ("a frozen judge collapses the answer distribution (002 §4.2)", _verdict(diff, 0.0),
            f"top-answer share frozen − co-trained: {diff.format(digits=3, sign=True)} (t-interval over seeds)")


def rcrl_beats_rar(tabs, results, seeds):
    """004 Table 3: RcRL's outputs win against Absolute RaR's under the held-out judge (the oracle)."""
    t = tabs.get("rubric_writing")
    if t is None or not {"RcRL", "Absolute RaR"} <= set(t.methods):
        return None
    a = _rows(results, "rubric_writing/RcRL", "quality", seeds, "last")
    b = _rows(results, "rubric_writing/Absolute RaR", "quality", seeds, "last")
    win = bootstrap_ci(lambda x, y: float(np.mean(0.5 * (np.sign(x - y) + 1.0))), a, b)
    return ("RcRL beats Absolute RaR (004 Table 3)", _verdict(win, 0.5),
            f"held-out oracle win rate of RcRL over Absolute RaR, prompt by prompt: {win.format(scale=100)}% "
            f"(paired bootstrap over {len(seeds)} seeds × {a.shape[1]} prompts; 50% = parity)")


def rcrl_keeps_entropy(tabs, results, seeds):
    """004 §5.3: RcRL keeps more token entropy than Absolute RaR."""
    t = tabs.get("rubric_writing")
    if t is None or not {"RcRL", "Absolute RaR"} <= set(t.methods):
        return None
    diff = mean_ci([final(results[f"rubric_writing/RcRL/seed{s}"])["policy/entropy"]
                    - final(results[f"rubric_writing/Absolute RaR/seed{s}"])["policy/entropy"] for s in seeds])
    return ("RcRL keeps more entropy than Absolute RaR (004 §5.3)", _verdict(diff, 0.0),
            f"final token entropy RcRL − Absolute RaR: {diff.format(digits=3, sign=True)} nats (t-interval over seeds)")


CLAIMS: list[Claim] = [ral_approaches_rlvr, frozen_judge_is_exploited, varl_resists_the_proxy,
                       each_g_descends_its_divergence, frozen_judge_collapses, rcrl_beats_rar, rcrl_keeps_entropy]


# ------------------------------------------------------------------------------------------- output
def write_csv(path: Path, entries: list[Entry], results: dict[str, RunResult], seeds: list[int]) -> None:
    """One row per run: task, method, seed, config hash, every final metric."""
    rows = []
    for e in entries:
        for s in seeds:
            r = results[f"{e.task}/{e.method}/seed{s}"]
            rows.append({"task": e.task, "method": e.method, "seed": s, "config_hash": config_hash(r.spec), **final(r)})
    keys = ["task", "method", "seed", "config_hash"] + sorted({k for r in rows for k in r} - {"task", "method", "seed", "config_hash"})
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
    for i, e in enumerate(x for x in entries if x.task == task and "steps=0" not in x.overrides):
        curves = [{r["step"]: r[key] for r in results[f"{task}/{e.method}/seed{s}"].rows if r.get(key) is not None}
                  for s in seeds]
        steps = sorted(set.intersection(*(set(c) for c in curves)))
        est = [mean_ci([c[t] for c in curves]) for t in steps]
        ax.plot(steps, [v.mean for v in est], color=f"C{i}", label=e.method)
        if len(seeds) > 1:
            ax.fill_between(steps, [v.low for v in est], [v.high for v in est], color=f"C{i}", alpha=0.2)
    ax.set_xlabel("RL step")
    ax.set_ylabel(key)
    ax.set_title(table.board.title, fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def leaderboard(preset: str, seeds: list[int], out: Path, jobs: int = 2, quick: bool = False, command: str = "",
                progress: bool = True, runs: Path | None = None, tasks: list[str] | None = None) -> Path:
    """Run (or resume) a preset and write LEADERBOARD.md, leaderboard.csv and the curves into ``out``;
    the run directories go under ``runs`` (default ``out/runs``); ``tasks`` keeps only those tasks'
    entries.  Returns the .md path."""
    if preset not in PRESETS:
        raise ValueError(f"unknown leaderboard preset {preset!r}; choose one of {', '.join(PRESETS)}")
    entries = [e for e in PRESETS[preset] if tasks is None or e.task in tasks]
    if not entries:
        raise ValueError(f"no entry of preset {preset!r} is on tasks {tasks}; its tasks: "
                         f"{', '.join(dict.fromkeys(e.task for e in PRESETS[preset]))}")
    out.mkdir(parents=True, exist_ok=True)
    results = run_sweep(specs(entries, seeds, runs or out / "runs", quick), jobs=jobs, progress=progress,
                        desc=f"leaderboard {preset}")
    tabs = tables(entries, results, seeds)
    lines = [f"`{command}`" if command else "", "", f"# rewardzoo leaderboard — preset `{preset}`{' (quick)' if quick else ''}", ""]
    for task, table in tabs.items():
        lines += markdown(task, table, len(seeds))
        plot_curves(out / f"curves_{task}.png", task, table, entries, results, seeds)
        lines += [f"![{task}](curves_{task}.png)", ""]
    lines += ["## The seeds' claims", "", "| claim | verdict | numbers |", "| --- | --- | --- |"]
    for claim in CLAIMS:
        found = claim(tabs, results, seeds)
        if found is not None:
            lines.append("| " + " | ".join(found) + " |")
    walls = [r.wall_s for r in results.values()]
    lines += ["", f"{len(results)} runs; summed run wall time {sum(walls) / 60:.1f} min."]
    write_csv(out / "leaderboard.csv", entries, results, seeds)
    path = out / "LEADERBOARD.md"
    path.write_text("\n".join(lines) + "\n")
    return path


def main(argv: list[str] | None = None) -> int:
    """``rewardzoo leaderboard`` (also reachable as ``python -m rewardzoo.leaderboard``)."""
    parser = argparse.ArgumentParser(prog="rewardzoo leaderboard", description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", default="cpu", choices=list(PRESETS))
    parser.add_argument("--seeds", type=int, default=5, help="seeds 0..N-1 (--quick: 1)")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/leaderboard"),
                        help="where LEADERBOARD.md, leaderboard.csv and the curves go")
    parser.add_argument("--runs", type=Path, default=Path("runs/leaderboard"),
                        help="where the run directories go (finished runs there are reused)")
    parser.add_argument("--tasks", nargs="+", help="only these tasks' entries (default: all of the preset)")
    parser.add_argument("--jobs", type=int, default=2, help="runs in parallel, one thread each (default: 2 cores)")
    parser.add_argument("--quick", action="store_true", help="1 seed and a few steps per run: checks the command itself")
    args = parser.parse_args(argv)
    command = "rewardzoo leaderboard " + " ".join(shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:]))
    seeds = [0] if args.quick else list(range(args.seeds))
    path = leaderboard(args.preset, seeds, args.out, args.jobs, args.quick, command, runs=args.runs, tasks=args.tasks)
    print(path.read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
