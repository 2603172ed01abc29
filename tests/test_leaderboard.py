"""The leaderboard: real (tiny) runs through the sweep, its tables, CSV and claims, resuming a half-finished
board, and — in the slow tier — the ``--quick`` CPU preset end to end."""

import csv
import dataclasses
import json
import math

from pathlib import Path

import numpy as np
import pytest

from rewardzoo import leaderboard as lb
from rewardzoo.core.logger import read_metrics
from rewardzoo.sweep import DONE, RunResult, RunSpec, StaleRunError, config_changes


@pytest.fixture
def tiny_preset(monkeypatch, fast_overrides):
    """A three-method preset of two-step runs on tiny models (SFT off, 16 held-out prompts)."""
    TINY = (*fast_overrides, "eval.every=1", "steps=2", "checkpoint_every=0")
    entries = [
        lb.Entry("multiplication", "SFT", lb.recipe("rlvr_multiplication"), (*TINY, "steps=0")),
        lb.Entry("multiplication", "RLVR", lb.recipe("rlvr_multiplication"), TINY),
        lb.Entry("multiplication", "RAL", lb.recipe("ral_multiplication"), (*TINY, "reward.ral.warmup_steps=1",
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

    # a recipe changed since: the finished runs no longer match and the board refuses, retraining nothing
    changed = [dataclasses.replace(e, overrides=(*e.overrides, "grpo.lr=5e-4")) if e.method == "RLVR" else e
               for e in tiny_preset]
    lb.PRESETS["tiny"] = changed
    with pytest.raises(StaleRunError, match=r"(?s)2 finished run\(s\).*multiplication/RLVR/seed0.*grpo\.lr: 0\.001 → 0\.0005"
                                            r".*new run directory"):
        lb.leaderboard("tiny", [0, 1], out, jobs=2, progress=False)
    assert {p.parent: p.stat().st_mtime for p in out.glob("runs/*/*/seed*/metrics.jsonl")} == again


def test_config_changes_name_changed_leaves_and_skip_keys_added_since():
    saved = {"seed": 0, "run_dir": "a", "grpo": {"lr": 1e-3, "beta": 0.0}, "sft": {"steps": 800}}
    wanted = {"seed": 0, "run_dir": "b", "grpo": {"lr": 1e-3, "beta": 0.04}, "sft": {"steps": 800, "seed": None}}
    assert config_changes(saved, wanted) == ["grpo.beta: 0.0 → 0.04"]


def test_best_is_marked_only_where_the_interval_separates():
    """Two methods 0.9 ± small vs 0.5 ± small → bold; 0.6 vs 0.5 with wide intervals → nothing bold."""
    board = lb.Board("t", "eval/accuracy", (("eval/accuracy", "max"),))
    table = lb.Table(board, ["A", "B"], {"A": {"eval/accuracy": [0.9, 0.91, 0.89]}, "B": {"eval/accuracy": [0.5, 0.52, 0.48]}})
    assert table.best("eval/accuracy", "max") == "A" and "**90.0 ± 2.5**" in "\n".join(lb.markdown("t", table, 3))
    close = lb.Table(board, ["A", "B"], {"A": {"eval/accuracy": [0.6, 0.9, 0.3]}, "B": {"eval/accuracy": [0.5, 0.8, 0.2]}})
    assert close.best("eval/accuracy", "max") is None
    assert table.best("eval/accuracy", "") is None


def test_a_claim_is_reproduced_only_strictly_beyond_its_threshold():
    """Both methods at 0% (an interval of 0 ± 0) is no win for either; an interval across the threshold is undecided."""
    from rewardzoo.eval import Estimate

    assert lb._verdict(Estimate(0.0, 0.0, 0.0, 3, 0.95), 0.0) == "not reproduced"
    assert lb._verdict(Estimate(0.02, 0.01, 0.03, 3, 0.95), 0.0) == "reproduced"
    assert lb._verdict(Estimate(0.0, -0.01, 0.01, 3, 0.95), 0.0) == "undecided (CI)"
    assert lb._verdict(Estimate(-0.02, -0.03, -0.01, 3, 0.95), 0.0, above=False) == "reproduced"
    assert lb._verdict(Estimate(0.5, -math.inf, math.inf, 1, 0.95), 0.0) == "undecided (CI)"


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


def test_every_preset_entry_is_a_valid_configuration():
    """Every run of the cpu and gpu presets resolves to a checked config (the gpu one with the hf engine
    here, where vLLM is not installed; its model name is a hub id, never fetched by the check)."""
    for preset in ("cpu", "gpu"):
        for spec in lb.specs(lb.PRESETS[preset], [0], Path("runs"), quick=preset == "cpu"):
            spec = dataclasses.replace(spec, overrides=tuple(o.replace("engine=vllm", "engine=hf") for o in spec.overrides))
            cfg = spec.config()
            assert cfg.seed == 0 and (cfg.steps == 0) == ("steps=0" in spec.overrides), spec.name
    gpu = lb.PRESETS["gpu"]
    assert {e.task for e in gpu} == {"multiplication", "hackable_multiplication"}
    assert all("model.lora.enabled=true" in e.overrides for e in gpu)


def _synthetic(tmp_path, name: str, rows: dict[int, dict], metrics: list[dict]) -> RunResult:
    """A finished run on disk with the given per-example eval rows and metric rows (no training)."""
    run_dir = tmp_path / name.replace("/", "_").replace(" ", "_")
    run_dir.mkdir(parents=True)
    (run_dir / "eval_rows.jsonl").write_text("".join(json.dumps({"step": s, "rows": r}) + "\n" for s, r in rows.items()))
    return RunResult(RunSpec(name, lb.recipe("rlvr_multiplication"), run_dir), 1.0, metrics)


@pytest.mark.parametrize("varl_better", [True, False])
def test_claims_read_the_right_runs_and_say_which_way(tmp_path, varl_better):
    """Synthetic runs with known answers: VARL hacks less (or more) than RLVR; every g lowers (or raises) its
    divergence; RcRL's prompts beat (or lose to) Absolute RaR's; the verdicts follow."""
    rng = np.random.default_rng(0)
    seeds, results = [0, 1, 2], {}
    low, high = (0.1, 0.6) if varl_better else (0.6, 0.1)
    for s in seeds:
        for method, rate in (("RLVR (proxy)", high), ("VARL (proxy gate)", low)):
            hack = (rng.random(200) < rate).astype(float).tolist()
            key = f"hackable_multiplication/{method}/seed{s}"
            results[key] = _synthetic(tmp_path, key, {0: {"hack_rate": hack}, 40: {"hack_rate": hack}}, [])
        for g, div in lb.DIVERGENCE_OF.items():
            end = 0.05 + 0.01 * s if varl_better else 0.5 + 0.01 * s
            key = f"refdist/RAL g={g}/seed{s}"
            results[key] = _synthetic(tmp_path, key, {}, [{"step": 0, div: 0.3}, {"step": 100, div: end}])
        for method, q in (("RcRL", 0.8 if varl_better else 0.2), ("Absolute RaR", 0.5)):
            key = f"rubric_writing/{method}/seed{s}"
            quality = (q + 0.05 * rng.standard_normal(96)).tolist()
            results[key] = _synthetic(tmp_path, key, {65: {"quality": quality}}, [{"step": 65, "policy/entropy": 1.0}])
    tabs = {task: lb.Table(lb.BOARDS[task], methods) for task, methods in (
        ("hackable_multiplication", ["RLVR (proxy)", "VARL (proxy gate)"]),
        ("refdist", [f"RAL g={g}" for g in lb.DIVERGENCE_OF]), ("rubric_writing", ["RcRL", "Absolute RaR"]))}
    want = "reproduced" if varl_better else "not reproduced"
    for claim in (lb.varl_resists_the_proxy, lb.each_g_descends_its_divergence, lb.rcrl_beats_rar):
        text, verdict, numbers = claim(tabs, results, seeds)
        assert verdict == want, (claim.__name__, numbers)
    assert lb.ral_approaches_rlvr(tabs, results, seeds) is None  # no multiplication table: no line
