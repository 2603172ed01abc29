"""benchmarks/perf/judge_prefix.py end to end on the tiny RcRL recipe with an LM self-judge: the result file opens
with its command, has both modes' rows, and the tree reads fewer tokens at equal verdicts."""

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SMALL = [
    "reward.rcrl.judge.kind=lm",
    "sft.enabled=false",
    "grpo.batch_size=8",
    "grpo.group_size=4",
    "grpo.micro_batch_size=8",
    "sampling.max_new_tokens=6",
    "model.tiny.hidden_size=32",
    "model.tiny.intermediate_size=64",
    "model.tiny.num_layers=2",
]


def test_judge_prefix_smoke(tmp_path):
    out = tmp_path / "judge_prefix.md"
    script = ROOT / "benchmarks" / "perf" / "judge_prefix.py"
    args = ["--recipe", "rcrl_rubric_writing", "--repeats", "1", "--set", *SMALL, "--out", str(out)]
    done = subprocess.run([sys.executable, str(script), *args], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    text = out.read_text()
    assert text.startswith("Command: `python benchmarks/perf/judge_prefix.py --recipe rcrl_rubric_writing")
    whole, tree = (
        int(re.search(rf"\| 0 \| {m} \| [\d.]+ \| [\d.]+ \| (\d+) \|", text).group(1)) for m in ("whole", "tree")
    )
    assert tree < whole
    assert float(re.search(r"largest \|ΔJ\| between the modes: ([\d.e+-]+)", text).group(1)) < 1e-5
