"""Pairwise judging: position-bias removal and win rates (properties), round robin and Swiss costs, the rule
judge — verdicts, the perception both modes share, its blind view (no criterion constant), the bias applied
once per comparison, the miscalibrated absolute reports — and the LM judge end to end on a tiny model against
a hand computation."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import spearmanr

from rewardzoo.core.models import LoraSettings, TinyModelConfig, add_lora, char_tokenizer, tiny_causal_lm
from rewardzoo.judges.pairwise import (
    LMJudge,
    LMJudgeConfig,
    RuleJudge,
    RuleJudgeConfig,
    Tournament,
    Verdicts,
    answer_tokens,
    bt_win_rates,
    miscalibration,
    round_robin_pairs,
    symmetrise,
    win_rates,
)
from rewardzoo.judges.rubric import Criterion, load_rubric
from rewardzoo.tasks.rubric_writing import RubricWriting, RubricWritingConfig

LENGTH = Criterion("length_window", "Is the length in the window?", check="length_window")
META = {"words": ["cat"], "min_words": 2, "max_words": 4}


def score_judge(scores: torch.Tensor, noise: float = 0.0, seed: int = 0):
    """A pair judge over rows with known scores: J(a, b) = σ((s_a − s_b + noise·ε) / 0.1)."""
    gen = torch.Generator().manual_seed(seed)

    def judge(first, second):
        eps = torch.randn(len(first), generator=gen, dtype=torch.float64)
        return Verdicts(
            torch.sigmoid((scores[first] - scores[second] + noise * eps) / 0.1),
            torch.zeros(len(first), dtype=torch.bool),
        )

    return judge


@settings(max_examples=50, deadline=None)
@given(st.integers(2, 12), st.integers(0, 10**6))
def test_symmetrised_preferences_sum_to_one_and_win_rates_average_half(G, seed):
    J = torch.rand(
        G, G, generator=torch.Generator().manual_seed(seed), dtype=torch.float64
    )  # any verdicts, biased or not
    P = symmetrise(J, J.T)
    assert torch.allclose(P + P.T, torch.ones(G, G, dtype=torch.float64))
    assert win_rates(P).mean().item() == pytest.approx(0.5, abs=1e-12)
    theta = torch.randn(G, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    assert bt_win_rates(theta).mean().item() == pytest.approx(0.5, abs=1e-12)


def test_round_robin_by_hand():
    """Scores 3 > 2 > 1 with hard verdicts: row 0 wins both (1), row 1 one of two (½), row 2 none (0).
    A pure position bias J(i, j) = 0.9 for every ordered pair symmetrises to ½ everywhere."""
    assert round_robin_pairs(3).tolist() == [[0, 1], [0, 2], [1, 0], [1, 2], [2, 0], [2, 1]]

    def hard(a, b):
        return Verdicts(
            0.5 * (torch.sign(torch.tensor([3.0, 2, 1])[a] - torch.tensor([3.0, 2, 1])[b]) + 1),
            torch.zeros(len(a), dtype=torch.bool),
        )

    w, stats = Tournament("round_robin").win_rates(hard, [[0, 1, 2]])
    assert w.tolist() == [1.0, 0.5, 0.0] and stats.calls == 6 and stats.consistent == stats.pairs == 3

    def biased(a, b):
        return Verdicts(torch.full((len(a),), 0.9, dtype=torch.float64), torch.zeros(len(a), dtype=torch.bool))

    assert Tournament().win_rates(biased, [[0, 1, 2], [3, 4, 5]])[0].tolist() == pytest.approx([0.5] * 6, abs=1e-15)


@pytest.mark.parametrize("G", [4, 8, 16, 32])
def test_swiss_costs_g_log_g_and_keeps_the_ranking(G):
    """2·⌊G/2⌋·⌈log2 G⌉ ordered calls; group mean exactly ½; Spearman with round robin ≥ 0.9 on a clean judge."""
    scores = torch.randn(G, generator=torch.Generator().manual_seed(G), dtype=torch.float64)
    rr, rr_stats = Tournament("round_robin").win_rates(score_judge(scores), [list(range(G))])
    sw, sw_stats = Tournament("swiss").win_rates(score_judge(scores), [list(range(G))], seed=1)
    assert rr_stats.calls == G * (G - 1) == Tournament("round_robin").calls_per_group(G)
    assert sw_stats.calls == 2 * (G // 2) * math.ceil(math.log2(G)) == Tournament("swiss").calls_per_group(G)
    assert sw.mean().item() == pytest.approx(0.5, abs=1e-9)
    assert spearmanr(rr.numpy(), sw.numpy()).statistic >= 0.9


def test_swiss_is_seeded():
    scores = torch.randn(8, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    runs = [
        Tournament("swiss").win_rates(score_judge(scores, noise=0.3, seed=1), [list(range(8))], seed=s)[0]
        for s in (5, 5, 6)
    ]
    assert torch.equal(runs[0], runs[1]) and not torch.equal(runs[0], runs[2])


def test_rule_judge_verdicts_by_hand():
    """LENGTH on window 2–4: 'The cat sleeps.' scores 1, 'cat' 1 − 1/3 = ⅔, so Δ = ⅓ + β_pos (β = 0.05).
    linear J = ½ + Δ/(2·span) = ½ + Δ/4 = 0.595833; logistic σ(Δ/0.1); hard 1.  Symmetrised, linear gives
    ½ + ⅓/4: β is gone."""
    args = (LENGTH, ["p"], [META], ["The cat sleeps."], ["cat"])
    linear = RuleJudge(RuleJudgeConfig(position_bias=0.05))
    assert linear.compare(*args).prob.item() == pytest.approx(0.5 + (1 / 3 + 0.05) / 4) and linear.calls == 1
    back = linear.compare(LENGTH, ["p"], [META], ["cat"], ["The cat sleeps."]).prob
    assert symmetrise(linear.compare(*args).prob, back).item() == pytest.approx(0.5 + 1 / 12)
    logistic = RuleJudge(RuleJudgeConfig(position_bias=0.05, verdict="logistic", temperature=0.1))
    assert logistic.compare(*args).prob.item() == pytest.approx(1 / (1 + math.exp(-(1 / 3 + 0.05) / 0.1)))
    assert RuleJudge(RuleJudgeConfig(verdict="hard")).compare(*args).prob.item() == 1.0
    assert (
        RuleJudge(RuleJudgeConfig(verdict="hard")).compare(LENGTH, ["p"], [META], ["cat"], ["dog"]).prob.item() == 0.5
    )


def test_perception_noise_is_one_draw_per_response_shared_by_both_modes():
    """The same (step, criterion, prompt, response) is perceived the same in every call and in both modes — so
    with the calibrated report an absolute difference is exactly 2·span = 4 times a linear verdict's distance from ½; another
    step, another seed or another response draws afresh; nothing is consumed from the generator."""
    judge = RuleJudge(RuleJudgeConfig(noise=0.1), seed=4)
    texts = ["The cat sleeps.", "cat", "The big cat sleeps."]
    a = judge.score(LENGTH, ["p"] * 3, [META] * 3, texts, step=7).prob
    j = judge.compare(LENGTH, ["p"] * 3, [META] * 3, texts, texts[1:] + texts[:1], step=7).prob
    assert torch.allclose(a - a.roll(-1), 4 * (j - 0.5), atol=1e-12)
    assert torch.equal(judge.score(LENGTH, ["p"] * 3, [META] * 3, texts, step=7).prob, a)
    assert not torch.equal(judge.score(LENGTH, ["p"] * 3, [META] * 3, texts, step=8).prob, a)
    assert not torch.equal(
        RuleJudge(RuleJudgeConfig(noise=0.1), seed=5).score(LENGTH, ["p"] * 3, [META] * 3, texts, step=7).prob, a
    )
    many = judge.perceived(LENGTH, [f"p{i}" for i in range(400)], [META] * 400, ["The cat sleeps."] * 400)
    assert abs(many.std().item() - 0.1) < 0.02 and abs(many.mean().item() - 1.0) < 0.02  # σ = 0.1 around the check


def test_no_criterion_is_constant_under_the_judges_view():
    """On the task's demonstrations every rubric criterion, read through the blind judge's view, takes several
    values — no_repeats and english_words too, because the judge notices an immediate repeat and a consonant
    string even though it overlooks a word repeated later and a made-up word with vowels."""
    task = RubricWriting(RubricWritingConfig(n_train=300, n_eval=10))
    blind = RuleJudge(RuleJudgeConfig(repetition_blind=True, non_english_blind=True))
    texts = [e.demonstration for e in task.train]
    for c in load_rubric("rubric_writing").criteria:
        seen = blind.perceived(c, [e.prompt for e in task.train], [e.meta for e in task.train], texts)
        assert len(set(seen.tolist())) >= 2, f"{c.name} is constant under the judge's view"
    no_repeats = Criterion("no_repeats", "d", check="no_repeats")
    english = Criterion("english_words", "d", check="english_words")
    fair = RuleJudge(RuleJudgeConfig(verdict="hard"))
    hard_blind = RuleJudge(RuleJudgeConfig(verdict="hard", repetition_blind=True, non_english_blind=True))
    for judge in (fair, hard_blind):  # noticed by both: 'cat cat', 'xqzt'
        assert judge.compare(no_repeats, ["p"], [META], ["The cat cat sleeps."], ["The cat sleeps."]).prob.item() == 0.0
        assert judge.compare(english, ["p"], [META], ["The xqzt cat sleeps."], ["The cat sleeps."]).prob.item() == 0.0
    later, foreign = (["The cat sees the cat."], ["The cat sees."]), (["The bimo cat sleeps."], ["The cat sleeps."])
    assert fair.compare(no_repeats, ["p"], [META], *later).prob.item() == 0.0
    assert fair.compare(english, ["p"], [META], *foreign).prob.item() == 0.0
    assert hard_blind.compare(no_repeats, ["p"], [META], *later).prob.item() == 0.5  # overlooked: a tie
    assert hard_blind.compare(english, ["p"], [META], *foreign).prob.item() == 0.5


def test_bias_is_applied_once_per_comparison():
    """The per-call offset: an absolute report carries its call's own, the two responses of a comparison share
    one — verdicts are the same with σ_δ = 0.5 as without, reports are not.  The length preference enters each
    response's perception once: two responses that tie on the check, 3 words apart, differ by λ·3 in absolute
    score and sit λ·3/(2·span) from ½ in a linear verdict — the same gain a real difference of the check gets."""
    texts = (["The big old cat sleeps."] * 8, ["The cat sleeps."] * 8)
    calm, moody = RuleJudge(RuleJudgeConfig(), seed=1), RuleJudge(RuleJudgeConfig(call_offset=0.5), seed=1)
    assert torch.equal(
        calm.compare(LENGTH, ["p"] * 8, [META] * 8, *texts).prob,
        moody.compare(LENGTH, ["p"] * 8, [META] * 8, *texts).prob,
    )
    assert moody.score(LENGTH, ["p"] * 8, [META] * 8, texts[1]).prob.std() > 0.2  # one offset per absolute call
    meta = {"words": ["cat"], "min_words": 2, "max_words": 6}
    longer = RuleJudge(RuleJudgeConfig(length_bias=0.01))
    a = longer.score(LENGTH, ["p", "p"], [meta, meta], ["The big old cat sleeps.", "The cat."]).prob
    j = longer.compare(LENGTH, ["p"], [meta], ["The big old cat sleeps."], ["The cat."]).prob
    assert (a[0] - a[1]).item() == pytest.approx(0.03) and j.item() == pytest.approx(0.5 + 0.03 / 4)


def test_miscalibrated_reports_by_hand():
    """levels 6, leniency 0.2: ẑ = 1 → 1.2 → clipped 1; ẑ = ⅔ → 0.8667 → 5 × 0.8667 = 4.33 → 4/5 = 0.8; ẑ = 0 → 0.2.
    A criterion scale spreads criteria apart with a fixed draw per name; the knob's levels grow coarser with m."""
    judge = RuleJudge(RuleJudgeConfig(levels=6, leniency=0.2))
    texts = ["The cat sleeps.", "cat", "The big old red cat sleeps on."]  # 3, 1 and 7 words in the window 2–4
    assert judge.score(LENGTH, ["p"] * 3, [META] * 3, texts).prob.tolist() == pytest.approx([1.0, 0.8, 0.2])
    scaled = RuleJudge(RuleJudgeConfig(criterion_scale=0.5))
    z = torch.tensor([0.0, 1.0], dtype=torch.float64)
    spans = {
        name: (lambda r: (r[1] - r[0]).item())(scaled.report(Criterion(name, "d", check=name), z, torch.zeros(2)))
        for name in ("length_window", "no_repeats", "period_end")
    }
    assert len({round(v, 9) for v in spans.values()}) == 3 and spans == {
        n: (lambda r: (r[1] - r[0]).item())(scaled.report(Criterion(n, "d", check=n), z, torch.zeros(2))) for n in spans
    }
    assert miscalibration(0) == {"levels": 0, "leniency": 0.0, "criterion_scale": 0.0, "call_offset": 0.0}
    assert [miscalibration(m)["levels"] for m in (1, 2, 3)] == [11, 6, 4]
    with pytest.raises(ValueError, match=">= 0"):
        miscalibration(-1)


