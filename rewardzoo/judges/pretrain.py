"""Judge backbones that know multiplication from pretraining, not from correctness labels.

The RAL paper's judges are pretrained LLMs (Qwen3 0.6B–32B): what they know about multiplication comes
from pretraining, and §5 says larger judges learn better rewards and that "better initialization,
specialized pretraining" may lower the capacity a judge needs.  The analogue at CPU scale is a tiny
causal LM pretrained as a language model on **true equations of other operands** than any prompt of
the task (RL prompts, SFT demonstrations, held-out prompts)::

    corpus   = { "a*b=" → "c", c = a·b  :  (a, b) of the task's digit shape, (a, b) ∉ task_pairs(task) }
    backbone = argmin_θ  E_corpus[ −log p_θ(c, EOS | "a*b=") ]     ``steps`` AdamW steps

Its verification ability is then set by how much it was pretrained (``steps``) and how big it is
(``tiny``), not by any label of the task's answers; ``benchmarks/ral_capacity.py`` measures it
(AUC of each readout on the warm start's right vs wrong held-out answers) before RL and uses it as
the judge's starting weights (``reward.ral.judge.init_from``).

The pretraining is the core's SFT warm start (:func:`rewardzoo.core.sft.warm_start`) with the corpus
as its demonstrations: the same loss (NLL of the answer tokens and EOS given the prompt; the
prompt's own tokens, random operands, carry nothing to learn), the same cosine schedule, and the
same cache — a directory keyed by a hash of the model shape, the settings and the corpus itself,
trained once, verified, and loaded offline (no download).

Choices of ours (the RAL paper gives no such experiment): the corpus is every pair of the task's digit shape
that no prompt of the task uses (1,600 equations for the 3×1-digit preset's 8,100 pairs, of which
the task's train, held-out and validation prompts use 6,500), in a seeded order; the equations are written in the
plain prompt format (``736*4=`` then ``2944``), the judge's input format.
"""

from __future__ import annotations

import dataclasses
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from rewardzoo.core.config import CoreConfig, LoggingConfig, SFTConfig, check_section
from rewardzoo.core.models import ModelConfig, TinyModelConfig
from rewardzoo.core.sft import sft_cache_dir, warm_start
from rewardzoo.core.trainer import make_accelerator
from rewardzoo.core.types import Example
from rewardzoo.tasks.multiplication import MultiplicationConfig, operand_ranges, task_pairs

CORPUS_NAME = "equations"
"""The corpus's name in its cache directory (``<cache_dir>/equations-<hash>``)."""


@dataclass
class JudgePretrainConfig:
    """How a judge backbone is pretrained on the equation corpus (our own defaults: the RAL paper has no such step)."""

    RANGES: ClassVar[dict[str, str]] = {
        "steps": "[1, inf)",
        "batch_size": "[1, inf)",
        "lr": "(0, inf)",
        "warmup_steps": "[0, inf)",
        "n_equations": "[0, inf)",
        "seed": "[0, inf)",
    }

    tiny: TinyModelConfig = field(default_factory=TinyModelConfig)
    """Shape of the judge's tiny causal LM (the policy's shape by default; wider or deeper = a larger judge)."""
    steps: int = 1000
    """AdamW steps of pretraining (the deciding variable of a judge's verification ability, with its size)."""
    batch_size: int = 64
    """Equations per step."""
    lr: float = 3e-3
    """Peak learning rate (linear warm-up, then cosine decay to 10%: the core's SFT schedule)."""
    warmup_steps: int = 20
    """Linear warm-up steps."""
    n_equations: int = 0
    """Equations in the corpus: the first n of its seeded order (0 = every pair the task does not use)."""
    seed: int = 0
    """Seed of the initial weights, the batch order and the corpus order."""
    cache_dir: str = "~/.cache/rewardzoo/judges"
    """Where pretrained backbones are cached, keyed by a hash of every setting above and the corpus."""


@dataclass(frozen=True)
class EquationCorpus:
    """The corpus as the core's SFT reads a task: a ``name`` and ``train`` examples (prompt ``a*b=``,
    demonstration = reference = the product; ``meta`` holds the operands)."""

    train: list[Example]
    name: str = CORPUS_NAME

    def pairs(self) -> set[tuple[int, int]]:
        """The corpus's operand pairs (a, b)."""
        return {(e.meta["a"], e.meta["b"]) for e in self.train}


def equation_corpus(task: MultiplicationConfig, n_equations: int = 0, seed: int = 0) -> EquationCorpus:
    """True equations ``a*b=`` → ``a·b`` over every operand pair of the task's digit shape that is not the
    pair of any prompt the task holds (:func:`rewardzoo.tasks.multiplication.task_pairs`), in a seeded
    order; the first ``n_equations`` of them (0 = all).  Raises ValueError, saying what to change, when
    the task leaves no pair over or the digit space is too large to list."""
    range_a, range_b = operand_ranges(task)
    space = len(range_a) * len(range_b)
    if space > 10**7:
        raise ValueError(
            f"{task.digits_a}×{task.digits_b}-digit operands have {space:,} pairs, too many to list for "
            "an equation corpus; use a task of at most 10 million operand pairs"
        )
    used = set(task_pairs(task))
    pairs = [(a, b) for a in range_a for b in range_b if (a, b) not in used]
    if not pairs:
        raise ValueError(
            f"the task uses every one of the {space} {task.digits_a}×{task.digits_b}-digit pairs "
            f"(n_train {task.n_train} + n_eval {task.n_eval}); lower them to leave pairs for the corpus"
        )
    random.Random(seed).shuffle(pairs)
    pairs = pairs[: n_equations or None]
    return EquationCorpus([Example(f"{a}*{b}=", str(a * b), str(a * b), {"a": a, "b": b}) for a, b in pairs])


def pretrain_settings(cfg: JudgePretrainConfig) -> CoreConfig:
    """The core configuration whose SFT warm start is this pretraining (validated)."""
    check_section(cfg, "judge_pretrain")
    core = CoreConfig()
    core = dataclasses.replace(
        core,
        seed=cfg.seed,
        model=ModelConfig(name="tiny", tiny=cfg.tiny),
        grpo=dataclasses.replace(core.grpo, micro_batch_size=cfg.batch_size),
        sft=SFTConfig(
            steps=cfg.steps,
            batch_size=cfg.batch_size,
            lr=cfg.lr,
            warmup_steps=cfg.warmup_steps,
            cache_dir=cfg.cache_dir,
            seed=cfg.seed,
        ),
        logging=LoggingConfig(tensorboard=False, progress=False),
    )
    check_section(core, "judge_pretrain.core")
    return core


def backbone_dir(cfg: JudgePretrainConfig, task: MultiplicationConfig) -> Path:
    """Where the backbone for these settings and this task's corpus is cached (trained or not)."""
    return sft_cache_dir(pretrain_settings(cfg), equation_corpus(task, cfg.n_equations, cfg.seed))


def pretrain_backbone(cfg: JudgePretrainConfig, task: MultiplicationConfig) -> Path:
    """The directory of a causal LM pretrained on :func:`equation_corpus` of ``task`` (``save_pretrained``
    with its tokenizer): reused from the cache when present, else trained, verified and cached."""
    core = pretrain_settings(cfg)
    return warm_start(core, equation_corpus(task, cfg.n_equations, cfg.seed), make_accelerator())
