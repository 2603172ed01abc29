"""The host side of the sandbox's hostile corpus (``tests/tasks/checks/test_sandbox_hostile.py``).

Run as a script with a JSON request on stdin::

    {"mode": "namespaces" | "rlimits", "uid": null | <an unused uid to become>, "token": <hex>,
     "visible_dir": <a directory inside the interpreter's installation, owned by that uid>,
     "repo": <the checkout>, "repo_file": <a file in it>,
     "runs": [{"name": ..., "attacks": [<names in sandbox_attacks>], "kwargs": {<for sandbox.run>}}, ...]}

it becomes the host a hostile program would harm: as root it first takes a UTS namespace of its own
(so a sandbox that failed could rename only it, never the machine), then drops to ``uid`` if given;
it becomes a child subreaper (a process the sandbox leaves behind, zombie or not, becomes its child,
where it is seen); it sets up the bait — a private directory with a secret file (with a secret
extended attribute), a symlink with a secret target and a directory it creates secret names in
while the attack runs; a file inside the interpreter's installation (which the sandbox shows or
lets read), and a stream and a datagram Unix socket beside it (a read-only mount does not stop
``connect``); a key in a fresh session keyring and one in the user keyring; a SysV shared-memory
segment and message queue holding secrets; a victim process of the same user with a secret in its
memory, command line and environment; TCP, UDP, path and abstract Unix listeners; a secret in its
own memory and environment, and an inheritable descriptor of the secret file — runs each request
through ``sandbox.run`` and prints one JSON object: for each run the result, what the host saw
before and after (its own and the victim's limits, affinity, nice value, scheduling policy and I/O
priority; the bait files' metadata, extended attributes and contents; IPC objects, keys, planted
names, processes and zombies; connections and signals received) and the peak of the machine's
shared memory during the run.  Every secret is ``RZSECRET-<kind>-<token>`` and never enters the
sandbox, so finding the token in its output is a leak.  Everything planted is removed at the end.
"""

import ctypes
import hashlib
import importlib
import inspect
import json
import os
import resource
import secrets
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import types
from pathlib import Path

import pyseccomp

sys.path.insert(0, str(Path(__file__).parent))
import sandbox_attacks  # noqa: E402


def import_sandbox():
    """``rewardzoo.tasks.checks.sandbox`` from this checkout, without running the ``__init__`` of the
    packages above it (``rewardzoo``'s imports torch and transformers: 6 s of start-up per helper)."""
    package = Path(__file__).resolve().parents[2] / "rewardzoo"
    for name, path in (
        ("rewardzoo", package),
        ("rewardzoo.tasks", package / "tasks"),
        ("rewardzoo.tasks.checks", package / "tasks" / "checks"),
    ):
        module = types.ModuleType(name)
        module.__path__ = [str(path)]
        sys.modules[name] = module
    return importlib.import_module("rewardzoo.tasks.checks.sandbox")


sandbox = import_sandbox()

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
libc.shmat.restype = ctypes.c_void_p
NR = {
    name: pyseccomp.resolve_syscall(pyseccomp.Arch.NATIVE, name)
    for name in (
        "keyctl",
        "add_key",
        "ioprio_set",
        "ioprio_get",
        "migrate_pages",
        "move_pages",
        "fchmodat2",
        "openat2",
        "ptrace",
        "process_vm_readv",
        "unshare",
    )
} | {"setxattrat": 463, "getxattrat": 464}  # one number everywhere
VICTIM = """import ctypes, sys, time
secret = ctypes.create_string_buffer(sys.argv[1].replace("argv", "mem").encode())  # RZSECRET-mem-<token>
print(ctypes.addressof(secret), flush=True)
time.sleep(600)
"""


def keyctl(*args) -> int:
    return libc.syscall(ctypes.c_long(NR["keyctl"]), *(ctypes.c_long(a) if isinstance(a, int) else a for a in args))


def add_key(description: str, payload: str, ring: int) -> int:
    return libc.syscall(
        ctypes.c_long(NR["add_key"]),
        b"user",
        description.encode(),
        payload.encode(),
        ctypes.c_long(len(payload)),
        ctypes.c_long(ring),
    )


