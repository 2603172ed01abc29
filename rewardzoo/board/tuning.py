"""The tuning stage of a board: each trained row over the grid on the validation split, at tuning seeds
disjoint from the reported ones, and its setting chosen from those validation numbers alone
(:func:`rewardzoo.protocol.choose`; ``TUNING.md`` and ``tuning.csv``)."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

from omegaconf import OmegaConf

from rewardzoo.board.rows import BOARDS, Entry
from rewardzoo.board.runs import SHARED, run_spec, slug
from rewardzoo.protocol import (
    TUNING_OVERRIDES,
    Choice,
    Grid,
    Setting,
    ValidationRow,
    choose,
    extension,
    learning_rate,
    statistic,
    survivors,
    write_tuning,
)
from rewardzoo.sweep import Executor, RunResult, RunSpec, run_sweep


def base_lr(e: Entry) -> float:
    """The task's shared policy learning rate (the twins' ``grpo.lr``), from the entry's resolved config."""
    return float(run_spec("lr", e, 0, Path("unused"), False).config().grpo.lr)


def grid_points(
    entries: list[Entry], grid: Grid, by_hand: dict[tuple[str, str], Setting]
) -> dict[tuple[str, str], list[Setting]]:
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


def tuning_specs(
    entries: list[Entry], points: dict[tuple[str, str], list[Setting]], seeds: list[int], runs: Path, quick: bool
) -> dict[str, tuple[Entry, Setting, int, RunSpec]]:
    """One tuning run per trained entry, setting and tuning seed, on the validation split
    (:data:`~rewardzoo.protocol.TUNING_OVERRIDES`), under ``runs/tuning/<task>/<slug>/<setting>/seed<s>``;
    by name ``tune/<task>/<method>/<setting>/seed<s>``."""
    out = {}
    for s in seeds:
        for e in entries:
            for setting in points.get((e.task, e.method), []):
                name = f"tune/{e.task}/{e.method}/{setting.label}/seed{s}"
                run_dir = runs / "tuning" / e.task / slug(e.method) / setting.slug / f"seed{s}"
                out[name] = (
                    e,
                    setting,
                    s,
                    run_spec(name, e, s, run_dir, quick, (*setting.overrides, *TUNING_OVERRIDES)),
                )
    return out


def start_order(
    planned: dict[str, tuple[Entry, Setting, int, RunSpec]],
    points: dict[tuple[str, str], list[Setting]],
    seeds: list[int],
) -> list[RunSpec]:
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


def validation_rows(
    planned: dict[str, tuple[Entry, Setting, int, RunSpec]], results: dict[str, RunResult]
) -> list[ValidationRow]:
    """Every tuning run's final value of its board's tuning metric, with the split its saved
    configuration says it evaluated on (NaN when the run logged no value)."""
    rows = []
    for name, (e, setting, seed, spec) in planned.items():
        key = BOARDS[e.task].tune_by[0]
        values = [r[key] for r in results[name].rows if r.get(key) is not None]
        split = OmegaConf.load(Path(spec.run_dir) / "config.yaml").eval.split
        rows.append(ValidationRow(e.task, e.method, setting, seed, split, values[-1] if values else math.nan))
    return rows


