"""The first hour of a new user: the command and the Python API behave as the README and
docs/getting_started.md say — from any directory, failing before work in one line, losing nothing
to an interruption, and leaving runs that can be inspected, re-evaluated and sampled."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

import rewardzoo
from rewardzoo.core.checkpoint import keep_only_policy
from rewardzoo.core.config import ConfigError
from rewardzoo.core.logger import read_metrics
from rewardzoo.core.trainer import Trainer
from rewardzoo.core.types import RewardOutput
from rewardzoo.zoo import build_task

REPO = Path(__file__).resolve().parents[1]
HELPERS = REPO / "tests" / "helpers"


def cli(args, cwd, **kw):
    """``rewardzoo ARGS`` in a fresh process in ``cwd`` (outside the checkout), the test helpers importable."""
    env = {**os.environ, "PYTHONPATH": str(HELPERS), "OMP_NUM_THREADS": "1"}
    return subprocess.run(
        [sys.executable, "-m", "rewardzoo.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        **kw,
    )


def final(run_dir: Path) -> dict:
    """The last metrics row of a run, without timings."""
    return {k: v for k, v in read_metrics(run_dir / "metrics.jsonl")[-1].items() if not k.startswith("time/")}


def test_train_without_a_recipe_prints_usage_and_starts_nothing(tmp_path):
    out = cli(["train"], tmp_path)
    assert out.returncode == 2 and "usage: rewardzoo train" in out.stderr and "give a recipe" in out.stderr
    assert not any(tmp_path.iterdir())
    out = cli(["train", "seed=1"], tmp_path)
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "is the recipe, not an override" in out.stderr


def test_sigint_ends_the_step_with_a_checkpoint_and_the_printed_command_resumes_exactly(tmp_path, fast_overrides):
    """Ctrl-C after a few steps: exit 130, one checkpoint of the step it stopped at (checkpoint_every=0, so
    the interrupt wrote it), a printed resume command; resuming ends exactly where an uninterrupted run does."""
    args = [
        "train",
        "rlvr_multiplication",
        *fast_overrides,
        "steps=300",
        "checkpoint_every=0",
        "eval.every=0",
        f"run_dir={tmp_path / 'a'}",
    ]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "rewardzoo.cli", *args],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    metrics, deadline = tmp_path / "a" / "metrics.jsonl", time.time() + 600
    while (
        proc.poll() is None
        and time.time() < deadline
        and not (metrics.exists() and len(metrics.read_text().splitlines()) >= 3)
    ):
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 130, err[-3000:]
    stopped = int(err.split("after step ")[1].split(";")[0])
    assert 2 <= stopped < 300
    assert [p.name for p in (tmp_path / "a" / "checkpoints").iterdir()] == [f"step_{stopped:06d}"]
    resume = err.split("resume with: rewardzoo ")[1].strip().splitlines()[0]
    assert resume.endswith("resume=true")
    short = [a.replace("steps=300", f"steps={stopped + 3}") for a in resume.split()]  # three steps more
    assert cli(short, tmp_path).returncode == 0
    twin = cli(
        [a.replace("steps=300", f"steps={stopped + 3}") for a in args[:-1]] + [f"run_dir={tmp_path / 'b'}"], tmp_path
    )
    assert twin.returncode == 0, twin.stderr[-3000:]
    assert final(tmp_path / "a") == final(tmp_path / "b")


@pytest.mark.skipif(__import__("importlib").util.find_spec("wandb") is not None, reason="wandb is installed")
def test_wandb_asked_for_but_missing_fails_before_the_warm_start(tmp_path, fast_overrides):
    out = cli(
        [
            "train",
            "rlvr_multiplication",
            *fast_overrides,
            "sft.enabled=true",
            f"sft.cache_dir={tmp_path / 'sft'}",
            "logging.wandb=true",
            f"run_dir={tmp_path / 'run'}",
        ],
        tmp_path,
    )
    assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr
    assert "logging.wandb" in out.stderr and "pip install 'rewardzoo[wandb]'" in out.stderr
    assert not (tmp_path / "sft").exists() and not (tmp_path / "run").exists()


def test_a_failed_start_prints_one_line_leaves_nothing_and_a_plain_rerun_works(tmp_path, fast_overrides):
    """A NaN reward stops the run in one line (exit 1) naming the step; the run directory keeps nothing, so
    the same command with a working reward runs in it without overwrite=true — with no library progress
    bars, since logging.progress=false."""
    common = [
        "train",
        "rlvr_multiplication",
        *fast_overrides,
        "steps=2",
        "sft.enabled=true",
        "sft.steps=5",
        f"sft.cache_dir={tmp_path / 'sft'}",
        f"run_dir={tmp_path / 'run'}",
        "reward.name=callable",
    ]
    out = cli([*common, "reward.callable.functions=[dense_rewards:not_a_number]"], tmp_path)
    assert out.returncode == 1 and out.stderr.startswith(
        "rewardzoo: stopped: reward function 'not_a_number' returned non-finite"
    )
    assert "at step" in out.stderr and "Traceback" not in out.stderr and out.stderr.count("\n") == 1
    assert not (tmp_path / "run").exists() or not any((tmp_path / "run").iterdir())
    out = cli([*common, "reward.callable.functions=[dense_rewards:digit_share]"], tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "%|" not in out.stderr, f"a progress bar was printed with logging.progress=false:\n{out.stderr[-2000:]}"
    debug = cli(
        [
            "--debug",
            *common,
            "run_dir=" + str(tmp_path / "dbg"),
            "reward.callable.functions=[dense_rewards:not_a_number]",
        ],
        tmp_path,
    )
    assert debug.returncode != 0 and "Traceback" in debug.stderr


def test_a_hand_built_trainer_refuses_sft_it_cannot_run(fast_config):
    cfg = fast_config("sft.enabled=true")
    with pytest.raises(ConfigError, match=r"does not run the SFT warm start itself.*rewardzoo.train"):
        Trainer(
            cfg,
            task=build_task(cfg.task),
            reward=rewardzoo.RLVR.from_config(ctx=rewardzoo.RewardContext(task=build_task(cfg.task))),
        )


def test_eval_of_a_run_reproduces_its_final_held_out_metrics_and_writes_its_samples(fast_config, tmp_path):
    cfg = fast_config("steps=3", "eval.samples=2", "eval.every=0")
    last = rewardzoo.train(cfg)
    run_dir = Path(cfg.run_dir)
    samples = [json.loads(line) for line in (run_dir / "samples.jsonl").read_text().splitlines()]
    assert len(samples) == 2 * cfg.eval.n_examples * 2  # two evaluations (steps 0 and 3) × 2 samples × prompts
    assert set(samples[0]) >= {"step", "prompt", "completion", "answer", "reference", "correct"}
    again, out = rewardzoo.evaluate_run(run_dir)
    assert {k: v for k, v in last.items() if k.startswith("eval/")} == again
    assert out == run_dir / "eval" / "step_000003" and (out / "samples.jsonl").exists()
    cli_out = cli(["eval", str(run_dir)], tmp_path)
    assert cli_out.returncode == 0 and f'"eval/accuracy": {round(again["eval/accuracy"], 4)}' in cli_out.stdout
    keep_only_policy(run_dir)  # what a board keeps of a finished run: its trained policy, no checkpoint
    assert rewardzoo.evaluate_run(run_dir) == (again, out)


def test_generate_from_a_run_and_from_its_checkpoint_in_plain_transformers(fast_config, tmp_path):
    cfg = fast_config("steps=1")
    rewardzoo.train(cfg)
    run_dir = Path(cfg.run_dir)
    greedy = rewardzoo.generate(run_dir, ["12*3=", "45*6="], n=1, greedy=True)
    assert len(greedy) == 2 and all(len(c) == 1 for c in greedy)
    sampled = rewardzoo.generate(run_dir, ["12*3="], n=3)
    assert len(sampled[0]) == 3
    path = run_dir / "checkpoints" / "step_000001" / "policy"  # docs/getting_started.md, as printed there
    model, tokenizer = AutoModelForCausalLM.from_pretrained(path), AutoTokenizer.from_pretrained(path)
    ids = tokenizer("12*3=", return_tensors="pt").input_ids
    text = tokenizer.decode(
        model.generate(ids, max_new_tokens=cfg.sampling.max_new_tokens, do_sample=False)[0, ids.shape[1] :],
        skip_special_tokens=True,
    )
    assert text == greedy[0][0]
    out = cli(["generate", str(run_dir), "--prompt", "12*3=", "--greedy"], tmp_path)
    assert out.returncode == 0 and json.loads(out.stdout) == {"prompt": "12*3=", "completions": greedy[0]}
    keep_only_policy(run_dir)  # a board's run: the same policy, from run_dir/policy
    assert rewardzoo.generate(run_dir, ["12*3=", "45*6="], n=1, greedy=True) == greedy
    exported = rewardzoo.export(run_dir, tmp_path / "exported")
    assert AutoModelForCausalLM.from_pretrained(exported).state_dict().keys() == model.state_dict().keys()


class MeanLength:
    """A custom reward whose metric names no namespace."""

    warmup_steps = 0

    def score(self, batch):
        r = torch.tensor([float(len(c)) for c in batch.completions])
        return RewardOutput(rewards=r, components={}, metrics={"mean_len": r.mean().item()})

    def update(self, batch, out):
        return {"seen": float(len(batch))}

    def state_dict(self):
        return {}

    def load_state_dict(self, state):
        pass


def test_a_custom_reward_and_task_through_the_python_entry_point(fast_config):
    """train(..., reward=) keeps the recipe's task and settings; its un-namespaced metrics land under reward/."""
    cfg = fast_config("steps=2")
    rewardzoo.train(cfg, reward=MeanLength())
    rows = read_metrics(Path(cfg.run_dir) / "metrics.jsonl")
    assert {"reward/mean_len", "reward/seen"} <= set(rows[-1]) and "mean_len" not in rows[-1]


def test_the_getting_started_task_example_runs(tmp_path, monkeypatch):
    """docs/getting_started.md's own-task example, as printed but shortened (no warm start, 2 steps)."""
    import re

    text = (REPO / "docs" / "getting_started.md").read_text()
    code = next(block for block in re.findall(r"```python\n(.*?)```", text, re.S) if "class Reverse" in block)
    assert '"steps=10"' in code
    code = code.replace(
        '"steps=10"',
        f'"steps=2", "sft.enabled=false", "logging.progress=false", '
        f'"run_dir={tmp_path / "reverse"}", "model.tiny.hidden_size=32", '
        f'"model.tiny.intermediate_size=64", "model.tiny.num_layers=2"',
    )
    monkeypatch.chdir(tmp_path)
    scope = {"rewardzoo": rewardzoo}
    exec(compile(code, "getting_started.md", "exec"), scope)
    assert "eval/accuracy" in scope["metrics"]
