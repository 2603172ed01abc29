"""Verifiers: small programs that score a predicted answer against the gold one (the RLVR lesson).

Every verifier is ``(pred: str, gold: str) -> float``, returns 1.0 or 0.0, and never raises on any
text (property-tested with Hypothesis, including "1/0", 5,000-digit numbers, "1e999999", NUL bytes).
On the RLVR lesson's eight candidates (gold "1/2") the first four reproduce the RLVR lesson's printed table exactly
(``scripts/verifier_table.py``, ``tests/tasks/checks/test_verifiers.py``):

    exact        pred.strip() == gold                                rewards a formatting convention
    last_number  Fraction(last number-looking token) == Fraction(gold)   value-level: "0.5", "2/4" pass
    tagged       Fraction(text in <answer>…</answer>) == Fraction(gold)  a format check and a value check
    contains     gold is a substring of pred                         HACKABLE ON PURPOSE: listing every
                                                                     plausible answer passes (the RLVR lesson)
    every_number every number-looking token has gold's value         the RLVR lesson's "try it yourself": catches a
                                                                     list of distinct candidates
    math_verify  the math-verify package: LaTeX, \\boxed{}, symbolic and numeric equality

Departures from the RLVR lesson:
  1. ``tagged`` reads the *last* ``<answer>…</answer>`` pair (:func:`rewardzoo.tasks.checks.formats.extract_answer`,
     the format every task parses) where the RLVR lesson reads the first; identical on the RLVR lesson's rows.
  2. Values are parsed by :func:`fractions.Fraction` as in the RLVR lesson, except that a number with an
     exponent beyond ±1000 (e.g. "1e999999999") counts as no number: Fraction would build
     10**999999999 exactly and never return.  Numbers longer than Python's 4,300-digit int limit
     score 0 (Fraction refuses them).
  3. ``contains`` is the RLVR lesson's ``contains_gold`` under a shorter name.
  4. A digit is the ASCII ``0``–``9`` only (our choice, the same in every rewardzoo parser): Python's
     ``\\d`` and ``Fraction`` also read ``٤٢`` and ``４２`` as 42, but a verifier of model output should
     not reward digits of a script the task never asked for.  ``last_number`` finds only ASCII
     number tokens and ``tagged`` scores 0 on a tag holding any non-ASCII character.  ``math_verify``
     follows math-verify's own parser (which reads only ASCII digits as numbers; tested).
  5. Work is bounded on hostile lengths: ``last_number`` and ``tagged`` compare values only for
     texts of at most :data:`MAX_NUMBER_CHARS` characters, and ``every_number`` scores 0 on a
     ``pred`` longer than that.
  6. ``every_number`` is ours: the RLVR lesson asks the reader to write the verifier that catches "The options
     are 1/2, 1/3 and 1/4." without breaking the ``<answer>`` row; this is our answer to it.

``math_verify`` uses math-verify's own time limits, which are SIGALRM-based and only work in the
main thread; called from any other thread it runs in a helper process (started on first use, whose
main thread runs math-verify, and which is killed and restarted if it ever overruns a hard deadline),
so it works — and never hangs — anywhere.  In the main thread it sets and clears SIGALRM itself:
do not call it while your own code relies on a pending ``signal.alarm``.
Untested: the helper process across ``fork`` (a forked child starts its own on first use).
"""

from __future__ import annotations

import functools
import json
import re
import select
import subprocess
import sys
import threading
from fractions import Fraction
from pathlib import Path

from math_verify import parse as _mv_parse
from math_verify import verify as _mv_verify
from math_verify.errors import TimeoutException

from rewardzoo.tasks.checks.formats import extract_answer

