"""Fused chunked log-probs equal the naive full-logits computation, in value and gradient."""

import pytest
import torch

from rewardzoo.core.logprobs import (
    PolicyLogProbs,
    fused_token_logprobs,
    head_logit_scale,
    naive_token_logprobs,
    pack_rows,
    sequence_logprobs,
)
from rewardzoo.core.models import ModelConfig, load_policy


def _inputs(K, H, V, dtype, bias, seed=0, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    h = (torch.randn(K, H, generator=g, dtype=dtype)).requires_grad_()
    W = (scale * torch.randn(V, H, generator=g, dtype=dtype)).requires_grad_()
    b = (torch.randn(V, generator=g, dtype=dtype)).requires_grad_() if bias else None
    y = torch.randint(0, V, (K,), generator=g)
    return h, W, b, y


def _loss(logp, ent, K):
    w = torch.linspace(-1, 1, K, dtype=logp.dtype)
    return (w * logp).sum() + (ent * w.flip(0)).sum()


def _grads(fn, h, W, b, y, **kw):
    logp, ent = fn(h, W, y, b, **kw)
    params = [h, W] + ([b] if b is not None else [])
    return logp, ent, torch.autograd.grad(_loss(logp, ent, h.shape[0]), params)


@pytest.mark.parametrize("V", [5, 97, 8192, 151_936])
@pytest.mark.parametrize("bias", [False, True])
def test_fused_equals_naive_fp32(V, bias):
    """fp32, relative 1e-5, realistic logit scale (weights ~ N(0, 0.05²), hidden ~ N(0, 1))."""
    K, H = 24, 32
    h, W, b, y = _inputs(K, H, V, torch.float32, bias, scale=0.05)
    a, e, ga = _grads(fused_token_logprobs, h, W, b, y, chunk_size=7)
    n, m, gn = _grads(naive_token_logprobs, h, W, b, y)
    torch.testing.assert_close(a, n, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(e, m, rtol=1e-5, atol=1e-5)
    for x, z in zip(ga, gn):
        torch.testing.assert_close(x, z, rtol=1e-5, atol=1e-5 * z.abs().max().item())


@pytest.mark.parametrize("chunk", [1, 3, 64])
def test_fused_equals_naive_fp64_tight(chunk):
    """In fp64 the two agree to 1e-10 for any chunk size, with large logits too."""
    h, W, b, y = _inputs(17, 8, 301, torch.float64, True, seed=3, scale=2.0)
    a, e, ga = _grads(fused_token_logprobs, h, W, b, y, chunk_size=chunk)
    n, m, gn = _grads(naive_token_logprobs, h, W, b, y)
    assert a.dtype == torch.float64
    torch.testing.assert_close(a, n, rtol=1e-10, atol=1e-10)
    torch.testing.assert_close(e, m, rtol=1e-10, atol=1e-10)
    for x, z in zip(ga, gn):
        torch.testing.assert_close(x, z, rtol=1e-10, atol=1e-10)


def test_gradcheck_fused():
    h, W, b, y = _inputs(5, 3, 11, torch.float64, True, seed=1)
    assert torch.autograd.gradcheck(lambda h, W, b: fused_token_logprobs(h, W, y, b, chunk_size=2), (h, W, b))


def test_only_logp_used_skips_entropy_gradient():
    h, W, _, y = _inputs(9, 4, 50, torch.float64, False)
    logp, _ = fused_token_logprobs(h, W, y, chunk_size=4)
    gh, gw = torch.autograd.grad(logp.sum(), [h, W])
    n, _ = naive_token_logprobs(h, W, y)
    nh, nw = torch.autograd.grad(n.sum(), [h, W])
    torch.testing.assert_close(gh, nh)
    torch.testing.assert_close(gw, nw)


def test_bf16_inputs_give_fp32_outputs_and_bf16_grads():
    h, W, _, y = _inputs(6, 8, 40, torch.bfloat16, False, scale=0.1)
    logp, ent = fused_token_logprobs(h, W, y)
    assert logp.dtype == torch.float32 and ent.dtype == torch.float32
    gh, gw = torch.autograd.grad(logp.sum(), [h, W])
    assert gh.dtype == torch.bfloat16 and gw.dtype == torch.bfloat16
    n, _ = naive_token_logprobs(h, W, y)
    torch.testing.assert_close(logp, n, rtol=1e-4, atol=1e-4)


def test_empty_selection():
    h, W, _, y = _inputs(0, 4, 10, torch.float32, False)
    logp, ent = fused_token_logprobs(h, W, y)
    assert logp.shape == (0,) and ent.shape == (0,)


def test_entropy_is_entropy():
    """Uniform logits over V tokens have entropy log V and log-prob −log V."""
    V = 13
    logp, ent = fused_token_logprobs(torch.zeros(2, 4), torch.zeros(V, 4), torch.tensor([0, 5]))
    torch.testing.assert_close(ent, torch.full((2,), float(torch.log(torch.tensor(V * 1.0)))))
    torch.testing.assert_close(logp, -ent)


def test_pack_rows_layout():
    """Row 0: prompt [5, 6], completion [7, 8, EOS=2]; row 1: prompt [9], completion [3].
    Packed: [[5, 6, 7, 8, 2], [9, 3, pad...]]; the hidden state at position p−1+t predicts token t."""
    prompt_ids = [[5, 6], [9]]
    comp = torch.tensor([[7, 8, 2], [3, 0, 0]])
    mask = torch.tensor([[1, 1, 1], [1, 0, 0]], dtype=torch.bool)
    b = pack_rows(prompt_ids, comp, mask, [0, 1], pad_id=0)
    assert b.input_ids.tolist() == [[5, 6, 7, 8, 2], [9, 3, 0, 0, 0]]
    assert b.attention_mask.tolist() == [[1, 1, 1, 1, 1], [1, 1, 0, 0, 0]]
    assert b.positions[0].tolist() == [1, 2, 3]
    assert b.positions[1, 0].item() == 0
    assert b.targets.tolist() == [[7, 8, 2], [3, 0, 0]]
    assert b.mask.tolist() == mask.tolist()


def test_sequence_logprobs_fused_matches_model_logits():
    """On a real tiny Qwen3, the fused path equals log_softmax of the model's own logits, and
    padding a row does not change its log-probs."""
    model, tok = load_policy(ModelConfig(name="tiny"), seed=0)
    torch.manual_seed(0)
    prompt_ids = [tok("12*7=")["input_ids"], tok("3*4=")["input_ids"]]
    comp = torch.tensor(
        [
            [tok.convert_tokens_to_ids(c) for c in "84"] + [tok.eos_token_id],
            [tok.convert_tokens_to_ids("1"), tok.eos_token_id, 0],
        ]
    )
    mask = torch.tensor([[1, 1, 1], [1, 1, 0]], dtype=torch.bool)
    batch = pack_rows(prompt_ids, comp, mask, [0, 1], tok.pad_token_id)
    fused, ent_f = sequence_logprobs(model, batch, fused=True, temperature=0.7)
    naive, ent_n = sequence_logprobs(model, batch, fused=False, temperature=0.7)
    torch.testing.assert_close(fused, naive, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(ent_f, ent_n, rtol=1e-5, atol=1e-5)
    alone = sequence_logprobs(model, pack_rows(prompt_ids, comp, mask, [1], tok.pad_token_id), temperature=0.7)[0]
    torch.testing.assert_close(alone[0, :2], fused[1, :2], rtol=1e-5, atol=1e-5)
    full = torch.log_softmax(model(batch.input_ids[:1]).logits[0] / 0.7, -1)
    assert fused[0, 0].item() == pytest.approx(full[4, comp[0, 0]].item(), abs=1e-5)
    assert PolicyLogProbs(model).fused


# ------------------------------------------------------------------ heads that scale their logits
TINY_FAMILY = dict(
    vocab_size=50,
    hidden_size=32,
    intermediate_size=64,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    max_position_embeddings=64,
    tie_word_embeddings=False,
)
SCALED_HEADS = {  # family: (config class name, settings, expected c in logits = c·(W h + b))
    "granite": ("GraniteConfig", dict(logits_scaling=8.0), 1 / 8),  # logits / logits_scaling
    "cohere": ("CohereConfig", dict(logit_scale=0.25), 0.25),  # logits · logit_scale
    "minicpm3": (
        "MiniCPM3Config",
        dict(
            dim_model_base=8,
            num_key_value_heads=4,
            q_lora_rank=16,
            kv_lora_rank=16,
            qk_nope_head_dim=8,
            qk_rope_head_dim=8,
            v_head_dim=8,
        ),
        8 / 32,
    ),  # hidden / (hidden_size / dim_model_base)
    "hyperclovax": ("HyperCLOVAXConfig", dict(logits_scaling=0.5), 0.5),  # logits · logits_scaling
    "falcon_h1": ("FalconH1Config", dict(lm_head_multiplier=3.0), 3.0),  # logits · lm_head_multiplier
}


def _family_batch():
    gen = torch.Generator().manual_seed(0)
    comp = torch.randint(3, 50, (3, 5), generator=gen)
    mask = torch.ones(3, 5, dtype=torch.bool)
    mask[1, 3:] = False
    return pack_rows([[1, 4, 5], [1, 6], [1, 7, 8, 9]], comp, mask, [0, 1, 2], 0)


@pytest.mark.parametrize("family", sorted(SCALED_HEADS))
def test_fused_path_applies_each_family_logit_scaling(family):
    """Granite/MiniCPM3 divide by logits_scaling, HyperCLOVA X and Cohere multiply, Falcon-H1 multiplies by
    lm_head_multiplier: the fused log-probs must equal those of the model's own logits (not be off by the scale)."""
    import transformers

    name, settings, expected = SCALED_HEADS[family]
    config = getattr(transformers, name)(**{**TINY_FAMILY, **settings})
    model = transformers.AutoModelForCausalLM.from_config(config).float()
    module = PolicyLogProbs(model, temperature=1.3)
    assert module.fused and module.logit_scale == pytest.approx(expected)
    batch = _family_batch()
    logp, ent = module(batch)
    want_logp, want_ent = sequence_logprobs(model, batch, temperature=1.3, fused=False)
    assert torch.allclose(logp, want_logp, atol=2e-6) and torch.allclose(ent, want_ent, atol=2e-6)
    unscaled, _ = sequence_logprobs(model, batch, temperature=1.3, fused=True)
    assert not torch.allclose(unscaled, want_logp, atol=1e-3)  # ignoring the scale would be wrong


def test_soft_capped_head_falls_back_to_the_model_logits_with_a_warning():
    import transformers

    config = transformers.Gemma2Config(**{**TINY_FAMILY, "head_dim": 8, "final_logit_softcapping": 5.0})
    model = transformers.AutoModelForCausalLM.from_config(config).float()
    with pytest.warns(UserWarning, match="fused log-probs off for this model: final_logit_softcapping"):
        module = PolicyLogProbs(model)
    assert not module.fused
    batch = _family_batch()
    assert torch.equal(module(batch)[0], sequence_logprobs(model, batch, fused=False)[0])


def test_scaling_is_read_from_the_text_config_of_a_composite_model():
    """A multimodal config keeps the language model's settings in its text config."""
    import transformers

    text = transformers.GraniteConfig(**TINY_FAMILY, logits_scaling=4.0)
    outer = transformers.LlavaConfig(text_config=text.to_dict())
    assert head_logit_scale(outer) == (pytest.approx(0.25), "")
    unknown = transformers.LlamaConfig(**TINY_FAMILY)
    unknown.logits_scaling = 2.0
    scale, why = head_logit_scale(unknown)
    assert scale is None and "convention is not known" in why


def test_fused_head_ignores_an_enclosing_cpu_bf16_autocast():
    """Under torch.autocast("cpu", bfloat16) (the decoder body's bf16 mode) the head still runs in fp32:
    the log-probs, entropies and gradients equal those computed outside autocast to fp32 rounding,
    where a bf16 head matmul is off by ~4e-3 (issue #61 item 1)."""
    h, W, b, y = _inputs(64, 96, 4096, torch.float32, bias=True, scale=0.05)
    ref_logp, ref_ent, ref_g = _grads(fused_token_logprobs, h, W, b, y, chunk_size=16)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        logp, ent, g = _grads(fused_token_logprobs, h, W, b, y, chunk_size=16)
    assert logp.dtype == ent.dtype == torch.float32
    torch.testing.assert_close(logp, ref_logp, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(ent, ref_ent, rtol=1e-5, atol=1e-5)
    for got, want in zip(g, ref_g, strict=True):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
