"""Policies: any Hugging Face causal LM by name or path, LoRA through peft, and the tiny CPU models.

The tiny-model factory builds a small Qwen3 (or Llama) from a config, with a character-level
tokenizer that is a real ``PreTrainedTokenizerFast``, so every CPU preset runs without a download.
With LoRA the reference policy is the same model with its adapters disabled
(:class:`ReferencePolicy`), never a second copy.
"""

from __future__ import annotations

import contextlib
import copy
import inspect
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import torch
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaConfig, PreTrainedTokenizerFast, Qwen3Config

from rewardzoo.core.model_store import resolve_model

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
ATTN_IMPLEMENTATIONS = ("sdpa", "eager", "flash_attention_2", "flash_attention_3", "flex_attention")
TINY_ARCHS = ("qwen3", "llama")
CHAR_SPECIAL_TOKENS = ("<pad>", "<bos>", "<eos>", "<unk>")
CHAR_ALPHABET = tuple(chr(i) for i in range(32, 127)) + ("\n",)


@dataclass
class TinyModelConfig:
    """Shape of a tiny model built from a config (used when ``model.name`` is ``tiny``)."""

    RANGES: ClassVar[dict[str, str]] = {
        "hidden_size": "[1, inf)",
        "num_layers": "[1, inf)",
        "num_heads": "[1, inf)",
        "num_kv_heads": "[1, inf)",
        "intermediate_size": "[1, inf)",
        "max_position_embeddings": "[1, inf)",
    }

    arch: str = "qwen3"
    """'qwen3' or 'llama'."""
    hidden_size: int = 128
    """Width of the residual stream."""
    num_layers: int = 4
    """Decoder layers."""
    num_heads: int = 4
    """Attention heads."""
    num_kv_heads: int = 2
    """Key/value heads (grouped-query attention)."""
    intermediate_size: int = 384
    """Width of the MLP."""
    max_position_embeddings: int = 512
    """Longest sequence the rotary embedding is built for."""

    def validate(self) -> None:
        """Raise ValueError, saying what to change, on shapes that cannot be built."""
        if self.arch not in TINY_ARCHS:
            raise ValueError(f"arch must be one of {', '.join(TINY_ARCHS)}; got {self.arch!r}")
        if self.hidden_size % self.num_heads or self.num_heads % self.num_kv_heads:
            raise ValueError(
                f"hidden_size ({self.hidden_size}) must be a multiple of num_heads ({self.num_heads}), "
                f"and num_heads a multiple of num_kv_heads ({self.num_kv_heads})"
            )


@dataclass
class LoraSettings:
    """LoRA adapters through peft (off by default: the tiny presets train all weights)."""

    RANGES: ClassVar[dict[str, str]] = {"r": "[1, inf)", "alpha": "(0, inf)", "dropout": "[0, 1)"}

    enabled: bool = False
    """Train LoRA adapters instead of all weights; the reference policy is the adapters-disabled base."""
    r: int = 16
    """Adapter rank."""
    alpha: int = 32
    """Adapter scaling numerator (scale = alpha / r)."""
    dropout: float = 0.0
    """Dropout on the adapter input."""
    target_modules: list[str] = field(default_factory=lambda: ["all-linear"])
    """Modules that get adapters; 'all-linear' means every linear layer except the output head."""


@dataclass
class ModelConfig:
    """Which policy to train."""

    name: str = "tiny"
    """'tiny' (built from ``tiny``, character tokenizer), a fetched model's name (``smollm2-135m-instruct``:
    ``rewardzoo models fetch``), or a Hugging Face model name or local path."""
    tiny: TinyModelConfig = field(default_factory=TinyModelConfig)
    """Shape of the tiny model (only used when name is 'tiny')."""
    dtype: str = "float32"
    """Parameter dtype: float32, bfloat16 or float16."""
    attn_implementation: str = "sdpa"
    """transformers attention kernel: sdpa, eager, or flash_attention_2 when installed."""
    gradient_checkpointing: bool = False
    """Recompute each block's activations in backward to save memory (also under fsdp2).  Puts the model in
    training mode, without which transformers does not checkpoint (a hub model's dropout, if it has any, is
    then active in the training forward; Qwen3's is 0)."""
    lora: LoraSettings = field(default_factory=LoraSettings)
    """LoRA settings."""

    def validate(self) -> None:
        """Raise ValueError, saying what to change, on settings that cannot run: an unknown dtype or
        attention kernel, or a ``name`` that looks like a local path (see :func:`looks_like_path`)
        but is no directory — said at once, instead of after the hub client's retries."""
        if self.dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {', '.join(DTYPES)}; got {self.dtype!r}")
        if self.attn_implementation not in ATTN_IMPLEMENTATIONS:
            raise ValueError(
                f"attn_implementation must be one of {', '.join(ATTN_IMPLEMENTATIONS)}; "
                f"got {self.attn_implementation!r}"
            )
        check_model_source(self.name, "name")


