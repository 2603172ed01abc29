"""The boards' rows: every preset as a literal list of :class:`Entry` rows (a task, a method label, a
recipe, overrides and its role), each task's table (:data:`BOARDS`: columns and the tuning metric), the
settings a preset gives every row of a task, the allowed twin exceptions and each task's positive control."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from rewardzoo.protocol import TwinException
from rewardzoo.zoo import shipped_recipe


@dataclass(frozen=True)
class Entry:
    """One row of a task's table: ``method`` trained by ``recipe`` with ``overrides`` (or, with
    ``factory``, by the reward ``module:function`` builds, on the recipe's settings)."""

    task: str
    method: str
    recipe: str
    overrides: tuple[str, ...] = ()
    role: str = "method"
    """What the row is for: ``method``, ``control of X: …`` (removes X's learned part), ``positive
    control`` (a reward known to work on the task), ``warm start``."""
    factory: str = ""

    @property
    def trained(self) -> bool:
        """Whether the row trains (the SFT rows, ``steps=0``, evaluate the warm start)."""
        return "steps=0" not in self.overrides


@dataclass(frozen=True)
class Board:
    """How a task's table reads: its columns (final-row keys) and which way each is better."""

    title: str
    headline: str
    """The metric of the learning-curve plot."""
    columns: tuple[tuple[str, str], ...]
    """(metric key, direction): 'max', 'min' or '' (reported, no best marked)."""
    tune_by: tuple[str, str]
    """(validation metric key, direction) the tuning stage chooses settings by: the task's objective
    (on the hackable board strict accuracy, not the hack rate a claim measures)."""


QUICK = (
    "steps=4",
    "sft.steps=20",
    "eval.n_examples=64",
    "eval.every=2",
    "reward.ral.warmup_steps=2",
    "reward.varl.warmup_steps=2",
)
"""What ``--quick`` changes in every trained run (the SFT rows keep ``steps=0``; refdist keeps its 16
held-out prompts, fewer than 64)."""
QUICK_LR_FACTORS = (1.0, 0.5)
"""``--quick``'s tuning grid (two points: the command is checked, not the science)."""
COMMON = (("policy/entropy", ""), ("time/wall_s", "min"))
BOARDS = {
    "multiplication": Board(
        "3-digit × 1-digit multiplication with a scratchpad, held-out avg@2 at T = 2",
        "eval/accuracy",
        (("eval/accuracy", "max"), ("eval/relative_error", "min"), *COMMON),
        ("eval/accuracy", "max"),
    ),
    "hackable_multiplication": Board(
        "Hackable multiplication (RL rewards the lazy `contains` proxy)",
        "eval/hack_rate",
        (("eval/accuracy", "max"), ("eval/hack_rate", "min"), ("eval/proxy_pass", ""), *COMMON),
        ("eval/accuracy", "max"),
    ),
    "refdist": Board(
        "Reference distribution (exact divergences of the policy's answer distribution to p_ref)",
        "eval/js",
        (
            ("eval/js", "min"),
            ("eval/kl_ref_pi", "min"),
            ("eval/kl_pi_ref", "min"),
            ("eval/top_answer_share", ""),
            ("eval/answer_entropy", ""),
            ("eval/outside_mass", "min"),
            *COMMON,
        ),
        ("eval/js", "min"),
    ),
    "chat_multiplication": Board(
        "SmolLM2-135M-Instruct on chat 2-digit × 1-digit multiplication, held-out greedy accuracy (`--preset real`)",
        "eval/accuracy",
        (("eval/accuracy", "max"), ("eval/format_rate", "max"), ("eval/relative_error", "min"), *COMMON),
        ("eval/accuracy", "max"),
    ),
    "rubric_writing": Board(
        "Rubric writing (biased rule judge in training; unbiased oracle held out)",
        "eval/quality",
        (("eval/quality", "max"), ("eval/repetition", "min"), ("eval/over_length", "min"), ("eval/words", ""), *COMMON),
        ("eval/quality", "max"),
    ),
}


def recipe(name: str) -> str:
    """A shipped recipe, by name (found in the package from any directory; a typo fails here, at import)."""
    return shipped_recipe(name).stem


