"""The leaderboard under the fair comparison protocol: equal twins on every preset, train / validation /
test splits that never overlap, the tuning stage on a tiny grid (validation only, reused), a row added
from the command line (a recipe and a reward factory defined here), tables, CSV, claims and their
verdict rules, resuming a half-finished board — and, in the slow tier, the ``--quick`` CPU preset end
to end."""

import csv
import dataclasses
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
import torch
from omegaconf import OmegaConf

from rewardzoo import board as lb
from rewardzoo.core.checkpoint import checkpoints
from rewardzoo.core.config import as_dict
from rewardzoo.core.logger import read_metrics
from rewardzoo.core.types import FixedReward, RewardOutput
from rewardzoo.protocol import Grid, Setting, twin_differences, word
from rewardzoo.sweep import DONE, RunResult, RunSpec, StaleRunError, config_changes
from rewardzoo.zoo import build_task, load_config


def _tiny_judge():
    return (
        "reward.ral.judge.tiny.hidden_size=32",
        "reward.ral.judge.tiny.intermediate_size=64",
        "reward.ral.judge.tiny.num_layers=1",
    )


@pytest.fixture
def tiny(fast_overrides):
    """The overrides of a two-step run on a tiny model (SFT off, 16 held-out prompts)."""
    return (*fast_overrides, "eval.every=1", "steps=2", "checkpoint_every=0")


@pytest.fixture
def tiny_preset(monkeypatch, tiny):
    """A three-method preset of two-step runs on tiny models; RAL's judge shares nothing but the reward
    section with RLVR (twins)."""
    entries = [
        lb.Entry("multiplication", "SFT", lb.recipe("rlvr_multiplication"), (*tiny, "steps=0"), "warm start"),
        lb.Entry("multiplication", "RLVR", lb.recipe("rlvr_multiplication"), tiny, "positive control"),
        lb.Entry(
            "multiplication",
            "RAL",
            lb.recipe("ral_multiplication"),
            (*tiny, "reward.ral.warmup_steps=1", "reward.ral.judge.init_from=", *_tiny_judge()),
        ),
    ]
    monkeypatch.setitem(lb.PRESETS, "tiny", entries)
    return entries


def _config(run_dir: Path):
    return OmegaConf.load(Path(run_dir) / "config.yaml")


class ShortAnswerReward(FixedReward):
    """A reward of this test file, added to a board as ``module:factory``: 1 for a well-formed answer of
    at most three characters, else 0 (it never reads the verifier)."""

    def score(self, batch):
        r = torch.tensor([float(a is not None and len(a) <= 3) for a in batch.answers])
        return RewardOutput(rewards=r, components={}, metrics={"short_frac": r.mean().item()})


def short_answer_reward(cfg, ctx):
    """``factory(cfg, ctx) -> Reward`` for ``--add-method``; it must not be handed the task."""
    assert ctx.task is None and ctx.seed == cfg.seed
    return ShortAnswerReward()


def test_a_tuned_board_with_added_rows_tables_csv_claims_and_resume(tiny_preset, tiny, tmp_path):
    """The whole protocol on a tiny grid: every trained row (the shipped RLVR and RAL, and a reward factory of
    this file added from the command line) is tuned over the same two learning rates on the validation split
    at tuning seed 1000; the board trains the choices at seeds 0 and 1 and reports the test split; a
    second call reuses every run; a half-finished board retrains only what is missing."""
    out = tmp_path / "board"
    added = [f"multiplication:Short answers:{__name__}:short_answer_reward:{' '.join(tiny)}"]
    grid = Grid((1.0, 0.5), extend=0)
    # --tune-only: the tuning stage alone, no board run; the board below reuses its runs
    assert (
        lb.leaderboard(
            "tiny", [0, 1], out, jobs=2, progress=False, grid=grid, tune_seeds=[1000], added=added, tune_only=True
        )
        == out / "TUNING.md"
    )
    assert not (out / "LEADERBOARD.md").exists() and not (out / "runs" / "multiplication").exists()
    kept_only_policies(out / "runs" / "tuning")
    tuned = {p: p.stat().st_mtime for p in out.glob("runs/tuning/**/metrics.jsonl")}
    lb.leaderboard(
        "tiny",
        [0, 1],
        out,
        jobs=2,
        command="rewardzoo leaderboard --preset tiny",
        progress=False,
        grid=grid,
        tune_seeds=[1000],
        added=added,
    )
    assert tuned and {p: p.stat().st_mtime for p in out.glob("runs/tuning/**/metrics.jsonl")} == tuned

    # the tuning stage: validation only, disjoint seeds, every trained row on the same grid
    tuning_dirs = sorted(out.glob("runs/tuning/multiplication/*/*/seed1000"))
    assert len(tuning_dirs) == 3 * 2  # RLVR, RAL and the added row × 2 learning rates; no SFT row
    for d in tuning_dirs:
        cfg = _config(d)
        assert cfg.eval.split == "validation" and cfg.seed == 1000 and cfg.grpo.lr in (1e-3, 5e-4)
    with open(out / "tuning.csv") as f:
        tuning = list(csv.DictReader(f))
    assert len(tuning) == 6 and {r["split"] for r in tuning} == {"validation"}
    assert {r["method"] for r in tuning} == {"RLVR", "RAL", "Short answers"}
    assert sum(r["chosen"] == "True" for r in tuning) == 3  # one choice per row
    text_tuning = (out / "TUNING.md").read_text()
    assert "tuned by validation `eval/accuracy`" in text_tuning and "`grpo.lr=0.0005`" in text_tuning

    # the board: the chosen setting of each row, the test split, the reported seeds
    chosen = {r["method"]: r["setting"] for r in tuning if r["chosen"] == "True"}
    for method, setting in chosen.items():
        for s in (0, 1):
            run = next(out.glob(f"runs/multiplication/{lb.slug(method)}/*/seed{s}"))
            cfg = _config(run)
            assert cfg.eval.split == "test" and cfg.seed == s and f"grpo.lr={cfg.grpo.lr:.6g}" == setting
    kept_only_policies(out / "runs" / "multiplication")
    factory_run = next(out.glob("runs/multiplication/short_answers/*/seed0"))
    assert "reward/short_frac" in read_metrics(factory_run / "metrics.jsonl")[1]  # the factory's reward trained it

    text = (out / "LEADERBOARD.md").read_text()
    assert text.startswith("`rewardzoo leaderboard --preset tiny`")
    assert (
        "| method | role | setting | `eval/accuracy` ↑ | `eval/relative_error` ↓ | `policy/entropy` | `time/wall_s` ↓ |"
        in text
    )
    for method in ("SFT", "RLVR", "RAL", "Short answers"):
        assert f"| {method} | " in text
    assert "| Short answers | method (added) | `grpo.lr=" in text
    # claims are printed with their control and n, but 2 seeds give no verdict
    assert (
        "| RAL reaches at least half of RLVR's held-out gain (RAL paper: about parity) | RLVR | no verdict (n = 2 seeds < 3) |"
        in text
    )
    assert "| positive control of `multiplication`: the exact verifier raises held-out accuracy |" in text
    assert "reproduced" not in text
    assert (out / "curves_multiplication.png").stat().st_size > 1000
    with open(out / "leaderboard.csv") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 8 and {r["method"] for r in rows} == {"SFT", "RLVR", "RAL", "Short answers"}
    assert all(len(r["config_hash"]) == 12 for r in rows) and "eval/accuracy" in rows[0]
    assert len({r["config_hash"] for r in rows if r["method"] == "RLVR"}) == 1  # seeds share the configuration

    # everything is reused; a half-finished board retrains only the run that lost its completion mark
    runs = {p.parent: p.stat().st_mtime for p in out.glob("runs/**/seed*/metrics.jsonl")}
    victim = next(out.glob("runs/multiplication/ral/*/seed1"))
    (victim / DONE).unlink()
    lb.leaderboard("tiny", [0, 1], out, jobs=2, progress=False, grid=grid, tune_seeds=[1000], added=added)
    again = {p.parent: p.stat().st_mtime for p in out.glob("runs/**/seed*/metrics.jsonl")}
    assert {d for d in runs if runs[d] != again[d]} == {victim}

    # a recipe changed since: the finished tuning runs no longer match and the board refuses, retraining nothing
    changed = [
        dataclasses.replace(e, overrides=(*e.overrides, "grpo.beta=0.01")) if e.method == "RLVR" else e
        for e in tiny_preset
    ]
    lb.PRESETS["tiny"] = changed
    with pytest.raises(
        ValueError, match=r"(?s)twins differ outside the reward.*multiplication/RAL: grpo\.beta: 0\.01 → 0\.0"
    ):
        lb.leaderboard("tiny", [0, 1], out, jobs=2, progress=False, grid=grid, tune_seeds=[1000])
    lb.PRESETS["tiny"] = [dataclasses.replace(e, overrides=(*e.overrides, "grpo.beta=0.01")) for e in tiny_preset]
    with pytest.raises(
        StaleRunError,
        match=r"(?s)finished run\(s\).*tune/multiplication/RLVR/.*grpo\.beta: 0\.0 → 0\.01"
        r".*new run directory",
    ):
        lb.leaderboard("tiny", [0, 1], out, jobs=2, progress=False, grid=grid, tune_seeds=[1000])
    assert {p.parent: p.stat().st_mtime for p in out.glob("runs/**/seed*/metrics.jsonl")} == again


