"""The leaderboard: real (tiny) runs through the sweep, its tables, CSV and claims, resuming a half-finished
board, and — in the slow tier — the ``--quick`` CPU preset end to end."""

import csv
import json

import pytest

from rewardzoo import leaderboard as lb
from rewardzoo.core.logger import read_metrics
from rewardzoo.sweep import DONE


@pytest.fixture
def tiny_preset(monkeypatch, fast_overrides):
    """A three-method preset of two-step runs on tiny models (SFT off, 16 held-out prompts)."""
    TINY = (*fast_overrides, "eval.every=1", "steps=2", "checkpoint_every=0")
    entries = [
        lb.Entry("multiplication", "SFT", lb.RLVR_MULT, (*TINY, "steps=0")),
        lb.Entry("multiplication", "RLVR", lb.RLVR_MULT, TINY),
        lb.Entry("multiplication", "RAL", lb.RAL_MULT, (*TINY, "reward.ral.warmup_steps=1",
                                                         "reward.ral.judge.init_from=", *_tiny_judge())),
    ]
    monkeypatch.setitem(lb.PRESETS, "tiny", entries)
    return entries


def _tiny_judge():
    return ("reward.ral.judge.tiny.hidden_size=32", "reward.ral.judge.tiny.intermediate_size=64",
            "reward.ral.judge.tiny.num_layers=1")


def test_tables_csv_claims_and_resume_of_a_half_finished_board(tiny_preset, tmp_path):
    out = tmp_path / "board"
    lb.leaderboard("tiny", [0, 1], out, jobs=2, command="rewardzoo leaderboard --preset tiny", progress=False)
    text = (out / "LEADERBOARD.md").read_text()
    assert text.startswith("`rewardzoo leaderboard --preset tiny`")
    assert "| method | `eval/accuracy` ↑ | `eval/relative_error` ↓ | `policy/entropy` | `time/wall_s` ↓ |" in text
    for method in ("SFT", "RLVR", "RAL"):
        assert f"| {method} | " in text
    assert "RAL reaches at least half of RLVR's held-out gain" in text  # the claim line, with a verdict
    assert any(v in text for v in ("reproduced", "not reproduced", "undecided (CI)"))
    assert (out / "curves_multiplication.png").stat().st_size > 1000
    with open(out / "leaderboard.csv") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 6 and {r["method"] for r in rows} == {"SFT", "RLVR", "RAL"}
    assert all(len(r["config_hash"]) == 12 for r in rows) and "eval/accuracy" in rows[0]
    assert len({r["config_hash"] for r in rows if r["method"] == "RLVR"}) == 1  # seeds share the configuration

    # a half-finished board: one run lost its completion mark; only that run trains again
    runs = {p.parent: p.stat().st_mtime for p in out.glob("runs/*/*/seed*/metrics.jsonl")}
    victim = out / "runs" / "multiplication" / "ral" / "seed1"
    (victim / DONE).unlink()
    lb.leaderboard("tiny", [0, 1], out, jobs=2, progress=False)
    again = {p.parent: p.stat().st_mtime for p in out.glob("runs/*/*/seed*/metrics.jsonl")}
    assert {d for d in runs if runs[d] != again[d]} == {victim}


def test_best_is_marked_only_where_the_interval_separates():
    """Two methods 0.9 ± small vs 0.5 ± small → bold; 0.6 vs 0.5 with wide intervals → nothing bold."""
    board = lb.Board("t", "eval/accuracy", (("eval/accuracy", "max"),))
    table = lb.Table(board, ["A", "B"], {"A": {"eval/accuracy": [0.9, 0.91, 0.89]}, "B": {"eval/accuracy": [0.5, 0.52, 0.48]}})
    assert table.best("eval/accuracy", "max") == "A" and "**90.0 ± 2.5**" in "\n".join(lb.markdown("t", table, 3))
    close = lb.Table(board, ["A", "B"], {"A": {"eval/accuracy": [0.6, 0.9, 0.3]}, "B": {"eval/accuracy": [0.5, 0.8, 0.2]}})
    assert close.best("eval/accuracy", "max") is None
    assert table.best("eval/accuracy", "") is None


def test_unknown_preset_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="unknown leaderboard preset 'nope'; choose one of"):
        lb.leaderboard("nope", [0], tmp_path)


@pytest.mark.slow
def test_quick_cpu_preset_runs_end_to_end(tmp_path):
    """``rewardzoo leaderboard --preset cpu --quick``: every entry of the CPU preset, one seed, a few steps."""
    from rewardzoo.cli import main

    assert main(["leaderboard", "--preset", "cpu", "--quick", "--out", str(tmp_path)]) == 0
    text = (tmp_path / "LEADERBOARD.md").read_text()
    for entry in lb.PRESETS["cpu"]:
        assert f"| {entry.method} | " in text
    for run in tmp_path.glob("runs/*/*/seed0"):
        assert json.loads((run / "sweep_done.json").read_text())["wall_s"] > 0
        assert read_metrics(run / "metrics.jsonl")
