"""A board's tables: per task, every row's final test values over seeds (mean ± 95% t-interval), as
Markdown, as ``leaderboard.csv`` (one row per run) and as each task's learning curves (a PNG)."""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass, field
from pathlib import Path

from rewardzoo.board.rows import BOARDS, Board, Entry
from rewardzoo.board.runs import config_hash, final
from rewardzoo.eval import Estimate, mean_ci
from rewardzoo.protocol import Choice
from rewardzoo.sweep import RunResult


@dataclass
class Table:
    """Per method: per column, the final values over seeds."""

    board: Board
    methods: list[str] = field(default_factory=list)
    values: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    roles: dict[str, str] = field(default_factory=dict)
    settings: dict[str, str] = field(default_factory=dict)

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


def tables(
    entries: list[Entry],
    results: dict[str, RunResult],
    seeds: list[int],
    choices: dict[tuple[str, str], Choice] | None = None,
) -> dict[str, Table]:
    """The tables of every task, from the finished runs."""
    out: dict[str, Table] = {}
    for e in entries:
        table = out.setdefault(e.task, Table(BOARDS[e.task]))
        table.methods.append(e.method)
        table.roles[e.method] = e.role
        choice = (choices or {}).get((e.task, e.method))
        table.settings[e.method] = "—" if not e.trained else "recipe" if choice is None else choice.setting.label
        runs = [final(results[f"{e.task}/{e.method}/seed{s}"]) for s in seeds]
        table.values[e.method] = {col: [r[col] for r in runs if col in r] for col, _ in table.board.columns}
    return out


def read_csvs(paths: list[Path]) -> list[dict[str, str]]:
    """The rows of one or more boards' ``leaderboard.csv`` files (:func:`write_csv`), checked to be one board
    before anything is written: every file a board's CSV; no run (task, method, seed) twice; each method's runs of
    one resolved configuration (``config_hash``), role and setting in every file; and every method of a task over
    the same seeds. A board run in parts over disjoint seeds (``--reported-seeds``) merges this way. Raises
    ValueError naming the file and what to change."""
    needed = {"task", "method", "role", "setting", "seed"}
    rows: list[dict[str, str]] = []
    seen: dict[tuple[str, str, str], Path] = {}
    first: dict[tuple[str, str], tuple[tuple[str, str, str], Path]] = {}
    for path in paths:
        with open(path, newline="") as f:
            part = list(csv.DictReader(f))
        if not part or not needed <= set(part[0]):
            raise ValueError(
                f"{path} is not a board's leaderboard.csv (columns {', '.join(sorted(needed))}, one row per run): "
                "give the file `rewardzoo leaderboard` wrote beside LEADERBOARD.md"
            )
        unknown = sorted({r["task"] for r in part} - set(BOARDS))
        if unknown:
            raise ValueError(f"{path}: unknown task(s) {', '.join(unknown)}; a board's tasks are {', '.join(BOARDS)}")
        for r in part:
            run = (r["task"], r["method"], r["seed"])
            if run in seen:
                raise ValueError(
                    f"{path}: {r['method']} on {r['task']} at seed {r['seed']} is also in {seen[run]}; "
                    "parts of one board must hold disjoint seeds"
                )
            seen[run] = path
            identity = (r.get("config_hash", ""), r["role"], r["setting"])
            known, where = first.setdefault((r["task"], r["method"]), (identity, path))
            if identity != known:
                raise ValueError(
                    f"{path}: {r['method']} on {r['task']} ran as (config hash, role, setting) {identity}, but "
                    f"as {known} in {where}; only runs of the same rows and recipes merge into one board"
                )
        rows += part
    for task in {r["task"] for r in rows}:
        by_method: dict[str, set[str]] = {}
        for r in rows:
            if r["task"] == task:
                by_method.setdefault(r["method"], set()).add(r["seed"])
        if len({frozenset(s) for s in by_method.values()}) > 1:
            listed = "; ".join(f"{m}: {', '.join(sorted(s, key=int))}" for m, s in by_method.items())
            raise ValueError(f"{task}: the methods ran over different seeds ({listed}); give every part's CSV")
    return rows


