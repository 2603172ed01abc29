"""The stability check of a board's verdicts: a decided verdict stands only if it also holds at every setting
the tuning stage found within noise of the chosen one (:attr:`rewardzoo.protocol.Choice.near`), the chosen one
itself included; otherwise the board prints it as *sensitive to tuning*, with the numbers at each setting.

The check costs no run: it reads the tuning runs the tuning stage already made (every setting within noise
survived the halving, so it ran at every tuning seed).  Each claim is measured, by the same function that
measures it on the test split, on the validation runs at the chosen settings and then with one row at a
time moved to each of its settings within noise.  A decided verdict *holds* at a setting when the
claim's point estimate there lies on the verdict's side of its threshold and its interval does not decide
the other way; validation has fewer seeds (the tuning seeds) and fewer examples than the test split, so an
undecided interval there is no contradiction, but a point on the other side is.  The chosen settings count
like any other: their tuning runs are seeds and prompts the test split did not see, so a point there on the
other side says the test verdict did not replicate (the rule was fixed on 2026-12-06, before the rubric-writing
pair of boards ran; until then the chosen settings' row was shown but not counted).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rewardzoo.board.claims import CLAIMS, positive_control
from rewardzoo.board.rows import Entry
from rewardzoo.board.runs import SHARED
from rewardzoo.board.table import Table
from rewardzoo.board.tuning import tuning_specs
from rewardzoo.protocol import Choice, Finding, Setting, verdict, word
from rewardzoo.sweep import RunResult, run_sweep

DECIDED = ("reproduced", "not reproduced")


@dataclass(frozen=True)
class Check:
    """One claim's stability: the test split's word, whether it holds at every setting within noise, and the
    validation numbers at the chosen settings and at each setting within noise that moves the claim."""

    claim: str
    test_word: str
    holds: bool
    numbers: tuple[tuple[str, str, bool], ...]
    """(where: ``chosen settings`` or ``METHOD at SETTING``, the measurement there, whether it holds)."""


def holds(finding: Finding, test_word: str) -> bool:
    """Whether ``finding`` (on validation, at one setting) agrees with the decided ``test_word``: its point on
    the word's side of the threshold, its interval not deciding the other way."""
    est, t = finding.estimate, finding.threshold
    claimed_side = est.mean > t if finding.above else est.mean < t
    other = DECIDED[1] if test_word == DECIDED[0] else DECIDED[0]
    return claimed_side == (test_word == "reproduced") and word(est, t, finding.above) != other


def findings(tabs: dict[str, Table], results: dict[str, RunResult], seeds: list[int]) -> dict[str, Finding]:
    """Every claim's finding (:data:`~rewardzoo.board.claims.CLAIMS`), by claim; a claim that reads a run
    missing from ``results`` (a row without tuning runs: set by hand, not trained) is left out."""
    out = {}
    for claim in CLAIMS:
        try:
            out.update({f.claim: f for f in claim(tabs, results, seeds)})
        except KeyError:
            continue
    return out


def check(
    entries: list[Entry],
    tabs: dict[str, Table],
    test: dict[str, RunResult],
    seeds: list[int],
    choices: dict[tuple[str, str], Choice],
    tune_seeds: list[int],
    runs: Path,
    quick: bool,
    jobs: int = 2,
    progress: bool = False,
) -> dict[str, Check]:
    """The stability of every claim the board decides on the test split (``test`` at ``seeds``): the tuning runs
    of every chosen setting and every setting within noise of it (``tune_seeds``, under ``runs``, all finished:
    the sweep reads them back), handed to :func:`assess`."""
    tuned = {row: choice for row, choice in choices.items() if choice.by == "validation"}
    wanted = {row: list(dict.fromkeys((choice.setting, *choice.near))) for row, choice in tuned.items()}
    planned = tuning_specs(entries, wanted, tune_seeds, runs, quick)
    done = run_sweep(
        list(spec for *_, spec in planned.values()),
        jobs=jobs,
        progress=progress,
        desc="stability: the tuning runs",
        share_dir=runs / SHARED,
    )
    at = {(e.task, e.method, setting): {} for e, setting, _, _ in planned.values()}
    for name, (e, setting, seed, _) in planned.items():
        at[(e.task, e.method, setting)][seed] = done[name]
    return assess(tabs, test, seeds, tuned, at, tune_seeds)


