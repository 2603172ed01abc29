"""Run many recipes, each in its own process, in parallel up to the cores, reusing finished runs.

The benchmarks (``benchmarks/power.py``, ``benchmarks/ral_vs_rlvr.py``) and ``rewardzoo
leaderboard`` are sweeps: a list of :class:`RunSpec` (a recipe, overrides and a run directory).
:func:`run_sweep`

1. trains every distinct SFT warm start, one process each (runs of one task and seed share their
   warm start through the SFT cache, so no two processes ever train the same one),
2. runs every spec whose run directory does not hold a finished run, as ``rewardzoo train RECIPE
   key=value ... run_dir=DIR`` with one intra-op thread (``OMP_NUM_THREADS=1``: ``jobs`` processes
   share the cores without oversubscription).  Each run starts as soon as its own warm start is
   trained (:func:`run_jobs`: a free worker takes the first ready job in the specs' order), and
   every process is forked from a fork server that imported the package once (:data:`PRELOAD`), so
   no run pays the ~11 s of importing torch and transformers,
   With ``share_dir`` the runs also share the work they would repeat exactly — each seed's step-0
   evaluation, a learned reward's warm-up (:mod:`rewardzoo.core.shared_work`); the leaderboard
   turns it on,
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
import multiprocessing
import os
import runpy
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch
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
    """The recipe: a YAML path or a shipped recipe's name."""
    run_dir: Path
    """Where the run writes (and where a finished run is found again)."""
    overrides: tuple[str, ...] = field(default_factory=tuple)
    """``key=value`` overrides on top of the recipe (``run_dir`` is added by the sweep)."""
    factory: str = ""
    """``module:function`` building the run's reward instead of the recipe's ``reward`` section (a
    method added to a board from the command line): the run is ``python -m rewardzoo.protocol train
    FACTORY RECIPE ...``.  Its code is not part of the stale check: after changing it, point the sweep
    at a new directory."""

    def module(self, verb: str = "train") -> str:
        """The command module the run's process runs as ``__main__``."""
        return "rewardzoo.protocol" if self.factory and verb == "train" else "rewardzoo.cli"

    def argv(self, verb: str = "train") -> list[str]:
        """The arguments of :meth:`module` the sweep runs for this spec (an unfinished run starts over:
        ``overwrite=true``)."""
        fresh = ["overwrite=true"] if verb == "train" else []
        head = [verb, self.factory] if self.module(verb) == "rewardzoo.protocol" else [verb]
        return [*head, self.recipe, *self.overrides, f"run_dir={self.run_dir}", *fresh, "logging.progress=false"]

    def command(self, verb: str = "train") -> list[str]:
        """The same as a shell command: ``python -m`` :meth:`module` and :meth:`argv`."""
        return [sys.executable, "-m", self.module(verb), *self.argv(verb)]

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


NOT_COMPARED = ("run_dir", "logging.*", "recipe.*", "sft.cache_dir", "share_dir")
"""Keys (fnmatch patterns, as ``CoreConfig.RESUMABLE``) that do not change what a run computes: where
it writes, how it reports, how the recipe describes itself, where the SFT warm starts are cached (the
cache is keyed by what shapes the warm start, so a moved runs directory keeps its runs) and where
the runs share repeated work (keyed the same way; ``resume`` and ``overwrite`` are never compared)."""


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


THREAD_ENV = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}
"""The environment of every run's process: one intra-op thread, so ``jobs`` processes share the cores."""

PRELOAD = ["rewardzoo.sweep", "rewardzoo.recipes"]
"""What the fork server imports once (torch, transformers, the whole package: ~11 s a process on the
2-core machine); each run's process is forked from it with these modules already loaded and runs
the ``rewardzoo`` command module (``rewardzoo.cli``, itself light) as ``__main__``."""


def _child(module: str, argv: list[str], log: str, path: list[str]) -> None:
    """The body of one run's process: its output to ``log``, one intra-op thread, the sweep's own
    ``sys.path`` (``path``: a reward factory's module is found as in the sweep's process), then
    ``python -m module *argv``; exits with the command's status (an exception prints its traceback to
    the log and exits 1), and records that status in ``log.status``."""
    sys.path[:0] = [p for p in path if p not in sys.path]
    os.environ.update(THREAD_ENV)
    torch.set_num_threads(1)
    sys.stdout.flush()
    sys.stderr.flush()
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    sys.argv = [module, *argv]
    status = 1  # an exception: multiprocessing prints its traceback to the log and exits 1
    try:  # ``python -m module *argv``, in this process: the sweep starts the command, as a shell would
        runpy.run_module(module, run_name="__main__", alter_sys=True)
        status = 0
    except SystemExit as done:
        status = done.code if isinstance(done.code, int) else int(done.code is not None)
        raise
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        status_file(log).write_text(str(status))


def status_file(log: str | Path) -> Path:
    """Where a run's process records its exit status: beside its log (``train.log.status``)."""
    return Path(f"{log}.status")


LOST_STATUS = 255
"""The exit code multiprocessing reports when the fork server could not pass a child's status on."""


