"""The fair comparison protocol of every board: equal twins, a tuning stage on a validation split,
and verdicts only where the testbed can decide (docs/leaderboard.md).

1. **Equal twins.**  On one task every method shares every setting but its reward: advantage
   normalisation, loss, β, learning rate and schedule, steps, batch, sampling, warm start.
   :func:`twin_differences` resolves a task's entries and names every leaf that differs outside
   :data:`TWIN_FREE`, unless the entry names the key as an exception with its reason (the literal
   table ``rewardzoo.board.rows.TWIN_EXCEPTIONS``).
2. **An equal tuning budget on a validation split.**  Each method is trained over the same small
   :class:`Grid` — the policy learning rate at a few multiples of the task's shared one, plus at most
   one key of the method's own with as many values for every method of the task — on the task's
   validation split (``eval.split=validation``: prompts disjoint from train and test), with tuning
   seeds disjoint from the reported ones (:data:`TUNING_SEEDS` of them by default).  The search is
   successive halving: every setting runs at the first tuning seed, and the better half of them
   (:func:`survivors`, ⌈n/2⌉) at every other tuning seed; the worse half is cut there.
   :func:`choose` picks each method's setting from :class:`ValidationRow` s alone (it refuses any
   other split): among the surviving settings, the best mean over tuning seeds of the final
   validation value of the board's tuning metric; every setting whose per-seed values are **within
   noise** of that best one (:func:`within_noise`: the 95% t-interval of the paired differences over
   the tuning seeds contains 0) is tied with it, and a tie goes to the setting earliest in the grid's
   order — the recipe's own learning rate first, then the one nearest to it, the smaller before the
   larger — the same rule for every row.  When the choice sits at an end of the row's learning rates
   the grid extends that way (×2 above, ÷2 below; :func:`extension`) and the search runs again, at
   most :attr:`Grid.extend` steps beyond each initial end.  The board then trains the chosen settings
   and reports the test split only.  :func:`write_tuning` writes the grid, the validation numbers and
   the choices (``TUNING.md`` and ``tuning.csv``).
3. **Verdicts only where the testbed can decide.**  :func:`verdict` gives a claim's word only from at
   least :data:`MIN_SEEDS` seeds, and only when the task's positive control (a reward known to work
   there, e.g. the exact verifier) shows its effect with an interval beyond 0; otherwise it says
   "testbed cannot decide" with the control's number.  Every verdict names its control, interval and n.
   Every interval a verdict or a gate reads — board and studies alike — is the t-interval over seeds of
   each seed's effect (:func:`rewardzoo.eval.seed_ci`): the seed is the unit (a percentile bootstrap over
   seeds × held-out examples covers 78–94% at 3–5 seeds on the boards' design,
   benchmarks/results/interval_coverage.md).

``python -m rewardzoo.protocol train MODULE:FACTORY RECIPE key=value ...`` trains a recipe with a reward
built by a Python factory (``factory(cfg, ctx) -> Reward``, ``ctx`` a
:class:`~rewardzoo.rewards.context.RewardContext`): how a board trains a method added from the
command line as ``module:factory`` (:func:`train_with_factory`).

Our choices, not given by any paper: the grid's default factors (:data:`LR_FACTORS`), three tuning
seeds by default, the halving, the noise test, the statistic and tie-break above, the extension's
bound (:data:`GRID_EXTENSION`), and the rule that a tuning run evaluates only at its start and end.
"""

from __future__ import annotations

import csv
import hashlib
import importlib
import json
import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from rewardzoo.core.checkpoint import resume_changes
from rewardzoo.eval import Estimate, mean_ci

TWIN_FREE = ("reward.*", "recipe.*", "run_dir", "logging.*", "seed")
"""Keys (fnmatch patterns) in which twins may differ: the reward, the recipe's description of itself,
where a run writes and how it reports, and the seed (every method runs every seed)."""

LR_FACTORS = (1.0, 0.5, 0.25)
"""The default learning-rate grid, as multiples of the task's shared ``grpo.lr`` (our choice: the
recipes' rates were chosen for RLVR, and every collapse seen on the boards came from a rate too high
for the reward, e.g. RAL's on multiplication, stopped by ÷4; benchmarks/results/ral_vs_rlvr.md)."""

TUNING_OVERRIDES = ("eval.split=validation", "eval.every=0", "checkpoint_every=0")
"""What every tuning run adds: it evaluates on the validation split, only at its start and its end (the
choice reads the final value), and keeps no intermediate checkpoint."""

