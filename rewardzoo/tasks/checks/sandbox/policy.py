"""The sandbox's system-call policy: what seccomp refuses in each mode, and why.

One table of rules, compiled by libseccomp (through ``pyseccomp``) into the BPF program the sandbox
loads after ``no_new_privs`` and before the code runs; every thread and child inherits it and
``execve`` keeps it.  Unlisted calls are allowed: an allowlist would have to know every call an
arbitrary Python program and its C extensions make, and would break legitimate code at random.
Instead the list covers every call that reaches past the run, and a guard (5) refuses every call
newer than this review, so a kernel that grows a new way out does not open one.  Calls of another
ABI (x32, i386) kill the process: libseccomp's filter is for the native one only.

Both modes refuse:

1. **host-wide powers**: the kernel keyring (``keyctl``, ``add_key``, ``request_key``), the kernel
   log, the host and domain name, the clocks, modules, kexec, reboot, swap, accounting, quotas,
   port I/O, ``bpf``, ``perf_event_open``, ``userfaultfd``, ``io_uring`` (its operations bypass
   seccomp), file handles, mount information, every mount call and new namespaces (``unshare``,
   ``setns``, ``clone`` with a namespace flag; ``clone3``, whose flags a filter cannot read,
   reports ENOSYS and glibc falls back to ``clone``) — so no nested user namespace and no tmpfs of
   its own;
2. **other processes**: ``ptrace``, ``process_vm_*``, ``process_madvise``, ``process_mrelease``,
   ``kcmp``, ``pidfd_*``; and the calls that take a pid are pinned to the caller itself (pid 0):
   ``prlimit64``, ``sched_setaffinity``, ``sched_setparam``, ``sched_setscheduler``,
   ``sched_setattr``, ``migrate_pages``, ``move_pages``; ``setpriority`` and ``ioprio_set`` only
   for "this process" (not a process group or a user);
3. **IPC and notifications**: SysV shared memory, message queues and semaphores, POSIX message
   queues, inotify and fanotify (host objects in the rlimits mode; memory outside ``memory_mb``
   in both);
4. **memory outside the address-space limit**: ``memfd_create``, ``memfd_secret``, growing a
   pipe (``F_SETPIPE_SZ``) or, in the namespaces mode, a socket's buffers (``SO_SNDBUF``,
   ``SO_RCVBUF`` and their FORCE forms: one process queued 941 MB in 120 Unix socket pairs with
   ``memory_mb=128`` before this rule; the kernel's defaults, ~208 KB a socket, remain);
5. **calls newer than this review** (reviewed up to number 469, ``file_setattr``, Linux 6.17):
   numbers 470-533 report ENOSYS, as a kernel that lacks them would.  Since Linux 5.1 (number 424)
   a new call has the same number on every architecture, so the calls libseccomp is too old to
   name (2.5.4 stops at 456, while 463-466 are the ``*xattrat`` calls) are given by number.

The rlimits mode (code in the bootstrap's own process, on the host's file system) also refuses:

6. **metadata Landlock does not cover**: the chmod, chown, utime and extended-attribute families
   (xattrs report EOPNOTSUPP, so ``shutil.copy2`` copies without them), ``file_getattr`` and
   ``file_setattr``, the inode-flag ioctls (FS_IOC_SETFLAGS, FS_IOC_FSSETXATTR), ``readlink`` (a
   host symlink's target), ``truncate`` by path (Landlock ABI < 3 does not cover it;
   ``ftruncate`` works);
7. **processes and sockets**: ``fork``, ``vfork``, ``execve``, ``clone`` without CLONE_THREAD,
   ``socket``, ``socketpair``, ``tkill``; ``kill``, ``tgkill``, ``rt_sigqueueinfo`` and
   ``rt_tgsigqueueinfo`` only to itself.

The namespaces mode, whose processes, network, IPC and files are its own, allows processes and
the metadata calls (the host's files in it are read-only binds), but:

8. **only AF_UNIX sockets** (the network namespace does not cover vsock, a VM's way to its
   hypervisor's host, netlink or AF_ALG), and **no** ``connect``, ``sendmsg``, ``sendmmsg`` or
   ``sendto`` to an address: a Unix socket that a host process binds in a directory the sandbox
   shows (the interpreter's, the libraries') is reached by path whatever the network namespace and
   the read-only mount say.  Socket pairs still work (asyncio's event loop needs one).

Departures: none from a paper; the policy is ours.  Untested: architectures other than x86_64
(the rules name calls, so libseccomp maps them; ``clone``'s flags are its second argument on s390x).
"""

