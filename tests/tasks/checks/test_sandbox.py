"""The sandbox for legitimate code, in every isolation mode this machine supports.

What code may do, what it gets back, the mode resolution and the code reward.  The attacks —
everything hostile code might try against the host, judged from the host's side — are the hostile
corpus, ``test_sandbox_hostile.py``.
"""

import os
import sys
from pathlib import Path

import pytest

from rewardzoo.tasks.checks import sandbox
from rewardzoo.tasks.checks.sandbox import SandboxRefused, resolve_isolation, run, unit_test_reward

MODES = [
    pytest.param(
        m,
        marks=pytest.mark.skipif(
            not sandbox.mode_works(m)[0], reason=f"{m} unavailable here: {sandbox.mode_works(m)[1]}"
        ),
    )
    for m in ("namespaces", "rlimits")
]
REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(params=MODES)
def mode(request):
    return request.param


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


@pytest.mark.skipif(not sandbox.mode_works("namespaces")[0] or os.geteuid() != 0, reason="root namespace mode only")
def test_root_mode_drops_privileges_and_hides_private_directories():
    code = (
        "import os\nprint(os.getuid(), os.getgid(), os.getgroups())\nprint(sorted(os.listdir('/root')))\n"
        "print(len([p for p in os.listdir('/proc') if p.isdigit()]))"
    )
    r = run(code, isolation="namespaces")
    uid, gid, groups = r.stdout.splitlines()[0].split(" ", 2)
    assert int(uid) >= 100_000 and int(gid) == int(uid) and groups == "[]"
    assert "'.ssh'" not in r.stdout.splitlines()[1]  # /root is covered; only the way to Python is bound back
    assert int(r.stdout.splitlines()[2]) <= 3  # a fresh /proc: init, the runner (and nothing of the host)


def test_bad_arguments_are_clear_errors():
    for kwargs, match in [
        ({"timeout_s": 0}, "timeout_s"),
        ({"memory_mb": 10}, "memory_mb"),
        ({"isolation": "docker"}, "isolation"),
        ({"files": {"../x": ""}}, "plain file name"),
        ({"max_processes": 0}, "max_processes"),
        ({"cpu_s": -1}, "cpu_s"),
    ]:
        with pytest.raises(ValueError, match=match):
            run("pass", **kwargs)


ADD_TESTS = [((2, 3), 5), ((0, 0), 0), ((-1, 1), 0)]


def test_unit_test_reward_reproduces_003():
    """003: correct 1.00, off by a sign 0.33 (add(0, 0) is right either way), syntax error 0.00."""
    codes = ("def add(a, b):\n    return a + b\n", "def add(a, b):\n    return a - b\n", "def add(a, b)\n  return a+b")
    rewards = [unit_test_reward(code, ADD_TESTS, entry_point="add") for code in codes]
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
    binds, links = sandbox.interpreter_layout(sys.executable)
    assert "/" not in binds and all(Path(source).is_dir() for source in binds.values())
    assert os.path.realpath(sys.base_prefix) in binds.values()
    assert not any(str(REPO) == t or str(REPO).startswith(t + "/") for t in binds)
    assert set(links) <= set(sandbox.bootstrap._LIBRARY_DIRS)


def test_without_a_confining_mode_untrusted_code_is_refused(monkeypatch):
    """Where neither namespaces nor Landlock + seccomp work, "auto" and "rlimits" refuse before
    running anything, naming what is missing; the unsafe mode runs only when asked for by name."""
    monkeypatch.setattr(sandbox.caller, "mode_works", lambda mode: (False, f"{mode} probed off"))
    for isolation in ("auto", "rlimits"):
        with pytest.raises(SandboxRefused, match="rlimits probed off.*isolation='unsafe_rlimits'"):
            run("print('ran')", isolation=isolation)
    assert resolve_isolation("unsafe_rlimits") == "unsafe_rlimits"
    r = run("print('ran')", isolation="unsafe_rlimits")
    assert r.ok and r.stdout == "ran\n" and r.isolation == "unsafe_rlimits"


def test_a_missing_kernel_feature_names_the_guarantee_it_costs(monkeypatch):
    """Without Landlock the rlimits mode is refused, saying host files would be readable and writable;
    without the seccomp binding both modes are, saying what would go unchecked."""
    monkeypatch.setattr(sandbox.bootstrap, "landlock_abi", lambda: 0)
    assert "host files would be readable and writable" in sandbox.missing("rlimits")
    assert sandbox.missing("namespaces") == ""
    monkeypatch.setattr(sandbox.policy, "seccomp_available", lambda: False)
    for mode in ("namespaces", "rlimits"):
        assert "no seccomp binding" in sandbox.missing(mode) and "kernel keyring" in sandbox.missing(mode)


def test_everyday_code_still_runs(mode):
    """What legitimate code does keeps working under the seccomp policy: threads, lowering its own
    limits, its own affinity and nice value (pid 0), timers, signals to itself, its files; in the
    namespaces mode also temporary files, child processes, asyncio (an AF_UNIX socket pair) and
    shutil.copy2 (chmod, utime)."""
    code = """
import os, resource, signal, threading, time
t = threading.Thread(target=time.sleep, args=(0.01,)); t.start(); t.join()
resource.setrlimit(resource.RLIMIT_NOFILE, (128, 128))
os.sched_setaffinity(0, os.sched_getaffinity(0)); os.nice(1)
got = []
signal.signal(signal.SIGUSR1, lambda *a: got.append(1)); signal.raise_signal(signal.SIGUSR1)
signal.signal(signal.SIGALRM, lambda *a: got.append(2)); signal.setitimer(signal.ITIMER_REAL, 0.01); time.sleep(0.1)
with open("data.txt", "w") as f:
    f.write("kept")
print("basics", got, open("data.txt").read())
if os.path.exists("full"):
    import asyncio, shutil, subprocess, sys, tempfile
    asyncio.run(asyncio.sleep(0))
    with tempfile.NamedTemporaryFile("w", delete=False) as f:
        f.write("x")
    shutil.copy2(f.name, f.name + ".copy")
    print("full", subprocess.run([sys.executable, "-c", "print(7)"], capture_output=True, text=True).stdout.strip())
"""
    files = {"data.txt": "", **({"full": ""} if mode == "namespaces" else {})}
    r = run(code, isolation=mode, files=files)
    assert r.ok and r.stdout.splitlines()[0] == "basics [1, 2] kept", r.stdout + r.stderr
    if mode == "namespaces":
        assert r.stdout.splitlines()[1] == "full 7", r.stdout + r.stderr


def test_the_seccomp_policy_covers_what_libseccomp_cannot_name():
    """Calls newer than the system's libseccomp (the *xattrat family of Linux 6.13, numbered the same
    everywhere) are in the rlimits program by number, and every number past the review is refused."""
    from rewardzoo.tasks.checks.sandbox import policy

    table = policy.rules("rlimits")
    assert {464, 463, 465, 466} <= {
        policy.syscall_number(call) if isinstance(call, str) else call for call, _, _ in table
    }
    assert all((n, "ENOSYS", []) in table for n in range(policy.REVIEWED_UP_TO + 1, policy.REVIEWED_UP_TO + 65))
    assert len(policy.compile_rules(table, self_pid=os.getpid())) % 8 == 0
    with pytest.raises(ValueError, match="no seccomp policy"):
        policy.rules("unsafe_rlimits")