def _alive(pid: int) -> bool:
    """Whether process ``pid`` still runs (a zombie counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _run(argv: list[str], log: Path, module: str = "rewardzoo.cli") -> tuple[int, float]:
    """Run ``python -m module *argv`` in a process forked from the sweep's fork server (:data:`PRELOAD`),
    its output to ``log``; returns the exit status and the wall time.  The child also writes its
    status to ``log.status``: when the fork server cannot pass the status on (multiprocessing then
    reports :data:`LOST_STATUS`, seen now and then in the test suite), the sweep waits for the child
    and takes the status it wrote, so a finished run is not counted as failed."""
    log.parent.mkdir(parents=True, exist_ok=True)
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(PRELOAD)
    start = time.perf_counter()
    process = context.Process(target=_child, args=(module, argv, str(log), list(sys.path)))
    status = status_file(log)
    status.unlink(missing_ok=True)
    process.start()
    process.join()
    code = process.exitcode
    if code == LOST_STATUS:  # the fork server is gone: wait for the child itself, read what it recorded
        while _alive(process.pid):
            time.sleep(0.1)
        if status.is_file():
            code = int(status.read_text())
    return code, time.perf_counter() - start


@dataclass
class Job:
    """One process of a sweep: an SFT warm start or a run, with the keys of the jobs it waits for."""

    key: str
    after: tuple[str, ...] = ()


def run_jobs(jobs: list[Job], workers: int, work: Callable[[Job], bool]) -> dict[str, str]:
    """Run ``work(job)`` for every job on ``workers`` threads.  A free thread takes the first job, in list
    order, whose ``after`` jobs have all succeeded, so a run starts as soon as its own warm start is
    trained; a job whose ``after`` job failed is skipped.  Returns each key's state: ``done``,
    ``failed`` (``work`` returned False) or ``skipped``.  An exception in ``work`` fails its job; the
    others still run, and the first such exception is raised once they have finished."""
    state = {j.key: "pending" for j in jobs}
    ready = threading.Condition()

    def take() -> Job | None:
        with ready:
            while True:
                for j in jobs:
                    if state[j.key] == "pending" and any(state[a] in ("failed", "skipped") for a in j.after):
                        state[j.key] = "skipped"
                job = next((j for j in jobs if state[j.key] == "pending" and all(state[a] == "done" for a in j.after)), None)
                if job is not None:
                    state[job.key] = "running"
                    return job
                if "pending" not in state.values():
                    return None
                ready.wait()

    errors: list[BaseException] = []

    def loop() -> None:
        while (job := take()) is not None:
            ok = False
            try:
                ok = work(job)
            except Exception as err:  # noqa: BLE001 - re-raised after the other jobs
                errors.append(err)
            with ready:
                state[job.key] = "done" if ok else "failed"
                ready.notify_all()

    threads = [threading.Thread(target=loop, daemon=True) for _ in range(max(1, workers))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return state


def run_sweep(specs: list[RunSpec], jobs: int = 2, progress: bool = True, desc: str = "sweep",
              share_dir: Path | None = None) -> dict[str, RunResult]:
    """Run every unfinished spec, ``jobs`` processes at a time, each run after its SFT warm start;
    return every spec's result by name.  With ``share_dir`` every run gets ``share_dir=…``: the runs
    share the work they would repeat exactly (:mod:`rewardzoo.core.shared_work`: a seed's step-0
    evaluation, a learned reward's warm-up).  Raises RuntimeError naming the runs that failed."""
    names = [s.name for s in specs]
    if len(set(names)) != len(names):
        raise ValueError(f"sweep spec names must be unique; repeated: {sorted({n for n in names if names.count(n) > 1})}")
    configs = {s.name: s.config() for s in specs}  # every spec validated before any work
    check_not_stale(specs, configs)
    todo = [s for s in specs if not is_finished(s.run_dir)]
    warm: dict[str, RunSpec] = {}  # SFT cache directory → the spec whose recipe trains it
    waits: dict[str, str] = {}  # run name → the SFT cache directory it waits for
    tasks: dict[str, object] = {}  # one build per distinct task section, not one per run
    for s in todo:
        cfg = configs[s.name]
        if cfg.sft.enabled and not cfg.init_from:
            key = json.dumps(as_dict(cfg.task), sort_keys=True)
            if key not in tasks:
                tasks[key] = build_task(cfg.task)
            path = str(sft_cache_dir(cfg, tasks[key]))
            if not (Path(path) / "sft_done.json").exists():
                warm.setdefault(path, s)
                waits[s.name] = path
    by_name = {s.name: s for s in todo}
    plan = [Job(path) for path in warm] + [Job(s.name, (waits[s.name],) if s.name in waits else ()) for s in todo]
    failed: list[str] = []
    with tqdm(total=len(plan), desc=desc, disable=not progress, dynamic_ncols=True) as bar:
        bar.update(0)
        lock = threading.Lock()

        def work(job: Job) -> bool:
            spec, verb = (warm[job.key], "sft") if job.key in warm else (by_name[job.key], "train")
            log = spec.run_dir.parent / f"{spec.run_dir.name}.sft.log" if verb == "sft" else spec.run_dir / "train.log"
            shared = [f"share_dir={share_dir}"] if share_dir is not None and verb == "train" else []
            code, wall = _run(spec.argv(verb) + shared, log, spec.module(verb))
            if code == 0 and verb == "train":
                (spec.run_dir / DONE).write_text(json.dumps({"wall_s": wall, "command": spec.command() + shared}))
            with lock:
                if code != 0:
                    failed.append(f"{spec.name} ({verb}, exit {code}, log {log})")
                bar.update(1)
                bar.set_postfix_str(spec.name, refresh=False)
            return code == 0

        state = run_jobs(plan, jobs, work)
    failed += [f"{k} (not run: its warm start failed)" for k, v in state.items() if v == "skipped"]
    if failed:
        raise RuntimeError("these runs failed: " + "; ".join(failed))
    return {s.name: RunResult(s, json.loads((s.run_dir / DONE).read_text())["wall_s"],
                              read_metrics(s.run_dir / "metrics.jsonl")) for s in specs}


def eval_rows(run_dir: Path) -> dict[int, dict[str, list[float]]]:
    """Per-example held-out rows of a run, by evaluation step (from ``eval_rows.jsonl``)."""
    return {r["step"]: r["rows"] for r in read_metrics(Path(run_dir) / "eval_rows.jsonl")}
