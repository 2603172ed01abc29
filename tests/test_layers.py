"""Layers point one way: core ← tasks ← judges ← rewards ← the face (docs/architecture.md).

The rule is the import-linter contract in pyproject.toml; this test runs it, and shows on a copy
of the package that an import pointing up breaks it.
"""

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[1]
LINT = str(Path(sys.executable).with_name("lint-imports"))


def lint(cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([LINT, "--no-cache"], cwd=cwd, capture_output=True, text=True,
                          env={"PYTHONPATH": str(cwd), "PATH": "/usr/bin:/bin"})


def test_the_layer_contracts_hold():
    out = lint(ROOT)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "2 kept, 0 broken" in out.stdout


def test_an_import_pointing_up_breaks_the_contract(tmp_path):
    shutil.copytree(ROOT / "rewardzoo", tmp_path / "rewardzoo", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    loss = tmp_path / "rewardzoo" / "core" / "loss.py"
    loss.write_text(loss.read_text() + "\nfrom rewardzoo.rewards import rlvr  # points up\n")
    out = lint(tmp_path)
    assert out.returncode != 0
    assert "BROKEN" in out.stdout and "rewardzoo.core.loss -> rewardzoo.rewards.rlvr" in out.stdout
