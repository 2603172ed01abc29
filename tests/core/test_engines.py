"""The inverse-CDF sampler draws from the same distribution as torch.multinomial, respects
temperature, top-k and top-p; the HF engine's decode loop gives generate's tokens and tokenises and
prefills each prompt once."""

import numpy as np
import pytest
import torch
from scipy import stats
from transformers import LogitsProcessorList, TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper

from rewardzoo.core import engines
from rewardzoo.core.config import check_section
from rewardzoo.core.engines import HFEngine, InverseCDFSampler, SamplingConfig, inverse_cdf_sample
from rewardzoo.core.engines import hf as hf_engine
from rewardzoo.core.models import ModelConfig, TinyModelConfig, load_policy

# Fixed logits over 40 tokens spanning six orders of magnitude of probability, with two −inf entries.
LOGITS = torch.cat([torch.linspace(4.0, -10.0, 38), torch.full((2,), float("-inf"))])
LOGITS = LOGITS[torch.randperm(40, generator=torch.Generator().manual_seed(0))]


def counts(tokens: torch.Tensor, V: int) -> np.ndarray:
    """How often each of the V tokens was drawn."""
    return torch.bincount(tokens, minlength=V).numpy()


def draws(fn, logits: torch.Tensor, n: int, seed: int) -> torch.Tensor:
    """n draws of fn on the logits repeated as a batch of rows."""
    torch.manual_seed(seed)
    return fn(logits.expand(n, -1).contiguous())


def two_sample_p(a: np.ndarray, b: np.ndarray) -> float:
    """Chi-square test of homogeneity of two count vectors (cells empty in both dropped)."""
    keep = (a + b) > 0
    return stats.chi2_contingency(np.stack([a[keep], b[keep]]))[1]


def total_variation(a: np.ndarray, b: np.ndarray) -> float:
    """Total variation distance between two empirical distributions."""
    return 0.5 * np.abs(a / a.sum() - b / b.sum()).sum()


@pytest.mark.parametrize("block", [1, 7, 1024])
def test_inverse_cdf_equals_a_float64_inverse_cdf_with_the_same_uniforms(block):
    """Blocks are a way of computing, not an approximation: with the same uniform per row the
    two-level draw equals the first index whose float64 running sum reaches (1 − U)·Σw, at a
    152k vocabulary too (148 blocks of 1,024 and a partial one of 384), with −inf entries
    (which are never drawn)."""
    V = 151_936 if block == 1024 else 1000
    logits = 3 * torch.randn(64, V, generator=torch.Generator().manual_seed(1))
    logits[:, ::3] = float("-inf")
    torch.manual_seed(5)
    got = inverse_cdf_sample(logits, block)
    torch.manual_seed(5)
    w = (logits - logits.amax(-1, keepdim=True)).exp().double()  # [B, V]
    c = w.cumsum(-1)  # [B, V]
    u = (1 - torch.rand(64, 1, dtype=torch.float64)) * c[:, -1:]  # [B, 1]
    assert torch.equal(got, torch.searchsorted(c, u).squeeze(1))
    assert bool((got % 3 != 0).all())


@pytest.mark.parametrize("block", [1024, 7])
def test_inverse_cdf_matches_multinomial_distribution(block):
    """200,000 draws each from the fixed logits (one block, or blocks of 7 with a partial last
    block): a chi-square goodness-of-fit test against softmax(logits) and a two-sample test
    against torch.multinomial both accept, the total variation distance between the two samples
    is at the sampling noise (< 0.01), −inf tokens never appear — and the same test rejects draws
    at temperature 1.2 (the test can fail)."""
    n = 200_000
    p = torch.softmax(LOGITS.double(), -1).numpy()
    ours = counts(draws(lambda s: inverse_cdf_sample(s, block), LOGITS, n, seed=0), 40)
    ref = counts(draws(lambda s: torch.multinomial(torch.softmax(s, -1), 1).squeeze(1), LOGITS, n, seed=1), 40)
    assert ours[~np.isfinite(LOGITS.numpy())].sum() == 0
    expected = p * n
    big = expected > 5  # pool the rare tail into one cell, as the chi-square test needs
    observed = np.append(ours[big], ours[~big].sum())
    assert stats.chisquare(observed, np.append(expected[big], expected[~big].sum())).pvalue > 1e-3
    assert two_sample_p(ours, ref) > 1e-3
    assert total_variation(ours, ref) < 0.01
    hotter = counts(draws(inverse_cdf_sample, LOGITS / 1.2, n, seed=2), 40)
    assert two_sample_p(hotter, ref) < 1e-6


