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
3. marks a finished run with ``run_dir/sweep_done.json`` (its wall time, command and attempts) only
   after the process exits 0, so a killed sweep resumes by re-running the unfinished specs: each from
   its newest checkpoint when that was made with the spec's own configuration (:func:`resumable`),
   else from scratch.

Where the processes run is the sweep's executor (:data:`EXECUTORS`, ``--executor`` on the command
lines that run sweeps: :func:`add_executor_arguments`): :class:`LocalExecutor` forks them on this
machine, :class:`RayExecutor` makes each a task on a Ray cluster (docs/distributed.md, "Boards on a
cluster"); both run a process through :func:`attempt`.

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

import argparse
import ctypes
import json
import math
import multiprocessing
import os
import runpy
import signal
import socket
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import torch
from omegaconf import OmegaConf
from tqdm.auto import tqdm

from rewardzoo.core.checkpoint import checkpoints, keep_only_policy, resume_changes
from rewardzoo.core.config import as_dict
from rewardzoo.core.logger import read_metrics
from rewardzoo.core.sft import sft_cache_dir
from rewardzoo.zoo import TrainConfig, as_chat_task, build_task, load_config

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

    def argv(self, verb: str = "train", resume: bool = False) -> list[str]:
        """The arguments of :meth:`module` the sweep runs for this spec: an unfinished run starts over
        (``overwrite=true``), or with ``resume`` continues from its newest checkpoint (``resume=true``)."""
        fresh = ([f"{'resume' if resume else 'overwrite'}=true"]) if verb == "train" else []
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
                stale.append(
                    f"{s.name} ({s.run_dir}): " + "; ".join(changes[:4]) + (" ..." if len(changes) > 4 else "")
                )
    if stale:
        raise StaleRunError(
            f"{len(stale)} finished run(s) were made with another configuration than the recipe now "
            "gives, so their results would mix with new ones:\n  "
            + "\n  ".join(stale)
            + "\nPoint the sweep at a new run directory, or delete these run directories to retrain "
            "them (nothing was changed)."
        )


THREAD_ENV = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}
"""The environment of every run's process: one intra-op thread, so ``jobs`` processes share the cores."""

PRELOAD = ["rewardzoo.sweep", "rewardzoo.recipes"]
"""What the fork server imports once (torch, transformers, the whole package: ~11 s a process on the
2-core machine); each run's process is forked from it with these modules already loaded and runs
the ``rewardzoo`` command module (``rewardzoo.cli``, itself light) as ``__main__``."""


