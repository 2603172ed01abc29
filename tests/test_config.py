"""Configuration errors fail before any work, with a message that says what to change."""

import dataclasses
import functools
import math
import subprocess
import sys
import time

import pytest

from rewardzoo import recipes
from rewardzoo.core.config import ConfigError, GRPOConfig, _interval, describe, field_docs, numeric_fields
from rewardzoo.core.logger import read_metrics
from rewardzoo.zoo import REWARDS, TASKS, TrainConfig, build_task, check_with_task, load_config

RECIPE = "algorithms/rlvr_multiplication.yaml"


def test_recipe_loads_and_overrides_apply():
    cfg = load_config(RECIPE, ["seed=3", "grpo.lr=1e-5"])
    assert cfg.seed == 3 and cfg.grpo.lr == 1e-5
    assert cfg.recipe.name == "rlvr_multiplication"


def test_unknown_key_names_the_key_and_suggests():
    with pytest.raises(ConfigError) as err:
        load_config(RECIPE, ["grpo.bach_size=64"])
    msg = str(err.value)
    assert "grpo.bach_size" in msg and "grpo.batch_size" in msg and "Remove or rename" in msg


def test_unknown_top_level_key():
    with pytest.raises(ConfigError, match="unknown config key 'stpes'.*Did you mean 'steps'"):
        load_config(RECIPE, ["stpes=10"])


def test_batch_not_divisible_by_group():
    with pytest.raises(
        ConfigError,
        match=r"grpo.batch_size \(30\) must be a positive multiple of grpo.group_size \(8\); set grpo.batch_size=24 or 32",
    ):
        load_config(RECIPE, ["grpo.batch_size=30"])


def test_missing_recipe_file():
    with pytest.raises(ConfigError, match="recipe file 'nope.yaml' does not exist"):
        load_config("nope.yaml")


def test_missing_init_from_directory(tmp_path):
    with pytest.raises(ConfigError, match="init_from .* is not a directory"):
        load_config(RECIPE, [f"init_from={tmp_path / 'missing'}"])


def test_wrong_type_and_bad_choice():
    with pytest.raises(ConfigError, match="bad value"):
        load_config(RECIPE, ["grpo.batch_size=many"])
    with pytest.raises(ConfigError, match="grpo.loss_type must be one of grpo, dapo, dr_grpo"):
        load_config(RECIPE, ["grpo.loss_type=sum"])
    with pytest.raises(ConfigError, match="task.name must be one of"):
        load_config(RECIPE, ["task.name=chess"])
    with pytest.raises(ConfigError, match="key=value"):
        load_config(RECIPE, ["seed"])


def test_every_field_has_a_docstring():
    lines = describe(TrainConfig)
    undocumented = [line for line in lines if line.endswith("# ")]
    assert not undocumented, undocumented
    assert field_docs(GRPOConfig)["beta"].startswith("KL coefficient")


def test_cli_reports_config_error_without_traceback():
    out = subprocess.run(
        [sys.executable, "-m", "rewardzoo.cli", "train", RECIPE, "grpo.group_size=1"], capture_output=True, text=True
    )
    assert out.returncode == 2
    assert "config error: grpo.group_size must be >= 2 (GRPO compares completions within a group); got 1" in out.stderr
    assert "Traceback" not in out.stderr


def test_the_selected_reward_section_is_validated_before_any_work():
    with pytest.raises(ConfigError, match=r"reward\.rlvr\.verifier must be 'task' or one of"):
        load_config(RECIPE, ["reward.rlvr.verifier=fuzzy"])
    load_config(RECIPE, ["reward.ral.warmup_steps=-1"])  # an unselected section is not checked
    with pytest.raises(ConfigError, match=r"reward\.ral\.warmup_steps"):
        load_config(RECIPE, ["reward.name=ral", "reward.ral.warmup_steps=-1"])


def test_an_empty_override_value_is_the_empty_string():
    assert load_config(RECIPE, ["init_from="]).init_from == ""


# ---------------------------------------------------------------------------------------- issue 12, item 5
def sections(obj, key=""):
    """(dotted key, section) of every config dataclass under ``obj``, ``obj`` itself first."""
    yield key, obj
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        if dataclasses.is_dataclass(value):
            yield from sections(value, f"{key}.{f.name}" if key else f.name)


