"""The tuning stage of a board: each trained row over the grid on the validation split, at tuning seeds
disjoint from the reported ones, and its setting chosen from those validation numbers alone
(:func:`rewardzoo.protocol.choose`; ``TUNING.md`` and ``tuning.csv``)."""

from __future__ import annotations

import math
from pathlib import Path

from omegaconf import OmegaConf

from rewardzoo.board.rows import BOARDS, Entry
from rewardzoo.board.runs import SHARED, run_spec, slug
from rewardzoo.protocol import TUNING_OVERRIDES, Choice, Grid, Setting, ValidationRow, choose, write_tuning
from rewardzoo.sweep import RunResult, RunSpec, run_sweep


def base_lr(e: Entry) -> float:
    """The task's shared policy learning rate (the twins' ``grpo.lr``), from the entry's resolved config."""
    return float(run_spec("lr", e, 0, Path("unused"), False).config().grpo.lr)


def grid_points(entries: list[Entry], grid: Grid, by_hand: dict[tuple[str, str], Setting]) -> dict[tuple[str, str], list[Setting]]:
    """Each trained entry's settings in the grid's tie-break order, but for the ``by_hand`` ones (not
    tuned); every task's tuned methods checked for an equal tuning budget
    (:meth:`~rewardzoo.protocol.Grid.check_equal_budget`)."""
    unknown = sorted(f"{t}/{m}" for t, m in set(by_hand) - {(e.task, e.method) for e in entries if e.trained})
    if unknown:
        raise ValueError(f"--choose names no trained row of this board: {unknown}")
    entries = [e for e in entries if (e.task, e.method) not in by_hand]
    for task in dict.fromkeys(e.task for e in entries):
        grid.check_equal_budget(task, [e.method for e in entries if e.task == task and e.trained])
    unknown = [k.method for k in grid.own if k.method not in {f"{e.task}/{e.method}" for e in entries if e.trained}]
    if unknown:
        raise ValueError(f"--tune-key names no trained row of this board: {unknown}")
    return {(e.task, e.method): grid.points(e.task, e.method, base_lr(e)) for e in entries if e.trained}


def tuning_specs(entries: list[Entry], points: dict[tuple[str, str], list[Setting]], seeds: list[int], runs: Path,
                 quick: bool) -> dict[str, tuple[Entry, Setting, int, RunSpec]]:
    """One tuning run per trained entry, setting and tuning seed, on the validation split
    (:data:`~rewardzoo.protocol.TUNING_OVERRIDES`), under ``runs/tuning/<task>/<slug>/<setting>/seed<s>``;
    by name ``tune/<task>/<method>/<setting>/seed<s>``."""
    out = {}
    for s in seeds:
        for e in entries:
            for setting in points.get((e.task, e.method), []):
                name = f"tune/{e.task}/{e.method}/{setting.label}/seed{s}"
                run_dir = runs / "tuning" / e.task / slug(e.method) / setting.slug / f"seed{s}"
                out[name] = (e, setting, s, run_spec(name, e, s, run_dir, quick, (*setting.overrides, *TUNING_OVERRIDES)))
    return out


def start_order(planned: dict[str, tuple[Entry, Setting, int, RunSpec]], points: dict[tuple[str, str], list[Setting]],
                seeds: list[int]) -> list[RunSpec]:
    """The tuning runs in the order the sweep starts them: round-robin, so runs that share work
    (:mod:`rewardzoo.core.shared_work`: one task's runs at a seed share the step-0 evaluation, one
    row's learning rates its reward's warm-up) start apart.  Seed by seed, then grid point by grid
    point, then the rows' place in their task, then task: every task's first row at the first grid
    point, every task's second row there, …, then the second grid point.  (Row by row, a row's
    learning rates were adjacent, and with two jobs its first two started together and both computed
    what the second should have read.)  The same runs as ``planned``; only the order differs.  Not
    spread: on a one-task board its first two runs (their step-0 evaluation), nor rows whose warm-ups
    coincide when they sit side by side in their task (RAL and RAL frozen judge)."""
    tasks = list(dict.fromkeys(task for task, _ in points))
    rank = {row: [r for r in points if r[0] == row[0]].index(row) for row in points}  # the row's place in its task

    def place(run: tuple[Entry, Setting, int, RunSpec]) -> tuple[int, int, int, int]:
        e, setting, seed, _ = run
        row = (e.task, e.method)
        return seeds.index(seed), points[row].index(setting), rank[row], tasks.index(e.task)

    return [spec for *_, spec in sorted(planned.values(), key=place)]


def validation_rows(planned: dict[str, tuple[Entry, Setting, int, RunSpec]],
                    results: dict[str, RunResult]) -> list[ValidationRow]:
    """Every tuning run's final value of its board's tuning metric, with the split its saved
    configuration says it evaluated on (NaN when the run logged no value)."""
    rows = []
    for name, (e, setting, seed, spec) in planned.items():
        key = BOARDS[e.task].tune_by[0]
        values = [r[key] for r in results[name].rows if r.get(key) is not None]
        split = OmegaConf.load(Path(spec.run_dir) / "config.yaml").eval.split
        rows.append(ValidationRow(e.task, e.method, setting, seed, split, values[-1] if values else math.nan))
    return rows


def tune(entries: list[Entry], grid: Grid, seeds: list[int], runs: Path, out: Path, jobs: int, quick: bool,
         progress: bool, by_hand: dict[tuple[str, str], Setting], command: str = "") -> dict[tuple[str, str], Choice]:
    """The tuning stage: run (or reuse) every tuning run, choose each trained entry's setting from the
    validation rows alone (:func:`~rewardzoo.protocol.choose`; ``by_hand`` settings are taken as given),
    write ``out/TUNING.md`` and ``out/tuning.csv``; returns the choices."""
    points = grid_points(entries, grid, by_hand)
    planned = tuning_specs(entries, points, seeds, runs, quick)
    results = run_sweep(start_order(planned, points, seeds), jobs=jobs, progress=progress, desc="tuning",
                        share_dir=runs / SHARED)
    rows = validation_rows(planned, results)
    choices = {key: Choice(setting, by="hand") for key, setting in by_hand.items()}
    for (task, method), order in points.items():
        mine = [r for r in rows if (r.task, r.method) == (task, method)]
        choices[(task, method)] = choose(mine, BOARDS[task].tune_by[1], order)
    grids = {}
    for e in entries:
        if e.trained:
            grid_of = grids.setdefault(e.task, {"metric": BOARDS[e.task].tune_by[0], "direction": BOARDS[e.task].tune_by[1],
                                                "points": {}})
            grid_of["points"][e.method] = points.get((e.task, e.method), [])
    write_tuning(out, grids, rows, choices, [r.wall_s for r in results.values()], seeds, command)
    return choices