G_NAMES = ("D", "neg_log_one_minus_D", "log_D", "logit")
CPU_SETTINGS = {
    "multiplication": ("grpo.batch_size=160", "grpo.micro_batch_size=160", "eval.every=20"),
    "refdist": ("sft.seed=0", "steps=40"),
    "rubric_writing": ("sft.seed=0",),
    "hackable_multiplication": ("grpo.batch_size=160", "grpo.micro_batch_size=160", "eval.every=20"),
}
"""What the ``cpu`` board changes in a task's recipes, for every method of the task alike (docs/leaderboard.md,
"Running it"): on multiplication and hackable multiplication 20 prompts a step instead of the recipe's 32 and
held-out evaluations every 20 steps (the curves have fewer points; the table reads the final one); on refdist and rubric
writing one SFT warm start per task shared by every seed, as the multiplication recipes already do (seeds
vary RL only); on refdist 40 RL steps instead of 100 (on the 100-step board every claim of the task was
decided by step 40)."""
HACKABLE_SETTINGS = {"hackable_multiplication": (*CPU_SETTINGS["hackable_multiplication"], "grpo.advantage=dr_grpo")}
"""The ``hackable`` board's change: the ``cpu`` board's hackable rows under Dr. GRPO advantages for every row —
VARL's paper setting, run by its RLVR twins too (both recipes default to ``grpo``)."""
GPU = (
    "model.name=Qwen/Qwen3-0.6B",
    "model.dtype=bfloat16",
    "model.lora.enabled=true",
    "model.lora.r=32",
    "model.lora.alpha=64",
    "sampling.engine=vllm",
    "sampling.vllm.gpu_memory_utilization=0.3",
    "sampling.max_new_tokens=64",
    "grpo.lr=1e-5",
    "grpo.micro_batch_size=64",
    "sft.lr=1e-4",
    "sft.steps=300",
    "steps=300",
    "eval.every=50",
    "reward.ral.judge.lr=1e-5",
    "reward.varl.discriminator.lr=1e-5",
)
"""What the ``gpu`` preset changes in every CPU entry: Qwen3-0.6B from the hub in bfloat16 with LoRA r 32, the
vLLM engine, 300 SFT and 300 RL steps, learning rates for a pretrained model (our choices; not run here)."""

DR_GRPO = "VARL's paper setting (group size 8, advantages without std normalisation); RLVR runs it too as its twin"
TWIN_EXCEPTIONS: dict[tuple[str, str], TwinException] = {
    **{
        (task, "SFT"): TwinException({"steps": "the warm start itself, evaluated: it takes no RL step"})
        for task in BOARDS
    },
    ("chat_multiplication", "Instruct (step 0)"): TwinException(
        {"steps": "the instruct model itself, evaluated: it takes no RL step"}
    ),
    ("multiplication", "VARL"): TwinException({"grpo.advantage": DR_GRPO}, twin="RLVR (dr_grpo)"),
    ("multiplication", "VARL additive"): TwinException({"grpo.advantage": DR_GRPO}, twin="RLVR (dr_grpo)"),
    ("multiplication", "RLVR (dr_grpo)"): TwinException({"grpo.advantage": DR_GRPO}, twin="VARL"),
}
"""(task, method label) → the only settings outside ``reward.*`` in which a row may differ from its task's twins,
with the reason, and the twin that shares them (``rewardzoo.protocol.twin_differences``;
``tests/test_leaderboard.py`` checks every preset).  On multiplication RLVR and RAL run their papers'
``grpo`` advantages, VARL its paper's ``dr_grpo``, and the row ``RLVR (dr_grpo)`` is VARL's twin under
VARL's setting; every claim compares rows of one setting."""


REAL_SETTINGS = {
    "chat_multiplication": (
        "task.multiplication.digits_a=2",
        "task.multiplication.n_train=410",
        "task.multiplication.n_validation=200",
        "sampling.temperature=0.7",
        "grpo.batch_size=16",
        "grpo.micro_batch_size=16",
        "steps=30",
        "eval.every=30",
    ),
}
"""What the ``real`` board (SmolLM2-135M-Instruct, benchmarks/results/real_model/README.md) changes in the
``*_smollm2`` recipes, for every row alike, and why.  Task size and temperature by one rule fixed before any
training and read on training prompts only: the setting where the most GRPO groups have a reward spread at step 0
(benchmarks/results/real_model/probe.md: 3-digit × 1-digit at T = 1.0, the recipes' own, gave 12% of groups a
non-zero spread; 2-digit at T = 0.7, 38%; a group without spread has no gradient).  The 810 operand pairs of
2-digit × 1-digit split as 200 test, 410 training and 200 validation prompts (the test prompts are the same as
without a validation split; the judge's own positive control, benchmarks/real_judge_control.py, reads the
validation prompts, never the test ones).  2 prompts × G = 8 a step,
30 steps, held-out evaluation at the start and the end: the sizes that fit the board in about 2 hours of a
2-core machine (a 16-row step costs about 16-25 s there, by the CPU: benchmarks/results/real_model/board/TIME.md
and board_parts/seeds_0-4/TIME.md)."""


