"""Docs true to their result files, by construction.

Two mechanisms, both run by ``tests/test_quoted_results.py``:

1. **Generated blocks.**  A block of the README or a docs page between

       <!-- generated: board-summary benchmarks/results/leaderboard/LEADERBOARD.md -->
       ...
       <!-- end generated -->

   is written by this script from the named result file (``python scripts/quote_results.py`` rewrites every
   block in place; ``--check`` only says which are stale).  :data:`GENERATORS` names what a block can be.
2. **Quoted intervals.**  Every interval a page quotes in prose (``52.0 ± 1.6``, ``+5.1 [-0.8, +10.9]``) must
   appear verbatim in a result file the same paragraph links (or, when the paragraph links none, the files its
   section links, else any committed result): :func:`stale_quotes` lists those that do not.  A paragraph
   that quotes a pilot's file (a path with ``pilot`` or ``probe`` in it) must say PILOT.

    python scripts/quote_results.py            # rewrite the generated blocks
    python scripts/quote_results.py --check    # exit 1 on a stale block, a quote no file holds, or an unlabelled pilot
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from rewardzoo.board import BOARDS

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
NOT_A_SOURCE = ("verdict_changes.md",)
"""Result files no quote may be taken from: a before → after record quotes the superseded numbers."""

INTERVAL = re.compile(
    r"[-+−]?\d[\d,]*(?:\.\d+)?%? ± \d[\d,]*(?:\.\d+)?"
    r"|[-+−]?\d[\d,]*(?:\.\d+)? \[[-+−]?\d[\d,]*(?:\.\d+)?, [-+−]?\d[\d,]*(?:\.\d+)?\]"
)
"""A quoted interval: ``mean ± half-width`` or ``mean [low, high]``."""
LINK = re.compile(r"benchmarks/results/[\w./+-]*[\w/]")
GIT = re.compile(r"git show (\w+):(benchmarks/results/[\w./+-]*\w)")
"""A committed file at an earlier revision (``git show REV:PATH``): a page may quote the file it names."""
BLOCK = re.compile(r"<!-- generated: (\S+) (\S+) -->\n(.*?)<!-- end generated -->", re.S)


def pages() -> list[Path]:
    """The pages whose quotes are checked: the README, every docs page and every teaching notebook."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")), *sorted((ROOT / "notebooks").glob("*.py"))]


def _norm(text: str) -> str:
    return text.replace("−", "-").replace("**", "")


def _table(text: str, heading: str | None = None) -> list[list[str]]:
    """The rows (cells, stripped) of every Markdown table in ``text`` (under ``heading`` only, when given)."""
    if heading is not None:
        text = text[text.index(heading) :]
        nxt = re.search(r"\n## ", text[len(heading) :])
        text = text[: len(heading) + nxt.start()] if nxt else text
    rows = []
    for line in text.splitlines():
        if line.startswith("|") and not re.match(r"\|\s*-", line):
            rows.append([c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]])
    return rows


def _cited(path: Path, page_dir: Path) -> tuple[str, str]:
    """How a generated block names the result file ``path``: relative to the repository, and as a link from the
    page's folder ``page_dir``."""
    return Path(os.path.relpath(path, ROOT)).as_posix(), Path(os.path.relpath(path, page_dir)).as_posix()


def board_summary(path: Path, page_dir: Path = ROOT) -> str:
    """Each task's headline column and every claim's verdict of a board's LEADERBOARD.md, copied cell by cell (the
    link relative to the page's folder ``page_dir``)."""
    text = path.read_text()
    rel, href = _cited(path, page_dir)
    out = [
        f"From [{rel}]({href}) (test split; mean ± 95% t-interval over seeds; claims: mean [95% t-interval over "
        "seeds], the seed the unit):",
        "",
    ]
    for match in re.finditer(r"^## (.+) \(`(\w+)`\)$", text, re.M):
        title, task = match[1], match[2]
        rows = _table(text, match[0])
        header = rows[0]
        keys = [BOARDS[task].headline, *(["eval/accuracy"] if task == "hackable_multiplication" else [])]
        cols = [i for i, c in enumerate(header) if c.strip("`↑↓ ") in keys]
        out += [
            f"**{task}** — {title}",
            "",
            "| method | role | " + " | ".join(header[i] for i in cols) + " |",
            "| --- | --- |" + " ---: |" * len(cols),
        ]
        out += [f"| {r[0]} | {r[1]} | " + " | ".join(r[i] for i in cols) + " |" for r in rows[1:]]
        out.append("")
    claims = _table(text, "## Positive controls and the seeds' claims")
    out += ["| claim | verdict | measurement |", "| --- | --- | --- |"]
    out += [f"| {r[0]} | {r[2]} | {r[3]} |" for r in claims[1:]]
    return "\n".join(out) + "\n"


