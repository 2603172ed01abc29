"""Rubric writing (a CPU toy for RcRL, after the RcRL paper): short open-ended sentences, a training
rubric of thirteen programmatic criteria, and a held-out oracle that is not that rubric.

A prompt names required words and a length window in words, e.g. ``cat red 4-7:``; a completion
is one short sentence, e.g. ``The red cat sleeps.``.  There is no single right answer.

- **Training rubric**: the thirteen checks of :data:`rewardzoo.tasks.checks.writing.CHECKS`, which
  RcRL's rule judge scores or compares through its blind view of the text (it overlooks a word
  repeated later and a made-up word that looks like a word) and with its biases — no reward here.
- **Oracle** (the stand-in for the RcRL paper's external judges, GPT-5.2 and others): a completion's held-out
  **quality** is the mean of the ten checks of :data:`~rewardzoo.tasks.checks.writing.ORACLE_CHECKS`
  on the text as written: six the rubric shares (required words, length window, capital start,
  period end, single sentence, has a verb) and four the training judge never sees — the sentence
  parses (``grammatical``) and the penalties for exactly the judge's blind spots (``no_repeated_words``,
  ``all_english``, ``concise``: no padding with prepositional phrases).  Seven rubric criteria
  (no repeats, English words, required order, article start, adjective–noun, noun end, lower-case
  rest) are not the oracle's at all, so over-optimising them buys nothing.  The oracle judge prefers the
  completion of higher quality (ties count half); no reward ever calls it, and evaluation compares
  a trained policy's greedy completions with the warm start's on the same held-out prompts with it
  (``benchmarks/rcrl.py``).

Demonstrations (for the SFT warm start, our own generator) are deliberately mediocre sentences of a
small grammar (noun phrase, usually a verb, prepositional phrases) of at least a length drawn from
one word below the window to one below its top; each required word is used with probability ¾ in a
slot of its part of speech, and capitals, endings, repeated words (next to the original or later)
and non-lexicon tokens (a consonant string or a made-up word with vowels) are random, so the base
model meets each criterion only part of the time and can stumble on the behaviours the blind judge
lets pass (the RcRL paper, App. A.4: repetition, non-English tokens, length).

Row metrics (``eval/<name>`` on the held-out split, ``train/<name>`` on training batches):
``correct`` (all ten oracle criteria met), ``quality``, ``oracle_<criterion>`` for each oracle
criterion, ``rubric`` (the mean of the thirteen rubric checks on the text as written: the training
objective as a calibrated judge that sees everything would score it), ``words``, ``over_length``
(more words than the window allows), ``repetition`` (share of words repeating an earlier one,
:func:`rewardzoo.eval.ngram_repetition` with n = 1 for these short texts), ``non_english_rate``
(share of tokens outside the lexicon) and ``overlooked`` (share of tokens the blind judge
overlooks: the blind-spot exploitation, :func:`~rewardzoo.tasks.checks.writing.overlooked_share`).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import ClassVar

from rewardzoo.core.config import check_section
from rewardzoo.core.types import Example
from rewardzoo.eval import ngram_repetition, non_english_rate
from rewardzoo.tasks.base import Task
from rewardzoo.tasks.checks.writing import (
    CHECKS,
    CONTENT_WORDS,
    ENGLISH,
    LEXICON,
    ORACLE_CHECKS,
    overlooked_share,
    tokens,
)

_POS = {pos: [w for w, p in LEXICON.items() if p == pos] for pos in ("noun", "verb", "adjective")}
_ARTICLES = [w for w, p in LEXICON.items() if p == "article"]
_PREPOSITIONS = ["in", "on", "with", "by", "near"]
_CONSONANTS = "bcdfghjklmnpqrstvwxz"


@dataclass
class RubricWritingConfig:
    """Settings of the rubric-writing task (all defaults are our own)."""

    RANGES: ClassVar[dict[str, str]] = {
        "n_train": "[1, inf)",
        "n_eval": "[1, inf)",
        "n_validation": "[0, inf)",
        "n_required": "[1, 4]",
        "min_words": "[1, inf)",
        "window": "[0, inf)",
        "data_seed": "[0, inf)",
    }

    n_train: int = 2000
    """Training prompts."""
    n_eval: int = 128
    """Held-out prompts (disjoint from the training prompts): the test split."""
    n_validation: int = 128
    """Validation prompts for tuning, generated after train and eval (disjoint from both; changes neither)."""
    n_required: int = 2
    """Required words per prompt (distinct content words of the lexicon)."""
    min_words: list[int] = field(default_factory=lambda: [3, 4, 5])
    """Lower bounds of the length window, one drawn per prompt."""
    window: int = 3
    """The window is [min_words, min_words + window] words."""
    data_seed: int = 0
    """Seed of the prompt and demonstration generator."""
    instruction: bool = False
    """Phrase each prompt as an instruction (``Write one sentence of 4 to 7 words that uses the words "cat" and
    "red".``) instead of the terse ``cat red 4-7:`` the character-level presets read: for an instruct model
    (``task.chat=true``)."""

    def validate(self) -> None:
        """Raise ValueError, saying what to change, on settings that cannot run (ranges: ``RANGES``)."""
        if not self.min_words:
            raise ValueError("min_words must list at least one lower end of the length window, e.g. [3, 4, 5]")


def mean_of(values: list[float]) -> float:
    """The mean of checks' values (summed in the checks' order, so every caller gets the same float)."""
    return sum(values) / len(values)


def quality(text: str, meta: dict) -> float:
    """The oracle's quality of a completion: the mean of the ten oracle checks on the text as written, in [0, 1]."""
    return mean_of([check(text, meta) for check in ORACLE_CHECKS.values()])


