"""A board from end to end: tune, train the chosen settings at the reported seeds, and write
``LEADERBOARD.md``, ``leaderboard.csv`` and the curves (:func:`leaderboard`); or say what it would
run (:func:`plan`)."""

from __future__ import annotations

import math
import re
import shutil
from pathlib import Path

from rewardzoo.board.claims import claim_lines
from rewardzoo.board.reading import check_look
from rewardzoo.board.rows import QUICK_LR_FACTORS
from rewardzoo.board.runs import SHARED, board_entries, specs
from rewardzoo.board.stability import check, stability_lines
from rewardzoo.board.table import markdown, plot_curves, read_csvs, tables, tables_from_csv, write_csv, write_rows
from rewardzoo.board.tuning import grid_points, tune
from rewardzoo.protocol import TUNING_SEED_BASE, TUNING_SEEDS, Choice, Grid, Setting
from rewardzoo.sweep import Executor, run_sweep

PART_NOTE = (
    "A part of a board run in parts (`--reported-seeds`): its progress only — the runs done and their cost below. "
    "No claim is read from a part; the board is read once, on all its pre-registered seeds "
    '(`--report-from` over every part\'s leaderboard.csv; docs/metrics.md, "How a verdict is read").'
)
"""What a part's LEADERBOARD.md says instead of the claims: a board run in parts shows no claim number until it is
read whole."""


def leaderboard(
    preset: str,
    seeds: list[int],
    out: Path,
    jobs: int = 2,
    quick: bool = False,
    command: str = "",
    progress: bool = True,
    runs: Path | None = None,
    tasks: list[str] | None = None,
    grid: Grid | None = None,
    tune_seeds: list[int] | None = None,
    tuning: bool = True,
    by_hand: dict[tuple[str, str], Setting] | None = None,
    added: list[str] | None = None,
    tune_only: bool = False,
    executor: Executor | None = None,
    keep_checkpoints: bool = False,
    part: bool = False,
) -> Path:
    """Run (or resume) a preset under the protocol and write LEADERBOARD.md, leaderboard.csv, the curves,
    TUNING.md and tuning.csv into ``out``; the run directories go under ``runs`` (default ``out/runs``);
    ``tasks`` keeps only those tasks' entries, ``added`` adds ``--add-method`` rows.  ``tuning=False``
    trains the recipes' settings (no TUNING.md; the table says so); ``tune_only`` stops after the tuning
    stage (its runs are then reused by the board).  ``executor`` runs every run (None: local processes,
    ``jobs`` at a time; :mod:`rewardzoo.sweep`).  Unless ``keep_checkpoints``, a finished run keeps only its
    trained policy (``run_dir/policy``; the board reads its metrics) and the runs' shared work (``runs/shared``:
    warm-ups, step-0 evaluations) is removed once the board is written.  Returns the path of LEADERBOARD.md
    (TUNING.md when ``tune_only``)."""
    if tune_only and not tuning:
        raise ValueError("--tune-only runs the tuning stage, which --no-tune turns off; give one of them")
    entries = board_entries(preset, tasks, added)
    grid = grid or (Grid(QUICK_LR_FACTORS, extend=0) if quick else Grid())
    tune_seeds = tune_seeds or default_tune_seeds(quick)
    check_seeds(seeds, tune_seeds)
    runs = runs or out / "runs"
    out.mkdir(parents=True, exist_ok=True)
    choices: dict[tuple[str, str], Choice] = {}
    if tuning:
        choices = tune(
            entries,
            grid,
            tune_seeds,
            runs,
            out,
            jobs,
            quick,
            progress,
            by_hand or {},
            command,
            executor,
            keep_checkpoints,
        )
    if tune_only:
        tidy(runs, keep_checkpoints)
        return out / "TUNING.md"
    results = run_sweep(
        specs(entries, seeds, runs, quick, choices),
        jobs=jobs,
        progress=progress,
        desc=f"leaderboard {preset}",
        share_dir=runs / SHARED,
        executor=executor,
        keep_checkpoints=keep_checkpoints,
    )
    tabs = tables(entries, results, seeds, choices)
    lines = [
        f"`{command}`" if command else "",
        "",
        f"# rewardzoo leaderboard — preset `{preset}`{' (quick)' if quick else ''}",
        "",
        "Every row tuned on the validation split (TUNING.md) and reported on the test split."
        if tuning
        else "**Untuned**: every row at its recipe's settings (`--no-tune`); not the fair protocol.",
        "",
    ]
    for task, table in tabs.items():
        lines += markdown(task, table, len(seeds))
        plot_curves(out / f"curves_{task}.png", task, table, entries, results, seeds)
        lines += [f"![{task}](curves_{task}.png)", ""]
        if (out / f"tuning_{task}.png").exists() and tuning:
            lines += [
                "Validation across the learning rate, every tuned row ([TUNING.md](TUNING.md)):",
                "",
                f"![{task}: validation across lr](tuning_{task}.png)",
                "",
            ]
    if quick:
        lines += ["No verdicts: `--quick` checks the command, not the science (1 seed, a few steps).", ""]
    elif part:
        lines += [PART_NOTE, ""]
    else:
        checks = check(entries, tabs, results, seeds, choices, tune_seeds, runs, quick, jobs) if tuning else {}
        lines += claim_lines(tabs, results, seeds, frozenset(c for c, k in checks.items() if not k.holds))
        if tuning:
            lines += ["", *stability_lines(checks)]
    walls = [r.wall_s for r in results.values()]
    lines += ["", f"{len(results)} board runs; summed run wall time {sum(walls) / 60:.1f} min."]
    write_csv(out / "leaderboard.csv", entries, results, seeds, tabs)
    path = out / "LEADERBOARD.md"
    path.write_text("\n".join(lines) + "\n")
    tidy(runs, keep_checkpoints)
    return path


