"""A board's claims: each task's positive control and every claim (:data:`CLAIMS`) measured on the
board's test runs as a :class:`~rewardzoo.protocol.Finding`, and the verdict lines of ``LEADERBOARD.md``.

Every interval here treats the seed as the unit (:func:`rewardzoo.eval.seed_ci`): each seed's effect — the
mean over its held-out examples of a difference, a ratio of gains, a win rate over its prompts — then a
Student-t interval over seeds (benchmarks/results/interval_coverage.md: the percentile bootstrap over
seeds × examples it replaced covered 78–94% at 3–5 seeds on the boards' design).  A claim reads the runs'
files when given them; with ``results=None`` (a board re-reported from its ``leaderboard.csv``,
:func:`rewardzoo.board.table.tables_from_csv`) it reads the table's per-seed final values, each run's start
being its seed's warm-start row."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from rewardzoo.board.rows import POSITIVE_CONTROLS
from rewardzoo.board.table import Table
from rewardzoo.eval import gain_ratio, preferences, seed_ci
from rewardzoo.protocol import MIN_SEEDS, Finding, verdict, word
from rewardzoo.sweep import RunResult, eval_rows

Claim = Callable[[dict[str, Table], dict[str, RunResult], list[int]], "list[Finding]"]


ROW_KEY = {"eval/accuracy": "correct", "eval/hack_rate": "hack_rate", "eval/quality": "quality"}
"""The per-example row key (``eval_rows.jsonl``) whose held-out mean is each held-out metric."""


def _rows(results: dict[str, RunResult], name: str, key: str, seeds: list[int], which: str) -> np.ndarray:
    """[S, E] per-example held-out rows of a method at its first or last evaluation."""
    tables_ = []
    for s in seeds:
        rows = eval_rows(results[f"{name}/seed{s}"].spec.run_dir)
        tables_.append(rows[min(rows) if which == "first" else max(rows)][key])
    return np.array(tables_, dtype=float)


def _warm_start(tabs: dict[str, Table], task: str) -> str:
    """The task's warm-start row (role ``warm start``): every trained row of a seed starts from its weights."""
    found = [m for m in tabs[task].methods if tabs[task].roles.get(m) == "warm start"]
    if not found:
        raise ValueError(
            f"the {task} table has no warm-start row, and no runs were given to read each run's start from"
        )
    return found[0]


def _per_seed(
    tabs: dict[str, Table],
    results: dict[str, RunResult] | None,
    task: str,
    method: str,
    metric: str,
    seeds: list[int],
    which: str = "last",
) -> np.ndarray:
    """A method's held-out ``metric`` at its start (``which='first'``) or end, per seed: [S, E] per-example rows
    when the runs are given and the metric has a row key (:data:`ROW_KEY`); else [S] values — the run's first or
    last logged value, or, without runs (a board re-reported from its CSV), the table's final values, the start
    being the seed's warm-start row."""
    if results is not None:
        name = f"{task}/{method}"
        if metric in ROW_KEY:
            return _rows(results, name, ROW_KEY[metric], seeds, which)
        return np.array([_start_end(results[f"{name}/seed{s}"], metric)[0 if which == "first" else 1] for s in seeds])
    row = _warm_start(tabs, task) if which == "first" else method
    return np.asarray(tabs[task].values[row][metric], dtype=float)


def _has(tabs: dict[str, Table], task: str, *methods: str) -> bool:
    return task in tabs and set(methods) <= set(tabs[task].methods)


def _n(seeds: list[int], table: np.ndarray) -> str:
    """The sample of a claim: the seeds (the unit of its interval) and, where read, each seed's held-out examples."""
    return f"{len(seeds)} seeds" + (f" × {table.shape[1]} held-out examples" if table.ndim == 2 else "")


def _start_end(result: RunResult, key: str) -> tuple[float, float]:
    values = [r[key] for r in result.rows if r.get(key) is not None]
    return values[0], values[-1]


def _difference(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.mean(a) - np.mean(b))


