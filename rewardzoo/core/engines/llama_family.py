"""A lean no-grad forward of Llama-family decoders for the decode loop: the same math as the
transformers modules, in fewer operations.

A decode step of a small model is mostly per-operation overhead: at the presets' tiny Qwen3 (64
rows, one new token each) the transformers forward spends more time in module calls, mask building,
rotary recomputation and cache bookkeeping than in its matrix products.  For the families whose layer
is exactly

    x = h + o_proj(attention(rope(norm_q(q_proj(rms(h)))), rope(norm_k(k_proj(rms(h)))), v_proj(rms(h))))
    h = x + down_proj(silu(gate_proj(rms(x))) · up_proj(rms(x)))

(Llama, Mistral, Qwen2, Qwen3: ``FAMILIES`` in ``rewardzoo.core.lean_layers``, which holds the family
check and the operations this forward shares with the training one; the per-head q/k norms are Qwen3's)
:class:`LlamaFamilyStepper` runs that math on the model's own weights, with

* the rotary cos/sin of every position of the call computed once (by the model's own rotary module),
  then looked up per step;
* one preallocated key/value buffer for all layers, written in place each step; finished rows leave it
  with one index per step, not one per layer;
* the attention mask built from the padding mask directly, and grouped-query attention computed as
  transformers' sdpa path does under a mask (a single query position becomes the R query heads of
  each key/value head; a prompt's keys and values are repeated per query head);
* the norm as torch's fused ``rms_norm``, and only the last position's logits.

It gives transformers' logits bit for bit, and so its tokens: ``tests/core/test_llama_family.py``
runs the tiny Qwen3, Llama, Qwen2 and Mistral both ways (prefill, steps, retired rows) under every
``ATEN_CPU_CAPABILITY``.  Exactness needs the same kernels on the same shapes: each prompt's logits
are computed once and then copied to its rows, and a prompt's keys and values are repeated per
query head, as transformers' sdpa path does under a mask, and the head multiplies the last position's
slice of the normed sequence, the layout transformers gives it (another layout rounded 6e-8 apart in a
test).  A peft LoRA policy runs here too: each adapted projection goes through
:func:`~rewardzoo.core.lean_layers.project`, the operations peft's forward runs.  Anything else — another
family, a rope type other than a static one, a sliding window the call reaches, another attention kernel
than ``sdpa``, weights that are neither plain ``nn.Linear`` nor a LoRA layer ``project`` can run, a module
with forward hooks (the lean forward calls no module) — gets
:func:`~rewardzoo.core.lean_layers.why_not_llama_family`'s reason and the transformers forward
(``TransformersStepper`` in ``rewardzoo.core.engines.decode``).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from rewardzoo.core.lean_layers import mlp_residual, project, rms_norm, rotate


class LlamaFamilyStepper:
    """Prefill, decode steps and row retirement of one decode call (see the module docstring).

    ``prefill`` runs the U left-padded prompts and copies their keys and values to the call's rows;
    each ``step`` runs one token per live row; ``retire`` keeps the rows that go on.  Positions count
    non-pad tokens, as the decode loop gives them."""

    def __init__(self, model: torch.nn.Module, max_length: int):
        self.model, self.decoder = model, model.get_decoder()
        config = model.config
        self.kv_heads = config.num_key_value_heads
        self.head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
        self.qk_norm = hasattr(self.decoder.layers[0].self_attn, "q_norm")
        self.max_length = max_length
        first = next(model.parameters())
        positions = torch.arange(max_length, device=first.device).unsqueeze(0)  # [1, L]
        cos, sin = self.decoder.rotary_emb(first, positions)  # [1, L, D] each, the model's own rotary module
        self.cos, self.sin = cos[0], sin[0]  # [L, D]
        self.kv = first.new_empty(0)  # [layers, k/v, A, kv heads, L, D] once prefilled
        self.length = 0  # cache positions written so far

    def prefill(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, position: torch.Tensor, rows: torch.Tensor
    ) -> torch.Tensor:  # [U, P] ×3, [B] -> [B, V]
        """The last prompt position's logits of every row (prompt ``rows[i]`` for row i)."""
        P = input_ids.shape[1]
        causal = torch.ones(P, P, dtype=torch.bool, device=input_ids.device).tril()  # [P, P]
        pad = attention_mask.bool()  # [U, P]
        # a padding query sees itself, so no row of the mask is empty (its output is never used)
        mask = (pad[:, None, None, :] & causal) | torch.eye(P, dtype=torch.bool, device=pad.device)  # [U, 1, P, P]
        shape = (len(self.decoder.layers), 2, input_ids.shape[0], self.kv_heads, self.max_length, self.head_dim)
        self.kv = self.kv.new_empty(shape)  # [layers, 2, U, kv heads, L, D]
        h = self._forward(input_ids, position, mask)  # [U, P, H]
        self.kv = self.kv[:, :, rows]  # [layers, 2, B, kv heads, L, D]
        return self._logits(h)[rows]  # [B, V] each prompt's logits once, as transformers computes them

    def step(self, token: torch.Tensor, attention_mask: torch.Tensor, position: torch.Tensor) -> torch.Tensor:
        """Logits [A, V] of one new token per live row (``token`` [A], ``attention_mask`` [A, P + t + 1],
        ``position`` [A, 1])."""
        mask = attention_mask.bool()[:, None, None, :]  # [A, 1, 1, P + t + 1]
        return self._logits(self._forward(token.unsqueeze(1), position, mask))  # [A, V]

    def retire(self, keep: torch.Tensor) -> None:
        """Keep only the live rows ``keep`` [A'] (indices into the current rows)."""
        self.kv = self.kv[:, :, keep]  # one index for every layer's keys and values

    def _forward(self, ids: torch.Tensor, position: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """The decoder over ``ids`` [A, S] at ``position`` [A, S] with ``mask`` [A, 1, S, L'], writing the
        keys and values to the buffer after the ones written so far; the final hidden states [A, S, H]
        before the last norm."""
        start, S = self.length, ids.shape[1]
        kv = self.kv
        end = start + S
        cos, sin = self.cos[position].unsqueeze(1), self.sin[position].unsqueeze(1)  # [A, 1, S, D] each
        h = F.embedding(ids, self.decoder.embed_tokens.weight)  # [A, S, H]
        A, D = ids.shape[0], self.head_dim
        for i, layer in enumerate(self.decoder.layers):
            a = layer.self_attn
            x = rms_norm(h, layer.input_layernorm)  # [A, S, H]
            q = project(x, a.q_proj).view(A, S, -1, D)  # [A, S, heads, D]
            k = project(x, a.k_proj).view(A, S, -1, D)  # [A, S, kv heads, D]
            v = project(x, a.v_proj).view(A, S, -1, D).transpose(1, 2)  # [A, kv heads, S, D]
            if self.qk_norm:
                q, k = rms_norm(q, a.q_norm), rms_norm(k, a.k_norm)
            q = rotate(q.transpose(1, 2), cos, sin)  # [A, heads, S, D]
            kv[i, 0, :, :, start:end] = rotate(k.transpose(1, 2), cos, sin)  # [A, kv heads, S, D]
            kv[i, 1, :, :, start:end] = v
            keys, values = kv[i, 0, :, :, :end], kv[i, 1, :, :, :end]  # [A, kv heads, L', D]
            if S == 1:  # the R query heads of a key/value head as R query positions (transformers' pack_gqa)
                q = q.reshape(A, self.kv_heads, -1, D)  # [A, kv heads, R, D]
                o = F.scaled_dot_product_attention(
                    q, keys, values, attn_mask=mask, scale=a.scaling
                )  # [A, kv heads, R, D]
                o = o.reshape(A, 1, -1)  # [A, 1, heads·D]
            else:  # each key/value head repeated for its R query heads, as transformers does under a mask
                R = q.shape[1] // self.kv_heads
                keys, values = keys.repeat_interleave(R, 1), values.repeat_interleave(R, 1)  # [A, heads, L', D]
                o = F.scaled_dot_product_attention(q, keys, values, attn_mask=mask, scale=a.scaling)  # [A, heads, S, D]
                o = o.transpose(1, 2).reshape(A, S, -1)  # [A, S, heads·D]
            h = h + project(o, a.o_proj)  # [A, S, H]
            h = mlp_residual(h, layer)  # [A, S, H]
        self.length = end
        return h  # [A, S, H]

    def _logits(self, h: torch.Tensor) -> torch.Tensor:  # [A, S, H] -> [A, V] float32
        """The last position's logits, as transformers computes them: every position normed, then the head on
        the last one's [A, 1, H] slice (the head's product on another layout of the same numbers rounded
        6e-8–9e-8 apart in a test)."""
        head = self.model.get_output_embeddings()
        return F.linear(rms_norm(h, self.decoder.norm)[:, -1:], head.weight, head.bias)[:, 0].float()  # [A, V]
