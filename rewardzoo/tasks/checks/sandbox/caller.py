"""The caller's side of the sandbox: start the bootstrap, collect its output, stop and reap it.

:func:`run` writes the code to a fresh temporary directory and starts ``bootstrap.py`` there
(``python -I``, empty environment, stdin = /dev/null, a new session).  It drains stdout and stderr
into buffers capped at ``max_output_bytes`` (reading on, so the child never blocks on a full pipe)
until both close or the wall-clock deadline passes, then stops the run — in the namespaces mode by
SIGTERM to the bootstrap, which kills the sandbox's init (and with it every process in its PID
namespace) and reaps it before it exits; in the rlimits modes, where the bootstrap is the code, by
SIGKILL to the process group — waits for it and deletes the directory.
"""

from __future__ import annotations

import functools
import json
import os
import secrets
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass

from rewardzoo.tasks.checks.sandbox import bootstrap, policy

ISOLATIONS = ("auto", "namespaces", "rlimits", "unsafe_rlimits")
_ENTRY = "main.py"
_BOOTSTRAP = os.path.abspath(bootstrap.__file__)
_REAP_GRACE_S = 2.0  # how long a stopped namespaces bootstrap may take to kill and reap its init


class SandboxRefused(RuntimeError):
    """No isolation mode that confines untrusted code works on this machine (and the unsafe one was
    not asked for by name); raised before anything runs."""


@dataclass
class SandboxResult:
    """What a sandboxed run produced."""

    returncode: int | None  # exit status; negative = killed by that signal; None = never started
    stdout: str  # at most max_output_bytes bytes of it, decoded as UTF-8 (bad bytes replaced)
    stderr: str  # same cap
    timed_out: bool  # the wall-clock deadline passed and the run was killed
    killed_reason: str | None  # "timeout", "cpu_limit", "signal:<NAME>", "sandbox_error: ..." or None
    duration_s: float  # wall-clock seconds from start to the end of the run
    truncated: bool  # stdout or stderr was longer than the cap
    isolation: str  # the isolation actually used: "namespaces", "rlimits" or "unsafe_rlimits"

    @property
    def ok(self) -> bool:
        """True when the code ran to completion with exit status 0."""
        return self.returncode == 0 and not self.timed_out


def run(
    code: str,
    *,
    timeout_s: float = 5.0,
    memory_mb: int = 512,
    cpu_s: float | None = None,
    max_processes: int = 32,
    max_output_bytes: int = 65536,
    max_file_mb: int = 16,
    files: dict[str, str] | None = None,
    isolation: str = "auto",
) -> SandboxResult:
    """Run ``code`` as ``main.py`` with ``python -I`` in a throw-away directory, isolated and limited.

    ``timeout_s`` is the wall-clock limit of the whole run; ``cpu_s`` the CPU-time limit of each
    process (default: ``timeout_s``); ``files`` are extra files written next to ``main.py`` (plain
    names only).  Never raises once its arguments are valid and never outlives ``timeout_s`` by more
    than a kill; see :mod:`rewardzoo.tasks.checks.sandbox` for what is and is not isolated.  Raises
    :class:`SandboxRefused`, before running anything, when ``isolation`` cannot confine the code
    here (:func:`resolve_isolation`).
    """
    _check_limits(timeout_s, memory_mb, cpu_s, max_processes, max_output_bytes, max_file_mb, isolation)
    files = dict(files or {})
    for name in files:
        if not name or name in (".", "..", _ENTRY) or "/" in name or "\0" in name:
            raise ValueError(f"sandbox file name {name!r} must be a plain file name (no '/', not {_ENTRY!r})")
    mode = resolve_isolation(isolation)
    return _run(
        code,
        files,
        mode,
        timeout_s=timeout_s,
        memory_mb=memory_mb,
        cpu_s=cpu_s or timeout_s,
        max_processes=max_processes,
        max_output_bytes=max_output_bytes,
        max_file_mb=max_file_mb,
    )


