"""A reference-vs-generated judge: D_φ(x, a) = P(answer a to prompt x is a reference).

The judge reads **only the prompt and the final answer**, never the reasoning: its input text is

    judge_text(x, a) = x + separator + a          (separator "" by default)

With the default empty separator the text is what the policy would have written had its
completion been the bare answer (``"12*7="`` + ``"84"``), so a judge initialised from the policy's
backbone starts on text it has seen.  Texts are tokenized with **right padding** and, beyond
``max_length`` tokens, truncated **from the left** so the answer is always kept.

How the logit z (D = σ(z)) is read from the model is the switch ``readout``
(:mod:`rewardzoo.judges.readouts`): ``last_token`` — the RAL paper's judge, a transformers
``AutoModelForSequenceClassification`` with one output logit, pooled at the last real token (the
default) — ``answer_mean`` (the same head on the answer tokens' mean state), or ``lm_likelihood``
(the answer's log-likelihood under the backbone's own LM head, z = a·ℓ + b with a learned
calibration: an ``AutoModelForCausalLM`` inside a :class:`~rewardzoo.judges.readouts.LikelihoodJudgeModel`).
``end_token`` appends EOS to the answer.  The model is a tiny Qwen3 built from its own
:class:`~rewardzoo.core.models.TinyModelConfig` (sized independently of the policy), a hub name /
local path, or a checkpoint directory whose backbone weights load under a new, seeded head (the
calibration starts at a = 1, b = 0).  With ``last_token`` and no end token, transformers' decoder
classifiers pool the logit of the right-most token that is not ``pad_token_id``; with right padding
that is the last real token, so a row's probability does not depend on the rows it is batched with
(tested, for every readout).

Training loss, class-balanced binary cross-entropy (references labelled 1, generated answers 0)::

    L(φ) = ½ · mean_{(x,a) ∈ pos} softplus(−z_φ(x,a)) + ½ · mean_{(x,a) ∈ neg} softplus(z_φ(x,a))

i.e. each class carries half the loss whatever the counts (balanced by weighting, not by
subsampling), one AdamW step per call, gradients accumulated over micro-batches.  The readout's own
parameters (head, or a and b) may get their own learning rate (``head_lr``), and the backbone may
be frozen (``freeze_backbone``: a probe of what it already knows).

Departures / choices of ours (the RAL paper gives no judge hyperparameters, and its judge is a sequence
classifier): the ``answer_mean`` and ``lm_likelihood`` readouts, the end token, ``head_lr`` and
``freeze_backbone`` are ours; the judge always runs in float32; with ``last_token`` and no end token
the pooled token is found through the pad id, so a hub tokenizer whose pad token equals the last
token of a text (pad = EOS with an EOS-terminated text) would be mis-pooled — we never append EOS
there (with ``end_token`` the pooled position comes from the attention mask instead).  Untested
here: hub models and GPU runs (the tests use tiny models on CPU).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import torch
import torch.nn.functional as F
from transformers import AutoModelForCausalLM, AutoModelForSequenceClassification, AutoTokenizer
from transformers.utils import logging as hf_logging

from rewardzoo.core.distributed import load_module_state, module_state
from rewardzoo.core.model_store import resolve_model
from rewardzoo.core.models import (
    TinyModelConfig,
    char_tokenizer,
    check_model_source,
    init_portable_,
    tiny_causal_lm,
    tiny_config,
)
from rewardzoo.core.types import NonFiniteError, Rollouts
from rewardzoo.judges.readouts import (
    LM_REDUCTIONS,
    READOUTS,
    LikelihoodJudgeModel,
    classifier_logit,
    head_parameters,
    pack_answers,
)
from rewardzoo.tasks.chat import judge_prompts, render_chat

Pair = tuple[str, str]  # (prompt, final answer)


@dataclass
class JudgeConfig:
    """The judge model and its optimiser (defaults are our own choices; the RAL paper gives none)."""

    RANGES: ClassVar[dict[str, str]] = {
        "max_length": "[2, inf)",
        "lr": "(0, inf)",
        "weight_decay": "[0, inf)",
        "adam_betas": "[0, 1)",
        "max_grad_norm": "[0, inf)",
        "micro_batch_size": "[1, inf)",
        "head_lr": "[0, inf)",
    }

    model: str = "tiny"
    """'tiny' (a Qwen3 built from ``tiny`` with the character tokenizer) or a Hugging Face model name or
    local path (loaded with a new one-logit classification head).  Ignored when ``init_from`` is set."""
    tiny: TinyModelConfig = field(default_factory=TinyModelConfig)
    """Shape of the tiny judge, independent of the policy's shape."""
    init_from: str = ""
    """Initialise the judge's backbone from a saved model directory: 'policy' = the policy's starting
    weights (the SFT warm start), or a path; '' = use ``model``.  The score head is always new."""
    separator: str = ""
    """Text between prompt and answer in the judge's input (the judge never sees the reasoning)."""
    max_length: int = 512
    """Longest judge input in tokens; longer texts are cut from the left so the answer is kept."""
    lr: float = 1e-3
    """AdamW learning rate of the judge (suits the tiny judge; use ~1e-5 for a pretrained hub model)."""
    weight_decay: float = 0.0
    """AdamW weight decay of the judge."""
    adam_betas: list[float] = field(default_factory=lambda: [0.9, 0.999])
    """AdamW betas of the judge."""
    max_grad_norm: float = 1.0
    """Gradient clipping norm of a judge step (0 = off)."""
    micro_batch_size: int = 256
    """Rows per judge forward (scoring) and forward/backward (training, gradients accumulated)."""
    readout: str = "last_token"
    """How D is read from the model (judges/readouts.py): 'last_token' (the RAL paper's sequence classifier: a one-logit
    head on the last token), 'answer_mean' (that head on the mean of the answer tokens' states) or
    'lm_likelihood' (z = a·ℓ + b, ℓ the answer's log-likelihood under the backbone's own LM head; a, b learned)."""
    end_token: bool = False
    """Append EOS to the answer: the last token read is EOS, it is pooled with the answer, and ℓ includes
    log p(EOS | prompt, answer) (that the answer ends there)."""
    lm_reduce: str = "mean"
    """lm_likelihood: ℓ = the 'mean' or the 'sum' of the answer tokens' log-probs."""
    head_lr: float = 0.0
    """AdamW learning rate of the readout's own parameters (the score head, or a and b); 0 = ``lr``."""
    freeze_backbone: bool = False
    """Train the readout's own parameters only; the backbone keeps the weights it was built with."""
    chat_template: bool = False
    """Render the prompt as a user turn with the judge tokenizer's own chat template, the answer following the
    assistant header (a judge built on an instruct model, e.g. lm_likelihood on smollm2-135m-instruct)."""

    def validate(self) -> None:
        """Raise ValueError, saying what to change, on settings that cannot run."""
        if self.readout not in READOUTS:
            raise ValueError(f"readout must be one of {', '.join(READOUTS)}; got {self.readout!r}")
        if self.lm_reduce not in LM_REDUCTIONS:
            raise ValueError(f"lm_reduce must be one of {', '.join(LM_REDUCTIONS)}; got {self.lm_reduce!r}")
        if len(self.adam_betas) != 2:
            raise ValueError(f"adam_betas must be two numbers [beta1, beta2] in [0, 1); got {list(self.adam_betas)}")
        if not self.init_from:
            check_model_source(self.model, "model")
        elif self.init_from != "policy" and not Path(self.init_from).expanduser().is_dir():
            raise ValueError(
                f"init_from {self.init_from!r}: no such directory; give 'policy', a model saved with "
                f"save_pretrained, or ''"
            )


