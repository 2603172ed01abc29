"""The sandbox against hostile code, in every isolation mode this machine supports.

Each hostile case must finish within about its time limit and leave nothing behind on the host:
no process, no file, no open connection — and show nothing of the host: no file outside the
interpreter's installation, no Unix socket, no other process (issue 12, items 7 and 8).
"""

import os
import secrets
import signal
import socket
import sys
import time
from pathlib import Path

import pytest

from rewardzoo.tasks.checks import sandbox
from rewardzoo.tasks.checks.sandbox import SandboxRefused, resolve_isolation, run, unit_test_reward

NAMESPACES = sandbox._namespaces_work()[0]
CONFINED = sandbox._confinement_available()
MODES = [pytest.param("namespaces", marks=pytest.mark.skipif(not NAMESPACES, reason="no namespaces here")),
         pytest.param("rlimits", marks=pytest.mark.skipif(not CONFINED, reason=f"rlimits mode unavailable: "
                                                                                f"{sandbox._confinement_missing()}"))]
REPO = Path(__file__).resolve().parents[3]
SLEEPER = "import time; time.sleep(60)"  # children run the sandbox's own Python: nothing else is in its root


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
    bomb = ("import os, sys\nn = 0\nwhile n < 10000:\n    try:\n        pid = os.fork()\n"
            "    except OSError:\n        break\n"
            f"    if pid == 0:\n        os.execv(sys.executable, [sys.executable, '-c', {SLEEPER!r}, '{token}'])\n"
            "    n += 1\nprint(n, flush=True)\nwhile True:\n    pass\n")
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
    code = ("import os, sys\ntry:\n    if os.fork() == 0:\n        os.setsid()\n"
            f"        os.execv(sys.executable, [sys.executable, '-c', {SLEEPER!r}, '{token}'])\n"
            "except OSError as e:\n    print(e)\n")
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


def test_the_interpreter_it_shows_is_read_only(mode):
    """The sandbox's Python and its standard library (bound in from the host, also where the virtual
    environment lives under /tmp, whose tmpfs is mounted before the binds) cannot be written."""
    token = secrets.token_hex(6)
    targets = [Path(sys.prefix) / f"escape-{token}", Path(os.__file__).parent / f"escape-{token}"]
    code = "".join(f"try:\n    open({str(t)!r}, 'w').write('x')\n    print('wrote')\nexcept OSError as e:\n    print(e)\n"
                   for t in targets)
    try:
        r = run(code, isolation=mode)
        assert "wrote" not in r.stdout and [t for t in targets if t.exists()] == [], r.stdout
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


def test_the_sandbox_root_holds_only_the_interpreter_and_libraries():
    """What the namespaces mode shows (and the rlimits mode lets read): the interpreter's installation
    and the system libraries, never / itself, never the project checkout (a venv inside it shows only itself)."""
    binds, links = sandbox._interpreter_layout(sys.executable)
    assert "/" not in binds and all(Path(source).is_dir() for source in binds.values())
    assert os.path.realpath(sys.base_prefix) in binds.values()
    assert not any(str(REPO) == t or str(REPO).startswith(t + "/") for t in binds)
    assert set(links) <= set(sandbox._LIBRARY_DIRS)


# ---------------------------------------------------------------------------------------- nothing of the host
def host_socket_dir() -> Path:
    """A directory outside the workdir and outside /tmp (the namespaces mode's /tmp is fresh anyway):
    /run as root, else the home directory, else beside this file; short enough for a socket path."""
    for base in (Path("/run"), Path.home(), Path(__file__).parent):
        if os.access(base, os.W_OK) and len(str(base)) < 60:
            return base
    pytest.skip("no writable directory outside /tmp for a Unix socket")


def test_a_host_unix_socket_cannot_be_reached(mode):
    """Item 7: a listener under /run used to receive the sandbox's message (the network namespace does
    not cover path sockets, and a read-only mount does not block connect)."""
    path = host_socket_dir() / f".rz-{secrets.token_hex(4)}.sock"
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(path))
        try:
            server.listen()
            server.setblocking(False)
            code = (f"import socket\ns = socket.socket(socket.AF_UNIX)\ns.connect({str(path)!r})\n"
                    "s.sendall(b'hello host')\nprint('CONNECTED')")
            r = run(code, isolation=mode)
            assert r.returncode == 1 and "CONNECTED" not in r.stdout
            assert ("FileNotFoundError" if mode == "namespaces" else "not allowed") in r.stderr
            with pytest.raises(BlockingIOError):
                server.accept()
        finally:
            path.unlink()


def test_host_files_cannot_be_read(mode):
    """Item 7: /etc/passwd and the project checkout were readable from the namespaces mode.  Listing
    the checkout or the home directory shows at most the way to the interpreter (e.g. a .venv in it)."""
    files = ["/etc/passwd", str(Path(__file__).resolve()), str(REPO / "pyproject.toml")]
    dirs = [str(REPO), str(Path.home())]
    code = ("import os\n" + "".join(f"try:\n    print('READ', len(open({t!r}).read()))\nexcept OSError as e:\n"
                                     f"    print(type(e).__name__)\n" for t in files)
            + "".join(f"try:\n    print(*os.listdir({d!r}))\nexcept OSError as e:\n    print(type(e).__name__)\n"
                      for d in dirs))
    r = run(code, isolation=mode)
    lines = r.stdout.splitlines()
    assert r.ok and len(lines) == len(files) + len(dirs), r.stdout + r.stderr
    assert not any(line.startswith("READ") for line in lines), r.stdout
    on_the_way = {part for target in sandbox._interpreter_layout(sys.executable)[0] for part in Path(target).parts}
    for listing in lines[len(files):]:
        assert listing.endswith("Error") or set(listing.split()) <= on_the_way, listing