from __future__ import annotations

import base64
import errno
import functools
import os
import tempfile

# (call name or number, errno name, conditions): the call fails with that errno when every condition
# on its arguments holds; a condition is (argument index, "ne" or "masked_eq", value[, value]), and
# the value "self" stands for the pid of the process that loads the filter (rlimits mode only).
Rule = tuple

_CLONE_THREAD = 0x00010000
_CLONE_NAMESPACES = (
    0x00020000,
    0x02000000,
    0x04000000,
    0x08000000,
    0x10000000,
    0x20000000,
    0x40000000,
    0x00000080,
)  # NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET, NEWTIME
_FS_IOC_SET = (0x40086602, 0x40046602, 0x401C5820)  # FS_IOC_SETFLAGS, FS_IOC32_SETFLAGS, FS_IOC_FSSETXATTR
_AF_UNIX = 1
_F_SETPIPE_SZ = 1031
_SOL_SOCKET, _SOCKET_BUFFERS = 1, (7, 8, 32, 33)  # SO_SNDBUF, SO_RCVBUF, SO_SNDBUFFORCE, SO_RCVBUFFORCE
_INT = 0xFFFFFFFF  # an int argument: the kernel reads the low 32 bits, so an equality test must too
REVIEWED_UP_TO = 469
_UNREVIEWED = range(REVIEWED_UP_TO + 1, REVIEWED_UP_TO + 65)
# calls numbered the same on every architecture (>= 424) that an older libseccomp cannot name
_UNIFORM = {
    "statmount": 457,
    "listmount": 458,
    "lsm_get_self_attr": 459,
    "lsm_set_self_attr": 460,
    "lsm_list_modules": 461,
    "setxattrat": 463,
    "getxattrat": 464,
    "listxattrat": 465,
    "removexattrat": 466,
    "open_tree_attr": 467,
    "file_getattr": 468,
    "file_setattr": 469,
}

_HOST_POWERS = (
    "keyctl",
    "add_key",
    "request_key",
    "syslog",
    "sethostname",
    "setdomainname",
    "clock_settime",
    "clock_adjtime",
    "settimeofday",
    "adjtimex",
    "init_module",
    "finit_module",
    "delete_module",
    "kexec_load",
    "kexec_file_load",
    "reboot",
    "swapon",
    "swapoff",
    "acct",
    "quotactl",
    "quotactl_fd",
    "iopl",
    "ioperm",
    "vhangup",
    "lookup_dcookie",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "name_to_handle_at",
    "open_by_handle_at",
    "unshare",
    "setns",
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "mount_setattr",
    "move_mount",
    "open_tree",
    "open_tree_attr",
    "fsopen",
    "fsmount",
    "fsconfig",
    "fspick",
    "statmount",
    "listmount",
    "lsm_get_self_attr",
    "lsm_set_self_attr",
    "lsm_list_modules",
)
_OTHER_PROCESSES = (
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "process_madvise",
    "process_mrelease",
    "kcmp",
    "pidfd_open",
    "pidfd_send_signal",
    "pidfd_getfd",
)
_PID_FIRST = (
    "prlimit64",
    "sched_setaffinity",
    "sched_setparam",
    "sched_setscheduler",
    "sched_setattr",
    "migrate_pages",
    "move_pages",
)
_IPC = (
    "shmget",
    "shmat",
    "shmdt",
    "shmctl",
    "msgget",
    "msgsnd",
    "msgrcv",
    "msgctl",
    "semget",
    "semop",
    "semtimedop",
    "semctl",
    "mq_open",
    "mq_unlink",
    "mq_timedsend",
    "mq_timedreceive",
    "mq_notify",
    "mq_getsetattr",
    "inotify_init",
    "inotify_init1",
    "inotify_add_watch",
    "fanotify_init",
    "fanotify_mark",
)
_UNCOUNTED_MEMORY = ("memfd_create", "memfd_secret")
_METADATA = (
    "chmod",
    "fchmod",
    "fchmodat",
    "fchmodat2",
    "chown",
    "fchown",
    "lchown",
    "fchownat",
    "utime",
    "utimes",
    "futimesat",
    "utimensat",
    "file_setattr",
    "file_getattr",
    "readlink",
    "readlinkat",
    "truncate",
)
_XATTRS = tuple(
    f"{prefix}{verb}xattr{suffix}"
    for verb in ("set", "get", "list", "remove")
    for prefix, suffix in (("", ""), ("l", ""), ("f", ""), ("", "at"))
)
_PROCESSES = ("fork", "vfork", "execve", "execveat", "socket", "socketpair", "tkill")
_SIGNALS = ("kill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo")


