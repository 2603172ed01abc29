"""Work shared by the runs of a sweep (``share_dir``, rewardzoo/core/shared_work.py): a run that reads
the step-0 evaluation and the reward warm-up another run stored is the run that computes them, bit
for bit; the keys change with every setting that shapes the work and ignore the ones that cannot."""

import torch

from rewardzoo.core.config import as_dict
from rewardzoo.core.logger import read_metrics
from rewardzoo.core.shared_work import SharedWork, step0_eval_key, warmup_key, weights_identity, work_key
from rewardzoo.core.types import Example
from rewardzoo.recipes import make_trainer
from rewardzoo.rewards.ral import RAL
from rewardzoo.zoo import load_config
from tests.conftest import FAST

SHORT_RUN = [
    *FAST,
    "steps=2",
    "eval.samples=2",
    "eval.every=0",
    "logging.tensorboard=false",
    "sft.enabled=true",
    "sft.steps=10",
    "sft.n_examples=64",
]  # a short warm start: the judges start from it
RAL_RUN = [*SHORT_RUN, "reward.ral.warmup_steps=2"]


def ral_config(tmp_path, name: str, *overrides: str):
    return load_config(
        "algorithms/ral_multiplication.yaml",
        [*RAL_RUN, f"run_dir={tmp_path / name}", f"sft.cache_dir={tmp_path / 'sft'}", *overrides],
    )


def train(cfg) -> tuple[dict[str, torch.Tensor], list[dict]]:
    """A run's final policy and judge weights (RAL's judge or VARL's discriminator) and its logged rows."""
    trainer = make_trainer(cfg)
    trainer.train()
    learned = getattr(trainer.reward, "judge", None) or trainer.reward.discriminator
    weights = {n: p.detach().clone() for n, p in trainer.policy.named_parameters()}
    judge = {f"judge.{n}": p.detach().clone() for n, p in learned.model.named_parameters()}
    return {**weights, **judge}, read_metrics(trainer.run_dir / "metrics.jsonl")


def without_time(rows: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if not k.startswith("time/")} for r in rows]


def test_a_run_that_reads_the_shared_work_is_the_run_that_computes_it(tmp_path):
    """RAL with a 2-round judge warm-up and a sampled step-0 evaluation: the first run of the sweep
    computes and stores both; a frozen-judge twin (which differs only after the warm-up) and a rerun
    read them; each equals its own run without sharing — every policy and judge weight and every logged
    number.  A run with another judge learning rate stores a warm-up of its own, but reads the same
    step-0 evaluation."""
    shared = tmp_path / "shared"
    first, first_rows = train(ral_config(tmp_path, "first", f"share_dir={shared}"))
    assert sorted(p.name.split("-")[0] for p in shared.iterdir()) == ["eval0", "warmup"]
    for name, overrides in (("frozen", ["reward.ral.frozen=true"]), ("again", [])):
        got, got_rows = train(ral_config(tmp_path, name, f"share_dir={shared}", *overrides))
        want, want_rows = (
            (first, first_rows) if name == "again" else train(ral_config(tmp_path, f"{name}-alone", *overrides))
        )
        assert set(got) == set(want) and all(torch.equal(got[k], want[k]) for k in want), name
        assert without_time(got_rows) == without_time(want_rows), name
        assert len(list(shared.iterdir())) == 2, f"{name} must read both entries, not store new ones"
    train(ral_config(tmp_path, "judge-lr", f"share_dir={shared}", "reward.ral.judge.lr=3e-3"))
    assert sorted(p.name.split("-")[0] for p in shared.iterdir()) == ["eval0", "warmup", "warmup"]


def test_varl_additive_reading_varls_warmup_is_varl_additive_alone(tmp_path):
    """VARL's discriminator warm-up reads v and D, never how D enters the reward: the additive control
    (combine=add, λ) reads VARL's stored warm-up and equals itself computed alone, bit for bit."""

    def config(name, *overrides):
        return load_config(
            "algorithms/varl_multiplication.yaml",
            [
                *SHORT_RUN,
                "reward.varl.warmup_steps=2",
                f"run_dir={tmp_path / name}",
                f"sft.cache_dir={tmp_path / 'sft'}",
                *overrides,
            ],
        )

    shared, additive = tmp_path / "shared", ["reward.varl.combine=add", "reward.varl.additive_weight=0.5"]
    train(config("varl", f"share_dir={shared}"))
    got, got_rows = train(config("additive", f"share_dir={shared}", *additive))
    want, want_rows = train(config("alone", *additive))
    assert sorted(p.name.split("-")[0] for p in shared.iterdir()) == ["eval0", "warmup"]
    assert all(torch.equal(got[k], want[k]) for k in want) and without_time(got_rows) == without_time(want_rows)


