"""Run untrusted model code in a separate, locked-down process (SPEC §4.1; seed 003, "Safety").

    result = run("print(6 * 7)", timeout_s=5, memory_mb=512)
    result.stdout == "42\\n" and result.returncode == 0

    unit_test_reward("def add(a, b):\\n    return a - b\\n", [((2, 3), 5), ((0, 0), 0), ((-1, 1), 0)],
                     entry_point="add")          # 1/3: partial credit = passed / total

How one run works.  The caller writes the code to a fresh temporary directory and starts this file
as a script (the *bootstrap*, ``python -I``, empty environment, stdin = /dev/null, a new session).
It drains stdout and stderr into buffers capped at ``max_output_bytes`` (reading on, so the child
never blocks on a full pipe) until both close or the wall-clock deadline passes, then SIGKILLs the
whole process group and deletes the directory.  What the bootstrap does depends on ``isolation``:

``"namespaces"`` (the default wherever the kernel allows it; probed once per process)
    1. ``unshare`` new mount, network, PID, IPC and UTS namespaces (plus a user namespace when not
       root), then fork *init*, PID 1 of the new PID namespace.  When init exits — or is killed with
       the process group — the kernel kills every process left in the namespace, so nothing the
       code started survives the run, whatever it does with sessions or process groups.
    2. init builds the sandbox a root of its own and ``pivot_root``s into it (``chroot`` where the
       kernel refuses, e.g. an initramfs root), detaching the host's: a small read-only tmpfs that
       holds only read-only binds of the interpreter's installation (``sys.prefix``,
       ``sys.base_prefix``, the executable's directory), the system's library directories (/lib,
       /usr/lib, ...; their symbolic links recreated) and ``/etc/ld.so.cache``; the device nodes
       null, zero, full, random and urandom; fresh tmpfs (``max_file_mb`` each) on /tmp and
       /dev/shm, the working directory (under /tmp, or on a tmpfs of its own), and a fresh /proc
       that shows only the sandbox's processes.  Nothing else of the host exists in there: not
       /etc, /home, /root, /run, the project checkout or the host's /tmp — so no host file can be
       read and no host Unix socket reached by path.  The network namespace has only a loopback
       device that is down: every connection fails, including to the host's 127.0.0.1 and to
       abstract Unix sockets.
    3. init forks the *runner*: resource limits, ``PR_SET_NO_NEW_PRIVS``, then — as root — a fresh
       random unused uid/gid with no supplementary groups (so RLIMIT_NPROC counts only this run's
       processes), or — not root — a nested user namespace in which it is not root (its
       capabilities are dropped at ``exec``).  Then it ``exec``s ``python -I main.py`` with an empty
       environment.

``"rlimits"`` (the fallback where namespaces are not available; needs Landlock and seccomp)
    The bootstrap confines itself, then runs the code in-process with ``runpy``:
    * **Landlock** (Linux >= 5.13, syscalls made here with ctypes): read and execute only under the
      interpreter's directories and the library directories; read and write only the files
      already in the working directory — no file, directory, link or socket can be created or
      removed anywhere, so disk use is at most those files × RLIMIT_FSIZE; /etc, /home, the
      project checkout and /proc (so other processes' ``environ``) are unreadable; TCP bind and
      connect refused (ABI >= 4); signals and abstract Unix sockets outside the sandbox refused
      (ABI >= 6);
    * **seccomp** (through ``pyseccomp``, a ctypes binding of libseccomp): :data:`_DENIED_SYSCALLS`
      (sockets of every family, so no Unix socket connect by path; ``fork``/``vfork``/``execve``;
      ``pidfd_*``; ``ptrace``; mounts and namespaces; io_uring; bpf; ...) fail with EPERM, ``clone``
      may only make threads, and ``kill``-like calls work only on the process itself — so no daemon
      can be started and the parent cannot be signalled, whatever route Python or C takes
      (``_posixsubprocess.fork_exec`` included);
    * the same resource limits and the audit hook (PEP 578) of "unsafe_rlimits", as a first,
      clearer error.
    Where Landlock or the seccomp binding is missing, "rlimits" (and "auto" falling back to it) is
    refused with :class:`SandboxRefused` before anything runs.

``"unsafe_rlimits"`` (only by name: for code you trust, on machines with neither of the above)
    Resource limits (RLIMIT_NPROC relative to the user's current process count) and the audit
    hook, which refuses sockets, process creation (fork, exec, spawn, subprocess, os.system),
    ``ctypes``, signals to other processes, and writes/renames/deletes outside the working
    directory — at the Python level only, and known to be escapable: ``os.open(..., dir_fd=...)``
    writes and unlinks outside the working directory, ``signal.pidfd_send_signal`` signals the
    parent, ``_posixsubprocess.fork_exec`` leaves a daemon behind, every readable file (/etc, the
    checkout, ``/proc/<pid>/environ``) can be read, and nothing caps total disk use.

Resource limits (every mode, per process): RLIMIT_AS = ``memory_mb``, RLIMIT_CPU = ``cpu_s`` (soft;
SIGKILL one second later), RLIMIT_NPROC = ``max_processes``, RLIMIT_FSIZE = ``max_file_mb``,
RLIMIT_NOFILE = 256, no core dumps.  On return the whole process group is killed.

Not covered (know these before running hostile code at scale):
  * namespaces: no seccomp filter — every system call the kernel allows an unprivileged user is
    available inside the namespaces, and a kernel exploit escapes any of this;
  * the interpreter's installation and the system libraries are readable (they hold no user
    data; a virtual environment inside the project checkout shows only itself), and the code can
    import anything installed in it;
  * memory and CPU limits are per process: a fork bomb can hold up to ``max_processes`` ×
    ``memory_mb`` of address space until the wall-clock kill; no cgroup caps the total;
  * the tmpfs of the namespaces mode are memory: together at most ~3 × ``max_file_mb``;
  * the wall-clock timeout includes the sandbox's own start-up (~0.2 s on a busy 2-core machine);
  * "rlimits": code runs in the bootstrap's own process (already holding its open files: the two
    output pipes); read access to the interpreter's directories as above; no new files at all;
    as root, RLIMIT_NPROC is not enforced (root is exempt) — seccomp stops process creation there;
  * a Python installed at / itself (no prefix directory) cannot be shown without the whole host:
    the namespaces mode refuses to start there;
  * GPU devices are not visible in the namespaces mode (no /dev/nvidia*): the sandbox is for CPU code.

Why not bubblewrap (``bwrap``, the Debian package ``bubblewrap``) as the backend: run as root, it
maps the sandbox's user to the host's uid 0, which RLIMIT_NPROC exempts, so a fork bomb would be
capped only by the wall clock; our namespaces path gives the run a fresh unprivileged uid instead,
and it needs no package.  A machine where only a setuid or AppArmor-permitted ``bwrap`` can make
namespaces falls back to "rlimits" (Landlock + seccomp), which still confines the code.

The hostile cases run against every available mode in ``tests/tasks/checks/test_sandbox.py``;
``docs/reliability.md`` lists them.

Deviation from the seed: 003's ``unit_test_reward`` ``exec``s the code in the trainer's own process
("only ever run this in a sandbox"); here it runs in :func:`run`, and return values are compared in
the caller — the sandbox reports each call's return value as JSON, the expected values never enter
it — so an object whose ``__eq__`` always says True cannot pass a test.  The candidate and the test
harness share one interpreter, so a candidate can still special-case the test inputs (the hack 003
warns about); it cannot forge a pass without producing the expected value.
"""