def kept_only_policies(runs: Path) -> None:
    """Every finished run under ``runs`` kept its trained policy (the SFT row's runs train no step: none) and
    nothing else of its checkpoints, and the board's shared work is gone (the default: no ``keep_checkpoints``)."""
    done = [d.parent for d in runs.glob(f"**/{DONE}")]
    assert done and not any((d / "checkpoints").exists() for d in done)
    assert all((d / "policy" / "config.json").is_file() == (_config(d).steps > 0) for d in done)
    assert not (runs.parent / "shared").exists() and not (runs / "shared").exists()


def test_quick_and_untuned_boards_print_no_verdict(tiny_preset, tmp_path):
    """``--quick`` checks the command, not the science: no claim line is printed or written.  With
    ``keep_checkpoints`` every run keeps its checkpoints and the board its shared work; the same board again
    without it reuses every run and keeps only their trained policies."""
    out = tmp_path / "quick"
    lb.leaderboard("tiny", [0], out, jobs=2, quick=True, progress=False, tuning=False, keep_checkpoints=True)
    text = (out / "LEADERBOARD.md").read_text()
    assert "No verdicts: `--quick` checks the command" in text and "| claim |" not in text
    assert "**Untuned**" in text and not (out / "TUNING.md").exists()
    done = [d.parent for d in out.glob(f"runs/**/{DONE}")]
    assert done and all(bool(checkpoints(d)) == (_config(d).steps > 0) and not (d / "policy").exists() for d in done)
    assert list((out / "runs" / "shared").glob("eval0-*.pt"))
    lb.leaderboard("tiny", [0], out, jobs=2, quick=True, progress=False, tuning=False)  # reuses them, then tidies
    kept_only_policies(out / "runs")


def test_config_changes_name_changed_leaves_and_skip_keys_added_since():
    saved = {"seed": 0, "run_dir": "a", "grpo": {"lr": 1e-3, "beta": 0.0}, "sft": {"steps": 800}}
    wanted = {"seed": 0, "run_dir": "b", "grpo": {"lr": 1e-3, "beta": 0.04}, "sft": {"steps": 800, "seed": None}}
    assert config_changes(saved, wanted) == ["grpo.beta: 0.0 → 0.04"]
    moved = {**saved, "sft": {"steps": 800, "cache_dir": "/old/runs/sft-cache"}}
    assert config_changes(moved, {**saved, "sft": {"steps": 800, "cache_dir": "/new/runs/sft-cache"}}) == []


# --------------------------------------------------------------------------------------- the protocol
def _hf(entries):
    """The gpu preset's entries with the hf engine (vLLM is not installed here; the model id is never fetched)."""
    return [
        dataclasses.replace(e, overrides=tuple(o.replace("engine=vllm", "engine=hf") for o in e.overrides))
        for e in entries
    ]


@pytest.mark.parametrize("preset", ["cpu", "hackable", "gpu"])
def test_every_preset_s_twins_differ_in_the_reward_only(preset, monkeypatch):
    """Resolve every entry of every task: no two differ outside reward.* (and recipe.*, run_dir, logging,
    seed) except by a named exception — the SFT rows take no RL step; on multiplication VARL keeps its
    paper's dr_grpo and its twin "RLVR (dr_grpo)" runs it too, while RLVR and RAL keep grpo; every hackable row runs
    one advantage (the hackable preset: dr_grpo for all).  A row that
    changes a shared setting breaks the check, naming the key."""
    monkeypatch.setenv("REWARDZOO_HUB", "1")  # the gpu preset names a hub model (read, never downloaded, here)
    entries = _hf(lb.PRESETS[preset])
    lb.check_twins(entries)
    advantage = {(e.task, e.method): load_config(e.recipe, list(e.overrides)).grpo.advantage for e in entries}
    for (task, method), value in advantage.items():
        excepted = "grpo.advantage" in getattr(lb.TWIN_EXCEPTIONS.get((task, method)), "keys", {})
        if task == "multiplication":
            assert value == ("dr_grpo" if excepted else "grpo"), method
        elif task == "hackable_multiplication":
            # one setting for every row: the recipes' grpo (cpu, gpu), VARL's paper setting dr_grpo (hackable)
            assert value == ("dr_grpo" if preset == "hackable" else "grpo") and not excepted, method
    broken = [
        *entries,
        dataclasses.replace(entries[1], method="RLVR at beta 0.1", overrides=(*entries[1].overrides, "grpo.beta=0.1")),
    ]
    with pytest.raises(ValueError, match=rf"{entries[1].task}/RLVR at beta 0.1: grpo\.beta: .* → 0\.1"):
        lb.check_twins(broken)


