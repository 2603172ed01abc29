"""The sweep: the job order (each run after its own warm start, a failed warm start skips only its runs),
and runs forked from the fork server computing exactly what a fresh ``python -m rewardzoo.cli`` process does."""

import json
import os
import subprocess
import sys
import threading

import pytest

from rewardzoo.core.logger import read_metrics
from rewardzoo.sweep import DONE, THREAD_ENV, Job, RunSpec, run_jobs, run_sweep


def test_a_run_starts_when_its_own_warm_start_is_trained():
    """Two workers, two warm starts: the second warm start's run must start while the first warm start
    is still training (a two-phase sweep — every warm start, then every run — would wait here)."""
    second_run_started = threading.Event()
    order = []

    def work(job: Job) -> bool:
        order.append(job.key)
        if job.key == "sft-a":
            assert second_run_started.wait(timeout=10), "the run of sft-b waited for sft-a"
        if job.key == "run-b":
            second_run_started.set()
        return True

    plan = [Job("sft-a"), Job("sft-b"), Job("run-a", ("sft-a",)), Job("run-b", ("sft-b",)), Job("plain")]
    state = run_jobs(plan, 2, work)
    assert state == dict.fromkeys(("sft-a", "sft-b", "run-a", "run-b", "plain"), "done")
    assert order.index("run-b") < order.index("run-a")


def test_one_worker_takes_the_first_ready_job_in_order():
    order = []
    state = run_jobs(
        [Job("s"), Job("r1", ("s",)), Job("x"), Job("r2", ("s",))], 1, lambda j: order.append(j.key) or True
    )
    assert order == ["s", "r1", "x", "r2"] and set(state.values()) == {"done"}


def test_a_failed_warm_start_skips_its_runs_only():
    order = []

    def work(job: Job) -> bool:
        order.append(job.key)
        return job.key != "sft-bad"

    state = run_jobs([Job("sft-bad"), Job("sft-ok"), Job("a", ("sft-bad",)), Job("b", ("sft-ok",))], 2, work)
    assert state == {"sft-bad": "failed", "sft-ok": "done", "a": "skipped", "b": "done"}
    assert "a" not in order


def test_an_exception_in_a_job_fails_it_and_is_raised_after_the_others():
    order = []

    def work(job: Job) -> bool:
        order.append(job.key)
        if job.key == "boom":
            raise OSError("disk full")
        return True

    with pytest.raises(OSError, match="disk full"):
        run_jobs([Job("boom"), Job("after", ("boom",)), Job("other")], 1, work)
    assert order == ["boom", "other"]


def _tiny(fast_overrides):
    return [*fast_overrides, "steps=2", "eval.every=1", "checkpoint_every=0"]


def test_a_forked_run_computes_what_a_fresh_process_computes(tmp_path, fast_overrides):
    spec = RunSpec(
        "mult/rlvr/seed1",
        "algorithms/rlvr_multiplication.yaml",
        tmp_path / "forked",
        (*_tiny(fast_overrides), "seed=1"),
    )
    results = run_sweep([spec], jobs=1, progress=False)
    assert json.loads((spec.run_dir / DONE).read_text())["wall_s"] > 0
    fresh = RunSpec(spec.name, spec.recipe, tmp_path / "fresh", spec.overrides)
    subprocess.run(fresh.command(), check=True, capture_output=True, env={**os.environ, **THREAD_ENV})

    def computed(rows):
        return [{k: v for k, v in r.items() if not k.startswith("time/")} for r in rows]

    forked = computed(results[spec.name].rows)
    assert len(forked) == 3 and "eval/accuracy" in forked[-1]
    assert forked == computed(read_metrics(fresh.run_dir / "metrics.jsonl"))