def _die_with_parent() -> None:
    """Have Linux SIGKILL this process when its parent (the fork server) exits: a run whose Ray worker was
    killed, or whose node left, stops writing its run directory before Ray's retry resumes it elsewhere."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # 1 = PR_SET_PDEATHSIG


def _child(
    module: str,
    argv: list[str],
    log: str,
    path: list[str],
    cwd: str | None = None,
    append: bool = False,
    die_with_parent: bool = False,
    env: dict[str, str] | None = None,
) -> None:
    """The body of one run's process: its output to ``log`` (appended to with ``append``: a resumed run
    keeps its earlier output), one intra-op thread, the sweep's own ``sys.path`` (``path``: a reward
    factory's module is found as in the sweep's process) and working directory (``cwd``: relative paths
    in a spec mean what they mean to the sweep) and environment (``env``, as the caller's was when it
    started this run, not the fork server's: a Ray task's ``CUDA_VISIBLE_DEVICES`` is its own), then
    ``python -m module *argv``; exits with the command's status (an exception prints its traceback to
    the log and exits 1), and records that status in ``log.status``.  ``die_with_parent``: killed with
    its fork server (:func:`_die_with_parent`)."""
    if die_with_parent:
        _die_with_parent()
    if cwd:
        os.chdir(cwd)
    sys.path[:0] = [p for p in path if p not in sys.path]
    if env is not None:
        os.environ.clear()
        os.environ.update(env)
    os.environ.update(THREAD_ENV)
    torch.set_num_threads(1)
    sys.stdout.flush()
    sys.stderr.flush()
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | (os.O_APPEND if append else os.O_TRUNC), 0o644)
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


def _run(
    argv: list[str],
    log: Path,
    module: str = "rewardzoo.cli",
    append: bool = False,
    cwd: str | None = None,
    die_with_parent: bool = False,
) -> tuple[int, float]:
    """Run ``python -m module *argv`` in a process forked from the sweep's fork server (:data:`PRELOAD`),
    its output to ``log`` (see :func:`_child` for ``append``, ``cwd`` and ``die_with_parent``); returns
    the exit status and the wall time.  The child also writes its status to ``log.status``: when the
    fork server cannot pass the status on (multiprocessing then reports :data:`LOST_STATUS`, seen now
    and then in the test suite), the sweep waits for the child and takes the status it wrote, so a
    finished run is not counted as failed.  An interrupt while waiting (Ctrl-C, a cancelled Ray task)
    is passed on to the run as SIGINT — it ends its step and writes a checkpoint, as ``rewardzoo
    train`` does on Ctrl-C — and raised once the run has stopped."""
    log.parent.mkdir(parents=True, exist_ok=True)
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(PRELOAD)
    start = time.perf_counter()
    process = context.Process(
        target=_child,
        args=(module, argv, str(log), list(sys.path), cwd or os.getcwd(), append, die_with_parent, dict(os.environ)),
    )
    status = status_file(log)
    status.unlink(missing_ok=True)
    process.start()
    try:
        while process.exitcode is None:  # joined in slices, so that an interrupt is seen while the run works
            process.join(0.5)
    except KeyboardInterrupt:
        os.kill(process.pid, signal.SIGINT)
        process.join()
        raise
    code = process.exitcode
    if code == LOST_STATUS:  # the fork server is gone: wait for the child itself, read what it recorded
        while _alive(process.pid):
            time.sleep(0.1)
        if status.is_file():
            code = int(status.read_text())
    return code, time.perf_counter() - start


@dataclass(frozen=True)
class Attempt:
    """One process of a sweep as an executor runs it: an SFT warm start or a run."""

    spec: RunSpec
    """The spec it runs (for a warm start: the first spec whose recipe trains it)."""
    verb: str
    """``sft`` or ``train``."""
    log: Path
    """Where its output goes."""
    extra: tuple[str, ...] = ()
    """Overrides the sweep adds (``share_dir=…``)."""
    resources: RunResources = field(default_factory=lambda: RunResources())
    """What it holds while it runs (:func:`run_resources`); a Ray task reserves this."""

    def command(self) -> list[str]:
        """The shell command of a fresh attempt."""
        return [*self.spec.command(self.verb), *self.extra]


def resumable(spec: RunSpec) -> bool:
    """Whether an unfinished run continues where it stopped: its directory holds a complete checkpoint and
    the configuration it saved is the one the spec resolves to (else it starts over)."""
    saved = Path(spec.run_dir) / "config.yaml"
    if not checkpoints(spec.run_dir) or not saved.is_file():
        return False
    return not config_changes(OmegaConf.to_container(OmegaConf.load(saved)), as_dict(spec.config()))


def attempts_file(log: str | Path) -> Path:
    """Where each attempt at a process is recorded, one JSON line (host, node, pid, resumed, time): ``LOG.attempts``."""
    return Path(f"{log}.attempts")


def count_attempts(log: str | Path) -> int:
    """How many attempts at the process of ``log`` have started (over every sweep that ran it)."""
    path = attempts_file(log)
    return len(path.read_text().splitlines()) if path.is_file() else 0


def attempt(job: Attempt, cwd: str | None = None, die_with_parent: bool = False, node: str = "") -> tuple[int, float]:
    """Run one attempt at a job on this machine (every executor's processes go through here): a run whose
    directory holds a checkpoint of its own configuration resumes from it (``resume=true``, its log
    appended to), any other starts over (``overwrite=true``); ``node`` names the machine in
    ``LOG.attempts`` (a Ray node's id).  Returns the exit status and wall time."""
    resume = job.verb == "train" and resumable(job.spec)
    job.log.parent.mkdir(parents=True, exist_ok=True)
    with attempts_file(job.log).open("a") as f:
        f.write(
            json.dumps(
                {"host": socket.gethostname(), "node": node, "pid": os.getpid(), "resumed": resume, "time": time.time()}
            )
            + "\n"
        )
    return _run(
        [*job.spec.argv(job.verb, resume), *job.extra],
        job.log,
        job.spec.module(job.verb),
        append=resume,
        cwd=cwd,
        die_with_parent=die_with_parent,
    )


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
                job = next(
                    (j for j in jobs if state[j.key] == "pending" and all(state[a] == "done" for a in j.after)), None
                )
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
        while t.is_alive():  # joined in slices: Ctrl-C reaches the main thread while the jobs run
            t.join(0.5)
    if errors:
        raise errors[0]
    return state


def storage_dirs(specs: list[RunSpec], configs: dict[str, TrainConfig], share_dir: Path | None) -> list[Path]:
    """The directories a sweep's processes write and read: the run directories' parents, ``share_dir`` and
    the SFT caches (absolute; an executor that spreads the runs over machines checks every node sees them)."""
    dirs = [Path(s.run_dir).parent for s in specs] + ([Path(share_dir)] if share_dir is not None else [])
    dirs += [Path(c.sft.cache_dir).expanduser() for c in configs.values() if c.sft.enabled and not c.init_from]
    return list(dict.fromkeys(d.resolve() for d in dirs))


def warm_start_dir(cfg: TrainConfig, tasks: dict[str, object] | None = None) -> Path:
    """Where the run of ``cfg`` looks up its SFT warm start: keyed by the task as its trainer sees it (in chat
    form when ``task.chat``, rendered by the policy's tokenizer — :func:`rewardzoo.recipes.task_for`), so the
    warm start a sweep trains first is the one its runs read.  ``tasks`` caches one build per task section."""
    tasks = {} if tasks is None else tasks
    chat_with = (cfg.init_from or cfg.model.name) if cfg.task.chat else ""  # the tokenizer as_chat_task renders with
    key = json.dumps([as_dict(cfg.task), chat_with], sort_keys=True)
    if key not in tasks:
        tasks[key] = as_chat_task(cfg, build_task(cfg.task))
    return sft_cache_dir(cfg, tasks[key])


def run_sweep(
    specs: list[RunSpec],
    jobs: int = 2,
    progress: bool = True,
    desc: str = "sweep",
    share_dir: Path | None = None,
    executor: Executor | None = None,
    keep_checkpoints: bool = True,
) -> dict[str, RunResult]:
    """Run every unfinished spec, each run after its SFT warm start, on ``executor`` (default
    :class:`LocalExecutor`: ``jobs`` processes at a time on this machine; :class:`RayExecutor`: a Ray
    cluster); return every spec's result by name.  With ``share_dir`` every run gets ``share_dir=…``:
    the runs share the work they would repeat exactly (:mod:`rewardzoo.core.shared_work`: a seed's
    step-0 evaluation, a learned reward's warm-up).  The progress bar counts the processes done,
    running, failed and left (and its ETA).  The other runs finish when one fails; then RuntimeError
    names the failed runs and their logs (re-running the same sweep runs only those, resuming each
    from its newest checkpoint).  Ctrl-C stops the runs at the end of their step, each with a checkpoint.
    ``keep_checkpoints=False`` drops each run's checkpoints once it has finished, keeping the trained policy in
    ``run_dir/policy`` (:func:`~rewardzoo.core.checkpoint.keep_only_policy`): a finished run is read back from
    its metrics alone, and a real model's checkpoint with a learned judge is gigabytes."""
    executor = executor or LocalExecutor(jobs)
    names = [s.name for s in specs]
    if len(set(names)) != len(names):
        raise ValueError(
            f"sweep spec names must be unique; repeated: {sorted({n for n in names if names.count(n) > 1})}"
        )
    configs = {s.name: s.config() for s in specs}  # every spec validated before any work
    check_not_stale(specs, configs)
    todo = [s for s in specs if not is_finished(s.run_dir)]
    if not keep_checkpoints:  # runs finished before: by a sweep that kept their checkpoints, or one stopped in between
        for s in specs:
            if is_finished(s.run_dir):
                keep_only_policy(s.run_dir)
    warm: dict[str, RunSpec] = {}  # SFT cache directory → the spec whose recipe trains it
    waits: dict[str, str] = {}  # run name → the SFT cache directory it waits for
    tasks: dict[str, object] = {}  # one build per distinct task section, not one per run
    for s in todo:
        cfg = configs[s.name]
        if cfg.sft.enabled and not cfg.init_from:
            path = str(warm_start_dir(cfg, tasks))
            if not (Path(path) / "sft_done.json").exists():
                warm.setdefault(path, s)
                waits[s.name] = path
    shared = (f"share_dir={share_dir}",) if share_dir is not None else ()
    attempts = {
        path: Attempt(
            s, "sft", s.run_dir.parent / f"{s.run_dir.name}.sft.log", resources=run_resources(configs[s.name])
        )
        for path, s in warm.items()
    }
    attempts |= {
        s.name: Attempt(s, "train", s.run_dir / "train.log", shared, run_resources(configs[s.name])) for s in todo
    }
    plan = [Job(path) for path in warm] + [Job(s.name, (waits[s.name],) if s.name in waits else ()) for s in todo]
    failed: list[str] = []
    count = {"done": 0, "running": 0, "failed": 0}
    try:
        workers = executor.start(list(attempts.values()), storage_dirs(todo, configs, share_dir) if todo else [])
        with tqdm(total=len(plan), desc=desc, disable=not progress, dynamic_ncols=True) as bar:
            lock = threading.Lock()

            def show() -> None:
                left = len(plan) - sum(count.values())
                bar.set_postfix_str(" · ".join(f"{k} {v}" for k, v in [*count.items(), ("left", left)]), refresh=True)

            def work(job: Job) -> bool:
                one = attempts[job.key]
                before = count_attempts(one.log)
                with lock:
                    count["running"] += 1
                    show()
                code, wall, why = None, 0.0, ""
                try:
                    code, wall = executor.run(one)
                    why = f"exit {code}"
                except RunLost as err:
                    why = str(err)
                tries = count_attempts(one.log) - before
                if tries > 1:
                    bar.write(
                        f"{one.spec.name} ({one.verb}): {tries - 1} retr{'y' if tries == 2 else 'ies'} after its "
                        f"worker or node was lost (each resumed from the run's newest checkpoint)"
                    )
                if code == 0 and one.verb == "train":
                    (one.spec.run_dir / DONE).write_text(
                        json.dumps(
                            {"wall_s": wall, "command": one.command(), "attempts": tries, "executor": executor.name}
                        )
                    )
                    if not keep_checkpoints:
                        keep_only_policy(one.spec.run_dir)
                with lock:
                    count["running"] -= 1
                    count["done" if code == 0 else "failed"] += 1
                    if code != 0:
                        failed.append(f"{one.spec.name} ({one.verb}, {why}, log {one.log})")
                    bar.update(1)
                    show()
                return code == 0

            show()
            state = run_jobs(plan, workers, work)
    except KeyboardInterrupt:
        executor.stop()
        raise
    finally:
        executor.close()
    failed += [f"{k} (not run: its warm start failed)" for k, v in state.items() if v == "skipped"]
    if failed:
        raise RuntimeError(
            "these runs failed: " + "; ".join(failed) + f". Their rows are missing; the other "
            f"{len(plan) - len(failed)} of {len(plan)} processes finished, and re-running the same "
            "command runs only these (each run resumes from its newest checkpoint)"
        )
    return {
        s.name: RunResult(
            s, json.loads((s.run_dir / DONE).read_text())["wall_s"], read_metrics(s.run_dir / "metrics.jsonl")
        )
        for s in specs
    }


@dataclass(frozen=True)
class RunResources:
    """What one process of a sweep holds while it runs: the reservation a Ray task is placed by."""

    cpus: float = 1.0
    """Cores: one, as every run's process has one intra-op thread (:data:`THREAD_ENV`)."""
    gpus: float = 0.0
    """GPUs: one for a run on a GPU (the ``gpu`` preset), none for a CPU run."""
    memory_gb: float = 1.0
    """Host memory reserved (GiB): a placement figure, not a limit."""


def run_resources(cfg: TrainConfig) -> RunResources:
    """The resources a run's configuration declares: one core (its one intra-op thread); one GPU when its
    rollouts use the vLLM engine or its policy is in bfloat16 (the ``gpu`` preset: docs/distributed.md);
    host memory 1 GiB for the tiny CPU policies, 16 GiB for a model from the hub (its weights, the
    reference copy and the optimizer state on the host while loading)."""
    gpu = cfg.sampling.engine == "vllm" or cfg.model.dtype == "bfloat16"
    return RunResources(cpus=1.0, gpus=1.0 if gpu else 0.0, memory_gb=1.0 if cfg.model.name == "tiny" else 16.0)


class RunLost(RuntimeError):
    """An executor could not run a process to its end: its worker or node was lost more often than it
    retries, or the task around it raised."""


class Executor(Protocol):
    """Where a sweep's processes run: :class:`LocalExecutor` or :class:`RayExecutor` (:data:`EXECUTORS`)."""

    name: str

    def start(self, attempts: list[Attempt], dirs: list[Path]) -> int:
        """Get ready to run ``attempts`` (checks before any work: ``dirs`` are what they write); returns how many
        run at once."""

    def run(self, job: Attempt) -> tuple[int, float]:
        """Run one job to its end (called from several threads at once): its exit status and wall time, or
        :class:`RunLost`."""

    def stop(self) -> None:
        """Ctrl-C: stop the running jobs, each at the end of its step with a checkpoint."""

    def close(self) -> None:
        """Release what :meth:`start` took (always called)."""


class LocalExecutor:
    """This machine: ``jobs`` processes at a time, each forked from the sweep's fork server."""

    name = "local"

    def __init__(self, jobs: int = 2):
        if jobs < 1:
            raise ValueError(f"jobs must be at least 1 (runs in parallel); got {jobs}")
        self.jobs = jobs

    def start(self, attempts: list[Attempt], dirs: list[Path]) -> int:
        """Nothing to check on one machine; ``jobs`` at once."""
        return self.jobs

    def run(self, job: Attempt) -> tuple[int, float]:
        """:func:`attempt`, here."""
        return attempt(job)

    def stop(self) -> None:
        """Nothing: Ctrl-C in a terminal reaches the runs' processes too (one process group)."""

    def close(self) -> None:
        """Nothing to release."""


RAY_EXTRA = (
    "--executor ray needs Ray, which is not installed: pip install 'rewardzoo[ray]' (or run with --executor local)"
)


def _ray():
    """The ``ray`` module, or ImportError naming the extra that installs it."""
    try:
        import ray
    except ImportError as err:
        raise ImportError(RAY_EXTRA) from err
    return ray


def _probe(dirs: list[str], token: str, cwd: str) -> dict:
    """On one node: whether it reads the driver's marker in each of ``dirs`` and sees its working directory;
    writes its own marker beside the driver's for the driver to read back."""
    node = _ray().get_runtime_context().get_node_id()
    missing = []
    for d in dirs:
        try:
            seen = (Path(d) / f".rewardzoo-probe-{token}").read_text() == token
            (Path(d) / f".rewardzoo-probe-{token}-{node}").write_text(token)
        except OSError:
            seen = False
        if not seen:
            missing.append(d)
    if not os.path.isdir(cwd):
        missing.append(cwd)
    return {"node": node, "host": socket.gethostname(), "missing": missing}


def _ray_attempt(job: Attempt, cwd: str, path: list[str]) -> tuple[int, float]:
    """The body of a run's Ray task, on whichever node Ray placed it: the driver's ``sys.path`` and working
    directory, then :func:`attempt`, its process killed with this worker (a retry must not meet it).  A
    cancelled task (the driver's Ctrl-C) gets KeyboardInterrupt, which :func:`_run` passes on to the run:
    the handler is set here, as a worker started by a node that ignores SIGINT would ignore it too."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.default_int_handler)
    sys.path[:0] = [p for p in path if p not in sys.path]
    os.chdir(cwd)
    return attempt(job, cwd, die_with_parent=True, node=_ray().get_runtime_context().get_node_id())


class SharedStorageError(RuntimeError):
    """A node of the Ray cluster does not see the sweep's directories at the driver's paths."""


class RayExecutor:
    """A Ray cluster: each process of the sweep a Ray task reserving its :class:`RunResources`, placed by Ray
    on any node.  A task whose worker or node is lost is retried up to ``max_retries`` times (each attempt
    counted in ``LOG.attempts`` and said on the terminal), and the retry resumes the run from its newest
    checkpoint; one lost more often is failed (:class:`RunLost`) and the others go on.  The run
    directories, ``share_dir``, the SFT cache and the driver's working directory must be on storage every
    node sees at the same paths: :meth:`start` has every node read and write a marker in each before any
    work.  ``address``: a running cluster (``ray start --head`` … ; ``auto``, or host:port); none: the
    one ``RAY_ADDRESS`` names, else a one-node cluster on this machine for the sweep.  Connected already
    (``ray.init`` by the caller): that cluster, left running."""

    name = "ray"

    def __init__(self, address: str | None = None, max_retries: int = 3, grace_s: float = 300.0):
        if max_retries < 0:
            raise ValueError(f"max_retries must be 0 or more; got {max_retries}")
        self.ray = _ray()
        self.address, self.max_retries, self.grace_s = address, max_retries, grace_s
        self.owned = False
        self.running: dict = {}  # object ref → the job it runs
        self.lock = threading.Lock()

    def start(self, attempts: list[Attempt], dirs: list[Path]) -> int:
        """Connect (or start a one-node cluster), print the dashboard's address when there is one, check the
        shared storage on every node, and return how many runs fit in the cluster at once."""
        ray = self.ray
        if not ray.is_initialized():
            where = self.address or os.environ.get("RAY_ADDRESS")
            context = ray.init(
                address=where,
                log_to_driver=False,
                configure_logging=False,
                **({} if where else {"include_dashboard": False, "_node_ip_address": "127.0.0.1"}),
            )
            self.owned = True
            if context.dashboard_url:
                print(f"Ray dashboard: http://{context.dashboard_url}", file=sys.stderr)
        self.task = ray.remote(_ray_attempt)
        if dirs:
            self.check_storage(dirs)
        if not attempts:
            return 1
        need = max((a.resources for a in attempts), key=lambda r: (r.gpus, r.cpus))
        fits = [
            min(
                res.get("CPU", 0) // need.cpus if need.cpus else math.inf,
                res.get("GPU", 0) // need.gpus if need.gpus else math.inf,
            )
            for res in (n["Resources"] for n in ray.nodes() if n["Alive"])
        ]
        if not fits or max(fits) < 1:
            raise ValueError(
                f"no node of the Ray cluster has what one run needs ({need.cpus:g} CPU, {need.gpus:g} "
                f"GPU); add such a node (ray start --num-cpus/--num-gpus) or use --executor local"
            )
        return int(min(sum(fits), len(attempts)))

    def check_storage(self, dirs: list[Path]) -> None:
        """Raise :class:`SharedStorageError`, naming the nodes and directories, unless every alive node reads
        the driver's marker in each of ``dirs`` (and the driver reads each node's), at the same paths."""
        ray = self.ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        token = uuid.uuid4().hex
        for d in dirs:
            d.mkdir(parents=True, exist_ok=True)
            (d / f".rewardzoo-probe-{token}").write_text(token)
        probe = ray.remote(num_cpus=0)(_probe)
        nodes = [n["NodeID"] for n in ray.nodes() if n["Alive"]]
        try:
            replies = ray.get(
                [
                    probe.options(scheduling_strategy=NodeAffinitySchedulingStrategy(n, soft=False)).remote(
                        [str(d) for d in dirs], token, os.getcwd()
                    )
                    for n in nodes
                ],
                timeout=600,
            )
            problems = []
            for r in replies:
                back = [str(d) for d in dirs if not (d / f".rewardzoo-probe-{token}-{r['node']}").is_file()]
                gone = list(dict.fromkeys(r["missing"] + back))
                if gone:
                    problems.append(f"node {r['host']} ({r['node'][:12]}) does not share {', '.join(gone)}")
        finally:
            for d in dirs:
                for marker in d.glob(f".rewardzoo-probe-{token}*"):
                    marker.unlink(missing_ok=True)
        if problems:
            raise SharedStorageError(
                "the runs need their directories on storage every node sees at the same path "
                "(the run directories, share_dir, the SFT cache and this working directory): "
                + "; ".join(problems)
                + ". Put them on a shared file system (NFS, Lustre, …) "
                "mounted at the same path on every node, or run with --executor local"
            )

    def run(self, job: Attempt) -> tuple[int, float]:
        """Submit the job as a Ray task and wait for it; :class:`RunLost` when Ray's retries ran out."""
        ray, res = self.ray, job.resources
        ref = self.task.options(
            num_cpus=res.cpus,
            num_gpus=res.gpus,
            memory=int(res.memory_gb * 2**30),
            max_retries=self.max_retries,
            retry_exceptions=False,
            name=f"{job.verb} {job.spec.name}",
        ).remote(job, os.getcwd(), list(sys.path))
        with self.lock:
            self.running[ref] = job
        try:
            return ray.get(ref)
        except ray.exceptions.RayTaskError as err:  # the task's own code raised (not the run: that is an exit status)
            raise RunLost(f"its task raised {type(err.cause).__name__}: {err.cause}") from err
        except ray.exceptions.RayError as err:
            lost = self.max_retries + 1
            raise RunLost(f"lost {lost} time{'s' * (lost > 1)}, the last: {type(err).__name__}") from err
        finally:
            with self.lock:
                self.running.pop(ref, None)

    def stop(self) -> None:
        """Cancel the running tasks (each passes the interrupt to its run, which ends its step with a
        checkpoint) and wait for them, at most ``grace_s``."""
        with self.lock:
            refs = list(self.running)
        for ref in refs:
            self.ray.cancel(ref)
        if refs:
            self.ray.wait(refs, num_returns=len(refs), timeout=self.grace_s)

    def close(self) -> None:
        """Shut down the cluster this executor started (one it connected to keeps running)."""
        if self.owned:
            self.ray.shutdown()
            self.owned = False


EXECUTORS = {"local": LocalExecutor, "ray": RayExecutor}
"""``--executor`` name → executor class."""


def add_executor_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--executor local|ray``, ``--address`` and ``--max-retries`` to a sweep's command line (the
    leaderboard, the studies); :func:`executor_from_args` builds the executor they name."""
    group = parser.add_argument_group("where the runs go")
    group.add_argument(
        "--executor",
        choices=list(EXECUTORS),
        default="local",
        help="local: --jobs processes on this machine (default); ray: a Ray cluster, each run a task "
        "(pip install 'rewardzoo[ray]'; docs/distributed.md)",
    )
    group.add_argument(
        "--address",
        help="--executor ray: the cluster's head (host:port, or 'auto'); default "
        "RAY_ADDRESS, else a one-node cluster on this machine",
    )
    group.add_argument(
        "--max-retries",
        type=int,
        default=3,
        help="--executor ray: retries of a run whose worker or node is lost (default 3)",
    )


def executor_from_args(args: argparse.Namespace) -> Executor:
    """The executor ``args`` name (:func:`add_executor_arguments`; ``args.jobs`` for the local one).  Raises
    ValueError for ``--address`` without ``--executor ray``, ImportError naming the extra without Ray."""
    if args.executor == "local":
        if args.address:
            raise ValueError("--address is the Ray cluster's; add --executor ray, or drop --address")
        return LocalExecutor(args.jobs)
    return RayExecutor(args.address, args.max_retries)


def eval_rows(run_dir: Path) -> dict[int, dict[str, list[float]]]:
    """Per-example held-out rows of a run, by evaluation step (from ``eval_rows.jsonl``)."""
    return {r["step"]: r["rows"] for r in read_metrics(Path(run_dir) / "eval_rows.jsonl")}