from __future__ import annotations

import ast
import ctypes
import functools
import json
import os
import resource
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
from typing import Sequence

ISOLATIONS = ("auto", "namespaces", "rlimits", "unsafe_rlimits")
_ENTRY = "main.py"
_SETUP_FAILED = 125  # exit status of a bootstrap that could not build the sandbox


class SandboxRefused(RuntimeError):
    """No isolation mode that confines untrusted code works on this machine (and the unsafe one was
    not asked for by name); raised before anything runs."""


@dataclass
class SandboxResult:
    """What a sandboxed run produced."""

    returncode: int | None  # exit status; negative = killed by that signal; None = never started
    stdout: str  # at most max_output_bytes bytes of it, decoded as UTF-8 (bad bytes replaced)
    stderr: str  # same cap
    timed_out: bool  # the wall-clock deadline passed and the process group was killed
    killed_reason: str | None  # "timeout", "cpu_limit", "signal:<NAME>", "sandbox_error: ..." or None
    duration_s: float  # wall-clock seconds from start to the end of the run
    truncated: bool  # stdout or stderr was longer than the cap
    isolation: str  # the isolation actually used: "namespaces" or "rlimits"

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
    than a kill; see the module docstring for what is and is not isolated.  Raises
    :class:`SandboxRefused`, before running anything, when ``isolation`` cannot confine the code
    here (:func:`resolve_isolation`).
    """
    _check_limits(timeout_s, memory_mb, cpu_s, max_processes, max_output_bytes, max_file_mb, isolation)
    files = dict(files or {})
    for name in files:
        if not name or name in (".", "..", _ENTRY) or "/" in name or "\0" in name:
            raise ValueError(f"sandbox file name {name!r} must be a plain file name (no '/', not {_ENTRY!r})")
    mode = resolve_isolation(isolation)
    spec = {"isolation": mode, "memory_mb": memory_mb, "cpu_s": cpu_s or timeout_s, "max_processes": max_processes,
            "max_file_mb": max_file_mb, "entry": _ENTRY, "python": sys.executable,
            "uid": 100_000 + secrets.randbelow(1 << 30)}
    start = time.monotonic()
    workdir = ""
    try:
        workdir = tempfile.mkdtemp(prefix="rewardzoo-sandbox-")
        for name, text in {_ENTRY: code, **files}.items():
            with open(os.path.join(workdir, name), "w", encoding="utf-8", errors="surrogatepass") as f:
                f.write(text)
        proc = subprocess.Popen([sys.executable, "-I", os.path.abspath(__file__), json.dumps(spec)], cwd=workdir,
                                env={}, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                start_new_session=True)
        out, err, timed_out, truncated = _collect(proc, start + timeout_s, max_output_bytes)
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
    return SandboxResult(status, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"), timed_out, reason,
                         time.monotonic() - start, truncated, mode)


def unit_test_reward(
    code: str,
    tests: Sequence[tuple[tuple, object]],
    *,
    entry_point: str,
    timeout_s: float = 5.0,
    memory_mb: int = 512,
    isolation: str = "auto",
) -> float:
    """Fraction of ``tests`` that ``code``'s function ``entry_point`` passes, run in the sandbox.

    ``tests`` is a list of ``(args, expected)``: ``args`` a tuple of Python literals, ``expected``
    a JSON value (numbers, strings, booleans, None, lists/tuples, dicts with string keys).  A test
    passes when ``entry_point(*args)``, sent back as JSON, equals ``expected`` (tuples compare as
    lists, ``5 == 5.0`` as in Python).  Code that does not compile, lacks the entry point, or runs
    out of time scores the tests finished so far; 003's example gives 1.00 / 0.33 / 0.00.

    >>> unit_test_reward("def add(a, b):\\n    return a + b\\n", [((2, 3), 5), ((0, 0), 0)], entry_point="add")
    1.0
    """
    if not tests:
        raise ValueError("unit_test_reward needs at least one (args, expected) test")
    if not entry_point.isidentifier():
        raise ValueError(f"entry_point must be a Python identifier, got {entry_point!r}")
    wanted = []
    for i, test in enumerate(tests):
        if not (isinstance(test, (tuple, list)) and len(test) == 2 and isinstance(test[0], tuple)):
            raise ValueError(f"test {i} must be (args_tuple, expected), got {test!r}")
        try:
            if ast.literal_eval(repr(test[0])) != test[0]:
                raise ValueError
            wanted.append(json.loads(json.dumps(test[1], allow_nan=False)))
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            raise ValueError(f"test {i}: args must be Python literals and expected a JSON value, got {test!r}") from None
    marker = "@rewardzoo-result-" + secrets.token_hex(8) + " "
    harness = _HARNESS.format(marker=marker, entry=entry_point, cases=repr([t[0] for t in tests]))
    result = run(harness, files={"solution.py": code}, timeout_s=timeout_s, memory_mb=memory_mb,
                 max_output_bytes=1 << 20, isolation=isolation)
    got = {}
    for line in result.stdout.splitlines():
        if line.startswith(marker):
            try:
                index, value = json.loads(line[len(marker):])
                got[int(index)] = value
            except (ValueError, TypeError, RecursionError):
                continue
    passed = sum(1 for i, want in enumerate(wanted) if i in got and got[i] == want)
    return passed / len(wanted)


# The harness runs in the sandbox: it loads solution.py, calls the entry point on each test's
# arguments and writes "<marker>[index, value]" lines to a private copy of stdout (the candidate's
# own prints go to /dev/null, so they can neither fill the output cap nor mix with the results).
_HARNESS = """\
import ast, json, os
_out = os.fdopen(os.dup(1), "w", encoding="utf-8")
os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
_scope = {{"__name__": "__solution__"}}
try:
    with open("solution.py", encoding="utf-8", errors="replace") as _f:
        exec(compile(_f.read(), "solution.py", "exec"), _scope)
    _fn = _scope[{entry!r}]