def test_the_recipes_themselves_differ_where_the_board_makes_them_equal():
    """Why the cpu board sets Dr. GRPO on multiplication: the recipes' RLVR (grpo) and VARL (dr_grpo) are not
    twins as shipped."""
    found = twin_differences(
        {"RLVR": as_dict(load_config("rlvr_multiplication")), "VARL": as_dict(load_config("varl_multiplication"))}
    )
    assert found == ["VARL: grpo.advantage: 'grpo' → 'dr_grpo'"]


@pytest.mark.parametrize(
    "recipe", ["rlvr_multiplication", "rlvr_hackable_multiplication", "rcrl_rubric_writing", "rlvr_refdist"]
)
def test_train_validation_and_test_prompts_never_overlap(recipe):
    """Every board task has train / validation / test prompts; SFT demonstrations and RL prompts come from train
    only, so none of them is a validation or test prompt.  refdist is the documented exception: its measurement is
    the policy's exact answer distribution on the prompts it trains on, so validation = test = the training
    prompts, and only the tuning seeds (1000, …) keep a choice apart from the reported number."""
    cfg = load_config(recipe)
    task = build_task(cfg.task)
    train, validation, test = ({e.prompt for e in split} for split in (task.train, task.validation, task.eval))
    assert validation and test and train
    sft = {e.prompt for e in task.train[: cfg.sft.n_examples or None]}
    rl = {e.prompt for e in (task.train[cfg.sft.n_examples :] if cfg.sft.disjoint_rl_prompts else task.train)}
    assert sft <= train and rl <= train
    if recipe == "rlvr_refdist":
        assert validation == test == train
        return
    assert not train & validation and not train & test and not validation & test
    assert len(validation) == len(task.validation)  # distinct prompts


def test_eval_split_validation_fails_clearly_where_a_task_has_none(fast_config):
    """1-digit × 1-digit has 81 pairs: all go to train and test, none is left for validation."""
    from rewardzoo.core.config import ConfigError
    from rewardzoo.recipes import task_for

    cfg = fast_config("task.multiplication.digits_a=1", "task.multiplication.n_eval=20", "eval.split=validation")
    with pytest.raises(ConfigError, match="eval.split=validation: task 'multiplication' has no validation examples"):
        task_for(cfg)
    with pytest.raises(ConfigError, match="eval.split must be one of test, validation"):
        fast_config("eval.split=train")


def test_add_method_rows_are_parsed_or_refused_clearly():
    entries = lb.PRESETS["cpu"]
    row = lb.parse_added(
        "cpu", "multiplication:Mine:ral_multiplication:reward.ral.judge.lr=3e-3 grpo.beta=0.0", entries
    )
    assert row.recipe == "ral_multiplication" and row.overrides[-2:] == ("reward.ral.judge.lr=3e-3", "grpo.beta=0.0")
    assert row.overrides[: len(lb.CPU_SETTINGS["multiplication"])] == lb.CPU_SETTINGS["multiplication"]
    made = lb.parse_added("cpu", "refdist:Mine:mypkg.rewards:make", entries)
    assert made.factory == "mypkg.rewards:make" and made.recipe == "rlvr_refdist"  # the task's SFT row's recipe
    for text, message in (
        ("multiplication:RAL:ral_multiplication", "already has a row 'RAL'"),
        ("countdown:Mine:rlvr_countdown", "not on this board"),
        ("multiplication:Mine:mypkg.rewards", "needs MODULE:FUNCTION"),
        ("multiplication:Mine:missing.yaml", "no recipe file"),
        ("multiplication:Mine", "TASK:LABEL:RECIPE"),
    ):
        with pytest.raises(ValueError, match=message):
            lb.parse_added("cpu", text, entries)


def test_plan_prints_every_row_s_grid_and_the_run_counts():
    text = lb.plan("cpu", ["multiplication"], None, Grid((1.0, 0.5, 0.25)), [0, 1, 2, 3, 4], [1000], {})
    assert text.splitlines()[0] == (
        "preset cpu: 8 rows × 5 seeds (0, 1, 2, 3, 4) = 40 board runs; 21 tuning runs (seeds 1000, validation split)"
    )
    assert "  multiplication/RAL format-only: grpo.lr=0.001 | grpo.lr=0.0005 | grpo.lr=0.00025" in text
    by_hand = lb.plan(
        "cpu",
        ["multiplication"],
        None,
        Grid((1.0, 0.5, 0.25)),
        [0],
        [1000],
        {("multiplication", "RAL"): Setting(("grpo.lr=0.0002",))},
    )
    assert "multiplication/RAL: by hand: grpo.lr=0.0002" in by_hand and "18 tuning runs" in by_hand
    with pytest.raises(ValueError, match=r"--choose names no trained row of this board: \['multiplication/SFT'\]"):
        lb.plan(
            "cpu", ["multiplication"], None, Grid(), [0], [1000], {("multiplication", "SFT"): Setting(("steps=1",))}
        )


def test_the_tuning_runs_start_round_robin_so_runs_that_share_work_start_apart(tmp_path):
    """A task's runs at a seed share their step-0 evaluation and a row's learning rates its reward's
    warm-up; run row by row, a row's first two learning rates started together on two jobs and both
    computed it.  The sweep now starts the tuning runs grid point by grid point, row by row, task by
    task: the same runs as planned (the same specs), no two neighbours of one row, every task's first
    row first."""
    entries = lb.PRESETS["cpu"]
    points = lb.grid_points(entries, Grid((1.0, 0.5, 0.25)), {})
    seeds = [1000, 1001]
    planned = lb.tuning_specs(entries, points, seeds, tmp_path, quick=False)
    order = lb.start_order(planned, points, seeds)
    assert len(order) == len(planned) == 2 * 3 * len(points)
    assert {s.name for s in order} == set(planned) and all(planned[s.name][3] is s for s in order)
    rows = [(planned[s.name][0].task, planned[s.name][0].method) for s in order]
    assert all(a != b for a, b in zip(rows, rows[1:])), "two neighbouring runs of one row"
    assert [task for task, _ in rows[:4]] == ["multiplication", "refdist", "hackable_multiplication", "rubric_writing"]
    assert [planned[s.name][2] for s in order] == sorted(planned[s.name][2] for s in order)  # seed by seed

    small = {
        row: points[row][:2] for row in (("multiplication", "RLVR"), ("multiplication", "RAL"), ("refdist", "RLVR"))
    }
    first, second = ({row: settings[i].label for row, settings in small.items()} for i in (0, 1))
    by_hand = [
        f"tune/{task}/{method}/{labels[(task, method)]}/seed1000"
        for labels in (first, second)
        for task, method in (("multiplication", "RLVR"), ("refdist", "RLVR"), ("multiplication", "RAL"))
    ]
    assert [
        s.name for s in lb.start_order(lb.tuning_specs(entries, small, [1000], tmp_path, False), small, [1000])
    ] == by_hand


