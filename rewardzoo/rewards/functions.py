"""Rewards from plain callables in the TRL style: ``fn(prompts, completions, **columns) -> list[float | None]``.

The :class:`~rewardzoo.core.types.Reward` protocol itself lives in :mod:`rewardzoo.core.types`;
this file holds the adapter *into* rewardzoo (the adapter out, to TRL's ``GRPOTrainer``, is
:mod:`rewardzoo.integrations.trl`).  :class:`FunctionReward` wraps one or several functions
f_1 … f_K with weights w_k:

    r_i = Σ_{k : f_k(i) is not None} w_k · f_k(x_i, y_i)                         (TRL's weighted nansum)
    r_i = mean { r_j : j in group(i), row j scored }   when every f_k(i) is None  (0 if no row of the group is scored)

That is ``aggregation="sum_then_normalize"`` (TRL's default: the trainer's advantage then normalizes
the sum).  ``aggregation="normalize_then_sum"`` (GDPO-style; TRL's ``multi_objective_aggregation``)
first normalizes each function within its group, over the rows it scored:

    z_ik = (f_k(i) − mean_g f_k) / (std_g f_k + 1e-4),   r_i = Σ_{k : z_ik defined} w_k · z_ik

(std_g unbiased; a group with one scored row leaves z undefined, as TRL's NaN).  Each group's r then
has mean 0, so ``grpo.advantage=bnpo`` — (r − mean_g) / (std_batch + 1e-4) — is exactly TRL's
(r − mean_batch) / (std_batch + 1e-4) on these rewards; ``tests/rewards/test_functions.py`` checks
it against TRL's own lines.

What each function receives, as keyword arguments (one entry per row, like a TRL dataset column,
unless said otherwise):

    prompts, completions   list[str]
    reference              list[str | None]   the row's reference answer (rewardzoo's Example.reference)
    parsed_answer          list[str | None]   the task parser's final answer; None = malformed
    group_id               list[int]          rows of one prompt share an id
    <meta key>             list               each key of the rows' meta dicts (e.g. ``a``, ``b``); None where a row
                                              lacks it
    step                   int                the trainer step (a scalar, not a column)
    log_metric             (name, value)      adds ``reward/<name>`` to the step's log (TRL's ``log_metric``)

Conventions chosen here (ours, not TRL's):

1. ``reference`` is singular because TRL passes dataset columns under their column name and
   rewardzoo's column is ``reference``; the parsed answer is ``parsed_answer`` (not ``answer``,
   which many datasets, e.g. GSM8K, use for the *gold* answer).
2. Not passed, because rewardzoo rollouts are text: ``completion_ids``, ``trainer_state``,
   ``log_extra``, ``environments``.  A function that requires one fails with Python's TypeError
   naming it; TRL-style functions take ``**kwargs`` and ignore what they do not use.
3. ``None`` means "this function does not apply to the row" (TRL).  With several functions the
   row's other scores are summed.  A row that *every* function leaves unscored gets its group's
   mean over the scored rows, so its group-normalised advantage is 0 (to float rounding) and the group mean
   is unchanged — TRL instead drops such rows from the baseline and zeroes their advantage; the
   only difference is that here the row still counts in the group's std, which it shrinks
   slightly.  ``reward/none_frac`` logs the fraction of such rows.
4. Bools count as 1/0 and numpy scalars and 0-d torch tensors are accepted; anything else (a
   string, a nested list), NaN or ±inf is an error that names the function and the rows, and a
   wrong number of rewards is an error that names the function and both lengths.

Nothing is learned: ``update`` returns ``{}`` and a function's own state (if any) is not
checkpointed.  :func:`load_callable` resolves ``"package.module:function"`` for configs
(``reward.name=callable``).
"""

from __future__ import annotations

import functools
import importlib
import math
import numbers
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
import torch

from rewardzoo.core.types import FixedReward, NonFiniteError, RewardOutput, Rollouts
from rewardzoo.rewards.context import RewardContext

AGGREGATIONS = ("sum_then_normalize", "normalize_then_sum")
RewardFunc = Callable[..., Sequence[float | None]]  # fn(prompts, completions, **columns) -> [N] float | None


