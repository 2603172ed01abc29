"""Every shipped recipe loads, names its paper setting, and is listed in algorithms/README.md; recipes
are package data, found by name from any directory."""

from pathlib import Path

import pytest

from rewardzoo.core.config import ConfigError
from rewardzoo.zoo import RECIPES_DIR as ALGORITHMS
from rewardzoo.zoo import load_config, shipped_recipe

RECIPES = sorted(ALGORITHMS.glob("*.yaml"))


def test_the_checkout_s_algorithms_folder_is_the_package_s():
    assert (Path(__file__).resolve().parents[1] / "algorithms").resolve() == ALGORITHMS


def test_there_are_recipes():
    assert len(RECIPES) >= 8


@pytest.mark.parametrize("path", RECIPES, ids=lambda p: p.stem)
def test_recipe_loads_and_is_documented(path):
    cfg = load_config(str(path))
    assert cfg.recipe.name == path.stem
    assert cfg.recipe.paper and cfg.recipe.not_reproduced, "a recipe says what it follows and what it changes"
    assert f"`{path.name}`" in (ALGORITHMS / "README.md").read_text()


def test_shipped_recipe_finds_every_recipe_from_any_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert [shipped_recipe(p.stem) for p in RECIPES] == RECIPES
    assert load_config("rlvr_multiplication").recipe.name == "rlvr_multiplication"
    with pytest.raises(ConfigError, match="Did you mean 'rlvr_multiplication'"):
        load_config("rlvr_multiplicaton")
    with pytest.raises(ConfigError, match="does not exist"):
        load_config("recipes/rlvr_multiplication.yaml")


def test_rlvr_and_ral_recipes_differ_only_in_reward_and_recipe_block():
    for ral in ALGORITHMS.glob("ral_*.yaml"):
        rlvr = ALGORITHMS / ral.name.replace("ral_", "rlvr_", 1)
        a, b = load_config(str(ral)), load_config(str(rlvr))
        for section in ("task", "model", "grpo", "sampling", "sft", "steps", "seed", "eval"):
            assert getattr(a, section) == getattr(b, section), f"{ral.name} and {rlvr.name} differ in {section}"


def test_rcrl_and_its_baselines_differ_only_in_scoring_and_schedule():
    recipes = sorted(ALGORITHMS.glob("*rubric_writing.yaml"))
    assert len(recipes) == 5
    configs = [load_config(str(p)) for p in recipes]
    switches = {(c.reward.rcrl.scoring, c.reward.rcrl.schedule) for c in configs}
    assert switches == {("pairwise", "curriculum"), ("absolute", "curriculum"), ("absolute", "all"), ("pairwise", "all"),
                        ("absolute", "dropout")}
    for c in configs[1:]:
        for section in ("task", "model", "grpo", "sampling", "sft", "steps", "seed", "eval"):
            assert getattr(c, section) == getattr(configs[0], section), f"{c.recipe.name} differs in {section}"
        assert c.reward.rcrl.judge == configs[0].reward.rcrl.judge
