"""Policies: any Hugging Face causal LM by name or path, LoRA through peft, and the tiny CPU models.

The tiny-model factory builds a small Qwen3 (or Llama) from a config, with a character-level
tokenizer that is a real ``PreTrainedTokenizerFast``, so every CPU preset runs without a download.
With LoRA the reference policy is the same model with its adapters disabled
(:func:`reference_forward`), never a second copy.
"""

from __future__ import annotations

import contextlib
import copy
from dataclasses import dataclass, field
from pathlib import Path

import torch
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaConfig, PreTrainedTokenizerFast, Qwen3Config

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
CHAR_SPECIAL_TOKENS = ("<pad>", "<bos>", "<eos>", "<unk>")
CHAR_ALPHABET = tuple(chr(i) for i in range(32, 127)) + ("\n",)


@dataclass
class TinyModelConfig:
    """Shape of a tiny model built from a config (used when ``model.name`` is ``tiny``)."""

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


@dataclass
class LoraSettings:
    """LoRA adapters through peft (off by default: the tiny presets train all weights)."""

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
    """'tiny' (built from ``tiny``, character tokenizer) or a Hugging Face model name or local path."""
    tiny: TinyModelConfig = field(default_factory=TinyModelConfig)
    """Shape of the tiny model (only used when name is 'tiny')."""
    dtype: str = "float32"
    """Parameter dtype: float32, bfloat16 or float16."""
    attn_implementation: str = "sdpa"
    """transformers attention kernel: sdpa, eager, or flash_attention_2 when installed."""
    gradient_checkpointing: bool = False
    """Recompute activations in backward to save memory."""
    lora: LoraSettings = field(default_factory=LoraSettings)
    """LoRA settings."""

    def validate(self) -> None:
        """Raise ValueError, saying what to change, on settings that cannot run."""
        if self.dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {', '.join(DTYPES)}; got {self.dtype!r}")


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


def tiny_causal_lm(cfg: TinyModelConfig, vocab_size: int, seed: int = 0) -> torch.nn.Module:
    """A freshly initialised tiny causal LM (deterministic given ``seed``)."""
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
        config = Qwen3Config(head_dim=cfg.hidden_size // cfg.num_heads, **common)
    elif cfg.arch == "llama":
        config = LlamaConfig(**common)
    else:
        raise ValueError(f"model.tiny.arch must be 'qwen3' or 'llama', got {cfg.arch!r}")
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        return AutoModelForCausalLM.from_config(config)


def _dtype(name: str) -> torch.dtype:
    if name not in DTYPES:
        raise ValueError(f"model.dtype must be one of {', '.join(DTYPES)}, got {name!r}")
    return DTYPES[name]


def load_policy(cfg: ModelConfig, init_from: str | Path | None = None, seed: int = 0):
    """The policy model and its tokenizer.

    ``init_from`` (a directory written by ``save_pretrained``, e.g. an SFT warm start) takes
    precedence over ``cfg.name``.  LoRA adapters are added afterwards when enabled.
    """
    source = str(init_from) if init_from is not None else cfg.name
    if source == "tiny":
        tokenizer = char_tokenizer()
        model = tiny_causal_lm(cfg.tiny, len(tokenizer), seed).to(_dtype(cfg.dtype))
    else:
        tokenizer = AutoTokenizer.from_pretrained(source)
        tokenizer.padding_side = "left"
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token
        model = AutoModelForCausalLM.from_pretrained(
            source, dtype=_dtype(cfg.dtype), attn_implementation=cfg.attn_implementation
        )
    if cfg.gradient_checkpointing:
        model.gradient_checkpointing_enable()
        model.config.use_cache = False
    if cfg.lora.enabled:
        model = add_lora(model, cfg.lora)
    return model, tokenizer


def add_lora(model: torch.nn.Module, cfg: LoraSettings) -> torch.nn.Module:
    """Wrap ``model`` with trainable LoRA adapters (base weights frozen)."""
    from peft import LoraConfig, get_peft_model

    targets = cfg.target_modules
    target = "all-linear" if list(targets) == ["all-linear"] else list(targets)
    lora = LoraConfig(r=cfg.r, lora_alpha=cfg.alpha, lora_dropout=cfg.dropout, target_modules=target, task_type="CAUSAL_LM")
    return get_peft_model(model, lora)


def is_peft(model: torch.nn.Module) -> bool:
    """Whether ``model`` is a peft model (then its reference policy is the adapters-disabled base)."""
    return hasattr(model, "disable_adapter") and hasattr(model, "get_base_model")


def causal_lm(model: torch.nn.Module) -> torch.nn.Module:
    """The transformers causal LM inside a (possibly peft-wrapped) policy."""
    return model.get_base_model() if is_peft(model) else model


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
