"""The judge readouts: packing and pooling shapes, a hand-computed likelihood readout on a tiny LM,
padding independence, the optimiser's groups, state round trips, and the switch reaching VARL."""

import pytest
import torch

from rewardzoo.core.config import ConfigError
from rewardzoo.core.models import TinyModelConfig, char_tokenizer, tiny_causal_lm
from rewardzoo.judges.classifier import JudgeConfig, SequenceJudge
from rewardzoo.judges.readouts import (
    LikelihoodJudgeModel,
    answer_states,
    last_pool,
    mean_pool,
    pack_answers,
    reduce_loglik,
)
from rewardzoo.rewards.context import RewardContext
from rewardzoo.rewards.varl import VARL, VARLConfig
from rewardzoo.tasks.multiplication import Multiplication, MultiplicationConfig
from rewardzoo.zoo import load_config
from tests.rewards.judged import batch

TINY = TinyModelConfig(hidden_size=32, num_layers=1, num_heads=2, num_kv_heads=1, intermediate_size=64)
ALL = [
    dict(readout="last_token"),
    dict(readout="last_token", end_token=True),
    dict(readout="answer_mean"),
    dict(readout="answer_mean", end_token=True),
    dict(readout="lm_likelihood"),
    dict(readout="lm_likelihood", end_token=True, lm_reduce="sum"),
]
IDS = ["last", "last+eos", "mean", "mean+eos", "lm", "lm_sum+eos"]
POS = [(f"{a}*2=", f"{2 * a}") for a in range(10, 20)]
NEG = [(f"{a}*2=", f"{2 * a + 1}") for a in range(10, 20)]


def judge(seed: int = 0, **kw) -> SequenceJudge:
    return SequenceJudge.build(JudgeConfig(tiny=TINY, **kw), seed=seed)