_NUMBER = re.compile(r"-?[0-9]+(?:\.[0-9]+)?(?:/[0-9]+)?")  # the RLVR lesson's number-looking token, ASCII digits
_EXPONENT = re.compile(r"[eE]\s*([-+]?[0-9_]+)\s*$")
MAX_NUMBER_CHARS = 10_000
"""Longest number text whose value is computed (longer ones are no number: bounded work)."""
MATH_VERIFY_TIMEOUT_S = 2
"""math-verify's limit per parse and per comparison, in whole seconds (SIGALRM's resolution)."""


def _value(text: str) -> Fraction | None:
    """The exact rational value ``text`` spells (Fraction syntax, ASCII only), or None.  Never raises."""
    if len(text) > MAX_NUMBER_CHARS or not text.isascii():
        return None
    exponent = _EXPONENT.search(text)
    try:
        if exponent and abs(int(exponent.group(1).replace("_", ""))) > 1000:
            return None
        return Fraction(text.strip())
    except (ValueError, ZeroDivisionError, OverflowError):
        return None


def exact(pred: str, gold: str) -> float:
    """1.0 when the prediction, stripped, is exactly the gold string."""
    return float(pred.strip() == gold)


def last_number(pred: str, gold: str) -> float:
    """1.0 when the last number-looking token of ``pred`` has the value of ``gold``.

    >>> last_number("so the answer is 2/4", "1/2"), last_number("one half", "1/2")
    (1.0, 0.0)
    """
    hits = _NUMBER.findall(pred)
    if not hits:
        return 0.0
    value, target = _value(hits[-1]), _value(gold)
    return float(value is not None and value == target)


def tagged(pred: str, gold: str) -> float:
    """1.0 when the last ``<answer>…</answer>`` of ``pred`` holds the value of ``gold``.

    >>> tagged("<answer>0.5</answer>", "1/2"), tagged("1/2", "1/2")
    (1.0, 0.0)
    """
    answer = extract_answer(pred, "tags")
    if answer is None:
        return 0.0
    value, target = _value(answer), _value(gold)
    return float(value is not None and value == target)


def contains(pred: str, gold: str) -> float:
    """1.0 when ``gold`` appears anywhere in ``pred`` — the lazy verifier the RLVR lesson warns about, kept for
    reward-hacking studies: "1/2 1/3 1/4" passes for gold "1/2"."""
    return float(gold in pred)


def every_number(pred: str, gold: str) -> float:
    """1.0 when ``pred`` holds at least one number-looking token and *every* one has the value of ``gold``.

    A list of distinct candidates fails wherever the gold sits in it — the hack that ``contains``
    rewards — while a lone answer in any spelling, tags or prose around it passes.  The price of
    that strictness: any other number in the text (a worked step, a unit count) fails it too, so
    apply it to the parsed final answer, not to a reasoning trace.

    >>> every_number("The options are 1/2, 1/3 and 1/4.", "1/2"), every_number("<answer>2/4</answer>", "1/2")
    (0.0, 1.0)
    """
    target = _value(gold)
    if target is None or len(pred) > MAX_NUMBER_CHARS:
        return 0.0
    hits = _NUMBER.findall(pred)
    return float(bool(hits) and all(_value(hit) == target for hit in hits))


def math_verify(pred: str, gold: str) -> float:
    """1.0 when math-verify finds ``pred``'s answer equal to ``gold`` (LaTeX, boxed, symbolic,
    numeric).  ``gold`` is parsed as it is, then as ``$gold$``; a gold it cannot parse scores 0.

    >>> math_verify("The answer is $\\\\frac{2}{4}$", "0.5")
    1.0
    """
    if threading.current_thread() is threading.main_thread():
        return _math_verify_here(pred, gold)
    return _WORKER.score(pred, gold)


@functools.lru_cache(maxsize=4096)
def _parsed_gold(gold: str) -> tuple:
    return tuple(
        _mv_parse(gold, parsing_timeout=MATH_VERIFY_TIMEOUT_S)
        or _mv_parse(f"${gold}$", parsing_timeout=MATH_VERIFY_TIMEOUT_S)
    )


