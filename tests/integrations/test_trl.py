"""as_reward_func: rewardzoo rewards as TRL reward functions (unit tests, and a real GRPOTrainer run)."""

from __future__ import annotations

import math

import pytest
import torch

from rewardzoo.core.models import ModelConfig, load_policy
from rewardzoo.core.trainer import NonFiniteError
from rewardzoo.core.types import RewardOutput, Rollouts
from rewardzoo.integrations.trl import as_reward_func, completion_text, group_ids_of, prompt_text
from rewardzoo.rewards.context import RewardContext
from rewardzoo.rewards.functions import FunctionReward
from rewardzoo.rewards.rlvr import RLVR
from rewardzoo.tasks.multiplication import Multiplication, MultiplicationConfig
from tests.helpers.trl_config import cpu_grpo_config

TASK = Multiplication(MultiplicationConfig(digits_a=1, digits_b=1, n_train=16, n_eval=4))
PROMPTS = ["2*3=", "2*3=", "4*5=", "4*5="]
COMPLETIONS = ["6", "7", " 20", "x"]
COLUMNS = {"reference": ["6", "6", "20", "20"], "a": [2, 2, 4, 4], "b": [3, 3, 5, 5]}


class RunningMeanDigits:
    """A learned toy reward: r_i = (digits in completion_i) − b, where the baseline b tracks the
    batch mean of the digit count, b ← b + ½(mean − b), in ``update``."""

    warmup_steps = 0

    def __init__(self):
        self.baseline = 0.0
        self.updates = 0

    def score(self, batch: Rollouts) -> RewardOutput:
        digits = torch.tensor([float(sum(ch.isdigit() for ch in c)) for c in batch.completions])  # [N]
        return RewardOutput(rewards=digits - self.baseline, metrics={"reward/digits_mean": digits.mean().item()})

    def update(self, batch: Rollouts, out: RewardOutput) -> dict[str, float]:
        self.baseline += 0.5 * (out.metrics["reward/digits_mean"] - self.baseline)
        self.updates += 1
        return {"reward/baseline": self.baseline}

    def state_dict(self) -> dict:
        return {"baseline": self.baseline, "updates": self.updates}

    def load_state_dict(self, state: dict) -> None:
        self.baseline, self.updates = state["baseline"], state["updates"]


class Recording:
    """Wraps a real reward and keeps every batch it scored and what it returned."""

    warmup_steps = 0

    def __init__(self, reward):
        self.reward = reward
        self.seen: list[tuple[Rollouts, list[float]]] = []

    def score(self, batch: Rollouts) -> RewardOutput:
        out = self.reward.score(batch)
        self.seen.append((batch, out.rewards.tolist()))
        return out

    def update(self, batch: Rollouts, out: RewardOutput) -> dict[str, float]:
        return self.reward.update(batch, out)

    def state_dict(self) -> dict:
        return self.reward.state_dict()

    def load_state_dict(self, state: dict) -> None:
        self.reward.load_state_dict(state)


def test_rlvr_as_a_trl_function_scores_text_prompts():
    fn = as_reward_func(RLVR.from_config(ctx=RewardContext(task=TASK)), parse=TASK.parse)
    assert fn(PROMPTS, COMPLETIONS, **COLUMNS) == [1.0, 0.0, 1.0, 0.0]
    batch = fn.rollouts(PROMPTS, COMPLETIONS, COLUMNS)
    assert batch.answers == ["6", "7", "20", None]
    assert batch.meta == [{"a": 2, "b": 3}] * 2 + [{"a": 4, "b": 5}] * 2
    assert batch.group_ids.tolist() == [0, 0, 1, 1]
    assert (
        fn.__name__ == "RLVR"
        and as_reward_func(RLVR.from_config(ctx=RewardContext(task=TASK)), name="acc").__name__ == "acc"
    )


def test_trl_reads_the_name_it_logs_under():
    trl_utils = pytest.importorskip("trl.trainer.utils")
    assert (
        trl_utils.get_callable_name(as_reward_func(RLVR.from_config(ctx=RewardContext(task=TASK)), name="mult_acc"))
        == "mult_acc"
    )