def test_rule_judge_unparseable_calls_are_ties_and_counted():
    judge = RuleJudge(RuleJudgeConfig(unparseable_rate=0.3, verdict="hard"), seed=2)
    v = judge.compare(LENGTH, ["p"] * 400, [META] * 400, ["The cat sleeps."] * 400, ["cat"] * 400)
    assert 0.2 < v.unparseable.float().mean() < 0.4
    assert (v.prob[v.unparseable] == 0.5).all() and (v.prob[~v.unparseable] == 1.0).all()
    state = judge.state_dict()
    again = judge.score(LENGTH, ["p"] * 400, [META] * 400, ["cat"] * 400)
    judge.load_state_dict(state)
    assert again.unparseable.any() and torch.equal(
        judge.score(LENGTH, ["p"] * 400, [META] * 400, ["cat"] * 400).prob, again.prob
    )


# ---------------------------------------------------------------------------------------------- the LM judge
TINY = TinyModelConfig(hidden_size=32, num_layers=1, num_heads=2, num_kv_heads=1, intermediate_size=64)
SHORT = LMJudgeConfig(
    pairwise_template="{title}|{prompt}|{first}|{second}|",
    absolute_template="{title}|{prompt}|{response}|",
    answer_prefix="?",
    choices=["A", "B"],
    absolute_choices=["Y", "N"],
    min_choice_mass=0.0,
    batch_size=2,
)
CRIT = Criterion("clarity", "Is it clear?", title="Clear")


