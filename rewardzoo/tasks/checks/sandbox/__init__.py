"""Run untrusted model code in a separate, locked-down process (the RLVR lesson, "Safety").

    result = run("print(6 * 7)", timeout_s=5, memory_mb=512)
    result.stdout == "42\\n" and result.returncode == 0

    unit_test_reward("def add(a, b):\\n    return a - b\\n", [((2, 3), 5), ((0, 0), 0), ((-1, 1), 0)],
                     entry_point="add")          # 1/3: partial credit = passed / total

Threat model: the code is hostile and knows this file.  It must not read anything of the host
(files, their metadata, keys, IPC objects, other processes' memory or environment), change or
harm anything of it (files, the caller's or any other process's limits, scheduling or signals, the
host's name, clock or kernel), reach any listener, leave anything behind (processes, zombies, IPC
objects, keys, files), or take more memory, CPU, disk, output or time than it is given; and
:func:`run` must return on time.  The boundary is the kernel: namespaces, Landlock, seccomp,
capabilities and resource limits; the audit hook of the rlimits modes is only a first, clearer
error (the code can empty it: ``tests/helpers/sandbox_attacks.py`` does, before every attack).

The pieces, one idea per file: :mod:`.caller` (the caller: start, collect, stop and reap; which mode),
:mod:`.bootstrap` (the sandbox's first process: confine, then run), :mod:`.policy` (the seccomp
rules and why each), :mod:`.unit_tests` (the code reward).

``"namespaces"`` (the default wherever a trial run works; needs root or unprivileged user
namespaces, and seccomp)
    1. ``unshare`` new mount, network, PID, IPC and UTS namespaces (plus a user namespace when not
       root), then fork *init*, PID 1 of the new PID namespace.  When init dies the kernel kills
       every process in the namespace.  To stop a run the caller sends SIGTERM to the bootstrap,
       which kills init and reaps it, so no zombie is left even where the caller is a subreaper.
    2. init builds the sandbox a root of its own and ``pivot_root``s into it (``chroot`` where the
       kernel refuses, e.g. an initramfs root), detaching the host's: a small read-only tmpfs that
       holds only read-only binds of the interpreter's installation (``sys.prefix``,
       ``sys.base_prefix``, the executable's directory), the system's library directories (/lib,
       /usr/lib, ...; their symbolic links recreated) and ``/etc/ld.so.cache``; the device nodes
       null, zero, full, random and urandom; fresh tmpfs (``max_file_mb`` each) on /tmp and
       /dev/shm, the working directory (under /tmp, or on a tmpfs of its own), and a fresh /proc
       that shows only the sandbox's processes (its ``keys`` and ``key-users``, which are not
       namespaced, masked).  Nothing else of the host exists in there: not /etc, /home, /root,
       /run, the project checkout or the host's /tmp.  The network namespace has only a loopback
       device that is down, and the UTS namespace is named "sandbox".
    3. init forks the *runner*: a session and a fresh session keyring of its own, resource limits,
       then — as root — a fresh random unused uid/gid with no supplementary groups (so
       RLIMIT_NPROC counts only this run's processes), or — not root — a nested user namespace in
       which it is not root; every capability dropped (bounding and ambient sets too), then
       ``PR_SET_NO_NEW_PRIVS`` and the seccomp filter of :mod:`.policy` (built once per caller
       process); then it ``exec``s ``python -I main.py`` with an empty environment.

``"rlimits"`` (the fallback where namespaces are not available; needs Landlock and seccomp)
    The bootstrap confines itself, then runs the code in-process with ``runpy``: a fresh session
    keyring; every capability dropped (as root it keeps uid 0, owning no power: the interpreter
    may live where only root may enter, e.g. pyenv under /root); **Landlock** (Linux >= 5.13): read
    and execute only under the interpreter's directories and the library directories, read and
    write only the files already in the working directory — no file, directory, link or socket can
    be created or removed anywhere; /etc, /home, the checkout and /proc unreadable; TCP refused
    (ABI >= 4), signals and abstract sockets outside the sandbox refused (ABI >= 6); the resource
    limits; **seccomp** (:mod:`.policy`, naming its own pid): besides what both modes refuse, no
    process creation, no sockets, signals only to itself, and none of the metadata calls Landlock
    does not cover (chmod, chown, utime, extended attributes, inode flags, readlink, truncate);
    then the audit hook (below).  Where Landlock or the seccomp binding is missing, or the trial
    run fails, "rlimits" (and "auto" falling back to it) is refused with :class:`SandboxRefused`,
    naming what is missing and the guarantee it costs, before anything runs.

``"unsafe_rlimits"`` (only by name: for code you trust, on machines with neither of the above)
    Resource limits (RLIMIT_NPROC relative to the user's current process count) and the audit
    hook, which refuses sockets, process creation (fork, exec, spawn, subprocess, os.system),
    ``ctypes``, signals to other processes, and writes/renames/deletes outside the working
    directory — at the Python level only, and escapable: ``os.open(..., dir_fd=...)`` writes and
    unlinks outside the working directory, ``signal.pidfd_send_signal`` signals the parent,
    ``_posixsubprocess.fork_exec`` leaves a daemon behind, every readable file (/etc, the
    checkout, ``/proc/<pid>/environ``) can be read, and nothing caps total disk use.

Both confining modes' seccomp filter refuses, whatever route Python or C takes: the kernel
keyring; every call that acts on another process (``ptrace``, ``process_vm_*``, ``pidfd_*``, and
``prlimit64``, the ``sched_set*`` calls, ``setpriority``, ``ioprio_set``, ``migrate_pages``,
``move_pages`` pinned to the process itself); SysV and POSIX IPC, inotify and fanotify;
``memfd_create``, growing pipes and socket buffers; mounts and new namespaces (so no nested user
namespace and no tmpfs of its own); the kernel log, host and domain names, clocks, modules,
``bpf``, ``io_uring``; and every call newer than the policy's review.  The namespaces mode allows
only ``AF_UNIX`` sockets and no ``connect``/``sendmsg``/``sendto`` to an address (a host socket in
a directory it shows would otherwise be reached by path); socket pairs work (asyncio).

Resource limits (every mode, per process): RLIMIT_AS = ``memory_mb``, RLIMIT_CPU = ``cpu_s`` (soft;
SIGKILL one second later), RLIMIT_NPROC = ``max_processes``, RLIMIT_FSIZE = ``max_file_mb``,
RLIMIT_NOFILE = 256, no core dumps, RLIMIT_RTPRIO = RLIMIT_NICE = 0.  On return everything the run
started is dead and reaped.

Memory: every page the code can pin counts against its limits — in its address space (RLIMIT_AS)
or in the namespaces mode's tmpfs (``max_file_mb`` each) — because the ways around them are
refused: memfd, SysV shared memory, POSIX message queues, a tmpfs of its own (a nested user
namespace), growing a pipe or a socket's buffers.  So a run holds at most ``max_processes`` ×
``memory_mb`` + 2 × ``max_file_mb`` (namespaces; ``memory_mb`` in rlimits, one process), plus the
kernel's buffers at their default sizes (below).  No cgroup is used: a cgroup v2 memory limit
needs a delegated subtree the caller does not have by default, and this machine's memory
controller is cgroup v1, in a hierarchy that belongs to whoever runs the caller.

Not covered (know these before running hostile code at scale):
  * a kernel exploit escapes any of this (the seccomp filter narrows the kernel's surface; it
    does not remove it);
  * kernel buffers — pipes, and in the namespaces mode Unix socket pairs — are not counted
    against ``memory_mb``: at their default sizes (~64 KB a pipe, ~208 KB a socket) and with
    RLIMIT_NOFILE = 256 descriptors, at most ~55 MB a process in the namespaces mode (128 socket
    pairs filled both ways) and ~8 MB in rlimits (pipes only) — measured: 3 MB queued in 50 pipes,
    11 MB in 50 socket pairs (941 MB in 120 before the buffer rules); only a cgroup would count them;
  * "rlimits": ``stat()`` of a host path still answers (its existence, size, owner, times:
    Landlock has no right for it and seccomp cannot see paths); read access to the interpreter's
    directories; code runs in the bootstrap's own process (already holding its open files: the
    two output pipes); as root, RLIMIT_NPROC does not bind (the kernel exempts uid 0) — seccomp
    refuses process creation and RLIMIT_AS bounds threads; as a user without CAP_SETPCAP the
    bounding set cannot be emptied (nothing can be gained from it: no_new_privs, no exec);
  * the interpreter's installation and the system libraries are readable (they hold no user
    data; a virtual environment inside the project checkout shows only itself), and the code can
    import anything installed in it;
  * memory and CPU limits are per process: a fork bomb (namespaces) can hold up to
    ``max_processes`` × ``memory_mb`` of address space until the wall-clock kill;
  * the wall-clock timeout includes the sandbox's own start-up (~0.1 s on a busy 2-core machine);
  * a Python installed at / itself (no prefix directory) cannot be shown without the whole host:
    the namespaces mode refuses to start there;
  * GPU devices are not visible in the namespaces mode (no /dev/nvidia*): the sandbox is for CPU code.

Why not bubblewrap (``bwrap``, the Debian package ``bubblewrap``) as the backend: run as root, it
maps the sandbox's user to the host's uid 0, which RLIMIT_NPROC exempts, so a fork bomb would be
capped only by the wall clock; our namespaces path gives the run a fresh unprivileged uid instead,
and it needs no package.

The hostile corpus — every attack above, judged from the host's side, in every mode this machine
supports, as root and as an unprivileged user — is ``tests/tasks/checks/test_sandbox_hostile.py``;
``docs/reliability.md`` lists it with its measured results.
"""

from rewardzoo.tasks.checks.sandbox.bootstrap import interpreter_layout, landlock_abi
from rewardzoo.tasks.checks.sandbox.caller import (
    ISOLATIONS,
    SandboxRefused,
    SandboxResult,
    missing,
    mode_works,
    resolve_isolation,
    run,
)
from rewardzoo.tasks.checks.sandbox.policy import seccomp_available
from rewardzoo.tasks.checks.sandbox.unit_tests import unit_test_reward

__all__ = [
    "ISOLATIONS",
    "SandboxRefused",
    "SandboxResult",
    "interpreter_layout",
    "landlock_abi",
    "missing",
    "mode_works",
    "resolve_isolation",
    "run",
    "seccomp_available",
    "unit_test_reward",
]