def positive_control(
    task: str, tabs: dict[str, Table], results: dict[str, RunResult] | None, seeds: list[int]
) -> Finding | None:
    """The effect of the task's positive control (:data:`POSITIVE_CONTROLS`) over its runs, from its warm start to
    its end: each seed's change (the mean over its held-out examples, or the exact metric), with the t-interval
    over seeds (:func:`rewardzoo.eval.seed_ci`); None when the task has no positive control on the board."""
    pc = POSITIVE_CONTROLS.get(task)
    if pc is None or not _has(tabs, task, pc.method):
        return None
    start, end = (_per_seed(tabs, results, task, pc.method, pc.metric, seeds, w) for w in ("first", "last"))
    change = seed_ci(lambda a, b: _difference(b, a), start, end)
    points = pc.metric.endswith(("accuracy", "hack_rate"))
    text = change.bounds(scale=100, sign=True) + " points" if points else change.bounds(digits=3, sign=True)
    n = _n(seeds, start) + ("" if pc.row_key is not None else " (exact metric)")
    return Finding(
        task,
        f"positive control of `{task}`: {pc.meaning}",
        f"{pc.method} at its own start",
        change,
        0.0,
        pc.up,
        f"{pc.metric.removeprefix('eval/')} change {text}",
        n,
    )


MULTIPLICATION_TASKS = ("multiplication", "chat_multiplication")
"""The boards on which RAL's multiplication claims are measured: the tiny model's and the real model's
(``--preset real``)."""


def ral_approaches_rlvr(tabs, results, seeds):
    """RAL paper: RAL's gain over the warm start approaches RLVR's (target: at least half), as the mean over
    seeds of each seed's gain ratio (on each multiplication board that has both rows)."""
    return _on_multiplication_boards(_ral_vs_rlvr, ("RLVR", "RAL"), tabs, results, seeds)


def _on_multiplication_boards(claim, rows: tuple[str, ...], tabs, results, seeds) -> list[Finding]:
    """``claim(tabs, results, seeds, task)`` on each of :data:`MULTIPLICATION_TASKS` whose table has ``rows``."""
    return [f for task in MULTIPLICATION_TASKS if _has(tabs, task, *rows) for f in claim(tabs, results, seeds, task)]


def _ral_vs_rlvr(tabs, results, seeds, task: str) -> list:
    start = _per_seed(tabs, results, task, "RLVR", "eval/accuracy", seeds, "first")  # the shared warm start
    rlvr = _per_seed(tabs, results, task, "RLVR", "eval/accuracy", seeds)
    ral = _per_seed(tabs, results, task, "RAL", "eval/accuracy", seeds)
    ratio = seed_ci(lambda s, a, b: gain_ratio(s, a, s, b), start, rlvr, ral)
    numbers = (
        f"RAL/RLVR gain ratio {ratio.bounds(digits=2)} (per seed; ½ = the claim's threshold); gains "
        f"RLVR {100 * (rlvr.mean() - start.mean()):+.1f}, RAL {100 * (ral.mean() - start.mean()):+.1f} points"
    )
    return [
        Finding(
            task,
            "RAL reaches at least half of RLVR's held-out gain (RAL paper: about parity)",
            "RLVR",
            ratio,
            0.5,
            True,
            numbers,
            _n(seeds, start),
        )
    ]


def ral_judge_beats_format_only(tabs, results, seeds):
    """RAL's learned judge adds to what the format reward alone (D ≡ 1) gives (on each multiplication board)."""
    return _on_multiplication_boards(_ral_vs_format_only, ("RAL", "RAL format-only"), tabs, results, seeds)


def _ral_vs_format_only(tabs, results, seeds, task: str) -> list:
    ral, fmt = (_per_seed(tabs, results, task, m, "eval/accuracy", seeds) for m in ("RAL", "RAL format-only"))
    diff = seed_ci(_difference, ral, fmt)
    return [
        Finding(
            task,
            "RAL's judge adds to the format reward alone",
            "RAL format-only (D ≡ 1)",
            diff,
            0.0,
            True,
            f"held-out accuracy RAL − format-only: {diff.bounds(scale=100, sign=True)} points (final "
            f"{100 * ral.mean():.1f}% vs {100 * fmt.mean():.1f}%)",
            _n(seeds, ral),
        )
    ]


