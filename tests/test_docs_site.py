"""The documentation site: the notebooks' install cell, the docstring rendering, and (``pytest -m docs``)
the strict build and the browser check.

The default tier needs neither Sphinx nor a browser.  The ``docs`` tier (skipped by default, like
``make docs-check``) builds the site as ``make docs`` does, opens it in Debian's Chromium
(``scripts/check_docs_site.py``), and shows that a broken link, a missing image and a reference to a
name that does not exist each fail the build.
"""

import ast
import importlib.util
import os
import pkgutil
import runpy
import shutil
import subprocess
import sys
from pathlib import Path

import jupytext
import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = runpy.run_path(str(ROOT / "scripts" / "run_notebooks.py"))["notebook_paths"]()
AUTODOC_TEXT = runpy.run_path(str(ROOT / "docs" / "_ext" / "autodoc_text.py"))
CHROMIUM = Path("/usr/bin/chromium")
SPHINX = [
    sys.executable,
    "-m",
    "sphinx",
    "-b",
    "html",
    "-c",
    str(ROOT / "docs"),
    "-W",
    "--keep-going",
    "-n",
    "-E",
    "-q",
]


def first_code_cell(path: Path) -> str:
    return next(cell.source for cell in jupytext.read(path).cells if cell.cell_type == "code")


def test_every_notebook_first_installs_rewardzoo_where_it_is_not_importable():
    """The same cell opens every notebook; it acts only when ``import rewardzoo`` would fail."""
    cells = {path.name: first_code_cell(path) for path in NOTEBOOKS}
    assert len(set(cells.values())) == 1, "the install cell differs between notebooks: keep one text in all"
    tree = ast.parse(next(iter(cells.values())))
    guard = next(node for node in tree.body if isinstance(node, ast.If))
    assert ast.unparse(guard.test) == "importlib.util.find_spec('rewardzoo') is None"
    assert "pip" in ast.unparse(guard) and "-e" in ast.unparse(guard)


def test_install_cell_does_nothing_where_rewardzoo_is_importable():
    assert importlib.util.find_spec("rewardzoo") is not None
    exec(compile(first_code_cell(NOTEBOOKS[0]), "install cell", "exec"), {})  # would raise or pip-install otherwise


def test_install_cell_names_what_to_set_when_there_is_no_checkout(tmp_path):
    """Without site-packages (``-S``) rewardzoo is not importable; a folder that is no checkout is refused."""
    script = tmp_path / "cell.py"
    script.write_text(first_code_cell(NOTEBOOKS[0]))
    result = subprocess.run(
        [sys.executable, "-S", str(script)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ, "REWARDZOO_REPO": str(tmp_path)},
        timeout=60,
    )
    assert result.returncode != 0
    assert f"FileNotFoundError: no rewardzoo checkout at {tmp_path}: set REWARDZOO_REPO" in result.stderr


as_written = AUTODOC_TEXT["as_written"]


def test_an_aligned_block_under_a_paragraph_is_kept_as_written():
    lines = [
        "Evaluation:",
        "",
        "    pearson(x, y)   correlation |x| of",
        "                    two tensors",
        "",
        "After.",
    ]
    assert as_written(lines) == ["Evaluation:", "", "::", "", *lines[2:4], "", "After."]


def test_a_block_straight_under_a_two_line_paragraph_or_a_colon_becomes_literal():
    lines = ["The partial derivatives", "of the divergences:", "    ∂KL/∂π = −D*", "and then prose."]
    assert as_written(lines) == [*lines[:2], "", "::", "", lines[2], "", "and then prose."]
    assert as_written(["Value identities:", "    D   π·D* = ¼[…]"]) == [
        "Value identities:",
        "",
        "::",
        "",
        "    D   π·D* = ¼[…]",
    ]


def test_valid_restructuredtext_is_left_alone():
    lines = [
        "term",
        "    its definition",
        "",
        "- a bullet",
        "  continued",
        "",
        "  second paragraph of it",
        "",
        "Example::",
        "",
        "    code | kept",
        "",
        ">>> 1 | 2",
        "3",
        "",
        "A ``str | None`` and :func:`f` here.",
    ]
    assert as_written(lines) == lines


