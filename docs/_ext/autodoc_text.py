"""Sphinx extension: the package's docstrings and signatures rendered as their authors read them.

rewardzoo's docstrings are reStructuredText where they use it (roles, ````literals````, lists,
doctests, ``::`` blocks) and plain text where a table of equations reads best in a terminal: an
indented block of aligned lines under a paragraph, a Markdown-style ``| a | b |`` table, ``|x|`` for
an absolute value, ``fn(*args, **kwargs)`` in prose.  reStructuredText reads those as block quotes,
line blocks, substitution references and unclosed emphasis — errors, which ``-W`` makes fatal, or
mangled text.  Before autodoc parses a docstring, ``as_written`` (its ``autodoc-process-docstring``
hook):

1. makes each block indented deeper than the paragraph above it a literal block, kept exactly as
   aligned: after a blank line (not after a ``::`` or a doctest), or straight under a paragraph of
   two or more lines or one ending with ``:`` (any other one line followed by an indented one is a
   definition list, and stays one);
2. makes each run of lines starting with ``|`` that holds a ``| --- |`` rule a literal block;
3. puts a blank line between a paragraph and a list that starts right under it, and between a list
   and the text that follows it unindented;
4. escapes every other ``|``, and a ``*`` or ``**`` that opens an argument name after ``(`` or ``,``,
   outside inline literals and roles.

A docstring that is already valid reStructuredText without such blocks renders as before.

A dataclass field with a ``default_factory`` shows in ``inspect``'s signature as ``= <factory>``,
which is not Python, so Sphinx cannot parse the signature (it splits ``dict[str, float]`` at the
comma into broken references); ``dataclass_signature`` writes the factory's call instead
(``= dict()``, ``= SamplingConfig()``).
"""

from __future__ import annotations

import dataclasses
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the rewriting itself needs no Sphinx (tests/test_docs_site.py runs it without)
    from sphinx.application import Sphinx

BULLET = re.compile(r"^(\s*)([-*+•]|\d+[.)]|#\.)\s+")
TABLE_RULE = re.compile(r"^\s*\|[\s:|-]*-{3,}[\s:|-]*\|?\s*$")
LITERAL_SPANS = re.compile(r"(``.*?``|:[a-z:]+:`[^`]*`|`[^`]*`_?)")
STAR_ARGUMENT = re.compile(r"(?<=[(,\s])(\*{1,2})(?=[A-Za-z_]\w*\s*[,)=\]])")


def indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def content_indent(paragraph: list[str]) -> int:
    """Where the text of a paragraph stands: its last line's indent, or past its first line's bullet."""
    bullet = BULLET.match(paragraph[0])
    return max(indent(paragraph[-1]), bullet.end() if bullet else 0)


def escape_prose(line: str) -> str:
    """``|`` and an argument's ``*``/``**`` escaped, outside inline literals and roles."""
    parts = LITERAL_SPANS.split(line)
    return "".join(
        part if i % 2 else STAR_ARGUMENT.sub(r"\\\1", part.replace("|", r"\|").replace(r"\\|", r"\|"))
        for i, part in enumerate(parts)
    )


def as_written(lines: list[str]) -> list[str]:
    """The docstring's lines with its plain-text blocks made literal and its stray markup escaped."""
    out: list[str] = []
    paragraph: list[str] = []  # the lines of the paragraph above (reset by a blank line)
    i = 0
    while i < len(lines):
        line = lines[i]
        above = paragraph or _last_paragraph(out)
        under_prose = (
            bool(paragraph)
            and not BULLET.match(paragraph[0])
            and (
                len(paragraph) >= 2
                or (paragraph[0].rstrip().endswith(":") and not paragraph[0].rstrip().endswith("::"))
            )
        )
        if line.strip() and above and (not paragraph or under_prose) and indent(line) > content_indent(above):
            block_start, floor = i, content_indent(above)
            while i < len(lines) and (not lines[i].strip() or indent(lines[i]) > floor):
                i += 1
            while i > block_start and not lines[i - 1].strip():
                i -= 1
            opened = above[-1].rstrip().endswith("::") or above[0].lstrip().startswith((">>>", ".. "))
            out.extend(
                lines[block_start:i] if opened else [*([""] if paragraph else []), "::", "", *lines[block_start:i]]
            )
            if paragraph and i < len(lines) and lines[i].strip():
                out.append("")
            paragraph = []
            continue
        if line.lstrip().startswith("|") and not paragraph and _is_table(lines, i):
            start = i
            while i < len(lines) and lines[i].lstrip().startswith("|"):
                i += 1
            out.extend(["::", "", *("    " + row for row in lines[start:i]), ""])
            continue
        if paragraph and line.strip() and _starts_or_ends_list(paragraph, line):
            out.append("")
            paragraph = []
        if not line.strip():
            paragraph = []
            out.append(line)
        else:
            paragraph.append(line)
            doctest = paragraph[0].lstrip().startswith(">>>")
            out.append(line if doctest else escape_prose(line))
        i += 1
    return out


def _last_paragraph(out: list[str]) -> list[str]:
    """The paragraph that ends just above a blank line at the end of ``out`` (empty at the start)."""
    end = len(out)
    while end and not out[end - 1].strip():
        end -= 1
    if end == len(out):
        return []
    start = end
    while start and out[start - 1].strip():
        start -= 1
    return out[start:end]


def _starts_or_ends_list(paragraph: list[str], line: str) -> bool:
    """Whether ``line`` opens a list right under prose, or is text right under a list, at its indent."""
    items = [indent(row) for row in paragraph if BULLET.match(row)]
    if BULLET.match(line):
        return not items and indent(line) <= indent(paragraph[0])
    return bool(items) and indent(line) <= min(items)


def _is_table(lines: list[str], i: int) -> bool:
    """Whether the run of ``|`` lines starting at ``i`` is a Markdown table (it holds a ``| --- |`` rule)."""
    while i < len(lines) and lines[i].lstrip().startswith("|"):
        if TABLE_RULE.match(lines[i]):
            return True
        i += 1
    return False


def dataclass_signature(
    app: Sphinx, what: str, name: str, obj: object, options: dict, signature: str | None, return_annotation: str | None
) -> tuple[str | None, str | None] | None:
    """A dataclass's signature with each ``= <factory>`` written as the factory's call."""
    if not signature or "<factory>" not in signature or not dataclasses.is_dataclass(obj):
        return None
    for field in dataclasses.fields(obj):
        param = re.search(rf"[(,]\s*{re.escape(field.name)}\b", signature)
        if field.default_factory is dataclasses.MISSING or param is None:
            continue
        factory = getattr(field.default_factory, "__qualname__", "")
        at = signature.find("<factory>", param.end())  # the first one after the name is this field's
        if at >= 0:
            signature = signature[:at] + (f"{factory}()" if factory.isidentifier() else "...") + signature[at + 9 :]
    return signature, return_annotation


def process_docstring(app: Sphinx, what: str, name: str, obj: object, options: dict, lines: list[str]) -> None:
    lines[:] = as_written(lines)


def setup(app: Sphinx) -> dict:
    app.connect("autodoc-process-docstring", process_docstring)
    app.connect("autodoc-process-signature", dataclass_signature)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
