"""The real-model tier (``make test-real``, ``pytest -m real``): every method trains a few steps on a real
pretrained model, SmolLM2-135M-Instruct, in chat form with LoRA, on the CPU.

Each run: every LoRA parameter changes, rewards and losses are finite, a learned judge's weights change; a
checkpoint resumes to the same bits; the lean decode forward gives transformers' greedy tokens on the real
Llama, with and without LoRA adapters; the TRL adapter scores TRL's GRPOTrainer rollouts of the real model with the same reward; and a chat
prompt at step 0 gives a parseable answer on at least 80% of held-out multiplication prompts.

Skipped when the model is not fetched (``make test-real`` fetches it first: ``rewardzoo models fetch
smollm2-135m-instruct``).
"""

from __future__ import annotations

import math

import pytest
import torch

from rewardzoo.core.engines.decode import decode, stepper
from rewardzoo.core.engines.llama_family import LlamaFamilyStepper
from rewardzoo.core.logger import read_metrics
from rewardzoo.core.model_store import is_fetched, model_dir, verify
from rewardzoo.core.models import ModelConfig, load_policy
from rewardzoo.recipes import evaluate_start, make_trainer
from tests.helpers.lora import lora
from tests.helpers.trl_config import cpu_grpo_config

MODEL = "smollm2-135m-instruct"

pytestmark = [
    pytest.mark.real,
    pytest.mark.skipif(
        not is_fetched(MODEL),
        reason=f"{MODEL} is not fetched into {model_dir(MODEL)}: run "
        f"`make fetch-model` (rewardzoo models fetch {MODEL})",
    ),
]

SMALL = [
    "steps=2",
    "grpo.batch_size=16",
    "grpo.group_size=4",
    "grpo.micro_batch_size=16",
    "sampling.max_new_tokens=24",
    "eval.n_examples=4",
    "eval.every=0",
    "checkpoint_every=0",
    "logging.progress=false",
    "model.lora.r=4",
    "model.lora.alpha=8",
]
"""A few-step run of a real-model recipe: 4 prompts × G = 4, 24 new tokens, LoRA r 4."""
EASY = [
    "task.multiplication.digits_a=1",
    "task.multiplication.digits_b=1",
    "task.multiplication.n_train=60",
    "task.multiplication.n_eval=16",
    "task.multiplication.n_validation=0",
]
"""1-digit × 1-digit prompts, which the instruct model answers right often enough at step 0 that a group's
rewards differ (an all-equal group has zero advantage and moves nothing)."""


def lora_params(trainer) -> dict[str, torch.Tensor]:
    """The policy's LoRA parameters (the only trainable ones)."""
    named = {n: p.detach().clone() for n, p in trainer.policy.named_parameters() if p.requires_grad}
    assert named and all("lora_" in n for n in named), "LoRA runs train the adapters only"
    return named


def check_trains(trainer, reward_keys: tuple[str, ...]) -> list[dict]:
    """Train ``trainer``; assert every LoRA parameter changed and the logged rewards and losses are finite."""
    before = lora_params(trainer)
    trainer.train()
    after = lora_params(trainer)
    unchanged = [n for n in before if torch.equal(before[n], after[n])]
    assert not unchanged, f"LoRA parameters that did not change: {unchanged[:5]} ({len(unchanged)} of {len(before)})"
    rows = [r for r in read_metrics(trainer.run_dir / "metrics.jsonl") if "policy/loss" in r]
    assert len(rows) == trainer.cfg.steps
    for row in rows:
        for key in ("reward/mean", "policy/loss", "policy/grad_norm", *reward_keys):
            assert key in row and math.isfinite(row[key]), (key, row.get(key))
    return rows


def test_the_fetched_model_is_the_recorded_one_with_a_chat_template_and_end_of_turn_eos():
    assert verify(MODEL), "the converted weights no longer have the sha256 their manifest recorded"
    model, tokenizer = load_policy(ModelConfig(name=MODEL))
    assert type(model).__name__ == "LlamaForCausalLM" and sum(p.numel() for p in model.parameters()) == 134_515_008
    assert getattr(model.config, "quantization_config", None) is None
    assert tokenizer.chat_template and tokenizer.eos_token == "<|im_end|>"
    assert model.generation_config.eos_token_id == tokenizer.eos_token_id