except BaseException:
    raise SystemExit(1)
for _i, _args in enumerate(ast.literal_eval({cases!r})):
    try:
        _line = json.dumps([_i, _fn(*_args)])
    except BaseException:
        continue
    if len(_line) <= 100000:
        _out.write({marker!r} + _line + "\\n")
        _out.flush()
"""


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
        raise ValueError("max_processes and max_file_mb must be >= 1 and max_output_bytes >= 0; got "
                         f"{max_processes}, {max_file_mb}, {max_output_bytes}")


def resolve_isolation(isolation: str = "auto") -> str:
    """The mode ``isolation`` means here: "auto" is "namespaces" where a trial run in namespaces
    works, else "rlimits" (with a warning); "rlimits" needs Landlock and seccomp.  Raises
    :class:`SandboxRefused` when the mode asked for (or every confining one, for "auto") is not
    available; "unsafe_rlimits" always resolves, because the caller named the risk."""
    if isolation == "auto":
        if _namespaces_work()[0]:
            return "namespaces"
        if not _confinement_available():
            raise SandboxRefused(f"rewardzoo sandbox: no isolation here can confine untrusted code (namespaces: "
                                 f"{_namespaces_work()[1]}; rlimits needs Landlock and seccomp: "
                                 f"{_confinement_missing()}); run only code you trust, and only by passing "
                                 f"isolation='unsafe_rlimits'")
        warnings.warn(f"rewardzoo sandbox: namespaces unavailable ({_namespaces_work()[1]}); falling back to "
                      f"isolation='rlimits' (Landlock, seccomp and resource limits — see "
                      f"rewardzoo.tasks.checks.sandbox for what it does not isolate)", stacklevel=3)
        return "rlimits"
    if isolation == "rlimits" and not _confinement_available():
        raise SandboxRefused(f"rewardzoo sandbox: isolation='rlimits' needs Landlock and seccomp "
                             f"({_confinement_missing()}); run only code you trust, and only with "
                             f"isolation='unsafe_rlimits'")
    return isolation


@functools.cache
def _namespaces_work() -> tuple[bool, str]:
    """(whether a trial run in namespaces works here, why not)."""
    if not sys.platform.startswith("linux"):
        return False, f"namespaces need Linux, this is {sys.platform}"
    trial = run("pass", isolation="namespaces", timeout_s=30)
    why = trial.stderr.strip().splitlines()[-1:] or [trial.killed_reason or f"exit status {trial.returncode}"]
    return trial.ok, "" if trial.ok else why[0]


def _confinement_missing() -> str:
    """What the "rlimits" mode lacks here ('' when nothing)."""
    missing = [] if landlock_abi() >= 1 else ["no Landlock in this kernel"]
    missing += [] if seccomp_available() else ["no seccomp binding (pip install pyseccomp; needs libseccomp)"]
    return "; ".join(missing)


@functools.cache
def _confinement_available() -> bool:
    return not _confinement_missing()


def _exited(pid: int) -> bool:
    """Whether ``pid`` has exited, without reaping it (so its id, the process group's, stays reserved)."""
    return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None


def _collect(proc: subprocess.Popen, deadline: float, cap: int) -> tuple[bytes, bytes, bool, bool]:
    """Drain both pipes into capped buffers until they close or the deadline; then kill the group."""
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
        for kill in (lambda: os.killpg(proc.pid, signal.SIGKILL), proc.kill):
            try:
                kill()
            except (ProcessLookupError, PermissionError):
                pass
        proc.wait()
        proc.stdout.close()
        proc.stderr.close()
    out, err = buffers.values()
    return bytes(out), bytes(err), timed_out, truncated


# ----------------------------------------------------------------------------------------------
# Everything below runs in the sandbox's bootstrap process (this file executed as a script).

_CLONE_NEWNS, _CLONE_NEWUTS, _CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
_CLONE_NEWUSER, _CLONE_NEWPID, _CLONE_NEWNET = 0x10000000, 0x20000000, 0x40000000
_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_NOEXEC, _MS_REMOUNT = 1, 2, 4, 8, 32
_MS_NOATIME, _MS_NODIRATIME, _MS_BIND, _MS_REC, _MS_PRIVATE, _MS_RELATIME = 1024, 2048, 4096, 16384, 1 << 18, 1 << 21
_PR_SET_NO_NEW_PRIVS = 38


def _libc():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
    libc.unshare.argtypes = [ctypes.c_int]
    libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]
    libc.syscall.restype = ctypes.c_long
    return libc