def bad_values(value, spec):
    """Values a numeric field must refuse: non-finite ones (floats) and the nearest ones outside its range."""
    lo, lo_closed, hi, hi_closed = _interval(spec)
    if isinstance(value, float):
        out = [math.nan, math.inf, -math.inf]
        out += [math.nextafter(lo, -math.inf) if lo_closed else lo] if math.isfinite(lo) else []
        out += [math.nextafter(hi, math.inf) if hi_closed else hi] if math.isfinite(hi) else []
    else:
        out = [int(lo) - 1 if lo_closed else int(lo)] if math.isfinite(lo) else []
        out += [int(hi) + 1 if hi_closed else int(hi)] if math.isfinite(hi) else []
    return out


def numeric_settings():
    """(dotted key, field name, default value, range) of every numeric field of every section."""
    for key, section in sections(TrainConfig()):
        for name in numeric_fields(section):
            yield f"{key}.{name}" if key else name, key, name, getattr(section, name), type(section).RANGES[name]


def test_every_numeric_field_declares_a_range():
    """A new section gets the range check by declaring RANGES (core/config.py); this lists what is missing."""
    missing, stray = [], []
    for key, section in sections(TrainConfig()):
        ranges = getattr(type(section), "RANGES", {})
        missing += [f"{key}.{name}" for name in numeric_fields(section) if name not in ranges]
        stray += [f"{key}.{name}" for name in ranges if name not in {f.name for f in dataclasses.fields(section)}]
    assert not missing and not stray, f"declare RANGES for {missing}; no such field: {stray}"


def test_every_bad_number_of_every_section_is_refused_naming_its_key():
    """Walk every numeric field (task and reward sections selected in turn) with NaN, ±inf and the
    nearest values outside its range: each is a ConfigError naming the full key, from validate()
    alone — before any model or task is built."""
    refused = 0
    for full_key, key, name, default, spec in numeric_settings():
        for bad in bad_values(default[0] if isinstance(default, list) and default else default, spec):
            cfg = TrainConfig()
            parts = key.split(".")
            if parts[0] in ("task", "reward") and len(parts) > 1 and parts[1] in (TASKS, REWARDS)[parts[0] == "reward"]:
                getattr(cfg, parts[0]).name = parts[1]  # (reward.bonuses is no reward: it applies to any)
            section = functools.reduce(getattr, parts, cfg) if key else cfg
            setattr(section, name, [bad, *default[1:]] if isinstance(default, list) else bad)
            with pytest.raises(ConfigError) as err:
                cfg.validate()
            assert full_key in str(err.value), (full_key, bad, str(err.value))
            refused += 1
    assert refused > 150


ISSUE_CASES = [
    (["grpo.generation_chunk_prompts=3"], r"grpo.generation_chunk_prompts \(3\) must divide the prompts per process"),
    (["eval.batch_size=0"], r"eval.batch_size must be >= 1; got 0"),
    (["logging.every=0"], r"logging.every must be >= 1"),
    (["sampling.batch_size=-1"], r"sampling.batch_size must be >= 0"),
    (["sampling.top_k=-1"], r"sampling.top_k must be >= 0"),
    (["grpo.weight_decay=-0.1"], r"grpo.weight_decay must be >= 0"),
    (["grpo.adam_betas=[0.9]"], r"grpo.adam_betas must be two numbers"),
    (["grpo.adam_betas=[0.9,1.0]"], r"grpo.adam_betas must be in \[0, 1\) \(each element\)"),
    (["grpo.beta=nan"], r"grpo.beta must be >= 0; got nan"),
    (["sampling.temperature=inf"], r"sampling.temperature must be > 0; got inf"),
    (["sampling.top_p=0"], r"sampling.top_p must be in \(0, 1\]"),
    (["sampling.top_p=2"], r"sampling.top_p must be in \(0, 1\]"),
    (["eval.n_examples=-1"], r"eval.n_examples must be >= 0"),
    (["grpo.logprob_chunk_size=-1"], r"grpo.logprob_chunk_size must be >= 0"),
    (["grpo.max_grad_norm=-1"], r"grpo.max_grad_norm must be >= 0"),
    (["grpo.lr=inf"], r"grpo.lr must be > 0; got inf"),
    (["model.attn_implementation=flash"], r"model.attn_implementation must be one of sdpa, eager"),
    (["task.multiplication.digits_a=0"], r"task.multiplication.digits_a must be in \[1, 1000\]"),
    (["task.multiplication.answer_format=xml"], r"task.multiplication.answer_format must be one of plain, tags"),
    (["task.name=countdown", "task.countdown.n_numbers=1"], r"task.countdown.n_numbers must be in \[2, 5\]"),
    (["task.name=user"], r"task.user.path is empty"),
    (["model.name=/no/such/model"], r"model.name '/no/such/model': no such directory"),
    (["reward.name=ral", "reward.ral.judge.model=./judges/mine"], r"reward.ral.judge.model './judges/mine': no such"),
]