def judge_text(prompt: str, answer: str, separator: str = "") -> str:
    """The judge's input for one (prompt, final answer) pair."""
    return f"{prompt}{separator}{answer}"


def reference_pairs(batch: Rollouts) -> list[Pair]:
    """One (prompt, reference) pair per group of the batch, in order (groups without a reference skipped):
    the positives of a judge step (a chat task's prompt is its original question, :func:`judge_prompts`)."""
    seen: set[int] = set()
    pairs = []
    for gid, prompt, ref in zip(batch.group_ids.tolist(), judge_prompts(batch), batch.references):
        if gid not in seen and ref is not None:
            seen.add(gid)
            pairs.append((prompt, ref))
    return pairs


def balanced_weights(labels: torch.Tensor) -> torch.Tensor:
    """Row weights that give each class half of the loss: 1/(2·n_pos) on references, 1/(2·n_neg) on
    generated answers.  labels: [n] 1.0 = reference, 0.0 = generated (both classes present)."""
    n_pos = labels.sum()  # []
    n_neg = labels.numel() - n_pos  # []
    return torch.where(labels > 0.5, 0.5 / n_pos, 0.5 / n_neg)  # [n]


def resolve_init_dir(init_from: str, policy_dir: str | Path | None) -> Path | None:
    """The directory a judge's backbone comes from ('policy' → the policy's starting weights)."""
    if not init_from:
        return None
    if init_from == "policy":
        if policy_dir is None:
            raise ValueError(
                "judge init_from='policy' needs the policy's starting weights, but this run has none "
                "(sft.enabled=false and no init_from); enable SFT, set init_from, or give the judge "
                "a model directory / init_from=''"
            )
        return Path(policy_dir)
    path = Path(init_from).expanduser()
    if not path.is_dir():
        raise ValueError(
            f"judge init_from {init_from!r} is not a directory; give 'policy', a model saved with "
            f"save_pretrained, or ''"
        )
    return path