TUNING_SEED_BASE = 1000
"""Tuning seeds are ``1000, 1001, …``: disjoint from the reported seeds ``0 … N−1``."""

TUNING_SEEDS = 3
"""Tuning seeds per setting by default: a choice is a mean over three runs, not one run's luck."""

GRID_EXTENSION = 2
"""How many steps (×2 above, ÷2 below) a row's learning rates may extend beyond each end of the initial
grid while its choice sits at that end: with the default grid (1, ½, ¼ of the shared rate) a rate from
4× down to 1/16 of the shared one."""

MIN_SEEDS = 3
"""No verdict from fewer seeds."""


# ------------------------------------------------------------------------------------------ twins
@dataclass(frozen=True)
class TwinException:
    """Keys (fnmatch pattern → reason) in which a row may differ from its task's other rows, and the row
    that shares them with it (``twin``: its comparison is then made against that row, which must equal it
    outside :data:`TWIN_FREE`; None for a row no claim pairs with, such as the warm start evaluated)."""

    keys: dict[str, str]
    twin: str | None = None


def twin_differences(configs: dict[str, dict], exceptions: dict[str, TwinException] | None = None) -> list[str]:
    """``method: key: a → b`` for every leaf in which one task's resolved configurations (method label →
    nested dict) differ outside :data:`TWIN_FREE` and outside the keys the method's exception names.
    Each configuration is compared with the first one that names no exception; a row with an exception
    must also equal its named twin outside :data:`TWIN_FREE` (the twin runs the exception's setting too).

    >>> twin_differences({"A": {"grpo": {"lr": 1e-3}, "reward": {"name": "x"}},
    ...                   "B": {"grpo": {"lr": 5e-4}, "reward": {"name": "y"}}})
    ['B: grpo.lr: 0.001 → 0.0005']
    """
    exceptions = exceptions or {}
    plain = [m for m in configs if m not in exceptions]
    if not plain:
        raise ValueError("every entry names an exception; at least one twin must take the task's settings as they are")
    reference = plain[0]
    found = []
    for method, cfg in configs.items():
        if method != reference:
            free = (*TWIN_FREE, *(exceptions[method].keys if method in exceptions else ()))
            found += [f"{method}: {line}" for line in resume_changes(configs[reference], cfg, free)[0]]
        twin = exceptions[method].twin if method in exceptions else None
        if twin is not None and twin not in configs:
            found.append(
                f"{method}: its twin {twin!r} (which must run {', '.join(exceptions[method].keys)} too) is not "
                f"on the board"
            )
        elif twin is not None:
            found += [f"{method}: its twin {twin}: {line}" for line in resume_changes(configs[twin], cfg, TWIN_FREE)[0]]
    return found


# ----------------------------------------------------------------------------------------- tuning
@dataclass(frozen=True)
class Setting:
    """One point of a method's grid: the overrides it adds to the method's entry."""

    overrides: tuple[str, ...] = ()

    @classmethod
    def from_label(cls, label: str) -> Setting:
        """The setting a :attr:`label` names, as ``tuning.csv`` and ``leaderboard.csv`` write it (``recipe``, and
        the tables' ``—`` for an untrained row, name none).

        >>> Setting.from_label("grpo.lr=0.00025 reward.ral.judge.lr=0.003").overrides
        ('grpo.lr=0.00025', 'reward.ral.judge.lr=0.003')
        >>> Setting.from_label("recipe") == Setting.from_label("—") == Setting()
        True
        """
        return cls() if label.strip() in ("recipe", "—", "") else cls(tuple(label.split()))

    def get(self, key: str, default: str | None = None) -> str | None:
        """The value the setting gives ``key`` (e.g. ``grpo.lr``), else ``default``."""
        return next((o.split("=", 1)[1] for o in self.overrides if o.split("=", 1)[0] == key), default)

    @property
    def label(self) -> str:
        """``grpo.lr=0.00025 reward.ral.judge.lr=0.003``; ``recipe`` when it adds nothing."""
        return " ".join(self.overrides) or "recipe"

    @property
    def slug(self) -> str:
        """The setting as a directory name: ``grpo.lr-0.00025``, ``grpo.lr-0.00025__reward.ral.judge.lr-0.003``."""
        return "__".join(o.replace("=", "-").replace("/", "_") for o in self.overrides) or "recipe"


