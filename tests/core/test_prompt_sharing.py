"""The training forward that computes each distinct prompt once (SharedPrompts, prompt_shared_hidden)
equals the packed rows: the same log-probs and the same gradient (so the same SGD update) to float
rounding (log-probs bit for bit under ATEN_CPU_CAPABILITY=avx512, within an ulp or two under
default and avx2, whose matrix kernels round a U-row and an n-row product differently), on the tiny Qwen3 and the tiny Llama (the trainer's AdamW update through
it is tests/test_golden.py's); a model whose cache keeps more than full-attention
keys and values falls back to the packed rows with one warning."""

import pytest
import torch
import transformers

from rewardzoo.core.logprobs import PolicyLogProbs, pack_rows, sequence_logprobs
from rewardzoo.core.models import TinyModelConfig, tiny_causal_lm
from tests.helpers.logprob_grads import logprobs_and_grads

PROMPTS = [[1, 5, 6, 7], [1, 9], [1, 4, 4, 8, 3]]  # distinct prompts of different lengths
GROUP = 4


def _batch(vocab: int, seed: int = 0):
    """GROUP completions of each prompt, of different lengths (one of a single token)."""
    gen = torch.Generator().manual_seed(seed)
    n = len(PROMPTS) * GROUP
    comp = torch.randint(3, vocab, (n, 6), generator=gen)  # [n, T]
    lengths = torch.randint(1, 7, (n,), generator=gen)
    lengths[0] = 1
    mask = torch.arange(6).unsqueeze(0) < lengths.unsqueeze(1)  # [n, T]
    prompt_ids = [p for p in PROMPTS for _ in range(GROUP)]
    return pack_rows(prompt_ids, comp.masked_fill(~mask, 0), mask, list(range(n)), pad_id=0)


@pytest.mark.parametrize("arch", ["qwen3", "llama"])
def test_shared_prompts_give_the_packed_rows_logprobs_and_gradients(arch):
    model = tiny_causal_lm(TinyModelConfig(arch=arch), 100, seed=1)
    batch = _batch(100)
    assert batch.shared is not None and batch.shared.input_ids.shape[0] == len(PROMPTS)
    logp_s, ent_s, grad_s = logprobs_and_grads(model, batch, share_prompts=True)
    logp_p, ent_p, grad_p = logprobs_and_grads(model, batch, share_prompts=False)
    torch.testing.assert_close(logp_s, logp_p, rtol=1e-6, atol=2e-6)
    torch.testing.assert_close(ent_s, ent_p, rtol=1e-6, atol=2e-6)
    for name, g in grad_p.items():
        torch.testing.assert_close(grad_s[name], g, rtol=1e-5, atol=1e-6, msg=name)
    assert grad_s["model.embed_tokens.weight"].abs().sum() > 0  # the prompts' embedding rows get their gradient


def test_a_sliding_window_cache_falls_back_to_the_packed_rows_with_one_warning():
    config = transformers.MistralConfig(vocab_size=100, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                        num_attention_heads=4, num_key_value_heads=2, sliding_window=3)
    model = transformers.AutoModelForCausalLM.from_config(config).float()
    module = PolicyLogProbs(model, share_prompts=True)
    batch = _batch(100)
    with pytest.warns(UserWarning, match="prompts not shared by their rows"):
        logp, _ = module(batch)
    assert not module.share_prompts
    assert torch.equal(logp, sequence_logprobs(model, batch, share_prompts=False)[0])
