"""Every committed board's and study's verdicts, before (as its report printed them) → after (read by
:mod:`rewardzoo.board.reading` from the committed per-seed values), with the reason for each change.

The rule (docs/metrics.md, "How a verdict is read"): each claim's per-seed margins, the Hodges–Lehmann centre with
its Wilcoxon signed-rank 95% interval, no verdict below 6 seeds, a family read at Holm's adjusted level, a positive
control a gate outside the family, the robustness line (the mean's t-interval or the ratio's Fieller interval,
leave-one-seed-out flips, each row's collapses) beside every decided verdict, a part of a pre-registered board an
interim read.  Nothing is re-trained: a board is re-read from its ``leaderboard.csv`` (each row's per-seed final
values; a run's start is its seed's warm-start row), a study from the rows ``study_verdicts.md`` printed.

    python benchmarks/audits/verdict_changes.py

writes ``benchmarks/results/audits/verdict_changes.md`` (first line: the command).
"""

from __future__ import annotations

import argparse
import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from rewardzoo.board.reading import (
    COLLAPSE_BELOW,
    MIN_SEEDS,
    adjust,
    label,
    over_claims,
    own_seed_error,
    read,
    robustness,
)
from rewardzoo.eval import collapse_count

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"
PARTS = ("board_parts", "next_board_parts")
"""Folders whose boards are parts of a pre-registered board: interim reads, never verdicts."""


@dataclass(frozen=True)
class Declared:
    """A claim of a board with enough seeds for a verdict: how it is read from ``leaderboard.csv``."""

    prefix: str
    """The start of the claim's text in the report."""
    kind: str
    rows: tuple[str, ...]
    """difference: (a, b) read a − b; ratio: (arm, base, warm start), each row's gain over the warm start."""
    threshold: float
    gate: bool = False
    """A positive control: a gate, not a member of the family."""


CHAT = (
    Declared("positive control of `chat_multiplication`", "difference", ("RLVR", "Instruct (step 0)"), 0.0, True),
    Declared("RAL reaches at least half of RLVR's held-out gain", "ratio", ("RAL", "RLVR", "Instruct (step 0)"), 0.5),
    Declared("RAL's judge adds to the format reward alone", "difference", ("RAL", "RAL format-only"), 0.0),
)
"""The real-model boards' gate and claims (the family: the two claims, Holm: no order was declared before the read)."""
DECLARED = {"chat_multiplication": CHAT}

AT_ONE_LR = {"RcRL keeps more entropy than Absolute RaR": ("RcRL", "Absolute RaR")}
"""Claims on a quantity the learning rate moves directly (token entropy): their rows must run at one learning rate
fixed before the read; rows at separately tuned rates are confounded, and the claim gets no verdict."""


def confound(frame: pd.DataFrame, claim: str) -> str:
    """'' unless ``claim`` is in :data:`AT_ONE_LR` and its rows ran at different settings: then what differs."""
    rows = next((r for prefix, r in AT_ONE_LR.items() if claim.startswith(prefix)), None)
    if rows is None:
        return ""
    settings = {m: frame.loc[frame["method"] == m, "setting"].iloc[0] for m in rows if (frame["method"] == m).any()}
    if len(set(settings.values())) < 2:
        return ""
    return "confounded: the rows ran at different settings (" + ", ".join(f"{m} {v}" for m, v in settings.items()) + ")"


def report_rows(text: str) -> list[tuple[str, str, str, int]]:
    """``(claim, verdict, measurement, seeds)`` of every row of a report's claim table (5 columns: claim, control, verdict,
    measurement, n) or of ``study_verdicts.md``'s tables (4 columns: claim, verdict, measurement, n)."""
    found = []
    for line in text.splitlines():
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
        if (
            len(cells) not in (4, 5)
            or cells[0].startswith(("claim", "---", "-"))
            or not re.match(r"\d+ seeds", cells[-1])
        ):
            continue
        verdict, measurement = (cells[2], cells[3]) if len(cells) == 5 else (cells[1], cells[2])
        found.append((cells[0], verdict, measurement, int(re.match(r"(\d+) seeds", cells[-1]).group(1))))
    return found


def _values(frame: pd.DataFrame, method: str) -> np.ndarray:
    rows = frame[frame["method"] == method].sort_values("seed")
    if rows.empty:
        raise ValueError(f"leaderboard.csv has no row {method!r}")
    return rows["eval/accuracy"].to_numpy(dtype=float)