def overrides_tag(overrides: Sequence[str]) -> str:
    """'' for no overrides, else 8 hex digits of their hash: a short, stable part of a run directory's name for
    runs trained with overrides beyond their setting, so they never share a directory with the runs without."""
    return hashlib.sha256(" ".join(overrides).encode()).hexdigest()[:8] if overrides else ""


@dataclass(frozen=True)
class OwnKey:
    """A method's own tuned key: ``values`` of ``key`` (e.g. ``reward.ral.judge.lr`` over 1e-3, 3e-3)."""

    method: str
    """``task/method`` label the key belongs to."""
    key: str
    values: tuple[str, ...]

    @classmethod
    def parse(cls, text: str) -> OwnKey:
        """``task/method=key=v1,v2`` (the ``--tune-key`` form)."""
        target, _, rest = text.partition("=")
        key, _, values = rest.partition("=")
        if "/" not in target or not key or not values:
            raise ValueError(f"--tune-key takes TASK/METHOD=KEY=V1,V2,...; got {text!r}")
        return cls(target, key, tuple(v for v in values.split(",") if v))


@dataclass(frozen=True)
class Grid:
    """The tuning grid of a board: learning-rate factors (× the task's shared ``grpo.lr``) and the
    methods' own keys (at most one per method; a task's tuned methods all get one, of one size, or none)."""

    lr_factors: tuple[float, ...] = LR_FACTORS
    own: tuple[OwnKey, ...] = ()
    extend: int = GRID_EXTENSION
    """Steps the learning rates may extend beyond each end of ``lr_factors`` (0: never; :func:`extension`)."""

    def __post_init__(self):
        if self.extend < 0:
            raise ValueError(f"a grid extends 0 or more steps beyond its ends; got {self.extend}")
        if (
            not self.lr_factors
            or any(not f > 0 for f in self.lr_factors)
            or len(set(self.lr_factors)) != len(self.lr_factors)
        ):
            raise ValueError(f"learning-rate factors must be distinct positive numbers; got {list(self.lr_factors)}")
        names = [k.method for k in self.own]
        if len(set(names)) != len(names):
            raise ValueError(
                f"a method tunes at most one key of its own; repeated: "
                f"{sorted({n for n in names if names.count(n) > 1})}"
            )

    def own_key(self, task: str, method: str) -> OwnKey | None:
        """The own key of ``task/method``, if any."""
        return next((k for k in self.own if k.method == f"{task}/{method}"), None)

    def check_equal_budget(self, task: str, methods: Sequence[str]) -> None:
        """Raise ValueError unless every tuned method of ``task`` has an own key of one size, or none has."""
        sizes = {m: len(k.values) if (k := self.own_key(task, m)) else 0 for m in methods}
        if len(set(sizes.values())) > 1:
            raise ValueError(
                f"every method of {task} must get the same tuning budget: own-key grid sizes "
                f"{sizes}; give each method one key with as many values (--tune-key), or none"
            )

    def points(self, task: str, method: str, base_lr: float) -> list[Setting]:
        """The method's settings in the tie-break order: learning rates by closeness to the recipe's
        (|log factor|, then the smaller), each with the own key's values in the order given."""
        factors = sorted(self.lr_factors, key=lambda f: (abs(math.log(f)), f))
        own = self.own_key(task, method)
        values = [(f"{own.key}={v}",) for v in own.values] if own else [()]
        return [Setting((f"grpo.lr={base_lr * f:.6g}", *extra)) for f in factors for extra in values]


@dataclass(frozen=True)
class ValidationRow:
    """The final value of a tuning run's tuning metric, with the split its run evaluated on."""

    task: str
    method: str
    setting: Setting
    seed: int
    split: str
    """``eval.split`` of the run that logged ``value``, read from its configuration."""
    value: float


@dataclass(frozen=True)
class Choice:
    """A method's chosen setting and how it was chosen."""

    setting: Setting
    value: float = math.nan
    """The statistic of the chosen setting (mean validation value over tuning seeds; NaN when by hand)."""
    by: str = "validation"
    """'validation' (by :func:`choose`), 'hand' (``--choose``) or 'recipe' (tuning off)."""
    near: tuple[Setting, ...] = ()
    """Every setting tied with the best one (within noise, :func:`within_noise`; the chosen one among them),
    in the grid's order: the settings a verdict's stability is checked at."""