def _math_verify_here(pred: str, gold: str) -> float:
    """math-verify in this (main) thread, with its SIGALRM time limits."""
    try:
        target = _parsed_gold(gold)
        if not target:
            return 0.0
        found = _mv_parse(pred, parsing_timeout=MATH_VERIFY_TIMEOUT_S)
        return float(bool(_mv_verify(list(target), found, timeout_seconds=MATH_VERIFY_TIMEOUT_S)))
    except (Exception, TimeoutException):  # math-verify swallows most errors itself; never let one out
        return 0.0


class _MathVerifyWorker:
    """A child process whose main thread runs :func:`_math_verify_here` for callers in other threads.

    One request at a time (a lock); a request that gets no answer within a hard deadline (every
    parse and comparison hitting its limit, plus slack) kills the child, scores 0, and the next
    request starts a new one.
    """

    _DEADLINE_S = 8 * MATH_VERIFY_TIMEOUT_S + 2
    _START_S = 60  # importing math-verify (sympy) on a busy machine

    def __init__(self):
        self._lock = threading.Lock()
        self._proc: subprocess.Popen | None = None

    def score(self, pred: str, gold: str) -> float:
        """math_verify(pred, gold) computed in the child; 0.0 if it fails or overruns."""
        with self._lock:
            try:
                if self._proc is None:
                    self._proc = self._start()
                self._proc.stdin.write(json.dumps([pred, gold]) + "\n")
                self._proc.stdin.flush()
                if select.select([self._proc.stdout], [], [], self._DEADLINE_S)[0]:
                    return float(self._proc.stdout.readline())
            except (OSError, ValueError):
                pass
            self._stop()
            return 0.0

    # The helper imports this module with a bare ``rewardzoo`` package object in place of the real
    # one, so that the library's __init__ (torch, transformers, ...) is not loaded: ~1 s, not ~5 s.
    _MAIN = (
        "import sys, types\n"
        "package = types.ModuleType('rewardzoo')\n"
        "package.__path__ = [sys.argv[1]]\n"
        "sys.modules['rewardzoo'] = package\n"
        "from rewardzoo.tasks.checks.verifiers import _serve_math_verify\n"
        "_serve_math_verify()\n"
    )

    def _start(self) -> subprocess.Popen:
        package_dir = str(Path(__file__).resolve().parents[2])
        proc = subprocess.Popen(
            [sys.executable, "-c", self._MAIN, package_dir],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            encoding="utf-8",
        )
        self._proc = proc
        if not select.select([proc.stdout], [], [], self._START_S)[0] or proc.stdout.readline() != "ready\n":
            raise OSError("math_verify helper process did not start")
        return proc

    def _stop(self) -> None:
        if self._proc is not None:
            self._proc.kill()
            self._proc.wait()
            self._proc = None


def _serve_math_verify() -> None:
    """The helper process's loop: one JSON ``[pred, gold]`` per line in, one score per line out."""
    print("ready", flush=True)
    for line in sys.stdin:
        pred, gold = json.loads(line)
        print(_math_verify_here(pred, gold), flush=True)


_WORKER = _MathVerifyWorker()

SEED_003_GOLD = "1/2"
"""The gold answer of the RLVR lesson's worked example."""
SEED_003_CANDIDATES = (
    "1/2",
    "The answer is 1/2.",
    "0.5",
    "<answer>1/2</answer>",
    "2/4",
    "1/2 (but I am not sure)",
    "one half",
    "1/2 1/2 1/2 1/2 1/2 1/2 1/2 1/2",
)
"""The RLVR lesson's eight model outputs, in its order (``scripts/verifier_table.py`` and notebook 01 score them)."""

VERIFIERS = {
    "exact": exact,
    "last_number": last_number,
    "tagged": tagged,
    "contains": contains,
    "every_number": every_number,
    "math_verify": math_verify,
}
"""Verifier names a config may use (``reward.rlvr.verifier``) → function."""