def _call(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _mount(libc, source, target, fstype, flags, data=None) -> None:
    enc = lambda s: None if s is None else os.fsencode(s)  # noqa: E731
    _call(libc.mount(enc(source), enc(target), enc(fstype), flags, enc(data)), f"mount {target}")


def _write(path: str, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)


def _mount_points() -> list[str]:
    """Mount points of this mount namespace, from /proc/self/mountinfo (octal escapes decoded)."""
    points = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            raw = line.split()[4]
            points.append(raw.encode().decode("unicode_escape").encode("latin-1").decode(errors="surrogateescape"))
    return points


def _locked_flags(path: str) -> int:
    """The mount flags of ``path`` that a read-only remount must keep (a user namespace cannot drop them)."""
    st = os.statvfs(path).f_flag
    flags = st & (_MS_NOSUID | _MS_NODEV | _MS_NOEXEC | _MS_NOATIME | _MS_NODIRATIME)
    return flags | (_MS_RELATIME if st & os.ST_RELATIME else 0)


_LIBRARY_DIRS = ("/lib", "/lib64", "/lib32", "/libx32", "/usr/lib", "/usr/lib64", "/usr/lib32", "/usr/libx32")
_LIBRARY_FILES = ("/etc/ld.so.cache",)  # the dynamic loader's index of the directories above
_DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")
_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "riscv64": 41, "ppc64le": 203, "s390x": 217}  # no glibc wrapper
_MNT_DETACH = 2