def statistic(values: Sequence[float]) -> float:
    """The tuner's statistic of one setting: the mean over tuning seeds (NaN when any run has no value)."""
    return math.fsum(values) / len(values) if values and all(math.isfinite(v) for v in values) else math.nan


def within_noise(a: dict[int, float], b: dict[int, float]) -> bool:
    """Whether two settings' validation values (tuning seed → value) are within noise of each other: the 95%
    t-interval of their differences, paired by tuning seed, contains 0.  With fewer than two common seeds
    there is no noise to measure, and only equal values (to 12 decimals) are tied.

    >>> within_noise({1000: 0.50, 1001: 0.60, 1002: 0.55}, {1000: 0.52, 1001: 0.57, 1002: 0.50})
    True
    >>> within_noise({1000: 0.50, 1001: 0.60, 1002: 0.55}, {1000: 0.30, 1001: 0.41, 1002: 0.34})
    False
    """
    common = sorted(set(a) & set(b))
    if len(common) < 2:
        return bool(common) and all(round(a[s], 12) == round(b[s], 12) for s in common)
    diff = mean_ci([a[s] - b[s] for s in common])
    return diff.low <= 0.0 <= diff.high


def survivors(rows: Sequence[ValidationRow], direction: str, order: Sequence[Setting], seed: int) -> list[Setting]:
    """Successive halving's cut: the better ⌈n/2⌉ of the ``n`` settings of ``order`` by their value at tuning
    ``seed`` (a setting without a finite value there ranks last; equal values by ``order``), in ``order``.
    Only these run at the other tuning seeds.

    >>> a, b, c = (Setting((f"grpo.lr={lr}",)) for lr in (0.001, 0.0005, 0.00025))
    >>> rows = [ValidationRow("t", "m", s, 1000, "validation", v) for s, v in ((a, 0.1), (b, 0.5), (c, 0.4))]
    >>> [s.label for s in survivors(rows, "max", [a, b, c], 1000)]
    ['grpo.lr=0.0005', 'grpo.lr=0.00025']
    """
    sign = 1.0 if direction == "max" else -1.0
    first = {r.setting: r.value for r in rows if r.seed == seed}
    ranked = sorted(
        order,
        key=lambda s: (
            not math.isfinite(first.get(s, math.nan)),
            -sign * first[s] if math.isfinite(first.get(s, math.nan)) else 0.0,
            list(order).index(s),
        ),
    )
    kept = set(ranked[: math.ceil(len(order) / 2)])
    return [s for s in order if s in kept]


def choose(rows: Sequence[ValidationRow], direction: str, order: Sequence[Setting]) -> Choice:
    """The setting of ``order`` chosen from its validation rows (``direction`` 'max' or 'min'): the best
    :func:`statistic` defines the best setting; every setting within noise of it (:func:`within_noise`) is
    tied with it, and the tie goes to the earliest in ``order`` (:meth:`Grid.points`: the recipe's learning
    rate first, then the nearest).  A setting without a finite value is never chosen over one with.  Reads
    only validation rows: a row of any other split is a ValueError, so no test number can enter a choice.

    >>> a, b = Setting(("grpo.lr=0.001",)), Setting(("grpo.lr=0.0005",))
    >>> rows = [ValidationRow("t", "m", s, 1000, "validation", v) for s, v in ((a, 0.4), (b, 0.5))]
    >>> choose(rows, "max", [a, b]).setting.label
    'grpo.lr=0.0005'
    >>> rows += [ValidationRow("t", "m", s, 1001, "validation", v) for s, v in ((a, 0.6), (b, 0.45))]
    >>> choose(rows, "max", [a, b]).setting.label  # b's mean is better, but within noise: the recipe's rate
    'grpo.lr=0.001'
    """
    wrong = sorted({r.split for r in rows if r.split != "validation"})
    if wrong:
        raise ValueError(f"the tuner reads validation rows only; got rows of split {', '.join(wrong)}")
    if direction not in ("max", "min"):
        raise ValueError(f"a tuning direction is 'max' or 'min'; got {direction!r}")
    stats = {s: statistic([r.value for r in rows if r.setting == s]) for s in order}
    sign = 1.0 if direction == "max" else -1.0
    best = max(
        order,
        key=lambda s: (
            math.isfinite(stats[s]),
            round(sign * stats[s], 12) if math.isfinite(stats[s]) else 0.0,
            -list(order).index(s),
        ),
    )
    if not math.isfinite(stats[best]):
        return Choice(best, stats[best], near=(best,))
    values = {s: {r.seed: r.value for r in rows if r.setting == s} for s in order}
    near = tuple(s for s in order if math.isfinite(stats[s]) and (s == best or within_noise(values[best], values[s])))
    return Choice(near[0], stats[near[0]], near=near)


