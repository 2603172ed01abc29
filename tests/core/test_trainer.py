"""End-to-end behaviour of the GRPO loop on a real tiny transformers model (CPU, seconds)."""

import json

import pytest
import torch

from rewardzoo.core.config import ConfigError
from rewardzoo.core.logger import read_metrics
from rewardzoo.core.trainer import NonFiniteError, Trainer
from rewardzoo.core.types import RewardOutput
from rewardzoo.recipes import make_trainer as make_recipe_trainer
from rewardzoo.zoo import build_task


class DigitShare:
    """A dense test reward with real variance from an untrained model: the share of digits."""

    warmup_steps = 0

    def __init__(self, poison_step: int | None = None):
        self.poison_step = poison_step
        self.updates = 0

    def score(self, batch):
        r = torch.tensor([sum(c.isdigit() for c in t) / max(len(t), 1) for t in batch.completions])
        if batch.step == self.poison_step:
            r[3] = float("nan")
        return RewardOutput(rewards=r, components={"digits": r})

    def update(self, batch, out):
        self.updates += 1
        return {"digits/updates": float(self.updates)}

    def state_dict(self):
        return {"updates": self.updates}

    def load_state_dict(self, state):
        self.updates = state["updates"]


def make_trainer(cfg, reward=None):
    return Trainer(cfg, task=build_task(cfg.task), reward=reward or DigitShare())


def params(trainer):
    return {n: p.detach().clone() for n, p in trainer.policy.named_parameters()}


def test_smoke_every_trained_parameter_changes_and_metrics_are_logged(fast_config):
    cfg = fast_config("steps=3", "eval.every=2")
    trainer = make_trainer(cfg)
    before = params(trainer)
    trainer.train()
    after = params(trainer)
    unchanged = [n for n in before if torch.equal(before[n], after[n])]
    assert not unchanged, f"parameters that did not change: {unchanged}"
    rows = read_metrics(trainer.run_dir / "metrics.jsonl")
    assert [r["step"] for r in rows] == [0, 1, 2, 3]
    assert "eval/accuracy" in rows[0] and "eval/accuracy" in rows[2] and "eval/accuracy" in rows[3]
    for key in [
        "reward/mean",
        "policy/loss",
        "policy/entropy",
        "policy/grad_norm",
        "time/step_s",
        "train/accuracy",
        "analysis/corr/digits/correct",
        "digits/updates",
    ]:
        assert key in rows[1], key
    assert (trainer.run_dir / "config.yaml").exists()
    evals = read_metrics(trainer.run_dir / "eval_rows.jsonl")
    assert [e["step"] for e in evals] == [0, 2, 3] and all(len(e["rows"]["correct"]) == 16 for e in evals)
    assert sum(evals[-1]["rows"]["correct"]) / 16 == rows[3]["eval/accuracy"]
    assert list((trainer.run_dir / "tensorboard").iterdir()) if cfg.logging.tensorboard else True
    assert (trainer.run_dir / "checkpoints" / "step_000003" / "trainer_state.json").exists()


def test_micro_batched_update_equals_one_batch_update(fast_config, tmp_path):
    results = []
    for micro in (32, 5):
        trainer = make_trainer(
            fast_config(
                "steps=1",
                f"grpo.micro_batch_size={micro}",
                "eval.n_examples=1",
                f"run_dir={tmp_path / f'micro{micro}'}",
                "grpo.loss_type=dapo",
                "checkpoint_every=0",
            )
        )
        trainer.train()
        results.append(params(trainer))
    for name in results[0]:
        torch.testing.assert_close(results[0][name], results[1][name], rtol=1e-5, atol=1e-6, msg=name)


@pytest.mark.parametrize(
    "loss", [("grpo", "sequence"), ("cispo", "token"), ("sapo", "sequence"), ("luspo", "sequence")]
)
def test_new_losses_train_micro_batched_as_one_batch(fast_config, tmp_path, loss):
    """GSPO, CISPO, SAPO and LUSPO through the trainer at μ = 2: micro-batches of 5 give the one-batch update."""
    loss_type, level = loss
    results = []
    for micro in (32, 5):
        trainer = make_trainer(
            fast_config(
                "steps=1",
                f"grpo.micro_batch_size={micro}",
                "grpo.num_iterations=2",
                "eval.n_examples=1",
                f"run_dir={tmp_path / f'micro{micro}'}",
                f"grpo.loss_type={loss_type}",
                f"grpo.importance_sampling_level={level}",
                "checkpoint_every=0",
            )
        )
        trainer.train()
        results.append(params(trainer))
    for name in results[0]:
        torch.testing.assert_close(results[0][name], results[1][name], rtol=1e-5, atol=1e-6, msg=name)


