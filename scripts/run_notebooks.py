"""Execute the teaching notebooks the way the test suite does, and write their wall times.

    .venv/bin/python scripts/run_notebooks.py [--out benchmarks/results/notebooks.md] [NAME ...]

Each ``notebooks/NN_*.py`` (a jupytext percent script, the notebooks' only stored form) is
converted to a notebook in memory and executed top to bottom by a fresh ``ipykernel`` of this
interpreter (a private kernelspec written to a temporary directory, so no installed kernel is
needed), in its own empty temporary working directory, offline (``HF_HUB_OFFLINE=1``,
``TRANSFORMERS_OFFLINE=1``), with one intra-op thread and the inline matplotlib backend, under a
time limit for the whole notebook.  A cell that raises stops the run with the cell's error.
``tests/test_notebooks.py`` calls :func:`run_notebook` on every notebook; ``main`` runs them one
after another and writes a Markdown table of wall times with this command on its first line.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import tempfile
import time
from pathlib import Path

import jupytext
from ipykernel.kernelspec import write_kernel_spec
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import AsyncKernelManager
from nbclient import NotebookClient
from nbformat import NotebookNode

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK_DIR = ROOT / "notebooks"
TIME_LIMIT_S = 180.0
"""Most seconds one notebook may take, start of the kernel to the last cell."""
KERNEL = "rewardzoo-python"
KERNEL_ENV = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "TOKENIZERS_PARALLELISM": "false",
    "MPLBACKEND": "module://matplotlib_inline.backend_inline",
    "PYTHONWARNINGS": "ignore::DeprecationWarning",
}
"""Set in the kernel's environment: offline, one thread, figures rendered inline (by Agg) into the outputs."""


def notebook_paths() -> list[Path]:
    """Every teaching notebook, in reading order (``notebooks/NN_name.py``)."""
    return sorted(NOTEBOOK_DIR.glob("[0-9][0-9]_*.py"))


def run_notebook(path: Path, workdir: Path, time_limit_s: float = TIME_LIMIT_S) -> tuple[NotebookNode, float]:
    """Execute the percent script ``path`` in ``workdir``; return the executed notebook and its wall seconds.

    Raises ``nbclient.exceptions.CellExecutionError`` when a cell fails and ``TimeoutError`` (from
    nbclient's per-cell deadline, set to what is left of ``time_limit_s``) when it runs too long.
    """
    nb = jupytext.read(path)
    deadline = time.monotonic() + time_limit_s
    with tempfile.TemporaryDirectory(prefix="rewardzoo-kernel-") as kernels:
        write_kernel_spec(Path(kernels) / KERNEL, overrides={"display_name": "rewardzoo (this interpreter)"})
        ipc = {"transport": "ipc", "ip": str(Path(kernels) / "ipc")} if os.name == "posix" else {}  # no TCP port
        km = AsyncKernelManager(kernel_name=KERNEL, kernel_spec_manager=KernelSpecManager(kernel_dirs=[kernels]), **ipc)
        client = NotebookClient(
            nb,
            km=km,
            timeout_func=lambda cell: max(1, int(deadline - time.monotonic())),
            resources={"metadata": {"path": str(workdir)}},
        )
        start = time.monotonic()
        client.execute(env={**os.environ, **KERNEL_ENV}, cwd=str(workdir))
        seconds = time.monotonic() - start
    if seconds > time_limit_s:
        raise TimeoutError(f"{path.name} took {seconds:.0f} s, over its limit of {time_limit_s:.0f} s")
    return nb, seconds


def main(argv: list[str] | None = None) -> None:
    """Run the notebooks (all, or those named) one after another and write the wall-time table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="notebook file names or stems (default: all)")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "notebooks.md")
    args = parser.parse_args(argv)
    paths = [p for p in notebook_paths() if not args.names or p.name in args.names or p.stem in args.names]
    given = argv if argv is not None else sys.argv[1:]
    command = shlex.join([".venv/bin/python", "scripts/run_notebooks.py", *given])
    lines = [
        f"`{command}`",
        "",
        "Wall time of each teaching notebook, kernel start to last cell, executed as "
        "`tests/test_notebooks.py` does (one intra-op thread, offline, fresh working directory), and the "
        f"machine's 1-minute load average when it started ({os.cpu_count()} CPUs; other jobs share them).",
        "",
        "| notebook | wall time (s) | load average at start |",
        "| --- | ---: | ---: |",
    ]
    for path in paths:
        load = os.getloadavg()[0]
        with tempfile.TemporaryDirectory(prefix="rewardzoo-notebook-") as workdir:
            _, seconds = run_notebook(path, Path(workdir))
        print(f"{path.name}: {seconds:.1f} s", flush=True)
        lines.append(f"| `{path.name}` | {seconds:.1f} | {load:.1f} |")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