def extension(factors: Sequence[float], initial: Sequence[float], chosen: float, steps: int) -> float | None:
    """The learning-rate factor a row's grid adds when its choice ``chosen`` sits at an end of ``factors``:
    twice the highest or half the lowest, unless that would go more than ``steps`` doublings beyond the
    ``initial`` grid's end; None when the choice is interior, or the grid has one rate.

    >>> extension((1.0, 0.5, 0.25), (1.0, 0.5, 0.25), 0.25, 2)
    0.125
    >>> extension((1.0, 0.5, 0.25, 0.125, 0.0625), (1.0, 0.5, 0.25), 0.0625, 2) is None
    True
    """
    low, high = min(factors), max(factors)
    if low == high:
        return None
    if chosen == high and high * 2 <= max(initial) * 2**steps:
        return high * 2
    if chosen == low and low / 2 >= min(initial) / 2**steps:
        return low / 2
    return None


def learning_rate(setting: Setting) -> float | None:
    """The ``grpo.lr`` a setting sets (None when it sets none)."""
    return next((float(o.partition("=")[2]) for o in setting.overrides if o.startswith("grpo.lr=")), None)


def write_tuning(
    out: Path,
    grids: dict[str, dict],
    rows: Sequence[ValidationRow],
    choices: dict[tuple[str, str], Choice],
    walls: Sequence[float],
    seeds: Sequence[int],
    command: str = "",
) -> Path:
    """``TUNING.md`` (per task: the grid, every setting's validation numbers, the choice) and
    ``tuning.csv`` (one row per tuning run) in ``out``.  ``grids`` maps a task to
    ``{"metric": key, "direction": d, "points": {method: [Setting, ...]}, "extend": steps}`` (``extend``
    optional: the grid's extension bound, said in the text)."""
    out.mkdir(parents=True, exist_ok=True)
    lines = [
        f"`{command}`" if command else "",
        "",
        "# Tuning",
        "",
        f"Each method of a task trained over the same grid on the task's **validation** split "
        f"(`eval.split=validation`), tuning seeds {', '.join(map(str, seeds))} (disjoint from the reported "
        "seeds); the value is the run's final validation metric, the statistic its mean over the tuning seeds. "
        "Successive halving: every setting runs at the first tuning seed, the better half of them at the others "
        "(a setting with one value was cut there). Chosen: among the settings within noise of the best statistic "
        "(the 95% t-interval of their paired per-seed differences from it contains 0: *within noise*), the "
        "recipe's learning rate, then the one nearest to it, the smaller first (`rewardzoo.protocol.choose`). A "
        "choice at an end of a row's learning rates extends its grid that way (×2 above, ÷2 below), at most "
        f"{max((g.get('extend', 0) for g in grids.values()), default=0)} step(s) beyond the initial grid's ends; "
        "a choice still at the edge says the best rate may lie beyond. The board trains the chosen settings and "
        "reports the test split only.",
        "",
    ]
    for task, grid in grids.items():
        metric, direction = grid["metric"], grid["direction"]
        lines += [
            f"## `{task}`: tuned by validation `{metric}` ({'higher' if direction == 'max' else 'lower'} is better)",
            "",
            "| method | setting | validation value by seed | statistic | chosen |",
            "| --- | --- | --- | ---: | --- |",
        ]
        for method, points in grid["points"].items():
            choice = choices.get((task, method))
            rates = {lr for s in points if (lr := learning_rate(s)) is not None}
            for s in points:
                mine = [r for r in rows if r.task == task and r.method == method and r.setting == s]
                by_seed = ", ".join(f"{r.seed}: {r.value:.4f}" for r in sorted(mine, key=lambda r: r.seed)) or "—"
                stat = statistic([r.value for r in mine]) if mine else math.nan
                edge = len(rates) > 1 and learning_rate(s) in (min(rates), max(rates))
                mark = (
                    ("**chosen**" + (" (at the grid's edge)" if edge else ""))
                    if choice is not None and choice.setting == s
                    else ""
                )
                if not mark and choice is not None and s in choice.near:
                    mark = "within noise"
                lines.append(f"| {method} | `{s.label}` | {by_seed} | {stat:.4f} | {mark} |")
            if choice is not None and choice.by != "validation":
                lines.append(f"| {method} | `{choice.setting.label}` | — | — | **chosen by {choice.by}** |")
        lines.append("")
    lines += [f"{len(walls)} tuning runs; summed run wall time {sum(walls) / 60:.1f} min.", ""]
    path = out / "TUNING.md"
    path.write_text("\n".join(lines))
    with open(out / "tuning.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["task", "method", "setting", "seed", "split", "value", "chosen", "within_noise"])
        for r in rows:
            choice = choices.get((r.task, r.method))
            w.writerow(
                [
                    r.task,
                    r.method,
                    r.setting.label,
                    r.seed,
                    r.split,
                    r.value,
                    choice is not None and choice.setting == r.setting,
                    choice is not None and r.setting in choice.near,
                ]
            )
    return path


def read_choices(path: Path, task: str, methods: Sequence[str] | None = None) -> dict[str, list[str]]:
    """The settings the tuning stage chose for ``task``'s rows, from the ``tuning.csv`` that
    :func:`write_tuning` wrote: ``{method: [key=value, ...]}`` (``[]`` for the recipe's own), only for
    ``methods`` when given.  A study takes its per-method settings from here, so it trains what the
    board chose.  Raises ValueError, saying what to give instead, when the file holds no chosen row
    of the task (or of ``methods``)."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows or not {"task", "method", "setting", "chosen"} <= set(rows[0]):
        raise ValueError(
            f"{path} is not a tuning.csv (columns task, method, setting, chosen): give the file "
            "`rewardzoo leaderboard` wrote beside TUNING.md"
        )
    chosen = {
        r["method"]: list(Setting.from_label(r["setting"]).overrides)
        for r in rows
        if r["task"] == task and r["chosen"] == "True" and (methods is None or r["method"] in methods)
    }
    if not chosen:
        tasks = sorted({r["task"] for r in rows})
        raise ValueError(
            f"{path}: no chosen row of task {task!r}"
            + (f" among {sorted(methods)}" if methods else "")
            + f" (its tasks: {', '.join(tasks)}); run `rewardzoo leaderboard --tasks {task} --tune-only` "
            "and give its tuning.csv"
        )
    return chosen


def read_settings(text: str, task: str | None, methods: Sequence[str]) -> dict[str, list[str]]:
    """A study's ``--settings``: per-method ``key=value`` overrides, ``{method: [key=value, ...]}``, from a JSON
    object (a file, or the object itself) or from a leaderboard's ``tuning.csv`` (:func:`read_choices`: the
    rows the board chose for ``task`` among ``methods``, so the study trains what the board chose; ``task``
    None when the study has no board rows and takes JSON only).  Raises ValueError, saying what to give, on
    an unreadable file, a value of the wrong shape or a method not in ``methods``."""
    path = Path(text)
    if path.suffix == ".csv":
        if task is None:
            raise ValueError(f"{text}: a tuning.csv gives a board's rows; give this study a JSON file instead")
        return read_choices(path, task, list(methods))
    try:
        data = json.loads(path.read_text() if path.is_file() else text)
    except (OSError, json.JSONDecodeError) as err:
        raise ValueError(f"{text}: neither a tuning.csv nor a JSON object ({err})") from None
    if not isinstance(data, dict) or not all(
        isinstance(v, list) and all(isinstance(x, str) for x in v) for v in data.values()
    ):
        raise ValueError(
            f'{text}: a JSON object of method -> [key=value, ...], e.g. {{"{methods[0]}": ["grpo.lr=3e-5"]}}, '
            "or a tuning.csv"
        )
    unknown = sorted(set(data) - set(methods))
    if unknown:
        raise ValueError(f"{text} names unknown methods {unknown}; known: {list(methods)}")
    return data


# --------------------------------------------------------------------------------------- verdicts
@dataclass(frozen=True)
class Finding:
    """What a claim measured: an estimate against a threshold, relative to a control, from n."""

    task: str
    claim: str
    control: str
    """What the claim is measured against: a board row, or the run's own start."""
    estimate: Estimate
    threshold: float
    above: bool
    """True when the claim says the estimate lies above ``threshold`` (False: below)."""
    numbers: str
    """The measurement in words, with its units and interval."""
    n: str
    """The sample: ``5 seeds × 1000 held-out examples``, ``5 seeds``."""