def test_a_run_that_fails_is_named_with_its_log_and_the_others_finish(tmp_path, fast_overrides):
    good = RunSpec("good", "algorithms/rlvr_multiplication.yaml", tmp_path / "good", tuple(_tiny(fast_overrides)))
    (tmp_path / "empty").mkdir()  # passes the config check (a directory with a config.json), fails in the run
    (tmp_path / "empty" / "config.json").write_text("{not json")
    bad = RunSpec(
        "bad",
        "algorithms/rlvr_multiplication.yaml",
        tmp_path / "bad",
        (*_tiny(fast_overrides), f"init_from={tmp_path / 'empty'}"),
    )
    with pytest.raises(RuntimeError, match=r"these runs failed: bad \(train, exit 1, log .*bad/train\.log\)"):
        run_sweep([bad, good], jobs=2, progress=False)
    assert (good.run_dir / DONE).is_file() and not (bad.run_dir / DONE).exists()
    assert "Traceback" in (bad.run_dir / "train.log").read_text()


def test_a_run_whose_fork_server_dies_keeps_the_status_it_recorded(tmp_path):
    """The fork server is killed while a run's process works: multiprocessing can no longer pass the
    status on (it reports 255), so the sweep waits for the process and takes the status it wrote."""
    import multiprocessing.forkserver as fs
    import signal
    import time

    from rewardzoo.sweep import LOST_STATUS, _run

    (tmp_path / "slow_exit.py").write_text("import sys, time\ntime.sleep(2)\nsys.exit(3)\n")
    sys.path.insert(0, str(tmp_path))
    try:
        got: list[tuple[int, float]] = []
        runner = threading.Thread(target=lambda: got.append(_run([], tmp_path / "log", module="slow_exit")))
        runner.start()
        deadline = time.monotonic() + 120
        while not (tmp_path / "log").exists() and time.monotonic() < deadline:
            time.sleep(0.1)  # the server starts (it imports the package), then forks the run's process
        time.sleep(0.5)
        os.kill(fs._forkserver._forkserver_pid, signal.SIGKILL)
        runner.join(60)
    finally:
        sys.path.remove(str(tmp_path))
        fs._forkserver._stop()  # the next sweep starts a fresh server
    assert got and got[0][0] == 3 != LOST_STATUS
    assert (tmp_path / "log.status").read_text() == "3"


def test_the_executor_flags_build_one_executor_and_refuse_what_cannot_work(monkeypatch):
    """``--executor``/``--address`` as every sweep's command line adds them: local by default with ``--jobs``;
    ``--address`` without ``--executor ray`` refused; ``--executor ray`` without Ray names the extra."""
    import argparse

    from rewardzoo.sweep import LocalExecutor, add_executor_arguments, executor_from_args

    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=2)
    add_executor_arguments(parser)
    local = executor_from_args(parser.parse_args(["--jobs", "3"]))
    assert isinstance(local, LocalExecutor) and local.jobs == 3
    with pytest.raises(ValueError, match="--address is the Ray cluster's"):
        executor_from_args(parser.parse_args(["--address", "10.0.0.1:6379"]))
    monkeypatch.setitem(sys.modules, "ray", None)  # as without the extra: ``import ray`` raises ImportError
    with pytest.raises(ImportError, match=r"pip install 'rewardzoo\[ray\]'"):
        executor_from_args(parser.parse_args(["--executor", "ray"]))


def test_the_leaderboard_and_the_studies_take_the_executor_flags(capsys):
    import runpy

    from rewardzoo.board.command import main

    assert main(["--plan", "--quick", "--executor", "local"]) == 0
    for script, argv in [
        ("varl.py", ["hacking", "--help"]),
        ("varl.py", ["refdist", "--help"]),
        ("rcrl.py", ["study", "--help"]),
        ("ral_capacity.py", ["--help"]),
        ("ral_vs_rlvr.py", ["--help"]),
    ]:
        capsys.readouterr()
        with pytest.raises(SystemExit):
            runpy.run_path(f"benchmarks/{script}", run_name="study")["main"](argv)
        out = capsys.readouterr().out
        assert "--executor {local,ray}" in out and "--address" in out, script
