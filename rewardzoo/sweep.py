"""Run many recipes, each in its own process, in parallel up to the cores, reusing finished runs.

The benchmarks (``benchmarks/power.py``, ``benchmarks/ral_vs_rlvr.py``) and ``rewardzoo
leaderboard`` are sweeps: a list of :class:`RunSpec` (a recipe, overrides and a run directory).
:func:`run_sweep`

1. trains every distinct SFT warm start first, one process each (runs of one task and seed share
   their warm start through the SFT cache, so no two processes ever train the same one),
2. then runs every spec whose run directory does not hold a finished run, as
   ``python -m rewardzoo.cli train RECIPE key=value ... run_dir=DIR`` with one intra-op thread
   (``OMP_NUM_THREADS=1``: ``jobs`` processes share the cores without oversubscription),
3. marks a finished run with ``run_dir/sweep_done.json`` (its wall time and command) only after the
   process exits 0, so a killed sweep resumes by re-running the unfinished specs from scratch.

A finished run is reused only while it is the run the spec asks for: before any work the sweep
compares each finished run's saved ``config.yaml`` with the spec's resolved configuration and, when
a recipe or a default changed since, refuses (:class:`StaleRunError`, naming the runs and the keys
that differ) instead of mixing old and new runs in one table.  Nothing is deleted: the message says
to point the sweep at a new directory or remove the stale runs.  Keys the saved configuration lacks
(settings added to the code after the run, at their defaults) are not compared.

One progress bar covers the whole sweep; each process writes its output to ``run_dir/train.log``.
A run that fails stops nothing else; :func:`run_sweep` raises at the end, naming the failed runs
and their logs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

from omegaconf import OmegaConf
from tqdm.auto import tqdm

from rewardzoo.core.checkpoint import resume_changes
from rewardzoo.core.config import as_dict
from rewardzoo.core.logger import read_metrics
from rewardzoo.core.sft import sft_cache_dir
from rewardzoo.zoo import TrainConfig, build_task, load_config

DONE = "sweep_done.json"


@dataclass(frozen=True)
class RunSpec:
    """One run of a sweep: ``rewardzoo train recipe *overrides run_dir=run_dir``."""

    name: str
    """A unique label, e.g. ``multiplication/rlvr/seed0``."""
    recipe: str
    """Path of the YAML recipe."""
    run_dir: Path
    """Where the run writes (and where a finished run is found again)."""
    overrides: tuple[str, ...] = field(default_factory=tuple)
    """``key=value`` overrides on top of the recipe (``run_dir`` is added by the sweep)."""

    def command(self, verb: str = "train") -> list[str]:
        """The process the sweep starts for this spec (an unfinished run starts over: ``overwrite=true``)."""
        fresh = ["overwrite=true"] if verb == "train" else []
        return [sys.executable, "-m", "rewardzoo.cli", verb, self.recipe, *self.overrides, f"run_dir={self.run_dir}",
                *fresh, "logging.progress=false"]

    def config(self) -> TrainConfig:
        """The resolved configuration of the run (validated: a bad spec fails before any work)."""
        return load_config(self.recipe, [*self.overrides, f"run_dir={self.run_dir}"])


@dataclass(frozen=True)
class RunResult:
    """A finished run: its directory, wall time and metrics rows."""

    spec: RunSpec
    wall_s: float
    rows: list[dict]


def is_finished(run_dir: Path) -> bool:
    """Whether ``run_dir`` holds a run the sweep completed (marked by ``sweep_done.json``)."""
    return (Path(run_dir) / DONE).is_file()


class StaleRunError(ValueError):
    """Finished runs of a sweep were made with another configuration than their specs now resolve to."""


NOT_COMPARED = ("run_dir", "logging.*", "recipe.*")
"""Keys (fnmatch patterns, as ``CoreConfig.RESUMABLE``) that do not change what a run computes: where
it writes, how it reports, how the recipe describes itself (``resume`` and ``overwrite`` are never
compared)."""


def config_changes(saved: dict, wanted: dict) -> list[str]:
    """``key: saved → wanted`` for every leaf both configurations hold with different values, outside
    :data:`NOT_COMPARED` (keys only one side holds — settings added to the code since — are skipped):
    the refused differences of the resume check, :func:`rewardzoo.core.checkpoint.resume_changes`."""
    return resume_changes(saved, wanted, NOT_COMPARED)[0]


def check_not_stale(specs: list[RunSpec], configs: dict[str, TrainConfig]) -> None:
    """Raise :class:`StaleRunError` when a finished run's saved config differs from its spec's."""
    stale = []
    for s in specs:
        saved_path = Path(s.run_dir) / "config.yaml"
        if is_finished(s.run_dir) and saved_path.is_file():
            changes = config_changes(OmegaConf.to_container(OmegaConf.load(saved_path)), as_dict(configs[s.name]))
            if changes:
                stale.append(f"{s.name} ({s.run_dir}): " + "; ".join(changes[:4]) + (" ..." if len(changes) > 4 else ""))
    if stale:
        raise StaleRunError(f"{len(stale)} finished run(s) were made with another configuration than the recipe now "
                            "gives, so their results would mix with new ones:\n  " + "\n  ".join(stale) +
                            "\nPoint the sweep at a new run directory, or delete these run directories to retrain "
                            "them (nothing was changed).")


def _run(cmd: list[str], log: Path) -> tuple[int, float]:
    log.parent.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}
    start = time.perf_counter()
    with open(log, "w") as out:
        code = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, env=env).returncode
    return code, time.perf_counter() - start


def run_sweep(specs: list[RunSpec], jobs: int = 2, progress: bool = True, desc: str = "sweep") -> dict[str, RunResult]:
    """Run every unfinished spec (SFT warm starts first), ``jobs`` processes at a time; return every
    spec's result by name.  Raises RuntimeError naming the runs that failed."""
    names = [s.name for s in specs]
    if len(set(names)) != len(names):
        raise ValueError(f"sweep spec names must be unique; repeated: {sorted({n for n in names if names.count(n) > 1})}")
    configs = {s.name: s.config() for s in specs}  # every spec validated before any work
    check_not_stale(specs, configs)
    todo = [s for s in specs if not is_finished(s.run_dir)]
    warm: dict[Path, RunSpec] = {}
    for s in todo:
        cfg = configs[s.name]
        if cfg.sft.enabled and not cfg.init_from:
            path = sft_cache_dir(cfg, build_task(cfg.task))
            if not (path / "sft_done.json").exists():
                warm.setdefault(path, s)
    failed: list[str] = []
    with tqdm(total=len(warm) + len(todo), desc=desc, disable=not progress, dynamic_ncols=True) as bar:
        bar.update(0)

        def launch(items, verb):
            with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
                futures = {pool.submit(_run, spec.command(verb), log): (spec, log) for spec, log in items}
                for future in as_completed(futures):
                    spec, log = futures[future]
                    code, wall = future.result()
                    if code != 0:
                        failed.append(f"{spec.name} ({verb}, exit {code}, log {log})")
                    elif verb == "train":
                        (spec.run_dir / DONE).write_text(json.dumps({"wall_s": wall, "command": spec.command()}))
                    bar.update(1)
                    bar.set_postfix_str(spec.name, refresh=False)

        launch([(s, s.run_dir.parent / f"{s.run_dir.name}.sft.log") for s in warm.values()], "sft")
        if not failed:
            launch([(s, s.run_dir / "train.log") for s in todo], "train")
    if failed:
        raise RuntimeError("these runs failed: " + "; ".join(failed))
    return {s.name: RunResult(s, json.loads((s.run_dir / DONE).read_text())["wall_s"],
                              read_metrics(s.run_dir / "metrics.jsonl")) for s in specs}


def eval_rows(run_dir: Path) -> dict[int, dict[str, list[float]]]:
    """Per-example held-out rows of a run, by evaluation step (from ``eval_rows.jsonl``)."""
    return {r["step"]: r["rows"] for r in read_metrics(Path(run_dir) / "eval_rows.jsonl")}