def looks_like_path(text: str) -> bool:
    """Whether ``text`` names a local file or directory rather than a hub id (``owner/name``): it
    exists, starts with ``/``, ``.`` or ``~``, or has more than one ``/``."""
    return Path(text).expanduser().exists() or text.startswith((".", "/", "~")) or text.count("/") > 1


def check_model_source(name: str, key: str) -> None:
    """Raise ValueError (naming ``key``) when a model name that looks like a local path is no directory, or
    names a known packaged model that is not fetched yet (the message names the fetch command)."""
    resolve_model(name)  # ModelNotFetched (a ValueError) names the fetch command
    if name != "tiny" and looks_like_path(name) and not Path(name).expanduser().is_dir():
        raise ValueError(
            f"{key} {name!r}: no such directory; give the directory of a model saved with "
            f"save_pretrained, a hub id such as 'Qwen/Qwen3-0.6B', or 'tiny'"
        )


def char_tokenizer(vocab_size: int = 0) -> PreTrainedTokenizerFast:
    """A character-level tokenizer over printable ASCII and newline (unknown characters → <unk>).

    ``vocab_size`` > 0 pads the vocabulary with filler tokens ``<|fill_i|>`` (never produced by
    encoding, decoded as their own text) up to that size: a model with a real LLM's vocabulary
    (e.g. 151,936) on the same text, for benchmarks of the output layer and of sampling.
    """
    chars = CHAR_SPECIAL_TOKENS + CHAR_ALPHABET
    if 0 < vocab_size < len(chars):
        raise ValueError(f"vocab_size must be 0 or at least {len(chars)} (the characters); got {vocab_size}")
    fill = tuple(f"<|fill_{i}|>" for i in range(max(vocab_size - len(chars), 0)))
    vocab = {tok: i for i, tok in enumerate(chars + fill)}
    backend = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
    backend.decoder = decoders.Fuse()
    tok = PreTrainedTokenizerFast(
        tokenizer_object=backend, pad_token="<pad>", bos_token="<bos>", eos_token="<eos>", unk_token="<unk>"
    )
    tok.padding_side = "left"
    return tok