@pytest.mark.parametrize("adapters", [False, True], ids=["plain", "lora"])
@torch.no_grad()
def test_the_lean_decode_forward_gives_transformers_greedy_tokens_on_the_real_llama(adapters):
    model, tokenizer = load_policy(ModelConfig(name=MODEL))
    if adapters:  # peft LoRA r 4 on every linear layer, B at random so that the adapters change the logits
        model = lora(model).eval()
    assert isinstance(stepper(model, 64), LlamaFamilyStepper)
    texts = ["<|im_start|>user\nWhat is 7 * 8?<|im_end|>\n<|im_start|>assistant\n", "<|im_start|>user\nHi<|im_end|>\n"]
    enc = tokenizer(texts, return_tensors="pt", padding=True)
    repeats = torch.tensor([1, 1])
    lean = decode(
        model,
        enc["input_ids"],
        enc["attention_mask"],
        repeats,
        12,
        [tokenizer.eos_token_id],
        tokenizer.pad_token_id,
        fast=True,
    )
    plain = decode(
        model,
        enc["input_ids"],
        enc["attention_mask"],
        repeats,
        12,
        [tokenizer.eos_token_id],
        tokenizer.pad_token_id,
        fast=False,
    )
    assert torch.equal(lean, plain)


def test_a_chat_prompt_at_step_0_gives_a_parseable_answer_on_80_percent_of_held_out_multiplication(tmp_path):
    metrics, _ = evaluate_start(
        "rlvr_multiplication_smollm2", ["eval.n_examples=50", f"run_dir={tmp_path}", "logging.progress=false"]
    )
    print(f"step-0 chat multiplication, 50 held-out prompts, greedy: {metrics}")
    assert metrics["eval/format_rate"] >= 0.8, metrics


def test_rlvr_trains_lora_on_chat_multiplication_and_resumes_to_the_same_bits(tmp_path):
    """Four steps, not two: LoRA's B starts at zero, so lora_A moves only from the second update whose advantage
    is not zero, and a step whose groups all score alike (sampling at T = 1) makes none (seen at 2 steps)."""
    common = ["rlvr_multiplication_smollm2", [*SMALL, *EASY, "checkpoint_every=1", "steps=4"]]
    straight = make_trainer(common[0], [*common[1], f"run_dir={tmp_path / 'a'}"])
    check_trains(straight, ("train/accuracy",))
    first = make_trainer(common[0], [*common[1], "steps=1", f"run_dir={tmp_path / 'b'}"])
    first.train()
    resumed = make_trainer(common[0], [*common[1], "resume=true", f"run_dir={tmp_path / 'b'}"])
    resumed.train()
    a, b = lora_params(straight), lora_params(resumed)
    assert all(torch.equal(a[n], b[n]) for n in a)
    last = [read_metrics(tmp_path / run / "metrics.jsonl")[-1] for run in ("a", "b")]
    assert last[0]["reward/mean"] == last[1]["reward/mean"]


def test_ral_trains_with_a_smollm2_judge_that_updates(tmp_path):
    trainer = make_trainer(
        "ral_multiplication_smollm2", [*SMALL, *EASY, "reward.ral.warmup_steps=1", f"run_dir={tmp_path}"]
    )
    judge_before = {n: p.detach().clone() for n, p in trainer.reward.judge.model.named_parameters()}
    check_trains(trainer, ("reward/judge_prob_mean",))
    changed = [n for n, p in trainer.reward.judge.model.named_parameters() if not torch.equal(judge_before[n], p)]
    assert changed, "the judge did not update"
    assert trainer.reward.judge.cfg.chat_template and trainer.reward.judge.tokenizer.chat_template


def test_varl_trains_on_hackable_multiplication_in_chat_form(tmp_path):
    easy = [k.replace("task.multiplication.", "task.hackable_multiplication.multiplication.") for k in EASY]
    warm = ["sft.steps=20", "sft.n_examples=40", "sft.warmup_steps=2", f"sft.cache_dir={tmp_path / 'sft'}"]
    # 4 steps: r = v·D is 0 on a group where no reply passes the strict proxy, and lora_A moves only from the
    # second update that has a non-zero advantage (lora_B starts at 0)
    trainer = make_trainer(
        "varl_hackable_multiplication_smollm2",
        [*SMALL, *easy, *warm, "steps=4", "reward.varl.warmup_steps=1", f"run_dir={tmp_path / 'run'}"],
    )
    disc_before = {n: p.detach().clone() for n, p in trainer.reward.discriminator.model.named_parameters()}
    rows = check_trains(trainer, ("reward/verifier_mean",))
    assert any(r["reward/verifier_mean"] > 0 for r in rows), "no rollout passed the proxy: nothing to learn from"
    changed = [
        n for n, p in trainer.reward.discriminator.model.named_parameters() if not torch.equal(disc_before[n], p)
    ]
    assert changed, "the discriminator did not update"


def test_rcrl_trains_with_the_policy_as_its_own_pairwise_judge_through_its_chat_template(tmp_path):
    trainer = make_trainer(
        "rcrl_rubric_writing_smollm2", [*SMALL, "task.rubric_writing.n_eval=8", f"run_dir={tmp_path}"]
    )
    rows = check_trains(trainer, ("reward/active_criteria",))
    assert trainer.reward.judge.cfg.chat_template and trainer.reward.judge.calls > 0
    assert all(r["reward/active_criteria"] >= 1 for r in rows)


