"""The reference-distribution task: p_ref is known, the references follow it exactly, and the policy's
exact answer distribution (and its divergences to p_ref) is computed from its log-probabilities."""

import math
from collections import Counter

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from rewardzoo.core.config import ConfigError
from rewardzoo.core.trainer import Trainer
from rewardzoo.tasks.refdist import RefDist, RefDistConfig, answer_distribution_metrics, stratified_counts
from rewardzoo.zoo import build_task, load_config

TASK = RefDist()


def test_references_of_each_prompt_are_p_ref_exactly():
    """K = 64 Examples per prompt; exactly 64·p_ref(y) of them carry reference y."""
    by_prompt: dict[str, Counter] = {}
    for e in TASK.train:
        by_prompt.setdefault(e.prompt, Counter())[e.reference] += 1
    assert len(by_prompt) == 16 and len(TASK.train) == 16 * 64
    for e in TASK.eval:
        counts = by_prompt[e.prompt]
        assert sum(counts.values()) == 64
        assert [counts[a] / 64 for a in e.meta["answers"]] == e.meta["p_ref"]
        assert e.reference in e.meta["answers"]


def test_one_epoch_of_the_trainer_shows_every_prompt_its_references_with_frequencies_p_ref(fast_config):
    """The trainer draws prompts by a per-epoch permutation of the train split: over one epoch
    (1024 examples = 128 steps of 8 prompts) the references it hands out follow p_ref exactly."""
    cfg = fast_config("task.name=refdist", "grpo.batch_size=32", "grpo.group_size=4")
    trainer = Trainer(cfg, task=build_task(cfg.task), reward=_NoReward())
    seen: dict[str, Counter] = {}
    for step in range(1024 // 8):
        for e in trainer.prompts_for(step):
            seen.setdefault(e.prompt, Counter())[e.reference] += 1
    for e in trainer.task.eval:
        assert [seen[e.prompt][a] / 64 for a in e.meta["answers"]] == e.meta["p_ref"]


class _NoReward:
    """A reward is required to build a trainer; this test never scores."""

    warmup_steps = 0

    def score(self, batch):
        raise AssertionError("not called")

    def update(self, batch, out):
        return {}

    def state_dict(self):
        return {}

    def load_state_dict(self, state):
        pass


def test_answer_sets_and_shapes_of_p_ref():
    for e in TASK.eval:
        answers, p = e.meta["answers"], e.meta["p_ref"]
        assert 4 <= len(answers) <= 8 and len(set(answers)) == len(answers)
        assert all(a.isalpha() and a.islower() for a in answers)
        assert math.isclose(sum(p), 1.0) and min(p) >= 1 / 64
    entropy = {
        e.prompt: -sum(q * math.log(q) for q in e.meta["p_ref"]) / math.log(len(e.meta["p_ref"])) for e in TASK.eval
    }
    assert min(entropy.values()) < 0.75 and max(entropy.values()) > 0.95  # some peaked, some near-uniform
    assert [e.meta for e in RefDist().eval] == [e.meta for e in TASK.eval]  # reproducible
    assert [e.meta for e in RefDist(RefDistConfig(data_seed=1)).eval] != [e.meta for e in TASK.eval]


def test_demonstrations_are_uniform_over_the_set_by_default_or_the_references():
    """uniform: 64 demonstrations over k answers, each answer ⌊64/k⌋ or ⌈64/k⌉ times."""
    for e in TASK.eval:
        demos = Counter(x.demonstration for x in TASK.train if x.prompt == e.prompt)
        assert set(demos) == set(e.meta["answers"])
        assert max(demos.values()) - min(demos.values()) <= 1
    ref = RefDist(RefDistConfig(demonstrations="reference"))
    assert all(x.demonstration == x.reference for x in ref.train)


def test_parser_and_verifier():
    e = TASK.eval[0]
    inside, outside = e.meta["answers"][0], "zzzzz"
    assert TASK.parse(f" {inside} ") == inside and TASK.verify(inside, e.reference, e.meta) == 1.0
    assert TASK.parse(outside) == outside and TASK.verify(outside, e.reference, e.meta) == 0.0
    for bad in ["", "Red", "red blue", "red1", "a" * 13, "\x00"]:
        assert TASK.parse(bad) is None
    assert TASK.verify(None, e.reference, e.meta) == 0.0


@given(st.lists(st.floats(0.01, 1.0), min_size=2, max_size=16), st.integers(16, 200))
def test_stratified_counts_sum_to_the_total_keep_every_answer_and_round_within_one(weights, total):
    p = [w / sum(weights) for w in weights]
    counts = stratified_counts(p, total)
    assert sum(counts) == total and min(counts) >= 1
    if all(total * q >= 1 for q in p):
        assert all(abs(c - total * q) < 1 for c, q in zip(counts, p))


def test_answer_distribution_metrics_by_hand():
    """p = (¾, ¼); the policy puts 0.3 and 0.3 on the two answers and 0.4 elsewhere, so π_in = (½, ½):
    KL(p‖π) = ¾ log(3/2) + ¼ log(1/2); KL(π‖p) = ½ log(2/3) + ½ log 2; m = (5/8, 3/8);
    LC = ½ [(¼)²/(5/4) + (¼)²/(3/4)] = 1/15; outside = 0.4; top share ½; H(π) = log 2."""
    m = answer_distribution_metrics(torch.tensor([0.75, 0.25]), torch.tensor([0.3, 0.3]).log())
    kl_pm = 0.75 * math.log(0.75 / 0.625) + 0.25 * math.log(0.25 / 0.375)
    kl_qm = 0.5 * math.log(0.5 / 0.625) + 0.5 * math.log(0.5 / 0.375)
    expected = {
        "kl_ref_pi": 0.75 * math.log(1.5) + 0.25 * math.log(0.5),
        "kl_pi_ref": 0.5 * math.log(2 / 3) + 0.5 * math.log(2),
        "le_cam": 1 / 15,
        "kl_ref_mix": kl_pm,
        "js": 0.5 * kl_pm + 0.5 * kl_qm,
        "kl_mix_ref": 0.625 * math.log(0.625 / 0.75) + 0.375 * math.log(0.375 / 0.25),
        "outside_mass": 0.4,
        "top_answer_share": 0.5,
        "answer_entropy": math.log(2),
        "ref_top_answer_share": 0.75,
        "ref_answer_entropy": -(0.75 * math.log(0.75) + 0.25 * math.log(0.25)),
    }
    assert m.keys() == expected.keys()
    for key, value in expected.items():
        assert m[key] == pytest.approx(value, abs=1e-6), key


def _hand_logprob(model, tokenizer, prompt: str, answer: str, temperature: float) -> float:
    """log π(answer, EOS | prompt) token by token from the model's full logits (no packing, no fused head)."""
    prompt_ids = tokenizer(prompt)["input_ids"]
    target = tokenizer(answer, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
    ids = torch.tensor([prompt_ids + target])
    with torch.no_grad():
        logits = model(input_ids=ids).logits[0].double() / temperature  # [S, V]
    logp = torch.log_softmax(logits, dim=-1)  # [S, V]
    return sum(logp[len(prompt_ids) - 1 + t, tok].item() for t, tok in enumerate(target))


def test_exact_policy_distribution_matches_a_hand_computation(fast_config):
    """On an untrained tiny model at temperature 1.5: the trainer's scorer equals the token-by-token
    log-probability, and evaluate_policy's metrics equal those of π_in = softmax(hand log-probs)."""
    cfg = fast_config("task.name=refdist", "sampling.temperature=1.5", "grpo.micro_batch_size=5")
    trainer = Trainer(cfg, task=build_task(cfg.task), reward=_NoReward())
    examples = trainer.task.eval[:3]
    prompts = [e.prompt for e in examples for _ in e.meta["answers"]]
    answers = [a for e in examples for a in e.meta["answers"]]
    hand = torch.tensor(
        [_hand_logprob(trainer.policy, trainer.tokenizer, p, a, 1.5) for p, a in zip(prompts, answers)],
        dtype=torch.float64,
    )
    scored = trainer.score_completions(prompts, answers)
    assert torch.allclose(scored.double(), hand, atol=1e-4)
    got = trainer.task.evaluate_policy(trainer.score_completions, examples)
    start, want = 0, {}
    for e in examples:
        k = len(e.meta["answers"])
        pi = torch.softmax(hand[start : start + k], 0).tolist()
        p = e.meta["p_ref"]
        want.setdefault("kl_ref_pi", []).append(sum(a * math.log(a / b) for a, b in zip(p, pi)))
        want.setdefault("kl_pi_ref", []).append(sum(b * math.log(b / a) for a, b in zip(p, pi)))
        want.setdefault("top_answer_share", []).append(max(pi))
        want.setdefault("answer_entropy", []).append(-sum(b * math.log(b) for b in pi))
        want.setdefault("outside_mass", []).append(1 - sum(math.exp(x) for x in hand[start : start + k].tolist()))
        start += k
    for key, values in want.items():
        assert got[key] == pytest.approx(sum(values) / len(values), abs=1e-4), key


def test_trainer_evaluation_logs_the_divergences(fast_config):
    cfg = fast_config("task.name=refdist")
    trainer = Trainer(cfg, task=build_task(cfg.task), reward=_NoReward())
    metrics = trainer.evaluate()
    for key in [
        "kl_ref_pi",
        "kl_pi_ref",
        "js",
        "le_cam",
        "kl_ref_mix",
        "kl_mix_ref",
        "top_answer_share",
        "answer_entropy",
        "outside_mass",
        "accuracy",
        "format_rate",
    ]:
        assert math.isfinite(metrics[f"eval/{key}"]), key
    assert metrics["eval/kl_ref_pi"] > 0 and 0 <= metrics["eval/js"] <= math.log(2)


def test_bad_settings_fail_at_config_time():
    with pytest.raises(ConfigError, match=r"task\.refdist\.copies must be >= max_answers"):
        load_config(None, ["task.name=refdist", "task.refdist.copies=4"])
    with pytest.raises(ConfigError, match=r"task\.refdist\.demonstrations"):
        load_config(None, ["task.name=refdist", "task.refdist.demonstrations=greedy"])
    with pytest.raises(ConfigError, match=r"task\.refdist\.max_answers must be in \[2, 16\]"):
        load_config(None, ["task.name=refdist", "task.refdist.max_answers=17"])
    with pytest.raises(ConfigError, match=r"task\.refdist\.min_answers must be <= max_answers"):
        load_config(None, ["task.name=refdist", "task.refdist.min_answers=9"])
