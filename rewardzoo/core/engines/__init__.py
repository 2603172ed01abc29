"""Generation engines behind one protocol: ``generate(prompts, n, greedy) -> Generation`` and
``sync_weights(policy)``, which the trainer calls after every policy step.

One idea per file, lowest first:

=============  ===========================================================================
config.py      ``sampling.*`` (:class:`SamplingConfig`, :class:`VLLMConfig`) and the vLLM setup checks
base.py        the :class:`Engine` protocol, EOS ids, the completion mask
sampling.py    the inverse-CDF sampler (``sampling.sampler=inverse_cdf``)
decode.py      the HF engine's KV-cache decode loop
hf.py          :class:`HFEngine` (``sampling.engine=hf``, the default): the policy itself
vllm.py        :class:`VLLMEngine` (``sampling.engine=vllm``): a colocated vLLM engine
=============  ===========================================================================

An engine that reports the log-probs it sampled with fills ``Generation.sampling_logprobs`` and
the trainer applies truncated importance sampling.  docs/engines.md describes both engines, what is
tested and what is not.
"""

from __future__ import annotations

import torch

from rewardzoo.core.engines.base import Engine, completion_mask, eos_token_ids
from rewardzoo.core.engines.config import (
    ENGINE_NAMES,
    SAMPLERS,
    SamplingConfig,
    VLLMConfig,
    check_vllm_setup,
    import_vllm,
)
from rewardzoo.core.engines.decode import DecodeUnsupported, cache_keyword, decode, generate_only_settings
from rewardzoo.core.engines.hf import HFEngine
from rewardzoo.core.engines.sampling import InverseCDFSampler, inverse_cdf_sample
from rewardzoo.core.engines.vllm import VLLMEngine

ENGINES = {"hf": HFEngine, "vllm": VLLMEngine}
"""``sampling.engine`` → engine class (its keys are :data:`~rewardzoo.core.engines.config.ENGINE_NAMES`)."""

__all__ = [
    "ENGINES",
    "ENGINE_NAMES",
    "SAMPLERS",
    "DecodeUnsupported",
    "Engine",
    "HFEngine",
    "InverseCDFSampler",
    "SamplingConfig",
    "VLLMConfig",
    "VLLMEngine",
    "cache_keyword",
    "check_vllm_setup",
    "completion_mask",
    "decode",
    "eos_token_ids",
    "generate_only_settings",
    "import_vllm",
    "inverse_cdf_sample",
    "make_engine",
]


def make_engine(policy: torch.nn.Module, tokenizer, sampling: SamplingConfig) -> Engine:
    """The engine ``sampling.engine`` names, for this policy."""
    return ENGINES[sampling.engine](policy, tokenizer, sampling)