def rubric_score(text: str, meta: dict) -> float:
    """The training rubric's score as a calibrated judge that sees everything would give it: the mean of the
    thirteen rubric checks on the text as written, in [0, 1]."""
    return mean_of([check(text, meta) for check in CHECKS.values()])


def _noun_phrase(rng: random.Random) -> list[str]:
    """[article] [adjective] noun."""
    article = [rng.choice(_ARTICLES)] if rng.random() < 0.7 else []
    adjective = [rng.choice(_POS["adjective"])] if rng.random() < 0.5 else []
    return article + adjective + [rng.choice(_POS["noun"])]


def _demonstration(words: list[str], lo: int, hi: int, rng: random.Random) -> str:
    """A mediocre sentence for the prompt: a noun phrase, usually a verb, then prepositional phrases until it
    has at least a length drawn from [lo − 1, hi − 1] words; each required word (kept with probability ¾) takes
    a slot of its part of speech; then random repeats (next to the word or later), non-lexicon tokens (a
    consonant string or a made-up word with vowels), capitals and endings."""
    target = rng.randint(max(1, lo - 1), hi - 1)
    body = _noun_phrase(rng) + ([rng.choice(_POS["verb"])] if rng.random() < 0.8 else [])
    while len(body) < target:
        body += [rng.choice(_PREPOSITIONS)] + _noun_phrase(rng)
    for w in (w for w in words if rng.random() < 0.75):
        slots = [i for i, t in enumerate(body) if LEXICON.get(t) == LEXICON[w] and t not in words]
        if slots:
            body[rng.choice(slots)] = w
        else:
            nouns = [i for i, t in enumerate(body) if LEXICON.get(t) == "noun"]
            body.insert(rng.choice(nouns) if LEXICON[w] == "adjective" else len(body), w)
    if rng.random() < 0.15:
        i = rng.randrange(len(body))
        body.insert(i if rng.random() < 0.5 else rng.randint(i + 1, len(body)), body[i])  # next to it, or later
    if rng.random() < 0.1:
        if rng.random() < 0.5:
            gibberish = "".join(rng.choice(_CONSONANTS) for _ in range(rng.randint(3, 6)))
        else:
            gibberish = "".join(rng.choice(_CONSONANTS) + rng.choice("aeiou") for _ in range(rng.randint(1, 3)))
        body.insert(rng.randrange(len(body) + 1), gibberish)
    if rng.random() < 0.5:
        body[0] = body[0].capitalize()
    if len(body) > 1 and rng.random() < 0.1:
        i = rng.randrange(1, len(body))
        body[i] = body[i].capitalize()
    if len(body) > 2 and rng.random() < 0.1:
        i = rng.randrange(1, len(body) - 1)
        body[i] += "."
    return " ".join(body) + rng.choices([".", "", "!"], weights=[6, 3, 1])[0]


