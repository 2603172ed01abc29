"""RLVR: a verifiable reward (the RLVR lesson; DeepSeek-R1's rule-based accuracy and format rewards).

A program v replaces the learned reward model.  By default the reward is the verifier alone; the
*reward stack* of the RLVR lesson ("the reward stack people actually use") adds weighted auxiliary terms:

    r_i = w_acc · v_i  +  w_fmt · f_i  −  w_len · ℓ_i  −  w_lang · m_i               (each weight ≥ 0)

    v_i  verifier, in [0, 1]: the task's own ``verify(answer, reference, meta)`` on the parsed answer
         (``verifier="task"``), or a named verifier from :data:`~rewardzoo.tasks.checks.verifiers.VERIFIERS`
         applied to the parsed answer or to the whole completion (``apply_to``); a malformed answer
         (or a missing reference) scores 0
    f_i  format: 1 if the task's parser found a well-formed answer, else 0
    ℓ_i  length penalty: clip(len(completion_i) / L − 1, 0, 1) — 0 up to the target L characters,
         1 from 2L on
    m_i  language mix: the fraction of the completion's letters that are not in its main script
         (the script named by ``language_script``, or else the most frequent one); a letter's
         script is the first word of its Unicode name (LATIN, CYRILLIC, CJK, GREEK, ...)

A weight of 0 switches its term off (not computed, not logged); the default is w_acc = 1 and all
others 0, i.e. r = v.  Each active term is returned in ``RewardOutput.components`` (``verifier``,
``format``, ``length``, ``language_mix``) and logged as ``reward/<component>_mean``.  Nothing is
learned, so ``update`` returns ``{}``.

The RLVR lesson's rule: the accuracy term must dominate — a wrong answer must never outscore a right one,
which holds when w_fmt + w_len + w_lang < w_acc.  Weights that break it are accepted with a
warning (the RLVR lesson's own example, 1.0 / 0.2 / 0.1 / 1.0, breaks it on purpose: language switching is
punished as hard as a wrong answer).

Departures from the RLVR lesson: length is counted in characters (a reward sees text, not tokens) and the
format term is the task parser's verdict rather than a separate tag search (for ``tags`` tasks the
two coincide; for ``plain`` tasks it is the only meaningful notion of format).  Scripts: a
Japanese answer mixes CJK and kana, and Greek letters in Latin-script mathematics count as mixed —
name the script, or keep w_lang small, for such tasks.
"""

from __future__ import annotations

import functools
import unicodedata
import warnings
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

import torch

from rewardzoo.core.config import check_section
from rewardzoo.core.types import FixedReward, RewardOutput, Rollouts
from rewardzoo.rewards.context import RewardContext
from rewardzoo.tasks.checks.verifiers import VERIFIERS

RowVerifier = Callable[[str | None, str | None, dict, str], float]  # (answer, reference, meta, completion) -> score
APPLY_TO = ("answer", "completion")


