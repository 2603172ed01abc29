"""Sphinx extension: what keeps rewardzoo's site strict and self-contained.

- **Python references as a reader of the module means them.**  The package's docstrings name
  objects as a reader of that module would (``:class:`Trainer```, ``:data:`G_TRANSFORMS```,
  ``:func:`~rewardzoo.tasks.base.extract_answer``` for a name ``base`` imports).  Where Sphinx's
  exact lookup finds nothing, a reference links to the one documented object whose full name ends
  with ``.name`` (the Python domain's ``.name`` search; among several, the one in the referring
  module), else to the documented object the name imports as from the referring module; a name
  that imports but has no entry of its own (undocumented data, a private or another package's
  name, an instance attribute its class assigns) stays as code, unlinked.  A name that neither resolves nor imports — one that does not
  exist — stays a warning, which ``-W`` makes an error.
- **Pages without a heading.**  A result file that starts straight with its table gets its file
  name as its heading, so it has a title and an entry in the navigation.
- **Nothing loaded from elsewhere.**  After the build, every HTML and CSS file of the site is read:
  a script, style sheet, image or frame loaded from another host fails the build (the site must
  work offline and must not send its reader's visits anywhere).
"""

from __future__ import annotations

import inspect
import pydoc
import re
from pathlib import Path

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.errors import ExtensionError
from sphinx.util import logging
from sphinx.util.nodes import make_refnode

logger = logging.getLogger(__name__)
EXTERNAL_LOAD = re.compile(
    r"""<(?:script|img|iframe|source|video|audio|embed)\b[^>]*\bsrc=["']?(?:https?:)?//"""
    r"""|<link\b[^>]*\bhref=["']?(?:https?:)?//|url\(\s*["']?(?:https?:)?//|@import\s+["'](?:https?:)?//""",
    re.IGNORECASE,
)


def resolve_unqualified(app: Sphinx, env, node: nodes.Element, contnode: nodes.Node) -> nodes.Node | None:
    """A ``py`` reference Sphinx's exact lookup missed: linked, left as code if it imports, else None."""
    if node.get("refdomain") != "py":
        return None
    domain = env.get_domain("py")
    target, module, cls = node["reftarget"], node.get("py:module") or "", node.get("py:class") or ""
    matches = domain.find_obj(env, module, cls, target, node["reftype"], searchmode=1)
    if len(matches) > 1:
        matches = [m for m in matches if module and m[0].startswith(module + ".")]
    candidates = [".".join(p for p in parts if p) for parts in ((module, cls, target), (module, target), ("", target))]
    found = [obj for obj in map(_locate, dict.fromkeys(candidates)) if obj is not None]
    if len(matches) != 1 and found:
        canonical = f"{getattr(found[0], '__module__', '')}.{getattr(found[0], '__qualname__', '')}"
        matches = [(canonical, domain.objects[canonical])] if canonical in domain.objects else []
        if not matches:
            return contnode  # it exists, but has no entry of its own to link to
    if len(matches) != 1:
        return None
    name, entry = matches[0]
    return make_refnode(app.builder, node["refdoc"], entry.docname, entry.node_id, contnode, name)


def _locate(name: str) -> object | None:
    """The object ``name`` imports as (``pydoc.locate``), or an instance attribute's class when ``name`` is
    ``Class.attr`` and the class's code assigns ``self.attr``; None otherwise (also for a module that fails
    to import)."""
    try:
        found = pydoc.locate(name)
        owner, _, attr = name.rpartition(".")
        cls = pydoc.locate(owner) if found is None and owner else None
    except pydoc.ErrorDuringImport:
        return None
    try:
        source = inspect.getsource(cls) if inspect.isclass(cls) else ""
    except (OSError, TypeError):  # a class without Python source
        source = ""
    return cls if re.search(rf"\bself\.{re.escape(attr)}\s*(:[^=\n]*)?=", source) else found


def title_untitled(app: Sphinx, doctree: nodes.document) -> None:
    """Put a page with no heading under one that is its file name (before Sphinx collects titles)."""
    if doctree.next_node(nodes.section) is not None:
        return
    name = Path(app.env.doc2path(app.env.docname)).name
    section = nodes.section(ids=[nodes.make_id(name)], names=[nodes.fully_normalize_name(name)])
    section += nodes.title(text=name)
    children = list(doctree.children)
    doctree.clear()
    section.extend(children)
    doctree += section


def refuse_external_loads(app: Sphinx, error: Exception | None) -> None:
    """Fail the build if any page or style sheet of the site loads something from another host."""
    if error is not None or app.builder.format != "html":
        return
    out = Path(app.outdir)
    found = [
        f"{path.relative_to(out)}: {match.group(0)[:120]}"
        for path in sorted(out.rglob("*"))
        if path.suffix in {".html", ".css"}
        for match in EXTERNAL_LOAD.finditer(path.read_text(errors="replace"))
    ]
    if found:
        raise ExtensionError("the site loads from other hosts (it must work offline):\n  " + "\n  ".join(found[:20]))
    pages = sum(1 for _ in out.rglob("*.html"))
    logger.info(
        f"site: {len(app.env.all_docs)} pages from the sources ({pages} HTML files with the API's source "
        f"listings and the indexes), {sum(1 for _ in out.rglob('*.ipynb'))} notebooks to download, in {out}"
    )


def setup(app: Sphinx) -> dict:
    app.connect("missing-reference", resolve_unqualified)
    app.connect("doctree-read", title_untitled, priority=400)  # before the title collector (500)
    app.connect("build-finished", refuse_external_loads)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
