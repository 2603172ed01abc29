"""A board's claims: each task's positive control and every claim (:data:`CLAIMS`) measured on the
board's test runs as a :class:`~rewardzoo.protocol.Finding`, and the verdict lines of ``LEADERBOARD.md``."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from rewardzoo.board.rows import POSITIVE_CONTROLS
from rewardzoo.board.runs import final
from rewardzoo.board.tables import Table
from rewardzoo.eval import bootstrap_ci, mean_ci
from rewardzoo.protocol import MIN_SEEDS, Finding, verdict, word
from rewardzoo.sweep import RunResult, eval_rows

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
