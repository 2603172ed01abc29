"""Programmatic writing criteria: checks of short texts against a prompt's constraints.

Each check maps ``(text, meta) → [0, 1]`` and never raises.  ``meta`` holds the prompt's
constraints: ``words`` (required words, in order), ``min_words`` and ``max_words`` (the length
window, in words).  The rubric-writing task's oracle is the mean of all thirteen (unbiased), and
the rule judge of :mod:`rewardzoo.judges.pairwise` applies the same checks to a *view* of the
text that hides what it is blind to (:func:`without_repeats`, :func:`without_non_english`).

A word token is a maximal run of characters that are neither whitespace nor ``.,!?;:``; tokens
are compared lowercased.  English = the small tagged :data:`LEXICON` of the toy task (nouns,
verbs, adjectives, articles, function words).

    required_words   share of the required words that occur
    length_window    1 inside [min_words, max_words]; −1/(width) per word outside, floored at 0
    no_repeats       share of tokens that do not repeat an earlier token
    english_words    share of tokens in the lexicon
    capital_start    the text starts with an upper-case letter
    period_end       the text ends with "."
    single_sentence  no ". ! ?" before the last character (and at least one token)
    required_order   every required word occurs, first occurrences in the prompt's order
    article_start    the first token is an article ("the", "a")
    has_verb         some token is a verb
    adjective_noun   some adjective is directly followed by a noun
    noun_end         the last token is a noun
    lowercase_rest   every token after the first is lower case (and there is a first)
"""

from __future__ import annotations

import re
from typing import Callable

_NOUNS = "cat dog sun moon bird fish tree star girl boy river stone rain wind house road song night"
_VERBS = "runs sings sleeps sees finds loves jumps swims flies waits"
_ADJECTIVES = "red blue old small big green cold warm soft dark happy quiet"
_ARTICLES = "the a"
_OTHER = "in on with by near"
LEXICON: dict[str, str] = {
    **{w: "noun" for w in _NOUNS.split()}, **{w: "verb" for w in _VERBS.split()},
    **{w: "adjective" for w in _ADJECTIVES.split()}, **{w: "article" for w in _ARTICLES.split()},
    **{w: "other" for w in _OTHER.split()},
}
ENGLISH = frozenset(LEXICON)
CONTENT_WORDS = tuple(w for w, pos in LEXICON.items() if pos in ("noun", "verb", "adjective"))
_TOKEN = re.compile(r"[^\s.,!?;:]+")
_TERMINATOR = re.compile(r"[.!?]")

Check = Callable[[str, dict], float]


def tokens(text: str) -> list[str]:
    """The word tokens of a text, as written (punctuation and whitespace removed).

    >>> tokens("The red cat, sat.")
    ['The', 'red', 'cat', 'sat']
    """
    return _TOKEN.findall(text)


def _lower(text: str) -> list[str]:
    return [t.lower() for t in tokens(text)]


def _drop_tokens(text: str, drop: Callable[[str, list[str]], bool]) -> str:
    """The text with every token for which ``drop(token_lowercased, earlier_tokens_lowercased)`` holds removed
    (runs of spaces left behind are collapsed)."""
    kept, seen, last = [], [], 0
    for m in _TOKEN.finditer(text):
        tok = m.group().lower()
        kept.append(text[last : m.start()])
        if not drop(tok, seen):
            kept.append(m.group())
        seen.append(tok)
        last = m.end()
    kept.append(text[last:])
    return re.sub(r" {2,}", " ", "".join(kept)).strip()


def without_repeats(text: str) -> str:
    """The text as a repetition-blind reader sees it: tokens that repeat an earlier one removed.

    >>> without_repeats("The cat cat sat on the cat.")
    'The cat sat on .'
    """
    return _drop_tokens(text, lambda tok, seen: tok in seen)


def without_non_english(text: str) -> str:
    """The text as a reader indifferent to non-English tokens sees it: tokens outside the lexicon removed.

    >>> without_non_english("The xqz cat sleeps.")
    'The cat sleeps.'
    """
    return _drop_tokens(text, lambda tok, seen: tok not in ENGLISH)


def required_words(text: str, meta: dict) -> float:
    """Share of the prompt's required words that occur in the text."""
    wanted = [w.lower() for w in meta.get("words", [])]
    have = set(_lower(text))
    return sum(w in have for w in wanted) / len(wanted) if wanted else 1.0


def length_window(text: str, meta: dict) -> float:
    """1 inside [min_words, max_words]; each word outside costs 1 / (window width), floored at 0."""
    n, lo, hi = len(tokens(text)), meta.get("min_words", 0), meta.get("max_words", 10**9)
    distance = max(lo - n, n - hi, 0)
    return max(0.0, 1.0 - distance / max(hi - lo + 1, 1))


def no_repeats(text: str, meta: dict) -> float:
    """Share of tokens that do not repeat an earlier token (0 for an empty text)."""
    toks = _lower(text)
    return len(set(toks)) / len(toks) if toks else 0.0


def english_words(text: str, meta: dict) -> float:
    """Share of tokens that are in the lexicon (0 for an empty text)."""
    toks = _lower(text)
    return sum(t in ENGLISH for t in toks) / len(toks) if toks else 0.0


def capital_start(text: str, meta: dict) -> float:
    """1 when the text starts with an upper-case letter."""
    return float(text.strip()[:1].isupper())


def period_end(text: str, meta: dict) -> float:
    """1 when the text ends with a full stop."""
    return float(text.rstrip().endswith("."))


def single_sentence(text: str, meta: dict) -> float:
    """1 when the text has a token and no sentence terminator before its last character."""
    body = text.strip()
    return float(bool(tokens(body)) and not _TERMINATOR.search(body[:-1]))


def required_order(text: str, meta: dict) -> float:
    """1 when every required word occurs and their first occurrences follow the prompt's order."""
    toks = _lower(text)
    wanted = [w.lower() for w in meta.get("words", [])]
    if not all(w in toks for w in wanted):
        return 0.0
    firsts = [toks.index(w) for w in wanted]
    return float(firsts == sorted(firsts))


def article_start(text: str, meta: dict) -> float:
    """1 when the first token is an article."""
    toks = _lower(text)
    return float(bool(toks) and LEXICON.get(toks[0]) == "article")


def has_verb(text: str, meta: dict) -> float:
    """1 when some token is a verb."""
    return float(any(LEXICON.get(t) == "verb" for t in _lower(text)))


def adjective_noun(text: str, meta: dict) -> float:
    """1 when some adjective is directly followed by a noun."""
    pos = [LEXICON.get(t) for t in _lower(text)]
    return float(any(a == "adjective" and b == "noun" for a, b in zip(pos, pos[1:])))


def noun_end(text: str, meta: dict) -> float:
    """1 when the last token is a noun."""
    toks = _lower(text)
    return float(bool(toks) and LEXICON.get(toks[-1]) == "noun")


def lowercase_rest(text: str, meta: dict) -> float:
    """1 when there is a token and every token after the first is lower case."""
    toks = tokens(text)
    return float(bool(toks) and all(t == t.lower() for t in toks[1:]))


CHECKS: dict[str, Check] = {
    "required_words": required_words,
    "length_window": length_window,
    "no_repeats": no_repeats,
    "english_words": english_words,
    "capital_start": capital_start,
    "period_end": period_end,
    "single_sentence": single_sentence,
    "required_order": required_order,
    "article_start": article_start,
    "has_verb": has_verb,
    "adjective_noun": adjective_noun,
    "noun_end": noun_end,
    "lowercase_rest": lowercase_rest,
}