def test_the_command_line_shows_and_overrides_the_grid(capsys):
    """``--plan`` prints the grid the flags make; a bad flag is a one-line usage error."""
    assert lb.main(["--plan", "--tasks", "refdist", "--lr-factors", "1", "0.1", "--tune-seeds", "2"]) == 0
    out = capsys.readouterr().out
    assert "preset cpu: 9 rows × 5 seeds (0, 1, 2, 3, 4) = 45 board runs; 24 tuning runs (seeds 1000, 1001" in out
    assert "refdist/RAL g=logit: grpo.lr=0.0001 | grpo.lr=1e-05" in out
    with pytest.raises(SystemExit):
        lb.main(["--plan", "--tune-key", "RAL=reward.ral.judge.lr"])
    assert "TASK/METHOD=KEY=V1,V2" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        lb.main(["--tune-only", "--no-tune"])
    assert "--tune-only runs the tuning stage, which --no-tune turns off" in capsys.readouterr().err


def test_best_is_marked_only_where_the_interval_separates():
    """Two methods 0.9 ± small vs 0.5 ± small → bold; 0.6 vs 0.5 with wide intervals → nothing bold."""
    board = lb.Board("t", "eval/accuracy", (("eval/accuracy", "max"),), ("eval/accuracy", "max"))
    table = lb.Table(
        board, ["A", "B"], {"A": {"eval/accuracy": [0.9, 0.91, 0.89]}, "B": {"eval/accuracy": [0.5, 0.52, 0.48]}}
    )
    assert table.best("eval/accuracy", "max") == "A" and "**90.0 ± 2.5**" in "\n".join(lb.markdown("t", table, 3))
    close = lb.Table(
        board, ["A", "B"], {"A": {"eval/accuracy": [0.6, 0.9, 0.3]}, "B": {"eval/accuracy": [0.5, 0.8, 0.2]}}
    )
    assert close.best("eval/accuracy", "max") is None
    assert table.best("eval/accuracy", "") is None


def test_unknown_preset_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="unknown leaderboard preset 'nope'; choose one of"):
        lb.leaderboard("nope", [0], tmp_path)


@pytest.mark.slow
def test_quick_cpu_preset_runs_end_to_end(tmp_path):
    """``rewardzoo leaderboard --preset cpu --quick``: every entry of the CPU preset tuned on a 2-point grid and
    trained, one seed, a few steps, no verdict."""
    from rewardzoo.cli import main

    assert (
        main(["leaderboard", "--preset", "cpu", "--quick", "--out", str(tmp_path), "--runs", str(tmp_path / "runs")])
        == 0
    )
    text = (tmp_path / "LEADERBOARD.md").read_text()
    for entry in lb.PRESETS["cpu"]:
        assert f"| {entry.method} | " in text
    assert "No verdicts" in text and (tmp_path / "TUNING.md").is_file()
    for run in tmp_path.glob("runs/*/*/*/seed0"):
        assert json.loads((run / "sweep_done.json").read_text())["wall_s"] > 0
        assert read_metrics(run / "metrics.jsonl")


def test_every_preset_entry_is_a_valid_configuration(monkeypatch):
    """Every run of the cpu and gpu presets resolves to a checked config (the gpu one with the hf engine
    here, where vLLM is not installed; its model name is a hub id, never fetched by the check, which
    needs REWARDZOO_HUB=1 to accept it)."""
    monkeypatch.setenv("REWARDZOO_HUB", "1")
    for preset in ("cpu", "gpu"):
        for spec in lb.specs(_hf(lb.PRESETS[preset]), [0], Path("runs"), quick=preset == "cpu"):
            cfg = spec.config()
            assert cfg.seed == 0 and (cfg.steps == 0) == ("steps=0" in spec.overrides), spec.name
    gpu = lb.PRESETS["gpu"]
    assert {e.task for e in gpu} == {"multiplication", "hackable_multiplication"}
    assert all("model.lora.enabled=true" in e.overrides for e in gpu)
    assert set(lb.POSITIVE_CONTROLS) == set(lb.BOARDS)
    for preset in ("cpu", "hackable"):
        for task in {e.task for e in lb.PRESETS[preset]}:  # every board task shows its positive control as a row
            assert lb.POSITIVE_CONTROLS[task].method in {e.method for e in lb.PRESETS[preset] if e.task == task}


# ------------------------------------------------------------------------------------------- claims
def _synthetic(tmp_path, name: str, rows: dict[int, dict], metrics: list[dict]) -> RunResult:
    """A finished run on disk with the given per-example eval rows and metric rows (no training)."""
    run_dir = tmp_path / name.replace("/", "_").replace(" ", "_")
    run_dir.mkdir(parents=True)
    (run_dir / "eval_rows.jsonl").write_text(
        "".join(json.dumps({"step": s, "rows": r}) + "\n" for s, r in rows.items())
    )
    return RunResult(RunSpec(name, lb.recipe("rlvr_multiplication"), run_dir), 1.0, metrics)


@pytest.mark.parametrize("varl_better", [True, False])
def test_claims_read_the_right_runs_and_say_which_way(tmp_path, varl_better):
    """Synthetic runs with known answers: VARL hacks less (or more) than RLVR; every g lowers (or raises) its
    divergence; RcRL's prompts beat (or lose to) Absolute RaR's; the verdicts follow, each naming its control."""
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
    tabs = {
        task: lb.Table(lb.BOARDS[task], methods)
        for task, methods in (
            ("hackable_multiplication", ["RLVR (proxy)", "VARL (proxy gate)"]),
            ("refdist", [f"RAL g={g}" for g in lb.DIVERGENCE_OF]),
            ("rubric_writing", ["RcRL", "Absolute RaR"]),
        )
    }
    want = "reproduced" if varl_better else "not reproduced"
    for claim, control in (
        (lb.varl_resists_the_proxy, "RLVR (proxy)"),
        (lb.each_g_descends_its_divergence, "at its own start"),
        (lb.rcrl_beats_rar, "Absolute RaR"),
    ):
        findings = claim(tabs, results, seeds)
        assert findings
        for f in findings:
            assert word(f.estimate, f.threshold, f.above) == want, (claim.__name__, f.numbers)
            assert control in f.control and f.n.startswith("3 seeds")
    assert lb.ral_approaches_rlvr(tabs, results, seeds) == []  # no multiplication table: no line
    assert lb.rcrl_beats_its_absolute_twin(tabs, results, seeds) == []  # no Absolute RcRL row


