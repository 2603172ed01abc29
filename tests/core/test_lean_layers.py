"""The lean training forward (core/lean_layers.py, ``grpo.lean_forward``) equals the transformers
modules to float rounding: log-probs and entropies within 2e-6, every parameter's gradient within 1e-5
relative, and one trainer step (the same tokens, the same loss and statistics, the same AdamW update)
on the tiny Qwen3 and the tiny Llama, and on Qwen2 and Mistral; a model it cannot run takes the
transformers modules, with the reason."""

import math

import pytest
import torch
import transformers
from hypothesis import given, settings
from hypothesis import strategies as st

from rewardzoo.core.lean_layers import why_not_lean
from rewardzoo.core.logprobs import PolicyLogProbs, lean_hidden, pack_rows, sequence_logprobs
from rewardzoo.core.memory import peak_tensor_bytes
from rewardzoo.core.models import TinyModelConfig, causal_lm, tiny_causal_lm
from tests.helpers.logprob_grads import logprobs_and_grads
from tests.helpers.lora import lora
from tests.helpers.steps import dense_step

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
    """A small model of ``family`` whose embedding's padding_idx is token 0 (its row gets no gradient)."""
    if family in ("qwen3", "llama"):
        return tiny_causal_lm(TinyModelConfig(arch=family), 60, seed=2)
    config = {"qwen2": transformers.Qwen2Config, "mistral": transformers.MistralConfig}[family](**SMALL, pad_token_id=0)
    torch.manual_seed(2)
    return transformers.AutoModelForCausalLM.from_config(config, attn_implementation="sdpa").float()


def _batch(prompts: list[list[int]], group: int, lengths: list[int], seed: int = 0):
    """``group`` rows per prompt, completion i of ``lengths[i]`` tokens (0 allowed: a row with no token);
    the padding token 0 is sampled too, as an untrained policy does."""
    gen = torch.Generator().manual_seed(seed)
    n, T = len(prompts) * group, max(max(lengths), 1)
    comp = torch.randint(0, 60, (n, T), generator=gen)  # [n, T]
    comp[0, 0] = 0
    mask = torch.arange(T).unsqueeze(0) < torch.tensor(lengths).unsqueeze(1)  # [n, T]
    rows = [p for p in prompts for _ in range(group)]
    return pack_rows(rows, comp.masked_fill(~mask, 0), mask, list(range(n)), pad_id=0)


def _assert_same(model, batch):
    logp_l, ent_l, grad_l = logprobs_and_grads(model, batch, lean=True)
    logp_p, ent_p, grad_p = logprobs_and_grads(model, batch, lean=False)
    torch.testing.assert_close(logp_l, logp_p, rtol=1e-6, atol=2e-6)
    torch.testing.assert_close(ent_l, ent_p, rtol=1e-6, atol=2e-6)
    total = torch.cat([g.flatten() for g in grad_p.values()]).norm()
    for name, g in grad_p.items():
        assert (grad_l[name] - g).norm() <= 1e-5 * max(g.norm(), 1e-3 * total), name
    return grad_l


PROMPTS = [[1, 5, 0, 7], [1, 9], [1, 4, 4, 8, 3]]  # distinct prompts of different lengths, one with the padding token


@pytest.mark.parametrize("family", ["qwen3", "llama", "qwen2", "mistral"])
def test_lean_forward_gives_the_transformers_logprobs_and_gradients(family):
    model = _model(family)
    assert why_not_lean(model, 32) is None
    batch = _batch(PROMPTS, 4, [1, 6, 3, 0, 5, 6, 2, 1, 4, 6, 6, 3])
    grads = _assert_same(model, batch)
    assert all(g.abs().sum() > 0 for name, g in grads.items()), "every parameter gets a gradient"
    assert torch.equal(
        grads["model.embed_tokens.weight"][0],
        torch.zeros(SMALL["hidden_size"] if family in ("qwen2", "mistral") else 128),
    ), "the padding token's embedding row gets none, as through nn.Embedding"


