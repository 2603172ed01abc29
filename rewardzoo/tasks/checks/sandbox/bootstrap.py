"""What runs in the sandbox's first process: confine, then run the code (this file is executed as a script).

``python -I bootstrap.py <spec>`` in the run's working directory, started by
:func:`rewardzoo.tasks.checks.sandbox.run` with an empty environment; it imports nothing from
rewardzoo (importing the package would cost a second of start-up), so the confinement is here,
in one file: namespaces and the sandbox's own root, Landlock, capabilities, the keyring, the
resource limits, loading the seccomp program of :mod:`.policy`, and the audit hook.  The caller
imports it for :func:`landlock_abi` and :func:`interpreter_layout`.
"""

from __future__ import annotations

import base64
import ctypes
import importlib.util
import json
import os
import resource
import signal
import struct
import sys

SETUP_FAILED = 125  # exit status of a bootstrap that could not build the sandbox

_CLONE_NEWNS, _CLONE_NEWUTS, _CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
_CLONE_NEWUSER, _CLONE_NEWPID, _CLONE_NEWNET = 0x10000000, 0x20000000, 0x40000000
_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_NOEXEC, _MS_REMOUNT = 1, 2, 4, 8, 32
_MS_NOATIME, _MS_NODIRATIME, _MS_BIND, _MS_REC, _MS_PRIVATE, _MS_RELATIME = 1024, 2048, 4096, 16384, 1 << 18, 1 << 21
_MNT_DETACH = 2
_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 22, 2
_PR_CAPBSET_READ, _PR_CAPBSET_DROP, _PR_SET_NO_NEW_PRIVS, _PR_CAP_AMBIENT = 23, 24, 38, 47
_PR_CAP_AMBIENT_IS_SET, _PR_CAP_AMBIENT_CLEAR_ALL = 1, 4
_CAPABILITY_VERSION_3 = 0x20080522
_KEYCTL_JOIN_SESSION_KEYRING = 1
_LIBRARY_DIRS = ("/lib", "/lib64", "/lib32", "/libx32", "/usr/lib", "/usr/lib64", "/usr/lib32", "/usr/libx32")
_LIBRARY_FILES = ("/etc/ld.so.cache",)  # the dynamic loader's index of the directories above
_DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")
_MASKED_PROC = ("keys", "key-users")  # the host's keys by description, not namespaced: /dev/null in their place


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


# ------------------------------------------------------------------------------ the sandbox's root
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


