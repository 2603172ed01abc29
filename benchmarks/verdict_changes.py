"""Every claim's verdict on each committed board and study report, before → after a change of the verdict rule:
the claim tables (``| claim | control | verdict | measurement | n |``) of each file at a git revision against the
working tree's, matched by the claim's text without its parenthesised citation.

    python benchmarks/verdict_changes.py --before 7e44951 --out benchmarks/results/verdict_changes.md

``--files`` pairs ``OLD_PATH=NEW_PATH`` (a file moved between the two), default: the boards.
"""

from __future__ import annotations

import argparse
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BOARDS = {
    "benchmarks/results/leaderboard_full/LEADERBOARD.md": "benchmarks/results/history/leaderboard_2026-12-03/LEADERBOARD.md",
    "benchmarks/results/leaderboard/LEADERBOARD.md": "benchmarks/results/history/leaderboard_2026-12-02/LEADERBOARD.md",
    "benchmarks/results/leaderboard_lean/LEADERBOARD.md": "benchmarks/results/history/leaderboard_lean/LEADERBOARD.md",
    "benchmarks/results/leaderboard_hackable/LEADERBOARD.md": "benchmarks/results/history/leaderboard_hackable/LEADERBOARD.md",
    "benchmarks/results/leaderboard_rubric_writing/LEADERBOARD.md": "benchmarks/results/history/leaderboard_rubric_writing/LEADERBOARD.md",
}


def claims(text: str) -> dict[str, tuple[str, str]]:
    """``{claim without its citation: (verdict, measurement)}`` from every 5-column claim row of a report."""
    found = {}
    for line in text.splitlines():
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
        if len(cells) != 5 or cells[0] in ("claim", "---") or cells[0].startswith("-"):
            continue
        key = re.sub(r"\s*\((?:00\d|SPEC|RAL paper|RcRL paper|VARL)[^)]*\)", "", cells[0]).strip()
        found[key] = (cells[2], cells[3])
    return found


def main(argv: list[str] | None = None) -> int:
    """Write the before → after table."""
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", required=True, help="the git revision of the old reports")
    parser.add_argument("--files", nargs="*", default=[], metavar="OLD=NEW", help="more report pairs to compare")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    pairs = dict(BOARDS, **dict(p.split("=", 1) for p in args.files))
    lines = [
        f"`{shlex.join(['python', 'benchmarks/verdict_changes.py', *argv])}`",
        "",
        f"# Verdicts before (at `{args.before}`) → after (the seed as the unit: a t-interval over seeds)",
        "",
    ]
    for old, new in pairs.items():
        before = claims(
            subprocess.run(
                ["git", "show", f"{args.before}:{old}"], cwd=ROOT, capture_output=True, text=True, check=True
            ).stdout
        )
        after = claims((ROOT / new).read_text())
        lines += [
            f"## `{new}`" + (f" (was `{old}`)" if old != new else ""),
            "",
            "| claim | before | after | changed |",
            "| --- | --- | --- | --- |",
        ]
        for key in dict.fromkeys([*before, *after]):
            b, a = before.get(key, ("—", "")), after.get(key, ("—", ""))
            lines.append(f"| {key} | {b[0]}: {b[1]} | {a[0]}: {a[1]} | {'**yes**' if b[0] != a[0] else ''} |")
        lines.append("")
    args.out.write_text("\n".join(lines))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