def _interpreter_layout(python: str) -> tuple[dict[str, str], dict[str, str]]:
    """What the code needs to run ``python``: directories to show read-only (path in the sandbox →
    real directory; outermost only) and symbolic links to recreate (path → target).

    The interpreter's installation (``sys.prefix``, ``sys.base_prefix``, their exec prefixes, the
    directories of the executable and of the file it links to), each at its real path and at the
    path it is reached by, and the system's shared-library directories; nothing else."""
    wanted = [sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix, os.path.dirname(python),
              os.path.dirname(os.path.realpath(python))]
    binds, links = {}, {}
    for path in wanted + list(_LIBRARY_DIRS):
        if path in _LIBRARY_DIRS and os.path.islink(path):
            links[path] = os.readlink(path)
        elif os.path.isdir(path):
            for target in {os.path.abspath(path), os.path.realpath(path)}:
                binds[target] = os.path.realpath(path)
    if "/" in binds:
        raise OSError("the Python installation lives at / itself; the sandbox cannot show it without the whole host")
    outer = {t: src for t, src in binds.items() if not any(t.startswith(o + "/") for o in binds)}
    return outer, {p: t for p, t in links.items() if not any(p.startswith(o + "/") for o in outer)}


def _build_root(libc, new: str, spec: dict, workdir: str) -> None:
    """Make ``new`` (a directory this mount namespace may cover) the sandbox's future root: a small
    tmpfs holding read-only binds of the interpreter and its libraries, five device nodes, fresh
    tmpfs on /tmp and /dev/shm, the working directory and a fresh /proc (mounted before the old
    root goes: a user namespace may mount proc only while a full one is visible)."""
    binds, links = _interpreter_layout(spec["python"])
    handles = {target: os.open(source, os.O_PATH) for target, source in binds.items()}
    singles = {path: os.open(path, os.O_PATH) for path in _LIBRARY_FILES + _DEVICES if os.path.exists(path)}
    _mount(libc, "tmpfs", new, "tmpfs", _MS_NOSUID | _MS_NODEV, "mode=0755,size=1m,nr_inodes=4096")
    tmpfs = f"mode=1777,size={spec['max_file_mb']}m,nr_inodes=4096"
    for point in ("/tmp", "/dev/shm"):  # before the binds: an interpreter under /tmp (a venv there) stays visible
        os.makedirs(new + point, exist_ok=True)
        _mount(libc, "tmpfs", new + point, "tmpfs", _MS_NOSUID | _MS_NODEV, tmpfs)
    for target, fd in handles.items():
        os.makedirs(new + target, exist_ok=True)
        _mount(libc, f"/proc/self/fd/{fd}", new + target, None, _MS_BIND | _MS_REC)
    for path, target in links.items():
        os.makedirs(os.path.dirname(new + path), exist_ok=True)
        os.symlink(target, new + path)
    for path, fd in singles.items():
        os.makedirs(os.path.dirname(new + path), exist_ok=True)
        open(new + path, "w").close()
        _mount(libc, f"/proc/self/fd/{fd}", new + path, None, _MS_BIND)
    for fd in [*handles.values(), *singles.values()]:
        os.close(fd)
    os.makedirs(new + workdir, exist_ok=True)
    if not workdir.startswith("/tmp/"):
        _mount(libc, "tmpfs", new + workdir, "tmpfs", _MS_NOSUID | _MS_NODEV, tmpfs)
    os.makedirs(new + "/proc")
    try:
        _mount(libc, "proc", new + "/proc", "proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC)
    except OSError:
        pass  # a masked /proc cannot be remounted in a user namespace: the sandbox has none (root mode needs none)
    writable = tuple(new + p for p in ("/tmp", "/dev", "/proc", workdir))
    interpreter = tuple(new + t for t in binds)  # read-only even where they sit under a writable /tmp
    for point in _mount_points():
        inside_interpreter = point in interpreter or point.startswith(tuple(t + "/" for t in interpreter))
        if point.startswith(new + "/") and (inside_interpreter or not point.startswith(writable)):
            _mount(libc, None, point, None, _MS_REMOUNT | _MS_BIND | _MS_RDONLY | _locked_flags(point))
    _mount(libc, None, new, None, _MS_REMOUNT | _MS_BIND | _MS_RDONLY | _locked_flags(new))


def _enter_root(libc, new: str) -> None:
    """``pivot_root`` into ``new`` and detach the old root, so no path leads back to the host's
    files (``chroot`` where the syscall is not known or refused, e.g. an initramfs root)."""
    os.chdir(new)
    number = _PIVOT_ROOT.get(os.uname().machine)
    if number is not None and libc.syscall(ctypes.c_long(number), b".", b".") == 0:
        _call(libc.umount2(b".", _MNT_DETACH), "detach the old root")
    else:
        os.chroot(".")
    os.chdir("/")


def _set_limits(spec: dict, nproc: int) -> None:
    cpu = max(1, int(-(-spec["cpu_s"] // 1)))
    file_bytes = spec["max_file_mb"] << 20
    for limit, value in ((resource.RLIMIT_AS, spec["memory_mb"] << 20), (resource.RLIMIT_CPU, (cpu, cpu + 1)),
                         (resource.RLIMIT_NPROC, nproc), (resource.RLIMIT_FSIZE, file_bytes),
                         (resource.RLIMIT_NOFILE, 256), (resource.RLIMIT_CORE, 0)):
        resource.setrlimit(limit, value if isinstance(value, tuple) else (value, value))


def _user_tasks(uid: int) -> int:
    """Tasks (processes and threads) of ``uid`` now: what RLIMIT_NPROC counts on older kernels."""
    count = 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/status") as f:
                status = dict(line.split(":", 1) for line in f if ":" in line)
            if int(status["Uid"].split()[0]) == uid:
                count += int(status["Threads"])
        except (OSError, KeyError, ValueError):
            continue
    return count


def _runner(libc, spec: dict, root: bool, workdir: str) -> None:
    """The process that becomes the untrusted program: limits, privileges dropped, exec."""
    try:
        if root:
            _set_limits(spec, spec["max_processes"])
            os.setgroups([])
            os.setgid(spec["uid"])
            os.setuid(spec["uid"])
        else:
            modern = tuple(int(x) for x in os.uname().release.split(".")[:2] if x.isdigit()) >= (5, 14)
            _set_limits(spec, spec["max_processes"] + (0 if modern else _user_tasks(os.getuid())))
            _call(libc.unshare(_CLONE_NEWUSER), "unshare user namespace")
            _write("/proc/self/setgroups", "deny")
            _write("/proc/self/uid_map", "1000 0 1")
            _write("/proc/self/gid_map", "1000 0 1")
        _call(libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(NO_NEW_PRIVS)")
        os.chdir(workdir)
        os.execve(spec["python"], [spec["python"], "-I", spec["entry"]], {})
    except BaseException as err:  # noqa: BLE001 - report any set-up failure and never run the code
        os.write(2, f"sandbox setup failed in runner: {err!r}\n".encode())
    os._exit(_SETUP_FAILED)


def _init(libc, spec: dict, root: bool) -> int:
    """PID 1 of the sandbox: a root of its own (:func:`_build_root`), the files, then run and wait for the runner."""
    workdir = os.getcwd()
    files = {}
    for name in os.listdir("."):
        with open(name, "rb") as f:
            files[name] = f.read()
    _mount(libc, None, "/", None, _MS_REC | _MS_PRIVATE)
    _build_root(libc, workdir, spec, workdir)
    _enter_root(libc, workdir)
    os.chdir(workdir)
    owner = spec["uid"] if root else 0
    for name, data in files.items():
        with open(name, "wb") as f:
            f.write(data)
        os.chown(name, owner, owner)
    os.chown(workdir, owner, owner)
    os.chmod(workdir, 0o700)
    pid = os.fork()
    if pid == 0:
        _runner(libc, spec, root, workdir)
    return os.waitpid(pid, 0)[1]


def _bootstrap_namespaces(spec: dict) -> None:
    libc = _libc()
    root = os.geteuid() == 0
    uid, gid = os.getuid(), os.getgid()
    flags = _CLONE_NEWNS | _CLONE_NEWNET | _CLONE_NEWPID | _CLONE_NEWIPC | _CLONE_NEWUTS
    _call(libc.unshare(flags | (0 if root else _CLONE_NEWUSER)), "unshare namespaces")
    if not root:
        _write("/proc/self/setgroups", "deny")
        _write("/proc/self/uid_map", f"0 {uid} 1")
        _write("/proc/self/gid_map", f"0 {gid} 1")
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        try:
            status = _init(libc, spec, root)
        except BaseException as err:  # noqa: BLE001 - any set-up failure: report it, run nothing
            os.write(2, f"sandbox setup failed in init: {err!r}\n".encode())
            os._exit(_SETUP_FAILED)
        os.write(write_end, str(status).encode())
        os._exit(0)
    os.close(write_end)
    report = b""
    while chunk := os.read(read_end, 64):
        report += chunk
    os.waitpid(pid, 0)
    if not report:
        os._exit(_SETUP_FAILED)
    status = int(report)
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            signal.signal(sig, signal.SIG_DFL)
        except (OSError, ValueError):
            pass
        os.kill(os.getpid(), sig)
    os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else _SETUP_FAILED)


_REFUSED = ("os.fork", "os.forkpty", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "subprocess.Popen",
            "os.kill", "os.killpg", "signal.pthread_kill", "pty.spawn")
_PATH_EVENTS = {"os.remove": 1, "os.rmdir": 1, "os.mkdir": 1, "os.chmod": 1, "os.chown": 1, "os.truncate": 1,
                "os.utime": 1, "shutil.rmtree": 1, "os.rename": 2, "os.link": 2, "os.symlink": 2}
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC


def _audit_guard(workdir: str):
    """An audit hook that refuses network, processes, ctypes and writes outside ``workdir``."""
    inside = workdir.rstrip("/") + "/"

    def outside(path) -> bool:
        if isinstance(path, int):
            return False
        real = os.path.realpath(os.fsdecode(path))
        return not (real + "/").startswith(inside) and real != os.devnull

    def hook(event: str, args: tuple) -> None:
        if event.startswith(("socket.", "ctypes.")) or event in _REFUSED:
            raise PermissionError(f"sandbox: {event} is not allowed")
        if event == "open" and args[2] & _WRITE_FLAGS and outside(args[0]):
            raise PermissionError(f"sandbox: writing {args[0]!r} outside the working directory is not allowed")
        if event in _PATH_EVENTS and any(outside(p) for p in args[: _PATH_EVENTS[event]]):
            raise PermissionError(f"sandbox: {event} outside the working directory is not allowed")

    return hook


# Landlock (Linux >= 5.13): the filesystem rights of the "rlimits" mode.  Syscalls 444-446 on every
# architecture; no packaged binding is more than a pre-release, so the three calls are made here.
_LL_EXECUTE, _LL_WRITE_FILE, _LL_READ_FILE, _LL_READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
_LL_FS_BY_ABI = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 4: (1 << 15) - 1, 5: (1 << 16) - 1}
_LL_TRUNCATE = 1 << 14
_LL_NET_TCP = (1 << 0) | (1 << 1)  # bind and connect (ABI >= 4)
_LL_SCOPES = (1 << 0) | (1 << 1)  # abstract unix sockets and signals outside the sandbox (ABI >= 6)


class _LandlockRuleset(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _LandlockPathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def landlock_abi() -> int:
    """The Landlock ABI version this kernel offers (0 = none)."""
    if not sys.platform.startswith("linux"):
        return 0
    libc = _libc()
    return max(int(libc.syscall(ctypes.c_long(444), None, ctypes.c_size_t(0), ctypes.c_uint32(1))), 0)


def _landlock(libc, read_only: list[str], workdir: str) -> None:
    """Restrict this process and its future children: read (and execute) only under ``read_only``,
    read and write the existing files of ``workdir`` (no new files, links or directories anywhere,
    so disk use stays at the given files × RLIMIT_FSIZE), no TCP, no signals or abstract sockets
    outside the sandbox (the last two where the kernel's ABI has them)."""
    abi = landlock_abi()
    if abi < 1:
        raise OSError("Landlock is not available in this kernel")
    fs = _LL_FS_BY_ABI.get(abi, _LL_FS_BY_ABI[5])
    attr = _LandlockRuleset(fs, _LL_NET_TCP if abi >= 4 else 0, _LL_SCOPES if abi >= 6 else 0)
    size = 24 if abi >= 6 else 16 if abi >= 4 else 8
    ruleset = int(libc.syscall(ctypes.c_long(444), ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0)))
    _call(0 if ruleset >= 0 else -1, "landlock_create_ruleset")
    reading = _LL_EXECUTE | _LL_READ_FILE | _LL_READ_DIR
    writing = _LL_READ_FILE | _LL_READ_DIR | _LL_WRITE_FILE | (_LL_TRUNCATE if abi >= 3 else 0)
    rules = [(path, reading) for path in read_only]
    rules += [(workdir, writing), ("/dev/null", _LL_READ_FILE | _LL_WRITE_FILE)]
    rules += [(path, _LL_READ_FILE) for path in ("/dev/urandom", *_LIBRARY_FILES)]
    for path, access in rules:
        if not os.path.exists(path):
            continue
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        rule = _LandlockPathBeneath(access if os.path.isdir(path) else access & ~_LL_READ_DIR, fd)
        _call(int(libc.syscall(ctypes.c_long(445), ctypes.c_int(ruleset), ctypes.c_int(1), ctypes.byref(rule),
                               ctypes.c_uint32(0))), f"landlock_add_rule {path}")
        os.close(fd)
    _call(libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(NO_NEW_PRIVS)")
    _call(int(libc.syscall(ctypes.c_long(446), ctypes.c_int(ruleset), ctypes.c_uint32(0))), "landlock_restrict_self")
    os.close(ruleset)


_CLONE_THREAD = 0x00010000
_DENIED_SYSCALLS = (
    "socket", "socketpair", "fork", "vfork", "execve", "execveat", "tkill", "pidfd_open", "pidfd_send_signal",
    "pidfd_getfd", "ptrace", "process_vm_readv", "process_vm_writev", "process_madvise", "kcmp", "unshare", "setns",
    "mount", "umount2", "pivot_root", "chroot", "mount_setattr", "move_mount", "open_tree", "fsopen", "fsmount",
    "fsconfig", "fspick", "bpf", "perf_event_open", "userfaultfd", "io_uring_setup", "io_uring_enter",
    "io_uring_register", "keyctl", "add_key", "request_key", "init_module", "finit_module", "delete_module",
    "kexec_load", "kexec_file_load", "reboot", "swapon", "swapoff", "acct", "quotactl", "name_to_handle_at",
    "open_by_handle_at")
"""System calls the "rlimits" mode's seccomp filter refuses outright (EPERM); besides, ``clone``
without CLONE_THREAD (a new process) is refused, ``clone3`` reports ENOSYS (glibc then uses
``clone`` for threads), and ``kill``/``tgkill``/``rt_sigqueueinfo``/``rt_tgsigqueueinfo`` work only
on the sandboxed process itself."""


def seccomp_available() -> bool:
    """Whether the seccomp binding (``pyseccomp``, over the system's libseccomp) loads here."""
    try:
        import pyseccomp

        pyseccomp.SyscallFilter(defaction=pyseccomp.ALLOW)
    except Exception:  # no binding, no libseccomp.so, not Linux: all mean "no seccomp"
        return False
    return True


def _seccomp_filter():
    """The "rlimits" mode's system-call filter (:data:`_DENIED_SYSCALLS`), built but not yet loaded
    (building finds libseccomp, which needs a temporary file: before Landlock)."""
    import errno

    import pyseccomp as sc

    me = os.getpid()
    f = sc.SyscallFilter(defaction=sc.ALLOW)
    for name in _DENIED_SYSCALLS:
        try:
            f.add_rule(sc.ERRNO(errno.EPERM), name)
        except (ValueError, RuntimeError, OSError):
            continue  # a system call this architecture does not have (e.g. fork on aarch64)
    f.add_rule(sc.ERRNO(errno.EPERM), "clone", sc.Arg(0, sc.MASKED_EQ, _CLONE_THREAD, 0))
    f.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")
    for name in ("kill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo"):
        f.add_rule(sc.ERRNO(errno.EPERM), name, sc.Arg(0, sc.NE, me))
    return f


def _bootstrap_rlimits(spec: dict) -> None:
    import runpy

    workdir = os.getcwd()
    uid = os.getuid()
    nproc = spec["max_processes"] + (_user_tasks(uid) if uid else 0)
    if spec["isolation"] == "rlimits":
        try:
            libc = _libc()
            read_only, _ = _interpreter_layout(spec["python"])
            syscalls = _seccomp_filter()
            _landlock(libc, sorted(set(read_only.values())), workdir)
            syscalls.load()
        except BaseException as err:  # noqa: BLE001 - never run the code half-confined
            os.write(2, f"sandbox setup failed in rlimits mode: {err!r}\n".encode())
            os._exit(_SETUP_FAILED)
    _set_limits(spec, nproc)
    sys.addaudithook(_audit_guard(workdir))
    sys.argv = [spec["entry"]]
    runpy.run_path(spec["entry"], run_name="__main__")


if __name__ == "__main__":
    _spec = json.loads(sys.argv[1])
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # no core file when a relayed signal kills the bootstrap
    if _spec["isolation"] == "namespaces":
        _bootstrap_namespaces(_spec)
    else:
        _bootstrap_rlimits(_spec)