def test_resume_continues_exactly(fast_config, tmp_path):
    straight = make_trainer(fast_config("steps=4", "checkpoint_every=2", f"run_dir={tmp_path / 'a'}"))
    straight.train()
    first = make_trainer(fast_config("steps=2", "checkpoint_every=2", f"run_dir={tmp_path / 'b'}"))
    first.train()
    resumed = make_trainer(fast_config("steps=4", "checkpoint_every=2", "resume=true", f"run_dir={tmp_path / 'b'}"))
    assert resumed.step == 0
    resumed.train()
    a, b = params(straight), params(resumed)
    for name in a:
        assert torch.equal(a[name], b[name]), name
    assert resumed.reward.updates == straight.reward.updates == 4
    rows_a = read_metrics(tmp_path / "a" / "metrics.jsonl")
    rows_b = read_metrics(tmp_path / "b" / "metrics.jsonl")
    assert [r["step"] for r in rows_b] == [r["step"] for r in rows_a]
    assert rows_a[-1]["reward/mean"] == rows_b[-1]["reward/mean"]


def test_resume_without_checkpoint_is_a_clear_error(fast_config):
    with pytest.raises(ConfigError, match="holds no complete checkpoint"):
        make_trainer(fast_config("resume=true")).train()


def test_non_finite_reward_stops_before_any_update(fast_config):
    trainer = make_trainer(fast_config("steps=3", "checkpoint_every=0"), reward=DigitShare(poison_step=1))
    with pytest.raises(NonFiniteError, match=r"reward DigitShare returned non-finite rewards at step 1, rows \[3\]"):
        trainer.train()
    assert trainer.step == 1  # step 0 completed, step 1 stopped
    snapshot = params(trainer)
    trainer.step = 1
    with pytest.raises(NonFiniteError):
        trainer.score(trainer.rollout(1)[0])
    assert all(torch.equal(snapshot[n], p) for n, p in trainer.policy.named_parameters())
    assert trainer.reward.updates == 1  # the poisoned batch never reached update()


def test_non_finite_gradient_leaves_parameters_untouched(fast_config):
    trainer = make_trainer(fast_config("steps=1", "checkpoint_every=0"))
    before = params(trainer)
    victim = trainer.policy.model.layers[0].mlp.up_proj.weight
    victim.register_hook(lambda g: g * float("inf"))
    with pytest.raises(NonFiniteError, match="non-finite gradient at step 0 in .*up_proj"):
        trainer.train()
    assert all(torch.equal(before[n], p) for n, p in trainer.policy.named_parameters())
    assert all(p.grad is None for p in trainer.policy.parameters())


def test_lora_with_kl_trains_only_adapters(fast_config):
    trainer = make_trainer(
        fast_config(
            "steps=2",
            "model.lora.enabled=true",
            "model.lora.r=4",
            "grpo.beta=0.1",
            "grpo.kl_estimator=k3",
            "checkpoint_every=0",
            "grpo.lr=1e-2",
        )
    )
    before = params(trainer)
    last = trainer.train()
    changed = {n for n, p in trainer.policy.named_parameters() if not torch.equal(before[n], p)}
    assert changed and all("lora_" in n for n in changed)
    assert all(not torch.equal(before[n], p) for n, p in trainer.policy.named_parameters() if p.requires_grad)
    assert trainer.ref.copy is None  # the reference is the adapters-disabled base, not a copy
    assert last["policy/kl"] >= 0


def test_multiple_inner_iterations_clip(fast_config):
    last = make_trainer(
        fast_config(
            "steps=2",
            "grpo.num_iterations=3",
            "grpo.lr=3e-2",
            "checkpoint_every=0",
            "grpo.epsilon_high=0.01",
            "grpo.epsilon_low=0.01",
        )
    ).train()
    assert last["policy/ratio_mean"] == pytest.approx(1.0)  # logged from the first (on-policy) iteration
    assert "policy/clip_high_frac" in last