@pytest.mark.parametrize("rlvr_gain", [0.3, 0.0])
def test_a_claim_is_decided_only_where_the_positive_control_works(tmp_path, rlvr_gain):
    """Multiplication, 3 seeds: RAL far above its frozen judge.  When RLVR (the positive control) gains 30 points
    the claim is reproduced; when RLVR gains nothing the testbed cannot decide, and the line says why."""
    rng = np.random.default_rng(1)
    seeds, results = [0, 1, 2], {}
    for s in seeds:
        start = (rng.random(400) < 0.3).astype(float)
        ends = {
            "RLVR": (rng.random(400) < 0.3 + rlvr_gain).astype(float),
            "RAL": (rng.random(400) < 0.5).astype(float),
            "RAL frozen judge": (rng.random(400) < 0.05).astype(float),
        }
        for method, end in ends.items():
            key = f"multiplication/{method}/seed{s}"
            results[key] = _synthetic(
                tmp_path, key, {0: {"correct": start.tolist()}, 40: {"correct": end.tolist()}}, []
            )
    tabs = {"multiplication": lb.Table(lb.BOARDS["multiplication"], ["RLVR", "RAL", "RAL frozen judge"])}
    lines = "\n".join(lb.claim_lines(tabs, results, seeds))
    frozen = next(line for line in lines.splitlines() if line.startswith("| a co-trained judge beats a frozen one"))
    if rlvr_gain:
        assert "| RAL frozen judge | reproduced |" in frozen and "| works |" in lines
    else:
        assert (
            "| RAL frozen judge | testbed cannot decide (positive control RLVR at its own start: accuracy change"
            in frozen
        )
        assert "| does not work |" in lines
    assert frozen.endswith("| 3 seeds × 400 held-out examples |")
    assert not math.isnan(lb.positive_control("multiplication", tabs, results, seeds).estimate.mean)


BOUNDS = re.compile(r"([+-]?\d+\.(\d+)) \[([+-]?\d+\.\d+), ([+-]?\d+\.\d+)\]")
"""``mean [low, high]`` as :meth:`Estimate.bounds` prints it: mean, its decimals, low, high."""


def test_every_claim_prints_its_t_interval_over_seeds_as_bounds(tmp_path):
    """Seed 2 far ahead of seeds 0 and 1 (per-seed effects 0.2, 0.2, 0.6): the seed is the unit, so the
    multiplication control's interval is the t-interval of those three numbers — mean 0.3333, sd 0.23094,
    half-width t(0.975, 2) · 0.23094 / √3 = 0.5737: +33.3 [-24.0, +90.7] points, where the percentile bootstrap
    over seeds × examples it replaced read +33.3 [+17.0, +57.5].  Every finding, the exact-metric control too,
    prints its Estimate's own low and high at the printed digits."""
    seeds, results = [0, 1, 2], {}
    n = 400

    def ones(share: float) -> list[float]:  # a row table with ``share`` of its examples 1
        return [1.0] * round(n * share) + [0.0] * (n - round(n * share))

    for s in seeds:
        far = s == 2
        ends = {
            "RLVR": 0.9 if far else 0.5,
            "RAL": 0.8 if far else 0.4,
            "RAL format-only": 0.3,
            "RAL frozen judge": 0.2,
        }
        for method, end in ends.items():
            key = f"multiplication/{method}/seed{s}"
            results[key] = _synthetic(tmp_path, key, {0: {"correct": ones(0.3)}, 40: {"correct": ones(end)}}, [])
        for method, rate in (("RLVR (proxy)", 0.7 if far else 0.3), ("VARL (proxy gate)", 0.1)):
            key = f"hackable_multiplication/{method}/seed{s}"
            results[key] = _synthetic(tmp_path, key, {0: {"hack_rate": ones(0.05)}, 40: {"hack_rate": ones(rate)}}, [])
        base = np.linspace(0.2, 0.8, n)
        for method, quality in (
            ("RcRL", base + 0.1 * (2 * np.array(ones(0.9 if far else 0.3)) - 1)),
            ("Absolute RaR", base),
        ):
            key = f"rubric_writing/{method}/seed{s}"
            results[key] = _synthetic(
                tmp_path, key, {65: {"quality": quality.tolist()}}, [{"step": 65, "policy/entropy": 1.0}]
            )
        key = f"refdist/RLVR exact reference/seed{s}"
        results[key] = _synthetic(
            tmp_path, key, {}, [{"step": 0, "eval/js": 0.3}, {"step": 40, "eval/js": 0.1 + 0.01 * s}]
        )
    tabs = {
        task: lb.Table(lb.BOARDS[task], methods)
        for task, methods in (
            ("multiplication", ["RLVR", "RAL", "RAL format-only", "RAL frozen judge"]),
            ("hackable_multiplication", ["RLVR (proxy)", "VARL (proxy gate)"]),
            ("rubric_writing", ["RcRL", "Absolute RaR"]),
            ("refdist", ["RLVR exact reference"]),
        )
    }
    scaled = [
        (lb.positive_control("multiplication", tabs, results, seeds), 100),
        (lb.positive_control("hackable_multiplication", tabs, results, seeds), 100),
        *((f, 1) for f in lb.ral_approaches_rlvr(tabs, results, seeds)),
        *(
            (f, 100)
            for claim in (
                lb.ral_judge_beats_format_only,
                lb.frozen_judge_is_exploited,
                lb.varl_resists_the_proxy,
                lb.rcrl_beats_rar,
            )
            for f in claim(tabs, results, seeds)
        ),
    ]
    assert len(scaled) == 7
    for f, scale in scaled:
        printed = BOUNDS.search(f.numbers)
        assert printed and "±" not in f.numbers, f.numbers
        mean, low, high = float(printed[1]), float(printed[3]), float(printed[4])
        rounding = 0.5 * 10.0 ** -len(printed[2]) + 1e-9
        e = f.estimate
        assert abs(mean - e.mean * scale) <= rounding and abs(low - e.low * scale) <= rounding, f.numbers
        assert abs(high - e.high * scale) <= rounding, f.numbers
        assert e.n == 3 and abs((e.high - e.mean) - (e.mean - e.low)) < 1e-12, f.numbers  # a t-interval: symmetric
    control = scaled[0][0]
    assert (
        control.numbers == "accuracy change +33.3 [-24.0, +90.7] points"
        and control.n == "3 seeds × 400 held-out examples"
    )
    assert control.estimate.half_width == pytest.approx(4.302653 * 0.230940 / math.sqrt(3), abs=1e-5)
    exact = lb.positive_control("refdist", tabs, results, seeds)
    assert (
        exact.n == "3 seeds (exact metric)"
        and exact.numbers == f"js change {exact.estimate.bounds(digits=3, sign=True)}"
    )
    assert " ± " not in exact.numbers