def _hub_tokenizer(source: str | Path):
    """The tokenizer of a hub model or saved directory, with a pad token (EOS when it has none)."""
    tokenizer = AutoTokenizer.from_pretrained(str(source))
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def _likelihood_model(cfg: JudgeConfig, source: str | Path, seed: int) -> tuple[LikelihoodJudgeModel, object]:
    """The ``lm_likelihood`` judge model: a causal LM (tiny from ``seed``, or loaded from ``source`` with
    its own LM head) under a fresh calibration a = 1, b = 0; and its tokenizer."""
    if source == "tiny":
        tokenizer = char_tokenizer()
        lm = tiny_causal_lm(cfg.tiny, len(tokenizer), seed)
    else:
        tokenizer = _hub_tokenizer(source)
        lm = AutoModelForCausalLM.from_pretrained(str(source), dtype=torch.float32)
    return LikelihoodJudgeModel(lm, cfg.lm_reduce), tokenizer


class SequenceJudge:
    """D_φ(x, a): a one-logit judge over ``judge_text(x, a)``, read as ``cfg.readout`` says, with its own AdamW.

    ``model`` is a one-logit ``AutoModelForSequenceClassification`` (readouts ``last_token``,
    ``answer_mean``) or a :class:`~rewardzoo.judges.readouts.LikelihoodJudgeModel` (``lm_likelihood``).
    ``trainable=False`` builds no optimizer (used for the Polyak-averaged reward judge).
    """

    def __init__(
        self, model: torch.nn.Module, tokenizer, cfg: JudgeConfig, *, device: str = "cpu", trainable: bool = True
    ):
        if tokenizer.pad_token_id is None:
            raise ValueError("the judge's tokenizer has no pad token; give a tokenizer with pad_token set")
        if cfg.chat_template and not getattr(tokenizer, "chat_template", None):
            raise ValueError(
                "judge chat_template=true, but the judge's tokenizer has no chat template; build the judge "
                "on an instruct model or set chat_template=false"
            )
        if (cfg.readout == "lm_likelihood") != isinstance(model, LikelihoodJudgeModel):
            raise ValueError(
                f"readout {cfg.readout!r} needs "
                f"{'a LikelihoodJudgeModel' if cfg.readout == 'lm_likelihood' else 'a sequence classifier'}; "
                f"got {type(model).__name__}"
            )
        if not isinstance(model, LikelihoodJudgeModel):
            if model.config.num_labels != 1:
                raise ValueError(
                    f"the judge needs a one-logit classification head, got num_labels={model.config.num_labels}"
                )
            model.config.pad_token_id = tokenizer.pad_token_id
        self.cfg = cfg
        self.tokenizer = tokenizer
        self.tokenizer.padding_side = "right"
        self.tokenizer.truncation_side = "left"
        self.device = torch.device(device)
        self.model = model.to(self.device)
        self.optimizer = self._optimizer() if trainable else None

    def _optimizer(self) -> torch.optim.AdamW:
        """AdamW over the model: one group at ``lr`` — or, with ``head_lr`` or ``freeze_backbone``, the
        backbone at ``lr`` (absent when frozen) and the readout's own parameters at ``head_lr or lr``."""
        cfg = self.cfg
        kw = dict(lr=cfg.lr, betas=tuple(cfg.adam_betas), weight_decay=cfg.weight_decay)
        if not cfg.head_lr and not cfg.freeze_backbone:
            return torch.optim.AdamW(self.model.parameters(), **kw)
        head = head_parameters(self.model)
        own = {id(p) for p in head}
        backbone = [p for p in self.model.parameters() if id(p) not in own]
        if cfg.freeze_backbone:
            for p in backbone:
                p.requires_grad_(False)
        groups = ([] if cfg.freeze_backbone else [{"params": backbone}]) + [
            {"params": head, "lr": cfg.head_lr or cfg.lr}
        ]
        return torch.optim.AdamW(groups, **kw)

    def distribute(self, sharding) -> None:
        """Shard the judge's weights, and its optimizer's state, over the run's processes
        (:class:`~rewardzoo.core.distributed.Sharding`, FSDP2; call before any judge step).  Every
        process still runs every pair it is given: the rewards stay the same on every process.  Under
        ``distributed.mixed_precision=bf16`` the judge computes in bf16 too (fp32 master weights)."""
        self.model = sharding.shard(self.model, trains=self.optimizer is not None)
        if self.optimizer is not None:
            self.optimizer = self._optimizer()  # over the sharded parameters

    @classmethod
    def build(
        cls, cfg: JudgeConfig, *, policy_dir: str | Path | None = None, seed: int = 0, device: str = "cpu"
    ) -> SequenceJudge:
        """A judge as ``cfg`` describes it; the head (and a tiny model) is initialised from ``seed``."""
        source = resolve_init_dir(cfg.init_from, policy_dir) or resolve_model(cfg.model)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            if cfg.readout == "lm_likelihood":
                model, tokenizer = _likelihood_model(cfg, source, seed)
            elif source == "tiny":
                tokenizer = char_tokenizer()
                config = tiny_config(cfg.tiny, len(tokenizer))
                config.num_labels = 1
                model = init_portable_(
                    AutoModelForSequenceClassification.from_config(config), config.initializer_range, seed
                )
            else:
                tokenizer = _hub_tokenizer(source)
                level = hf_logging.get_verbosity()
                hf_logging.set_verbosity_error()  # a causal-LM backbone has no score head: expected, not news
                try:
                    model = AutoModelForSequenceClassification.from_pretrained(
                        str(source), num_labels=1, pad_token_id=tokenizer.pad_token_id, dtype=torch.float32
                    )
                finally:
                    hf_logging.set_verbosity(level)
                if isinstance(getattr(model, "score", None), torch.nn.Linear):  # the new head, the same on every CPU
                    init_portable_(model.score, model.config.initializer_range, seed)
        return cls(model, tokenizer, cfg, device=device)

    def frozen_copy(self) -> SequenceJudge:
        """A copy of the judge's current weights without an optimizer (the Polyak reward judge)."""
        model = copy.deepcopy(self.model).requires_grad_(False)
        return SequenceJudge(model, self.tokenizer, self.cfg, device=str(self.device), trainable=False)

    def calibration(self) -> dict[str, float]:
        """The ``lm_likelihood`` readout's calibration z = a·ℓ + b as ``{"calibration_scale": a,
        "calibration_bias": b}``; empty for the other readouts."""
        if not isinstance(self.model, LikelihoodJudgeModel):
            return {}
        return {"calibration_scale": self.model.scale.item(), "calibration_bias": self.model.bias.item()}

    def chat_pairs(self, pairs: Sequence[Pair]) -> list[Pair]:
        """``pairs`` with each prompt rendered as a user turn by the judge tokenizer's chat template (the answer
        then follows the assistant header) when ``chat_template``; else unchanged."""
        if not self.cfg.chat_template:
            return list(pairs)
        return [(render_chat(self.tokenizer, p), a) for p, a in pairs]

    def _encode(self, pairs: Sequence[Pair]) -> dict[str, torch.Tensor]:
        texts = [judge_text(p, a, self.cfg.separator) for p, a in pairs]
        enc = self.tokenizer(texts, padding=True, truncation=True, max_length=self.cfg.max_length, return_tensors="pt")
        return {"input_ids": enc["input_ids"].to(self.device), "attention_mask": enc["attention_mask"].to(self.device)}

    def logits(self, pairs: Sequence[Pair]) -> torch.Tensor:
        """[n] judge logits z(x, a) of one micro-batch of (prompt, answer) pairs (with grad), read as
        ``cfg.readout`` says."""
        cfg = self.cfg
        pairs = self.chat_pairs(pairs)
        if cfg.readout == "last_token" and not cfg.end_token:  # the RAL paper's classifier, as transformers pools
            return self.model(**self._encode(pairs)).logits[:, 0].float()  # [n]
        batch = pack_answers(self.tokenizer, pairs, cfg.separator, cfg.max_length, cfg.end_token).to(self.device)
        if cfg.readout == "lm_likelihood":
            return self.model(batch).float()  # [n]
        return classifier_logit(self.model, batch, cfg.readout)  # [n]

    @torch.no_grad()
    def logit_reference(self, prompts: Sequence[str], answers: Sequence[str]) -> torch.Tensor:
        """[N] judge logits z(x, a), D = σ(z), batched by ``micro_batch_size``, no grad; on the CPU."""
        if len(prompts) != len(answers):
            raise ValueError(f"the judge got {len(prompts)} prompts and {len(answers)} answers")
        pairs = list(zip(prompts, answers))
        self.model.eval()
        mb = self.cfg.micro_batch_size
        parts = [self.logits(pairs[s : s + mb]).cpu() for s in range(0, len(pairs), mb)]
        return torch.cat(parts) if parts else torch.zeros(0)  # [N]

    def prob_reference(self, prompts: Sequence[str], answers: Sequence[str]) -> torch.Tensor:
        """[N] D(x, a) = P(reference) = σ(z), no grad; on the CPU."""
        return torch.sigmoid(self.logit_reference(prompts, answers))  # [N]

    def train_step(self, positives: Sequence[Pair], negatives: Sequence[Pair]) -> dict[str, float]:
        """One AdamW step of class-balanced BCE: ``positives`` (references) labelled 1,
        ``negatives`` (generated answers) labelled 0.  Returns the loss before the step and the
        gradient norm."""
        if self.optimizer is None:
            raise RuntimeError(
                "this judge was built with trainable=False (a Polyak reward judge); train the source judge"
            )
        if not positives or not negatives:
            raise ValueError(
                f"a judge step needs both classes; got {len(positives)} positives, {len(negatives)} negatives"
            )
        pairs = list(positives) + list(negatives)
        labels = torch.cat([torch.ones(len(positives)), torch.zeros(len(negatives))])  # [n_pos + n_neg]
        weights = balanced_weights(labels)  # [n_pos + n_neg]
        self.model.train()
        self.optimizer.zero_grad(set_to_none=True)
        loss_value = 0.0
        mb = self.cfg.micro_batch_size
        for s in range(0, len(pairs), mb):
            z = self.logits(pairs[s : s + mb])  # [n_mb]
            y = labels[s : s + mb].to(self.device)  # [n_mb]
            w = weights[s : s + mb].to(self.device)  # [n_mb]
            loss = (w * F.binary_cross_entropy_with_logits(z, y, reduction="none")).sum()  # []
            if not torch.isfinite(loss):
                self.optimizer.zero_grad(set_to_none=True)
                raise NonFiniteError(f"judge loss is {loss.item()}; no judge update was made (lower the judge lr)")
            loss.backward()
            loss_value += float(loss.detach())
        max_norm = self.cfg.max_grad_norm or float("inf")
        grad_norm = float(torch.nn.utils.clip_grad_norm_(self.model.parameters(), max_norm))
        if not math.isfinite(grad_norm):
            self.optimizer.zero_grad(set_to_none=True)
            raise NonFiniteError("judge gradient is not finite; no judge update was made (lower the judge lr)")
        self.optimizer.step()
        return {"loss": loss_value, "grad_norm": grad_norm}

    def state_dict(self) -> dict:
        """Model weights and (when trainable) optimizer state (their shards when :meth:`distribute` d)."""
        return module_state(self.model, self.optimizer)

    def load_state_dict(self, state: dict) -> None:
        """Restore :meth:`state_dict` (a copy: the restored judge shares no tensor with ``state``)."""
        if load_module_state(self.model, self.optimizer, state):
            return
        self.model.load_state_dict(state["model"])
        if self.optimizer is not None:
            self.optimizer.load_state_dict(copy.deepcopy(state["optimizer"]))  # torch would alias same-device moments
