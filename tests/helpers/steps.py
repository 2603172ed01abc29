"""One RL step under a dense reward and what it changed, for tests that compare two ways of taking the same step."""

import torch

from rewardzoo.core.trainer import Trainer
from rewardzoo.rewards.functions import FunctionReward
from rewardzoo.zoo import build_task
from tests.helpers.dense_rewards import digit_share


def dense_step(cfg) -> tuple[Trainer, dict[str, float], dict[str, torch.Tensor]]:
    """A trainer of ``cfg`` rewarded by :func:`digit_share` (every parameter gets a gradient), after one
    ``train_step``: the trainer, the step's metrics and each parameter's change."""
    trainer = Trainer(cfg, task=build_task(cfg.task), reward=FunctionReward(digit_share))
    before = {n: p.detach().clone() for n, p in trainer.policy.named_parameters()}
    metrics = trainer.train_step()
    return trainer, metrics, {n: p.detach() - before[n] for n, p in trainer.policy.named_parameters()}
