"""Configuration errors fail before any work, with a message that says what to change."""

import subprocess
import sys

import pytest

from rewardzoo.core.config import ConfigError, GRPOConfig, describe, field_docs
from rewardzoo.zoo import TrainConfig, load_config

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
    with pytest.raises(ConfigError, match=r"grpo.batch_size \(30\) must be a positive multiple of grpo.group_size \(8\); set grpo.batch_size=24 or 32"):
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
    out = subprocess.run([sys.executable, "-m", "rewardzoo.cli", "train", RECIPE, "grpo.group_size=1"],
                         capture_output=True, text=True)
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