@dataclass
class CallableRewardConfig:
    """Settings of the ``callable`` reward: TRL-style reward functions named by import path."""

    RANGES: ClassVar[dict[str, str]] = {"weights": "(-inf, inf)"}

    functions: list[str] = field(default_factory=list)
    """Reward functions as 'package.module:function', each fn(prompts, completions, **columns) -> list[float | None]."""
    weights: list[float] = field(default_factory=list)
    """One weight per function (TRL's reward_weights); empty = all 1."""
    aggregation: str = "sum_then_normalize"
    """How the functions combine (TRL's multi_objective_aggregation): sum_then_normalize (the weighted
    sum) or normalize_then_sum (each function normalized within its group first; pair it with
    grpo.advantage=bnpo for TRL's advantages)."""

    def validate(self) -> None:
        """Raise ValueError/TypeError, saying what to change, unless the named functions import and fit
        their weights (building the reward is the check)."""
        FunctionReward.from_config(self)


def callable_name(fn: Callable) -> str:
    """The display name of a function, a ``functools.partial`` of one, or a callable object."""
    while isinstance(fn, functools.partial):
        fn = fn.func
    return getattr(fn, "__name__", type(fn).__name__)


def load_callable(path: str) -> Callable:
    """The object that ``"package.module:attribute"`` names, checked to be callable."""
    module_name, sep, attr = path.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"reward function path {path!r} must look like 'package.module:function'")
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        raise ValueError(
            f"cannot import module {module_name!r} of reward function {path!r}: {err}; "
            f"check the spelling and that the module is on PYTHONPATH"
        ) from err
    fn = module
    for part in attr.split("."):
        fn = getattr(fn, part, None)
    if not callable(fn):
        raise ValueError(f"reward function path {path!r}: module {module_name!r} has no callable {attr!r}")
    return fn


def _row_value(value, fn_name: str, row: int) -> float | None:
    """One returned reward as a float (None stays None); a clear error for anything else."""
    if value is None:
        return None
    if isinstance(value, np.generic) or (isinstance(value, (torch.Tensor, np.ndarray)) and value.ndim == 0):
        value = value.item()
    if not isinstance(value, numbers.Real):
        raise TypeError(
            f"reward function {fn_name!r} returned {type(value).__name__} {value!r} at row {row}; "
            f"return one float (or None for 'not applicable') per completion"
        )
    return float(value)


def group_normalized(values: torch.Tensor, group_ids: torch.Tensor, eps: float = 1e-4) -> torch.Tensor:
    """Each column of ``values [N, K]`` (NaN = unscored) as (v − mean_g) / (std_g + eps) over its group's
    scored rows, std unbiased; NaN where unscored or the group has one scored row."""
    groups = group_ids.unique(return_inverse=True)[1]  # [N] group index 0..P-1
    scored = (~values.isnan()).to(values.dtype)  # [N, K]
    v = values.nan_to_num(0.0)  # [N, K]
    shape = (int(groups.max()) + 1, values.shape[1])
    count = values.new_zeros(shape).index_add_(0, groups, scored)  # [P, K]
    mean = values.new_zeros(shape).index_add_(0, groups, v) / count.clamp(min=1)  # [P, K]
    centred = (v - mean[groups]) * scored  # [N, K]
    var = values.new_zeros(shape).index_add_(0, groups, centred**2) / (count - 1)  # [P, K] inf/NaN below 2 rows
    std = torch.where(count > 1, var.sqrt(), torch.nan)  # [P, K]
    return (values - mean[groups]) / (std[groups] + eps)  # [N, K] NaN where unscored or undefined