def frozen_judge_is_exploited(tabs, results, seeds):
    """RAL paper, §4.2: a judge frozen after warm-up is exploited — the policy gains less than with a co-trained one."""
    if not _has(tabs, "multiplication", "RAL", "RAL frozen judge"):
        return []
    start = _per_seed(tabs, results, "multiplication", "RAL", "eval/accuracy", seeds, "first")
    co, frozen = (
        _per_seed(tabs, results, "multiplication", m, "eval/accuracy", seeds) for m in ("RAL", "RAL frozen judge")
    )
    diff = seed_ci(_difference, co, frozen)
    below = " — both below the warm start" if max(co.mean(), frozen.mean()) < start.mean() else ""
    return [
        Finding(
            "multiplication",
            "a co-trained judge beats a frozen one (RAL paper, §4.2)",
            "RAL frozen judge",
            diff,
            0.0,
            True,
            f"held-out accuracy co-trained − frozen: {diff.bounds(scale=100, sign=True)} points (final "
            f"{100 * co.mean():.1f}% vs {100 * frozen.mean():.1f}%, warm start {100 * start.mean():.1f}%"
            f"{below})",
            _n(seeds, co),
        )
    ]


def varl_resists_the_proxy(tabs, results, seeds):
    """VARL paper: gating a discriminator of reference answers by the lazy verifier hacks less than RLVR on that
    verifier alone."""
    if not _has(tabs, "hackable_multiplication", "RLVR (proxy)", "VARL (proxy gate)"):
        return []
    rlvr, varl = (
        _per_seed(tabs, results, "hackable_multiplication", m, "eval/hack_rate", seeds)
        for m in ("RLVR (proxy)", "VARL (proxy gate)")
    )
    diff = seed_ci(_difference, rlvr, varl)
    return [
        Finding(
            "hackable_multiplication",
            "VARL hacks the lazy verifier less than RLVR on it (VARL's reward-hacking claim)",
            "RLVR (proxy)",
            diff,
            0.0,
            True,
            f"held-out hack rate RLVR − VARL: {diff.bounds(scale=100, sign=True)} points",
            _n(seeds, rlvr),
        )
    ]


DIVERGENCE_OF = {
    "D": "eval/kl_ref_mix",
    "neg_log_one_minus_D": "eval/js",
    "log_D": "eval/kl_mix_ref",
    "logit": "eval/kl_pi_ref",
}
"""The divergence each g's frozen-D* policy gradient descends (rewards/transforms.py), as its eval key."""


def each_g_descends_its_divergence(tabs, results, seeds):
    """docs/rewards/transforms.md: RAL with transform g and a co-trained judge lowers the divergence g's gradient
    descends.  (Any reward toward the reference lowers every divergence: :func:`each_g_descends_its_own_most`
    is the comparison that tells the transforms apart.)"""
    found = []
    for g, key in DIVERGENCE_OF.items():
        if not _has(tabs, "refdist", f"RAL g={g}"):
            continue
        start, end = (_per_seed(tabs, results, "refdist", f"RAL g={g}", key, seeds, w) for w in ("first", "last"))
        change = seed_ci(lambda a, b: _difference(b, a), start, end)
        found.append(
            Finding(
                "refdist",
                f"RAL g={g} descends its divergence `{key.removeprefix('eval/')}`",
                f"RAL g={g} at its own start",
                change,
                0.0,
                False,
                f"{key.removeprefix('eval/')} change {change.bounds(digits=3, sign=True)}",
                f"{len(seeds)} seeds (exact metric)",
            )
        )
    return found


def _relative_change(tabs, results, method: str, key: str, seeds: list[int]) -> np.ndarray:
    """[S] each seed's end / start − 1 of refdist's exact ``key`` under the row ``method``."""
    start, end = (_per_seed(tabs, results, "refdist", method, key, seeds, w) for w in ("first", "last"))
    return end / start - 1.0