def test_pack_answers_marks_the_answer_tokens_and_cuts_the_prompt_from_the_left():
    """Char tokenizer: "12*7=" + "84" (+ EOS) → ids of the text; positions 4, 5 (, 6) predict the answer's
    tokens; with max_length 4 only "7=" of the prompt is kept, the answer whole."""
    tok = char_tokenizer()
    b = pack_answers(tok, [("12*7=", "84"), ("1*2=", "2")], "", 64, end_token=True)
    assert b.input_ids.shape == (2, 8) and b.targets.shape == (2, 3)  # [n, S], [n, T]
    assert tok.decode(b.input_ids[0], skip_special_tokens=True) == "12*7=84" and b.input_ids[0, -1] == tok.eos_token_id
    assert b.positions[0].tolist() == [4, 5, 6] and b.mask.tolist() == [[True] * 3, [True, True, False]]
    assert b.targets[0].tolist() == tok("84", add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
    cut = pack_answers(tok, [("12*7=", "84")], "", 4, end_token=False)
    assert tok.decode(cut.input_ids[0]) == "7=84" and cut.mask.sum() == 2
    with pytest.raises(ValueError, match="end_token=true"):
        pack_answers(tok, [("12*7=", "")], "", 64, end_token=False)


def test_pooling_functions_by_hand():
    """states [1, 3, 2] = rows (1, 2), (3, 4), (5, 6); mask keeps the first two tokens: mean (2, 3), last (3, 4)."""
    states = torch.tensor([[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]])
    mask = torch.tensor([[True, True, False]])
    assert mean_pool(states, mask).tolist() == [[2.0, 3.0]]
    assert last_pool(states, mask).tolist() == [[3.0, 4.0]]
    logp = torch.tensor([[-1.0, -3.0, 0.0]])
    assert reduce_loglik(logp, mask, "sum").tolist() == [-4.0] and reduce_loglik(logp, mask, "mean").tolist() == [-2.0]


def test_answer_states_are_the_answer_tokens_own_positions():
    tok = char_tokenizer()
    b = pack_answers(tok, [("12*7=", "84"), ("1*2=", "2")], "", 64, end_token=False)
    hidden = torch.arange(2 * 7, dtype=torch.float32).view(2, 7, 1)  # [n, S, 1]: value = row·7 + position
    states = answer_states(hidden, b)  # [n, T, 1]
    assert states.shape == (2, 2, 1) and states[0, :, 0].tolist() == [5.0, 6.0] and states[1, 0, 0] == 7 + 4


def test_lm_likelihood_is_the_calibrated_answer_log_likelihood_by_hand():
    """z = a·ℓ + b with ℓ computed from the tiny LM's own full logits on the joined text: the mean (or sum)
    over the answer tokens (and EOS) of log softmax(logits[t − 1])[token t]."""
    tok = char_tokenizer()
    lm = tiny_causal_lm(TINY, len(tok), seed=3)
    for reduce, end in (("mean", False), ("sum", True)):
        model = LikelihoodJudgeModel(lm, reduce)
        with torch.no_grad():
            model.scale.fill_(2.0)
            model.bias.fill_(-0.5)
        ids = tok("12*7=84", add_special_tokens=False)["input_ids"] + ([tok.eos_token_id] if end else [])
        with torch.no_grad():
            logp = torch.log_softmax(lm(torch.tensor([ids])).logits[0].double(), -1)  # [S, V]
        answer = range(5, len(ids))  # the tokens after "12*7="
        terms = [logp[t - 1, ids[t]].item() for t in answer]
        ell = sum(terms) if reduce == "sum" else sum(terms) / len(terms)
        z = model(pack_answers(tok, [("12*7=", "84")], "", 64, end_token=end))
        assert z.shape == (1,) and z.item() == pytest.approx(2.0 * ell - 0.5, abs=1e-5)


@pytest.mark.parametrize("kw", ALL, ids=IDS)
def test_every_readout_scores_a_row_the_same_alone_and_batched(kw):
    j = judge(**kw)
    prompts, answers = ["1*2=", "123456789*987654321=", "7*8="], ["2", "121932631112635269", "56"]
    batched = j.prob_reference(prompts, answers)
    alone = torch.cat([j.prob_reference([p], [a]) for p, a in zip(prompts, answers)])
    assert batched.shape == (3,) and ((batched > 0) & (batched < 1)).all()
    assert torch.allclose(batched, alone, atol=1e-6)


@pytest.mark.parametrize("kw", ALL, ids=IDS)
def test_every_readout_learns_a_separable_toy(kw):
    j = judge(lr=1e-2, **kw)
    first = j.train_step(POS, NEG)["loss"]
    for _ in range(15):
        last = j.train_step(POS, NEG)["loss"]
    assert last < first


@pytest.mark.parametrize(
    "kw",
    ALL + [dict(readout="lm_likelihood", head_lr=0.1, freeze_backbone=True), dict(readout="answer_mean", head_lr=0.1)],
    ids=IDS + ["lm-frozen", "mean-head_lr"],
)
def test_state_dict_round_trip_continues_exactly(kw):
    a = judge(seed=0, lr=1e-3, **kw)
    for _ in range(2):
        a.train_step(POS, NEG)
    b = judge(seed=5, lr=1e-3, **kw)
    b.load_state_dict(a.state_dict())
    a.train_step(POS, NEG)
    b.train_step(POS, NEG)  # identical only if weights, calibration and every AdamW group's moments came back
    assert all(torch.equal(p, q) for p, q in zip(a.model.parameters(), b.model.parameters()))
    copy = a.frozen_copy()
    assert torch.equal(copy.logit_reference(["1*2="], ["2"]), a.logit_reference(["1*2="], ["2"]))


def test_head_lr_and_freeze_backbone_shape_the_optimizer():
    """head_lr: two AdamW groups (backbone at lr, readout at head_lr); freeze_backbone: only a and b move."""
    default = judge()
    assert len(default.optimizer.param_groups) == 1  # unchanged from before the switch: same state layout
    grouped = judge(readout="answer_mean", head_lr=0.05)
    assert [g["lr"] for g in grouped.optimizer.param_groups] == [1e-3, 0.05]
    assert grouped.optimizer.param_groups[1]["params"] == list(grouped.model.score.parameters())
    frozen = judge(readout="lm_likelihood", freeze_backbone=True, head_lr=0.1)
    lm_before = [p.detach().clone() for p in frozen.model.lm.parameters()]
    frozen.train_step(POS, NEG)
    assert all(torch.equal(p, q) for p, q in zip(lm_before, frozen.model.lm.parameters()))
    assert frozen.calibration() != {"calibration_scale": 1.0, "calibration_bias": 0.0}
    assert default.calibration() == {}


def test_lm_likelihood_from_a_saved_causal_lm_keeps_its_head(tmp_path):
    tok = char_tokenizer()
    lm = tiny_causal_lm(TINY, len(tok), seed=11)
    lm.save_pretrained(tmp_path)
    tok.save_pretrained(tmp_path)
    j = SequenceJudge.build(JudgeConfig(init_from=str(tmp_path), readout="lm_likelihood"), seed=0)
    saved = lm.state_dict()
    assert all(torch.equal(v, saved[k]) for k, v in j.model.lm.state_dict().items())
    assert j.calibration() == {"calibration_scale": 1.0, "calibration_bias": 0.0}


def test_bad_readout_settings_fail_at_config_time():
    with pytest.raises(ConfigError, match=r"reward\.ral\.judge\.readout must be one of last_token"):
        load_config(None, ["reward.name=ral", "reward.ral.judge.readout=cls"])
    with pytest.raises(ConfigError, match=r"lm_reduce must be one of mean, sum"):
        load_config(None, ["reward.name=ral", "reward.ral.judge.lm_reduce=max"])


def test_the_readout_switch_reaches_varl_s_discriminator():
    """VARL's discriminator is the same SequenceJudge: with readout lm_likelihood it scores and learns."""
    task = Multiplication(MultiplicationConfig(n_train=20, n_eval=4))
    disc = JudgeConfig(tiny=TINY, readout="lm_likelihood", end_token=True, lr=1e-2)
    varl = VARL.from_config(VARLConfig(discriminator=disc, warmup_steps=0), RewardContext(task=task))
    b = batch()
    out = varl.score(b)
    stats = varl.update(b, out)
    assert out.rewards.shape == (6,) and stats["disc/updated"] == 1.0
    assert isinstance(varl.discriminator.model, LikelihoodJudgeModel)