def task_settings(preset: str, task: str) -> tuple[str, ...]:
    """The settings ``preset`` gives every entry of ``task`` (the gpu preset: the CPU ones, then :data:`GPU`)."""
    if preset == "gpu":
        return (*CPU_SETTINGS.get(task, ()), *GPU)
    return {"cpu": CPU_SETTINGS, "hackable": HACKABLE_SETTINGS, "real": REAL_SETTINGS}.get(preset, {}).get(task, ())


def entry(
    preset: str, task: str, method: str, name: str, *overrides: str, role: str = "method", factory: str = ""
) -> Entry:
    """A row of ``preset``: the recipe ``name`` with the task's :func:`task_settings`, then ``overrides``
    (an SFT row, ``steps=0``, takes no step budget)."""
    sft_row = "steps=0" in overrides
    settings = tuple(o for o in task_settings(preset, task) if not (sft_row and o.startswith("steps=")))
    return Entry(task, method, name, (*settings, *overrides), role, factory)


def _board(preset: str) -> Callable[..., Entry]:
    return lambda *args, **kw: entry(preset, *args, **kw)


def ral_format_only(board: Callable[..., Entry], task: str, ral_recipe: str) -> Entry:
    """RAL's control that removes its learned part: D ≡ 1 on a well-formed answer, no judge."""
    return board(
        task,
        "RAL format-only",
        recipe(ral_recipe),
        "reward.ral.format_only=true",
        role="control of RAL: D ≡ 1 on valid answers, no judge",
    )


def hackable_rows(board: Callable[..., Entry]) -> list[Entry]:
    """The reward-hacking rows (``hackable_multiplication``) of a board: the warm start, the two positive controls
    (RLVR hacks the proxy; RLVR on the strict check solves honestly), VARL and its additive control."""
    return [
        board("hackable_multiplication", "SFT", recipe("rlvr_hackable_multiplication"), "steps=0", role="warm start"),
        board(
            "hackable_multiplication",
            "RLVR (proxy)",
            recipe("rlvr_hackable_multiplication"),
            role="positive control (it must hack); VARL's RLVR twin",
        ),
        board(
            "hackable_multiplication",
            "RLVR (strict check)",
            recipe("rlvr_hackable_multiplication"),
            "reward.rlvr.verifier=exact",
            role="positive control of honest solving: RL on the strict check",
        ),
        board("hackable_multiplication", "VARL (proxy gate)", recipe("varl_hackable_multiplication")),
        board(
            "hackable_multiplication",
            "VARL additive (proxy)",
            recipe("varl_hackable_multiplication"),
            "reward.varl.combine=add",
            role="control of VARL: r = v + D",
        ),
    ]


