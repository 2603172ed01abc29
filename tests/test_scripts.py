"""The result-writing scripts run end to end on a few-step configuration and write what they promise."""

import runpy
import sys
from pathlib import Path

import pytest
from omegaconf import OmegaConf

ROOT = Path(__file__).resolve().parents[1]


def test_report_run_writes_the_command_and_the_measured_curve(tmp_path, monkeypatch, fast_overrides):
    out = tmp_path / "report.md"
    overrides = [*fast_overrides, "steps=2", "eval.every=1", f"run_dir={tmp_path / 'run'}"]
    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(
        sys, "argv", ["report_run.py", "--out", str(out), "algorithms/rlvr_multiplication.yaml", *overrides]
    )
    try:
        runpy.run_path(str(ROOT / "scripts" / "report_run.py"), run_name="__main__")
    except SystemExit as stop:
        assert stop.code == 0
    text = out.read_text()
    assert "rewardzoo train algorithms/rlvr_multiplication.yaml" in text and "steps=2" in text
    assert "Wall time" in text and "| 2 |" in text  # the step-2 evaluation row


def test_hack_rate_script_writes_table_and_plot(tmp_path, monkeypatch, fast_overrides):
    monkeypatch.chdir(ROOT)
    script = runpy.run_path(str(ROOT / "scripts" / "hack_rate.py"))
    script["main"](
        ["--run-dir", str(tmp_path / "run"), "--out", str(tmp_path), *fast_overrides, "steps=2", "eval.every=1"]
    )
    text = (tmp_path / "hack_rate.md").read_text()
    assert "`train/hack_rate`" in text and "| 2 |" in text
    assert (tmp_path / "hack_rate.png").stat().st_size > 1000


def test_power_script_sweeps_seeds_reuses_finished_runs_and_writes_the_table(tmp_path, monkeypatch, fast_overrides):
    """Two seeds of a two-step preset: the table names the command, both seeds' gains and the target check;
    a second call finds both runs finished (``sweep_done.json``) and trains nothing."""
    monkeypatch.chdir(ROOT)
    script = runpy.run_path(str(ROOT / "benchmarks" / "power.py"))
    args = [
        "--presets",
        "multiplication",
        "--seeds",
        "0",
        "1",
        "--out",
        str(tmp_path),
        "--runs",
        str(tmp_path),
        "--override",
        *fast_overrides,
        "steps=2",
        "eval.every=1",
        "checkpoint_every=0",
    ]
    assert script["main"](args) == 0
    text = (tmp_path / "power.md").read_text()
    assert text.startswith("`python benchmarks/power.py --presets multiplication --seeds 0 1")
    assert "| multiplication | RLVR | `eval/accuracy` | 2 | 16 |" in text and "< 1,000 held-out |" in text  # 16 < 1,000
    assert (tmp_path / "power.png").stat().st_size > 1000
    logs = {p: p.stat().st_mtime for p in tmp_path.glob("multiplication/rlvr/seed*/train.log")}
    assert len(logs) == 2
    assert script["main"](args) == 0
    assert {p: p.stat().st_mtime for p in logs} == logs  # nothing was re-run


