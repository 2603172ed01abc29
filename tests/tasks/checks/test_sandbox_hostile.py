"""The hostile corpus: every known attack on the host, judged from the host's side (issue 29).

For each isolation mode this machine supports, and as root and as an unprivileged user (a helper
that drops to an unused uid), ``tests/helpers/sandbox_host.py`` sets up bait the sandboxed code
must not reach and runs the attacks of ``tests/helpers/sandbox_attacks.py`` through
``sandbox.run``: one battery run of the attacks that can share a process, and a run of its own
for each bomb and timeout.  Each test below then judges one attack from what the host sees
afterwards: its files and their metadata, its own and a victim's limits, affinity, nice value,
scheduling and I/O priority, IPC objects, keys, listeners, signals, processes and zombies left
behind, the peak of shared memory, and whether any secret (never sent in) shows up in the output.

Known gaps are tests too: ``GAPS`` names what a mode cannot guarantee (docs/reliability.md says
why); those tests are strict xfails, so closing a gap (or opening a new one) fails the suite.
"""

import fcntl
import importlib.util
import json
import os
import pwd
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from rewardzoo.tasks.checks import sandbox

REPO = Path(__file__).resolve().parents[3]
HELPERS = REPO / "tests" / "helpers"
_spec = importlib.util.spec_from_file_location("sandbox_attacks", HELPERS / "sandbox_attacks.py")
attacks = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(attacks)

MODES = ("namespaces", "rlimits")
USERS = ("root", "unprivileged")
MAX_PROCESSES = 16
MAX_FILE_MB = 16
RUNS = {  # a run of its own: sandbox.run's limits for it
    # a refused fork leaves the bomb spinning in one process, whose CPU clock cpu_s (default timeout_s) stops in
    # the same second as the wall clock (SIGXCPU at 1.0015 s, seen in CI): a budget no process spends in 1 s of
    # wall clock keeps the wall-clock kill under test
    "fork_bomb": {"timeout_s": 1.0, "cpu_s": 2.0, "max_processes": MAX_PROCESSES},
    # its threads share one process's CPU clock, which cpu_s (default timeout_s) stops as soon as the wall clock
    # on two cores: a CPU budget MAX_PROCESSES threads cannot spend in 1 s keeps the wall-clock kill under test
    "thread_bomb": {"timeout_s": 1.0, "cpu_s": 2.0 * MAX_PROCESSES, "max_processes": MAX_PROCESSES},
    "memory_bomb": {"memory_mb": 128},
    "pinned_memory": {"memory_mb": 128, "max_file_mb": MAX_FILE_MB, "timeout_s": 10},
    "disk_bomb": {"max_file_mb": 4, "timeout_s": 10},
    "output_bomb": {"max_output_bytes": 1000},
    "traces_then_hang": {"timeout_s": 1.0},
    "foreign_abi": {},
}
BATTERY_LIMITS = {"timeout_s": 30, "max_output_bytes": 1 << 22}
GAPS = {
    ("rlimits", "stat_host"): "rlimits: stat() of a host path still answers (Landlock has no right for it and "
    "seccomp cannot see paths); namespaces shows no host path at all",
}


def unused_uid() -> int:
    taken = {p.pw_uid for p in pwd.getpwall()}
    while True:
        uid = 200_000 + secrets.randbelow(1 << 20)
        if uid not in taken and not any(
            Path(f"/proc/{pid}").stat().st_uid == uid for pid in filter(str.isdigit, os.listdir("/proc"))
        ):
            return uid


