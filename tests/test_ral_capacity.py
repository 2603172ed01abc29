"""benchmarks/ral_capacity.py: the verification-AUC measurement against a hand computation, and a tiny
end-to-end study through every stage (temperature, judge levels, AUCs, the sweep, the judge over
training, the tables and the plot)."""

import csv
import importlib.util
import json
import math
import sys
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from rewardzoo.core.models import TinyModelConfig
from rewardzoo.judges.classifier import JudgeConfig, SequenceJudge
from rewardzoo.judges.pretrain import JudgePretrainConfig

ROOT = Path(__file__).resolve().parents[1]
TINY = TinyModelConfig(hidden_size=32, num_layers=1, num_heads=2, num_kv_heads=1, intermediate_size=64)


@pytest.fixture
def study(monkeypatch):
    """The study module, imported from benchmarks/ (it is a script, not part of the package)."""
    spec = importlib.util.spec_from_file_location("ral_capacity", ROOT / "benchmarks" / "ral_capacity.py")
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "ral_capacity", module)  # its dataclasses resolve their annotations there
    spec.loader.exec_module(module)
    return module


def test_verification_auc_counts_right_over_wrong_pairs(study):
    """Two right, three wrong answers: AUC = (pairs where the right answer's logit is higher, ties ½) / 6."""
    judge = SequenceJudge.build(JudgeConfig(tiny=TINY, readout="lm_likelihood"), seed=0)
    prompts, answers = ["12*3="] * 5, ["36", "35", "3", "360", "63"]
    correct = [True, False, True, False, False]
    z = judge.logit_reference(prompts, answers).tolist()
    right = [v for v, c in zip(z, correct) if c]
    wrong = [v for v, c in zip(z, correct) if not c]
    wins = sum(float(r > w) + 0.5 * float(r == w) for r in right for w in wrong)
    assert study.verification_auc(judge, study.Probe(prompts, answers, correct, [])) == pytest.approx(wins / 6)


def tiny_overrides(tmp_path: Path) -> list[str]:
    """Every run of a tiny study: a 6-example task, a 1-layer model, 2 warm-up rounds."""
    return [
        "task.multiplication.n_train=80",
        "task.multiplication.n_eval=6",
        "task.multiplication.scratchpad=false",
        "task.multiplication.n_validation=6",
        "sft.steps=20",
        "sft.n_examples=40",
        "sft.batch_size=32",
        "sft.lr=1e-2",
        "sft.warmup_steps=2",
        f"sft.cache_dir={tmp_path / 'sft'}",
        "grpo.batch_size=8",
        "grpo.micro_batch_size=8",
        "grpo.group_size=4",
        "grpo.warmup_steps=0",
        "sampling.max_new_tokens=6",
        "eval.n_examples=6",
        "logging.tensorboard=false",
        "reward.ral.warmup_steps=2",
        *[f"model.tiny.{k}={v}" for k, v in vars(TINY).items()],
    ]


def test_a_tiny_study_runs_every_stage(study, tmp_path, monkeypatch):
    monkeypatch.setattr(
        study,
        "LEVELS",
        {
            "scratch": study.Level("tiny judge, random init", tiny=TINY),
            "pre": study.Level(
                "tiny judge, 3 pretraining steps", JudgePretrainConfig(tiny=TINY, steps=3, batch_size=8)
            ),
        },
    )
    monkeypatch.setattr(study, "TEMPERATURES", (1.0,))
    tiny = tiny_overrides(tmp_path)
    out = tmp_path / "out"
    code = study.main(
        [
            "--seeds",
            "0",
            "--steps",
            "2",
            "--every",
            "1",
            "--levels",
            "scratch",
            "pre",
            "--frozen",
            "pre",
            "--runs",
            str(tmp_path / "runs"),
            "--out",
            str(out),
            "--judge-cache",
            str(tmp_path / "judges"),
            "--jobs",
            "2",
            "--full-size",
            "2",
            "4",
            "2",
            "--override",
            *tiny,
        ]
    )
    assert code == 0
    md = (out / "ral_capacity.md").read_text()
    assert md.startswith("<!-- command: python benchmarks/ral_capacity.py --seeds 0")  # the shared header
    assert md.splitlines()[2].endswith("PILOT (reduced size: a check of the study, not a result)")  # 1 seed, not 2
    for method in ("RAL format-only", "RAL scratch", "RAL pre", "RAL pre frozen judge"):
        assert f"| {method} |" in md
    assert "Estimated full size (2 seeds × 4 steps × 5 methods = 10 runs;" in md
    assert "| no verdict (n = 1 seed < 3) |" in md
    with open(out / "ral_capacity_judges.csv") as f:  # the board's level: the best validation AUC, chosen before RL
        warm = {j["level"]: float(j["auc_warm"]) for j in csv.DictReader(f) if j["readout"] == "lm_likelihood+eos"}
    level = max(warm, key=lambda n: (math.isfinite(warm[n]), warm[n] if math.isfinite(warm[n]) else 0.0))
    board = md.split(f"## The board's RAL rows at the study's settings: T = 1.0, KL β = 0.04, judge `{level}`")[1]
    board = board.split("\n## Does")[0]
    assert "highest verification AUC on validation prompts" in md
    for row in ("RLVR", "RAL", "RAL format-only", *(["RAL frozen judge"] if level == "pre" else [])):
        assert f"| {row} |" in board
    assert "| RAL reaches at least half of RLVR's held-out gain (RAL paper: about parity) | RLVR |" in board
    assert (out / "ral_capacity.png").stat().st_size > 0
    with open(out / "ral_capacity_judges.csv") as f:
        judges = list(csv.DictReader(f))
    assert {(j["level"], j["readout"]) for j in judges} == {
        (lv, r) for lv in ("scratch", "pre") for r in study.READOUTS
    }
    with open(out / "ral_capacity.csv") as f:
        assert {r["method"] for r in csv.DictReader(f)} == {
            "RLVR",
            "RAL format-only",
            "RAL scratch",
            "RAL pre",
            "RAL pre frozen judge",
        }
    over = json.loads((tmp_path / "runs" / "ral_pre" / "seed0" / "judge_auc.json").read_text())
    assert set(over) == {"1", "2"} and set(over["2"]) == {"probe_auc", "policy_auc"}
    rows = [
        json.loads(line)
        for line in (tmp_path / "runs" / "ral_pre" / "seed0" / "metrics.jsonl").read_text().splitlines()
    ]
    assert any("judge/auc" in r and "judge/calibration_scale" in r for r in rows)
    with pytest.raises(SystemExit):
        study.main(["--settings", "[1, 2]"])