def hand_choice(model, tok, text: str, a: str, b: str) -> float:
    """P(a) / (P(a) + P(b)) at the next position after ``text``, one unpadded sequence."""
    ids = torch.tensor([tok(text)["input_ids"]])
    with torch.no_grad():
        p = torch.softmax(model(input_ids=ids).logits[0, -1].double(), -1)
    pa, pb = p[tok.convert_tokens_to_ids(a)], p[tok.convert_tokens_to_ids(b)]
    return float(pa / (pa + pb))


def test_answer_tokens_for_character_and_shared_prefixes():
    tok = char_tokenizer()
    assert answer_tokens(tok, "Answer:", [" A", " B"]) == (
        tok(" ", add_special_tokens=False)["input_ids"],
        [tok.convert_tokens_to_ids("A"), tok.convert_tokens_to_ids("B")],
    )
    with pytest.raises(ValueError, match="cannot be told apart"):
        answer_tokens(tok, "Answer:", [" A", " A"])


def test_lm_judge_matches_a_hand_computation_in_both_orders():
    """Template filled as 'Clear|prompt|first|second|?', batched with left padding (2 per forward, rows of
    different lengths), read as P(A)/(P(A)+P(B)); P = ½[J(a,b) + 1 − J(b,a)] from the two orders."""
    tok = char_tokenizer()
    model = tiny_causal_lm(TINY, len(tok), seed=0).eval()
    judge = LMJudge.self_judge(model, tok, SHORT)
    prompts, a, b = ["red cat", "sun", "x"], ["The red cat.", "A sun.", "q"], ["cat", "The warm sun sings.", "qq"]
    forward = judge.compare(CRIT, prompts, [{}] * 3, a, b)
    backward = judge.compare(CRIT, prompts, [{}] * 3, b, a)
    hand_f = [hand_choice(model, tok, f"Clear|{p}|{x}|{y}|?", "A", "B") for p, x, y in zip(prompts, a, b)]
    hand_b = [hand_choice(model, tok, f"Clear|{p}|{y}|{x}|?", "A", "B") for p, x, y in zip(prompts, a, b)]
    assert forward.prob.tolist() == pytest.approx(hand_f, abs=1e-5) and backward.prob.tolist() == pytest.approx(
        hand_b, abs=1e-5
    )
    assert not forward.unparseable.any() and judge.calls == 6
    assert symmetrise(forward.prob, backward.prob).tolist() == pytest.approx(
        [0.5 * (f + 1 - g) for f, g in zip(hand_f, hand_b)], abs=1e-5
    )
    absolute = judge.score(CRIT, prompts, [{}] * 3, a)
    assert absolute.prob.tolist() == pytest.approx(
        [hand_choice(model, tok, f"Clear|{p}|{x}|?", "Y", "N") for p, x in zip(prompts, a)], abs=1e-5
    )
    picky = LMJudge.self_judge(model, tok, LMJudgeConfig(**{**SHORT.__dict__, "min_choice_mass": 0.99}))
    v = picky.compare(CRIT, prompts, [{}] * 3, a, b)  # a random model puts far less than 0.99 on A and B: all ties
    assert v.unparseable.all() and (v.prob == 0.5).all()