@pytest.mark.slow
def test_two_boards_on_disjoint_tuning_seeds_and_their_verdicts_side_by_side(tiny_preset, tmp_path):
    """The reproduction check, end to end at the tiny size: two boards that differ only in their tuning seeds
    (three each, disjoint), each tuned by successive halving with its grid extended past the edge its choice
    sat at, each with its stability section and validation figure; then their verdicts side by side.  The
    same reported seeds; the second board reuses no tuning run of the first."""
    from rewardzoo.board.compare import compare
    from rewardzoo.board.compare import main as compare_main

    grid = Grid((1.0, 0.5), extend=1)
    boards = {}
    for name, tune_seeds in (("a", [1000, 1001, 1002]), ("b", [2000, 2001, 2002])):
        boards[name] = tmp_path / name
        lb.leaderboard(
            "tiny",
            [0, 1, 2],
            boards[name],
            jobs=2,
            progress=False,
            grid=grid,
            tune_seeds=tune_seeds,
            runs=tmp_path / "runs",
        )
    for board in boards.values():
        with open(board / "tuning.csv") as f:
            tuning = list(csv.DictReader(f))
        for method in ("RLVR", "RAL"):
            mine = [r for r in tuning if r["method"] == method]
            settings = {r["setting"] for r in mine}
            assert len(settings) == 3  # the 2-point grid grew one step past the edge its choice sat at
            seeds_of = {s: {r["seed"] for r in mine if r["setting"] == s} for s in settings}
            assert sorted(map(len, seeds_of.values())) == [1, 3, 3]  # halving: the worse of three cut at one seed
            chosen = {r["setting"] for r in mine if r["chosen"] == "True"}
            assert len(chosen) == 1 and len(seeds_of[chosen.pop()]) == 3
        text = (board / "LEADERBOARD.md").read_text()
        assert "## Stability under tuning" in text
        assert "![multiplication: validation across lr](tuning_multiplication.png)" in text
        assert (board / "tuning_multiplication.png").stat().st_size > 1000
        assert "within noise" in (board / "TUNING.md").read_text()
    seeds_of = {}
    for name, board in boards.items():
        with open(board / "tuning.csv") as f:
            seeds_of[name] = {r["seed"] for r in csv.DictReader(f)}
    assert seeds_of == {"a": {"1000", "1001", "1002"}, "b": {"2000", "2001", "2002"}}
    table, flagged = compare(boards["a"] / "LEADERBOARD.md", boards["b"] / "LEADERBOARD.md")
    assert "| RAL reaches at least half of RLVR's held-out gain" in table
    assert table.count("\n| ") == 2 + 2  # header, rule, the positive control, the one claim of these rows
    out = tmp_path / "verdicts.md"
    assert compare_main([str(boards["a"]), str(boards["b"]), "--out", str(out)]) == int(flagged > 0)
    assert out.read_text() == table


def test_the_verdict_table_flags_decided_verdicts_that_disagree(tmp_path):
    """Two decided verdicts that differ are flagged, and so is a claim decided on one board only; an escaped
    pipe inside a claim stays in the claim."""
    from rewardzoo.board.compare import compare

    def board(name: str, verdicts: list[str]) -> Path:
        claims = ["X beats Y", "Z keeps p(y \\| x)", "W holds", "V is flat"]
        lines = [
            "# board",
            "",
            "| claim | control | verdict | measurement (95% interval) | n |",
            "| --- | --- | --- | --- | --- |",
        ]
        lines += [f"| {c} | Y | {v} | +1.0 [0.5, 1.5] | 5 seeds |" for c, v in zip(claims, verdicts)]
        (tmp_path / name).write_text("\n".join(lines + ["", "tail"]) + "\n")
        return tmp_path / name

    a = board("a.md", ["reproduced", "reproduced", "undecided (CI)", "not reproduced"])
    b = board("b.md", ["not reproduced", "undecided (CI)", "undecided (CI)", "not reproduced"])
    table, flagged = compare(a, b)
    assert "| X beats Y | reproduced | +1.0 [0.5, 1.5] | not reproduced | +1.0 [0.5, 1.5] | **disagree** |" in table
    assert "| Z keeps p(y \\| x) | reproduced |" in table and "**decided on one board only** |" in table
    assert "| W holds | undecided (CI) |" in table and "neither decided |" in table
    assert "| V is flat | not reproduced |" in table and table.count("| agree |") == 1
    assert flagged == 2
    with pytest.raises(ValueError, match="no claim table"):
        (tmp_path / "quick.md").write_text("No verdicts\n")
        compare(tmp_path / "quick.md", b)


def test_marking_the_canonical_board_makes_its_unshared_verdicts_sensitive_and_keeps_the_table(tmp_path):
    """--mark-a: the claims decided on A that B does not share (a disagreement, one B leaves undecided) read
    sensitive to tuning on A with both words; agreeing and undecided claims stay; the comparison table is the
    same after marking, and marking twice changes nothing."""
    from rewardzoo.board.compare import compare, main, mark

    def board(name: str, verdicts: list[str]) -> Path:
        head = ["| claim | control | verdict | measurement (95% interval) | n |", "| --- | --- | --- | --- | --- |"]
        rows = [f"| {c} | Y | {v} | +1.0 [0.5, 1.5] | 5 seeds |" for c, v in zip("PQRS", verdicts)]
        (tmp_path / name).write_text("\n".join(["# board", "", *head, *rows, "", "tail"]) + "\n")
        return tmp_path / name

    a = board("a.md", ["reproduced", "reproduced", "not reproduced", "undecided (CI)"])
    b = board("b.md", ["not reproduced", "undecided (CI)", "not reproduced", "reproduced"])
    before = compare(a, b)
    assert main([str(a), str(b), "--mark-a"]) == 1
    text = a.read_text()
    assert (
        "| P | Y | *sensitive to tuning* (with these tuning seeds: reproduced; with the other tuning-seed set: not reproduced) |"
        in text
    )
    assert (
        "| Q | Y | *sensitive to tuning* (with these tuning seeds: reproduced; with the other tuning-seed set: not decided) |"
        in text
    )
    assert "| R | Y | not reproduced |" in text and "| S | Y | undecided (CI) |" in text and text.endswith("tail\n")
    assert f"are decided here but not the same on `{b}`, this board at another set of tuning seeds" in text
    assert compare(a, b) == before
    assert mark(a, b) == ["P", "Q"] and a.read_text() == text