def test_settings_come_from_the_boards_tuning_csv(study, tmp_path):
    """The chosen multiplication rows of a tuning stage's tuning.csv become the study's per-method settings."""
    rows = [
        "task,method,setting,seed,split,value,chosen",
        "multiplication,RLVR,grpo.lr=0.001,1000,validation,0.5,False",
        "multiplication,RLVR,grpo.lr=0.00025,1000,validation,0.6,True",
        "multiplication,RAL,grpo.lr=0.0005 reward.ral.judge.lr=0.003,1000,validation,0.2,True",
        "multiplication,RAL format-only,recipe,1000,validation,0.1,True",
        "refdist,RLVR,grpo.lr=0.1,1000,validation,0.1,True",
    ]
    (tmp_path / "tuning.csv").write_text("\n".join(rows) + "\n")
    assert study.settings_of(str(tmp_path / "tuning.csv")) == {
        "RLVR": ["grpo.lr=0.00025"],
        "RAL": ["grpo.lr=0.0005", "reward.ral.judge.lr=0.003"],
        "RAL format-only": [],
    }
    (tmp_path / "other.csv").write_text(rows[0] + "\n" + rows[-1] + "\n")
    with pytest.raises(SystemExit, match="no chosen row of task 'multiplication'"):
        study.settings_of(str(tmp_path / "other.csv"))


def test_tune_runs_the_protocols_tuning_stage_at_the_studys_settings(study, tmp_path, monkeypatch):
    """--tune: every board row over the grid on the validation split, at the study's T and β; the board
    runs train the choices (the RAL row's for every RAL run, each control's own on top)."""
    monkeypatch.setattr(study, "LEVELS", {"scratch": study.Level("tiny judge, random init", tiny=TINY)})
    monkeypatch.setattr(study, "TEMPERATURES", (1.0,))
    out, runs = tmp_path / "out", tmp_path / "runs"
    assert (
        study.main(
            [
                "--tune",
                "--lr-factors",
                "1",
                "0.5",
                "--seeds",
                "0",
                "--steps",
                "2",
                "--every",
                "1",
                "--levels",
                "scratch",
                "--frozen",
                "--temperature",
                "1.5",
                "--runs",
                str(runs),
                "--out",
                str(out),
                "--jobs",
                "2",
                "--override",
                *tiny_overrides(tmp_path),
            ]
        )
        == 0
    )
    with open(out / "ral_capacity_tuning" / "tuning.csv") as f:
        tuning = list(csv.DictReader(f))
    assert {r["method"] for r in tuning} == set(study.BOARD_ROWS)
    reachable = {f"grpo.lr={lr}" for lr in (0.004, 0.002, 0.001, 0.0005, 0.00025, 0.000125)}
    assert {"grpo.lr=0.001", "grpo.lr=0.0005"} <= {r["setting"] for r in tuning} <= reachable  # edges left, bounded
    assert {r["seed"] for r in tuning} == {"1000", "1001", "1002"}  # the board's three tuning seeds
    assert len({(r["method"], r["setting"]) for r in tuning if r["chosen"] == "True"}) == len(study.BOARD_ROWS)
    chosen = {r["method"]: r["setting"].removeprefix("grpo.lr=") for r in tuning if r["chosen"] == "True"}
    saved = OmegaConf.load(next((runs / "tuning" / "multiplication" / "ral").glob("*/seed1000")) / "config.yaml")
    assert saved.eval.split == "validation" and saved.sampling.temperature == 1.5 and saved.grpo.beta == 0.04
    assert saved.reward.ral.judge.readout == "lm_likelihood"  # the study's readout, at the top level
    for method, run in (("RLVR", "rlvr"), ("RAL format-only", "ral_format_only"), ("RAL", "ral_scratch")):
        [tuned] = runs.glob(f"{run}-*/seed0")  # the study layout: a row's directory names a hash of its settings
        cfg = OmegaConf.load(tuned / "config.yaml")
        assert float(cfg.grpo.lr) == float(chosen[method]) and cfg.eval.split == "test"
    assert "chosen by the study's tuning stage" in (out / "ral_capacity.md").read_text()
    with pytest.raises(SystemExit, match="not both"):
        study.main(["--tune", "--settings", "{}"])