def each_g_descends_its_own_most(tabs, results, seeds):
    """docs/rewards/transforms.md: each g lowers *its own* divergence more than the other transforms do — the
    comparison that can tell the g's apart.  Per seed, g's relative change of its divergence (end / warm start − 1)
    less the mean relative change of that divergence under the other g's on the board; below 0 = g descends its own
    divergence most."""
    present = [g for g in DIVERGENCE_OF if _has(tabs, "refdist", f"RAL g={g}")]
    if len(present) < 2:
        return []
    found = []
    for g in present:
        key = DIVERGENCE_OF[g]

        own, others = (
            _relative_change(tabs, results, f"RAL g={g}", key, seeds),
            np.mean([_relative_change(tabs, results, f"RAL g={h}", key, seeds) for h in present if h != g], axis=0),
        )
        diff = seed_ci(_difference, own, others)
        found.append(
            Finding(
                "refdist",
                f"RAL g={g} lowers its own divergence `{key.removeprefix('eval/')}` more than the other g's do",
                "the other g's rows",
                diff,
                0.0,
                False,
                f"relative change of {key.removeprefix('eval/')}, g={g} − the others' mean: "
                f"{diff.bounds(scale=100, sign=True)}% of the warm start's value "
                f"(g={g}: {100 * own.mean():+.1f}%, others {100 * others.mean():+.1f}%)",
                f"{len(seeds)} seeds (exact metric)",
            )
        )
    return found


def frozen_judge_collapses(tabs, results, seeds):
    """RAL paper, §4.2, on refdist: a frozen judge drives the policy onto fewer answers than a co-trained one."""
    if not _has(tabs, "refdist", "RAL g=D", "RAL g=D frozen judge"):
        return []
    key = "eval/top_answer_share"
    frozen, co = (_per_seed(tabs, results, "refdist", m, key, seeds) for m in ("RAL g=D frozen judge", "RAL g=D"))
    diff = seed_ci(_difference, frozen, co)
    return [
        Finding(
            "refdist",
            "a frozen judge collapses the answer distribution (RAL paper, §4.2)",
            "RAL g=D (co-trained judge)",
            diff,
            0.0,
            True,
            f"top-answer share frozen − co-trained: {diff.bounds(digits=3, sign=True)}",
            f"{len(seeds)} seeds (exact metric)",
        )
    ]


def _win_rate(tabs, results, seeds, method: str, other: str, claim: str) -> list[Finding]:
    """``method``'s held-out oracle win rate over ``other``'s: each seed's win rate over its prompts (ties ½),
    t-interval over seeds, > 50% claimed.  Without the runs' per-prompt rows (a board re-reported from its CSV)
    the claim is read at seed level: each seed's mean oracle quality difference, > 0 claimed."""
    if not _has(tabs, "rubric_writing", method, other):
        return []
    a, b = (_per_seed(tabs, results, "rubric_writing", m, "eval/quality", seeds) for m in (method, other))
    if a.ndim == 2:
        win = seed_ci(lambda x, y: float(preferences(x, y).mean()), a, b)
        return [
            Finding(
                "rubric_writing",
                claim,
                other,
                win,
                0.5,
                True,
                f"held-out oracle win rate of {method} over {other}, prompt by prompt within each seed: "
                f"{win.bounds(scale=100)}% (50% = parity)",
                _n(seeds, a),
            )
        ]
    diff = seed_ci(_difference, a, b)
    return [
        Finding(
            "rubric_writing",
            claim,
            other,
            diff,
            0.0,
            True,
            f"held-out oracle quality {method} − {other}, per seed: {diff.bounds(digits=3, sign=True)} (read "
            "from the CSV's per-seed means: the per-prompt rows a win rate needs are not committed)",
            _n(seeds, a),
        )
    ]


def rcrl_beats_rar(tabs, results, seeds):
    """RcRL paper, Table 3: RcRL's outputs win against Absolute RaR's under the held-out judge (the oracle)."""
    return _win_rate(tabs, results, seeds, "RcRL", "Absolute RaR", "RcRL beats Absolute RaR (RcRL paper, Table 3)")


