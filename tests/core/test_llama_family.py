"""The lean Llama-family decode forward (core/engines/llama_family.py) gives transformers' logits
bit for bit, at the prefill and at every decode step, and so the same sampled tokens, on the tiny
Qwen3, Llama, Qwen2 and Mistral, and with peft LoRA adapters; a model it cannot run exactly is decoded
through transformers."""

import pytest
import torch
import transformers

from rewardzoo.core.engines.decode import TransformersStepper, decode, stepper
from rewardzoo.core.engines.llama_family import LlamaFamilyStepper
from rewardzoo.core.engines.sampling import InverseCDFSampler
from rewardzoo.core.lean_layers import why_not_llama_family
from rewardzoo.core.models import TinyModelConfig, tiny_causal_lm
from tests.helpers.lora import lora

SMALL = dict(
    vocab_size=60,
    hidden_size=32,
    intermediate_size=64,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    tie_word_embeddings=False,
)


def _model(family: str) -> torch.nn.Module:
    if family.endswith("+lora"):  # peft LoRA on every linear layer, B at random: the adapters change the logits
        return lora(_model(family.removesuffix("+lora"))).eval()
    if family in ("qwen3", "llama"):
        return tiny_causal_lm(TinyModelConfig(arch=family), 60, seed=3).eval()
    config = {"qwen2": transformers.Qwen2Config, "mistral": transformers.MistralConfig}[family](**SMALL)
    torch.manual_seed(3)
    return transformers.AutoModelForCausalLM.from_config(config, attn_implementation="sdpa").float().eval()


def _prompts():
    """Three left-padded prompts of different lengths, two rows each."""
    ids = torch.tensor([[0, 0, 1, 5, 9], [1, 7, 3, 3, 8], [0, 1, 4, 4, 6]])
    return ids, (ids != 0).long(), torch.tensor([2, 2, 2])


@pytest.mark.parametrize("family", ["qwen3", "llama", "qwen2", "mistral", "qwen3+lora", "llama+lora"])
@torch.no_grad()
def test_lean_forward_gives_transformers_logits_bit_for_bit(family):
    model = _model(family)
    assert why_not_llama_family(model) is None
    ids, mask, repeats = _prompts()
    rows = torch.arange(3).repeat_interleave(repeats)
    position = (mask.cumsum(1) - 1).clamp(min=0)
    lean, plain = stepper(model, 5 + 4), TransformersStepper(model)
    assert isinstance(lean, LlamaFamilyStepper)
    a, b = lean.prefill(ids, mask, position, rows), plain.prefill(ids, mask, position, rows)
    assert torch.equal(a, b)
    mask, position = mask[rows], position[rows, -1:]
    for t in range(3):
        token = a.argmax(-1)
        if t == 1:  # rows 1 and 4 finish: both forwards keep the others
            keep = torch.tensor([0, 2, 3, 5][: len(token)])
            lean.retire(keep), plain.retire(keep)
            token, mask, position = token[keep], mask[keep], position[keep]
        mask, position = torch.cat([mask, mask.new_ones(len(token), 1)], 1), position + 1
        a, b = lean.step(token, mask, position), plain.step(token, mask, position)
        assert torch.equal(a, b), f"step {t}"


@pytest.mark.parametrize("family", ["qwen3", "llama", "llama+lora"])
def test_decode_samples_the_same_tokens_with_the_lean_forward(family):
    model = _model(family)
    ids, mask, repeats = _prompts()
    draw = InverseCDFSampler(temperature=1.5).draw
    out = {}
    for fast in (True, False):
        torch.manual_seed(4)
        out[fast] = decode(model, ids, mask, repeats, 8, [2], 0, draw=draw, fast=fast)
    assert torch.equal(out[True], out[False])


def test_a_model_the_lean_forward_cannot_run_exactly_gets_the_transformers_one():
    model = _model("qwen3")
    model.model.layers[0].mlp.register_forward_hook(lambda *_: None)
    assert "forward hooks on model.layers.0.mlp" in why_not_llama_family(model)
    assert isinstance(stepper(model, 9), TransformersStepper)
    eager = transformers.AutoModelForCausalLM.from_config(
        transformers.LlamaConfig(**SMALL), attn_implementation="eager"
    )
    assert "not 'sdpa'" in why_not_llama_family(eager)
    gpt2 = transformers.AutoModelForCausalLM.from_config(transformers.GPT2Config(n_layer=1, n_embd=16, n_head=2))
    assert "model_type 'gpt2'" in why_not_llama_family(gpt2)
    assert isinstance(stepper(_model("llama"), 9, fast=False), TransformersStepper)