@pytest.mark.parametrize(
    "settings", [dict(temperature=0.7), dict(top_k=5), dict(top_p=0.8), dict(temperature=1.5, top_k=12, top_p=0.9)]
)
def test_sampler_respects_temperature_top_k_top_p(settings):
    """The processor draws from softmax of transformers' own warped scores (temperature, then
    top-k, then top-p): tokens outside the top-k or the nucleus never appear, and the rest follow
    the warped distribution (chi-square against torch.multinomial on the warped scores)."""
    n = 100_000
    sampler = InverseCDFSampler(**settings)
    ids = torch.zeros(n, 1, dtype=torch.long)
    torch.manual_seed(0)
    out = sampler(ids, LOGITS.expand(n, -1).contiguous())  # [n, V]
    assert bool((torch.isfinite(out).sum(1) == 1).all()) and bool((out.max(1).values == 0).all())
    ours = counts(out.argmax(1), 40)
    warpers = LogitsProcessorList(
        ([TemperatureLogitsWarper(settings["temperature"])] if "temperature" in settings else [])
        + ([TopKLogitsWarper(settings["top_k"])] if "top_k" in settings else [])
        + ([TopPLogitsWarper(settings["top_p"])] if "top_p" in settings else [])
    )
    warped = warpers(ids[:1], LOGITS.unsqueeze(0).clone())[0]  # [V]
    assert ours[~torch.isfinite(warped).numpy()].sum() == 0
    ref = counts(draws(lambda s: torch.multinomial(torch.softmax(s, -1), 1).squeeze(1), warped, n, seed=1), 40)
    assert two_sample_p(ours, ref) > 1e-3


def _engine(sampler: str, max_new_tokens: int = 1, **kw) -> HFEngine:
    """An HF engine on a freshly built 2-layer tiny model."""
    model, tok = load_policy(
        ModelConfig(name="tiny", tiny=TinyModelConfig(hidden_size=32, intermediate_size=64, num_layers=2)), seed=0
    )
    return HFEngine(model, tok, SamplingConfig(max_new_tokens=max_new_tokens, sampler=sampler, **kw))


def test_engine_samplers_agree_on_the_first_token_distribution():
    """The tiny model's first sampled token over 3 prompts × 2,000 rows: the two samplers' counts
    pass a two-sample chi-square test per prompt."""
    prompts = ["12*7=", "3*45=", "hello"]
    first = {}
    for sampler in ("inverse_cdf", "multinomial"):
        torch.manual_seed(3)
        gen = _engine(sampler, temperature=1.3).generate(prompts, n=2000)
        first[sampler] = gen.completion_ids[:, 0].view(3, 2000)
    for i in range(3):
        a, b = (counts(first[s][i], 100) for s in first)
        assert two_sample_p(a, b) > 1e-3, prompts[i]


def test_engine_is_reproducible_and_tokenises_prompts_once():
    """The same seed gives the same completions; each call's distinct prompts are prefilled once, as
    exactly the tensors that tokenising them alone would give (left padding trimmed to the call's
    longest prompt), with their row counts, whatever sampling.batch_size is, while each prompt is
    tokenised once."""
    engine = _engine("inverse_cdf", max_new_tokens=6)
    prompts = ["7*8=", "123*4=", "1*1="]
    torch.manual_seed(0)
    a = engine.generate(prompts, n=3)
    torch.manual_seed(0)
    b = engine.generate(prompts, n=3)
    assert a.texts == b.texts and torch.equal(a.completion_ids, b.completion_ids)
    rows = [p for p in prompts for _ in range(3)]
    assert a.prompt_ids == [engine.tokenizer(p)["input_ids"] for p in rows]
    seen, decode = [], engines.decode

    def recording(model, input_ids, attention_mask, repeats, *args, **kw):
        seen.append((input_ids, repeats.tolist()))
        return decode(model, input_ids, attention_mask, repeats, *args, **kw)

    engine.sampling.batch_size = 2
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(hf_engine, "decode", recording)
        engine.generate(prompts, n=3)
    calls = [[prompts[0]], [prompts[0], prompts[1]], [prompts[1]], [prompts[2]], [prompts[2]]]
    assert [r for _, r in seen] == [[2], [1, 1], [2], [2], [1]]
    assert all(
        torch.equal(t, engine.tokenizer(c, return_tensors="pt", padding=True)["input_ids"])
        for (t, _), c in zip(seen, calls)
    )


