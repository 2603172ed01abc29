"""Sphinx configuration of rewardzoo's documentation site: ``make docs`` builds it into ``build/site/``.

    sphinx-build -b html -c docs -W --keep-going -n -E . build/site    # what `make docs` runs

The source directory is the repository root, so the pages are the repository's own Markdown files
where they stand (``docs/``, ``notebooks/``, ``benchmarks/results/``) and their relative links work
on the site as they do on a forge: nothing is copied.  Why Sphinx (``docs/site.md`` says more): the
package's docstrings are written in reStructuredText with Sphinx roles (``:func:``, ``:class:``),
which autodoc renders and checks as they are; MyST reads the Markdown pages and myst-nb the executed
notebooks; nitpicky mode makes a reference to a name that does not exist an error.
"""

from __future__ import annotations

import os
import sys
import tomllib
from pathlib import Path

import rewardzoo

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(DOCS / "_ext"))

project = "rewardzoo"
author = "the rewardzoo authors"
release = version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
copyright = "the rewardzoo authors, Apache-2.0"

extensions = [
    "myst_nb",  # Markdown pages (MyST) and notebooks
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.viewcode",
    "notebook_pages",  # docs/_ext: executes notebooks/NN_*.py (cached) and links each page's .ipynb
    "strict_site",  # docs/_ext: Python references as the docstring's module means them, no external assets
    "autodoc_text",  # docs/_ext: the docstrings' plain-text blocks and dataclass signatures rendered as written
]

# The pages: the repository's Markdown where it stands; everything else in the repository is not a page.
root_doc = "docs/index"
include_patterns = [
    "docs/*.md",
    "docs/**/*.md",
    "docs/api/*.rst",
    "docs/api/**/*.rst",
    "notebooks/README.md",
    "notebooks/[0-9][0-9]_*.py",
    "benchmarks/results/**.md",  # every result page, at any depth (the toctree in docs/results.md lists them)
]
exclude_patterns = ["build/**", ".venv*/**", "runs/**"]
templates_path = [str(DOCS / "_templates")]  # absolute: autosummary reads it from the source directory, HTML from here

# Strict: -W turns every warning into an error; nitpicky makes each unresolvable reference one
# (docs/_ext/strict_site.py first tries the name as the docstring's module would import it).  The
# optional packages that are not installed with the docs extra cannot be imported to check.
nitpicky = True
nitpick_ignore_regex = [
    (r"py:.*", r"(vllm|wandb)(\..*)?"),
    (r"py:class", r"torch\.optim\.optimizer\.Optimizer"),
]  # torch.optim.Optimizer as its hints write it

# Markdown (MyST): GitHub's heading anchors, so `page.md#a-heading` links resolve (and are checked).
myst_heading_anchors = 6
myst_enable_extensions = ["colon_fence"]

# Notebooks: notebook_pages executes them before reading and hands myst-nb the executed notebook;
# myst-nb's own execution stays off.  No widget JavaScript from a CDN.
nb_custom_formats = {".py": ["notebook_pages.read_executed", {}, False]}
nb_execution_mode = "off"
nb_ipywidgets_js = {}
nb_merge_streams = True
notebook_jobs = int(os.environ.get("DOCS_NOTEBOOK_JOBS", min(2, os.cpu_count() or 1)))
notebook_time_limit_s = 900.0  # per notebook; the test's own limit (180 s) is for timing, not rendering

# API reference: one page per module, generated from the docstrings (docs/api/index.rst).
autosummary_generate = True
autosummary_context = {
    "public_names": {name: f"{getattr(rewardzoo, name).__module__}.{name}" for name in rewardzoo.__all__}
}
autodoc_member_order = "bysource"
autodoc_default_options = {"show-inheritance": True}
autodoc_typehints = "signature"
autodoc_typehints_format = "fully-qualified"  # "short" writes ~torch.Tensor, which signatures cannot parse
python_use_unqualified_type_names = True
autoclass_content = "both"
add_module_names = False

html_theme = "furo"
html_title = f"rewardzoo {release}"
html_static_path = ["_static"]
html_css_files = ["site.css"]
html_additional_pages = {"index": "redirect.html"}  # the site root opens the home page, docs/index.html
html_show_sourcelink = False
html_copy_source = False
html_theme_options = {"navigation_with_keys": True}
pygments_style = "friendly"
pygments_dark_style = "monokai"