def host_run(mode: str, user: str) -> dict:
    """Run the host helper for (mode, user); its observations, or {'skip': reason}."""
    root = os.geteuid() == 0
    if user == "root" and not root:
        return {"skip": "the root half of the corpus needs root"}
    if not os.access(sys.prefix, os.W_OK):
        return {"skip": f"the visible bait goes into the interpreter's installation ({sys.prefix}), not writable"}
    token = secrets.token_hex(8)
    uid = unused_uid() if user == "unprivileged" and root else None
    visible = Path(sys.prefix) / f"rz-bait-{token}"
    visible.mkdir()
    tmp = Path(tempfile.mkdtemp(prefix="rz-host-"))  # the helper's TMPDIR: its work dirs and no one else's
    for path in (visible, tmp) if uid is not None else ():
        os.chown(path, uid, uid)
    runs = [{"name": name, "attacks": [name], "kwargs": kwargs} for name, kwargs in RUNS.items()]
    runs.append({"name": "cpu_burn", "attacks": ["infinite_loop"], "kwargs": {"timeout_s": 30, "cpu_s": 1}})
    # last: a sandbox that failed would leave the host harmed (its limits lowered) for the runs after it;
    # then a well-behaved program, which must still run (the trainer could not: RLIMIT_NOFILE 3)
    runs.append({"name": "battery", "attacks": [a.__name__ for a in attacks.BATTERY], "kwargs": BATTERY_LIMITS})
    runs.append({"name": "after_battery", "attacks": ["well_behaved"], "kwargs": {}})
    request = {
        "mode": mode,
        "uid": uid,
        "token": token,
        "visible_dir": str(visible),
        "repo": str(REPO),
        "repo_file": str(REPO / "pyproject.toml"),
        "runs": runs,
    }
    try:
        done = subprocess.run(
            [sys.executable, str(HELPERS / "sandbox_host.py")],
            input=json.dumps(request),
            capture_output=True,
            text=True,
            timeout=600,
            start_new_session=True,
            env={"RZ_HOST_SECRET": f"RZSECRET-env-{token}", "PATH": os.environ.get("PATH", ""), "TMPDIR": str(tmp)},
        )
    finally:
        shutil.rmtree(visible)
        shutil.rmtree(tmp)
    if done.returncode != 0 or not done.stdout.strip():
        return {"error": f"host helper failed ({done.returncode}): {done.stderr[-4000:]}"}
    observed = json.loads(done.stdout)
    for leftover in Path(sys.prefix).glob(f"*{observed.get('plant', token)}*"):  # what a failed sandbox planted
        shutil.rmtree(leftover) if leftover.is_dir() and not leftover.is_symlink() else leftover.unlink()
    if "unavailable" in observed:
        return {"skip": f"{mode} unavailable as {user}: {observed['unavailable']}"}
    observed["token"] = token
    for spec in runs:
        observed["runs"][spec["name"]]["kwargs"] = spec["kwargs"]
    battery = observed["runs"]["battery"]
    battery["reports"] = dict(json.loads(line[2:]) for line in battery["stdout"].splitlines() if line.startswith("@@"))
    return observed