def _eos_prone(engine: HFEngine, boost: float = 3.5) -> HFEngine:
    """The engine with its model's EOS logit raised by ``boost`` (a forward hook), so that some rows end early."""
    eos = engine.eos_ids[0]

    def hook(module, args, logits):
        logits[..., eos] += boost

    engine.model.lm_head.register_forward_hook(hook)
    return engine


@pytest.mark.parametrize(
    "settings",
    [
        dict(),
        dict(temperature=2.0),
        dict(temperature=0.8, top_k=5),
        dict(top_p=0.7),
        dict(batch_size=5, temperature=1.5),
        dict(min_new_tokens=4, temperature=1.5),
    ],
)
@pytest.mark.parametrize("greedy", [False, True])
def test_decode_loop_gives_generates_tokens(settings, greedy):
    """The decode loop (shared prefill, finished rows retired) and transformers ``generate`` with
    InverseCDFSampler give the same completions, masks and truncation flags from the same seed, with
    rows of a call ending at different lengths; the model's ``min_new_tokens`` holds EOS back."""
    settings = dict(settings)
    min_new = settings.pop("min_new_tokens", 0)
    engine = _eos_prone(_engine("inverse_cdf", max_new_tokens=10, **settings))
    engine.model.generation_config.min_new_tokens = min_new or None
    assert engine.use_decode
    prompts = ["7*8=", "123*4=", "1*1=", "hello there"]
    out = {}
    for use_decode in (True, False):
        engine.use_decode = use_decode
        torch.manual_seed(5)
        out[use_decode] = engine.generate(prompts, n=6, greedy=greedy)
    a, b = out[True], out[False]
    assert a.texts == b.texts and a.prompt_ids == b.prompt_ids
    assert torch.equal(a.completion_ids, b.completion_ids) and torch.equal(a.completion_mask, b.completion_mask)
    assert torch.equal(a.truncated, b.truncated)
    lengths = a.completion_mask.sum(1)
    assert int(lengths.min()) >= min_new + 1
    if not greedy:
        assert int(lengths.min()) < int(lengths.max()), "every row ended at the same step: retirement untested"


class _NoCache(torch.nn.Module):
    """A causal LM whose forward returns no KV cache (as a model without one would)."""

    def __init__(self, model):
        super().__init__()
        self.model, self.generation_config = model, model.generation_config

    def forward(self, **kw):
        out = self.model(**kw)
        out[engines.cache_keyword(self.model)] = None
        return out

    def generate(self, **kw):
        return self.model.generate(**kw)


def test_a_model_without_a_row_selectable_cache_falls_back_to_generate():
    """The engine warns once and generates with transformers generate, giving the same tokens."""
    engine = _engine("inverse_cdf", max_new_tokens=6, temperature=1.5)
    torch.manual_seed(2)
    want = engine.generate(["7*8=", "hello"], n=3)
    engine.model = _NoCache(engine.model)
    torch.manual_seed(2)
    with pytest.warns(UserWarning, match="the decode loop cannot run this model"):
        got = engine.generate(["7*8=", "hello"], n=3)
    assert not engine.use_decode and got.texts == want.texts and torch.equal(got.completion_ids, want.completion_ids)


def test_generation_config_settings_only_generate_applies_select_generate():
    """A hub model whose generation config sets e.g. a repetition penalty is decoded by ``generate``."""
    engine = _engine("inverse_cdf")
    assert engine.use_decode and engines.generate_only_settings(engine.model) == []
    engine.model.generation_config.repetition_penalty = 1.3
    assert engines.generate_only_settings(engine.model) == ["repetition_penalty"]
    assert not HFEngine(engine.model, engine.tokenizer, engine.sampling).use_decode
    assert not _engine("multinomial").use_decode


def test_unknown_sampler_is_a_config_error():
    with pytest.raises(ValueError, match="sampling.sampler must be one of inverse_cdf, multinomial; got 'gumbel'"):
        check_section(SamplingConfig(sampler="gumbel"), "sampling")