@pytest.mark.parametrize("overrides, message", ISSUE_CASES, ids=[" ".join(c[0]) for c in ISSUE_CASES])
def test_the_settings_the_issue_found_are_refused_before_any_work(overrides, message):
    start = time.perf_counter()
    with pytest.raises(ConfigError, match=message):
        load_config(RECIPE, overrides)
    assert (
        time.perf_counter() - start < 10
    )  # no hub retries (tens of seconds), no model, no task; slack for a loaded machine


def test_the_checks_that_need_the_task_run_before_the_warm_start(tmp_path):
    """SFT subsets against the task's splits, and a verifier that cannot read the task's answers
    (tagged on a plain-format task trains on zero reward), fail in `recipes.train` before SFT."""
    base = [f"run_dir={tmp_path / 'run'}", f"sft.cache_dir={tmp_path / 'sft'}", "sft.steps=2"]
    for overrides, message in (
        (
            ["sft.n_examples=5000"],
            r"sft.n_examples \(5000\) with sft.disjoint_rl_prompts=true "
            r"leaves no train prompt of task.multiplication \(5000",
        ),
        (["sft.n_examples=5001", "sft.disjoint_rl_prompts=false"], r"exceeds the train split"),
        (["eval.n_examples=1001"], r"eval.n_examples \(1001\) exceeds the test split"),
        (
            ["reward.rlvr.verifier=tagged"],
            r"reward.rlvr.verifier='tagged' .* scores 0 on all of "
            r"the first 16 demonstrations",
        ),
    ):
        with pytest.raises(ConfigError, match=message):
            recipes.train(load_config(RECIPE, [*base, *overrides]))
    assert not (tmp_path / "sft").exists() and not (tmp_path / "run").exists()
    check_with_task(load_config(RECIPE, ["reward.rlvr.verifier=last_number"]), build_task(load_config(RECIPE).task))


def test_a_task_whose_data_cannot_meet_its_settings_is_a_config_error():
    with pytest.raises(ConfigError, match=r"task.multiplication: only 81 distinct pairs exist for 1×1 digits"):
        build_task(load_config(RECIPE, ["task.multiplication.digits_a=1", "task.multiplication.n_eval=100"]).task)


def test_a_start_directory_without_a_model_is_refused_at_once(tmp_path):
    """Item 4: a LoRA checkpoint's policy/ holds adapters only; starting from it would reach for the hub."""
    (tmp_path / "adapter_config.json").write_text("{}")
    with pytest.raises(ConfigError, match="holds no model .*LoRA adapters alone"):
        load_config(RECIPE, [f"init_from={tmp_path}"])
    with pytest.raises(ConfigError, match=r"reward.ral.judge.init_from .*: no such directory"):
        load_config(RECIPE, ["reward.name=ral", f"reward.ral.judge.init_from={tmp_path / 'missing'}"])


def test_train_ends_with_one_line_before_and_after_rl(tmp_path, fast_overrides, capsys):
    """The CLI's last line reads the held-out accuracy of the warm start and after RL from the run's own log."""
    from rewardzoo.cli import main

    assert (
        main(
            [
                "train",
                RECIPE,
                *fast_overrides,
                "steps=2",
                "eval.every=1",
                f"run_dir={tmp_path / 'run'}",
                f"sft.cache_dir={tmp_path / 'sft'}",
            ]
        )
        == 0
    )
    last = capsys.readouterr().out.strip().splitlines()[-1]
    rows = [r for r in read_metrics(tmp_path / "run" / "metrics.jsonl") if "eval/accuracy" in r]
    assert last.startswith(
        f"held-out accuracy: {100 * rows[0]['eval/accuracy']:.1f}% before RL (step 0) → "
        f"{100 * rows[-1]['eval/accuracy']:.1f}% after 2 RL steps"
    )
