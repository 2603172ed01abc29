"""Abstracts / free writing (RAL paper, §B.4–B.5; RcRL paper): open-ended writing from your corpus,
for real models on a GPU (RcRL with an LM judge, RAL with a classifier judge).

Your corpus is a JSONL file (or anything :func:`rewardzoo.tasks.user.load_rows` reads), one object
per line::

    {"title": "Rubric Curriculum RL", "abstract": "Post-training language models with ..."}
    {"title": "A story about a lighthouse keeper", "abstract": ""}

``prompt_column`` (default ``title``) fills ``prompt_template`` (default ``"Title: {prompt}\\nAbstract:"``;
for story prompts use e.g. ``"{prompt}\\n"``); ``reference_column`` (default ``abstract``; empty
values or ``""`` for the column = free writing without references) is the reference text and the
SFT demonstration.  Held-out rows: ``eval_path``, else a shuffled ``eval_fraction``.

There is no verifier of writing quality: held-out quality is judged pairwise (an LM judge against
the base model, :mod:`rewardzoo.eval` win rate and Elo).  The task's own metrics are diagnostics:
``unigram_f1`` with the reference (a weak lexical overlap; ``correct`` = F1 ≥ ``f1_threshold``,
0 without a reference), ``words``, ``repetition`` (word-bigram repetition,
:func:`rewardzoo.eval.ngram_repetition`), ``non_english_rate`` (tokens with non-ASCII letters,
The RcRL paper, App. A.4) and, when ``min_words``/``max_words`` are set, ``in_window``.  Every default is ours.

Untested here: training on a real corpus (the tests use a small synthetic one).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import ClassVar

from rewardzoo.core.config import check_section
from rewardzoo.core.types import Example
from rewardzoo.eval import ngram_repetition, non_english_rate
from rewardzoo.tasks.base import Task
from rewardzoo.tasks.checks.writing import tokens
from rewardzoo.tasks.user import holdout_split, load_rows


@dataclass
class AbstractsConfig:
    """Settings of the abstracts / free-writing task."""

    RANGES: ClassVar[dict[str, str]] = {
        "eval_fraction": "(0, 1)",
        "min_words": "[0, inf)",
        "max_words": "[0, inf)",
        "f1_threshold": "[0, 1]",
        "n_train": "[0, inf)",
        "n_eval": "[0, inf)",
        "data_seed": "[0, inf)",
    }

    path: str = ""
    """JSONL file (or .json/.csv/.parquet, a save_to_disk directory) of your corpus."""
    eval_path: str = ""
    """Held-out rows from this file instead of a split of ``path``."""
    eval_fraction: float = 0.1
    """Share of the rows held out when eval_path is empty."""
    prompt_column: str = "title"
    """Column whose text fills the prompt template."""
    reference_column: str = "abstract"
    """Column of the reference text (also the SFT demonstration); '' = free writing, no references."""
    prompt_template: str = "Title: {prompt}\nAbstract:"
    """The prompt, with {prompt} replaced by the prompt column's text."""
    min_words: int = 0
    """Lower end of a length window for the in_window metric (0 = no window)."""
    max_words: int = 0
    """Upper end of the length window (0 = no window)."""
    f1_threshold: float = 0.5
    """``correct`` = unigram F1 with the reference at least this."""
    n_train: int = 0
    """Keep at most this many training rows (0 = all)."""
    n_eval: int = 0
    """Keep at most this many held-out rows (0 = all)."""
    data_seed: int = 0
    """Seed of the shuffle before the eval_fraction split."""

    def validate(self) -> None:
        """Raise ValueError, saying what to change, on settings that cannot run (ranges: ``RANGES``)."""
        if "{prompt}" not in self.prompt_template:
            raise ValueError(f"prompt_template must contain {{prompt}}; got {self.prompt_template!r}")
        if self.max_words and self.max_words < self.min_words:
            raise ValueError(f"max_words ({self.max_words}) must be 0 (no window) or >= min_words ({self.min_words})")