cpu = _board("cpu")
PRESETS: dict[str, list[Entry]] = {
    "cpu": [
        cpu("multiplication", "SFT", recipe("rlvr_multiplication"), "steps=0", role="warm start"),
        cpu("multiplication", "RLVR", recipe("rlvr_multiplication"), role="positive control; RAL's twin"),
        cpu("multiplication", "RAL", recipe("ral_multiplication")),
        cpu(
            "multiplication",
            "RAL frozen judge",
            recipe("ral_multiplication"),
            "reward.ral.frozen=true",
            role="control of RAL: judge frozen after warm-up",
        ),
        ral_format_only(cpu, "multiplication", "ral_multiplication"),
        cpu(
            "multiplication",
            "RLVR (dr_grpo)",
            recipe("rlvr_multiplication"),
            "grpo.advantage=dr_grpo",
            role="VARL's twin: RLVR under VARL's paper setting (D ≡ 1)",
        ),
        cpu("multiplication", "VARL", recipe("varl_multiplication")),
        cpu(
            "multiplication",
            "VARL additive",
            recipe("varl_multiplication"),
            "reward.varl.combine=add",
            role="control of VARL: r = v + D",
        ),
        cpu("refdist", "SFT", recipe("rlvr_refdist"), "steps=0", role="warm start"),
        cpu(
            "refdist", "RLVR", recipe("rlvr_refdist"), role="null control: every valid answer earns 1 (VARL with D ≡ 1)"
        ),
        cpu(
            "refdist",
            "RLVR exact reference",
            recipe("rlvr_refdist"),
            "reward.rlvr.verifier=exact",
            role="positive control: 1 when the answer is the drawn reference (mean reward p_ref)",
        ),
        *(cpu("refdist", f"RAL g={g}", recipe("ral_refdist"), f"reward.ral.g={g}") for g in G_NAMES),
        cpu(
            "refdist",
            "RAL g=D frozen judge",
            recipe("ral_refdist"),
            "reward.ral.frozen=true",
            role="control of RAL g=D: judge frozen after warm-up",
        ),
        cpu("refdist", "VARL", recipe("varl_refdist")),
        *hackable_rows(cpu),
        cpu("rubric_writing", "SFT", recipe("rcrl_rubric_writing"), "steps=0", role="warm start"),
        cpu(
            "rubric_writing",
            "RLVR oracle",
            recipe("rcrl_rubric_writing"),
            "reward.name=rlvr",
            role="positive control: RL on the held-out oracle's own quality",
        ),
        cpu("rubric_writing", "RcRL", recipe("rcrl_rubric_writing")),
        cpu(
            "rubric_writing",
            "Absolute RcRL",
            recipe("absolute_rcrl_rubric_writing"),
            role="control of RcRL: its absolute twin (no pairwise comparison)",
        ),
        cpu("rubric_writing", "Absolute RaR", recipe("rar_rubric_writing"), role="baseline (RcRL paper, Table 3)"),
        cpu(
            "rubric_writing",
            "Pairwise RaR",
            recipe("pairwise_rar_rubric_writing"),
            role="baseline (RcRL paper, Table 3)",
        ),
        cpu(
            "rubric_writing",
            "Dropout Absolute RaR",
            recipe("dropout_absolute_rar_rubric_writing"),
            role="baseline (RcRL paper, Table 3)",
        ),
    ],
    "hackable": hackable_rows(_board("hackable")),
}
"""``cpu``: the CPU leaderboard — the tasks whose presets have the power to separate methods
(benchmarks/results/power/power.md), hackable multiplication (where RL on the lazy proxy measurably hacks:
benchmarks/results/varl_hacking.md) and rubric writing, the one task of RcRL and its baselines.
``hackable``: the cpu board's hackable rows under VARL's paper setting (Dr. GRPO advantages for every row);
``rewardzoo leaderboard --preset hackable``."""
REAL_JUDGE = ("reward.ral.judge.head_lr=1e-2",)
"""The ``real`` board's RAL judge setting over its recipe's, chosen before any RL run by the judge's own positive
control on validation prompts (benchmarks/results/real_model/judge_control.md, ``benchmarks/real_judge_control.py``):
of six settings, the highest AUC for right against wrong answers after the recipe's 10 warm-up rounds — 0.848
[0.774, 0.920], the readout's a and b at lr 1e-2 (the recipe's own, a and b at the backbone's 1e-5: 0.847)."""
real = _board("real")
PRESETS["real"] = [
    real(
        "chat_multiplication", "Instruct (step 0)", recipe("rlvr_multiplication_smollm2"), "steps=0", role="warm start"
    ),
    real("chat_multiplication", "RLVR", recipe("rlvr_multiplication_smollm2"), role="positive control; RAL's twin"),
    real("chat_multiplication", "RAL", recipe("ral_multiplication_smollm2"), *REAL_JUDGE),
    ral_format_only(real, "chat_multiplication", "ral_multiplication_smollm2"),
]
"""``real``: RAL against RLVR and against its format-only control on a real pretrained model,
SmolLM2-135M-Instruct in chat form (``rewardzoo models fetch smollm2-135m-instruct`` first;
benchmarks/results/real_model/README.md)."""
PRESETS["gpu"] = [
    replace(e, overrides=(*e.overrides, *(o for o in GPU if e.trained or not o.startswith("steps="))))
    for e in PRESETS["cpu"]
    if e.task in ("multiplication", "hackable_multiplication")
]


@dataclass(frozen=True)
class PositiveControl:
    """A task's positive control: ``method`` moves ``metric`` (row key ``row_key`` per held-out example;
    None: an exact metric) from the warm start in direction ``up``."""

    method: str
    metric: str
    row_key: str | None
    up: bool
    meaning: str


POSITIVE_CONTROLS = {
    "multiplication": PositiveControl(
        "RLVR", "eval/accuracy", "correct", True, "the exact verifier raises held-out accuracy"
    ),
    "hackable_multiplication": PositiveControl(
        "RLVR (proxy)",
        "eval/hack_rate",
        "hack_rate",
        True,
        "RLVR on the lazy proxy raises the held-out hack rate (the hack VARL is to prevent)",
    ),
    "chat_multiplication": PositiveControl(
        "RLVR", "eval/accuracy", "correct", True, "the exact verifier raises the instruct model's held-out accuracy"
    ),
    "refdist": PositiveControl(
        "RLVR exact reference", "eval/js", None, False, "a reward whose mean is p_ref(y ∣ x) lowers JS(p_ref, π)"
    ),
    "rubric_writing": PositiveControl(
        "RLVR oracle", "eval/quality", "quality", True, "RL on the oracle's own quality raises held-out oracle quality"
    ),
}
"""Per task, the reward known to work there and the effect it must show before any claim of the task is
decided (a testbed whose positive control fails cannot tell methods apart)."""