def read_board(frame: pd.DataFrame, claims: list[str]) -> dict[str, tuple[str, str]]:
    """``{claim: (after, reading and robustness)}`` for a board with at least :data:`MIN_SEEDS` seeds."""
    task = frame["task"].iloc[0]
    if task not in DECLARED:
        raise ValueError(f"no claim of the {task} board is declared here; declare them in DECLARED")
    readings = {}
    for claim in claims:
        d = next((c for c in DECLARED[task] if claim.startswith(c.prefix)), None)
        if d is None:
            raise ValueError(f"the {task} board's claim {claim!r} is not declared in DECLARED")
        if d.kind == "ratio":
            arm, base, start = (_values(frame, m) for m in d.rows)
            values = (arm - start, base - start)
        else:
            a, b = (_values(frame, m) for m in d.rows)
            values = (a - b,)
        readings[claim] = (d, read(d.kind, values, d.threshold))
    family = [c for c, (d, _) in readings.items() if not d.gate]
    adjusted = dict(zip(family, adjust([readings[c][1] for c in family], "holm")))
    collapses = {
        m: collapse_count(_values(frame, m), COLLAPSE_BELOW)
        for m in sorted(set(frame["method"]))
        if m != "Instruct (step 0)"
    }
    gate = next((r for d, r in readings.values() if d.gate), None)
    opens = gate is not None and gate.word == "reproduced"
    out = {}
    for claim, (d, r) in readings.items():
        if d.gate:
            after = "works" if r.word == "reproduced" else "does not work"
        elif not opens:
            after = "testbed cannot decide (its positive control does not work)"
        elif over_claims(r):
            after = f"undecided (over-claims on its seeds; raw: {r.word})"
        else:
            after = label(adjusted[claim], r.flips)
            if r.decided and adjusted[claim] != r.word:
                after = f"{after} (raw: {r.word})"
        numbers = (
            f"Hodges–Lehmann margin {'(arm gain − ½ base gain) ' if d.kind == 'ratio' else ''}"
            f"{r.estimate.bounds(scale=100, sign=True)} points, signed-rank p = {r.p_value:.3g}; "
            + robustness(r, collapses, scale=100)
        )
        if r.decided:
            above, below = own_seed_error(r)
            numbers += (
                f"; on its own seeds (4000 draws from them, shifted to 0) its interval errs {100 * above:.1f}% "
                f"(false *reproduced*) / {100 * below:.1f}% (false *not reproduced*), each promised 2.5%"
            )
        out[claim] = (after, numbers)
    return out


def why(before: str, after: str, seeds: int) -> str:
    """The reason a verdict changed ('' when it did not)."""
    if before == after:
        return ""
    if seeds < MIN_SEEDS:
        return f"{seeds} seeds: no 95% signed-rank interval below {MIN_SEEDS} (the t-interval broke its 2.5% there)"
    if "interim" in after:
        return "a part of a pre-registered board: one look, at the end"
    if "over-claims" in after:
        return "its interval errs beyond 2.5% on the decided side on the claim's own seeds"
    if "adjusted" in after:
        return "decided raw, not at Holm's adjusted level over the board's two claims"
    return "read by the typical seed's margin (Hodges–Lehmann / Wilcoxon) instead of the mean's t-interval"


def board_section(report: Path) -> list[str]:
    """The before → after table of one board's report."""
    frame = pd.read_csv(report.parent / "leaderboard.csv", low_memory=False)
    seeds = int(frame["seed"].nunique())
    rows = report_rows(report.read_text())
    part = any(p in report.parts for p in PARTS)
    if part:
        after = {c: ("interim read (a part; not a verdict)", "") for c, *_ in rows}
    elif seeds < MIN_SEEDS:
        after = {c: (f"no verdict (n = {seeds} seeds < {MIN_SEEDS})", "") for c, *_ in rows}
    else:
        after = read_board(frame, [c for c, *_ in rows])
    lines = [
        f"## `{report.relative_to(ROOT)}` ({seeds} seeds)",
        "",
        "| claim | before | after | the new reading | why |",
        "| --- | --- | --- | --- | --- |",
    ]
    for claim, verdict, measurement, _ in rows:
        new, numbers = after[claim]
        reason = why(verdict, new, seeds)
        if mixed := confound(frame, claim):
            new, reason = "no verdict (confounded)", f"{reason}; {mixed}: compare at one lr fixed in advance"
        lines.append(f"| {claim} | {verdict}: {measurement} | {new} | {numbers} | {reason} |")
    return [*lines, ""]


def study_section(path: Path) -> list[str]:
    """The before → after table of every study in ``study_verdicts.md`` (each with at most 5 seeds)."""
    lines = [f"## The studies (`{path.relative_to(ROOT)}`)", ""]
    for block in path.read_text().split("\n## ")[1:]:
        title = block.splitlines()[0]
        rows = report_rows(block)
        gates = re.findall(r"^Gate: (.*?) \((works|does not work)\)\.", block, flags=re.M)
        lines += [f"### {title}", "", "| claim | before | after | why |", "| --- | --- | --- | --- |"]
        for measurement, verdict in gates:
            lines.append(
                f"| gate | {verdict}: {measurement} | no verdict (≤ 5 seeds < {MIN_SEEDS}) | {why(verdict, '', 5)} |"
            )
        for claim, verdict, measurement, seeds in rows:
            new = f"no verdict (n = {seeds} seeds < {MIN_SEEDS})" if seeds < MIN_SEEDS else "not re-read"
            lines.append(f"| {claim} | {verdict}: {measurement} | {new} | {why(verdict, new, seeds)} |")
        lines.append("")
    return lines


def main(argv: list[str] | None = None) -> int:
    """Write the before → after tables of every committed board and study."""
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=RESULTS / "audits" / "verdict_changes.md")
    args = parser.parse_args(argv)
    reports = sorted(RESULTS.rglob("LEADERBOARD.md"))
    lines = [
        f"`{shlex.join(['python', 'benchmarks/audits/verdict_changes.py', *argv])}`",
        "",
        "# Every committed verdict, before → after the reading rule of `rewardzoo.board.reading`",
        "",
        "After: each claim's per-seed margins read by the Hodges–Lehmann centre with its Wilcoxon signed-rank 95% "
        f"interval (the interval that kept its one-sided 2.5% on the boards' own seeds, "
        "[interval_coverage.md](interval_coverage.md)); no verdict below "
        f"{MIN_SEEDS} seeds; the board's claims a family read at Holm's adjusted level, its positive control a gate; "
        "a verdict one seed's removal flips reads *(fragile)*; a part of a pre-registered board an interim read. "
        "The rule was chosen by the coverage audit, but after these seeds were read: a decided verdict here is a "
        "re-reading, not a pre-registered confirmation.",
        "",
    ]
    for report in reports:
        lines += board_section(report)
    lines += study_section(RESULTS / "study_verdicts.md")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
