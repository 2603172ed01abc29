"""A board's runs: each row's run at a seed (its directory, overrides and name), a finished run's final
values, the checks made before any work (equal twins, ``--add-method`` rows) and the board's rows."""

from __future__ import annotations

import hashlib
from pathlib import Path

from rewardzoo.board.rows import PRESETS, QUICK, TWIN_EXCEPTIONS, Entry, entry
from rewardzoo.core.config import as_dict, to_yaml
from rewardzoo.protocol import Choice, Setting, twin_differences
from rewardzoo.sweep import RunResult, RunSpec
from rewardzoo.zoo import resolve_recipe, shipped_recipes

SHARED = "shared"
"""The board's ``share_dir`` under its runs directory: the work its runs would repeat exactly, done once
(a seed's step-0 evaluation, a learned reward's warm-up; :mod:`rewardzoo.core.shared_work`)."""


def slug(method: str) -> str:
    """A method label as a directory name: ``RAL g=D frozen judge`` → ``ral_g_d_frozen_judge``."""
    return "".join(c if c.isalnum() else "_" for c in method.lower().replace("(", "").replace(")", "")).strip("_")


def run_spec(name: str, e: Entry, seed: int, run_dir: Path, quick: bool, extra: tuple[str, ...] = ()) -> RunSpec:
    """The run of row ``e`` at ``seed`` in ``run_dir``, named ``name``: its overrides, then ``--quick``'s (none
    for a full board), then ``extra`` (a setting, the tuning overrides)."""
    quick_overrides = () if not quick else QUICK[1:] if not e.trained else QUICK
    if e.task == "refdist":
        quick_overrides = tuple(o for o in quick_overrides if not o.startswith("eval.n_examples="))
    return RunSpec(name, e.recipe, run_dir, (f"seed={seed}", *e.overrides, *quick_overrides, *extra), e.factory)


def specs(
    entries: list[Entry],
    seeds: list[int],
    runs: Path,
    quick: bool,
    choices: dict[tuple[str, str], Choice] | None = None,
) -> list[RunSpec]:
    """The board's runs: one per entry and seed under ``runs/<task>/<slug(method)>/<setting>/seed<s>``
    at the entry's chosen setting (none: the recipe's), seed by seed (a stopped sweep leaves whole boards
    for its first seeds); named ``<task>/<method>/seed<s>``."""
    choices = choices or {}
    result = []
    for s in seeds:
        for e in entries:
            setting = choices[(e.task, e.method)].setting if (e.task, e.method) in choices else Setting()
            result.append(
                run_spec(
                    f"{e.task}/{e.method}/seed{s}",
                    e,
                    s,
                    runs / e.task / slug(e.method) / setting.slug / f"seed{s}",
                    quick,
                    setting.overrides,
                )
            )
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


def check_twins(entries: list[Entry]) -> None:
    """Raise ValueError, before any work, when two entries of a task resolve to configurations that
    differ outside the reward and the :data:`TWIN_EXCEPTIONS` (``rewardzoo.protocol.twin_differences``)."""
    found = []
    for task in dict.fromkeys(e.task for e in entries):
        mine = [e for e in entries if e.task == task]
        configs = {e.method: as_dict(run_spec(e.method, e, 0, Path("twin"), False).config()) for e in mine}
        excepted = {e.method: TWIN_EXCEPTIONS[(task, e.method)] for e in mine if (task, e.method) in TWIN_EXCEPTIONS}
        found += [f"{task}/{line}" for line in twin_differences(configs, excepted)]
    if found:
        raise ValueError(
            "twins differ outside the reward (a board compares rewards, so every other setting must be "
            "shared):\n  " + "\n  ".join(found) + "\nGive every row of the task the same settings (or "
            "name the exception, with its reason, in rewardzoo.board.rows.TWIN_EXCEPTIONS)"
        )


def parse_added(preset: str, text: str, entries: list[Entry]) -> Entry:
    """An ``--add-method`` row: ``TASK:LABEL:RECIPE[:OVERRIDES]`` (a YAML path or a shipped recipe's name)
    or ``TASK:LABEL:MODULE:FUNCTION[:OVERRIDES]`` (a reward factory, trained on the task's SFT row's
    recipe); ``OVERRIDES`` are space-separated ``key=value``.  The row gets the preset's settings of
    the task, like every shipped row."""
    parts = text.split(":")
    if len(parts) < 3 or not parts[0] or not parts[1] or not parts[2]:
        raise ValueError(
            f"--add-method takes TASK:LABEL:RECIPE[:OVERRIDES] or TASK:LABEL:MODULE:FUNCTION[:OVERRIDES]; got {text!r}"
        )
    task, label, source, rest = parts[0], parts[1], parts[2], parts[3:]
    tasks = list(dict.fromkeys(e.task for e in entries))
    if task not in tasks:
        raise ValueError(f"--add-method {text!r}: task {task!r} is not on this board; its tasks: {', '.join(tasks)}")
    if label in {e.method for e in entries if e.task == task}:
        raise ValueError(f"--add-method {text!r}: the {task} board already has a row {label!r}; choose another label")
    is_recipe = source.endswith((".yaml", ".yml")) or source in shipped_recipes()
    factory = ""
    if not is_recipe:
        if not rest or "=" in rest[0]:
            raise ValueError(
                f"--add-method {text!r}: {source!r} is neither a YAML recipe nor a shipped recipe's name, "
                f"and a reward factory needs MODULE:FUNCTION"
            )
        factory, rest = f"{source}:{rest[0]}", rest[1:]
        source = next(e.recipe for e in entries if e.task == task and not e.trained)
    elif not resolve_recipe(source).is_file():
        raise ValueError(f"--add-method {text!r}: no recipe file {source!r}")
    overrides = " ".join(rest).split()
    if any("=" not in o for o in overrides):
        raise ValueError(f"--add-method {text!r}: overrides are space-separated key=value; got {overrides}")
    return entry(preset, task, label, str(source), *overrides, role="method (added)", factory=factory)


def board_entries(preset: str, tasks: list[str] | None = None, added: list[str] | None = None) -> list[Entry]:
    """The preset's entries (of ``tasks`` only, when given) plus the ``--add-method`` rows, twins checked."""
    if preset not in PRESETS:
        raise ValueError(f"unknown leaderboard preset {preset!r}; choose one of {', '.join(PRESETS)}")
    entries = [e for e in PRESETS[preset] if tasks is None or e.task in tasks]
    if not entries:
        raise ValueError(
            f"no entry of preset {preset!r} is on tasks {tasks}; its tasks: "
            f"{', '.join(dict.fromkeys(e.task for e in PRESETS[preset]))}"
        )
    for text in added or []:
        entries.append(parse_added(preset, text, entries))
    check_twins(entries)
    return entries