def test_a_verdict_holds_at_a_setting_only_where_its_point_stays_on_its_side():
    """On validation an undecided interval is no contradiction, a point on the other side is, and an interval
    deciding the other way is."""
    from rewardzoo.board.stability import holds
    from rewardzoo.eval import Estimate
    from rewardzoo.protocol import Finding

    def finding(mean: float, low: float, high: float, above: bool = True) -> Finding:
        return Finding("t", "c", "x", Estimate(mean, low, high, 3), 0.5, above, "", "")

    assert holds(finding(0.6, 0.55, 0.65), "reproduced") and holds(finding(0.6, 0.3, 0.9), "reproduced")
    assert not holds(finding(0.45, 0.3, 0.6), "reproduced") and not holds(finding(0.4, 0.3, 0.45), "reproduced")
    assert holds(finding(0.4, 0.2, 0.6), "not reproduced") and not holds(finding(0.6, 0.55, 0.7), "not reproduced")
    assert holds(finding(0.4, 0.3, 0.45, above=False), "reproduced")


def test_a_decided_verdict_that_flips_at_a_setting_within_noise_reads_sensitive_to_tuning(tmp_path):
    """Synthetic refdist runs: on the test split the positive control works and every g descends its divergence.
    On the tuning runs RAL g=D descends at its chosen rate but rises at a rate within noise of it: its verdict is
    sensitive; g=logit has a rate within noise where it still descends: its verdict holds; g=log_D has no other
    rate within noise, but its chosen rate's tuning runs rise: the test verdict did not replicate on the tuning
    seeds, so it is sensitive too; the claim lines say so."""
    from rewardzoo.board.stability import assess, stability_lines
    from rewardzoo.protocol import Choice

    seeds, tune_seeds = [0, 1, 2], [1000, 1001, 1002]
    rows = ["RLVR exact reference", *(f"RAL g={g}" for g in lb.DIVERGENCE_OF)]
    keys = {"RLVR exact reference": "eval/js", **{f"RAL g={g}": key for g, key in lb.DIVERGENCE_OF.items()}}

    def run(name: str, start: float, end: float, s: int) -> RunResult:  # the row's divergence, and the others flat
        own, flat = keys[name.split("/")[1]], {k: 0.3 for k in lb.DIVERGENCE_OF.values()}
        return _synthetic(
            tmp_path, name, {}, [{"step": 0, **flat, own: start}, {"step": 40, **flat, own: end + 0.001 * (s % 10)}]
        )

    test = {f"refdist/{m}/seed{s}": run(f"refdist/{m}/seed{s}", 0.3, 0.1, s) for m in rows for s in seeds}
    chosen, near = Setting(("grpo.lr=0.0001",)), Setting(("grpo.lr=5e-05",))
    choices = {("refdist", m): Choice(chosen, 0.1, near=(chosen,)) for m in rows}
    choices[("refdist", "RAL g=D")] = Choice(chosen, 0.1, near=(chosen, near))
    choices[("refdist", "RAL g=logit")] = Choice(chosen, 0.1, near=(near, chosen))
    tuning = {("refdist", m, chosen): {s: run(f"refdist/{m}/tune{s}", 0.3, 0.1, s) for s in tune_seeds} for m in rows}
    tuning[("refdist", "RAL g=D", near)] = {s: run(f"refdist/RAL g=D/near{s}", 0.3, 0.5, s) for s in tune_seeds}
    tuning[("refdist", "RAL g=logit", near)] = {s: run(f"refdist/RAL g=logit/near{s}", 0.3, 0.2, s) for s in tune_seeds}
    tuning[("refdist", "RAL g=log_D", chosen)] = {
        s: run(f"refdist/RAL g=log_D/rise{s}", 0.3, 0.4, s) for s in tune_seeds
    }
    tabs = {"refdist": lb.Table(lb.BOARDS["refdist"], rows)}

    checks = {
        c: k
        for c, k in assess(tabs, test, seeds, choices, tuning, tune_seeds).items()
        if " descends its divergence " in c
    }  # each g's own-divergence comparison is tested elsewhere
    g_d = next(c for c in checks if c.startswith("RAL g=D descends its divergence `kl_ref_mix`"))
    g_logit = next(c for c in checks if c.startswith("RAL g=logit descends its divergence `kl_pi_ref`"))
    assert len(checks) == 4 and all(c.test_word == "reproduced" for c in checks.values())
    assert not checks[g_d].holds and [where for where, *_ in checks[g_d].numbers] == [
        "chosen settings",
        "RAL g=D at `grpo.lr=5e-05`",
    ]
    assert checks[g_logit].holds and len(checks[g_logit].numbers) == 2
    g_log_d = next(c for c in checks if c.startswith("RAL g=log_D descends its divergence `kl_mix_ref`"))
    assert not checks[g_log_d].holds and [(where, ok) for where, _, ok in checks[g_log_d].numbers] == [
        ("chosen settings", False)
    ]
    assert sum(c.holds for c in checks.values()) == 2
    lines = lb.claim_lines(tabs, test, seeds, frozenset(c for c, k in checks.items() if not k.holds))
    assert any(
        line.startswith(f"| {g_d} |") and "*sensitive to tuning* (at the chosen settings: reproduced)" in line
        for line in lines
    )
    assert any(line.startswith(f"| {g_logit} |") and "| reproduced |" in line for line in lines)
    table = "\n".join(stability_lines(checks))
    assert "| RAL g=D at `grpo.lr=5e-05` | kl_ref_mix change +0.201" in table and "| **no** |" in table


def _refdist_csv(path: Path, seeds, config_hash: str = "x") -> None:
    """A refdist board's leaderboard.csv over these seeds: SFT, its positive control and two g-transforms whose
    divergences are fixed numbers (the positive control's js moves by 0.001 a seed)."""
    rows = []
    for s in seeds:
        rows += [
            {"method": "SFT", "role": "warm start", "eval/js": 0.1, "eval/kl_ref_mix": 0.2, "eval/kl_mix_ref": 0.3},
            {"method": "RLVR exact reference", "role": "positive control", "eval/js": 0.05 + 0.001 * s},
            {"method": "RAL g=D", "role": "method", "eval/kl_ref_mix": 0.1, "eval/kl_mix_ref": 0.27},
            {"method": "RAL g=log_D", "role": "method", "eval/kl_ref_mix": 0.16, "eval/kl_mix_ref": 0.18},
        ]
        for r in rows[-4:]:
            r.update(task="refdist", setting="recipe", seed=s, config_hash=config_hash, **{"time/wall_s": 60.0})
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=sorted({k for r in rows for k in r}))
        writer.writeheader()
        writer.writerows(rows)