@dataclass
class RLVRConfig:
    """Settings of the RLVR reward: which verifier, and the weights of the reward stack."""

    RANGES: ClassVar[dict[str, str]] = {
        "accuracy_weight": "(0, inf)",
        "format_weight": "[0, inf)",
        "length_weight": "[0, inf)",
        "length_target": "[1, inf)",
        "language_mix_weight": "[0, inf)",
    }

    verifier: str = "task"
    """'task' = the task's exact verifier on the parsed answer; or a name from VERIFIERS: exact,
    last_number, tagged, contains (hackable on purpose), every_number, math_verify."""
    apply_to: str = "answer"
    """What a named verifier reads: 'answer' (the task-parsed answer) or 'completion' (the whole
    text, e.g. to study the contains hack).  Must be 'answer' with verifier='task'."""
    accuracy_weight: float = 1.0
    """w_acc: weight of the verifier's score (must be > 0)."""
    format_weight: float = 0.0
    """w_fmt: weight of the format term (1 when the task's parser found an answer); 0 = off."""
    length_weight: float = 0.0
    """w_len: weight of the length penalty clip(chars / length_target − 1, 0, 1); 0 = off."""
    length_target: int = 1000
    """L: completion length in characters above which the length penalty starts."""
    language_mix_weight: float = 0.0
    """w_lang: weight of the language-mix penalty (fraction of letters outside the main script); 0 = off."""
    language_script: str = ""
    """Script every letter should be in (first word of a Unicode letter name, e.g. LATIN, CYRILLIC,
    CJK); empty = each completion's most frequent script."""

    def validate(self) -> None:
        """Raise ValueError, saying what to change, on settings that cannot run."""
        if self.verifier != "task" and self.verifier not in VERIFIERS:
            raise ValueError(f"verifier must be 'task' or one of {', '.join(VERIFIERS)}; got {self.verifier!r}")
        if self.apply_to not in APPLY_TO:
            raise ValueError(f"apply_to must be one of {APPLY_TO}; got {self.apply_to!r}")
        if self.verifier == "task" and self.apply_to != "answer":
            raise ValueError(
                "apply_to='completion' needs a named verifier (e.g. verifier=contains); "
                "the task's verifier always reads the parsed answer"
            )
        if self.language_script and self.language_script not in known_scripts():
            raise ValueError(
                f"language_script {self.language_script!r} is not a Unicode script name; use e.g. "
                f"LATIN, CYRILLIC, CJK, GREEK, ARABIC, or '' for each completion's main script"
            )


def length_penalty(text: str, target: int) -> float:
    """clip(len(text) / target − 1, 0, 1): 0 up to ``target`` characters, rising to 1 at twice it."""
    return min(max(len(text) / target - 1.0, 0.0), 1.0)


@functools.lru_cache(maxsize=65536)
def _script(ch: str) -> str:
    return unicodedata.name(ch, "").split(" ", 1)[0]


@functools.cache
def known_scripts() -> frozenset[str]:
    """Every script name a letter of the Basic Multilingual Plane has (for validating configs)."""
    return frozenset(_script(chr(c)) for c in range(0x10000) if chr(c).isalpha()) - {""}


def language_mix(text: str, script: str = "") -> float:
    """Fraction of the letters of ``text`` outside ``script`` (or outside its most frequent script).

    >>> language_mix("hello"), language_mix("hello мир"), language_mix("мир", "LATIN")
    (0.0, 0.375, 1.0)
    """
    counts = Counter("LATIN" if ch < "\x80" else _script(ch) for ch in text if ch.isalpha())
    total = sum(counts.values())
    if total == 0:
        return 0.0
    kept = counts[script] if script else max(counts.values())
    return 1.0 - kept / total


def weighted_sum(components: dict[str, torch.Tensor], weights: dict[str, float]) -> torch.Tensor:
    """r = Σ_k weights[k] · components[k] over the components present (penalties carry a negative weight)."""
    terms = [weights[name] * value for name, value in components.items()]  # each [N]
    return torch.stack(terms).sum(dim=0)  # [N]


def warn_unless_accuracy_dominates(cfg: RLVRConfig) -> None:
    """Warn when the auxiliary weights reach the accuracy weight (the RLVR lesson: accuracy must dominate)."""
    if cfg.format_weight + cfg.length_weight + cfg.language_mix_weight >= cfg.accuracy_weight:
        warnings.warn(
            f"reward.rlvr: format + length + language-mix weights ({cfg.format_weight} + {cfg.length_weight} "
            f"+ {cfg.language_mix_weight}) reach the accuracy weight ({cfg.accuracy_weight}), so a wrong "
            f"answer can outscore a right one (the RLVR lesson: accuracy must dominate)",
            stacklevel=3,
        )


def row_verifier(cfg: RLVRConfig, task) -> RowVerifier:
    """The verifier ``cfg`` names, as ``(answer, reference, meta, completion) -> score`` on ``task``."""
    if cfg.verifier == "task":
        return lambda answer, reference, meta, completion: task.verify(answer, reference, meta)  # noqa: E731
    named = VERIFIERS[cfg.verifier]
    use_completion = cfg.apply_to == "completion"

    def fn(answer, reference, meta, completion):
        pred = completion if use_completion else answer
        return 0.0 if pred is None or reference is None else named(pred, reference)

    return fn


