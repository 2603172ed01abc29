"""A pip install is a full install: the built wheel, in a fresh environment, runs the shipped recipes
by name and the leaderboard from a directory outside the checkout.

The fresh environment is a new virtual environment holding only the wheel; the dependencies (torch,
transformers, …) are the test environment's own, reached through a ``.pth`` line, so nothing is
downloaded — and since a ``.pth`` line adds a directory to ``sys.path`` without running the ``.pth``
files in it, the checkout's editable install does not come along.  The test proves it: the package
the commands import is the wheel's.
"""

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(bin directory of a fresh venv with the wheel installed, a working directory outside the checkout)."""
    root = tmp_path_factory.mktemp("wheel")
    build = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--quiet",
            "-w",
            str(root / "dist"),
            str(REPO),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert build.returncode == 0, build.stderr[-3000:]
    wheel = next((root / "dist").glob("rewardzoo-*.whl"))
    subprocess.run([sys.executable, "-m", "venv", str(root / "venv")], check=True, timeout=300)
    bin_dir = root / "venv" / "bin"
    site = subprocess.run(
        [str(bin_dir / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    Path(site, "test_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    install = subprocess.run(
        [str(bin_dir / "python"), "-m", "pip", "install", "--no-deps", "--no-index", "--quiet", str(wheel)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert install.returncode == 0, install.stderr[-3000:]
    work = root / "elsewhere"
    work.mkdir()
    return bin_dir, work


def run(bin_dir: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return subprocess.run(
        [str(bin_dir / "rewardzoo"), *args],
        cwd=cwd,
        env={**env, "OMP_NUM_THREADS": "1"},
        capture_output=True,
        text=True,
        timeout=3000,
    )


def test_the_wheel_is_what_runs_and_it_carries_the_recipes(installed):
    bin_dir, work = installed
    where = subprocess.run(
        [str(bin_dir / "python"), "-c", "import rewardzoo, pathlib; print(pathlib.Path(rewardzoo.__file__).parent)"],
        cwd=work,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert Path(where).is_relative_to(bin_dir.parent) and not Path(where).is_relative_to(REPO)
    listed = run(bin_dir, work, "train", "--list")
    assert listed.returncode == 0 and "rlvr_multiplication" in listed.stdout.split()
    assert sorted(listed.stdout.split()) == sorted(p.stem for p in (REPO / "algorithms").glob("*.yaml"))


def test_train_a_shipped_recipe_by_name_from_outside_the_checkout(installed, fast_overrides):
    bin_dir, work = installed
    out = run(
        bin_dir,
        work,
        "train",
        "rlvr_multiplication",
        *fast_overrides,
        "steps=2",
        "sft.enabled=true",
        "sft.steps=5",
        f"sft.cache_dir={work / 'sft'}",
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert (
        "held-out accuracy" in out.stdout and (work / "runs" / "rlvr_multiplication-seed0" / "metrics.jsonl").exists()
    )


@pytest.mark.slow
def test_the_quick_leaderboard_from_outside_the_checkout(installed):
    """`rewardzoo leaderboard --quick` (every method of the cpu board, 4 steps) from the installed wheel."""
    bin_dir, work = installed
    out = run(
        bin_dir,
        work,
        "leaderboard",
        "--preset",
        "cpu",
        "--quick",
        "--runs",
        str(work / "lb_runs"),
        "--out",
        str(work / "lb"),
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert (work / "lb" / "LEADERBOARD.md").exists()