def unigram_f1(text: str, reference: str) -> float:
    """F1 of the lowercased word multisets of a text and its reference (0 when either is empty).

    >>> round(unigram_f1("the cat sat", "the cat ran away"), 3)
    0.571
    """
    a, b = Counter(t.lower() for t in tokens(text)), Counter(t.lower() for t in tokens(reference))
    overlap = sum((a & b).values())
    if not overlap:
        return 0.0
    precision, recall = overlap / sum(a.values()), overlap / sum(b.values())
    return 2 * precision * recall / (precision + recall)


class Abstracts(Task):
    """Title (or any prompt) → free text, from your JSONL corpus."""

    name = "abstracts"

    def __init__(
        self, cfg: AbstractsConfig | None = None, rows: list[dict] | None = None, eval_rows: list[dict] | None = None
    ):
        """Build from ``cfg.path`` or, when given, from in-memory ``rows`` (and optional held-out ``eval_rows``)."""
        self.cfg = cfg = cfg or AbstractsConfig()
        check_section(cfg, "task.abstracts")
        if rows is None:
            if not cfg.path:
                raise ValueError(
                    'task.abstracts.path is empty; set it to a JSONL file of {"title": …, "abstract": …} rows'
                )
            rows = load_rows(cfg.path)
            eval_rows = load_rows(cfg.eval_path) if cfg.eval_path and eval_rows is None else eval_rows
        source = cfg.path or "the given rows"
        train = self._examples(list(rows), source)
        if eval_rows is not None:
            eval = self._examples(list(eval_rows), cfg.eval_path or "the given held-out rows")
        else:
            train, eval = holdout_split(train, cfg.eval_fraction, cfg.data_seed, source, "task.abstracts")
        super().__init__(train=train[: cfg.n_train or None], eval=eval[: cfg.n_eval or None])

    def _examples(self, rows: list[dict], source: str) -> list[Example]:
        cfg = self.cfg
        if not rows:
            raise ValueError(f"{source} has no rows; give a corpus with at least one example")
        for key in ("prompt_column", "reference_column"):
            column = getattr(cfg, key)
            if column and column not in rows[0]:
                raise ValueError(
                    f"{source} has no column {column!r} (task.abstracts.{key}); its columns are {list(rows[0])}"
                )
        out = []
        for i, row in enumerate(rows):
            if not str(row.get(cfg.prompt_column) or "").strip():
                raise ValueError(f"row {i} of {source} has an empty {cfg.prompt_column!r}")
            reference = str(row.get(cfg.reference_column) or "") if cfg.reference_column else ""
            prompt = cfg.prompt_template.format(prompt=row[cfg.prompt_column])
            space = "" if not reference or prompt.endswith((" ", "\n")) else " "  # "Abstract:" + " " + the text
            out.append(
                Example(
                    prompt=prompt,
                    reference=reference,
                    demonstration=space + reference,
                    meta={"min_words": cfg.min_words, "max_words": cfg.max_words},
                )
            )
        return out

    def parse(self, completion: str) -> str | None:
        """The completion itself, stripped; None when empty."""
        return completion.strip() or None

    def verify(self, answer: str | None, reference: str, meta: dict) -> float:
        """Unigram F1 with the reference (0 without an answer or a reference)."""
        return 0.0 if answer is None or not reference else unigram_f1(answer, reference)

    def row_metrics(
        self, answers: list[str | None], references: list[str], metas: list[dict]
    ) -> dict[str, list[float]]:
        """``correct``, ``unigram_f1``, ``words``, ``repetition``, ``non_english_rate`` (and ``in_window``)."""
        texts = [a or "" for a in answers]
        f1 = [self.verify(a, r, m) for a, r, m in zip(answers, references, metas)]
        toks = [[t.lower() for t in tokens(t)] for t in texts]
        rows = {
            "correct": [float(bool(r) and f >= self.cfg.f1_threshold) for f, r in zip(f1, references)],
            "unigram_f1": f1,
            "words": [float(len(t)) for t in toks],
            "repetition": [ngram_repetition(t, n=2) for t in toks],
            "non_english_rate": [non_english_rate(t) for t in toks],
        }
        if self.cfg.max_words:
            rows["in_window"] = [float(self.cfg.min_words <= len(t) <= self.cfg.max_words) for t in toks]
        return rows