def _run(
    code: str, files: dict[str, str], mode: str, *, timeout_s: float, max_output_bytes: int, **limits
) -> SandboxResult:
    start = time.monotonic()
    workdir = ""
    try:
        spec = {
            "isolation": mode,
            **limits,
            "entry": _ENTRY,
            "python": sys.executable,
            "uid": 100_000 + secrets.randbelow(1 << 30),
        }
        if mode in ("namespaces", "rlimits"):
            spec["nr"] = _syscall_numbers()
        if mode == "namespaces":
            spec["seccomp"] = policy.namespaces_program()
        workdir = tempfile.mkdtemp(prefix="rewardzoo-sandbox-")
        for name, text in {_ENTRY: code, **files}.items():
            with open(os.path.join(workdir, name), "w", encoding="utf-8", errors="surrogatepass") as f:
                f.write(text)
        proc = subprocess.Popen(
            [sys.executable, "-I", _BOOTSTRAP, json.dumps(spec)],
            cwd=workdir,
            env={},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        out, err, timed_out, truncated = _collect(proc, start + timeout_s, max_output_bytes, mode == "namespaces")
    except OSError as error:  # no disk, no processes, no file descriptors: report it, do not raise
        return SandboxResult(None, "", "", False, f"sandbox_error: {error}", time.monotonic() - start, False, mode)
    finally:
        if workdir:
            shutil.rmtree(workdir, ignore_errors=True)
    status = proc.returncode
    reason = "timeout" if timed_out else None
    if not timed_out and status < 0:
        name = next((sig.name for sig in signal.Signals if sig == -status), str(-status))
        reason = "cpu_limit" if -status == signal.SIGXCPU else f"signal:{name}"
    return SandboxResult(
        status,
        out.decode("utf-8", "replace"),
        err.decode("utf-8", "replace"),
        timed_out,
        reason,
        time.monotonic() - start,
        truncated,
        mode,
    )


def _check_limits(timeout_s, memory_mb, cpu_s, max_processes, max_output_bytes, max_file_mb, isolation) -> None:
    if isolation not in ISOLATIONS:
        raise ValueError(f"isolation must be one of {ISOLATIONS}, got {isolation!r}")
    if not timeout_s > 0:
        raise ValueError(f"timeout_s must be > 0 seconds, got {timeout_s}")
    if cpu_s is not None and not cpu_s > 0:
        raise ValueError(f"cpu_s must be > 0 seconds or None (= timeout_s), got {cpu_s}")
    if memory_mb < 64:
        raise ValueError(f"memory_mb must be at least 64 (Python itself needs ~30 MB), got {memory_mb}")
    if max_processes < 1 or max_output_bytes < 0 or max_file_mb < 1:
        raise ValueError(
            "max_processes and max_file_mb must be >= 1 and max_output_bytes >= 0; got "
            f"{max_processes}, {max_file_mb}, {max_output_bytes}"
        )


@functools.cache
def _syscall_numbers() -> dict[str, int | None]:
    """The numbers of the calls the bootstrap makes without a glibc wrapper."""
    return {name: policy.syscall_number(name) for name in ("keyctl", "pivot_root")}


# ---------------------------------------------------------------------------------- which mode
def resolve_isolation(isolation: str = "auto") -> str:
    """The mode ``isolation`` means here: "auto" is "namespaces" where a trial run in it works, else
    "rlimits" (with a warning) where a trial run in that works.  Raises :class:`SandboxRefused`,
    naming what is missing and which guarantee it costs, when the mode asked for (or every confining
    one, for "auto") cannot confine the code here; "unsafe_rlimits" always resolves, because the
    caller named the risk."""
    if isolation == "auto":
        if mode_works("namespaces")[0]:
            return "namespaces"
        if not mode_works("rlimits")[0]:
            raise SandboxRefused(
                f"rewardzoo sandbox: no isolation here can confine untrusted code (namespaces: "
                f"{mode_works('namespaces')[1]}; rlimits: {mode_works('rlimits')[1]}); run only "
                f"code you trust, and only by passing isolation='unsafe_rlimits'"
            )
        warnings.warn(
            f"rewardzoo sandbox: namespaces unavailable ({mode_works('namespaces')[1]}); falling back to "
            f"isolation='rlimits' (Landlock, seccomp and resource limits — see "
            f"rewardzoo.tasks.checks.sandbox for what it does not isolate)",
            stacklevel=3,
        )
        return "rlimits"
    if isolation == "rlimits" and not mode_works("rlimits")[0]:
        raise SandboxRefused(
            f"rewardzoo sandbox: isolation='rlimits' cannot confine code here "
            f"({mode_works('rlimits')[1]}); run only code you trust, and only with "
            f"isolation='unsafe_rlimits'"
        )
    return isolation


def missing(mode: str) -> str:
    """What ``mode`` lacks on this machine before any trial, and the guarantee each lack would cost
    ('' when nothing)."""
    lacks = []
    if not sys.platform.startswith("linux"):
        lacks.append(f"the sandbox needs Linux, this is {sys.platform}")
    if not policy.seccomp_available():
        lacks.append(
            "no seccomp binding (pip install pyseccomp; needs libseccomp): nothing would stop calls on "
            "the kernel keyring, other processes, host IPC or uncounted memory"
        )
    if mode == "rlimits" and bootstrap.landlock_abi() < 1:
        lacks.append("no Landlock in this kernel (needs Linux >= 5.13): host files would be readable and writable")
    return "; ".join(lacks)


@functools.cache
def mode_works(mode: str) -> tuple[bool, str]:
    """(whether ``mode`` confines code here, why not): what it lacks (:func:`missing`), else a trial
    run in it, which must build the whole sandbox — namespaces, capabilities dropped, the seccomp
    filter loaded — or it reports the step that failed."""
    if why := missing(mode):
        return False, why
    trial = _run(
        "pass",
        {},
        mode,
        timeout_s=30,
        max_output_bytes=65536,
        memory_mb=512,
        cpu_s=30,
        max_processes=32,
        max_file_mb=16,
    )
    why = trial.stderr.strip().splitlines()[-1:] or [trial.killed_reason or f"exit status {trial.returncode}"]
    return trial.ok, "" if trial.ok else why[0]


# --------------------------------------------------------------------------- output, stop, reap
def _exited(pid: int) -> bool:
    """Whether ``pid`` has exited, without reaping it (so its id, the process group's, stays reserved)."""
    return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None


def _collect(proc: subprocess.Popen, deadline: float, cap: int, reaps: bool) -> tuple[bytes, bytes, bool, bool]:
    """Drain both pipes into capped buffers until they close or the deadline; then stop the run
    (``reaps``: the bootstrap kills and reaps what it started when asked, see :func:`_stop`)."""
    buffers = {proc.stdout.fileno(): bytearray(), proc.stderr.fileno(): bytearray()}
    timed_out = truncated = False
    exited_at = None
    try:
        with selectors.DefaultSelector() as sel:
            for fd in buffers:
                sel.register(fd, selectors.EVENT_READ)
            while sel.get_map():
                now = time.monotonic()
                if now >= deadline:
                    timed_out = True
                    break
                if exited_at is None and _exited(proc.pid):
                    exited_at = now
                if exited_at is not None and now - exited_at > 0.5:  # a leftover process holds the pipes
                    break
                for key, _ in sel.select(min(deadline - now, 0.1)):
                    chunk = os.read(key.fd, 1 << 16)
                    if not chunk:
                        sel.unregister(key.fd)
                        continue
                    buf = buffers[key.fd]
                    room = max(cap - len(buf), 0)
                    buf += chunk[:room]
                    truncated |= len(chunk) > room
        while not timed_out and not _exited(proc.pid):
            if time.monotonic() >= deadline:
                timed_out = True
            else:
                time.sleep(0.002)
    finally:
        _stop(proc, reaps)
        proc.stdout.close()
        proc.stderr.close()
    out, err = buffers.values()
    return bytes(out), bytes(err), timed_out, truncated


def _stop(proc: subprocess.Popen, reaps: bool) -> None:
    """End the run and reap it.  A namespaces bootstrap gets SIGTERM and a grace to kill its init
    and reap it (SIGKILL to both at once would leave init a zombie of whoever is the subreaper);
    then, and in every other mode at once, SIGKILL to the process group and the bootstrap."""
    if reaps and not _exited(proc.pid):
        os.kill(proc.pid, signal.SIGTERM)
        grace = time.monotonic() + _REAP_GRACE_S
        while not _exited(proc.pid) and time.monotonic() < grace:  # not reaped: its pid keeps the group's id
            time.sleep(0.002)
    for kill in (lambda: os.killpg(proc.pid, signal.SIGKILL), proc.kill):
        try:
            kill()
        except (ProcessLookupError, PermissionError):
            pass
    proc.wait()
