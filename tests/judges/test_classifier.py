"""The sequence-classifier judge: input text, pooling under padding, balanced BCE, training,
state round trip and initialisation from a saved causal LM's backbone."""

import pytest
import torch

from rewardzoo.core.models import TinyModelConfig, char_tokenizer, tiny_causal_lm
from rewardzoo.judges.classifier import JudgeConfig, SequenceJudge, balanced_weights, judge_text

TINY = TinyModelConfig(hidden_size=32, num_layers=1, num_heads=2, num_kv_heads=1, intermediate_size=64)


def tiny_judge(seed: int = 0, **kw) -> SequenceJudge:
    return SequenceJudge.build(JudgeConfig(tiny=TINY, **kw), seed=seed)


def balanced_bce(judge: SequenceJudge, pos, neg) -> float:
    """½·mean(−log D) over positives + ½·mean(−log(1 − D)) over negatives, from prob_reference."""
    d_pos = judge.prob_reference([p for p, _ in pos], [a for _, a in pos])
    d_neg = judge.prob_reference([p for p, _ in neg], [a for _, a in neg])
    return float(0.5 * -d_pos.log().mean() + 0.5 * -(1 - d_neg).log().mean())


# A separable toy: references end in an even digit, generated answers in an odd one.
POS = [(f"{a}*2=", f"{2 * a}") for a in range(10, 30)]
NEG = [(f"{a}*2=", f"{2 * a + 1}") for a in range(10, 30)] + [(f"{a}*2=", f"{2 * a + 3}") for a in range(10, 20)]


def test_judge_text_is_prompt_separator_answer():
    assert judge_text("12*7=", "84") == "12*7=84"
    assert judge_text("Q?", "84", separator="\n") == "Q?\n84"


def test_balanced_weights_by_hand():
    """2 positives, 3 negatives: each positive 1/(2·2) = 0.25, each negative 1/(2·3) = 1/6; sum 1."""
    w = balanced_weights(torch.tensor([1.0, 0.0, 1.0, 0.0, 0.0]))
    assert torch.allclose(w, torch.tensor([0.25, 1 / 6, 0.25, 1 / 6, 1 / 6]))


def test_probabilities_do_not_depend_on_batch_padding():
    """Right padding + last-non-pad pooling: a short row scores the same alone and next to long rows."""
    judge = tiny_judge()
    prompts, answers = ["1*2=", "123456789*987654321=", "7*8="], ["2", "121932631112635269", "56"]
    batched = judge.prob_reference(prompts, answers)
    alone = torch.cat([judge.prob_reference([p], [a]) for p, a in zip(prompts, answers)])
    assert batched.shape == (3,) and ((batched > 0) & (batched < 1)).all()
    assert torch.allclose(batched, alone, atol=1e-6)
    assert judge.tokenizer.padding_side == "right"


def test_truncation_keeps_the_answer():
    judge = tiny_judge(max_length=6)
    d = judge.prob_reference(["AAAAAAAAAA12*7=", "BBBBBBBBBBBBBBBBBBBB12*7="], ["84", "84"])
    assert d[0] == d[1]  # only the last 6 characters "2*7=84" are seen


def test_train_step_reduces_bce_on_a_separable_toy():
    judge = tiny_judge(lr=1e-2)
    before = balanced_bce(judge, POS, NEG)
    first = judge.train_step(POS, NEG)
    assert first["loss"] == pytest.approx(before, rel=1e-4)  # the step reports the pre-step balanced BCE
    for _ in range(10):
        judge.train_step(POS, NEG)
    after = balanced_bce(judge, POS, NEG)
    assert after < 0.5 * before, (before, after)
    d_pos = judge.prob_reference([p for p, _ in POS], [a for _, a in POS])
    d_neg = judge.prob_reference([p for p, _ in NEG], [a for _, a in NEG])
    assert (d_pos > 0.5).float().mean() > 0.9 and (d_neg < 0.5).float().mean() > 0.9


def test_micro_batching_gives_the_same_step_as_one_batch():
    """The accumulated gradient is the one-batch gradient.  Compared through a plain SGD step (lr 1: the
    change is the gradient itself): Adam's first step moves a weight by ±lr whatever its gradient's size,
    so a gradient that is zero up to rounding moves by a sign that depends on the summation order — and
    on the CPU's vector width (ATEN_CPU_CAPABILITY)."""
    big, small = tiny_judge(micro_batch_size=1000), tiny_judge(micro_batch_size=7)
    for judge in (big, small):
        judge.optimizer = torch.optim.SGD(judge.model.parameters(), lr=1.0)
    a, b = big.train_step(POS, NEG), small.train_step(POS, NEG)
    assert a["loss"] == pytest.approx(b["loss"], rel=1e-5)
    assert a["grad_norm"] == pytest.approx(b["grad_norm"], rel=1e-5) and a["grad_norm"] > 1e-3
    for p, q in zip(big.model.parameters(), small.model.parameters()):
        assert torch.allclose(p, q, atol=1e-6)


def test_train_step_needs_both_classes():
    with pytest.raises(ValueError, match="both classes"):
        tiny_judge().train_step(POS, [])


def test_state_dict_round_trip_restores_weights_and_optimizer():
    a = tiny_judge(seed=0, lr=1e-3)
    for _ in range(2):
        a.train_step(POS, NEG)
    b = tiny_judge(seed=5, lr=1e-3)
    b.load_state_dict(a.state_dict())
    a.train_step(POS, NEG)
    b.train_step(POS, NEG)  # identical only if the AdamW moments were restored too
    for p, q in zip(a.model.parameters(), b.model.parameters()):
        assert torch.equal(p, q)


def test_seeded_build_is_deterministic_and_independent_of_global_rng():
    torch.manual_seed(1)
    a = tiny_judge(seed=3)
    torch.manual_seed(2)
    b = tiny_judge(seed=3)
    c = tiny_judge(seed=4)
    assert all(torch.equal(p, q) for p, q in zip(a.model.parameters(), b.model.parameters()))
    assert not torch.equal(a.model.score.weight, c.model.score.weight)


def test_frozen_copy_is_equal_and_cannot_train():
    judge = tiny_judge()
    copy = judge.frozen_copy()
    assert copy.optimizer is None
    assert torch.equal(copy.prob_reference(["1*2="], ["2"]), judge.prob_reference(["1*2="], ["2"]))
    with pytest.raises(RuntimeError, match="trainable=False"):
        copy.train_step(POS, NEG)


def test_init_from_a_saved_causal_lm_loads_its_backbone(tmp_path):
    tok = char_tokenizer()
    lm = tiny_causal_lm(TINY, len(tok), seed=11)
    lm.save_pretrained(tmp_path)
    tok.save_pretrained(tmp_path)
    judge = SequenceJudge.build(JudgeConfig(init_from="policy"), policy_dir=tmp_path, seed=0)
    lm_state = lm.model.state_dict()
    for name, value in judge.model.model.state_dict().items():
        assert torch.equal(value, lm_state[name]), name
    again = SequenceJudge.build(JudgeConfig(init_from=str(tmp_path)), seed=0)
    assert torch.equal(judge.model.score.weight, again.model.score.weight)  # the new head is seeded
    assert judge.model.config.pad_token_id == tok.pad_token_id


def test_init_from_policy_without_a_policy_dir_says_what_to_change(tmp_path):
    with pytest.raises(ValueError, match="init_from='policy'"):
        SequenceJudge.build(JudgeConfig(init_from="policy"), policy_dir=None)
    with pytest.raises(ValueError, match="not a directory"):
        SequenceJudge.build(JudgeConfig(init_from=str(tmp_path / "missing")))