def test_stray_markup_is_escaped_outside_literals():
    assert as_written(["relative error |pred − gold| / |gold|"]) == [r"relative error \|pred − gold\| / \|gold\|"]
    assert as_written(["each fn(prompts, **columns) -> list, *emphasis* stays"]) == [
        r"each fn(prompts, \**columns) -> list, *emphasis* stays"
    ]


def test_a_markdown_table_and_a_list_under_prose_render_as_meant():
    table = ["| g | value |", "| --- | --- |", "| D | ½ |"]
    assert as_written(["Intro.", "", *table]) == ["Intro.", "", "::", "", *("    " + row for row in table), ""]
    assert as_written(["Deviations:", "1. first", "   more", "Then prose."]) == [
        "Deviations:",
        "",
        "1. first",
        "   more",
        "",
        "Then prose.",
    ]


def test_dataclass_signatures_name_their_factories():
    from rewardzoo.core.types import RewardOutput

    signature = "(rewards: torch.Tensor, components: dict[str, torch.Tensor] = <factory>, metrics: dict[str, float] = <factory>)"
    assert AUTODOC_TEXT["dataclass_signature"](None, "class", "RewardOutput", RewardOutput, {}, signature, None) == (
        "(rewards: torch.Tensor, components: dict[str, torch.Tensor] = dict(), metrics: dict[str, float] = dict())",
        None,
    )


def needs_docs_tools():
    if importlib.util.find_spec("sphinx") is None or importlib.util.find_spec("playwright") is None:
        pytest.skip("the docs extra is not installed (make docs installs it)")


@pytest.mark.docs
def test_the_site_builds_strictly_and_passes_the_browser_check(tmp_path):
    """``make docs`` then ``make docs-check``, into a temporary directory (notebooks reused while unchanged)."""
    needs_docs_tools()
    if not CHROMIUM.is_file():
        pytest.skip("no /usr/bin/chromium: apt-get install -y chromium")
    site = tmp_path / "site"
    shutil.rmtree(ROOT / "docs" / "api" / "generated", ignore_errors=True)
    build = subprocess.run(
        [*SPHINX, "-d", str(tmp_path / "doctrees"), str(ROOT), str(site)], capture_output=True, text=True, timeout=1200
    )
    assert build.returncode == 0, build.stderr[-4000:]
    import rewardzoo

    modules = {"rewardzoo", *(m.name for m in pkgutil.walk_packages(rewardzoo.__path__, "rewardzoo."))}
    assert {p.stem for p in (site / "docs" / "api" / "generated").glob("rewardzoo*.html")} == modules  # every module
    assert len(list((site / "_downloads").rglob("*.ipynb"))) == len(NOTEBOOKS)
    check = runpy.run_path(str(ROOT / "scripts" / "check_docs_site.py"))
    assert check["main"](["--site", str(site), "--screenshots", str(tmp_path / "shots")]) == 0
    shots = sorted(p.name for p in (tmp_path / "shots").glob("*.png"))
    assert shots == sorted([*(f"{name}.png" for name in check["PAGES"]), f"{check['NOTEBOOK_PAGE']}_figure.png"])
    assert all((tmp_path / "shots" / name).stat().st_size > 20_000 for name in shots)  # a rendered page, not a blank


@pytest.mark.docs
@pytest.mark.parametrize(
    "fault, message",
    [
        ("", None),
        ("[a page that is not there](no_such_page.md)", "no_such_page"),
        ("[a heading that is not there](index.md#no-such-heading)", "no-such-heading"),
        ("![a missing figure](no_such_figure.png)", "no_such_figure.png"),
        ("{py:func}`rewardzoo.no_such_function`", "rewardzoo.no_such_function"),
    ],
    ids=["clean", "broken-link", "broken-anchor", "missing-image", "unknown-name"],
)
def test_a_broken_link_image_or_name_fails_the_build(tmp_path, fault, message):
    """The site's configuration on a one-page source tree: clean it builds; with one fault it fails, naming it."""
    needs_docs_tools()
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.md").write_text(f"# A page\n\nSee {{py:func}}`rewardzoo.zoo.load_config`.\n\n{fault}\n")
    build = subprocess.run(
        [*SPHINX, str(tmp_path), str(tmp_path / "site")], capture_output=True, text=True, timeout=1200
    )
    if message is None:
        assert build.returncode == 0, build.stderr[-4000:]
    else:
        assert build.returncode != 0 and message in build.stderr, build.stderr[-4000:]
