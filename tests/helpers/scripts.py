"""Import a benchmark script (a file, not part of the package) as a module, once per test process."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def load_script(relative: str) -> ModuleType:
    """The script at ``relative`` (from the repository root, e.g. ``benchmarks/audits/verdict_changes.py``), imported
    once and registered in ``sys.modules`` under a name made from its whole path (``benchmarks.audits.verdict_changes``),
    so its dataclasses resolve their annotations and two scripts of one file name never stand for each other."""
    name = relative.removesuffix(".py").replace("/", ".")
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, ROOT / relative)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