def interpreter_layout(python: str) -> tuple[dict[str, str], dict[str, str]]:
    """What the code needs to run ``python``: directories to show read-only (path in the sandbox →
    real directory; outermost only) and symbolic links to recreate (path → target).

    The interpreter's installation (``sys.prefix``, ``sys.base_prefix``, their exec prefixes, the
    directories of the executable and of the file it links to), each at its real path and at the
    path it is reached by, and the system's shared-library directories; nothing else."""
    wanted = [
        sys.prefix,
        sys.exec_prefix,
        sys.base_prefix,
        sys.base_exec_prefix,
        os.path.dirname(python),
        os.path.dirname(os.path.realpath(python)),
    ]
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
    root goes: a user namespace may mount proc only while a full one is visible) whose keyring
    files are masked."""
    binds, links = interpreter_layout(spec["python"])
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
    for name in _MASKED_PROC:
        if os.path.exists(f"{new}/proc/{name}"):
            _mount(libc, new + "/dev/null", f"{new}/proc/{name}", None, _MS_BIND)
    writable = tuple(new + p for p in ("/tmp", "/dev", "/proc", workdir))
    interpreter = tuple(new + t for t in binds)  # read-only even where they sit under a writable /tmp
    for point in _mount_points():
        inside_interpreter = point in interpreter or point.startswith(tuple(t + "/" for t in interpreter))
        if point.startswith(new + "/") and (inside_interpreter or not point.startswith(writable)):
            _mount(libc, None, point, None, _MS_REMOUNT | _MS_BIND | _MS_RDONLY | _locked_flags(point))
    _mount(libc, None, new, None, _MS_REMOUNT | _MS_BIND | _MS_RDONLY | _locked_flags(new))


def _enter_root(libc, new: str, pivot_root: int | None) -> None:
    """``pivot_root`` into ``new`` and detach the old root, so no path leads back to the host's
    files (``chroot`` where the syscall is not known or refused, e.g. an initramfs root)."""
    os.chdir(new)
    if pivot_root is not None and libc.syscall(ctypes.c_long(pivot_root), b".", b".") == 0:
        _call(libc.umount2(b".", _MNT_DETACH), "detach the old root")
    else:
        os.chroot(".")
    os.chdir("/")


# -------------------------------------------------------------------- limits, privileges, keyring
def _set_limits(spec: dict, nproc: int) -> None:
    """Every mode: address space, CPU time (SIGKILL a second after SIGXCPU), processes, file size,
    open files, no core dumps, and no real-time or raised priority."""
    cpu = max(1, int(-(-spec["cpu_s"] // 1)))
    for limit, value in (
        (resource.RLIMIT_AS, spec["memory_mb"] << 20),
        (resource.RLIMIT_CPU, (cpu, cpu + 1)),
        (resource.RLIMIT_NPROC, nproc),
        (resource.RLIMIT_FSIZE, spec["max_file_mb"] << 20),
        (resource.RLIMIT_NOFILE, 256),
        (resource.RLIMIT_CORE, 0),
        (resource.RLIMIT_RTPRIO, 0),
        (resource.RLIMIT_NICE, 0),
    ):
        resource.setrlimit(limit, value if isinstance(value, tuple) else (value, value))


def user_tasks(uid: int) -> int:
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


def _drop_privileges(libc, become: int | None = None) -> None:
    """No capability left and none to gain: the ambient set cleared, the bounding set emptied
    (where this process may: it needs CAP_SETPCAP; without it nothing can be gained anyway, with
    no_new_privs), ``become`` (a fresh uid, no groups) taken if given, then effective, permitted
    and inheritable zeroed — and checked, so a set-up that could not do it runs nothing."""
    if libc.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 and ctypes.get_errno() != 22:
        _call(-1, "clear the ambient capabilities")  # EINVAL: a kernel without ambient capabilities (< 4.3)
    cap = 0
    while libc.prctl(_PR_CAPBSET_READ, cap, 0, 0, 0) >= 0:
        if libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 and ctypes.get_errno() != 1:  # EPERM: not ours to drop
            _call(-1, f"drop capability {cap} from the bounding set")
        cap += 1
    if become is not None:
        os.setgroups([])
        os.setresgid(become, become, become)
        os.setresuid(become, become, become)
    header = ctypes.create_string_buffer(struct.pack("Ii", _CAPABILITY_VERSION_3, 0), 8)
    _call(libc.capset(header, ctypes.create_string_buffer(24)), "capset")
    data = ctypes.create_string_buffer(24)
    _call(libc.capget(header, data), "capget")
    ambient = [c for c in range(cap) if libc.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_IS_SET, c, 0, 0) == 1]
    if any(struct.unpack("6I", data.raw)) or ambient:
        raise OSError(f"capabilities remain after dropping them: {data.raw.hex()} ambient {ambient}")


def _fresh_session_keyring(libc, keyctl: int | None) -> None:
    """Leave the caller's session keyring for a fresh anonymous one (seccomp then refuses every
    keyring call: this keeps even a kernel bug in that path from reaching the caller's keys).
    Failing to (no keyrings in this kernel, or a user out of key quota) is not fatal."""
    if keyctl is not None:
        libc.syscall(ctypes.c_long(keyctl), ctypes.c_long(_KEYCTL_JOIN_SESSION_KEYRING), None)


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def _load_seccomp(libc, program: bytes) -> None:
    """Load a BPF program built by libseccomp (:mod:`.policy`); no_new_privs must be set."""
    buf = ctypes.create_string_buffer(program, len(program))
    fprog = _SockFprog(len(program) // 8, ctypes.addressof(buf))
    _call(libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.addressof(fprog), 0, 0), "load the seccomp filter")


# ------------------------------------------------------------------------------ "namespaces" mode
def _runner(libc, spec: dict, root: bool, workdir: str) -> None:
    """The process that becomes the untrusted program: a session and keyring of its own, limits,
    privileges dropped, no_new_privs, the seccomp filter, exec."""
    try:
        _fresh_session_keyring(libc, spec["nr"]["keyctl"])
        os.setsid()  # nothing it signals by process group reaches init or the bootstrap outside
        if root:
            _set_limits(spec, spec["max_processes"])
            _drop_privileges(libc, become=spec["uid"])
        else:
            modern = tuple(int(x) for x in os.uname().release.split(".")[:2] if x.isdigit()) >= (5, 14)
            _set_limits(spec, spec["max_processes"] + (0 if modern else user_tasks(os.getuid())))
            _call(libc.unshare(_CLONE_NEWUSER), "unshare user namespace")
            _write("/proc/self/setgroups", "deny")
            _write("/proc/self/uid_map", "1000 0 1")
            _write("/proc/self/gid_map", "1000 0 1")
            _drop_privileges(libc)
        _call(libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(NO_NEW_PRIVS)")
        _load_seccomp(libc, base64.b64decode(spec["seccomp"]))
        os.chdir(workdir)
        os.execve(spec["python"], [spec["python"], "-I", spec["entry"]], {})
    except BaseException as err:  # noqa: BLE001 - report any set-up failure and never run the code
        os.write(2, f"sandbox setup failed in runner: {err!r}\n".encode())
    os._exit(SETUP_FAILED)


def _init(libc, spec: dict, root: bool) -> int:
    """PID 1 of the sandbox: a root of its own (:func:`_build_root`), a host name of its own, the
    files, then run and wait for the runner."""
    workdir = os.getcwd()
    files = {}
    for name in os.listdir("."):
        with open(name, "rb") as f:
            files[name] = f.read()
    _mount(libc, None, "/", None, _MS_REC | _MS_PRIVATE)
    _build_root(libc, workdir, spec, workdir)
    _enter_root(libc, workdir, spec["nr"]["pivot_root"])
    _call(libc.sethostname(b"sandbox", 7), "sethostname")
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
    """New mount, network, PID, IPC and UTS namespaces (and a user namespace when not root), then
    init.  The bootstrap only waits: SIGTERM (the caller's way to stop a run) makes it kill init,
    which takes the whole PID namespace with it, and it reaps init before it exits on every path,
    so no zombie is left to the caller, even where the caller is a subreaper."""
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
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})  # until init's pid is known
    pid = os.fork()
    if pid == 0:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
        os.close(read_end)
        try:
            status = _init(libc, spec, root)
        except BaseException as err:  # noqa: BLE001 - any set-up failure: report it, run nothing
            os.write(2, f"sandbox setup failed in init: {err!r}\n".encode())
            os._exit(SETUP_FAILED)
        os.write(write_end, str(status).encode())
        os._exit(0)
    stopped = []
    signal.signal(signal.SIGTERM, lambda *_: (stopped.append(True), os.kill(pid, signal.SIGKILL)))
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
    os.close(write_end)
    report = b""
    while chunk := os.read(read_end, 64):
        report += chunk
    os.waitpid(pid, 0)
    if stopped:  # killed, as the caller asked: say so as SIGKILL would have
        os.kill(os.getpid(), signal.SIGKILL)
    if not report:
        os._exit(SETUP_FAILED)
    status = int(report)
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            signal.signal(sig, signal.SIG_DFL)
        except (OSError, ValueError):
            pass
        os.kill(os.getpid(), sig)
    os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else SETUP_FAILED)


# --------------------------------------------------------------------------------- "rlimits" mode
_REFUSED = (
    "os.fork",
    "os.forkpty",
    "os.system",
    "os.exec",
    "os.posix_spawn",
    "os.spawn",
    "subprocess.Popen",
    "os.kill",
    "os.killpg",
    "signal.pthread_kill",
    "pty.spawn",
)
_PATH_EVENTS = {
    "os.remove": 1,
    "os.rmdir": 1,
    "os.mkdir": 1,
    "os.chmod": 1,
    "os.chown": 1,
    "os.truncate": 1,
    "os.utime": 1,
    "shutil.rmtree": 1,
    "os.rename": 2,
    "os.link": 2,
    "os.symlink": 2,
}
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
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


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
        _call(
            int(
                libc.syscall(
                    ctypes.c_long(445), ctypes.c_int(ruleset), ctypes.c_int(1), ctypes.byref(rule), ctypes.c_uint32(0)
                )
            ),
            f"landlock_add_rule {path}",
        )
        os.close(fd)
    _call(libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(NO_NEW_PRIVS)")
    _call(int(libc.syscall(ctypes.c_long(446), ctypes.c_int(ruleset), ctypes.c_uint32(0))), "landlock_restrict_self")
    os.close(ruleset)


def _policy():
    """:mod:`.policy`, loaded by path (this script runs outside the package)."""
    spec = importlib.util.spec_from_file_location(
        "rewardzoo_sandbox_policy", os.path.join(os.path.dirname(__file__), "policy.py")
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _bootstrap_rlimits(spec: dict) -> None:
    """Confine this very process — a fresh keyring, no capability (root keeps uid 0: the interpreter
    may live where only root can enter), Landlock, the limits, the seccomp filter naming its own
    pid — then run the code in it with ``runpy``; "unsafe_rlimits": only the limits and the hook."""
    import runpy

    workdir = os.getcwd()
    root = os.geteuid() == 0
    nproc = spec["max_processes"] + (0 if root else user_tasks(os.getuid()))
    if spec["isolation"] == "rlimits":
        try:
            libc = _libc()
            read_only, _ = interpreter_layout(spec["python"])
            policy = _policy()  # libseccomp is found and loaded here, before Landlock hides the tools it uses
            program = policy.compile_rules(policy.rules("rlimits"), self_pid=os.getpid())
            _fresh_session_keyring(libc, spec["nr"]["keyctl"])
            _drop_privileges(libc)
            _landlock(libc, sorted(set(read_only.values())), workdir)
            _set_limits(spec, nproc)
            _load_seccomp(libc, program)
        except BaseException as err:  # noqa: BLE001 - never run the code half-confined
            os.write(2, f"sandbox setup failed in rlimits mode: {err!r}\n".encode())
            os._exit(SETUP_FAILED)
    else:
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
