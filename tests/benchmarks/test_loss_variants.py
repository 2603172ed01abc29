"""benchmarks/studies/loss_variants.py end to end at a few-second size: every loss trains, the report has its rows."""

from __future__ import annotations

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "studies" / "loss_variants.py"


def test_every_loss_trains_and_is_reported(tmp_path, fast_overrides):
    """Two seeds × three losses at one step: the report opens with its command and has a row per loss."""
    spec = importlib.util.spec_from_file_location("loss_variants", SCRIPT)
    study = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(study)
    out = tmp_path / "loss_variants.md"
    argv = ["--seeds", "0", "1", "--steps", "1", "--runs", str(tmp_path / "runs"), "--out", str(out), "--override"]
    argv += [*fast_overrides, f"sft.cache_dir={tmp_path / 'sft'}"]
    assert study.main(argv) == 0
    text = out.read_text()
    assert text.startswith("# command: python benchmarks/studies/loss_variants.py --seeds 0 1 --steps 1")
    for loss in ("grpo", "gspo", "cispo"):
        assert f"| {loss} | " in text
    assert (tmp_path / "runs" / "cispo_s1" / "eval_rows.jsonl").is_file()
