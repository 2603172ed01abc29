"""The reward contract and its optional hooks are declared (``rewardzoo.core.types``) and checked when a
Trainer is built: a reward that implements a hook wrongly fails there, before any model is loaded, with a
message naming the hook and what to change."""

import dataclasses

import pytest
import torch

from rewardzoo.core.trainer import Trainer
from rewardzoo.core.types import (
    ConfiguredReward,
    FixedReward,
    PolicyReadingReward,
    RewardOutput,
    ShardedReward,
    WarmupFreeSettings,
    check_reward,
)
from rewardzoo.rewards.bonuses import BonusConfig, WithBonuses
from rewardzoo.rewards.ral import RAL, RALConfig
from rewardzoo.rewards.rcrl import RcRL
from rewardzoo.rewards.rlvr import RLVR
from rewardzoo.rewards.varl import VARL, VARLConfig
from rewardzoo.zoo import build_task


class Zeros(FixedReward):
    """A well-shaped reward: zero for every row."""

    def score(self, batch):
        return RewardOutput(rewards=torch.zeros(len(batch)))


@dataclasses.dataclass
class ZerosConfig:
    """A config with one field."""

    scale: float = 1.0
    """Unused."""


class BindsWithoutTokenizer(Zeros):
    def bind_policy(self, policy):  # the trainer passes (policy, tokenizer)
        self.policy = policy


class DistributeIsAFlag(Zeros):
    distribute = True


class ConfigIsADict(Zeros):
    cfg = {"scale": 1.0}


class FreesAnUnknownSetting(Zeros):
    cfg = ZerosConfig()
    WARMUP_FREE = ("scale", "temperature")


class NegativeWarmup(Zeros):
    warmup_steps = -1


class UpdateTakesNoOutput(Zeros):
    def update(self, batch):
        return {}


WRONG = [
    (
        BindsWithoutTokenizer,
        r"bind_policy \(the optional PolicyReadingReward hook\) must take \(policy, tokenizer\); "
        r"its signature is \(policy\)",
    ),
    (
        DistributeIsAFlag,
        r"distribute \(the optional ShardedReward hook\) must be a method taking \(sharding\); it is a "
        r"bool",
    ),
    (
        ConfigIsADict,
        r"cfg \(the optional ConfiguredReward hook\) must be a config dataclass instance or None; it is a "
        r"dict",
    ),
    (FreesAnUnknownSetting, r"WARMUP_FREE names \['temperature'\], which are not fields of ZerosConfig"),
    (NegativeWarmup, r"warmup_steps must be an int >= 0 \(got -1\)"),
    (UpdateTakesNoOutput, r"update must take \(batch, out\); its signature is \(batch\)"),
]


@pytest.mark.parametrize("cls, message", WRONG, ids=[cls.__name__ for cls, _ in WRONG])
def test_a_wrongly_shaped_reward_fails_at_trainer_construction(fast_config, monkeypatch, cls, message):
    """The Trainer refuses it first thing: no policy is loaded (load_policy would raise if it were reached)."""
    import rewardzoo.core.trainer as trainer_module

    def never(*args, **kwargs):
        raise AssertionError("the trainer loaded a policy before checking the reward")

    monkeypatch.setattr(trainer_module, "load_policy", never)
    cfg = fast_config("steps=0")
    with pytest.raises(
        TypeError, match=f"{cls.__name__} implements the rewardzoo Reward contract wrongly: .*{message}"
    ):
        Trainer(cfg, task=build_task(cfg.task), reward=cls())


def test_every_error_is_named_at_once():
    class TwoFaults(BindsWithoutTokenizer, NegativeWarmup):
        pass

    with pytest.raises(TypeError, match=r"warmup_steps must be .*; bind_policy \(the optional"):
        check_reward(TwoFaults())


def test_the_hook_protocols_recognise_the_shipped_rewards():
    assert issubclass(RcRL, PolicyReadingReward) and not issubclass(RAL, PolicyReadingReward)
    assert issubclass(RAL, ShardedReward) and issubclass(VARL, ShardedReward) and not issubclass(RcRL, ShardedReward)
    assert issubclass(WithBonuses, PolicyReadingReward) and issubclass(WithBonuses, ShardedReward)
    rlvr = RLVR(lambda answer, reference, meta, completion: 1.0)
    assert not isinstance(rlvr, (PolicyReadingReward, ShardedReward, ConfiguredReward, WarmupFreeSettings))
    check_reward(rlvr)
    check_reward(WithBonuses(rlvr, BonusConfig()))
    assert isinstance(Zeros(), FixedReward) and not isinstance(FreesAnUnknownSetting(), PolicyReadingReward)
    assert isinstance(FreesAnUnknownSetting(), ConfiguredReward) and isinstance(
        FreesAnUnknownSetting(), WarmupFreeSettings
    )


def test_the_shipped_warmup_free_settings_name_fields_of_their_configs():
    for reward, config in ((RAL, RALConfig), (VARL, VARLConfig)):
        assert set(reward.WARMUP_FREE) <= {f.name for f in dataclasses.fields(config)}, reward.__name__