def word(estimate: Estimate, threshold: float, above: bool = True) -> str:
    """'reproduced' when the interval lies strictly beyond ``threshold`` in the claimed direction, 'not
    reproduced' when it lies at or on the other side of it, else 'undecided (CI)' (a tie is no win)."""
    if not (math.isfinite(estimate.low) and math.isfinite(estimate.high)):
        return "undecided (CI)"
    if (estimate.low > threshold) if above else (estimate.high < threshold):
        return "reproduced"
    if (estimate.high <= threshold) if above else (estimate.low >= threshold):
        return "not reproduced"
    return "undecided (CI)"


def verdict(finding: Finding, seeds: int, positive: Finding | None) -> str:
    """A claim's verdict: none from fewer than :data:`MIN_SEEDS` seeds (those run, or those its interval is over
    when fewer: ``finding.estimate.n``); "testbed cannot decide" when the task has no positive control on the
    board, or its effect's interval does not lie beyond 0 in its direction; else :func:`word` of the finding.
    Both intervals are to treat the seed as the unit (:func:`rewardzoo.eval.seed_ci`)."""
    seeds = min(seeds, finding.estimate.n) if finding.estimate.n > 0 else seeds
    if seeds < MIN_SEEDS:
        return f"no verdict (n = {seeds} seed{'s' if seeds != 1 else ''} < {MIN_SEEDS})"
    if positive is None:
        return "testbed cannot decide (no positive control on this board)"
    if word(positive.estimate, positive.threshold, positive.above) != "reproduced":
        return f"testbed cannot decide (positive control {positive.control}: {positive.numbers})"
    return word(finding.estimate, finding.threshold, finding.above)