def test_a_board_re_reported_from_its_csv_reads_each_seed_and_tells_the_g_transforms_apart(tmp_path):
    """A refdist board's CSV (3 seeds): g=D lowers its own divergence kl_ref_mix by 50% and g=log_D's by 20%;
    g=log_D lowers its own kl_mix_ref by 40% and g=D's by 10%.  From the CSV alone: each g descends its own
    divergence more than the other does (relative changes −50 − (−20) = −30 and −40 − (−10) = −30 points, the
    same every seed: a zero-width interval), the control works, and the command writes LEADERBOARD.md with
    the runs' command kept from the file it replaces."""
    out = tmp_path / "board"
    out.mkdir()
    (out / "LEADERBOARD.md").write_text(
        "`rewardzoo leaderboard --preset cpu --tasks refdist`\n\n# rewardzoo leaderboard\n"
    )
    _refdist_csv(out / "leaderboard.csv", range(3))
    tabs, seeds, wall = lb.tables_from_csv(out / "leaderboard.csv")
    assert seeds == [0, 1, 2] and wall == 720.0 and tabs["refdist"].values["RAL g=D"]["eval/kl_ref_mix"] == [0.1] * 3
    own = lb.each_g_descends_its_own_most(tabs, None, seeds)
    assert [round(f.estimate.mean, 6) for f in own] == [-0.3, -0.3] and all(
        word(f.estimate, 0.0, False) == "reproduced" for f in own
    )
    assert lb.main(["--report-from", str(out / "leaderboard.csv")]) == 0
    text = (out / "LEADERBOARD.md").read_text()
    assert text.startswith(f"`rewardzoo leaderboard --report-from {out / 'leaderboard.csv'}`")
    assert "Runs: `rewardzoo leaderboard --preset cpu --tasks refdist`" in text
    assert (
        "| RAL g=log_D lowers its own divergence `kl_mix_ref` more than the other g's do | the other g's rows | reproduced |"
        in text
    )
    assert "| positive control of `refdist`" in text and "| works | js change -0.049 [-0.051, -0.047] |" in text
    lb.main(["--report-from", str(out / "leaderboard.csv")])  # again: the runs' command is still the original one
    assert "Runs: `rewardzoo leaderboard --preset cpu --tasks refdist`" in (out / "LEADERBOARD.md").read_text()


def test_a_board_run_in_parts_over_disjoint_seeds_merges_into_the_board_of_all_its_seeds(tmp_path):
    """Seeds 0–1 in one part and seed 2 in another (``--reported-seeds 2``) merge into the report one CSV of
    seeds 0–2 gives, with both parts' training commands kept; parts that overlap, ran another configuration or
    left a method without a seed are refused before anything is written, and several CSVs need --out."""
    whole, first, second = tmp_path / "whole", tmp_path / "first", tmp_path / "second"
    _refdist_csv(whole / "leaderboard.csv", range(3))
    _refdist_csv(first / "leaderboard.csv", range(2))
    _refdist_csv(second / "leaderboard.csv", [2])
    (first / "LEADERBOARD.md").write_text("`rewardzoo leaderboard --tasks refdist --seeds 2`\n")
    (second / "LEADERBOARD.md").write_text("`rewardzoo leaderboard --tasks refdist --reported-seeds 2`\n")
    merged = tmp_path / "merged"
    assert (
        lb.main(
            ["--report-from", str(first / "leaderboard.csv"), str(second / "leaderboard.csv"), "--out", str(merged)]
        )
        == 0
    )
    lb.main(["--report-from", str(whole / "leaderboard.csv")])
    body = lambda p: (p / "LEADERBOARD.md").read_text().split("directories: the tables", 1)[1]  # noqa: E731
    assert body(merged) == body(whole) and "over 3 seed(s)" in body(merged)
    text = (merged / "LEADERBOARD.md").read_text()
    assert "Runs: `rewardzoo leaderboard --tasks refdist --seeds 2`" in text
    assert "Runs: `rewardzoo leaderboard --tasks refdist --reported-seeds 2`" in text
    assert lb.tables_from_csv(merged / "leaderboard.csv")[1] == [0, 1, 2]

    with pytest.raises(SystemExit):
        lb.main(["--report-from", str(first / "leaderboard.csv"), str(second / "leaderboard.csv")])
    with pytest.raises(ValueError, match="at seed 0 is also in"):
        lb.tables_from_csv([first / "leaderboard.csv", whole / "leaderboard.csv"])
    with pytest.raises(SystemExit):
        lb.main(
            [
                "--report-from",
                str(first / "leaderboard.csv"),
                str(whole / "leaderboard.csv"),
                "--out",
                str(tmp_path / "nothing"),
            ]
        )
    _refdist_csv(tmp_path / "other" / "leaderboard.csv", [2], config_hash="y")
    with pytest.raises(ValueError, match="only runs of the same rows and recipes merge"):
        lb.tables_from_csv([first / "leaderboard.csv", tmp_path / "other" / "leaderboard.csv"])
    rows = list(csv.DictReader(open(second / "leaderboard.csv")))
    with open(tmp_path / "short.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(r for r in rows if r["method"] != "RAL g=D")
    with pytest.raises(ValueError, match="the methods ran over different seeds"):
        lb.tables_from_csv([first / "leaderboard.csv", tmp_path / "short.csv"])
    assert not (tmp_path / "nothing").exists()  # refused before anything is written


def test_reported_seeds_name_the_board_runs_seeds(capsys):
    """``--reported-seeds 5,6`` plans seeds 5 and 6 of every row, not 0..N-1; a reported seed that is also a
    tuning seed is refused before any work."""
    assert lb.main(["--preset", "cpu", "--tasks", "multiplication", "--reported-seeds", "5,6", "--plan"]) == 0
    assert "× 2 seeds (5, 6) =" in capsys.readouterr().out
    entries = lb.board_entries("cpu", ["multiplication"])
    assert {s.name.rsplit("/", 1)[1] for s in lb.specs(entries, [5, 6], Path("runs"), False)} == {"seed5", "seed6"}
    with pytest.raises(SystemExit):
        lb.main(["--preset", "cpu", "--reported-seeds", "5,1000", "--plan"])
    assert "disjoint from the reported seeds [5, 1000]" in capsys.readouterr().err
