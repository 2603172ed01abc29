"""Generation on the policy itself (``sampling.engine=hf``, the default): :class:`HFEngine`.

It works with any causal LM, peft-wrapped or not, on every device.  With the default sampler it runs
the KV-cache decode loop (``decode`` in ``rewardzoo.core.engines.decode``); with
``sampling.sampler=multinomial``, or a hub model whose generation config asks for logits processors
the loop does not apply, it calls transformers ``generate`` (batched, KV cache, left padding).
"""

from __future__ import annotations

import warnings

import torch
from einops import repeat
from transformers import LogitsProcessorList

from rewardzoo.core.engines.base import completion_mask, eos_token_ids
from rewardzoo.core.engines.config import SamplingConfig
from rewardzoo.core.engines.decode import DecodeUnsupported, decode, generate_only_settings
from rewardzoo.core.engines.sampling import InverseCDFSampler
from rewardzoo.core.types import Generation


class HFEngine:
    """Generation on the policy itself, with any causal LM, peft-wrapped or not, on any device: the
    :func:`decode` loop (default sampler), or transformers ``generate`` (``multinomial``, or a
    generation config with settings only ``generate`` applies)."""

    runs_policy = True  # the policy's own module generates: under FSDP2 its weights are gathered for it

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
        rows = repeat(torch.arange(len(prompts)), "u -> (u n)", n=n)  # [N] prompt of each row, its n rows together
        step = self.sampling.batch_size or len(rows)
        parts = [
            self._generate_rows(enc["input_ids"], enc["attention_mask"], rows[s : s + step], prompt_ids, greedy)
            for s in range(0, len(rows), step)
        ]
        return Generation.concat(parts, self.tokenizer.pad_token_id)

    def _generate_rows(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        rows: torch.Tensor,
        prompt_ids: list[list[int]],
        greedy: bool,
    ) -> Generation:
        """Completions of the call's rows ``rows`` [B] (prompt indices into ``input_ids`` [U, P], contiguous per
        prompt)."""
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
                comp = decode(
                    self.model,
                    ids,
                    mask,
                    repeats.to(device),
                    s.max_new_tokens,
                    self.eos_ids,
                    self.tokenizer.pad_token_id,
                    draw=None if greedy else self.sampler.draw,
                    min_new_tokens=min_new,
                    fast=s.fast_decode,
                )
            except DecodeUnsupported as err:
                warnings.warn(
                    f"the decode loop cannot run this model ({err}); generating with transformers generate",
                    stacklevel=2,
                )
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
