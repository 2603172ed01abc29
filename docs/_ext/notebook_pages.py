"""Sphinx extension: the teaching notebooks as pages, executed at build time from their jupytext sources.

Before Sphinx reads a page, every ``notebooks/NN_name.py`` is executed as ``tests/test_notebooks.py``
executes it (``scripts/run_notebooks.py``: a fresh kernel of this interpreter, offline, one thread, in
an empty temporary directory), ``notebook_jobs`` at a time, under ``notebook_time_limit_s`` each: a
longer limit than the test's, because the build renders the notebooks while the test times them (on a
busy machine a notebook may run past the test's limit, and the build would fail for nothing).
The executed notebook is kept as ``build/docs-notebooks/NN_name.ipynb`` beside the key of
everything its run read (its own text, the package's files, the recipes, the runner, the
interpreter and the torch/transformers versions): a later build whose key is unchanged reuses it
instead of running the notebook again, and any change to one of those runs it anew.

myst-nb renders the stored outputs (its own execution is off): ``read_executed`` is its reader of
``.py`` notebooks (``nb_custom_formats`` in ``conf.py``).  Each page gets a note under its title
with a download of its executed ``.ipynb``, whose first code cell installs rewardzoo where it is
not importable (Colab, a fresh Jupyter).  A notebook whose cell raises fails the build.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import multiprocessing
import runpy
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import nbformat
from sphinx.application import Sphinx
from sphinx.errors import ExtensionError
from sphinx.util import logging

RUNNER = "scripts/run_notebooks.py"
CACHE = "build/docs-notebooks"
INPUTS = ["rewardzoo", "algorithms", RUNNER]
"""What a notebook's run reads besides its own text (paths in the source directory, the repository);
a change to any file under these runs it again."""

logger = logging.getLogger(__name__)
_executed: dict[str, Path] = {}
"""sha256 of a notebook's text -> its executed .ipynb; filled by ``execute_all``."""


def text_digest(text: str) -> str:
    """The key of a notebook's own text (what myst-nb hands ``read_executed``)."""
    return hashlib.sha256(text.encode()).hexdigest()


def inputs_digest(root: Path) -> str:
    """One digest of every file the notebooks' runs read besides their own text, and the interpreter."""
    digest = hashlib.sha256(sys.version.encode())
    for package in ("torch", "transformers"):
        digest.update(f"{package}=={importlib.metadata.version(package)}".encode())
    for top in INPUTS:
        paths = [root / top] if (root / top).is_file() else sorted((root / top).rglob("*"))
        for path in paths:
            if path.is_file() and "__pycache__" not in path.parts:
                digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def run_one(runner_path: str, source: str, target: str, time_limit_s: float) -> float:
    """Execute the notebook ``source`` as the tests do and write it, with its outputs, to ``target``."""
    runner = runpy.run_path(runner_path)
    with tempfile.TemporaryDirectory(prefix="rewardzoo-docs-notebook-") as workdir:
        try:
            nb, seconds = runner["run_notebook"](Path(source), Path(workdir), time_limit_s)
        except Exception as err:  # nbclient's errors do not survive the trip back from a worker process
            raise RuntimeError(f"{type(err).__name__}: {err}") from None
    nb.metadata["rewardzoo"] = {"wall_s": round(seconds, 1)}
    nbformat.write(nb, target)
    return seconds


def execute_all(app: Sphinx) -> None:
    """Run every notebook whose key changed (``notebook_jobs`` at a time); record each executed file.

    Nothing to do in a source directory without ``notebooks/`` and its runner (a page tree of its own)."""
    root = Path(app.srcdir)
    if not (root / RUNNER).is_file():
        return
    runner = runpy.run_path(str(root / RUNNER))
    cache = root / CACHE
    cache.mkdir(parents=True, exist_ok=True)
    shared = inputs_digest(root)
    todo = {}
    for path in runner["notebook_paths"]():
        text = path.read_text()
        key = hashlib.sha256((shared + text_digest(text)).encode()).hexdigest()
        target, key_file = cache / f"{path.stem}.ipynb", cache / f"{path.stem}.key"
        if target.is_file() and key_file.is_file() and key_file.read_text() == key:
            seconds = nbformat.read(target, as_version=4).metadata["rewardzoo"]["wall_s"]
            logger.info(f"notebook {path.name}: reused (inputs unchanged; ran in {seconds:.0f} s)")
        else:
            key_file.unlink(missing_ok=True)
            todo[path] = (target, key_file, key)
        _executed[text_digest(text)] = target
    if todo:
        start = time.monotonic()
        jobs = max(1, min(app.config.notebook_jobs, len(todo)))
        logger.info(f"executing {len(todo)} notebook(s), {jobs} at a time")
        with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
            futures = {
                path: pool.submit(run_one, str(root / RUNNER), str(path), str(target), app.config.notebook_time_limit_s)
                for path, (target, _, _) in todo.items()
            }
            for path, future in futures.items():
                try:
                    seconds = future.result()
                except Exception as err:  # a cell raised, or the notebook ran past its time limit
                    raise ExtensionError(f"notebook {path.name} failed: {err}") from err
                target, key_file, key = todo[path]
                key_file.write_text(key)
                logger.info(f"notebook {path.name}: executed in {seconds:.0f} s")
        logger.info(f"notebooks executed in {time.monotonic() - start:.0f} s of wall time")


def read_executed(text: str) -> nbformat.NotebookNode:
    """myst-nb's reader of a ``notebooks/NN_name.py`` page: its executed notebook, with a download note."""
    if text_digest(text) not in _executed:
        raise ExtensionError(
            "a .py page that is not a notebooks/NN_name.py notebook (include_patterns in docs/conf.py)"
        )
    target = _executed[text_digest(text)]
    nb = nbformat.read(target, as_version=4)
    seconds = nb.metadata["rewardzoo"]["wall_s"]
    note = (
        f"```{{note}}\nThis page is `notebooks/{target.stem}.py`, executed by `make docs` as the test suite runs "
        f"it ({seconds:.0f} s on one CPU thread): every output below is that run's.\n"
        f"{{download}}`Download {target.name} </{CACHE}/{target.name}>` (with these outputs) to run it "
        "in Jupyter or Colab: its first code cell installs rewardzoo where it is not importable.\n```"
    )
    nb.cells.insert(1, nbformat.v4.new_markdown_cell(note))
    return nb


def setup(app: Sphinx) -> dict:
    app.add_config_value("notebook_jobs", 1, "env", int)
    app.add_config_value("notebook_time_limit_s", 900.0, "env", float)
    app.connect("builder-inited", execute_all)
    return {"parallel_read_safe": False, "parallel_write_safe": True}