def keys_in(ring: int) -> list[str]:
    """Descriptions of the keys linked in ``ring``."""
    buf = ctypes.create_string_buffer(65536)
    n = keyctl(11, ring, buf, 65536)
    found = []
    for serial in struct.unpack(f"{max(n, 0) // 4}i", buf.raw[: max(n, 0) // 4 * 4]):
        desc = ctypes.create_string_buffer(512)
        if keyctl(6, serial, desc, 512) > 0:
            found.append(desc.value.decode(errors="replace"))
    return sorted(found)


def proc_state(pid: int) -> dict:
    """What a process's neighbour could change: limits, affinity, nice value, policy, I/O priority."""
    try:
        return {
            "rlimits": {
                name: resource.prlimit(pid, getattr(resource, name))
                for name in dir(resource)
                if name.startswith("RLIMIT_")
            },
            "affinity": sorted(os.sched_getaffinity(pid)),
            "nice": os.getpriority(os.PRIO_PROCESS, pid),
            "policy": os.sched_getscheduler(pid),
            "ioprio": libc.syscall(ctypes.c_long(NR["ioprio_get"]), ctypes.c_long(1), ctypes.c_long(pid)),
        }
    except ProcessLookupError:
        return {"gone": True}


def file_state(path: str) -> dict | None:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    state = {
        "mode": st.st_mode,
        "uid": st.st_uid,
        "gid": st.st_gid,
        "size": st.st_size,
        "mtime_ns": st.st_mtime_ns,
        "atime_set": st.st_atime < 100,
        "xattrs": {
            n: os.getxattr(path, n, follow_symlinks=False).hex() for n in os.listxattr(path, follow_symlinks=False)
        },
    }
    if os.path.islink(path):
        state["target"] = os.readlink(path)
    elif os.path.isfile(path):
        state["sha"] = hashlib.sha256(Path(path).read_bytes()).hexdigest()
        with open(path, "rb") as f:
            import fcntl

            state["flags"] = struct.unpack("l", fcntl.ioctl(f.fileno(), 0x80086601, b"\0" * 8))[0]
    elif os.path.isdir(path):
        state["entries"] = sorted(os.listdir(path))
    return state


def sysv_objects() -> dict[str, list[str]]:
    """The host's SysV IPC objects (key, id, owner uid), and each message queue's message count."""
    found = {}
    for kind in ("shm", "msg", "sem"):
        lines = Path(f"/proc/sysvipc/{kind}").read_text().splitlines()
        head = lines[0].split()
        rows = [dict(zip(head, line.split())) for line in lines[1:]]
        found[kind] = sorted(
            f"{r['key']}:{r[{'shm': 'shmid', 'msg': 'msqid', 'sem': 'semid'}[kind]]}:{r['uid']}"
            + (f":qnum={r['qnum']}" if kind == "msg" else "")
            for r in rows
        )
    return found


def processes() -> list[dict]:
    """Every process: pid, parent, state, command line (for leftovers and zombies)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        found.append({"pid": int(pid), "state": fields[0], "ppid": int(fields[1]), "cmdline": cmdline})
    return found


class Host:
    """The bait, its listeners and the measures taken around each run."""

    def __init__(self, request: dict):
        self.request = request
        token = request["token"]
        self.secret = {
            kind: f"RZSECRET-{kind}-{token}"
            for kind in ("file", "xattr", "link", "key", "userkey", "shm", "msg", "env", "argv", "hostmem", "notify")
        }
        self.plant = "rz-planted-" + secrets.token_hex(6)
        self.private_dir = tempfile.mkdtemp(prefix="rz-bait-")
        os.chmod(self.private_dir, 0o755)
        self.private_file = f"{self.private_dir}/secret.txt"
        Path(self.private_file).write_text(self.secret["file"] + "\n" + "." * secrets.randbelow(5000))
        os.chmod(self.private_file, 0o644)
        self.xattrs_ok = True
        self.visible_file = f"{request['visible_dir']}/visible.txt"
        Path(self.visible_file).write_text("visible bait: readable in rlimits mode, read-only in namespaces mode\n")
        os.chmod(self.visible_file, 0o644)
        for path, value in ((self.private_file, self.secret["xattr"]), (self.visible_file, "visible")):
            try:
                os.setxattr(path, "user.bait", value.encode())
            except OSError:
                self.xattrs_ok = False
        self.private_link = f"{self.private_dir}/link"
        os.symlink(f"/nonexistent/{self.secret['link']}", self.private_link)
        self.notify_dir = f"{self.private_dir}/notify"
        os.mkdir(self.notify_dir)
        self.inherited = os.open(self.private_file, os.O_RDONLY)
        os.set_inheritable(self.inherited, True)
        keyctl(1, None)  # KEYCTL_JOIN_SESSION_KEYRING: a fresh anonymous one, gone with this process
        self.key = add_key("rz-bait", self.secret["key"], -3)
        self.user_key = add_key("rz-bait-user", self.secret["userkey"], -4)
        self.shm_key, self.msg_key = (0x52000000 | secrets.randbelow(1 << 24) for _ in range(2))
        self.shm = libc.shmget(ctypes.c_int(self.shm_key), ctypes.c_size_t(4096), ctypes.c_int(0o1000 | 0o2000 | 0o600))
        address = libc.shmat(ctypes.c_int(self.shm), None, ctypes.c_int(0))
        self.shm_view = (ctypes.c_char * 64).from_address(address)
        self.shm_view.value = self.secret["shm"].encode()
        self.msg = libc.msgget(ctypes.c_int(self.msg_key), ctypes.c_int(0o1000 | 0o2000 | 0o600))
        message = struct.pack("l", 1) + self.secret["msg"].encode()
        libc.msgsnd(ctypes.c_int(self.msg), message, ctypes.c_size_t(len(message) - 8), ctypes.c_int(0))
        self.victim = subprocess.Popen(
            [sys.executable, "-c", VICTIM, self.secret["argv"]],
            stdout=subprocess.PIPE,
            env={"RZ_VICTIM_SECRET": self.secret["env"]},
        )
        self.victim_address = int(self.victim.stdout.readline())
        self.hostmem = ctypes.create_string_buffer(self.secret["hostmem"].encode())
        self.usr1 = 0
        signal.signal(signal.SIGUSR1, self._count_usr1)
        self.tcp = socket.create_server(("127.0.0.1", 0))
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind(("127.0.0.1", 0))
        self.unix = socket.socket(socket.AF_UNIX)
        self.unix.bind(f"{self.private_dir}/sock")
        self.abstract = socket.socket(socket.AF_UNIX)
        self.abstract.bind("\0" + self.plant)
        self.visible_unix = socket.socket(socket.AF_UNIX)
        self.visible_unix.bind(f"{request['visible_dir']}/sock")
        self.visible_dgram = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.visible_dgram.bind(f"{request['visible_dir']}/dgram")
        for s in (self.tcp, self.udp, self.unix, self.abstract, self.visible_unix, self.visible_dgram):
            if s.type == socket.SOCK_STREAM:
                s.listen()
            s.setblocking(False)
        self.reached = []

    def _count_usr1(self, *_):
        self.usr1 += 1

    def bait(self, attacks: list[str]) -> dict:
        """What the attacking program is told: places and ids, never a secret."""
        return {
            "host_pid": os.getpid(),
            "host_pgid": os.getpgid(0),
            "host_uid": os.getuid(),
            "victim_pid": self.victim.pid,
            "private_dir": self.private_dir,
            "private_file": self.private_file,
            "private_link": self.private_link,
            "notify_dir": self.notify_dir,
            "visible_file": self.visible_file,
            "repo": self.request["repo"],
            "repo_file": self.request["repo_file"],
            "key_serial": self.key,
            "user_key_serial": self.user_key,
            "shm_key": self.shm_key,
            "shm_id": self.shm,
            "msg_id": self.msg,
            "tcp_port": self.tcp.getsockname()[1],
            "udp_port": self.udp.getsockname()[1],
            "unix_path": f"{self.private_dir}/sock",
            "abstract": self.plant,
            "visible_unix": f"{self.request['visible_dir']}/sock",
            "visible_dgram": f"{self.request['visible_dir']}/dgram",
            "victim_secret_address": self.victim_address,
            "host_secret_address": ctypes.addressof(self.hostmem),
            "plant": self.plant,
            "nr": NR,
            "attacks": attacks,
        }

    def listeners_reached(self) -> list[str]:
        for name, s in (
            ("tcp", self.tcp),
            ("udp", self.udp),
            ("unix", self.unix),
            ("abstract", self.abstract),
            ("visible_unix", self.visible_unix),
            ("visible_dgram", self.visible_dgram),
        ):
            try:
                if s.type == socket.SOCK_DGRAM:
                    s.recv(4096)
                else:
                    s.accept()[0].close()
                self.reached.append(name)
            except BlockingIOError:
                pass
        return list(self.reached)

    def snapshot(self) -> dict:
        everything = processes()
        visible_dir = self.request["visible_dir"]
        planted_mq = libc.mq_open(f"/{self.plant}".encode(), ctypes.c_int(os.O_RDONLY))
        if planted_mq >= 0:
            os.close(planted_mq)
        return {
            "self": proc_state(os.getpid()),
            "victim": proc_state(self.victim.pid),
            "victim_alive": self.victim.poll() is None,
            "files": {
                p: file_state(p) for p in (self.private_file, self.private_link, self.private_dir, self.visible_file)
            },
            "planted_paths": sorted(
                p
                for d in (
                    visible_dir,
                    sys.prefix,
                    self.request["repo"],
                    "/tmp",
                    "/dev/shm",
                    self.private_dir,
                    os.path.dirname(os.__file__),
                )
                for p in os.listdir(d)
                if self.plant in p
            ),
            "sysv": sysv_objects(),
            "shm_bait": self.shm_view.value.decode(errors="replace"),
            "keys": {"session": keys_in(-3), "user": keys_in(-4)},
            "mq_planted": planted_mq >= 0,
            "hostname": socket.gethostname(),
            "domainname": Path("/proc/sys/kernel/domainname").read_text().strip(),
            "planted_processes": [p["pid"] for p in everything if self.plant in p["cmdline"]],
            "children": sorted(
                f"{p['pid']}:{p['state']}"
                for p in everything
                if p["ppid"] == os.getpid() and p["pid"] != self.victim.pid
            ),
            "usr1": self.usr1,
            "reached": self.listeners_reached(),
            "workdirs": sorted(n for n in os.listdir(tempfile.gettempdir()) if n.startswith("rewardzoo-sandbox-")),
        }

    def run(self, spec: dict) -> dict:
        attacks = spec["attacks"]
        source = inspect.getsource(sandbox_attacks)
        driver = f"\nimport json\nBAIT = json.loads({json.dumps(self.bait(attacks))!r})\nNR.update(BAIT['nr'])\n"
        if len(attacks) == 1:  # a run of its own: the attack reports for itself
            driver += f"{attacks[0]}(BAIT)\n"
        else:
            driver += (
                "print('@@' + json.dumps(['neutralised', EMPTIED]), flush=True)\n"
                "for _name in BAIT['attacks']:\n"
                "    try:\n        _value = globals()[_name](BAIT)\n"
                "    except BaseException as _err:\n        _value = f'raised {_err!r}'\n"
                "    print('@@' + json.dumps([_name, _value], default=repr), flush=True)\n"
            )
        before = self.snapshot()
        stop = threading.Event()
        peak = [0.0]
        threads = [
            threading.Thread(target=self._sample_shmem, args=(stop, peak)),
            threading.Thread(target=self._make_names, args=(stop,)),
        ]
        for t in threads:
            t.start()
        start = time.monotonic()
        r = sandbox.run(source + driver, isolation=self.request["mode"], **spec.get("kwargs", {}))
        wall = time.monotonic() - start
        stop.set()
        for t in threads:
            t.join()
        time.sleep(0.2)  # anything the run left to the kernel (a reparented init, a dying daemon) shows now
        return {
            "result": {
                k: getattr(r, k)
                for k in ("returncode", "timed_out", "killed_reason", "duration_s", "truncated", "isolation")
            },
            "stdout": r.stdout,
            "stderr": r.stderr[-20000:],
            "wall_s": wall,
            "shmem_peak_mb": peak[0],
            "before": before,
            "after": self.snapshot(),
        }

    @staticmethod
    def _shmem_kb() -> int:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("Shmem:"):
                return int(line.split()[1])
        return 0

    def _sample_shmem(self, stop: threading.Event, peak: list) -> None:
        base = self._shmem_kb()
        while not stop.wait(0.01):
            peak[0] = max(peak[0], (self._shmem_kb() - base) / 1024)

    def _make_names(self, stop: threading.Event) -> None:
        i = 0
        while not stop.wait(0.02):
            path = f"{self.notify_dir}/evt-{self.secret['notify']}-{i}"
            Path(path).touch()
            os.unlink(path)
            i += 1

    def clean(self) -> None:
        """Remove the bait and whatever a failed sandbox planted (so a failing test leaves no litter)."""
        for p in processes():
            if self.plant in p["cmdline"]:
                try:
                    os.kill(p["pid"], signal.SIGKILL)
                except OSError:
                    pass
        self.victim.kill()
        self.victim.wait()
        while True:  # reap what became ours as the subreaper
            try:
                if os.waitpid(-1, os.WNOHANG) == (0, 0):
                    break
            except ChildProcessError:
                break
        libc.mq_unlink(f"/{self.plant}".encode())
        for d in ("/tmp", "/dev/shm"):
            for name in os.listdir(d):
                if self.plant in name:
                    remove(f"{d}/{name}")
        for ring in (-3, -4):
            for serial in (self.key, self.user_key):
                keyctl(9, serial, ring)  # KEYCTL_UNLINK
            while (found := keyctl(10, ring, b"user", self.plant.encode(), 0)) > 0:  # KEYCTL_SEARCH
                keyctl(9, found, ring)
        remove(self.private_dir)


def remove_new_sysv(initial: dict) -> None:
    """Remove the SysV objects made since ``initial`` (the bait, and what a failed sandbox left)."""
    for kind, command in (("shm", libc.shmctl), ("msg", libc.msgctl), ("sem", libc.semctl)):
        for entry in set(sysv_objects()[kind]) - set(initial[kind]):
            command(ctypes.c_int(int(entry.split(":")[1])), ctypes.c_int(0), ctypes.c_int(0))  # IPC_RMID


def remove(path: str) -> None:
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    else:
        Path(path).unlink(missing_ok=True)


def expose_interpreter() -> None:
    """As root, before becoming another uid: where the interpreter lives below a directory only root
    may enter (pyenv under /root, mode 0700), give this process a mount namespace in which that
    directory is a tmpfs holding only the interpreter, bound back — so the uid can run this Python,
    as it could run one installed for it.  Nothing else of the host changes."""
    binds = list(sandbox.interpreter_layout(sys.executable)[0])
    closed = {str(a) for t in binds for a in Path(t).parents if not os.stat(a).st_mode & 0o001}
    tops = [c for c in closed if not any(c.startswith(o + "/") for o in closed)]
    if not tops:
        return
    if libc.unshare(0x00020000) != 0:  # CLONE_NEWNS
        raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWNS)")
    libc.mount(None, b"/", None, 1 << 14 | 1 << 18, None)  # MS_REC | MS_PRIVATE
    for top in tops:
        inner = {t: os.open(t, os.O_PATH) for t in binds if t.startswith(top + "/")}
        libc.mount(b"tmpfs", top.encode(), b"tmpfs", 0, b"mode=0755")
        for target, fd in inner.items():
            os.makedirs(target, exist_ok=True)
            libc.mount(f"/proc/self/fd/{fd}".encode(), target.encode(), None, 4096 | 1 << 14, None)  # MS_BIND|MS_REC
            os.close(fd)


def main() -> None:
    request = json.load(sys.stdin)
    if os.geteuid() == 0:
        # CLONE_NEWUTS | CLONE_NEWIPC: a hostname and SysV / POSIX IPC objects of its own, so hosts running at
        # once (pytest workers, other checkouts) never see each other's bait as something a sandbox left behind;
        # a sandbox child in rlimits mode shares this namespace, so what it leaves is still seen here
        libc.unshare(0x04000000 | 0x08000000)
    if request["uid"] is not None:
        expose_interpreter()
        os.setgroups([])
        os.setresgid(request["uid"], request["uid"], request["uid"])
        os.setresuid(request["uid"], request["uid"], request["uid"])
    libc.prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    works, why = sandbox.mode_works(request["mode"])
    if not works:
        print(json.dumps({"unavailable": why}))
        return
    initial_sysv = sysv_objects()
    host = None
    try:
        host = Host(request)
        runs = {spec["name"]: host.run(spec) for spec in request["runs"]}
        print(
            json.dumps(
                {
                    "uid": os.getuid(),
                    "plant": host.plant,
                    "xattrs": host.xattrs_ok,
                    "bait": host.bait([]),
                    "runs": runs,
                },
                default=repr,
            )
        )
    finally:
        if host is not None:
            host.clean()
        remove_new_sysv(initial_sysv)


if __name__ == "__main__":
    main()
