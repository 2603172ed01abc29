"""benchmarks/serve_load.py end to end at tiny sizes: the load table at two concurrency levels and the SIGKILL run."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_serve_load_writes_the_table_and_the_kill_run(tmp_path):
    out = tmp_path / "serve_load.md"
    subprocess.run(
        [
            sys.executable,
            "benchmarks/serve_load.py",
            "--out",
            str(out),
            "--requests",
            "4",
            "--clients",
            "1,4",
            "--kill-batches",
            "2",
        ],
        cwd=ROOT,
        check=True,
        timeout=600,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    text = out.read_text()
    assert text.startswith("# command: python benchmarks/serve_load.py --out")
    assert "\n| 1 | 4 |" in text and "\n| 4 | 4 |" in text
    assert "- judge_state_vs_in_process: equal" in text and "- lost_updates_reported: []" in text
    assert out.with_suffix(".json").exists()
