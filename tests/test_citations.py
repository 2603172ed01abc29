"""Citations resolve: the library, its docs, notebooks and recipes cite a paper by its short name (listed,
with authors, title and arXiv id, in docs/references.md) and a design choice by the docs page that explains
it — never a document a reader cannot open: a numbered source document ("seed 002", "004 §3", "(003)"),
the project's contract ("SPEC §4") or an issue number ("issue 23")."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TREES = ("rewardzoo", "docs", "notebooks", "scripts")
SUFFIXES = {".py", ".md", ".rst", ".yaml", ".yml", ".txt", ".toml", ".cfg", ".ipynb"}
SKIP_PARTS = {"__pycache__", "_build", ".ipynb_checkpoints"}

FORBIDDEN = re.compile(
    r"\b[Ss]eeds?[ /]?00[1-9]\b"  # seed 002, seeds/004
    r"|(?<![\w.\-/])00[1-9](?=\s?(?:§|'s|’s|Table|App|Fig|section)|\))"  # 002 §3, 004's, 003 Table 3, (004)
    r"|\(00[1-9]\b"  # (004 App. B
    r"|SPEC ?§|SPEC\.md"  # the project's contract
    r"|\b[Ii]ssues? #?\d+\b"  # issue 23
    r"|\b[Ss]eed (?:file|document)s?\b"
)

# Files exempt from the rule (each entry is checked below to still need its exemption); none today.
ALLOWED: set[str] = set()


def _files():
    for tree in TREES:
        for path in sorted((ROOT / tree).rglob("*")):
            if path.is_file() and path.suffix in SUFFIXES and not SKIP_PARTS & set(path.parts):
                yield path


def _hits(path: Path) -> list[str]:
    rel = path.relative_to(ROOT).as_posix()
    text = path.read_text(encoding="utf-8", errors="replace")
    return [f"{rel}:{n}: {line.strip()[:120]}" for n, line in enumerate(text.splitlines(), 1) if FORBIDDEN.search(line)]


def test_the_pattern_catches_each_kind_of_citation():
    caught = [
        "seed 002 §3",
        "(004 Table 3)",
        "003's table",
        "Seeds/004",
        "SPEC §4.3",
        "issue 23's audit",
        "(RAL seed 002, §B.2)",
        "no seed file",
    ]
    passed = [
        "the RAL paper, §3",
        "0.002 ± 0.004",
        "--seeds 3",
        "RcRL paper, Table 3",
        "arXiv 2607.01181",
        "time.sleep(0.002)",
        "seed 1234",
    ]
    assert [s for s in caught if not FORBIDDEN.search(s)] == []
    assert [s for s in passed if FORBIDDEN.search(s)] == []


def test_no_citation_of_a_source_document_spec_or_issue():
    hits = [h for path in _files() if path.relative_to(ROOT).as_posix() not in ALLOWED for h in _hits(path)]
    assert not hits, (
        "cite a paper by its short name (docs/references.md) and a design choice by its docs page:\n" + "\n".join(hits)
    )


def test_every_exemption_is_still_needed():
    stale = [rel for rel in sorted(ALLOWED) if not (ROOT / rel).exists() or not _hits(ROOT / rel)]
    assert not stale, f"remove these from ALLOWED in tests/test_citations.py (they cite nothing now): {stale}"
