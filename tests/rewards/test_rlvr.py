"""RLVR: verifier choice, the reward stack (hand-computed), logging, config errors, the build path."""

import math
import warnings

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from rewardzoo.core.types import Reward, Rollouts
from rewardzoo.rewards.context import RewardContext
from rewardzoo.rewards.rlvr import RLVR, RLVRConfig, language_mix, length_penalty
from rewardzoo.tasks.multiplication import Multiplication, MultiplicationConfig
from rewardzoo.zoo import build_reward, load_config

TASK = Multiplication(MultiplicationConfig(n_train=50, n_eval=10, answer_format="tags"))


def batch(completions, references, answers=None):
    n = len(completions)
    answers = [TASK.parse(c) for c in completions] if answers is None else answers
    return Rollouts(
        prompts=["p"] * n,
        completions=completions,
        answers=answers,
        references=references,
        group_ids=torch.arange(n) // 2,
        meta=[{}] * n,
        step=0,
    )


def test_plain_constructor_and_from_config_with_the_task():
    b = batch(["<answer>12</answer>", "<answer>13</answer>", "12", "<answer>12</answer>"], ["12", "12", "12", None])
    out = RLVR.from_config(ctx=RewardContext(task=TASK)).score(b)
    assert out.rewards.tolist() == [1.0, 0.0, 0.0, 0.0] and out.rewards.dtype == torch.float32
    assert set(out.components) == {"verifier"} and out.metrics == {"reward/verifier_mean": 0.25}
    custom = RLVR(lambda answer, reference, meta, completion: float(len(completion) > 3))
    assert custom.score(b).rewards.tolist() == [1.0, 1.0, 0.0, 1.0]
    assert isinstance(custom, Reward) and custom.update(b, out) == {} and custom.state_dict() == {}


def test_named_verifier_on_the_answer_or_the_whole_completion():
    """The contains hack: listing candidates passes only when the verifier reads the completion."""
    listing = "12 13 14 <answer>13</answer>"
    b = batch([listing, "<answer>12</answer>"], ["12", "12"])
    on_answer = RLVR.from_config(RLVRConfig(verifier="contains"), RewardContext(task=TASK)).score(b)
    on_completion = RLVR.from_config(
        RLVRConfig(verifier="contains", apply_to="completion"), RewardContext(task=TASK)
    ).score(b)
    assert on_answer.rewards.tolist() == [0.0, 1.0] and on_completion.rewards.tolist() == [1.0, 1.0]
    tagged = RLVR.from_config(RLVRConfig(verifier="tagged", apply_to="completion"), RewardContext(task=TASK)).score(b)
    assert tagged.rewards.tolist() == [0.0, 1.0]
    malformed = batch(["no tags"], ["12"], answers=[None])
    assert RLVR.from_config(RLVRConfig(verifier="exact"), RewardContext(task=TASK)).score(
        malformed
    ).rewards.tolist() == [0.0]


def test_stack_hand_computed():
    """w = (1, 0.2, 0.1, 1), L = 20 characters.

    row 0: correct, tags, 20 chars, ASCII          → 1 + 0.2 − 0.1·0   − 1·0     = 1.2
    row 1: wrong, tags, 40 chars (ℓ = 1)            → 0 + 0.2 − 0.1·1   − 0       = 0.1
    row 2: malformed, 30 chars (ℓ = 0.5), 3 of 10 letters Cyrillic → 0 + 0 − 0.05 − 0.3 = −0.35
    """
    rows = ["<answer>12</answer>x", "<answer>13</answer>" + "y" * 21, "abcdefg где" + "." * 19]
    cfg = RLVRConfig(format_weight=0.2, length_weight=0.1, length_target=20, language_mix_weight=1.0)
    with pytest.warns(UserWarning, match="accuracy must dominate"):
        reward = RLVR.from_config(cfg, RewardContext(task=TASK))
    out = reward.score(batch(rows, ["12", "12", "12"]))
    assert out.components["verifier"].tolist() == [1.0, 0.0, 0.0]
    assert out.components["format"].tolist() == [1.0, 1.0, 0.0]
    assert out.components["length"].tolist() == [0.0, 1.0, 0.5]
    assert out.components["language_mix"].tolist() == pytest.approx([0.0, 0.0, 0.3])
    assert out.rewards.tolist() == pytest.approx([1.2, 0.1, -0.35])
    assert set(out.metrics) == {f"reward/{k}_mean" for k in ("verifier", "format", "length", "language_mix")}
    assert out.metrics["reward/length_mean"] == pytest.approx(0.5)