def tables_from_csv(paths: Path | list[Path]) -> tuple[dict[str, Table], list[int], float]:
    """The tables one board's ``leaderboard.csv`` (:func:`write_csv`) holds, or several parts' merged
    (:func:`read_csvs`) — every method's per-seed final values of every metric, its role and setting — with the
    board's seeds and its summed run wall time in seconds: what a board re-reported from its CSV reads
    (:func:`rewardzoo.board.report.report_from_csv`)."""
    rows = read_csvs([paths] if isinstance(paths, Path) else paths)
    needed = {"task", "method", "role", "setting", "seed"}
    seeds = sorted({int(r["seed"]) for r in rows})
    out: dict[str, Table] = {}
    for r in sorted(rows, key=lambda r: int(r["seed"])):
        table = out.setdefault(r["task"], Table(BOARDS[r["task"]]))
        if r["method"] not in table.values:
            table.methods.append(r["method"])
            table.roles[r["method"]], table.settings[r["method"]] = r["role"], r["setting"]
            table.values[r["method"]] = {}
        for key, value in r.items():
            if key not in needed and key != "config_hash" and value not in ("", None):
                table.values[r["method"]].setdefault(key, []).append(float(value))
    wall = math.fsum(float(r["time/wall_s"]) for r in rows if r.get("time/wall_s"))
    return out, seeds, wall


def write_rows(path: Path, rows: list[dict]) -> None:
    """``leaderboard.csv``: one row per run, task, method, role, setting, seed and config hash first, then
    every metric in name order."""
    first = ["task", "method", "role", "setting", "seed", "config_hash"]
    keys = first + sorted({k for r in rows for k in r} - set(first))
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=keys)
        writer.writeheader()
        writer.writerows(rows)


def _cell(est: Estimate, column: str) -> str:
    if column.startswith("time/"):
        return est.format(digits=0)
    points = column.endswith(("accuracy", "hack_rate", "proxy_pass", "win_rate"))
    return est.format(scale=100, digits=1) if points else est.format(digits=3)


def markdown(task: str, table: Table, seeds: int) -> list[str]:
    """One task's table as Markdown lines."""
    cols = table.board.columns
    lines = [
        f"## {table.board.title} (`{task}`)",
        "",
        "| method | role | setting | "
        + " | ".join(f"`{c}`{' ↑' if d == 'max' else ' ↓' if d == 'min' else ''}" for c, d in cols)
        + " |",
        "| --- | --- | --- |" + " ---: |" * len(cols),
    ]
    best = {c: table.best(c, d) for c, d in cols}
    for m in table.methods:
        cells = []
        for c, _ in cols:
            text = _cell(table.estimate(m, c), c)
            cells.append(f"**{text}**" if best[c] == m else text)
        setting = table.settings.get(m, "recipe")
        lines.append(
            f"| {m} | {table.roles.get(m, '')} | {setting if setting in ('—', 'recipe') else f'`{setting}`'} | "
            + " | ".join(cells)
            + " |"
        )
    lines += [
        "",
        f"Test split. Mean ± half-width of the 95% t-interval over {seeds} seed(s); accuracy-like columns in "
        "points. Bold: best, and its interval does not overlap the runner-up's. Setting: the one the tuning "
        "stage chose on the validation split (TUNING.md); `recipe`: the recipe's own, untuned.",
        "",
    ]
    return lines


def write_csv(
    path: Path, entries: list[Entry], results: dict[str, RunResult], seeds: list[int], tabs: dict[str, Table]
) -> None:
    """One row per run: task, method, role, setting, seed, config hash, every final metric."""
    rows = []
    for e in entries:
        for s in seeds:
            r = results[f"{e.task}/{e.method}/seed{s}"]
            rows.append(
                {
                    "task": e.task,
                    "method": e.method,
                    "role": e.role,
                    "setting": tabs[e.task].settings[e.method],
                    "seed": s,
                    "config_hash": config_hash(r.spec),
                    **final(r),
                }
            )
    write_rows(path, rows)


def plot_curves(
    path: Path, task: str, table: Table, entries: list[Entry], results: dict[str, RunResult], seeds: list[int]
) -> None:
    """The headline metric of every method of a task over steps, mean and 95% band over seeds."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    key = table.board.headline
    fig, ax = plt.subplots(figsize=(6, 4))
    for i, e in enumerate(x for x in entries if x.task == task and x.trained):
        curves = [
            {r["step"]: r[key] for r in results[f"{task}/{e.method}/seed{s}"].rows if r.get(key) is not None}
            for s in seeds
        ]
        steps = sorted(set.intersection(*(set(c) for c in curves)))
        est = [mean_ci([c[t] for c in curves]) for t in steps]
        ax.plot(steps, [v.mean for v in est], color=f"C{i % 10}", label=e.method)
        if len(seeds) > 1:
            ax.fill_between(steps, [v.low for v in est], [v.high for v in est], color=f"C{i % 10}", alpha=0.2)
    ax.set_xlabel("RL step")
    ax.set_ylabel(key)
    ax.set_title(table.board.title, fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