def test_the_trl_adapter_scores_trl_rollouts_of_the_real_model_with_the_same_reward(tmp_path):
    datasets = pytest.importorskip("datasets")
    trl = pytest.importorskip("trl")
    from rewardzoo.integrations.trl import as_reward_func
    from rewardzoo.rewards.context import RewardContext
    from rewardzoo.rewards.rlvr import RLVR
    from rewardzoo.tasks.multiplication import Multiplication, MultiplicationConfig

    task = Multiplication(
        MultiplicationConfig(digits_a=1, digits_b=1, n_train=60, n_eval=16, n_validation=0, answer_format="instruct")
    )
    rows = [
        {"prompt": [{"role": "user", "content": e.prompt}], "reference": e.reference, **e.meta} for e in task.train[:4]
    ]
    seen = []

    class Recording(RLVR):
        def score(self, batch):
            out = super().score(batch)
            seen.append((batch, out.rewards.tolist()))
            return out

    model, tokenizer = load_policy(ModelConfig(name=MODEL))
    args = cpu_grpo_config(
        tmp_path, max_steps=1, max_completion_length=16, learning_rate=1e-5, gradient_checkpointing=True
    )
    reward = Recording.from_config(ctx=RewardContext(task=task))
    trainer = trl.GRPOTrainer(
        model=model,
        processing_class=tokenizer,
        train_dataset=datasets.Dataset.from_list(rows),
        args=args,
        reward_funcs=[as_reward_func(reward, parse=task.parse, num_generations=4)],
    )
    trainer.train()
    assert len(seen) == 1
    batch, rewards = seen[0]
    by_question = {e.prompt: e for e in task.train[:4]}
    assert set(batch.prompts) <= set(by_question)
    assert rewards == [task.score_completion(c, by_question[p]) for c, p in zip(batch.completions, batch.prompts)]


def test_a_sweep_trains_the_chat_warm_start_that_its_run_reads():
    """The sweep trains each SFT warm start once before its runs; in chat form the warm start is keyed by the
    rendered conversations, so the sweep must key it by the task as the run's trainer sees it (it used the plain
    task, and every chat run with SFT retrained its own warm start)."""
    from rewardzoo.core.sft import sft_cache_dir
    from rewardzoo.recipes import resolve, task_for
    from rewardzoo.sweep import warm_start_dir
    from rewardzoo.zoo import build_task

    cfg = resolve("varl_hackable_multiplication_smollm2")
    assert cfg.task.chat and cfg.sft.enabled
    read_by_the_run = sft_cache_dir(cfg, task_for(cfg))
    assert warm_start_dir(cfg) == read_by_the_run
    assert sft_cache_dir(cfg, build_task(cfg.task)) != read_by_the_run  # the plain task's key: the old bug


def test_the_real_board_s_rows_are_twins_with_valid_configurations():
    """``rewardzoo leaderboard --preset real``: every row resolves to a checked config (the model must be fetched,
    hence this tier), RLVR and RAL differ in the reward only, and the task's positive control is a row."""
    from pathlib import Path

    from rewardzoo import board as lb

    entries = lb.PRESETS["real"]
    lb.check_twins(entries)
    for spec in lb.specs(entries, [0], Path("runs"), quick=False):
        cfg = spec.config()
        assert cfg.task.chat and cfg.task.multiplication.digits_a == 2 and cfg.sampling.temperature == 0.7, spec.name
        assert (cfg.steps == 0) == ("steps=0" in spec.overrides), spec.name
    assert lb.POSITIVE_CONTROLS["chat_multiplication"].method in {e.method for e in entries}


def test_the_generation_verification_gap_script_runs_the_real_self_judge(tmp_path):
    """``benchmarks/rcrl.py gv-gap --recipe rcrl_rubric_writing_smollm2``: SmolLM2 judges its own samples through its
    chat template (the recipe's judge), and the table has every selector and the position consistency."""
    import runpy
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    script = runpy.run_path(str(root / "benchmarks" / "rcrl.py"))
    argv = ["gv-gap", "--recipe", "rcrl_rubric_writing_smollm2", "--n", "2", "--prompts", "3", "--name", "gv"]
    assert script["main"]([*argv, "--out", str(tmp_path / "runs"), "--results", str(tmp_path)]) == 0
    text = (tmp_path / "gv.md").read_text()
    assert "smollm2-135m-instruct as it starts" in text and "| oracle (upper bound) |" in text
    assert "answered 6 ordered comparisons" in text  # 3 prompts × one pair of samples × both orders