def rules(mode: str) -> list[Rule]:
    """The rules of ``mode`` ("namespaces" or "rlimits"), as JSON-able lists (module docstring)."""
    if mode not in ("namespaces", "rlimits"):
        raise ValueError(f"no seccomp policy for isolation {mode!r}")
    flags = 1 if os.uname().machine.startswith("s390") else 0  # clone(stack, flags, ...) there
    eperm, nosys = "EPERM", "ENOSYS"
    table = [(call, eperm, []) for call in (*_HOST_POWERS, *_OTHER_PROCESSES, *_IPC, *_UNCOUNTED_MEMORY)]
    table += [("clone", eperm, [(flags, "masked_eq", bit, bit)]) for bit in _CLONE_NAMESPACES]
    table += [("clone3", nosys, [])] + [(number, nosys, []) for number in _UNREVIEWED]
    table += [(call, eperm, [(0, "ne", 0)]) for call in _PID_FIRST]
    table += [(call, eperm, [(0, "ne", who)]) for call, who in (("setpriority", 0), ("ioprio_set", 1))]
    table += [(call, eperm, [(1, "ne", 0)]) for call in ("setpriority", "ioprio_set")]
    table += [("fcntl", eperm, [(1, "masked_eq", _INT, _F_SETPIPE_SZ)])]
    if mode == "namespaces":
        table += [(call, "EAFNOSUPPORT", [(0, "ne", _AF_UNIX)]) for call in ("socket", "socketpair")]
        table += [
            ("setsockopt", eperm, [(1, "masked_eq", _INT, _SOL_SOCKET), (2, "masked_eq", _INT, option)])
            for option in _SOCKET_BUFFERS
        ]
        return (
            table
            + [(call, eperm, []) for call in ("connect", "sendmsg", "sendmmsg")]
            + [("sendto", eperm, [(4, "ne", 0)])]
        )
    table += [(call, eperm, []) for call in (*_METADATA, *_PROCESSES)]
    table += [(call, "EOPNOTSUPP", []) for call in _XATTRS]
    table += [("ioctl", eperm, [(1, "masked_eq", _INT, cmd)]) for cmd in _FS_IOC_SET]
    table += [("clone", eperm, [(flags, "masked_eq", _CLONE_THREAD, 0)])]
    return table + [(call, eperm, [(0, "ne", "self")]) for call in _SIGNALS]


def syscall_number(name: str) -> int | None:
    """The number of system call ``name`` on this architecture (None: it has none, e.g. fork on aarch64)."""
    import pyseccomp

    number = pyseccomp.resolve_syscall(pyseccomp.Arch.NATIVE, name)
    return number if number >= 0 else _UNIFORM.get(name)


def compile_rules(table: list[Rule], self_pid: int | None = None) -> bytes:
    """The BPF program of ``table`` (``self_pid`` for the value "self"), built by libseccomp."""
    import pyseccomp as sc

    ops = {"ne": sc.NE, "masked_eq": sc.MASKED_EQ}
    program = sc.SyscallFilter(defaction=sc.ALLOW)
    for call, error, conditions in table:
        number = call if isinstance(call, int) else syscall_number(call)
        if number is None:
            continue
        args = [
            sc.Arg(index, ops[op], *(self_pid if v == "self" else v for v in values))
            for index, op, *values in conditions
        ]
        program.add_rule(sc.ERRNO(getattr(errno, error)), number, *args)
    with tempfile.TemporaryFile() as out:
        program.export_bpf(out)
        out.seek(0)
        return out.read()


@functools.cache
def namespaces_program() -> str:
    """The namespaces mode's program, base64 (it names no pid, so it is built once per process)."""
    return base64.b64encode(compile_rules(rules("namespaces"))).decode()


def seccomp_available() -> bool:
    """Whether the seccomp binding (``pyseccomp``, over the system's libseccomp) loads here."""
    try:
        import pyseccomp

        pyseccomp.SyscallFilter(defaction=pyseccomp.ALLOW)
    except Exception:  # no binding, no libseccomp.so, not Linux: all mean "no seccomp"
        return False
    return True