def assess(
    tabs: dict[str, Table],
    test: dict[str, RunResult],
    seeds: list[int],
    choices: dict[tuple[str, str], Choice],
    tuning: dict[tuple[str, str, Setting], dict[int, RunResult]],
    tune_seeds: list[int],
) -> dict[str, Check]:
    """Per claim the board decides on ``test`` (its printed verdict, :func:`~rewardzoo.protocol.verdict`, a
    decided word): the claim measured on the ``tuning`` runs (task, method, setting → tuning seed → run) at
    every row's chosen setting, then with one row at a time moved to each of its settings within noise
    (:attr:`~rewardzoo.protocol.Choice.near`); a move that leaves the claim's estimate as it was does not
    touch the claim and is not listed.  The verdict holds when it :func:`holds` at the chosen settings and at
    every move listed."""
    positives = {task: positive_control(task, tabs, test, seeds) for task in tabs}
    on_test = {
        c: f for c, f in findings(tabs, test, seeds).items() if verdict(f, len(seeds), positives[f.task]) in DECIDED
    }

    def at(moved: tuple[str, str] | None = None, setting: Setting | None = None) -> dict[str, RunResult]:
        pick = {row: setting if row == moved else choice.setting for row, choice in choices.items()}
        return {
            f"{task}/{method}/seed{s}": tuning[(task, method, pick[(task, method)])][s]
            for (task, method) in pick
            for s in tune_seeds
        }

    base = findings(tabs, at(), tune_seeds)
    numbers = {
        c: [("chosen settings", base[c].numbers, holds(base[c], word(f.estimate, f.threshold, f.above)))]
        for c, f in on_test.items()
        if c in base
    }
    for row, choice in choices.items():
        for setting in choice.near:
            if setting == choice.setting:
                continue
            moved = findings(tabs, at(row, setting), tune_seeds)
            for c in numbers:
                if c in moved and moved[c].estimate != base[c].estimate:
                    test_word = word(on_test[c].estimate, on_test[c].threshold, on_test[c].above)
                    numbers[c].append((f"{row[1]} at `{setting.label}`", moved[c].numbers, holds(moved[c], test_word)))
    out = {}
    for c, rows in numbers.items():
        test_word = word(on_test[c].estimate, on_test[c].threshold, on_test[c].above)
        out[c] = Check(c, test_word, all(ok for _, _, ok in rows), tuple(rows))
    return out


def stability_lines(checks: dict[str, Check]) -> list[str]:
    """The ``LEADERBOARD.md`` section: per decided claim, its validation numbers at the chosen settings and at
    every setting within noise that moves it, and whether the verdict holds there."""
    lines = [
        "## Stability under tuning",
        "",
        "A decided verdict stands only if it holds at every setting the tuning stage found within noise of the "
        "chosen one, the chosen settings included; otherwise it reads *sensitive to tuning*. Measured on the "
        "tuning runs (validation split, the tuning seeds): at the chosen settings, then one row at a time moved "
        "to each of its settings within noise (rows whose move changes the claim's number). *Holds*: the point "
        "lies on the verdict's side of the threshold and the interval does not decide the other way "
        "(`rewardzoo.board.stability`).",
        "",
        "| claim | test verdict | where (validation) | measurement | holds |",
        "| --- | --- | --- | --- | --- |",
    ]
    for c in checks.values():
        for where, numbers, ok in c.numbers:
            lines.append(
                f"| {c.claim} | {c.test_word}{'' if c.holds else ' → *sensitive to tuning*'} | {where} | "
                f"{numbers} | {'yes' if ok else '**no**'} |"
            )
    if not checks:
        lines.append("| (no decided claim) | | | | |")
    return lines + [""]