def test_self_judge_is_the_frozen_start():
    """Full fine-tuning: the judge is a copy of the starting weights, so training the policy leaves it unchanged.
    LoRA: no copy — the judge runs the live policy with adapters disabled, which equals the base model."""
    tok = char_tokenizer()
    args = (CRIT, ["red cat"], [{}], ["The red cat."], ["cat"])
    policy = tiny_causal_lm(TINY, len(tok), seed=1)
    judge = LMJudge.self_judge(policy, tok, SHORT)
    before = judge.compare(*args).prob
    with torch.no_grad():
        for p in policy.parameters():
            p.add_(0.5 * torch.randn_like(p))
    assert torch.equal(judge.compare(*args).prob, before)
    assert hand_choice(policy, tok, "Clear|red cat|The red cat.|cat|?", "A", "B") != pytest.approx(
        before.item(), abs=1e-4
    )

    base = tiny_causal_lm(TINY, len(tok), seed=2)
    hand_base = hand_choice(base, tok, "Clear|red cat|The red cat.|cat|?", "A", "B")
    lora = add_lora(base, LoraSettings(enabled=True, r=4, alpha=8))
    with torch.no_grad():  # trained-looking adapters: they change the policy's output
        for name, p in lora.named_parameters():
            if "lora_B" in name:
                p.copy_(0.5 * torch.randn_like(p))
    lora.train()
    judge = LMJudge.self_judge(lora, tok, SHORT)
    assert sum(p.numel() for p in lora.parameters()) == sum(p.numel() for p in base.parameters())  # one model, no copy
    assert judge.compare(*args).prob.item() == pytest.approx(hand_base, abs=1e-5)
    assert hand_choice(lora, tok, "Clear|red cat|The red cat.|cat|?", "A", "B") != pytest.approx(hand_base, abs=1e-4)
    assert lora.training  # the judge ran in eval mode and restored the mode it found


def test_bad_judge_settings():
    tok = char_tokenizer()
    model = tiny_causal_lm(TINY, len(tok), seed=0)
    with pytest.raises(ValueError, match="exactly two answers"):
        LMJudge.self_judge(model, tok, LMJudgeConfig(choices=["A"]))
    with pytest.raises(ValueError, match=r"judge.lm.min_choice_mass must be in \[0, 1\)"):
        LMJudge.self_judge(model, tok, LMJudgeConfig(min_choice_mass=1.0))
    with pytest.raises(ValueError, match=r"judge.rule.unparseable_rate must be in \[0, 1\)"):
        RuleJudge(RuleJudgeConfig(unparseable_rate=1.0))
    with pytest.raises(ValueError, match="verdict must be one of linear, logistic, hard"):
        RuleJudge(RuleJudgeConfig(verdict="soft"))
    with pytest.raises(ValueError, match="levels must be 0"):
        RuleJudge(RuleJudgeConfig(levels=1))
