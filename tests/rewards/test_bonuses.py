"""The exploration and usefulness bonuses of 004 App. B: leverage and perplexity reduction by hand, the group
mean left unchanged, a real tiny policy's log-likelihoods, and the switch on any reward through the config."""

import pytest
import torch

from rewardzoo.core.models import TinyModelConfig, char_tokenizer, tiny_causal_lm
from rewardzoo.core.types import Rollouts
from rewardzoo.judges.pairwise import RuleJudgeConfig
from rewardzoo.recipes import make_trainer
from rewardzoo.rewards.bonuses import BonusConfig, WithBonuses, group_zscore, leverage_scores, usefulness_scores
from rewardzoo.rewards.rcrl import RcRL, RcRLConfig, RcRLJudgeConfig

TINY = TinyModelConfig(hidden_size=32, num_layers=1, num_heads=2, num_kv_heads=1, intermediate_size=64)


def test_leverage_by_hand():
    """1-D points −1, 0, 1 (already centred): ΦᵀΦ = 2, λ = 10⁻³·2, e = φ²/(2 + λ) = (0.4998, 0, 0.4998).
    2-D: three points on the x axis and one off it — the odd one out has the largest leverage."""
    e = leverage_scores(torch.tensor([[-1.0], [0.0], [1.0]]), ridge=1e-3)
    assert e.tolist() == pytest.approx([1 / 2.002, 0.0, 1 / 2.002])
    odd = leverage_scores(torch.tensor([[1.0, 0.0], [2.0, 0.0], [3.0, 0.0], [2.0, 1.0]]), ridge=1e-3)
    assert odd.argmax().item() == 3 and odd.sum().item() == pytest.approx(2.0, abs=0.01)  # Σ leverage = rank


def test_usefulness_and_zscore_by_hand():
    """ℓ = (2, 3, 4); with y_0 shown first ℓ_1|0 = 2.5, ℓ_2|0 = 4 → u_0 = ((3 − 2.5) + (4 − 4))/2 = 0.25."""
    given = torch.tensor([[0.0, 2.5, 4.0], [2.0, 0.0, 3.0], [1.0, 3.0, 0.0]], dtype=torch.float64)
    u = usefulness_scores(torch.tensor([2.0, 3.0, 4.0], dtype=torch.float64), given)
    assert u.tolist() == pytest.approx([0.25, 0.5, 0.5])
    z = group_zscore(torch.tensor([1.0, 2.0, 3.0, 5.0, 5.0]), [[0, 1, 2], [3, 4]])
    assert z[:3].tolist() == pytest.approx([-1.2247, 0.0, 1.2247], abs=1e-3) and z[3:].tolist() == [0.0, 0.0]


def batch() -> Rollouts:
    meta = {"words": ["red", "cat"], "min_words": 2, "max_words": 4}
    texts = ["The red cat.", "The cat.", "A dog runs.", "red cat", "sun", "The red cat.", "xq", "a cat sees"]
    return Rollouts(
        prompts=["red cat 2-4:"] * 8,
        completions=texts,
        answers=texts,
        references=[None] * 8,
        group_ids=torch.tensor([0] * 4 + [1] * 4),
        meta=[meta] * 8,
        step=0,
    )


def test_bonuses_keep_each_group_mean_and_use_the_policy():
    tok = char_tokenizer()
    policy = tiny_causal_lm(TINY, len(tok), seed=0)
    inner = RcRL(RcRLConfig(rubric="rubric_writing", judge=RcRLJudgeConfig(kind="rule", rule=RuleJudgeConfig())))
    reward = WithBonuses(inner, BonusConfig(exploration_weight=0.1, usefulness_weight=0.2, dim=2), seed=0)
    with pytest.raises(RuntimeError, match="bind_policy"):
        reward.score(batch())
    reward.bind_policy(policy, tok)
    plain, out = inner.score(batch()).rewards, reward.score(batch())
    assert out.rewards.view(2, 4).mean(1).tolist() == pytest.approx([0.5, 0.5], abs=1e-5)  # RcRL's ½ survives
    assert not torch.allclose(out.rewards, plain)
    expected = (
        plain.double()
        + 0.1 * group_zscore(out.components["bonus/exploration"], [[0, 1, 2, 3], [4, 5, 6, 7]])
        + 0.2 * group_zscore(out.components["bonus/usefulness"], [[0, 1, 2, 3], [4, 5, 6, 7]])
    )
    assert out.rewards.tolist() == pytest.approx(expected.tolist(), abs=1e-5)
    assert {"reward/bonus/exploration_mean", "reward/bonus/usefulness_mean"} <= set(out.metrics)


def test_usefulness_matches_the_policy_log_likelihoods():
    """Group of two: u_0 = ℓ_1 − ℓ_1|0, the log-likelihoods computed here from one unpadded forward each."""
    tok = char_tokenizer()
    policy = tiny_causal_lm(TINY, len(tok), seed=3).eval()

    def nll(context: str, text: str) -> float:
        ids = tok(context + text)["input_ids"]
        n = len(tok(text, add_special_tokens=False)["input_ids"])
        with torch.no_grad():
            logp = torch.log_softmax(policy(input_ids=torch.tensor([ids])).logits[0].double(), -1)
        return float(-sum(logp[len(ids) - n - 1 + t, ids[len(ids) - n + t]] for t in range(n)) / n)

    b = Rollouts(
        prompts=["p:"] * 2,
        completions=["ab c", "de"],
        answers=["ab c", "de"],
        references=[None] * 2,
        group_ids=torch.zeros(2, dtype=torch.long),
        meta=[{}] * 2,
        step=0,
    )
    reward = WithBonuses(
        RcRL(RcRLConfig(rubric="rubric_writing", judge=RcRLJudgeConfig(kind="rule"))),
        BonusConfig(usefulness_weight=1.0, micro_batch_size=3),
    )
    reward.bind_policy(policy, tok)
    u = reward.usefulness(b, [[0, 1]])
    assert u.tolist() == pytest.approx(
        [nll("p:", "de") - nll("p:ab c\n\np:", "de"), nll("p:", "ab c") - nll("p:de\n\np:", "ab c")], abs=1e-5
    )


def test_bonuses_switch_on_through_the_config(fast_config):
    """make_trainer wraps the named reward and binds the live policy (a run's keys are checked in tests/test_docs.py)."""
    cfg = fast_config(
        "task.name=rubric_writing",
        "task.rubric_writing.n_train=200",
        "task.rubric_writing.n_eval=16",
        "sft.disjoint_rl_prompts=false",
        "reward.name=rcrl",
        "reward.rcrl.rubric=rubric_writing",
        "reward.rcrl.judge.kind=rule",
        "reward.bonuses.exploration_weight=0.1",
        "reward.bonuses.usefulness_weight=0.1",
        "steps=2",
    )
    trainer = make_trainer(cfg)
    assert isinstance(trainer.reward, WithBonuses) and trainer.reward.policy is trainer.policy
    assert isinstance(trainer.reward.reward, RcRL) and trainer.reward.reward.judge is not None
    with pytest.raises(ValueError, match=r"reward.bonuses.exploration_weight must be >= 0; got -1"):
        fast_config("reward.bonuses.exploration_weight=-1")