def rcrl_beats_its_absolute_twin(tabs, results, seeds):
    """RcRL paper, Table 3: pairwise scoring beats absolute scoring on the same curriculum (RcRL vs Absolute RcRL)."""
    return _win_rate(
        tabs,
        results,
        seeds,
        "RcRL",
        "Absolute RcRL",
        "RcRL beats its absolute twin, Absolute RcRL (RcRL paper, Table 3)",
    )


def rcrl_keeps_entropy(tabs, results, seeds):
    """RcRL paper, §5.3: RcRL keeps more token entropy than Absolute RaR."""
    if not _has(tabs, "rubric_writing", "RcRL", "Absolute RaR"):
        return []
    rcrl, rar = (
        _per_seed(tabs, results, "rubric_writing", m, "policy/entropy", seeds) for m in ("RcRL", "Absolute RaR")
    )
    diff = seed_ci(_difference, rcrl, rar)
    return [
        Finding(
            "rubric_writing",
            "RcRL keeps more entropy than Absolute RaR (RcRL paper, §5.3)",
            "Absolute RaR",
            diff,
            0.0,
            True,
            f"final token entropy RcRL − Absolute RaR: {diff.bounds(digits=3, sign=True)} nats",
            f"{len(seeds)} seeds",
        )
    ]


CLAIMS: list[Claim] = [
    ral_approaches_rlvr,
    ral_judge_beats_format_only,
    frozen_judge_is_exploited,
    varl_resists_the_proxy,
    each_g_descends_its_divergence,
    each_g_descends_its_own_most,
    frozen_judge_collapses,
    rcrl_beats_rar,
    rcrl_beats_its_absolute_twin,
    rcrl_keeps_entropy,
]


def claim_lines(
    tabs: dict[str, Table],
    results: dict[str, RunResult] | None,
    seeds: list[int],
    sensitive: frozenset[str] = frozenset(),
) -> list[str]:
    """The positive controls, then one line per claim: control, verdict (:func:`rewardzoo.protocol.verdict`),
    interval, n (``results`` None: read from the tables' per-seed values, see the module's docstring); a decided
    verdict of a claim in ``sensitive`` (the stability check, :mod:`rewardzoo.board.stability`) reads
    *sensitive to tuning*."""
    lines = [
        "## Positive controls and the seeds' claims",
        "",
        f"A claim is decided only from ≥ {MIN_SEEDS} seeds, and only when its task's positive control shows its "
        "effect with a 95% interval beyond 0; otherwise its line reads *testbed cannot decide* with the control's "
        "number. Every interval is mean [low, high], the 95% t-interval over seeds of each seed's effect (the "
        "seed is the unit; `rewardzoo.eval.seed_ci`). *Undecided (CI)* means the interval contains the "
        "threshold: the seeds run cannot tell, and it is never read as a win either way.",
        "",
        "| claim | control | verdict | measurement (mean [95% interval]) | n |",
        "| --- | --- | --- | --- | --- |",
    ]
    positives = {task: positive_control(task, tabs, results, seeds) for task in tabs}
    for pc in positives.values():
        if pc is not None:
            shown = (
                verdict(pc, len(seeds), pc)
                if len(seeds) < MIN_SEEDS
                else "works"
                if word(pc.estimate, pc.threshold, pc.above) == "reproduced"
                else "does not work"
            )
            lines.append(f"| {pc.claim} | {pc.control} | {shown} | {pc.numbers} | {pc.n} |")
    for claim in CLAIMS:
        for f in claim(tabs, results, seeds):
            shown = verdict(f, len(seeds), positives.get(f.task))
            if f.claim in sensitive and shown in ("reproduced", "not reproduced"):
                shown = f"*sensitive to tuning* (at the chosen settings: {shown})"
            lines.append(f"| {f.claim} | {f.control} | {shown} | {f.numbers} | {f.n} |")
    return lines