def tune(
    entries: list[Entry],
    grid: Grid,
    seeds: list[int],
    runs: Path,
    out: Path,
    jobs: int,
    quick: bool,
    progress: bool,
    by_hand: dict[tuple[str, str], Setting],
    command: str = "",
    executor: Executor | None = None,
    keep_checkpoints: bool = True,
) -> dict[tuple[str, str], Choice]:
    """The tuning stage (the protocol's rules: :mod:`rewardzoo.protocol`): every trained entry's grid at the first
    tuning seed, the better half of it (:func:`~rewardzoo.protocol.survivors`) at the other tuning seeds, the
    choice from the validation rows alone (:func:`~rewardzoo.protocol.choose`: within noise of the best, the
    recipe's rate first); a row whose choice sits at an end of its learning rates gets one more rate that way
    (:func:`~rewardzoo.protocol.extension`) and the round repeats, until no row's grid grows.  ``by_hand``
    settings are taken as given.  Runs (or reuses) every tuning run, writes ``out/TUNING.md``,
    ``out/tuning.csv`` and ``out/tuning_<task>.png`` (:func:`plot_validation`); returns the choices.  ``executor``:
    where the runs go (:mod:`rewardzoo.sweep`; None = local processes, ``jobs`` at a time)."""
    points = grid_points(entries, grid, by_hand)
    of = {(e.task, e.method): e for e in entries}
    factors = {row: tuple(grid.lr_factors) for row in points}
    planned: dict[str, tuple[Entry, Setting, int, RunSpec]] = {}
    results: dict[str, RunResult] = {}

    def sweep(wanted: dict[tuple[str, str], list[Setting]], at: list[int], desc: str) -> list[ValidationRow]:
        more = tuning_specs(entries, wanted, at, runs, quick)
        if more:
            planned.update(more)
            results.update(
                run_sweep(
                    start_order(more, wanted, at),
                    jobs=jobs,
                    progress=progress,
                    desc=desc,
                    share_dir=runs / SHARED,
                    executor=executor,
                    keep_checkpoints=keep_checkpoints,
                )
            )
        return validation_rows(planned, results)

    while True:
        rows = sweep(points, seeds[:1], "tuning: every setting, first seed")
        direction = {row: BOARDS[row[0]].tune_by[1] for row in points}
        kept = {row: survivors(_of(rows, row), direction[row], order, seeds[0]) for row, order in points.items()}
        rows = sweep(kept, seeds[1:], "tuning: the better half, every seed")
        choices = {row: choose(_of(rows, row), direction[row], kept[row]) for row in points}
        grown = {}
        for row, choice in choices.items():
            lr = {s: learning_rate(s) / base_lr(of[row]) for s in points[row]}
            at = min(factors[row], key=lambda f: abs(math.log(f / lr[choice.setting])))  # the factor, free of rounding
            extra = extension(factors[row], grid.lr_factors, at, grid.extend)
            if extra is not None:
                grown[row] = (*factors[row], extra)
        if not grown:
            break
        for row, more in grown.items():
            factors[row] = more
            points[row] = replace(grid, lr_factors=more).points(row[0], row[1], base_lr(of[row]))
    choices.update({key: Choice(setting, by="hand") for key, setting in by_hand.items()})
    grids = {}
    for e in entries:
        if e.trained:
            grid_of = grids.setdefault(
                e.task,
                {
                    "metric": BOARDS[e.task].tune_by[0],
                    "direction": BOARDS[e.task].tune_by[1],
                    "points": {},
                    "extend": grid.extend,
                },
            )
            grid_of["points"][e.method] = points.get((e.task, e.method), [])
    write_tuning(out, grids, rows, choices, [r.wall_s for r in results.values()], seeds, command)
    for task, grid_of in grids.items():
        plot_validation(out / f"tuning_{task}.png", task, grid_of["points"], rows, choices)
    return choices


def _of(rows: list[ValidationRow], row: tuple[str, str]) -> list[ValidationRow]:
    return [r for r in rows if (r.task, r.method) == row]


def plot_validation(
    path: Path,
    task: str,
    points: dict[str, list[Setting]],
    rows: list[ValidationRow],
    choices: dict[tuple[str, str], Choice],
) -> None:
    """Every tuned row's validation curve across the learning rate: its mean over tuning seeds at each rate
    (a line; the best own-key value at each rate when the row has one), each seed's value (dots), the chosen
    setting circled, the settings within noise of it filled: how flat the choice was."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    sign = 1.0 if BOARDS[task].tune_by[1] == "max" else -1.0
    for i, (method, settings) in enumerate(points.items()):
        mine = [r for r in rows if (r.task, r.method) == (task, method) and math.isfinite(r.value)]
        if not mine:
            continue
        color = f"C{i % 10}"
        means: dict[float, float] = {}
        for s in settings:
            values = [r.value for r in mine if r.setting == s]
            lr = learning_rate(s)
            if values and lr is not None:
                mean = statistic(values)
                means[lr] = mean if lr not in means else max(means[lr], mean, key=lambda v: sign * v)
                ax.scatter([lr] * len(values), values, color=color, s=6, alpha=0.4)
        rates = sorted(means)
        ax.plot(rates, [means[lr] for lr in rates], color=color, marker=".", label=method)
        choice = choices.get((task, method))
        if choice is not None and choice.by == "validation" and (lr := learning_rate(choice.setting)) in means:
            near = [learning_rate(s) for s in choice.near if learning_rate(s) in means]
            ax.scatter(near, [means[x] for x in near], color=color, s=30, zorder=3)
            ax.scatter([lr], [means[lr]], facecolors="none", edgecolors=color, s=120, linewidths=1.5, zorder=3)
    ax.set_xscale("log")
    ax.set_xlabel("grpo.lr")
    ax.set_ylabel(f"validation {BOARDS[task].tune_by[0]} (final)")
    ax.set_title(f"{task}: validation across the learning rate (circled: chosen; filled: within noise)", fontsize=8)
    ax.legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