def test_the_warmup_key_follows_what_shapes_the_warmup(tmp_path):
    """Changed by the seed, the rollout's batch, the sampling, a judge setting, the prompts and the
    starting weights; not by the policy's optimisation, the evaluation, the run's length or the
    reward's after-warm-up switches (RAL's frozen and g)."""
    prompts = [Example(prompt="1*2=", reference="2", demonstration="=2")]
    base = ral_config(tmp_path, "k")

    def key(*overrides, reward=None, examples=prompts, init=None):
        cfg = ral_config(tmp_path, "k", "reward.ral.judge.init_from=", *overrides)  # a judge built from its config
        return warmup_key(as_dict(cfg), reward or RAL(cfg.reward.ral), examples, init)

    same = key()
    for overrides in (
        ["grpo.lr=1e-5"],
        ["grpo.advantage=dr_grpo"],
        ["eval.n_examples=3"],
        ["steps=9"],
        ["reward.ral.frozen=true"],
        ["reward.ral.g=logit"],
        ["logging.every=3"],
    ):
        assert key(*overrides) == same, overrides
    for overrides in (
        ["seed=1"],
        ["grpo.batch_size=16", "grpo.micro_batch_size=16"],
        ["sampling.temperature=1.5"],
        ["reward.ral.judge.lr=3e-3"],
        ["reward.ral.warmup_steps=3"],
    ):
        assert key(*overrides) != same, overrides
    assert key(examples=[Example(prompt="1*3=", reference="3", demonstration="=3")]) != same
    (tmp_path / "init").mkdir()
    (tmp_path / "init" / "model.safetensors").write_bytes(b"1")
    assert key(init=tmp_path / "init") != same
    assert warmup_key(as_dict(base), object(), prompts, None) is None  # a reward without its settings: never shared


def test_the_step0_evaluation_key_ignores_the_reward_and_the_optimisation(tmp_path):
    examples = [Example(prompt="1*2=", reference="2", demonstration="=2")]

    def key(*overrides, recipe="algorithms/ral_multiplication.yaml"):
        cfg = load_config(recipe, [*RAL_RUN, f"run_dir={tmp_path / 'e'}", *overrides])
        return step0_eval_key(as_dict(cfg), examples, None)

    same = key()
    assert key(recipe="algorithms/rlvr_multiplication.yaml") == same  # another reward, the same warm start
    assert key("grpo.lr=1e-5", "steps=0", "eval.every=7") == same
    for overrides in (
        ["seed=3"],
        ["eval.samples=3"],
        ["sampling.temperature=1.5"],
        ["eval.split=validation"],
        ["grpo.micro_batch_size=8"],
    ):
        assert key(*overrides) != same, overrides


def test_work_keys_and_the_store():
    assert work_key("w", {"a": 1, "b": {"c": 2}}, ("b.c",)) == work_key("w", {"a": 1, "b": {"c": 3}}, ("b.c",))
    assert work_key("w", {"a": 1}, ()) != work_key("w", {"a": 2}, ())
    assert work_key("w", {"a": 1}, ()) != work_key("v", {"a": 1}, ())
    assert weights_identity(None) == []
    off = SharedWork(None)
    off.save("x", "k", {"v": 1})
    assert off.load("x", "k") is None and off.path("x", "k") is None


def test_the_store_round_trips_and_writes_atomically(tmp_path):
    store = SharedWork(tmp_path / "s")
    assert store.load("x", "k") is None
    store.save("x", "k", {"t": torch.arange(3), "n": 1.5})
    got = store.load("x", "k")
    assert torch.equal(got["t"], torch.arange(3)) and got["n"] == 1.5
    assert [p.name for p in (tmp_path / "s").iterdir()] == ["x-k.pt"]  # no temporary left behind