def test_sampling_logprobs_trigger_truncated_importance_sampling(fast_config):
    trainer = make_trainer(fast_config("steps=1", "checkpoint_every=0", "grpo.is_cap=1.5"))
    generate = trainer.engine.generate

    def with_sampler_logprobs(prompts, n=1, greedy=False):
        gen = generate(prompts, n=n, greedy=greedy)
        gen.sampling_logprobs = torch.full(gen.completion_ids.shape, -0.5)
        return gen

    trainer.engine.generate = with_sampler_logprobs
    last = trainer.train()
    assert 0 < last["policy/is_weight_mean"] <= 1.5


def test_config_is_written_and_reloadable(fast_config):
    from omegaconf import OmegaConf

    trainer = make_trainer(fast_config("steps=0"))
    trainer.train()
    saved = OmegaConf.load(trainer.run_dir / "config.yaml")
    assert saved.grpo.batch_size == 32 and saved.recipe.name == "rlvr_multiplication"
    assert json.loads((trainer.run_dir / "metrics.jsonl").read_text().splitlines()[0])["step"] == 0


def test_mask_truncated_completions_keeps_no_loss_tokens_of_truncated_rows(fast_config):
    """With the switch on, rows that hit max_new_tokens without EOS contribute no loss tokens (and the
    global token count excludes them); without it they are trained on like the others."""
    from rewardzoo.core.types import Generation

    gen = Generation(
        prompt_ids=[[1, 5], [1, 6, 7], [1, 8]],
        completion_ids=torch.tensor([[10, 2, 0, 0], [11, 12, 13, 14], [15, 16, 2, 0]]),
        completion_mask=torch.tensor([[1, 1, 0, 0], [1, 1, 1, 1], [1, 1, 1, 0]]).bool(),
        texts=["a", "bcde", "fg"],
        truncated=torch.tensor([False, True, False]),
    )
    for switch, tokens in ((False, 2 + 4 + 3), (True, 2 + 3)):
        trainer = make_trainer(
            fast_config(
                "steps=0", f"grpo.mask_truncated_completions={str(switch).lower()}", "grpo.sort_by_length=false"
            )
        )
        batches, norm = trainer.micro_batches(gen)
        assert norm.num_tokens == tokens
        masks = {row: b.batch.mask[j] for b in batches for j, row in enumerate(b.rows)}
        assert bool(masks[1].any()) is (not switch) and masks[0].sum() == 2 and masks[2].sum() == 3


def test_mask_truncated_completions_trains_and_logs(fast_config):
    last = make_trainer(fast_config("steps=1", "checkpoint_every=0", "grpo.mask_truncated_completions=true")).train()
    assert (
        last["policy/masked_truncated_frac"] == last["policy/truncated_frac"] > 0
    )  # 4 new tokens: most rows truncated


def test_a_reward_missing_part_of_the_protocol_is_named(fast_config):
    class NoWarmup:
        def score(self, batch):
            return RewardOutput(rewards=torch.zeros(len(batch)))

        def update(self, batch, out):
            return {}

    with pytest.raises(
        TypeError,
        match="NoWarmup is not a rewardzoo Reward: it lacks warmup_steps, state_dict, "
        "load_state_dict.*subclass rewardzoo.FixedReward",
    ):
        make_trainer(fast_config("steps=0"), reward=NoWarmup())


