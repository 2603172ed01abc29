"""Layers point one way: core ← tasks ← judges ← rewards ← the face (docs/architecture.md), and the
core's own modules import each other without a circle.

The rules are the import-linter contracts in pyproject.toml; this test runs them, and shows on a copy
of the package that an import pointing up, and an import that closes a circle inside the core, break them.
"""

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[1]
LINT = str(Path(sys.executable).with_name("lint-imports"))


def lint(cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [LINT, "--no-cache"],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(cwd), "PATH": "/usr/bin:/bin"},
    )


def test_the_layer_contracts_hold():
    out = lint(ROOT)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "4 kept, 0 broken" in out.stdout


def test_a_board_file_importing_one_above_it_breaks_the_contract(tmp_path):
    """The board's files are layered too: the rows know nothing of the claims that read them."""
    rows = copy_of_the_package(tmp_path) / "board" / "rows.py"
    rows.write_text(rows.read_text() + "\nfrom rewardzoo.board import claims  # points up\n")
    out = lint(tmp_path)
    assert out.returncode != 0
    assert "rewardzoo.board.rows -> rewardzoo.board.claims" in out.stdout, out.stdout


def copy_of_the_package(tmp_path: Path) -> Path:
    shutil.copytree(ROOT / "rewardzoo", tmp_path / "rewardzoo", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path / "rewardzoo"


def test_an_import_pointing_up_breaks_the_contract(tmp_path):
    loss = copy_of_the_package(tmp_path) / "core" / "loss.py"
    loss.write_text(loss.read_text() + "\nfrom rewardzoo.rewards import rlvr  # points up\n")
    out = lint(tmp_path)
    assert out.returncode != 0
    assert "BROKEN" in out.stdout and "rewardzoo.core.loss -> rewardzoo.rewards.rlvr" in out.stdout


def test_an_import_circle_inside_the_core_breaks_the_contract(tmp_path):
    """The circle the core once had: the vLLM engine took the RNG helpers from checkpoint.py, which
    imports config.py, which imports the engines' SamplingConfig (a lazy import counts too)."""
    vllm = copy_of_the_package(tmp_path) / "core" / "engines" / "vllm.py"
    vllm.write_text(
        vllm.read_text() + "\n\ndef _rng():\n    from rewardzoo.core.checkpoint import rng_state  # closes a circle\n"
    )
    out = lint(tmp_path)
    assert out.returncode != 0
    assert "No cycles are allowed in rewardzoo.core." in out.stdout
    assert "- .engines -> .checkpoint (1 import)" in out.stdout, out.stdout