def tidy(runs: Path, keep_checkpoints: bool) -> None:
    """Remove the runs' shared work (``runs/shared``: each seed's warm-ups and step-0 evaluations, a learned
    judge's warm-up a checkpoint's size) once every run that reads it has finished, unless ``keep_checkpoints``.
    A later board over the same runs recomputes what it needs (the same bits: the entries are deterministic)."""
    if not keep_checkpoints:
        shutil.rmtree(runs / SHARED, ignore_errors=True)


def default_tune_seeds(quick: bool = False, count: int | None = None) -> list[int]:
    """The tuning seeds when none are named: ``count`` of them (default :data:`~rewardzoo.protocol.TUNING_SEEDS`,
    ``--quick``: one) from :data:`~rewardzoo.protocol.TUNING_SEED_BASE`."""
    return [TUNING_SEED_BASE + i for i in range(count if count is not None else 1 if quick else TUNING_SEEDS)]


def check_seeds(seeds: list[int], tune_seeds: list[int]) -> None:
    """Raise ValueError, before any work, when a tuning seed is also a reported seed or one repeats."""
    if set(seeds) & set(tune_seeds) or len(set(tune_seeds)) != len(tune_seeds):
        raise ValueError(
            f"tuning seeds must be distinct and disjoint from the reported seeds {seeds}; got "
            f"{tune_seeds} "
            "(choose others with --tuning-seeds)"
        )