# ----------------------------------------------------------------------------- a factory's reward
def load_factory(spec: str) -> Callable:
    """The callable ``module:function`` names (imported; a clear error when it is not there)."""
    module, _, name = spec.partition(":")
    if not module or not name.isidentifier():
        raise ValueError(f"a reward factory is MODULE:FUNCTION (e.g. mypkg.rewards:make_reward); got {spec!r}")
    try:
        found = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as err:
        raise ValueError(
            f"cannot load the reward factory {spec!r}: {err}; the module must be importable "
            f"(on PYTHONPATH) and define {name}"
        ) from err
    if not callable(found):
        raise ValueError(f"{spec} is not callable; a reward factory is factory(cfg, ctx) -> Reward")
    return found


def train_with_factory(factory: str, recipe: str, overrides: list[str]) -> dict[str, float]:
    """``rewardzoo train RECIPE *overrides`` with the reward ``factory(cfg, ctx)`` builds instead of the
    recipe's ``reward`` section: the run directory is checked, the warm start trained or reused, then
    the factory gets the resolved config and a :class:`~rewardzoo.rewards.context.RewardContext` (the
    run's seed, starting weights and device; the task — its verifier — only when the factory says
    ``SEES_TASK = True``, as a reward class does).  Returns the last metrics row."""
    from rewardzoo.core.checkpoint import check_run_dir
    from rewardzoo.core.trainer import make_accelerator
    from rewardzoo.recipes import make_trainer, resolve, starting_weights, task_for
    from rewardzoo.rewards.context import RewardContext

    build = load_factory(factory)
    cfg = resolve(recipe, overrides)
    check_run_dir(cfg)
    task = task_for(cfg)
    init = starting_weights(cfg, task, accelerator := make_accelerator())
    sees = task if getattr(build, "SEES_TASK", False) else None
    reward = build(cfg, RewardContext(seed=cfg.seed, init_dir=init, device=str(accelerator.device), task=sees))
    return make_trainer(cfg, task=task, reward=reward).train()


def main(argv: list[str] | None = None) -> int:
    """``python -m rewardzoo.protocol train MODULE:FACTORY RECIPE key=value ...``."""
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) < 3 or argv[0] != "train":
        print("usage: python -m rewardzoo.protocol train MODULE:FACTORY RECIPE [key=value ...]", file=sys.stderr)
        return 2
    train_with_factory(argv[1], argv[2], argv[3:])
    return 0


if __name__ == "__main__":
    sys.exit(main())