@settings(max_examples=12, deadline=None)
@given(
    prompt_lengths=st.lists(st.integers(1, 6), min_size=1, max_size=3),
    group=st.integers(1, 3),
    lengths=st.lists(st.integers(0, 5), min_size=9, max_size=9),
    seed=st.integers(0, 99),
)
def test_any_layout_of_prompts_and_completions_matches(prompt_lengths, group, lengths, seed):
    """Repeated or distinct prompts, rows of any completion length (none, one token, all of T)."""
    gen = torch.Generator().manual_seed(seed)
    prompts = [torch.randint(3, 60, (p,), generator=gen).tolist() for p in prompt_lengths]
    n = len(prompts) * group
    _assert_same(_model("llama"), _batch(prompts, group, lengths[:n], seed))


@pytest.mark.parametrize("arch", ["qwen3", "llama"])
def test_one_trainer_step_is_the_same_update(fast_config, tmp_path, arch):
    """The same rollout (generation is untouched), the same loss and statistics, the same AdamW step,
    with β > 0 (the reference copy's log-probs take the lean forward too) and two micro-batches."""
    out = {}
    for lean in (True, False):
        cfg = fast_config(
            "steps=1",
            "checkpoint_every=0",
            f"grpo.lean_forward={str(lean).lower()}",
            f"model.tiny.arch={arch}",
            "grpo.beta=0.05",
            "grpo.micro_batch_size=16",
            f"run_dir={tmp_path / str(lean)}",
        )
        _, metrics, delta = dense_step(cfg)
        out[lean] = (metrics, delta)
    (m_lean, d_lean), (m_plain, d_plain) = out[True], out[False]
    assert m_lean["policy/completion_length"] == m_plain["policy/completion_length"]
    for key in ("policy/loss", "policy/entropy", "policy/grad_norm", "policy/kl"):
        assert math.isclose(m_lean[key], m_plain[key], rel_tol=1e-5, abs_tol=1e-7), key
    for name, d in d_plain.items():
        assert d.abs().sum() > 0, f"{name} did not change"
        assert (d_lean[name] - d).norm() <= 1e-3 * d.norm(), name


@pytest.mark.parametrize("family", ["qwen3", "llama"])
def test_lean_forward_runs_lora_adapters_as_peft_does(family):
    """The real-model recipes train LoRA: the lean forward runs peft's adapters (W x + B A x · α/r) on the same
    log-probs and adapter gradients, and the base alone while the adapters are off (the reference policy)."""
    model = lora(_model(family))
    assert why_not_lean(causal_lm(model), 9) is None
    batch = _batch(PROMPTS, 2, [3, 1, 4, 2, 5, 2])
    grads = _assert_same(model, batch)
    assert grads and all("lora_" in name and g.abs().sum() > 0 for name, g in grads.items())
    with torch.no_grad():
        adapted = sequence_logprobs(model, batch, lean=True)[0]
        with model.disable_adapter():
            base = sequence_logprobs(model, batch, lean=True)[0]
            torch.testing.assert_close(base, sequence_logprobs(model, batch, lean=False)[0], rtol=1e-6, atol=2e-6)
    assert (adapted - base).abs().max() > 1e-3  # the adapters are on in the first, off in the second


@pytest.mark.parametrize("family", ["qwen3", "llama", "qwen2"])
def test_recomputation_gives_the_same_bits_from_less_memory(family):
    """In full fine-tuning the lean forward keeps only the matrix products for the backward pass and
    recomputes the rest: the same hidden states and gradients, bit for bit, and a lower peak of tensor memory
    than keeping every intermediate."""
    model = _model(family)
    lm = causal_lm(model)
    batch = _batch(PROMPTS, 4, [9, 16, 3, 0, 12, 16, 2, 1, 14, 16, 16, 5])
    trained = {n: p for n, p in lm.get_decoder().named_parameters()}

    def step(recompute: bool):
        model.zero_grad()
        h = lean_hidden(lm, batch, recompute)  # [n, T, H]
        (h * torch.linspace(-1, 1, h.numel()).view_as(h)).sum().backward()
        return h.detach(), {n: p.grad.clone() for n, p in trained.items()}

    (h_kept, g_kept), peak_kept = peak_tensor_bytes(lambda: step(False))
    (h_re, g_re), peak_re = peak_tensor_bytes(lambda: step(True))
    assert torch.equal(h_re, h_kept)
    assert all(torch.equal(g_re[n], g_kept[n]) for n in trained)
    assert all(g.abs().sum() > 0 for g in g_re.values())
    assert peak_re < 0.85 * peak_kept, (peak_re, peak_kept)