def report_from_csv(
    paths: Path | list[Path],
    command: str = "",
    out: Path | None = None,
    registered: list[int] | None = None,
    interim: bool = False,
) -> Path:
    """Rewrite ``LEADERBOARD.md`` from a board's ``leaderboard.csv`` alone: the tables and every positive control
    and claim with today's intervals (t over seeds, :mod:`rewardzoo.board.claims`), read from the per-seed final
    values (the run directories are not needed; a claim that needs per-example rows says how it was read instead).
    Several CSVs, the parts of one board run over disjoint seeds (``--reported-seeds``), merge into one board
    (checked by :func:`~rewardzoo.board.table.read_csvs` before anything is written) whose ``leaderboard.csv`` and
    ``LEADERBOARD.md`` go to ``out``; one CSV's report goes beside it unless ``out`` is given. The commands that
    trained the runs are kept from each part's LEADERBOARD.md (its first line, or its ``Runs:`` lines). With the
    board's pre-registered seeds (``registered``), a read on fewer of them is refused unless ``interim``, and an
    interim read is labelled as one (:func:`rewardzoo.board.reading.check_look`). Returns the path of the
    LEADERBOARD.md written."""
    paths = [paths] if isinstance(paths, Path) else list(paths)
    tabs, seeds, wall = tables_from_csv(paths)
    look = check_look(registered, seeds, interim) if registered is not None else ""
    rows = read_csvs(paths)
    target = out if out is not None else paths[0].parent
    md = target / "LEADERBOARD.md"
    made: list[str] = []
    title = "# rewardzoo leaderboard"
    for path in paths:
        beside = path.parent / "LEADERBOARD.md"
        old = beside.read_text().splitlines() if beside.is_file() else []
        runs = [m[1] for line in old if (m := re.match(r"Runs: `(.+?)`", line))]
        if not runs and old and old[0].startswith("`") and "--report-from" not in old[0]:
            runs = [old[0].strip("`")]
        made += [r for r in runs if r not in made]
        title = next((line for line in old if line.startswith("# ")), title)
    target.mkdir(parents=True, exist_ok=True)
    if out is not None:
        write_rows(target / "leaderboard.csv", rows)
    source = paths[0].name if len(paths) == 1 else f"{len(paths)} parts' leaderboard.csv ({', '.join(map(str, paths))})"
    lines = [
        f"`{command}`" if command else "",
        "",
        title,
        "",
        *([f"Runs: `{r}`" for r in made] or ["Runs: (the command that trained them is not recorded)"]),
        "",
        f"Re-reported from {source} (one row per run: each run's final test values), not from the run "
        "directories: the tables and the claims below read each seed's final values.",
        "",
    ]
    for task, table in tabs.items():
        lines += markdown(task, table, len(seeds))
        if (target / f"curves_{task}.png").is_file():
            lines += [f"![{task}](curves_{task}.png)", ""]
    lines += [f"*{look[0].upper()}{look[1:]}*: every number below may change when the rest land.", ""] if look else []
    lines += claim_lines(tabs, None, seeds)
    lines += [
        "",
        f"{sum(len(t.methods) for t in tabs.values()) * len(seeds)} board runs; summed run wall time "
        f"{wall / 60:.1f} min.",
    ]
    md.write_text("\n".join(lines) + "\n")
    return md


def plan(
    preset: str,
    tasks: list[str] | None,
    added: list[str] | None,
    grid: Grid,
    seeds: list[int],
    tune_seeds: list[int],
    by_hand: dict[tuple[str, str], Setting],
) -> str:
    """What a board would run, nothing trained: each trained row's grid (the learning rates as values)
    and the run counts."""
    entries = board_entries(preset, tasks, added)
    points = grid_points(entries, grid, by_hand)
    k = len(tune_seeds)
    halving = sum(len(p) + math.ceil(len(p) / 2) * (k - 1) for p in points.values())
    lines = [
        f"preset {preset}: {len(entries)} rows × {len(seeds)} seeds ({', '.join(map(str, seeds))}) = "
        f"{len(entries) * len(seeds)} board runs; "
        f"{halving} tuning runs (seeds {', '.join(map(str, tune_seeds))}, validation split)"
    ]
    for e in entries:
        if (e.task, e.method) in by_hand:
            lines.append(f"  {e.task}/{e.method}: by hand: {by_hand[(e.task, e.method)].label}")
        elif e.trained:
            lines.append(f"  {e.task}/{e.method}: " + " | ".join(s.label for s in points[(e.task, e.method)]))
    lines.append(
        f"Tuning: every setting at seed {tune_seeds[0]}, the better half at the other {k - 1}; a row whose "
        f"choice sits at an end of its rates gets one more rate that way (each step at most {k} more "
        f"runs), up to {grid.extend} step(s) beyond each end: at most "
        f"{halving + 2 * grid.extend * k * len(points)} tuning runs."
    )
    return "\n".join(lines)
