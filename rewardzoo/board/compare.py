"""Two boards' verdicts side by side: does a verdict survive a second tuning-seed set?

    python -m rewardzoo.board.compare A/LEADERBOARD.md B/LEADERBOARD.md --out verdicts.md

Reads the claim table of each ``LEADERBOARD.md`` (the positive controls and every claim: control, verdict,
measurement, n) and writes one row per claim with both verdicts and a flag: two decided verdicts must
agree; a claim decided on one board and not on the other is flagged too (its verdict hinges on the tuning,
or on the noise at the edge of its interval).  Run it on two boards that differ only in their tuning seeds
(``rewardzoo leaderboard ... --tuning-seeds 1000,1001,1002`` and ``--tuning-seeds 2000,2001,2002``, the same
reported seeds; ``make leaderboard-twice``).  ``--mark-a`` writes the outcome into A (the canonical board): a
verdict decided there that B does not share reads *sensitive to tuning*, with both boards' words.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path

HEADER = "| claim | control | verdict |"
DECIDED = ("reproduced", "not reproduced", "works", "does not work")


@dataclass(frozen=True)
class Line:
    """One claim row of a board's claim table."""

    claim: str
    control: str
    verdict: str
    measurement: str


def claim_rows(path: Path) -> dict[str, Line]:
    """The claim table of a ``LEADERBOARD.md``, by claim.  Raises ValueError when the file has none (a
    ``--quick`` board prints no verdicts)."""
    lines = Path(path).read_text().splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith(HEADER)), None)
    if start is None:
        raise ValueError(
            f"{path} has no claim table (a line starting {HEADER!r}): give the LEADERBOARD.md of a full "
            "board (a --quick board prints no verdicts)"
        )
    out = {}
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in re.split(r"(?<!\\) \| ", line.strip().strip("|"))]  # an escaped \| stays
        out[cells[0]] = Line(cells[0], cells[1], cells[2], cells[3] if len(cells) > 3 else "")
    return out


MARK = "*sensitive to tuning* (with these tuning seeds: "


def own(verdict: str) -> str:
    """A verdict cell as its board first printed it: the cell itself, or, where :func:`mark` rewrote it, the
    verdict the board's own tuning seeds gave."""
    return verdict[len(MARK) :].split("; ", 1)[0] if verdict.startswith(MARK) else verdict


def decided(verdict: str) -> str | None:
    """The decided word of a verdict cell (``reproduced``, ``not reproduced``, ``works``, ``does not work``; a
    :func:`mark`-ed cell by its :func:`own` verdict), None when it decides nothing (undecided, no verdict,
    testbed cannot decide, sensitive to tuning)."""
    return own(verdict) if own(verdict) in DECIDED else None


def agreement(a: str | None, b: str | None) -> str:
    """The flag of one claim: ``agree``, ``**disagree**`` (both decided, differently), ``**decided on one board
    only**``, or ``neither decided``."""
    if a is not None and b is not None:
        return "agree" if a == b else "**disagree**"
    if a is not None or b is not None:
        return "**decided on one board only**"
    return "neither decided"


def compare(a: Path, b: Path) -> tuple[str, int]:
    """The Markdown table of both boards' verdicts, claim by claim, and the number of flagged claims."""
    rows_a, rows_b = claim_rows(a), claim_rows(b)
    claims = list(dict.fromkeys([*rows_a, *rows_b]))
    lines = [
        f"# Verdicts of two boards: `{a}` (A) and `{b}` (B)",
        "",
        "| claim | A: verdict | A: measurement | B: verdict | B: measurement | flag |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    flagged = 0
    for claim in claims:
        la, lb = rows_a.get(claim), rows_b.get(claim)
        flag = agreement(decided(la.verdict) if la else None, decided(lb.verdict) if lb else None)
        if la is None or lb is None:
            flag = "**on one board only**"
        flagged += flag.startswith("**")
        lines.append(
            f"| {claim} | {own(la.verdict) if la else '—'} | {la.measurement if la else '—'} | "
            f"{lb.verdict if lb else '—'} | {lb.measurement if lb else '—'} | {flag} |"
        )
    both = sum(
        1 for c in claims if c in rows_a and c in rows_b and decided(rows_a[c].verdict) and decided(rows_b[c].verdict)
    )
    lines += [
        "",
        f"{len(claims)} claims and positive controls; {both} decided on both boards; {flagged} flagged "
        "(a decided verdict must agree; one decided on one board only hinges on the tuning or the noise).",
    ]
    return "\n".join(lines) + "\n", flagged


def mark(a: Path, b: Path) -> list[str]:
    """Rewrite ``a``'s claim table so that a claim decided there whose verdict ``b`` does not share (decided
    otherwise, or not decided) reads ``*sensitive to tuning* (with these tuning seeds: W; with the other tuning-seed
    set: V)``: the canonical board then says itself which of its verdicts a second tuning-seed set does not
    reproduce.  Idempotent (a marked cell keeps its :func:`own` verdict).  Returns the claims marked."""
    rows_b = claim_rows(b)
    lines = Path(a).read_text().splitlines(keepends=True)
    marked = []
    for claim, la in claim_rows(a).items():
        lb = rows_b.get(claim)
        word = decided(la.verdict)
        if word is None or lb is None or decided(lb.verdict) == word:
            continue
        other = decided(lb.verdict) or "not decided"
        cell = f"{MARK}{word}; with the other tuning-seed set: {other})"
        i = next(i for i, line in enumerate(lines) if line.startswith(f"| {claim} | {la.control} | {la.verdict} |"))
        lines[i] = lines[i].replace(f"| {la.verdict} |", f"| {cell} |", 1)
        marked.append(claim)
    note = (
        f"Verdicts marked *sensitive to tuning (with these tuning seeds: …)* are decided here but not the same on "
        f"`{b}`, this board at another set of tuning seeds (`python -m rewardzoo.board.compare A B --mark-a`).\n"
    )
    if marked and note not in lines:
        start = next(i for i, line in enumerate(lines) if line.startswith(HEADER))
        end = next((i for i in range(start + 2, len(lines)) if not lines[i].startswith("|")), len(lines))
        lines[end:end] = ["\n", note]
    Path(a).write_text("".join(lines))
    return marked


def main(argv: list[str] | None = None) -> int:
    """``python -m rewardzoo.board.compare A B [--out FILE]``: exit status 1 when any claim is flagged."""
    parser = argparse.ArgumentParser(prog="python -m rewardzoo.board.compare", description=__doc__.split("\n\n")[0])
    parser.add_argument("a", type=Path, help="the first board's LEADERBOARD.md (or its folder)")
    parser.add_argument("b", type=Path, help="the second board's LEADERBOARD.md (or its folder)")
    parser.add_argument("--out", type=Path, help="also write the table here")
    parser.add_argument(
        "--mark-a",
        action="store_true",
        help="also rewrite A's claim table: a verdict decided on A that B does not share reads sensitive to tuning",
    )
    args = parser.parse_args(argv)
    paths = [p / "LEADERBOARD.md" if p.is_dir() else p for p in (args.a, args.b)]
    try:
        text, flagged = compare(*paths)
        marked = mark(*paths) if args.mark_a else []
    except (ValueError, OSError) as err:
        parser.error(str(err))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)
    print(text, end="")
    if marked:
        print(f"marked sensitive to tuning in {paths[0]}: " + "; ".join(marked))
    return 1 if flagged else 0


if __name__ == "__main__":
    sys.exit(main())