class FunctionReward(FixedReward):
    """One or several TRL-style reward functions as a rewardzoo reward (see the module docstring).

    >>> def longer(prompts, completions, **kwargs):
    ...     return [float(len(c)) for c in completions]
    >>> reward = FunctionReward(longer)
    """

    def __init__(
        self,
        funcs: RewardFunc | Sequence[RewardFunc],
        weights: Sequence[float] | None = None,
        name: str | None = None,
        aggregation: str = "sum_then_normalize",
    ):
        if aggregation not in AGGREGATIONS:
            raise ValueError(f"reward aggregation must be one of {AGGREGATIONS}, got {aggregation!r}")
        self.aggregation = aggregation
        self.funcs = list(funcs) if isinstance(funcs, (list, tuple)) else [funcs]
        if not self.funcs or not all(callable(f) for f in self.funcs):
            raise TypeError(
                f"FunctionReward needs one or more callables fn(prompts, completions, **kwargs); got {funcs!r}"
            )
        names = [callable_name(f) for f in self.funcs]
        self.names = [n if names.count(n) == 1 else f"{n}_{k}" for k, n in enumerate(names)]
        weights = [1.0] * len(self.funcs) if weights is None or len(weights) == 0 else [float(w) for w in weights]
        if len(weights) != len(self.funcs) or not all(math.isfinite(w) for w in weights):
            raise ValueError(
                f"FunctionReward got {len(weights)} weights {weights} for {len(self.funcs)} functions "
                f"{self.names}; give one finite weight per function"
            )
        self.weights = torch.tensor(weights, dtype=torch.float32)  # [K]
        self.name = name or "+".join(self.names)

    SEES_TASK = False  # TRL-style functions see the Rollouts only

    @classmethod
    def from_config(cls, cfg: CallableRewardConfig, ctx: RewardContext | None = None) -> FunctionReward:
        """The functions a :class:`CallableRewardConfig` names by import path (``ctx`` is not needed)."""
        if not cfg.functions:
            raise ValueError("no function named; set reward.callable.functions=[package.module:function, ...]")
        return cls([load_callable(p) for p in cfg.functions], weights=cfg.weights or None, aggregation=cfg.aggregation)

    def columns(self, batch: Rollouts, logged: dict[str, float]) -> dict:
        """The keyword arguments every function is called with (see the module docstring)."""
        cols = {
            "reference": list(batch.references),
            "parsed_answer": list(batch.answers),
            "group_id": batch.group_ids.tolist(),
            "step": batch.step,
            "log_metric": lambda name, value: logged.__setitem__(f"reward/{name}", float(value)),
        }
        for key in sorted({k for m in batch.meta for k in m}):
            if key in cols or key in ("prompts", "completions"):
                raise ValueError(
                    f"meta key {key!r} of the task clashes with the reward-function argument of that name; "
                    f"rename the meta key"
                )
            cols[key] = [m.get(key) for m in batch.meta]
        return cols

    def call(self, k: int, batch: Rollouts, cols: dict) -> torch.Tensor:
        """Function ``k``'s checked rewards: [N] float32, NaN where it returned None."""
        name = self.names[k]
        raw = self.funcs[k](list(batch.prompts), list(batch.completions), **cols)
        if isinstance(raw, (torch.Tensor, np.ndarray)):
            raw = raw.tolist() if raw.ndim == 1 else raw
        if not isinstance(raw, (list, tuple)):
            raise TypeError(
                f"reward function {name!r} returned a {type(raw).__name__}; return a list with one float "
                f"(or None) per completion"
            )
        if len(raw) != len(batch):
            raise ValueError(
                f"reward function {name!r} returned {len(raw)} rewards for {len(batch)} completions; "
                f"return exactly one per completion"
            )
        values = [_row_value(v, name, i) for i, v in enumerate(raw)]
        bad = [i for i, v in enumerate(values) if v is not None and not math.isfinite(v)]
        if bad:
            raise NonFiniteError(
                f"reward function {name!r} returned non-finite rewards at step {batch.step}, rows {bad[:10]} "
                f"(values {[values[i] for i in bad[:10]]}); return None for rows it does not apply to"
            )
        return torch.tensor([math.nan if v is None else v for v in values], dtype=torch.float32)  # [N]

    def score(self, batch: Rollouts) -> RewardOutput:
        """The weighted sum of the functions' rewards, with unscored rows set to their group's mean."""
        logged: dict[str, float] = {}
        cols = self.columns(batch, logged)
        values = torch.stack([self.call(k, batch, cols) for k in range(len(self.funcs))], dim=1)  # [N, K] NaN = None
        scored = ~values.isnan()  # [N, K]
        summed = group_normalized(values, batch.group_ids) if self.aggregation == "normalize_then_sum" else values
        rewards = (summed.nan_to_num(0.0) * self.weights).sum(1)  # [N]
        unscored = ~scored.any(1)  # [N]
        if unscored.any():
            groups = batch.group_ids.unique(return_inverse=True)[1]  # [N] group index 0..P-1
            total = torch.zeros(int(groups.max()) + 1).index_add_(0, groups, rewards * ~unscored)  # [P]
            count = torch.zeros(int(groups.max()) + 1).index_add_(0, groups, (~unscored).float())  # [P]
            group_mean = total / count.clamp(min=1)  # [P]
            rewards = torch.where(unscored, group_mean[groups], rewards)  # [N]
        components = {f"fn/{n}": values[:, k].nan_to_num(0.0) for k, n in enumerate(self.names)}  # [N] each, None → 0
        metrics = {
            f"reward/fn/{n}_mean": values[:, k][scored[:, k]].mean().item() if scored[:, k].any() else 0.0
            for k, n in enumerate(self.names)
        }
        metrics["reward/none_frac"] = unscored.float().mean().item()
        metrics.update(logged)
        return RewardOutput(rewards=rewards, components=components, metrics=metrics)