def test_dir_fd_writes_and_unlinks_outside_the_workdir_fail(mode, tmp_path):
    """Item 8: os.open(..., dir_fd=...) wrote and unlinked outside the workdir past the audit hook."""
    victim = tmp_path / "victim"
    victim.write_text("keep me")
    code = ("import os\n"
            f"fd = os.open({str(tmp_path)!r}, os.O_PATH)\n"
            "for attempt in (lambda: os.close(os.open('planted', os.O_WRONLY | os.O_CREAT, dir_fd=fd)),\n"
            "                lambda: os.unlink('victim', dir_fd=fd)):\n"
            "    try:\n        attempt()\n        print('ESCAPED')\n    except OSError as e:\n        print(e)\n")
    r = run(code, isolation=mode)
    assert "ESCAPED" not in r.stdout and victim.read_text() == "keep me" and not (tmp_path / "planted").exists()


def test_the_caller_cannot_be_signalled(mode):
    """Item 8: signal.pidfd_send_signal(os.pidfd_open(parent), ...) signalled the caller; os.kill too."""
    got = []
    previous = signal.signal(signal.SIGUSR1, lambda *args: got.append(1))
    try:
        me = os.getpid()
        code = ("import os, signal\n"
                f"for attempt in (lambda: signal.pidfd_send_signal(os.pidfd_open({me}), signal.SIGUSR1),\n"
                f"                lambda: os.kill({me}, signal.SIGUSR1),\n"
                "                lambda: os.kill(os.getppid(), signal.SIGUSR1)):\n"
                "    try:\n        attempt()\n        print('SENT')\n    except (OSError, PermissionError) as e:\n"
                "        print(e)\n")
        r = run(code, isolation=mode)
        time.sleep(0.2)
        assert got == [] and (mode == "namespaces" or "SENT" not in r.stdout), r.stdout  # in namespaces: init, inside
    finally:
        signal.signal(signal.SIGUSR1, previous)


def test_no_daemon_survives_even_past_the_audit_hook(mode):
    """Item 8: _posixsubprocess.fork_exec (no audit event) left a new-session daemon alive after the run."""
    token = "0.000" + str(secrets.randbelow(10**9))
    code = ("import _posixsubprocess, os, sys\n"
            f"argv = [sys.executable, '-c', {SLEEPER!r}, '{token}']\n"
            "r, w = os.pipe()\n"
            "common = [argv, [os.fsencode(sys.executable)], True, (), None, None, -1, -1, -1, -1, -1, -1, r, w, True,\n"
            "          True, -1, None, None, None, -1, None]\n"
            "try:\n    try:\n        pid = _posixsubprocess.fork_exec(*common, False)\n"
            "    except TypeError:\n        pid = _posixsubprocess.fork_exec(*common)\n    print('STARTED', pid)\n"
            "except OSError as e:\n    print('refused', e)\n")
    r = run(code, isolation=mode, timeout_s=5)
    time.sleep(0.3)
    assert processes_with(token) == [], r.stdout + r.stderr
    assert ("STARTED" if mode == "namespaces" else "refused") in r.stdout, r.stdout + r.stderr


def test_other_processes_environment_is_unreadable(mode):
    """Item 8: /proc/<pid>/environ of the caller was readable (its secrets included)."""
    code = (f"import os\nfor pid in ({os.getpid()}, os.getppid(), 1):\n    try:\n"
            "        data = open(f'/proc/{pid}/environ', 'rb').read()\n        print('READ', pid, len(data))\n"
            "    except OSError as e:\n        print(type(e).__name__)\n")
    r = run(code, isolation=mode)
    leaked = [line for line in r.stdout.splitlines() if line.startswith("READ") and not line.endswith(" 0")]
    assert r.ok and not leaked, r.stdout  # the sandbox's own processes have an empty environment


def test_total_disk_use_is_capped(mode):
    """Item 8: nothing capped total disk use (files of max_file_mb each, as many as wanted)."""
    code = ("import os\ntotal = 0\nfor i in range(64):\n    try:\n        with open(f'f{i}', 'wb') as f:\n"
            "            f.write(b'x' * 2**20)\n        total += os.path.getsize(f'f{i}')\n    except OSError:\n"
            "        break\nfor d in ('/tmp', '/dev/shm'):\n    try:\n        with open(d + '/big', 'wb') as f:\n"
            "            f.write(b'x' * 8 * 2**20)\n        total += os.path.getsize(d + '/big')\n"
            "    except OSError:\n        pass\nprint(total // 2**20)\n")
    r = run(code, isolation=mode, max_file_mb=4, timeout_s=10)
    assert r.ok and int(r.stdout) <= 3 * 4, r.stdout + r.stderr


def test_without_a_confining_mode_untrusted_code_is_refused(monkeypatch):
    """Item 8: where neither namespaces nor Landlock + seccomp work, "auto" and "rlimits" refuse before
    running anything; the unsafe mode runs only when asked for by name."""
    monkeypatch.setattr(sandbox, "_namespaces_work", lambda: (False, "probed off"))
    monkeypatch.setattr(sandbox, "_confinement_available", lambda: False)
    monkeypatch.setattr(sandbox, "_confinement_missing", lambda: "probed off")
    for isolation in ("auto", "rlimits"):
        with pytest.raises(SandboxRefused, match="isolation='unsafe_rlimits'"):
            run("print('ran')", isolation=isolation)
    assert resolve_isolation("unsafe_rlimits") == "unsafe_rlimits"
    r = run("print('ran')", isolation="unsafe_rlimits")
    assert r.ok and r.stdout == "ran\n" and r.isolation == "unsafe_rlimits"