def test_what_the_lean_forward_cannot_run_takes_the_modules_with_the_reason():
    model = _model("qwen3")
    assert "float32 on the CPU" in why_not_lean(model.to(torch.bfloat16), 8)
    model = _model("qwen3")
    getattr(model, "activation_checkpointing_enable", model.gradient_checkpointing_enable)()
    assert "gradient checkpointing" in why_not_lean(model, 8)
    assert "dropout" in why_not_lean(causal_lm(lora(_model("llama"), dropout=0.1)), 8)
    mistral = transformers.AutoModelForCausalLM.from_config(transformers.MistralConfig(**SMALL, sliding_window=4))
    assert "sliding window of 4 positions" in why_not_lean(mistral, 9)
    assert why_not_lean(mistral, 4) is None or "sdpa" in why_not_lean(mistral, 4)
    dropout = _model("llama")
    dropout.config.attention_dropout = 0.1
    assert "attention dropout" in why_not_lean(dropout, 8)


def test_policy_logprobs_takes_the_modules_once_a_hook_is_added():
    """A sharding wrapper's hooks (FSDP2) arrive after the module is built: the check runs at every forward."""
    model = _model("llama")
    batch = _batch(PROMPTS, 2, [3, 1, 4, 2, 5, 2])
    module = PolicyLogProbs(model)
    lean = module(batch)[0]
    model.model.layers[0].register_forward_pre_hook(lambda *_: None)
    hooked = module(batch)[0]
    assert torch.equal(hooked, sequence_logprobs(model, batch)[0])  # the modules' result, bit for bit
    torch.testing.assert_close(lean, hooked, rtol=1e-6, atol=2e-6)


def test_the_gradient_is_the_same_bits_on_every_run_under_several_threads():
    """Each row gathers its prompt's keys, values and last hidden state, so a prompt's rows send their
    gradients back to one place. Gathered by advanced indexing, torch's CPU backward (``index_put_``
    with accumulate) adds them in an order that varies from call to call under several intra-op threads,
    and two identical runs drifted apart from their second step (``make demo`` ended 57.5–58.1% held
    out); gathered by ``index_select`` (its backward, ``index_add_``, adds in index order) every call
    gives the same bits."""
    model = _model("qwen3")
    # 2 prompts of 20 and 15 tokens, 160 rows each, their rows interleaved (the trainer sorts a micro-batch's
    # rows by length): gathers large enough for torch to split over threads, each thread adding to both prompts
    gen = torch.Generator().manual_seed(0)
    n, T = 320, 8
    comp = torch.randint(1, 60, (n, T), generator=gen)  # [n, T]
    mask = torch.arange(T).unsqueeze(0) < torch.randint(1, T + 1, (n, 1), generator=gen)  # [n, T]
    rows = [list(range(1, 21)) if i % 2 else list(range(30, 45)) for i in range(n)]
    batch = pack_rows(rows, comp.masked_fill(~mask, 0), mask, list(range(n)), pad_id=0)
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        _, _, first = logprobs_and_grads(model, batch, lean=True)
        for _ in range(12):
            _, _, again = logprobs_and_grads(model, batch, lean=True)
            assert all(torch.equal(again[name], g) for name, g in first.items())
    finally:
        torch.set_num_threads(before)
