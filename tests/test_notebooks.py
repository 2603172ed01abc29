"""The teaching notebooks run top to bottom, and only teach what the library does.

Each ``notebooks/NN_*.py`` (jupytext percent script, the only stored form) is converted in memory
and executed by a fresh kernel of this interpreter in a temporary directory, offline, with one
thread, under a time limit (``scripts/run_notebooks.py``, which also writes the wall times of
``benchmarks/results/notebooks.md``).  A cell that raises fails the test.
"""

import ast
import runpy
from pathlib import Path

import jupytext
import pytest

ROOT = Path(__file__).resolve().parents[1]
RUNNER = runpy.run_path(str(ROOT / "scripts" / "run_notebooks.py"))
NOTEBOOKS = RUNNER["notebook_paths"]()


def code_cells(path: Path) -> list[str]:
    return [cell.source for cell in jupytext.read(path).cells if cell.cell_type == "code"]


def test_the_first_four_notebooks_are_there_in_reading_order():
    names = [p.name for p in NOTEBOOKS]
    assert names[:4] == [
        "01_verifiers_and_hacking.py",
        "02_grpo_core.py",
        "03_transforms_and_divergences.py",
        "04_ral.py",
    ]
    readme = (ROOT / "notebooks" / "README.md").read_text()
    positions = [readme.index(f"`{name}`") for name in names]
    assert positions == sorted(positions), "notebooks/README.md lists the notebooks in reading order"
    assert "notebooks/README.md" in (ROOT / "README.md").read_text()


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_imports_the_library_and_defines_nothing(path):
    """No logic lives only in a notebook: no function or class is defined in one (helpers go to the
    library, with a test); every notebook imports rewardzoo; each ends with "What to try next"."""
    trees = [ast.parse(source) for source in code_cells(path)]
    defined = [
        node.name
        for tree in trees
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
    ]
    assert not defined, f"{path.name} defines {defined}; move them into rewardzoo (with a test)"
    modules = {node.module for tree in trees for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert any(m and m.startswith("rewardzoo") for m in modules)
    last = jupytext.read(path).cells[-1]
    assert last.cell_type == "markdown" and last.source.startswith("## What to try next")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_executes_within_its_time_limit(path, tmp_path):
    """Every cell runs without error, within TIME_LIMIT_S for the whole notebook; its figures are
    real outputs of the run (PNG images produced by the kernel), and it prints its wall time."""
    nb, seconds = RUNNER["run_notebook"](path, tmp_path)
    outputs = [out for cell in nb.cells if cell.cell_type == "code" for out in cell.outputs]
    assert not [out for out in outputs if out.output_type == "error"]
    assert any("image/png" in out.get("data", {}) for out in outputs), f"{path.name} drew no figure"
    assert any("wall time" in out.get("text", "") for out in outputs), f"{path.name} does not print its wall time"
    assert seconds < RUNNER["TIME_LIMIT_S"]