def test_conversational_prompts_and_completions():
    prompts = [[{"role": "system", "content": "Be brief."}, {"role": "user", "content": p}] for p in PROMPTS]
    completions = [[{"role": "assistant", "content": [{"type": "text", "text": c}]}] for c in COMPLETIONS]
    fn = as_reward_func(RLVR.from_config(ctx=RewardContext(task=TASK)), parse=TASK.parse)
    assert fn(prompts, completions, **COLUMNS) == [1.0, 0.0, 1.0, 0.0]
    assert prompt_text(prompts[0]) == "2*3="
    two_turns = [
        {"role": "assistant", "content": "let me think"},
        {"role": "tool", "content": "42"},
        {"role": "assistant", "content": "6"},
    ]
    assert completion_text(two_turns) == "let me think\n6"
    with pytest.raises(ValueError, match="no 'user' message"):
        prompt_text([{"role": "system", "content": "hi"}])


def test_without_a_parser_the_answer_is_the_stripped_completion():
    batch = as_reward_func(RLVR.from_config(ctx=RewardContext(task=TASK))).rollouts(
        PROMPTS, ["6 ", "", "20", "x"], COLUMNS
    )
    assert batch.answers == ["6", None, "20", "x"]


def test_reference_column():
    fn = as_reward_func(RLVR.from_config(ctx=RewardContext(task=TASK)), parse=TASK.parse, reference_column="solution")
    with pytest.raises(KeyError, match=r"no column 'solution' \(columns: \['a', 'b', 'reference'\]\)"):
        fn(PROMPTS, COMPLETIONS, **COLUMNS, trainer_state=None)
    renamed = {"solution": COLUMNS["reference"], "a": COLUMNS["a"], "b": COLUMNS["b"]}
    assert fn(PROMPTS, COMPLETIONS, **renamed) == [1.0, 0.0, 1.0, 0.0]
    assert (
        as_reward_func(RLVR.from_config(ctx=RewardContext(task=TASK)), reference_column=None)
        .rollouts(PROMPTS, COMPLETIONS, {})
        .references
        == [None] * 4
    )


def test_group_ids_runs_and_blocks():
    assert group_ids_of(["a", "a", "b", "b", "b", "a"], None).tolist() == [0, 0, 1, 1, 1, 2]
    assert group_ids_of(["a", "a", "a", "a"], 2).tolist() == [0, 0, 1, 1]
    with pytest.raises(ValueError, match="not a multiple of num_generations=2"):
        group_ids_of(["a", "a", "b"], 2)
    with pytest.raises(ValueError, match=r"rows 0..1 do not share one prompt"):
        group_ids_of(["a", "b", "b", "b"], 2)
    with pytest.raises(ValueError, match="positive int"):
        as_reward_func(RLVR.from_config(ctx=RewardContext(task=TASK)), num_generations=0)


def test_learned_reward_updates_once_per_call_and_metrics_reach_log_metric():
    reward = RunningMeanDigits()
    fn = as_reward_func(reward)
    logged = []
    first = fn(PROMPTS, COMPLETIONS, **COLUMNS, log_metric=lambda k, v: logged.append((k, v)))
    assert first == [1.0, 1.0, 2.0, 0.0]  # digits 1, 1, 2, 0 minus baseline 0
    assert reward.updates == 1 and reward.baseline == 0.5  # mean 1 → b = 0 + ½(1 − 0)
    assert logged == [("reward/digits_mean", 1.0), ("reward/baseline", 0.5)]
    assert fn(PROMPTS, COMPLETIONS, **COLUMNS) == [0.5, 0.5, 1.5, -0.5]
    assert reward.updates == 2 and fn.calls == 2
    frozen = RunningMeanDigits()
    as_reward_func(frozen, learn=False)(PROMPTS, COMPLETIONS, **COLUMNS)
    assert frozen.updates == 0


def test_a_learned_reward_warms_up_on_the_first_batch_before_scoring_it():
    """warmup_steps = 2: the first call runs two update rounds on its batch (b: 0 → 0.5 → 0.75), then scores
    against the warmed baseline and learns once more (b → 0.875); later calls never warm up again."""
    reward = RunningMeanDigits()
    reward.warmup_steps = 2
    logged = []
    fn = as_reward_func(reward)
    first = fn(PROMPTS, COMPLETIONS, **COLUMNS, log_metric=lambda k, v: logged.append((k, v)))
    assert first == [0.25, 0.25, 1.25, -0.75]  # digits 1, 1, 2, 0 minus the warmed baseline 0.75
    assert reward.updates == 3 and reward.baseline == 0.875 and ("warmup/reward/baseline", 0.75) in logged
    fn(PROMPTS, COMPLETIONS, **COLUMNS)
    assert reward.updates == 4
    cold = RunningMeanDigits()
    cold.warmup_steps = 2
    with pytest.warns(UserWarning, match="untrained judge"):
        skipped = as_reward_func(cold, warmup=False)
    assert skipped(PROMPTS, COMPLETIONS, **COLUMNS) == [1.0, 1.0, 2.0, 0.0] and cold.updates == 1


