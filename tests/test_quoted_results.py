"""The README and the docs say what the result files say (scripts/quote_results.py): every generated block is
current, every interval a page quotes is in a result file the page cites, every pilot quoted is labelled PILOT,
every link to a result resolves — and a changed number fails."""

import re
import runpy
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
QUOTES = runpy.run_path(str(ROOT / "scripts" / "quote_results.py"))


@pytest.mark.parametrize("page", QUOTES["pages"](), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_quote_matches_its_result_file(page):
    text = page.read_text()
    assert QUOTES["regenerate"](text, page.parent) == text, (
        "a generated block is stale: run python scripts/quote_results.py"
    )
    assert QUOTES["stale_quotes"](text, page.name) == []


def test_the_readme_quotes_the_canonical_board_through_a_generated_block():
    readme = (ROOT / "README.md").read_text()
    blocks = QUOTES["blocks"](readme)
    assert [(kind, file) for _, kind, file, _ in blocks] == [
        ("board-summary", "benchmarks/results/leaderboard/LEADERBOARD.md")
    ]
    board = (ROOT / "benchmarks/results/leaderboard/LEADERBOARD.md").read_text()
    verdicts = re.findall(
        r"^\| (.+?) \| [^|]+ \| (works|does not work|reproduced|not reproduced|undecided \(CI\)|testbed "
        r"cannot decide[^|]*|\*sensitive to tuning\*[^|]*) \|",
        board,
        re.M,
    )
    assert len(verdicts) >= 20
    for claim, word in verdicts:  # every verdict of the board is in the README's block, with its word
        assert f"| {claim} | {word} |" in blocks[0][3]


def test_a_changed_quoted_number_fails(tmp_path):
    """One digit changed in a quoted interval of varl.md, and one in the README's generated block: both are caught."""
    varl = (ROOT / "docs/rewards/varl.md").read_text()
    assert "VARL 53.1 ± 1.9%" in varl
    found = QUOTES["stale_quotes"](varl.replace("VARL 53.1 ± 1.9%", "VARL 56.2 ± 3.5%"), "varl.md")
    assert len(found) == 1 and found[0].startswith("varl.md: 56.2 ± 3.5 (looked in: ")
    assert "benchmarks/results/history/leaderboard_2026-12-03/LEADERBOARD.md" in found[0]
    readme = (ROOT / "README.md").read_text()
    changed = readme.replace(
        "| RLVR | positive control; RAL's twin | 49.7 ± 2.3 |", "| RLVR | positive control; RAL's twin | 55.9 ± 2.6 |"
    )
    assert changed != readme and QUOTES["regenerate"](changed) == readme
    pilot = "A pilot ([run](benchmarks/results/history/pilots/varl_hacking_pilot/varl_hacking.md)) saw +4.5 [-3.0, +12.1] points."
    assert QUOTES["stale_quotes"](pilot, "x.md") == [
        "x.md: +4.5 [-3.0, +12.1] (looked in: benchmarks/results/history/pilots/varl_hacking_pilot/varl_hacking.md)",
        "x.md: PILOT missing in a paragraph quoting benchmarks/results/history/pilots/varl_hacking_pilot/varl_hacking.md",
    ]


def test_every_link_to_a_result_resolves():
    missing = []
    for page in QUOTES["pages"]():
        for target in re.findall(r"\]\(([^)#\s]*benchmarks/results/[^)#\s]*)", page.read_text()):
            if not (page.parent / target).resolve().exists() and not (ROOT / target).exists():
                missing.append(f"{page.relative_to(ROOT)}: {target}")
    assert not missing


def test_the_real_models_step_cost_is_generated_from_its_time_file():
    """docs/your_own_model.md's cost table is TIME.md's trained rows, cell by cell: a changed second is caught."""
    page = (ROOT / "docs/your_own_model.md").read_text()
    (block,) = [b for b in QUOTES["blocks"](page) if b[1] == "time-summary"]
    time_md = (ROOT / block[2]).read_text()
    trained = re.findall(r"^\| chat_multiplication \| (\w+) \| (\d+) \| ([\d.]+) \|", time_md, re.M)
    assert {m for m, *_ in trained} >= {"rlvr", "ral", "ral_format_only"}
    for method, runs, wall in trained:
        assert (f"| {method} | {runs} | {wall} |" in block[3]) == (method != "instruct_step_0")
    row = next(line for line in block[3].splitlines() if line.startswith("| rlvr |"))
    changed = page.replace(row, row.replace("| rlvr | ", "| rlvr | 9"))
    assert changed != page and QUOTES["regenerate"](changed, ROOT / "docs") == page


def test_the_speed_against_trl_is_generated_from_its_result_file(tmp_path):
    """docs/your_own_model.md's and docs/performance.md's S3 tables are the benchmark file's medians, peaks and ratio
    lines: a changed ratio is caught, and a file without its ratio line is refused by name."""
    result = (ROOT / "benchmarks/results/grpo_vs_trl_s3.txt").read_text()
    ratios = re.findall(r"^rewardzoo/trl: speed ([\d.]+), peak memory ([\d.]+)$", result, re.M)
    assert len(ratios) == 2
    for name in ("docs/your_own_model.md", "docs/performance.md"):
        page = (ROOT / name).read_text()
        (block,) = [
            b for b in QUOTES["blocks"](page) if b[1:3] == ("speed-summary", "benchmarks/results/grpo_vs_trl_s3.txt")
        ]
        for speed, memory in ratios:
            assert f"| {speed} |" in block[3] and f"| {memory} |" in block[3]
        changed = page.replace(f"| {ratios[0][0]} |", "| 1.55 |", 1)
        assert changed != page and QUOTES["regenerate"](changed, ROOT / "docs") == page
    unsure = tmp_path / "grpo_vs_trl.txt"
    unsure.write_text(re.sub(r"^rewardzoo/trl: .*$", "", result, flags=re.M))
    with pytest.raises(ValueError, match="setting S3 has no 'rewardzoo/trl: speed"):
        QUOTES["speed_summary"](unsure, tmp_path)


def test_the_two_boards_verdicts_are_generated_from_the_compare_file(tmp_path):
    """docs/leaderboard.md's table of two boards' verdicts is rewardzoo.board.compare's file, verdict by verdict: a
    changed verdict is caught, and a file without its count line is refused by name."""
    page = (ROOT / "docs/leaderboard.md").read_text()
    (block,) = [b for b in QUOTES["blocks"](page) if b[1] == "verdicts-twice"]
    compared = (ROOT / block[2]).read_text()
    rows = [line.split(" | ") for line in compared.splitlines() if line.startswith("| ") and "---" not in line][1:]
    assert len(rows) >= 5
    for cells in rows:  # claim, A's verdict, B's verdict and the flag of every row
        claim, a, b, flag = cells[0].removeprefix("| "), cells[1], cells[3], cells[5].removesuffix(" |")
        assert f"| {claim} | {a} | {b} | {flag} |" in block[3]
    line = next(x for x in block[3].splitlines() if x.startswith("| ") and "---" not in x and "A: verdict" not in x)
    changed = page.replace(line, line.replace("reproduced", "undecided (CI)", 1).replace("works", "does not work", 1))
    assert changed != page and QUOTES["regenerate"](changed, ROOT / "docs") == page
    bare = tmp_path / "verdicts_twice.md"
    bare.write_text(re.sub(r"^\d+ claims and positive controls; .*$", "", compared, flags=re.M))
    with pytest.raises(ValueError, match="has no count line"):
        QUOTES["verdicts_twice"](bare, tmp_path)


def test_the_tie_break_counts_are_generated_from_their_file():
    """docs/leaderboard.md's counts of choices the tie-break made are benchmarks/tie_break.py's summary table, cell
    by cell: a changed count is caught."""
    page = (ROOT / "docs/leaderboard.md").read_text()
    (block,) = [b for b in QUOTES["blocks"](page) if b[1] == "tie-break"]
    source = (ROOT / block[2]).read_text().split("\n## ")[0]
    for line in source.splitlines():
        if line.startswith("| canonical") or line.startswith("| re-run"):
            name, counts = line.split(" ([tuning.csv]")[0], line.split(") | ", 1)[1]
            assert f"{name} | {counts}" in block[3]
    row = next(x for x in block[3].splitlines() if x.startswith("| canonical"))
    changed = page.replace(row, row.replace("| 25 |", "| 24 |"))
    assert changed != page and QUOTES["regenerate"](changed, ROOT / "docs") == page


def test_the_judge_capacity_curve_is_generated_from_its_report(tmp_path):
    """docs/rewards/ral.md's capacity table and claims are ral_capacity.py's report, cell by cell, and its judges'
    AUCs the report's section: a changed ratio or AUC is caught, and a file that is not the report is refused."""
    page = (ROOT / "docs/rewards/ral.md").read_text()
    blocks = {b[1]: b for b in QUOTES["blocks"](page)}
    report = (ROOT / blocks["ral-capacity"][2]).read_text()
    rows = [line for line in report.split("\n## ")[0].splitlines() if line.startswith("| RAL ")]
    assert len(rows) >= 5
    for line in rows:  # method, AUC, final accuracy, gain, ratio and verdict of every row
        cells = line.split(" | ")
        assert " | ".join([cells[0], *cells[1:5], cells[5]]) in blocks["ral-capacity"][3]
    assert "| RAL reaches at least half of RLVR's held-out gain" in blocks["ral-capacity"][3]
    ratio = next(x for x in blocks["ral-capacity"][3].splitlines() if x.startswith("| RAL pre1000 |"))
    auc = next(x for x in blocks["ral-capacity-judges"][3].splitlines() if x.startswith("| pre1000 |"))
    changed = page.replace(ratio, ratio.replace("1.17", "1.71")).replace(auc, auc.replace("0.9", "0.8"))
    assert changed != page and QUOTES["regenerate"](changed, ROOT / "docs/rewards") == page
    other = tmp_path / "ral_capacity.md"
    other.write_text("# not the report\n\n| method | gain |\n| --- | --- |\n| RLVR | +1 |\n")
    with pytest.raises(ValueError, match="not a ral_capacity.py report"):
        QUOTES["ral_capacity"](other, tmp_path)
    with pytest.raises(ValueError, match="not a ral_capacity.py report"):
        QUOTES["ral_capacity_judges"](other, tmp_path)


def test_the_phase_peaks_are_generated_from_their_report(tmp_path):
    """docs/performance.md's table of where the S3 step peaks is benchmarks/phase_peaks.py's report, row by row: a
    changed peak is caught, and a file without the report's heading is refused."""
    page = (ROOT / "docs/performance.md").read_text()
    (block,) = [b for b in QUOTES["blocks"](page) if b[1] == "phase-peaks"]
    report = (ROOT / block[2]).read_text()
    rows = [line for line in report.splitlines() if line.startswith("| ")]
    assert len(rows) == 8 and all(row in block[3] for row in rows)  # header, rule, 5 phases, the step
    backward = next(x for x in block[3].splitlines() if x.startswith("| backward |"))
    changed = page.replace(backward, backward.replace("2.", "1.", 1))
    assert changed != page and QUOTES["regenerate"](changed, ROOT / "docs") == page
    other = tmp_path / "phase_peaks.md"
    other.write_text("| phase | auto |\n| --- | ---: |\n| forward | 1.0 / 1.0 |\n")
    with pytest.raises(ValueError, match="not a phase_peaks.py report"):
        QUOTES["phase_peaks"](other, tmp_path)
