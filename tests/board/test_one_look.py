"""One look (docs/metrics.md, "How a verdict is read", 7): a read on part of a board's pre-registered seeds is
refused without --interim and labelled when given it; a part of a board prints its progress, never a claim."""

import shutil
from pathlib import Path

import pytest

from rewardzoo.board.command import main, seed_list
from rewardzoo.board.report import report_from_csv

ROOT = Path(__file__).resolve().parents[2]
PART = ROOT / "benchmarks" / "results" / "real_model" / "next_board_parts" / "seeds_12-13" / "leaderboard.csv"


def test_seed_ranges():
    assert seed_list("12-15,20") == [12, 13, 14, 15, 20] and len(seed_list("12-53")) == 42


def test_an_interim_read_is_refused_without_interim_and_labelled_with_it(tmp_path):
    """Seeds 12 and 13 of the 42 pre-registered (12–53): refused; with interim: written, labelled."""
    part = tmp_path / "part" / "leaderboard.csv"
    part.parent.mkdir()
    shutil.copy(PART, part)
    with pytest.raises(ValueError, match="2 of 42 pre-registered seeds have landed"):
        report_from_csv(part, "", tmp_path / "read", seed_list("12-53"))
    text = report_from_csv(part, "", tmp_path / "read", seed_list("12-53"), interim=True).read_text()
    assert "*Interim read: 2 of 42 pre-registered seeds (not a verdict)*" in text
    full = report_from_csv(part, "", tmp_path / "whole", [12, 13]).read_text()
    assert "nterim" not in full


def test_interim_needs_the_registration(capsys):
    with pytest.raises(SystemExit):
        main(["--report-from", str(PART), "--interim"])
    assert "--registered-seeds" in capsys.readouterr().err
