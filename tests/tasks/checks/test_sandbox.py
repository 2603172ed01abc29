"""The sandbox against hostile code, in every isolation mode this machine supports.

Each hostile case must finish within about its time limit and leave nothing behind on the host:
no process, no file, no open connection.
"""

import os
import secrets
import socket
import time
from pathlib import Path

import pytest

from rewardzoo.tasks.checks import sandbox
from rewardzoo.tasks.checks.sandbox import run, unit_test_reward

NAMESPACES = sandbox._auto_isolation() == "namespaces"
MODES = [pytest.param("namespaces", marks=pytest.mark.skipif(not NAMESPACES, reason="no namespaces here")), "rlimits"]


@pytest.fixture(params=MODES)
def mode(request):
    return request.param


def processes_with(token: str) -> list[int]:
    """Pids of host processes whose command line contains ``token``."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if token.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.append(int(pid))
        except OSError:
            continue
    return found


def test_runs_code_and_captures_both_streams(mode):
    r = run("import sys\nprint('out')\nprint('err', file=sys.stderr)\nsys.exit(3)", isolation=mode)
    assert (r.returncode, r.stdout, r.stderr, r.timed_out, r.killed_reason) == (3, "out\n", "err\n", False, None)
    assert r.isolation == mode and not r.ok and not r.truncated


def test_exception_gives_a_traceback(mode):
    r = run("1 / 0", isolation=mode)
    assert r.returncode == 1 and "ZeroDivisionError" in r.stderr


def test_extra_files_and_a_throw_away_working_directory(mode):
    r = run("import os\nprint(open('data.txt').read(), os.getcwd())", files={"data.txt": "hello"}, isolation=mode)
    assert r.ok and r.stdout.startswith("hello ")
    workdir = r.stdout.split()[1]
    assert Path(workdir).name.startswith("rewardzoo-sandbox-") and not Path(workdir).exists()


def test_infinite_loop_times_out_without_hanging(mode):
    start = time.monotonic()
    r = run("while True:\n    pass", timeout_s=1, isolation=mode)
    assert r.timed_out and r.killed_reason == "timeout" and r.returncode == -9
    assert time.monotonic() - start < 3


def test_cpu_time_limit(mode):
    r = run("while True:\n    pass", timeout_s=30, cpu_s=1, isolation=mode)
    assert r.killed_reason == "cpu_limit" and not r.timed_out and r.duration_s < 15


def test_memory_bomb_is_contained(mode):
    r = run("x = bytearray(400 * 2**20)\nprint('allocated')", memory_mb=128, isolation=mode)
    assert r.returncode == 1 and "MemoryError" in r.stderr and "allocated" not in r.stdout


def test_fork_bomb_is_contained_and_nothing_survives(mode):
    """Children exec `sleep 60 <token>`: at most max_processes of them start, none outlives the run."""
    token = "0.000" + str(secrets.randbelow(10**9))
    bomb = ("import os\nn = 0\nwhile n < 10000:\n    try:\n        pid = os.fork()\n    except OSError:\n        break\n"
            f"    if pid == 0:\n        os.execv('/bin/sleep', ['sleep', '60', '{token}'])\n    n += 1\n"
            "print(n, flush=True)\nwhile True:\n    pass\n")
    start = time.monotonic()
    r = run(bomb, timeout_s=1.5, max_processes=16, isolation=mode)
    assert r.timed_out and time.monotonic() - start < 5
    if mode == "namespaces":
        assert 0 < int(r.stdout) < 16  # RLIMIT_NPROC stopped it
    else:
        assert r.stdout == "0\n"  # the audit hook refuses os.fork
    time.sleep(0.2)
    assert processes_with(token) == []


def test_background_process_dies_with_the_run(mode):
    token = "0.000" + str(secrets.randbelow(10**9))
    code = ("import os\ntry:\n    if os.fork() == 0:\n        os.setsid()\n"
            f"        os.execv('/bin/sleep', ['sleep', '60', '{token}'])\nexcept OSError as e:\n    print(e)\n")
    start = time.monotonic()
    r = run(code, timeout_s=5, isolation=mode)
    assert time.monotonic() - start < 4.5 and not r.timed_out
    time.sleep(0.2)
    assert processes_with(token) == []


def test_network_attempt_fails_even_to_the_hosts_loopback(mode):
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        server.setblocking(False)
        port = server.getsockname()[1]
        r = run(f"import socket\ns = socket.create_connection(('127.0.0.1', {port}), timeout=1)\nprint('CONNECTED')",
                isolation=mode)
        assert r.returncode == 1 and "CONNECTED" not in r.stdout
        assert ("Network is unreachable" if mode == "namespaces" else "not allowed") in r.stderr
        with pytest.raises(BlockingIOError):
            server.accept()


def test_writes_outside_the_working_directory_do_not_reach_the_host(mode, tmp_path):
    token = secrets.token_hex(6)
    targets = [Path("/tmp") / f"rewardzoo-escape-{token}", tmp_path / "escape", Path(__file__).parent / f"escape-{token}"]
    code = "import os\n" + "".join(
        f"try:\n    open({str(t)!r}, 'w').write('x')\n    print('wrote', {str(t)!r})\nexcept OSError as e:\n    print(e)\n"
        for t in targets)
    try:
        r = run(code, isolation=mode)
        assert [t for t in targets if t.exists()] == [], r.stdout
        assert r.stdout.count("\n") == 3
    finally:
        for t in targets:
            t.unlink(missing_ok=True)


def test_huge_output_is_capped_without_deadlock(mode):
    code = "import sys\nfor _ in range(20):\n    sys.stdout.write('x' * 2**20)\n    sys.stderr.write('y' * 2**20)\nprint('end')"
    r = run(code, max_output_bytes=1000, isolation=mode)
    assert r.ok and r.truncated and r.stdout == "x" * 1000 and r.stderr == "y" * 1000


@pytest.mark.skipif(not NAMESPACES or os.geteuid() != 0, reason="root namespace mode only")
def test_root_mode_drops_privileges_and_hides_private_directories():
    code = ("import os\nprint(os.getuid(), os.getgid(), os.getgroups())\nprint(sorted(os.listdir('/root')))\n"
            "print(len([p for p in os.listdir('/proc') if p.isdigit()]))")
    r = run(code, isolation="namespaces")
    uid, gid, groups = r.stdout.splitlines()[0].split(" ", 2)
    assert int(uid) >= 100_000 and int(gid) == int(uid) and groups == "[]"
    assert "'.ssh'" not in r.stdout.splitlines()[1]  # /root is covered; only the way to Python is bound back
    assert int(r.stdout.splitlines()[2]) <= 3  # a fresh /proc: init, the runner (and nothing of the host)


def test_bad_arguments_are_clear_errors():
    for kwargs, match in [({"timeout_s": 0}, "timeout_s"), ({"memory_mb": 10}, "memory_mb"),
                          ({"isolation": "docker"}, "isolation"), ({"files": {"../x": ""}}, "plain file name"),
                          ({"max_processes": 0}, "max_processes"), ({"cpu_s": -1}, "cpu_s")]:
        with pytest.raises(ValueError, match=match):
            run("pass", **kwargs)


ADD_TESTS = [((2, 3), 5), ((0, 0), 0), ((-1, 1), 0)]


def test_unit_test_reward_reproduces_003():
    """003: correct 1.00, off by a sign 0.33 (add(0, 0) is right either way), syntax error 0.00."""
    rewards = [unit_test_reward(code, ADD_TESTS, entry_point="add") for code in
               ("def add(a, b):\n    return a + b\n", "def add(a, b):\n    return a - b\n", "def add(a, b)\n  return a+b")]
    assert [round(r, 2) for r in rewards] == [1.0, 0.33, 0.0]


def test_unit_test_reward_resists_the_always_equal_hack_and_counts_partial_work():
    always_equal = "class Yes:\n    def __eq__(self, other):\n        return True\ndef add(a, b):\n    return Yes()"
    assert unit_test_reward(always_equal, ADD_TESTS, entry_point="add") == 0.0
    hangs_on_third = "def add(a, b):\n    while a == -1:\n        pass\n    return a + b"
    assert unit_test_reward(hangs_on_third, ADD_TESTS, entry_point="add", timeout_s=1.5) == pytest.approx(2 / 3)
    noisy = "print('@rewardzoo-result- [0, 5]' * 100000)\ndef add(a, b):\n    return float(a + b)"
    assert unit_test_reward(noisy, ADD_TESTS, entry_point="add") == 1.0  # 5.0 == 5, as in Python
    assert unit_test_reward("def plus(a, b):\n    return a + b", ADD_TESTS, entry_point="add") == 0.0
    assert unit_test_reward("import sys\nsys.exit(0)", ADD_TESTS, entry_point="add") == 0.0
    pairs = "def swap(p):\n    return (p[1], p[0])"
    assert unit_test_reward(pairs, [(((1, 2),), (2, 1)), ((("a", "b"),), ["b", "a"])], entry_point="swap") == 1.0


def test_unit_test_reward_rejects_bad_tests():
    with pytest.raises(ValueError, match="at least one"):
        unit_test_reward("", [], entry_point="f")
    with pytest.raises(ValueError, match="identifier"):
        unit_test_reward("", ADD_TESTS, entry_point="not a name")
    with pytest.raises(ValueError, match="JSON"):
        unit_test_reward("", [((1,), {1, 2})], entry_point="f")
    with pytest.raises(ValueError, match="args_tuple"):
        unit_test_reward("", [([1], 1)], entry_point="f")


def test_an_interpreter_under_tmp_is_kept_reachable(tmp_path):
    """A virtual environment in /tmp (a fresh clone there) must survive the fresh tmpfs on /tmp: the
    directories to bind back are the outermost ones under a covered mount point, nothing else."""
    venv, bin_dir = tmp_path / "venv", tmp_path / "venv" / "bin"
    bin_dir.mkdir(parents=True)
    handles = sandbox._open_paths_under(["/tmp", "/dev/shm"], [str(bin_dir), str(venv), "/usr/bin", str(tmp_path / "missing")])
    try:
        assert list(handles) == [os.path.realpath(venv)] if str(tmp_path).startswith("/tmp/") else handles == {}
    finally:
        for fd in handles.values():
            os.close(fd)