def time_summary(path: Path, page_dir: Path = ROOT) -> str:
    """What a board's runs cost, from its TIME.md (``benchmarks/board_time.py``): per trained method the mean
    wall time of a run and its rollout and policy-step parts, copied cell by cell (the link relative to the
    page's folder ``page_dir``)."""
    text = path.read_text()
    rel, href = _cited(path, page_dir)
    rows = _table(text)
    header = rows[0]
    col = {name: header.index(name) for name in ("method", "runs", "wall s", "rollout s", "reward s", "policy step s")}
    out = [
        f"From [{rel}]({href}) (mean seconds per run; the parts are the trainer's own per-step timers):",
        "",
        "| method | runs | wall s | rollout s | reward s | policy step s |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    out += [
        "| " + " | ".join(r[col[name]] for name in col) + " |"
        for r in rows[1:]
        if r[col["policy step s"]] not in ("0.0", "")  # trained rows: an evaluation-only row has no step
    ]
    summed = re.search(r"^Summed wall time: .*$", text, re.M)
    return "\n".join(out + ([f"\n{summed[0]}"] if summed else [])) + "\n"


def speed_summary(path: Path, page_dir: Path = ROOT) -> str:
    """rewardzoo against TRL, from a ``benchmarks/grpo_vs_trl.py`` result file: per setting its heading, each
    side's median step and peak memory and the script's own ratio line, copied cell by cell."""
    text = path.read_text()
    rel, href = _cited(path, page_dir)
    out = [
        f"From [{rel}]({href}) (median step; peak resident memory):",
        "",
        "| setting | rewardzoo step s | TRL step s | rewardzoo / TRL steps per second | peak RSS GiB rewardzoo / TRL "
        "| peak memory ratio |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for section in re.split(r"^## ", text, flags=re.M)[1:]:
        name, what = (part.strip() for part in section.splitlines()[0].split(":", 1))
        rows = _table(section)
        header = rows[0]
        side = {r[0]: r for r in rows[1:]}
        step, rss = header.index("step s (median)"), header.index("peak RSS GiB")
        ratio = re.search(r"^rewardzoo/trl: speed ([\d.]+), peak memory ([\d.]+)$", section, re.M)
        if ratio is None:
            raise ValueError(f"{rel}: setting {name} has no 'rewardzoo/trl: speed ..., peak memory ...' line")
        out.append(
            f"| {name}: {what} | {side['rewardzoo'][step]} | {side['trl'][step]} | {ratio[1]} "
            f"| {side['rewardzoo'][rss]} / {side['trl'][rss]} | {ratio[2]} |"
        )
    return "\n".join(out) + "\n"


def verdicts_twice(path: Path, page_dir: Path = ROOT) -> str:
    """Two boards' verdicts side by side, from ``python -m rewardzoo.board.compare``'s file: each claim's verdict
    on either board and its flag, and the file's count line, copied cell by cell."""
    text = path.read_text()
    rel, href = _cited(path, page_dir)
    rows = _table(text)
    header = rows[0]
    col = {name: header.index(name) for name in ("claim", "A: verdict", "B: verdict", "flag")}
    out = [
        f"From [{rel}]({href}) (A and B: the same reported seeds, disjoint tuning seeds):",
        "",
        "| claim | A: verdict | B: verdict | flag |",
        "| --- | --- | --- | --- |",
    ]
    out += ["| " + " | ".join(r[col[name]] for name in col) + " |" for r in rows[1:]]
    count = re.search(r"^\d+ claims and positive controls; .*$", text, re.M)
    if count is None:
        raise ValueError(f"{rel} has no count line ('N claims and positive controls; ...'): not a compare file")
    return "\n".join([*out, "", count[0]]) + "\n"


def tie_break(path: Path, page_dir: Path = ROOT) -> str:
    """How often the tuning stage's tie-break chose against the best mean, from ``benchmarks/tie_break.py``'s file:
    its summary table, copied cell by cell (each board's own link dropped; the file links them)."""
    rel, href = _cited(path, page_dir)
    rows = _table(path.read_text().split("\n## ")[0])
    out = [f"From [{rel}]({href}):", "", "| " + " | ".join(rows[0]) + " |", "| --- |" + " ---: |" * (len(rows[0]) - 1)]
    out += ["| " + " | ".join([re.sub(r" \(\[tuning\.csv\]\(.*?\)\)", "", r[0]), *r[1:]]) + " |" for r in rows[1:]]
    return "\n".join(out) + "\n"


def ral_capacity(path: Path, page_dir: Path = ROOT) -> str:
    """RAL's judge-capacity curve, from ``benchmarks/ral_capacity.py``'s Markdown: the positive control's line, each
    method's judge AUC, accuracy, gain, ratio to RLVR and verdict, and the claims of the board's rows at the study's
    settings, copied cell by cell."""
    text = path.read_text()
    rel, href = _cited(path, page_dir)
    control = re.search(r"^RLVR gain: .*$", text, re.M)
    if control is None:
        raise ValueError(f"{rel} has no 'RLVR gain: ...' line: not a ral_capacity.py report")
    rows = _table(text.split("\n## ")[0])
    names = ("method", "judge AUC before RL", "final accuracy", "gain", "ratio to RLVR", "verdict")
    col = [rows[0].index(name) for name in names]
    out = [
        f"From [{rel}]({href}) (test split; mean ± 95% t-interval over seeds; judge AUC on validation prompts "
        "after the warm-up):",
        "",
        control[0],
        "",
        "| " + " | ".join(names) + " |",
        "| --- |" + " ---: |" * (len(names) - 2) + " --- |",
    ]
    out += ["| " + " | ".join(r[i] for i in col) + " |" for r in rows[1:]]
    claims = _table(text, "| claim | control | verdict |")
    out += ["", "| claim | verdict | measurement |", "| --- | --- | --- |"]
    out += [f"| {r[0]} | {r[2]} | {r[3]} |" for r in claims[1:]]
    return "\n".join(out) + "\n"


def ral_capacity_judges(path: Path, page_dir: Path = ROOT) -> str:
    """Every judge level's verification AUC by readout before RL, from ``benchmarks/ral_capacity.py``'s Markdown:
    its section's sentence on the probe and its table, copied."""
    text = path.read_text()
    rel, href = _cited(path, page_dir)
    heading = "## Verification ability of every judge level and readout, before RL"
    if heading not in text:
        raise ValueError(f"{rel} has no section {heading[3:]!r}: not a ral_capacity.py report")
    section = text[text.index(heading) + len(heading) :].split("\n## ")[0].strip()
    return f"From [{rel}]({href}):\n\n{section}\n"


def phase_peaks(path: Path, page_dir: Path = ROOT) -> str:
    """Where rewardzoo's step peaks in memory, from ``benchmarks/phase_peaks.py``'s file: its heading (as the
    caption) and its table, copied."""
    text = path.read_text()
    rel, href = _cited(path, page_dir)
    heading = re.search(r"^## (.+)$", text, re.M)
    if heading is None:
        raise ValueError(f"{rel} has no '## ' heading: not a phase_peaks.py report")
    return f"From [{rel}]({href}), {heading[1]}:\n\n{text[heading.end() :].strip()}\n"


GENERATORS: dict[str, Callable[[Path, Path], str]] = {
    "board-summary": board_summary,
    "time-summary": time_summary,
    "speed-summary": speed_summary,
    "verdicts-twice": verdicts_twice,
    "tie-break": tie_break,
    "ral-capacity": ral_capacity,
    "ral-capacity-judges": ral_capacity_judges,
    "phase-peaks": phase_peaks,
}
"""What a generated block can be: name → function of the result file it reads and the page's folder."""


def blocks(text: str) -> list[tuple[str, str, str, str]]:
    """``(whole block, generator, file, body)`` of every generated block of a page."""
    return [(m[0], m[1], m[2], m[3]) for m in BLOCK.finditer(text)]


def regenerate(text: str, page_dir: Path = ROOT) -> str:
    """The page (in the folder ``page_dir``) with every generated block rewritten from its file."""
    for whole, kind, file, _ in blocks(text):
        if kind not in GENERATORS:
            raise ValueError(f"unknown generated block {kind!r}; known: {', '.join(GENERATORS)}")
        body = GENERATORS[kind](ROOT / file, page_dir)
        text = text.replace(whole, f"<!-- generated: {kind} {file} -->\n{body}<!-- end generated -->")
    return text


def _sources() -> dict[str, str]:
    return {
        p.relative_to(ROOT).as_posix(): _norm(p.read_text(errors="ignore"))
        for p in RESULTS.rglob("*")
        if p.suffix in (".md", ".txt") and p.name not in NOT_A_SOURCE
    }


def _links(para: str, sources: dict[str, str]) -> list[str]:
    """The result files a paragraph names: paths under benchmarks/results/ and ``git show REV:PATH`` blobs (loaded
    into ``sources``)."""
    links = LINK.findall(para)
    for rev, path in GIT.findall(para):
        key = f"{rev}:{path}"
        if key not in sources:
            shown = subprocess.run(["git", "show", key], cwd=ROOT, capture_output=True, text=True)
            sources[key] = _norm(shown.stdout) if shown.returncode == 0 else ""
        links.append(key)
    return links


def stale_quotes(text: str, page: str = "", sources: dict[str, str] | None = None) -> list[str]:
    """``page: quote (looked in: files)`` for every interval of ``text`` outside generated blocks that no result file
    it may come from holds verbatim — the files its paragraph and its section (heading to heading) name, or any
    committed result when they name none — and ``page: PILOT missing`` for a paragraph quoting a pilot unlabelled.
    A leading ``+`` is not required of the file."""
    sources = _sources() if sources is None else sources
    found = []
    for section in re.split(r"\n(?=#+ )", BLOCK.sub("", text)):
        section_links = _links(section, sources)
        for para in re.split(r"\n\s*\n", section):
            quotes = INTERVAL.findall(para)
            if not quotes:
                continue
            links = _links(para, sources)
            wanted = list(dict.fromkeys([*links, *section_links]))
            pool = [t for k, t in sources.items() if any(k == w or k.startswith(w.rstrip("/") + "/") for w in wanted)]
            pool = pool or list(sources.values())
            for q in quotes:
                if not any(_norm(q) in t or _norm(q).lstrip("+") in t for t in pool):
                    found.append(f"{page}: {q} (looked in: {', '.join(wanted) or 'every result file'})")
            pilots = [w for w in links if "pilot" in w or "probe" in w]
            if pilots and "PILOT" not in para:
                found.append(f"{page}: PILOT missing in a paragraph quoting {', '.join(pilots)}")
    return found


def main(argv: list[str] | None = None) -> int:
    """Rewrite (or ``--check``) every page."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 on anything stale")
    args = parser.parse_args(argv)
    problems = []
    for page in pages():
        text = page.read_text()
        new = regenerate(text, page.parent)
        rel = page.relative_to(ROOT).as_posix()
        if new != text:
            if args.check:
                problems.append(f"{rel}: a generated block is stale (run python scripts/quote_results.py)")
            else:
                page.write_text(new)
        problems += stale_quotes(new, rel)
    print("\n".join(problems) or "every quote matches its file")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