PROBE_EXAMPLES = 16
"""Demonstrations :func:`check_verifier_fits` scores."""


def check_verifier_fits(cfg: RLVRConfig, task) -> None:
    """Raise ValueError (starting with the field name) when a named verifier scores 0 on every one of
    the task's first :data:`PROBE_EXAMPLES` demonstrations — it cannot read the task's answer format
    (e.g. ``tagged`` on the parsed answer of a ``plain`` task), so RL would train on zero reward.
    The task's own verifier (``verifier='task'``) is not probed: it is written for its format."""
    if cfg.verifier == "task":
        return
    fn = row_verifier(cfg, task)
    probe = task.train[:PROBE_EXAMPLES]
    if probe and not any(fn(task.parse(e.demonstration), e.reference, e.meta, e.demonstration) for e in probe):
        first = probe[0].demonstration
        raise ValueError(
            f"verifier={cfg.verifier!r} (apply_to={cfg.apply_to!r}) scores 0 on all of the first "
            f"{len(probe)} demonstrations of task {task.name!r} (answer_format={task.answer_format!r}, "
            f"e.g. {first!r} → parsed {task.parse(first)!r}): it cannot read this task's answers, "
            f"and RL would train on zero reward. Use verifier=task, or a verifier (or apply_to) that "
            f"reads this format"
        )


class RLVR(FixedReward):
    """r_i = w_acc · v_i + w_fmt · f_i − w_len · ℓ_i − w_lang · m_i (module docstring); r_i = v_i by default."""

    def __init__(self, verifier: RowVerifier, name: str = "verifier", config: RLVRConfig | None = None):
        """``verifier(answer, reference, meta, completion) -> score``; ``config`` supplies the stack
        weights (its ``verifier``/``apply_to`` fields are not used here — see :meth:`from_config`)."""
        self.config = config or RLVRConfig()
        check_section(self.config, "reward.rlvr")
        warn_unless_accuracy_dominates(self.config)
        self.verifier = verifier
        self.name = name

    SEES_TASK = True  # the task's verifier is the reward

    @classmethod
    def from_config(cls, cfg: RLVRConfig | None = None, ctx: RewardContext | None = None) -> RLVR:
        """RLVR with the verifier and stack ``cfg`` names (default: the task's own verifier alone) on
        ``ctx.task`` (refused when the named verifier cannot score the task's own demonstrations:
        :func:`check_verifier_fits`)."""
        cfg = cfg or RLVRConfig()
        task = (ctx or RewardContext()).require_task("RLVR")
        check_section(cfg, "reward.rlvr")
        check_verifier_fits(cfg, task)
        return cls(row_verifier(cfg, task), name=f"{task.name}/{cfg.verifier}", config=cfg)

    def score(self, batch: Rollouts) -> RewardOutput:
        """The verifier and every active stack term of every row, and their weighted sum."""
        cfg = self.config
        rows = zip(batch.answers, batch.references, batch.meta, batch.completions)
        components = {
            "verifier": torch.tensor([float(self.verifier(a, r, m, c)) for a, r, m, c in rows], dtype=torch.float32)
        }  # [N]
        weights = {"verifier": cfg.accuracy_weight}
        if cfg.format_weight:
            components["format"] = torch.tensor([float(a is not None) for a in batch.answers])  # [N]
            weights["format"] = cfg.format_weight
        if cfg.length_weight:
            components["length"] = torch.tensor(
                [length_penalty(c, cfg.length_target) for c in batch.completions]
            )  # [N]
            weights["length"] = -cfg.length_weight
        if cfg.language_mix_weight:
            components["language_mix"] = torch.tensor(
                [language_mix(c, cfg.language_script) for c in batch.completions]
            )  # [N]
            weights["language_mix"] = -cfg.language_mix_weight
        rewards = weighted_sum(components, weights)  # [N]
        metrics = {f"reward/{name}_mean": value.mean().item() for name, value in components.items()}
        return RewardOutput(rewards=rewards, components=components, metrics=metrics)