def test_judge_cost_script_writes_costs_and_fidelity(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    script = runpy.run_path(str(ROOT / "benchmarks" / "judge_cost.py"))
    assert script["main"](["--sizes", "4", "--groups", "3", "--extra-rounds", "1", "--results", str(tmp_path)]) == 0
    text = (tmp_path / "judge_cost.md").read_text()
    assert text.startswith("<!-- command: python benchmarks/judge_cost.py --sizes 4") and "| 4 | 12 | 8 | 33% |" in text


def test_rcrl_study_compares_across_the_knob_and_reuses_runs(tmp_path, monkeypatch, fast_overrides):
    """RcRL and Absolute RaR at two miscalibration levels, one seed, two steps: the table (both levels, the
    head-to-head), the cost line, the CSV and the plots; a second call trains nothing."""
    monkeypatch.chdir(ROOT)
    script = runpy.run_path(str(ROOT / "benchmarks" / "rcrl.py"))
    small = [*fast_overrides, "eval.every=1", "task.rubric_writing.n_train=200"]
    args = [
        "study",
        "--seeds",
        "0",
        "--levels",
        "0",
        "3",
        "--variants",
        "RcRL",
        "Absolute RaR",
        "--steps",
        "2",
        "--out",
        str(tmp_path / "runs"),
        "--results",
        str(tmp_path),
        "--set",
        *small,
    ]
    assert script["main"](args) == 0
    text = (tmp_path / "rcrl.md").read_text()
    assert text.startswith("<!-- command: python benchmarks/rcrl.py study --seeds 0") and "| 3 | RcRL |" in text
    assert "| 0 | Absolute RaR |" in text and "RcRL against Absolute RaR at each level" in text
    assert "s per run on average" in text and "the full size is 55 runs of 200 steps" in text
    assert (tmp_path / "rcrl.png").stat().st_size > 1000 and (tmp_path / "rcrl_curves.png").stat().st_size > 1000
    assert len((tmp_path / "rcrl.csv").read_text().splitlines()) == 1 + 4 * 3  # header + 4 runs × evals at 0, 1, 2
    logs = {p: p.stat().st_mtime for p in (tmp_path / "runs").glob("m*/*/seed0/train.log")}
    assert len(logs) == 4 and script["main"](args) == 0
    assert {p: p.stat().st_mtime for p in logs} == logs


def test_rcrl_pacing_and_generation_verification_gap(tmp_path, monkeypatch, fast_overrides):
    """One criterion trained alone for two steps (the turning-point table), and best-of-4 self-judged picks on
    six prompts (the GV-gap table with its three selectors)."""
    monkeypatch.chdir(ROOT)
    script = runpy.run_path(str(ROOT / "benchmarks" / "rcrl.py"))
    small = [*fast_overrides, "task.rubric_writing.n_train=200"]
    common = ["--out", str(tmp_path / "runs"), "--results", str(tmp_path), "--set", *small]
    assert script["main"](["pacing", "--criteria", "length_window", "--steps", "2", "--every", "1", *common]) == 0
    text = (tmp_path / "rcrl_pacing.md").read_text()
    assert "| 2 | " in text and "**Turning point: step" in text and (tmp_path / "rcrl_pacing.png").is_file()
    assert script["main"](["gv-gap", "--n", "4", "--prompts", "6", *common]) == 0
    text = (tmp_path / "rcrl_gv_gap.md").read_text()
    assert "| self-judge (frozen warm start, round robin) |" in text and "| oracle (upper bound) |" in text
    assert "ordered comparisons" in text


def test_rcrl_settings_come_from_json_or_the_boards_tuning_csv(tmp_path):
    """--settings: a JSON file of method -> overrides, or the chosen rubric-writing rows of a tuning.csv;
    an unknown method or another task's file is a clear error."""
    settings_of = runpy.run_path(str(ROOT / "benchmarks" / "rcrl.py"))["STUDY"].settings
    (tmp_path / "tuning.csv").write_text(
        "\n".join(
            [
                "task,method,setting,seed,split,value,chosen",
                "rubric_writing,RcRL,grpo.lr=2.5e-05,1000,validation,0.8,True",
                "rubric_writing,RcRL,grpo.lr=5e-05,1000,validation,0.7,False",
                "rubric_writing,Absolute RaR,recipe,1000,validation,0.7,True",
                "rubric_writing,RLVR oracle,grpo.lr=1e-4,1000,validation,0.9,True",
                "refdist,RLVR,grpo.lr=0.1,1000,validation,0.1,True",
            ]
        )
        + "\n"
    )
    assert settings_of(str(tmp_path / "tuning.csv")) == {"RcRL": ["grpo.lr=2.5e-05"], "Absolute RaR": []}
    (tmp_path / "tuned.json").write_text('{"Pairwise RaR": ["grpo.lr=1e-5"]}')
    assert settings_of(str(tmp_path / "tuned.json")) == {"Pairwise RaR": ["grpo.lr=1e-5"]}
    (tmp_path / "bad.json").write_text('{"RaR": ["grpo.lr=1e-5"]}')
    with pytest.raises(SystemExit, match="unknown methods"):
        settings_of(str(tmp_path / "bad.json"))
    (tmp_path / "refdist.csv").write_text(
        "task,method,setting,seed,split,value,chosen\nrefdist,RLVR,recipe,1000,validation,0.1,True\n"
    )
    with pytest.raises(SystemExit, match="no chosen row of task 'rubric_writing'"):
        settings_of(str(tmp_path / "refdist.csv"))


def test_ral_vs_rlvr_script_reports_gains_ratio_and_verdict(tmp_path, monkeypatch, fast_overrides):
    """RLVR and RAL, two seeds of two steps: the table (gains with intervals, the ratio and its verdict),
    the CSV and the plot; a second call reuses both variants' runs."""
    monkeypatch.chdir(ROOT)
    script = runpy.run_path(str(ROOT / "benchmarks" / "ral_vs_rlvr.py"))
    args = [
        "--variants",
        "RLVR",
        "RAL",
        "--seeds",
        "0",
        "1",
        "--out",
        str(tmp_path / "runs"),
        "--results",
        str(tmp_path),
        "--override",
        *fast_overrides,
        "steps=2",
        "eval.every=1",
        "checkpoint_every=0",
        "reward.ral.warmup_steps=1",
        "reward.ral.judge.init_from=",
        "reward.ral.judge.tiny.hidden_size=32",
        "reward.ral.judge.tiny.num_layers=1",
        "reward.ral.judge.tiny.intermediate_size=64",
    ]
    assert script["main"](args) == 0
    text = (tmp_path / "ral_vs_rlvr.md").read_text()
    assert text.startswith("<!-- command: python benchmarks/ral_vs_rlvr.py --variants RLVR RAL --seeds 0 1")
    assert "**PILOT** (4 of the full study's 47 runs)" in text  # 4 rows × 5 seeds + 9 knobs × 3
    assert "| RLVR | exact verifier (the baseline) | 2 |" in text and "| RAL | the recipe:" in text
    assert any(v in text for v in ("reached", "excluded (CI below ½)", "undecided"))
    with open(tmp_path / "ral_vs_rlvr.csv") as f:
        assert len(f.read().strip().splitlines()) == 1 + 4
    assert (tmp_path / "ral_vs_rlvr.png").stat().st_size > 1000
    logs = {p: p.stat().st_mtime for p in (tmp_path / "runs").glob("*/seed*/train.log")}
    assert len(logs) == 4 and script["main"](args) == 0
    assert {p: p.stat().st_mtime for p in logs} == logs


def test_varl_hacking_study_writes_its_tables_takes_per_method_settings_and_reuses_runs(
    tmp_path, monkeypatch, fast_overrides
):
    """RLVR on the proxy, VARL and VARL with g = log D, one seed of two steps, VARL's lr given by a settings file
    (as a tuning stage would): the controls, the end table, the AUC and g sections, the cost, the CSV and the plot;
    the settings reach VARL's run and its g variant's; a second call trains nothing."""
    monkeypatch.chdir(ROOT)
    script = runpy.run_path(str(ROOT / "benchmarks" / "varl.py"))
    settings = tmp_path / "tuned.json"
    settings.write_text('{"VARL (proxy gate)": ["grpo.lr=5e-4"]}')
    args = [
        "hacking",
        "--methods",
        "RLVR (proxy)",
        "VARL (proxy gate)",
        "VARL g=log_D",
        "--seeds",
        "0",
        "--settings",
        str(settings),
        "--out",
        str(tmp_path / "runs"),
        "--results",
        str(tmp_path),
        "--set",
        *fast_overrides,
        "steps=2",
        "eval.every=1",
        "reward.varl.warmup_steps=1",
        "reward.varl.discriminator.init_from=",
        "reward.varl.discriminator.tiny.hidden_size=32",
        "reward.varl.discriminator.tiny.num_layers=1",
    ]
    assert script["main"](args) == 0
    text = (tmp_path / "varl_hacking.md").read_text()
    assert text.startswith("<!-- command: python benchmarks/varl.py hacking --methods")
    for part in (
        "## The controls: can this testbed decide?",
        "| RLVR (proxy) | held-out `eval/hack_rate` |",
        "| VARL (proxy gate) |",
        "## Does the discriminator learn something?",
        "| D | none |",
        "| log_D | no positive affinity; unbounded |",
        "## Cost",
        "Full study (45 runs at full size, seeds 0, 1, 2, 3, 4)",
    ):
        assert part in text, part
    assert len((tmp_path / "varl_hacking.csv").read_text().splitlines()) == 1 + 3 * 3  # 3 runs × steps 0, 1, 2
    assert (tmp_path / "varl_hacking.png").stat().st_size > 1000
    dirs = list((tmp_path / "runs" / "hackable_multiplication").glob("*/*/seed0"))
    lr = {d.parent.parent.name: OmegaConf.load(d / "config.yaml").grpo.lr for d in dirs}
    assert lr == {"rlvr_proxy": 1e-3, "varl_proxy_gate": 5e-4, "varl_g_log_d": 5e-4}
    assert {d.parent.name.split("__")[0] for d in dirs} == {"recipe", "grpo.lr-5e-4"}  # the board's layout
    logs = {p: p.stat().st_mtime for p in (tmp_path / "runs").glob("**/seed0/train.log")}
    assert len(logs) == 3 and script["main"](args) == 0
    assert {p: p.stat().st_mtime for p in logs} == logs  # nothing was re-run


def test_varl_hacking_study_runs_the_board_s_rows_as_the_board_does(tmp_path):
    """Without study-wide overrides a board row's run is the leaderboard's own (same directory, same overrides),
    so the study reuses the board's finished runs; a variant adds its one override to VARL's row and chosen setting;
    a tuning.csv gives the board's choices."""
    from rewardzoo import board as lb
    from rewardzoo.protocol import Choice, Setting

    script = runpy.run_path(str(ROOT / "benchmarks" / "varl.py"))
    tuning = tmp_path / "tuning.csv"
    tuning.write_text(
        "task,method,setting,chosen\nhackable_multiplication,VARL (proxy gate),grpo.lr=0.0005,True\n"
        "hackable_multiplication,VARL (proxy gate),grpo.lr=0.001,False\n"
    )
    hacking = script["STUDIES"]["hacking"]
    settings = hacking.settings(str(tuning))
    assert settings == {"VARL (proxy gate)": ["grpo.lr=0.0005"]}
    runs = hacking.runs(tmp_path, settings, seeds=[3])
    key = lambda row: next(k for k in runs if k.row == row)  # noqa: E731
    varl = next(e for e in lb.PRESETS["cpu"] if e.method == "VARL (proxy gate)")
    board = lb.specs([varl], [3], tmp_path, False, {(varl.task, varl.method): Choice(Setting(("grpo.lr=0.0005",)))})[0]
    mine = runs[key("VARL (proxy gate)")]
    assert (mine.run_dir, mine.overrides, mine.recipe) == (board.run_dir, board.overrides, board.recipe)
    variant = runs[key("VARL, completion features")]
    assert variant.overrides == (*board.overrides[:-1], "reward.varl.features=completion", "grpo.lr=0.0005")
    shorter = hacking.runs(tmp_path, settings, seeds=[3], extra=["steps=2"])
    assert mine.run_dir != shorter[key("VARL (proxy gate)")].run_dir
    assert shorter[key("SFT")].config().steps == 0  # a study-wide step count leaves the warm start's row untrained
    with pytest.raises(SystemExit, match="no chosen row of task 'refdist'"):
        script["STUDIES"]["refdist"].settings(str(tuning))


def test_varl_hacking_controls_decide_only_when_both_intervals_exclude_zero():
    """Five synthetic seeds: RLVR on the proxy whose hack rate rises 0.02 → 0.10 (± a per-seed offset, its
    accuracy flat) and RLVR on the strict check whose accuracy rises 0.10 → 0.30: the testbed decides; with
    a flat hack rate it cannot."""
    script = runpy.run_path(str(ROOT / "benchmarks" / "varl.py"))

    def run(seed, hack_end, acc_end):
        wiggle = 0.01 * (seed - 2)
        steps = {s: 0.02 + (hack_end - 0.02) * s / 10 + wiggle for s in range(1, 11)}
        return {
            "curves": {"hack_rate": {0: 0.02, 10: hack_end + wiggle}, "accuracy": {0: 0.1, 10: acc_end + wiggle}},
            "series": {"train/hack_rate": steps},
        }

    for hack_end, decides in ((0.10, True), (0.02, False)):
        results = {
            "RLVR (proxy)": [run(s, hack_end, 0.1) for s in range(5)],
            "RLVR (strict check)": [run(s, 0.0, 0.30) for s in range(5)],
        }
        lines, verdict = script["controls"](results)
        assert verdict is decides
        assert sum("| yes, up |" in line for line in lines) == (3 if decides else 1)  # strict accuracy always rises