def test_step_comes_from_trainer_state_else_the_call_count():
    transformers = pytest.importorskip("transformers")
    fn = as_reward_func(Recording(RLVR.from_config(ctx=RewardContext(task=TASK))), parse=TASK.parse)
    fn(PROMPTS, COMPLETIONS, **COLUMNS)
    fn(PROMPTS, COMPLETIONS, **COLUMNS)
    fn(PROMPTS, COMPLETIONS, **COLUMNS, trainer_state=transformers.TrainerState(global_step=17))
    assert [b.step for b, _ in fn.reward.seen] == [0, 1, 17]


def test_bad_rewards_and_non_rewards_are_clear_errors():
    class NaNReward(RLVR):
        def score(self, batch):
            return RewardOutput(rewards=torch.full((len(batch),), math.nan))

    with pytest.raises(NonFiniteError, match="reward nan returned non-finite rewards at step 0, rows \\[0, 1, 2, 3\\]"):
        as_reward_func(NaNReward(lambda *a: 0.0), name="nan")(PROMPTS, COMPLETIONS, **COLUMNS)
    with pytest.raises(TypeError, match="is not a rewardzoo Reward: it lacks warmup_steps, score, update"):
        as_reward_func(lambda prompts, completions, **kw: [0.0] * len(prompts))


def test_round_trip_through_function_reward_equals_the_reward():
    """FunctionReward(as_reward_func(r)) scores rewardzoo rollouts exactly like r."""
    examples = TASK.train[:4]
    rows = [e for e in examples for _ in range(2)]
    completions = [e.reference if i % 2 else "0" for i, e in enumerate(rows)]
    batch = Rollouts(
        prompts=[e.prompt for e in rows],
        completions=completions,
        answers=[TASK.parse(c) for c in completions],
        references=[e.reference for e in rows],
        group_ids=torch.arange(4).repeat_interleave(2),
        meta=[e.meta for e in rows],
        step=3,
    )
    direct = RLVR.from_config(ctx=RewardContext(task=TASK)).score(batch).rewards
    trip = (
        FunctionReward(as_reward_func(RLVR.from_config(ctx=RewardContext(task=TASK)), parse=TASK.parse))
        .score(batch)
        .rewards
    )
    assert trip.tolist() == direct.tolist() and direct.sum() == 4


def test_grpo_trainer_trains_with_rewardzoo_rewards(tmp_path):
    """A real TRL GRPOTrainer run of 2 steps on the tiny model, CPU, rewards from rewardzoo: RLVR
    (the task verifier) and a learned reward whose update must run once per TRL scoring call."""
    datasets = pytest.importorskip("datasets")
    trl = pytest.importorskip("trl")
    examples = TASK.train[:8]
    dataset = datasets.Dataset.from_list([{"prompt": e.prompt, "reference": e.reference, **e.meta} for e in examples])
    rlvr = Recording(RLVR.from_config(ctx=RewardContext(task=TASK)))
    learned = RunningMeanDigits()
    model, tokenizer = load_policy(ModelConfig(name="tiny"))
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    args = cpu_grpo_config(tmp_path, max_steps=2, max_completion_length=4, learning_rate=1e-3)
    trainer = trl.GRPOTrainer(
        model=model,
        processing_class=tokenizer,
        train_dataset=dataset,
        args=args,
        reward_funcs=[
            as_reward_func(rlvr, parse=TASK.parse, num_generations=4, name="mult_acc"),
            as_reward_func(learned, name="digits"),
        ],
    )
    trainer.train()

    by_prompt = {e.prompt: e for e in examples}
    assert len(rlvr.seen) == 2
    for step, (batch, rewards) in enumerate(rlvr.seen):
        assert len(batch) == 8 and batch.step == step
        assert batch.group_ids.tolist() == [0, 0, 0, 0, 1, 1, 1, 1]
        assert batch.references == [by_prompt[p].reference for p in batch.prompts]
        assert batch.meta == [by_prompt[p].meta for p in batch.prompts]
        assert rewards == [TASK.score_completion(c, by_prompt[p]) for c, p in zip(batch.completions, batch.prompts)]
    assert learned.updates == 2 and learned.baseline != 0.0
    logged = {k for row in trainer.state.log_history for k in row}
    assert {"rewards/mult_acc/mean", "rewards/digits/mean", "reward/verifier_mean", "reward/baseline"} <= logged
    changed = [n for n, p in model.named_parameters() if not torch.equal(before[n], p.detach().cpu())]
    assert len(changed) == len(before)