def instruction_prompt(words: list[str], lo: int, hi: int) -> str:
    """The prompt as an instruction for an instruct model (``RubricWritingConfig.instruction``)."""
    quoted = " and ".join(f'"{w}"' for w in words)
    return f"Write one sentence of {lo} to {hi} words that uses the words {quoted}. Reply with the sentence only."


class RubricWriting(Task):
    """``w1 w2 lo-hi:`` → one short sentence, scored by the oracle's quality (not the training rubric)."""

    name = "rubric_writing"
    demonstrations_verify = False  # mediocre on purpose: the SFT warm start stands in for a base model

    def __init__(self, cfg: RubricWritingConfig | None = None):
        self.cfg = cfg = cfg or RubricWritingConfig()
        check_section(cfg, "task.rubric_writing")
        rng = random.Random(cfg.data_seed)
        seen: set[tuple] = set()
        examples: list[Example] = []
        wanted = cfg.n_train + cfg.n_eval
        space = len(CONTENT_WORDS) ** cfg.n_required * len(cfg.min_words)
        if wanted + cfg.n_validation > space // 2:
            raise ValueError(
                f"rubric_writing has about {space} distinct prompts; ask for fewer than {space // 2} "
                f"(n_train + n_eval + n_validation = {wanted + cfg.n_validation})"
            )
        while len(examples) < wanted + cfg.n_validation:  # the validation prompts last: train and eval do not change
            words = rng.sample(CONTENT_WORDS, cfg.n_required)
            lo = rng.choice(cfg.min_words)
            key = (tuple(words), lo)
            if key in seen:
                continue
            seen.add(key)
            hi = lo + cfg.window
            meta = {"words": words, "min_words": lo, "max_words": hi}
            demo = _demonstration(words, lo, hi, rng)
            prompt = instruction_prompt(words, lo, hi) if cfg.instruction else f"{' '.join(words)} {lo}-{hi}:"
            examples.append(Example(prompt=prompt, reference=demo, demonstration=demo, meta=meta))
        super().__init__(train=examples[cfg.n_eval : wanted], eval=examples[: cfg.n_eval], validation=examples[wanted:])

    def parse(self, completion: str) -> str | None:
        """The completion itself, stripped; None when empty."""
        return completion.strip() or None

    def verify(self, answer: str | None, reference: str, meta: dict) -> float:
        """The oracle's quality of the completion (0 when empty)."""
        return 0.0 if answer is None else quality(answer, meta)

    def row_metrics(
        self, answers: list[str | None], references: list[str], metas: list[dict]
    ) -> dict[str, list[float]]:
        """``correct`` (all ten oracle criteria met), ``quality``, ``oracle_<criterion>``, ``rubric``, ``words``,
        ``over_length``, ``repetition``, ``non_english_rate`` and ``overlooked`` of every row (an empty completion
        scores 0 everywhere)."""
        texts = [a or "" for a in answers]
        oracle = {
            f"oracle_{name}": [check(t, m) for t, m in zip(texts, metas)] for name, check in ORACLE_CHECKS.items()
        }
        rows = {"quality": [mean_of(list(per_row)) for per_row in zip(*oracle.values())]}  # each check once per row
        rows["correct"] = [float(q >= 1.0) for q in rows["quality"]]
        rows.update(oracle)
        rows["rubric"] = [rubric_score(t, m) for t, m in zip(texts, metas)]
        toks = [[w.lower() for w in tokens(t)] for t in texts]
        rows["words"] = [float(len(t)) for t in toks]
        rows["over_length"] = [float(len(t) > m["max_words"]) for t, m in zip(toks, metas)]
        rows["repetition"] = [ngram_repetition(t, n=1) for t in toks]
        rows["non_english_rate"] = [non_english_rate(t, ENGLISH) for t in toks]
        rows["overlooked"] = [overlooked_share(t) for t in texts]
        return rows