def tiny_config(cfg: TinyModelConfig, vocab_size: int) -> Qwen3Config | LlamaConfig:
    """The transformers config of a tiny model of shape ``cfg`` (validated) over ``vocab_size`` tokens."""
    cfg.validate()
    common = dict(
        vocab_size=vocab_size,
        hidden_size=cfg.hidden_size,
        intermediate_size=cfg.intermediate_size,
        num_hidden_layers=cfg.num_layers,
        num_attention_heads=cfg.num_heads,
        num_key_value_heads=cfg.num_kv_heads,
        max_position_embeddings=cfg.max_position_embeddings,
        tie_word_embeddings=False,
        pad_token_id=0,
        bos_token_id=1,
        eos_token_id=2,
    )
    if cfg.arch == "qwen3":
        return Qwen3Config(head_dim=cfg.hidden_size // cfg.num_heads, **common)
    return LlamaConfig(**common)


def tiny_causal_lm(cfg: TinyModelConfig, vocab_size: int, seed: int = 0) -> torch.nn.Module:
    """A freshly initialised tiny causal LM, the same weights for the same ``seed`` on every machine
    (:func:`init_portable_`)."""
    config = tiny_config(cfg, vocab_size)
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = AutoModelForCausalLM.from_config(config)
    return init_portable_(model, config.initializer_range, seed)


def portable_normal_(tensor: torch.Tensor, std: float, generator: torch.Generator) -> torch.Tensor:
    """Fill ``tensor`` in place with N(0, std²) draws that are the same bits on every CPU.

    torch's own ``normal_`` draws through a vectorised Box–Muller whose float32 transcendentals
    depend on the vector width the kernels use (AVX2, AVX-512, the scalar default, ARM), so the same
    seed builds different weights on different machines.  Here the uniforms come from torch's
    scalar mt19937 path in float64, Box–Muller runs in float64, and the result is rounded once to
    the tensor's dtype: a last-bit difference of a float64 log or cos survives that rounding only
    for a value within one float64 ulp of a float32 rounding boundary (about 2⁻²⁹ per draw).
    """
    u = torch.rand((2, tensor.numel()), generator=generator, dtype=torch.float64)  # [2, n] in [0, 1)
    z = torch.sqrt(-2.0 * torch.log1p(-u[0])) * torch.cos(2.0 * math.pi * u[1])  # [n] standard normal
    with torch.no_grad():
        tensor.copy_((z * std).view(tensor.shape))
    return tensor


def init_portable_(model: torch.nn.Module, std: float, seed: int) -> torch.nn.Module:
    """Re-draw every linear and embedding weight of ``model`` as transformers initialises them —
    N(0, std²), biases and an embedding's padding row zero — with :func:`portable_normal_`, in
    module order from ``seed``, so a model built from a config is the same on every machine
    (norm weights are already exact ones).  Returns ``model``."""
    generator = torch.Generator().manual_seed(seed)
    for module in model.modules():
        if isinstance(module, (torch.nn.Linear, torch.nn.Embedding)):
            portable_normal_(module.weight.data, std, generator)
        if isinstance(module, torch.nn.Linear) and module.bias is not None:
            module.bias.data.zero_()
        if isinstance(module, torch.nn.Embedding) and module.padding_idx is not None:
            module.weight.data[module.padding_idx].zero_()
    return model


def _dtype(name: str) -> torch.dtype:
    if name not in DTYPES:
        raise ValueError(f"model.dtype must be one of {', '.join(DTYPES)}, got {name!r}")
    return DTYPES[name]


def load_tokenizer(name: str):
    """The tokenizer of a policy named as ``model.name`` takes it ('tiny', a fetched model's name, a hub id or a
    local directory; read offline when local), padding on the left with a pad token (EOS when it has none)."""
    if name == "tiny":
        return char_tokenizer()
    source = resolve_model(name)
    tokenizer = AutoTokenizer.from_pretrained(source, local_files_only=Path(source).expanduser().is_dir())
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def load_policy(cfg: ModelConfig, init_from: str | Path | None = None, seed: int = 0):
    """The policy model and its tokenizer.

    ``init_from`` (a directory written by ``save_pretrained``, e.g. an SFT warm start) takes
    precedence over ``cfg.name``.  LoRA adapters are added afterwards when enabled.  A local
    directory is read offline (``local_files_only``): it never reaches for the hub, and a directory
    holding only LoRA adapters (whose base weights are elsewhere) is refused with a clear error.
    """
    source = str(init_from) if init_from is not None else cfg.name
    if source == "tiny":
        tokenizer = char_tokenizer()
        model = tiny_causal_lm(cfg.tiny, len(tokenizer), seed).to(_dtype(cfg.dtype))
    else:
        check_model_source(source, "init_from" if init_from is not None else "model.name")
        source = resolve_model(source)
        local = Path(source).expanduser().is_dir()
        if local and (Path(source) / "adapter_config.json").exists() and not (Path(source) / "config.json").exists():
            raise ValueError(
                f"{source} holds only LoRA adapters, not a model; start from a directory with the full "
                f"weights (the SFT warm start saves merged weights) or merge the adapters first"
            )
        tokenizer = load_tokenizer(source)
        model = AutoModelForCausalLM.from_pretrained(
            source, dtype=_dtype(cfg.dtype), attn_implementation=cfg.attn_implementation, local_files_only=local
        )
    if cfg.gradient_checkpointing:
        # transformers >= 5.24 names it activation checkpointing (the old name warns)
        enable = getattr(model, "activation_checkpointing_enable", model.gradient_checkpointing_enable)
        enable()
        model.config.use_cache = False
        model.train()  # transformers checkpoints only in training mode, and from_pretrained returns eval mode
    if cfg.lora.enabled:
        model = add_lora(model, cfg.lora)
    return model, tokenizer


def add_lora(model: torch.nn.Module, cfg: LoraSettings) -> torch.nn.Module:
    """Wrap ``model`` with trainable LoRA adapters (base weights frozen)."""
    from peft import LoraConfig, get_peft_model

    targets = cfg.target_modules
    target = "all-linear" if list(targets) == ["all-linear"] else list(targets)
    lora = LoraConfig(
        r=cfg.r, lora_alpha=cfg.alpha, lora_dropout=cfg.dropout, target_modules=target, task_type="CAUSAL_LM"
    )
    return get_peft_model(model, lora)


def is_peft(model: torch.nn.Module) -> bool:
    """Whether ``model`` is a peft model (then its reference policy is the adapters-disabled base)."""
    return hasattr(model, "disable_adapter") and hasattr(model, "get_base_model")


def causal_lm(model: torch.nn.Module) -> torch.nn.Module:
    """The transformers causal LM inside a (possibly peft-wrapped) policy."""
    return model.get_base_model() if is_peft(model) else model


def cache_keyword(model: torch.nn.Module) -> str:
    """The name under which the causal LM's forward takes, and its output returns, the KV cache:
    ``cache`` from transformers 5.24 on, ``past_key_values`` before."""
    return "cache" if "cache" in inspect.signature(causal_lm(model).forward).parameters else "past_key_values"


class ReferencePolicy:
    """The frozen reference policy π_ref for the KL term.

    With LoRA it is the policy itself with adapters disabled (no copy); otherwise a frozen copy
    of the initial weights, kept on the same device.
    """

    def __init__(self, policy: torch.nn.Module):
        self.policy = policy
        self.copy = None
        if not is_peft(policy):
            self.copy = copy.deepcopy(policy).eval()
            self.copy.requires_grad_(False)

    @contextlib.contextmanager
    def active(self):
        """Yield the module to run as π_ref."""
        if self.copy is not None:
            yield self.copy
        else:
            with self.policy.disable_adapter():
                yield self.policy


def trainable_parameters(model: torch.nn.Module) -> list[tuple[str, torch.nn.Parameter]]:
    """Named parameters that the optimizer updates."""
    return [(n, p) for n, p in model.named_parameters() if p.requires_grad]