@pytest.fixture(scope="session")
def corpus(tmp_path_factory):
    """``corpus(mode, user)``: the helper's observations, computed once per (mode, user) across xdist workers."""
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base  # this session's, shared by its workers

    def get(mode: str, user: str) -> dict:
        path = shared / f"sandbox-corpus-{mode}-{user}.json"
        with open(path.with_suffix(".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not path.exists():
                path.write_text(json.dumps(host_run(mode, user)))
        observed = json.loads(path.read_text())
        if "skip" in observed:
            pytest.skip(observed["skip"])
        assert "error" not in observed, observed["error"]
        return observed

    return get


# ---------------------------------------------------------------------------------- the judges
def leaks(o: dict, text) -> bool:
    return o["token"] in json.dumps(text)


def report(o: dict, name: str):
    reports = o["runs"]["battery"]["reports"]
    assert name in reports, f"the battery never reached {name}: {o['runs']['battery']['stderr'][-2000:]}"
    assert not str(reports[name]).startswith("raised"), f"the attack itself broke: {reports[name]}"
    return reports[name]


def succeeded(entries) -> list[str]:
    """The attempts in a report that the kernel let through ('ok ...')."""
    flat = entries.values() if isinstance(entries, dict) else entries
    out = []
    for entry in flat:
        out += succeeded(entry) if isinstance(entry, (list, dict)) else [entry] if str(entry).startswith("ok") else []
    return out


def unchanged(o: dict, *keys: str, run: str = "battery") -> list[str]:
    before, after = o["runs"][run]["before"], o["runs"][run]["after"]
    problems = []
    for key in keys:
        b, a = before, after
        for part in key.split("/"):
            b, a = b[part], a[part]
        if a != b:
            problems.append(f"{key}: {b!r} -> {a!r}")
    return problems


def files_unchanged(o: dict, *fields: str) -> list[str]:
    """The bait files' ``fields`` (file_state keys; a file gone or new counts too), before vs after the battery."""
    bait = o["bait"]
    problems = []
    for path in (bait["private_file"], bait["private_link"], bait["private_dir"], bait["visible_file"]):
        for field in fields:
            b, a = (
                None if s is None else s.get(field)
                for s in (o["runs"]["battery"][when]["files"][path] for when in ("before", "after"))
            )
            if a != b:
                problems.append(f"{path} {field}: {b!r} -> {a!r}")
    return problems


def secret_free(name):
    def judge(o, mode, user):
        got = report(o, name)
        return [f"secret in the output: {got!r}"[:3000]] if leaks(o, got) else []

    return judge


def refused(name):
    return lambda o, mode, user: [f"let through: {ok}" for ok in succeeded(report(o, name))]


def caps_dropped(o, mode, user):
    caps = report(o, "capabilities")
    problems = [f"{k} = {caps[k]:#x}" for k in ("effective", "permitted", "inheritable", "ambient") if caps[k]]
    if caps["no_new_privs"] != 1:
        problems.append("no_new_privs is not set")
    if caps["bounding"] and not (mode == "rlimits" and user == "unprivileged"):  # no CAP_SETPCAP to drop it
        problems.append(f"bounding = {caps['bounding']:#x}")
    return problems


def host_powers_refused(o, mode, user):
    got = report(o, "host_powers")
    problems = unchanged(o, "hostname", "domainname")
    problems += [
        f"{k}: {got[k]}"
        for k in (
            "sethostname",
            "setdomainname",
            "adjtimex",
            "clock_adjtime",
            "syslog_size",
            "dev_kmsg",
            "mknod_mem",
            "sched_fifo",
            "nice_down",
            "raise_as",
        )
        if got[k].startswith("ok")
    ]
    if not got["syslog_read"].startswith("err"):
        problems.append("read the kernel log")
    if got["rlimit_as"][1] == -1:
        problems.append("lifted its own RLIMIT_AS")
    return problems


def ipc_left_alone(o, mode, user):
    problems = unchanged(o, "sysv", "shm_bait", "mq_planted")
    return problems + [f"planted {p}" for p in o["runs"]["battery"]["after"]["planted_paths"]]


def reads_refused(o, mode, user):
    got = report(o, "reads_host")
    problems = [f"secret in the output: {got}"[:3000]] if leaks(o, got) else []
    repo_lines = [line for line in Path(o["bait"]["repo_file"]).read_text().splitlines() if len(line) > 30]
    if any(line in json.dumps(got) for line in repo_lines):
        problems.append("read the checkout")
    if "root:x:0:0" in json.dumps(got):
        problems.append("read /etc/passwd")
    on_the_way = {part for target in sandbox.interpreter_layout(sys.executable)[0] for part in Path(target).parts}
    for listing in got[-4:]:
        if listing.startswith("ok") and not set(eval(listing[3:])) <= on_the_way:  # noqa: S307 - a repr of a list
            problems.append(f"listed {listing[:300]}")
    return problems


JUDGES = {  # attack -> judge(observations, mode, user) -> problems
    "keyring_read": secret_free("keyring_read"),
    "keyring_plant": lambda o, m, u: (
        [k for k in ("session", "user") if any(o["plant"] in d for d in o["runs"]["battery"]["after"]["keys"][k])]
        + refused("keyring_plant")(o, m, u)
    ),
    "prlimit_parent": lambda o, m, u: unchanged(o, "self/rlimits", "victim/rlimits"),
    "affinity_parent": lambda o, m, u: unchanged(o, "self/affinity", "victim/affinity"),
    "nice_parent": lambda o, m, u: unchanged(o, "self/nice", "victim/nice"),
    "sched_parent": lambda o, m, u: unchanged(o, "self/policy", "victim/policy"),
    "ioprio_parent": lambda o, m, u: unchanged(o, "self/ioprio", "victim/ioprio"),
    "numa_parent": refused("numa_parent"),
    "chmod_host": lambda o, m, u: files_unchanged(o, "mode"),
    "chown_host": lambda o, m, u: files_unchanged(o, "uid", "gid"),
    "utime_host": lambda o, m, u: files_unchanged(o, "mtime_ns"),
    "xattr_write_host": lambda o, m, u: files_unchanged(o, "xattrs"),
    "xattr_read_host": secret_free("xattr_read_host"),
    "readlink_host": secret_free("readlink_host"),
    "stat_host": refused("stat_host"),
    "fsflags_host": lambda o, m, u: files_unchanged(o, "flags"),
    "writes_host": lambda o, m, u: (
        files_unchanged(o, "sha", "size", "entries", "target")
        + [f"planted {p}" for p in o["runs"]["battery"]["after"]["planted_paths"]]
    ),
    "reads_host": reads_refused,
    "inherited_fds": secret_free("inherited_fds"),
    "environ": secret_free("environ"),
    "ipc_read": lambda o, m, u: secret_free("ipc_read")(o, m, u) + unchanged(o, "sysv/msg", "shm_bait"),
    "ipc_plant": ipc_left_alone,
    "notify_host": lambda o, m, u: (
        secret_free("notify_host")(o, m, u)
        + [
            f"{k}: {v}"
            for k, v in report(o, "notify_host").items()
            if k.endswith(("_watch", "_mark", "_fs")) and v.startswith("ok")
        ]
    ),
    "capabilities": caps_dropped,
    "host_powers": host_powers_refused,
    "sockets": lambda o, m, u: [
        f"the host's {k} listener was reached" for k in o["runs"]["battery"]["after"]["reached"]
    ],
    "socket_families": refused("socket_families"),
    "ptrace_victim": lambda o, m, u: (
        secret_free("ptrace_victim")(o, m, u) + [a for a in report(o, "ptrace_victim") if str(a).startswith("ok")]
    ),
    "daemon": lambda o, m, u: (
        [f"left processes {o['runs']['battery']['after']['planted_processes']}"]
        if o["runs"]["battery"]["after"]["planted_processes"]
        else []
    ),
    "signals": lambda o, m, u: unchanged(o, "usr1", "victim_alive"),
}


def leaves_nothing(o: dict, run: str) -> list[str]:
    """What every run must leave as it found it: processes, zombies, IPC objects, keys, planted names."""
    after = o["runs"][run]["after"]
    before = o["runs"][run]["before"]
    problems = [
        f"left {what}: {sorted(set(after[what]) - set(before[what]))}"
        for what in ("children", "planted_processes", "planted_paths", "workdirs")
        if set(after[what]) - set(before[what])
    ]
    problems += unchanged(o, "sysv", "mq_planted", run=run)
    problems += [
        f"left a key in the {k} keyring" for k in ("session", "user") if set(after["keys"][k]) - set(before["keys"][k])
    ]
    return problems


def own_report(o: dict, run: str):
    lines = o["runs"][run]["stdout"].splitlines()
    assert lines, f"{run} reported nothing: {o['runs'][run]['stderr'][-2000:]}"
    return eval(lines[0])  # noqa: S307 - the attack's repr() of an int or a dict


def judge_run(o: dict, run: str, mode: str) -> list[str]:
    r, limits = o["runs"][run]["result"], o["runs"][run]["kwargs"]
    problems = leaves_nothing(o, run)
    if o["runs"][run]["wall_s"] > limits.get("timeout_s", 5.0) + 2:
        problems.append(f"run() took {o['runs'][run]['wall_s']:.1f} s")
    if run in ("fork_bomb", "thread_bomb", "traces_then_hang") and not (
        r["timed_out"] and r["killed_reason"] == "timeout" and r["returncode"] == -signal.SIGKILL
    ):
        problems.append(f"expected the wall-clock kill, got {r}")
    if run == "fork_bomb":
        n = own_report(o, run)
        if not (0 < n < MAX_PROCESSES if mode == "namespaces" else n == 0):
            problems.append(f"{n} processes forked")
    if run == "thread_bomb" and own_report(o, run) >= 2 * MAX_PROCESSES:
        problems.append(f"{own_report(o, run)} threads started with max_processes={MAX_PROCESSES}")
    if run == "memory_bomb" and not (r["returncode"] == 1 and "MemoryError" in o["runs"][run]["stderr"]):
        problems.append(f"the 400 MB allocation was not refused: {r}")
    if run == "pinned_memory":
        pinned = own_report(o, run)
        buffers = pinned.get("pipe_buffers", 0) + pinned.get("socket_buffers", 0)
        outside = sum(v for k, v in pinned.items() if isinstance(v, int)) - buffers
        # the machine's shared memory moves with other work too: 64 MB of slack, against 400 MB pinned when it fails;
        # kernel buffers at the kernel's default sizes: ~64 KB a pipe, ~208 KB a socket (50 of each here)
        if outside > 2 * MAX_FILE_MB or buffers > 32 or o["runs"][run]["shmem_peak_mb"] > 2 * MAX_FILE_MB + 64:
            problems.append(f"pinned {pinned} (host shared memory +{o['runs'][run]['shmem_peak_mb']:.0f} MB)")
    if run == "disk_bomb" and own_report(o, run) > 3 * 4:
        problems.append(f"wrote {own_report(o, run)} MB with max_file_mb=4")
    if run == "output_bomb" and not (
        r["truncated"]
        and o["runs"][run]["stdout"] == "x" * 1000
        and o["runs"][run]["stderr"] == "y" * 1000
        and r["returncode"] == 0
    ):
        problems.append(f"output not capped: {r}")
    if run == "foreign_abi" and not (r["returncode"] == -signal.SIGSYS or "ENOSYS" in o["runs"][run]["stdout"]):
        problems.append(f"the x32 call came back: {o['runs'][run]['stdout']!r} {r}")
    if run == "after_battery" and not (r["returncode"] == 0 and o["runs"][run]["stdout"] == "42\n"):
        problems.append(f"the next run after the battery failed: {r} {o['runs'][run]['stderr'][-500:]}")
    if run == "cpu_burn" and not (r["killed_reason"] == "cpu_limit" and not r["timed_out"] and r["duration_s"] < 15):
        problems.append(f"{r}")
    return problems


COMBOS = [(m, u) for m in MODES for u in USERS]


@pytest.mark.parametrize("attack", list(JUDGES))
@pytest.mark.parametrize("mode,user", COMBOS)
def test_battery_attack(corpus, mode, user, attack):
    """One attack of the battery run, judged from the host's side."""
    if (mode, attack) in GAPS:
        pytest.xfail(GAPS[mode, attack]) if JUDGES[attack](corpus(mode, user), mode, user) else pytest.fail(
            f"known gap closed, update GAPS and docs/reliability.md: {GAPS[mode, attack]}"
        )
    if attack in ("xattr_write_host", "xattr_read_host") and not corpus(mode, user)["xattrs"]:
        pytest.skip("the bait's filesystem has no user extended attributes")
    problems = JUDGES[attack](corpus(mode, user), mode, user)
    assert not problems, problems


@pytest.mark.parametrize("run", [*RUNS, "cpu_burn", "after_battery"])
@pytest.mark.parametrize("mode,user", COMBOS)
def test_own_run_attack(corpus, mode, user, run):
    """A bomb or a timeout in a run of its own: contained, on time, nothing left behind."""
    problems = judge_run(corpus(mode, user), run, mode)
    assert not problems, problems


@pytest.mark.parametrize("mode,user", COMBOS)
def test_no_secret_anywhere_in_the_battery(corpus, mode, user):
    """No secret in anything the battery printed (the audit hook was neutralised first in rlimits)."""
    o = corpus(mode, user)
    battery = o["runs"]["battery"]
    assert not leaks(o, battery["stdout"] + battery["stderr"])
    assert not leaves_nothing(o, "battery"), leaves_nothing(o, "battery")
    assert set(JUDGES) <= set(battery["reports"]), battery["stderr"][-3000:]
    assert battery["reports"]["neutralised"] == (1 if mode == "rlimits" else 0)  # the corpus hit the boundary itself
