"""The performance scripts run end to end at tiny sizes on the CPU and write what they promise."""

import os
import runpy
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "benchmarks"


def bench(name: str, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    """Run benchmarks/<name> with the given arguments in its own process from the repository root (output captured)."""
    return subprocess.run(
        [sys.executable, str(BENCH / name), *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout
    )


def run_script(name: str, *args: str, monkeypatch) -> None:
    """Run benchmarks/<name> as __main__ in this process with the given arguments; it must exit 0."""
    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(sys, "argv", [name, *args])
    monkeypatch.syspath_prepend(str(BENCH))
    with pytest.raises(SystemExit) as stop:
        runpy.run_path(str(BENCH / name), run_name="__main__")
    assert stop.value.code == 0


def test_gpu_throughput_tiny_on_cpu(tmp_path, monkeypatch):
    """The throughput/MFU script's Python parts (a policy step and a full train_step through the
    Trainer) at tiny sizes: both tables are written, MFU is n/a without a known peak."""
    out = tmp_path / "throughput.txt"
    run_script(
        "gpu_throughput.py", "--device", "cpu", "--tiny", "--steps", "1", "--out", str(out), monkeypatch=monkeypatch
    )
    text = out.read_text()
    assert text.startswith("# command: python benchmarks/gpu_throughput.py --device cpu --tiny")
    assert "## policy step: 16 rows x (8 prompt + 8 completion) tokens" in text and "| n/a |" in text
    assert "## full train_step: 2 prompts x 8, 4 new tokens forced (HFEngine, sampler inverse_cdf)" in text


def test_logprob_memory_compares_paths_in_bf16(capsys, monkeypatch):
    """bf16 inputs: the fused path agrees with the naive one within the bf16 tolerance."""
    run_script(
        "logprob_memory.py",
        "--device",
        "cpu",
        "--tokens",
        "48",
        "--hidden",
        "16",
        "--vocab",
        "300",
        "--dtype",
        "bfloat16",
        monkeypatch=monkeypatch,
    )
    out = capsys.readouterr().out
    assert "bfloat16" in out and "max relative difference fused vs naive" in out and "peak memory ratio" in out


@pytest.mark.slow
def test_gpu_check_smoke_runs_every_check_on_cpu(tmp_path):
    """The whole shell script with GPU_CHECK_SMOKE=1: every check is recorded ok, each output file
    starts with its command, and the environment (versions, nvidia-smi or its absence) is written."""
    env = {**os.environ, "GPU_CHECK_SMOKE": "1", "PYTHON": sys.executable}
    proc = subprocess.run(
        ["bash", str(BENCH / "gpu_check.sh"), str(tmp_path)], env=env, capture_output=True, text=True, timeout=900
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    summary = (tmp_path / "summary.txt").read_text().splitlines()
    assert [line.split(":")[1].strip() for line in summary[:-1]] == ["ok"] * 4, summary
    assert "torch" in (tmp_path / "env.txt").read_text()
    for name in ("logprob_h16_t64_float32", "logprob_h32_t64_bfloat16", "logprob_h32_t256_float32", "throughput"):
        assert (tmp_path / f"{name}.txt").read_text().startswith("# command: ")


@pytest.mark.slow
def test_grpo_vs_trl_one_step_each(tmp_path):
    """One untimed and one timed S1 step on each side (a real TRL GRPOTrainer in its own process), both on huge
    pages: the report has both rows, says each side's huge pages, and ends with the ratio line."""
    out = tmp_path / "grpo_vs_trl.txt"
    proc = bench(
        "grpo_vs_trl.py",
        "--settings",
        "S1",
        "--warmup",
        "1",
        "--steps",
        "1",
        "--huge-pages",
        "both",
        "--out",
        str(out),
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = out.read_text().splitlines()
    assert (
        lines[0]
        == "# command: python benchmarks/grpo_vs_trl.py --settings S1 --warmup 1 --steps 1 --huge-pages both --out "
        + str(out)
    )
    assert any(line.startswith("| rewardzoo |") for line in lines) and any(line.startswith("| trl |") for line in lines)
    assert lines[-1].startswith("rewardzoo/trl: speed ")
    assert "rewardzoo's grpo.release_heap: auto (the heap was not released)" in lines  # vocabulary 100: off by default
    assert "rewardzoo's recomputation in the backward pass: auto (off); heap trims: auto (off)" in lines  # memory mode
    assert (
        "CPU tensors of 2 MiB or more on huge pages (THP_MEM_ALLOC_ENABLE): rewardzoo yes, trl yes (--huge-pages both)"
        in lines
    )


@pytest.mark.slow
def test_grpo_vs_trl_moves_the_mmap_threshold(tmp_path):
    """The memory mode forced on with the mmap threshold moved to 2 MiB: the rewardzoo process reports the threshold
    it was built with; a threshold that is no positive number is refused before any side starts."""
    s1 = ["--settings", "S1", "--warmup", "1", "--steps", "1"]
    bad = bench("grpo_vs_trl.py", *s1, "--mmap-threshold", "0", timeout=120)
    assert bad.returncode == 2 and "give auto or a positive number of MiB, not '0'" in bad.stderr
    out = tmp_path / "grpo_vs_trl.txt"
    proc = bench(
        "grpo_vs_trl.py", *s1, "--release-heap", "true", "--mmap-threshold", "2", "--out", str(out), timeout=900
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = out.read_text().splitlines()
    assert "rewardzoo's grpo.release_heap: true (the heap was released; mmap threshold 2 MiB)" in lines
    assert lines[-1].startswith("rewardzoo/trl: speed ")


ONE_ROUND = ["--rounds", "1", "--steps", "1"]
"""heap_release.py at its smallest: one round of one timed step per side."""


def test_heap_release_alternates_both_sides_and_reports_the_ratio(tmp_path, fast_overrides):
    """Tiny run (no SFT): both rows of the table, the ratio line and the release points' figures."""
    out = tmp_path / "heap_release.txt"
    proc = bench("heap_release.py", *ONE_ROUND, "--out", str(out), "--override", *fast_overrides)
    assert proc.returncode == 0, proc.stderr[-3000:]
    text = out.read_text()
    assert text.startswith("# command: python benchmarks/heap_release.py --rounds 1 --steps 1")
    assert "| true | " in text and "| false | " in text
    assert "| pages faulted in a step (median) |" in text
    assert "with/without: rollout " in text and "malloc_trim" in text


def test_heap_release_compares_the_lean_forward_on_and_off(tmp_path, fast_overrides):
    """``--switch grpo.lean_forward``: the same table for that switch, and no release-point line
    (neither side releases the heap at the tiny model's vocabulary)."""
    out = tmp_path / "lean.txt"
    switch = ["--switch", "grpo.lean_forward"]
    proc = bench("heap_release.py", *ONE_ROUND, *switch, "--out", str(out), "--override", *fast_overrides)
    assert proc.returncode == 0, proc.stderr[-3000:]
    text = out.read_text()
    assert "| grpo.lean_forward | rollout s (median) |" in text and "| true | " in text and "| false | " in text
    assert "with/without: rollout " in text and "malloc_trim" not in text


@pytest.mark.slow  # two compiles of the layers: minutes on 2 cores
def test_compile_policy_times_eager_and_compiled_and_bounds_their_difference(tmp_path, fast_overrides):
    """Tiny run (no SFT): the three processes' rows, compile times, and compiled log-probs and gradients
    close to the eager ones (the script's own check of the compiled path)."""
    out = tmp_path / "compile.txt"
    proc = bench(
        "compile_policy.py",
        "--batches",
        "1",
        "--rounds",
        "1",
        "--out",
        str(out),
        "--override",
        *fast_overrides,
        timeout=1200,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    text = out.read_text()
    rows = {
        line.split("|")[1].strip(): line.split("|")[2:-1]
        for line in text.splitlines()
        if line.startswith(("| eager", "| compiled"))
    }
    assert set(rows) == {"eager", "compiled, cache empty", "compiled, cache warm"}
    for name in ("compiled, cache empty", "compiled, cache warm"):
        first, _, dlogp, dgrad = (float(x) for x in rows[name])
        assert first > 0 and dlogp < 1e-4 and dgrad < 1e-3, (name, rows[name])
    assert "eager/compiled forward + backward: " in text and "a second model instance's first compiled call" in text


def test_flop_floor_counts_and_times_each_phase(tmp_path, fast_overrides):
    """Tiny run (no SFT): a row per phase with positive FLOPs and times, and floors consistent with the
    printed rate (floor = GFLOP / rate, measured / floor = s / floor)."""
    out = tmp_path / "floor.txt"
    proc = bench("flop_floor.py", "--steps", "1", "--out", str(out), "--override", *fast_overrides, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = out.read_text().splitlines()
    assert lines[0].startswith("# command: python benchmarks/flop_floor.py --steps 1")
    rate = float(next(line for line in lines if line.startswith("matmul rate")).split(": ")[1].split()[0])
    rows = {
        cells[1].strip(): [float(c.strip().rstrip("%")) for c in cells[2:-1]]
        for cells in (line.split("|") for line in lines if line.startswith("| ") and "GFLOP a call" not in line)
    }
    assert set(rows) == {"rollout", "policy step", "evaluation"}
    for gflop, seconds, _per_s, _share, floor, ratio in rows.values():
        assert gflop > 0 and seconds > 0
        assert floor == pytest.approx(gflop / rate, rel=0.02, abs=2e-3)
        assert ratio == pytest.approx(seconds / max(floor, 1e-9), rel=0.05, abs=0.02) or floor < 5e-3


def test_board_time_splits_each_methods_runs_into_their_parts(tmp_path):
    """Two seeds of one method (hand-computed means), a tuning run counted apart, the rest = wall − parts."""
    import json

    def run(path, wall, steps):
        path.mkdir(parents=True)
        (path / "sweep_done.json").write_text(json.dumps({"wall_s": wall, "command": ["rewardzoo", "train"]}))
        (path / "metrics.jsonl").write_text("\n".join(json.dumps(s) for s in steps) + "\n")

    step = {"time/generate_s": 1.0, "time/reward_s": 0.5, "time/policy_s": 2.0}
    run(tmp_path / "runs/mult/ral/grpo.lr-0.001/seed0", 10.0, [step, step])  # parts 2 + 1 + 4, rest 3
    run(tmp_path / "runs/mult/ral/grpo.lr-0.001/seed1", 14.0, [step, step, {"eval/accuracy": 0.5}])  # rest 7
    run(tmp_path / "runs/tuning/mult/ral/grpo.lr-0.001/seed1000", 60.0, [step])
    out = tmp_path / "TIME.md"
    proc = bench("board_time.py", "--runs", str(tmp_path / "runs"), "--out", str(out), timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    text = out.read_text()
    assert "| mult | ral | 2 | 12.0 | 2.0 | 1.0 | 4.0 | 5.0 |" in text
    assert "Summed wall time: board runs 0.4 min, tuning runs 1.0 min." in text
    empty = bench("board_time.py", "--runs", str(tmp_path / "nothing"), timeout=120)
    assert empty.returncode != 0 and "no finished board run" in empty.stderr


def test_board_time_counts_one_boards_runs_when_two_boards_share_the_runs_folder(tmp_path):
    """Two boards in one --runs folder: --board keeps the runs its leaderboard.csv and tuning.csv name (a board
    run at its chosen setting, the warm start's, its own tuning seed) and drops the other board's."""
    import json

    def run(path, wall):
        path.mkdir(parents=True)
        (path / "sweep_done.json").write_text(json.dumps({"wall_s": wall}))
        (path / "metrics.jsonl").write_text(json.dumps({"time/generate_s": 1.0}) + "\n")

    runs = tmp_path / "runs"
    run(runs / "mult/ral/grpo.lr-0.001/seed0", 10.0)  # board A's choice
    run(runs / "mult/ral/grpo.lr-0.0005/seed0", 99.0)  # board B's choice
    run(runs / "mult/sft/recipe/seed0", 4.0)
    run(runs / "tuning/mult/ral/grpo.lr-0.001/seed1000", 60.0)
    run(runs / "tuning/mult/ral/grpo.lr-0.001/seed2000", 600.0)  # board B's tuning seed
    board = tmp_path / "A"
    board.mkdir()
    (board / "leaderboard.csv").write_text(
        "task,method,role,setting,seed\nmult,SFT,warm start,—,0\nmult,RAL,method,grpo.lr=0.001,0\n"
    )
    (board / "tuning.csv").write_text(
        "task,method,setting,seed,split,value,chosen\nmult,RAL,grpo.lr=0.001,1000,v,0.5,True\n"
    )
    proc = bench("board_time.py", "--runs", str(runs), "--board", str(board), timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "| mult | ral | 1 | 10.0 |" in proc.stdout and "| mult | sft | 1 | 4.0 |" in proc.stdout
    assert "Summed wall time: board runs 0.2 min, tuning runs 1.0 min." in proc.stdout


def test_tie_break_counts_the_rows_the_tie_break_moved_off_the_best_mean(tmp_path):
    """Two multiplication rows over three tuning seeds: one chose its best mean, one chose the recipe's rate
    within noise of a better mean at the lowest rate; a third setting cut by the halving (one seed) is ignored."""
    script = runpy.run_path(str(BENCH / "tie_break.py"))
    header = "task,method,setting,seed,split,value,chosen,within_noise\n"
    lines = []
    for seed, (a_hi, a_lo, b_hi, b_lo) in zip(
        (1000, 1001, 1002), ((0.5, 0.3, 0.4, 0.6), (0.6, 0.2, 0.5, 0.4), (0.55, 0.25, 0.3, 0.7))
    ):
        lines += [
            f"multiplication,A,grpo.lr=0.001,{seed},validation,{a_hi},True,True",
            f"multiplication,A,grpo.lr=0.0005,{seed},validation,{a_lo},False,False",
            f"multiplication,B,grpo.lr=0.001,{seed},validation,{b_hi},True,True",
            f"multiplication,B,grpo.lr=0.0005,{seed},validation,{b_lo},False,True",
        ]
    lines.append("multiplication,B,grpo.lr=0.002,1000,validation,0.9,False,False")  # cut after one seed
    (tmp_path / "tuning.csv").write_text(header + "\n".join(lines) + "\n")
    t = script["rows"](tmp_path / "tuning.csv")
    assert list(t.best) == ["grpo.lr=0.001", "grpo.lr=0.0005"] and list(t.within_noise) == [1, 2]
    assert list(t.best_at_edge) == ["highest", "lowest"]  # B's cut rate 0.002 still counts as one it ran
    lines = script["report"]({"toy": str(tmp_path / "tuning.csv")}, [])
    assert "| toy ([tuning.csv](../../" in lines[8] and lines[8].endswith("| 2 | 1 | 1 | 1 | 2 |")
    assert "| multiplication | B | max | grpo.lr=0.001 | 0.400 | grpo.lr=0.0005 | 0.567 | 2 | lowest |" in lines
    assert t.best_mean.round(3).tolist() == [0.55, 0.567]


@pytest.mark.slow
def test_phase_peaks_reads_every_phase_of_two_memory_settings(tmp_path):
    """Two memory settings of S1, each in its own process: every phase has a peak and an end figure for each, the
    step's peak is the largest phase peak, and a malformed setting is refused before any process starts."""
    s1 = ["--setting", "S1", "--steps", "1"]
    bad = bench("phase_peaks.py", *s1, "--memory", "auto", "trims=maybe", timeout=120)
    assert bad.returncode == 1 and "trims is auto, true or false, not 'maybe'" in bad.stderr
    out = tmp_path / "phase_peaks.md"
    proc = bench("phase_peaks.py", *s1, "--memory", "auto", "release-heap=true,mmap-threshold=2", "--out", str(out))
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = out.read_text().splitlines()
    assert lines[0].startswith("# command: python benchmarks/phase_peaks.py --setting S1")
    rows = {line.split(" | ")[0].lstrip("| "): line.strip("| ").split(" | ")[1:] for line in lines if line[:2] == "| "}
    assert list(rows)[2:] == ["rollout", "score", "forward", "backward", "optimizer", "the step's peak"]
    for setting in range(2):
        peaks = [float(rows[phase][setting].split(" / ")[0]) for phase in ("rollout", "score", "forward")]
        peaks += [float(rows[phase][setting].split(" / ")[0]) for phase in ("backward", "optimizer")]
        assert all(p > 0 for p in peaks)
        assert float(rows["the step's peak"][setting]) == pytest.approx(max(peaks), abs=1e-3)
