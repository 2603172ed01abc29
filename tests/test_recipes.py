"""Every shipped recipe loads, names its paper setting, and is listed in algorithms/README.md; recipes
are package data, found by name from any directory."""

from pathlib import Path

import pytest

from rewardzoo.core.config import ConfigError, load_structured
from rewardzoo.core.model_store import HUB_VARIABLE, KNOWN_MODELS, UnknownModel, is_fetched
from rewardzoo.zoo import RECIPES_DIR as ALGORITHMS
from rewardzoo.zoo import TrainConfig, load_config, shipped_recipe

RECIPES = sorted(ALGORITHMS.glob("*.yaml"))


def load(path) -> TrainConfig:
    """``load_config(path)``; a recipe on a packaged model that is not fetched fails that with the fetch command
    named, and its values are then read without the model check; a recipe on a hub model (not in the local cache)
    fails without the network naming REWARDZOO_HUB, and loads with it."""
    values = load_structured(TrainConfig, path, None)
    if values.model.name in KNOWN_MODELS and not is_fetched(values.model.name):
        with pytest.raises(ConfigError, match=f"rewardzoo models fetch {values.model.name}"):
            load_config(str(path))
        return values
    try:
        return load_config(str(path))
    except ConfigError as err:
        if not isinstance(err.__cause__, UnknownModel) or HUB_VARIABLE not in str(err):
            raise
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(HUB_VARIABLE, "1")
        return load_config(str(path))


def test_the_checkout_s_algorithms_folder_is_the_package_s():
    assert (Path(__file__).resolve().parents[1] / "algorithms").resolve() == ALGORITHMS


def test_there_are_recipes():
    assert len(RECIPES) >= 8


@pytest.mark.parametrize("path", RECIPES, ids=lambda p: p.stem)
def test_recipe_loads_and_is_documented(path):
    cfg = load(path)
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
        a, b = load(ral), load(rlvr)
        for section in ("task", "model", "grpo", "sampling", "sft", "steps", "seed", "eval"):
            assert getattr(a, section) == getattr(b, section), f"{ral.name} and {rlvr.name} differ in {section}"


def test_rcrl_and_its_baselines_differ_only_in_scoring_and_schedule():
    recipes = sorted(ALGORITHMS.glob("*rubric_writing.yaml"))
    assert len(recipes) == 5
    configs = [load_config(str(p)) for p in recipes]
    switches = {(c.reward.rcrl.scoring, c.reward.rcrl.schedule) for c in configs}
    assert switches == {
        ("pairwise", "curriculum"),
        ("absolute", "curriculum"),
        ("absolute", "all"),
        ("pairwise", "all"),
        ("absolute", "dropout"),
    }
    for c in configs[1:]:
        for section in ("task", "model", "grpo", "sampling", "sft", "steps", "seed", "eval"):
            assert getattr(c, section) == getattr(configs[0], section), f"{c.recipe.name} differs in {section}"
        assert c.reward.rcrl.judge == configs[0].reward.rcrl.judge


@pytest.mark.parametrize("path", sorted(ALGORITHMS.glob("*_smollm2.yaml")), ids=lambda p: p.stem)
def test_real_model_recipes_train_lora_in_chat_form_at_a_real_model_s_temperature(path):
    cfg = load(path)
    assert cfg.model.name == "smollm2-135m-instruct" and cfg.model.lora.enabled and cfg.model.dtype == "float32"
    assert cfg.task.chat and 0.5 <= cfg.sampling.temperature <= 1.0  # not the tiny presets' 1.5-2 (word salad)
    assert cfg.sft.enabled == (cfg.task.name == "hackable_multiplication")  # the strict format needs a warm start
    assert all(line.startswith("⚠️") for line in cfg.recipe.not_reproduced)


def test_the_your_own_model_page_names_every_real_model_recipe_and_the_fetch_command():
    page = (ALGORITHMS.parents[1] / "docs" / "your_own_model.md").read_text()
    for path in ALGORITHMS.glob("*_smollm2.yaml"):
        assert f"`{path.stem}`" in page
    assert "rewardzoo models fetch smollm2-135m-instruct" in page and "make test-real" in page