def test_prompt_order_is_one_permutation_per_epoch(fast_config):
    """Consecutive steps walk one seeded permutation of the RL prompts; a new epoch reshuffles."""
    trainer = make_trainer(fast_config("steps=0", "task.multiplication.n_train=24"))
    n, per = len(trainer.prompts), trainer.num_prompts
    epoch = [e.prompt for s in range(n // per) for e in trainer.prompts_for(s)]
    assert sorted(epoch) == sorted(e.prompt for e in trainer.prompts)
    assert [e.prompt for e in trainer.prompts_for(n // per)] != epoch[:per]


def test_non_finite_loss_stops_before_the_optimizer_and_names_the_micro_batch(fast_config):
    """A NaN advantage in the second micro-batch's rows gives a NaN loss there: the step stops
    with an error naming micro-batch 1, the gradients are cleared and no parameter moved (the
    losses are checked once per step, after the last backward)."""
    trainer = make_trainer(fast_config("steps=0", "grpo.micro_batch_size=16", "grpo.sort_by_length=false"))
    torch.manual_seed(0)
    _, gen = trainer.rollout(0)
    adv = torch.randn(32)
    adv[20] = float("nan")
    before = params(trainer)
    with pytest.raises(NonFiniteError, match=r"policy loss is nan at step 0, iteration 0, micro-batch 1 "):
        trainer.policy_step(gen, adv)
    assert all(p.grad is None for p in trainer.policy.parameters())
    assert all(torch.equal(before[n], p) for n, p in trainer.policy.named_parameters())


def test_resume_continues_exactly_with_a_learned_varl_reward(fast_config, tmp_path):
    """A real VARL on refdist after a short warm start: 4 steps straight == 2 steps, then resume=true for
    the last 2 — bitwise-equal policy, discriminator (weights and AdamW moments), FIFO and reservoir
    buffers (items and generators) and counters."""
    varl = [
        "task.name=refdist",
        "reward.name=varl",
        "task.refdist.n_prompts=4",
        "task.refdist.copies=16",
        "eval.n_examples=0",
        "sft.enabled=true",
        "sft.steps=40",
        "sft.batch_size=32",
        "sft.lr=1e-2",
        "sft.warmup_steps=2",
        "sft.n_examples=0",
        "sft.disjoint_rl_prompts=false",
        "sampling.temperature=0.5",
        "reward.varl.warmup_steps=1",
        "reward.varl.fifo_capacity=8",
        "reward.varl.reservoir_capacity=12",
        "reward.varl.negatives=6",
        "checkpoint_every=2",
        *[f"reward.varl.discriminator.tiny.{k}" for k in ("hidden_size=32", "intermediate_size=64", "num_layers=1")],
    ]
    straight = make_recipe_trainer(fast_config(*varl, "steps=4", f"run_dir={tmp_path / 'a'}"))
    straight.train()
    make_recipe_trainer(fast_config(*varl, "steps=2", f"run_dir={tmp_path / 'b'}")).train()
    resumed = make_recipe_trainer(fast_config(*varl, "steps=4", "resume=true", f"run_dir={tmp_path / 'b'}"))
    resumed.train()
    a, b = params(straight), params(resumed)
    assert all(torch.equal(a[n], b[n]) for n in a)
    ra, rb = straight.reward, resumed.reward
    assert ra.updates == rb.updates == 1 + 4
    da, db = ra.discriminator, rb.discriminator
    assert all(torch.equal(x, y) for x, y in zip(da.model.parameters(), db.model.parameters()))
    moments = list(zip(da.optimizer.state.values(), db.optimizer.state.values()))
    assert moments and all(torch.equal(sa[k], sb[k]) for sa, sb in moments for k in sa)
    for buffer in ("fifo", "reservoir"):
        x, y = getattr(ra, buffer), getattr(rb, buffer)
        assert x.items == y.items and x.seen == y.seen
        assert torch.equal(x.generator.get_state(), y.generator.get_state())
    assert len(ra.reservoir) == 12 and ra.reservoir.seen > 12  # the reservoir has been sampling, not just filling
    rows = read_metrics(tmp_path / "a" / "metrics.jsonl")
    assert all(r["disc/updated"] == 1.0 for r in rows[1:])
    assert read_metrics(tmp_path / "b" / "metrics.jsonl")[-1]["reward/mean"] == rows[-1]["reward/mean"]


def test_sampled_evaluation_averages_k_samples_per_prompt_and_is_reproducible(fast_config):
    """eval.samples=3: 16 held-out prompts × 3 sampled completions; eval/accuracy is the mean over all 48,
    each eval_rows entry the mean over an example's 3 samples (a multiple of 1/3); the same seed gives the same
    numbers, and greedy evaluation (samples=0) is untouched by it."""
    runs = []
    for _ in range(2):
        trainer = make_trainer(fast_config("steps=0", "eval.samples=3", "sampling.temperature=1.5", "overwrite=true"))
        trainer.train()
        runs.append(
            (read_metrics(trainer.run_dir / "metrics.jsonl")[0], read_metrics(trainer.run_dir / "eval_rows.jsonl")[0])
        )
    (metrics, rows), (metrics2, rows2) = runs
    assert metrics["eval/format_rate"] == metrics2["eval/format_rate"] and rows == rows2
    per_example = rows["rows"]["correct"]
    assert len(per_example) == 16 and all(abs(3 * v - round(3 * v)) < 1e-9 for v in per_example)
    assert sum(rows["rows"]["correct"]) / 16 == pytest.approx(metrics["eval/accuracy"])