def test_default_stack_is_accuracy_only_and_dominating_weights_do_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        RLVR.from_config(
            RLVRConfig(format_weight=0.2, length_weight=0.1, language_mix_weight=0.5), RewardContext(task=TASK)
        )
    out = RLVR.from_config(RLVRConfig(format_weight=0.5), RewardContext(task=TASK)).score(
        batch(["<answer>1</answer>"], ["12"])
    )
    assert set(out.components) == {"verifier", "format"} and out.rewards.tolist() == [0.5]


def test_language_mix_and_length_definitions():
    assert language_mix("") == 0.0 and language_mix("12 + 3 = 15") == 0.0
    assert language_mix("the answer 是 42") == pytest.approx(1 / 10)
    assert language_mix("привет", "LATIN") == 1.0 and language_mix("привет") == 0.0
    assert language_mix("αβγ abc") == 0.5  # a tie: the most frequent script keeps half
    assert [length_penalty("x" * n, 10) for n in (0, 10, 15, 20, 99)] == [0.0, 0.0, 0.5, 1.0, 1.0]


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"verifier": "regex"}, "must be 'task' or one of exact, last_number"),
        ({"apply_to": "prompt"}, "apply_to must be one of"),
        ({"apply_to": "completion"}, "needs a named verifier"),
        ({"format_weight": -0.1}, "format_weight must be >= 0; got -0.1"),
        ({"length_weight": math.nan}, "length_weight"),
        ({"accuracy_weight": 0.0}, "accuracy_weight must be > 0"),
        ({"length_target": 0}, "length_target"),
        ({"language_script": "LATN"}, "not a Unicode script name"),
    ],
)
def test_bad_configs_are_clear_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        RLVR.from_config(RLVRConfig(**kwargs), RewardContext(task=TASK))


def test_build_reward_reads_the_config_section():
    cfg = load_config(
        overrides=[
            "task.multiplication.answer_format=tags",
            "reward.rlvr.verifier=contains",
            "reward.rlvr.apply_to=completion",
            "reward.rlvr.format_weight=0.5",
        ]
    )
    reward = build_reward(cfg.reward, TASK)
    out = reward.score(batch(["12 <answer>7</answer>", "nothing"], ["12", "12"]))
    assert out.components["verifier"].tolist() == [1.0, 0.0] and out.rewards.tolist() == [1.5, 0.0]


@settings(max_examples=50, deadline=None)
@given(
    st.lists(st.text(max_size=60), min_size=1, max_size=6),
    st.floats(0, 3),
    st.floats(0, 3),
    st.floats(0, 3),
    st.sampled_from(["task", "exact", "last_number", "tagged", "contains", "math_verify"]),
)
def test_rewards_are_finite_and_bounded(completions, w_fmt, w_len, w_lang, verifier):
    cfg = RLVRConfig(
        verifier=verifier,
        format_weight=w_fmt,
        length_weight=w_len,
        language_mix_weight=w_lang,
        length_target=20,
        apply_to="completion" if verifier == "tagged" else "answer",
    )  # tags stay in
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reward = RLVR.from_config(cfg, RewardContext(task=TASK))
    out = reward.score(batch(completions, ["12"] * len(completions)))
    assert out.rewards.shape == (len(completions),) and torch.isfinite(out.rewards).all()
    assert (out.rewards >= -(w_len + w_lang) - 1e-6).all() and (out.rewards <= 1 + w_fmt + 1e-6).all()


def test_a_verifier_that_cannot_read_the_tasks_answers_is_refused():
    """Item 5 of issue 12: `tagged` on the parsed answer (tags already stripped) scores 0 on every row,
    so RL would train on zero reward with gradient norm 0; it is refused, naming the fix."""
    with pytest.raises(ValueError, match=r"verifier='tagged' .* scores 0 on all of the first 16 demonstrations"):
        RLVR.from_config(RLVRConfig(verifier="tagged"), RewardContext(task=TASK))
    assert RLVR.from_config(RLVRConfig(verifier="tagged", apply_to="completion"), RewardContext(task=TASK))
