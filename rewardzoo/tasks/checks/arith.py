"""A safe evaluator for the arithmetic expressions of Countdown: integers, ``+ - * /`` and parentheses.

No ``eval``, no ``exec``, no ``ast``: a tokenizer and a recursive-descent parser over the grammar

    expr   := term   (('+' | '-') term)*
    term   := factor (('*' | '/') factor)*
    factor := INTEGER | '(' expr ')'

evaluated with exact :class:`~fractions.Fraction` arithmetic as it is parsed.  Everything else is
rejected with :class:`ExpressionError`: names, calls, attributes, decimals, unary signs, ``**`` and
``//`` (a ``*`` or ``/`` followed by another operator is a syntax error).  Hostile input cannot hang
or exhaust memory, because work is bounded before it starts:

- at most :data:`MAX_CHARS` characters (checked before anything is scanned),
- integer literals of at most :data:`MAX_DIGITS` digits,
- at most :data:`MAX_DEPTH` nested parentheses (so recursion stays shallow).

With only ``+ - * /`` on at most MAX_CHARS/2 literals of MAX_DIGITS digits, every intermediate
numerator and denominator has a few thousand digits at worst, which Fraction handles in
microseconds.  Division by zero is not a syntax error: the expression parses and its ``value`` is
None, so a caller can tell "not an expression" from "an expression without a value".

Our own choices (Countdown, the RAL paper, §B.2, names no grammar): unary minus is not allowed (Countdown
combines the given numbers with binary operations), and literals may have leading zeros ("07" = 7).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction

MAX_CHARS = 512
"""Longest expression accepted, in characters (whitespace included)."""
MAX_DIGITS = 9
"""Longest integer literal accepted, in digits."""
MAX_DEPTH = 64
"""Deepest nesting of parentheses accepted."""

ATOM, PRODUCT, SUM = 3, 2, 1
"""Precedence classes of an expression's top-level form: a literal or parenthesised group, a
product/quotient, a sum/difference.  :func:`join` uses them to write minimal parentheses."""

_TOKEN = re.compile(r"\s*(?:([0-9]+)|([-+*/()]))")


class ExpressionError(ValueError):
    """The text is not an arithmetic expression of the Countdown grammar (or exceeds its limits)."""


@dataclass(frozen=True)
class Expression:
    """A parsed expression."""

    text: str
    """The expression with all whitespace removed."""
    numbers: tuple[int, ...]
    """The integer literals, in the order they appear."""
    value: Fraction | None
    """The exact value; None when the expression divides by zero."""


def _tokenize(text: str) -> list[str]:
    """Integer literals and operator/parenthesis characters; raises on anything else."""
    tokens, pos, end = [], 0, len(text.rstrip())
    while pos < end:
        m = _TOKEN.match(text, pos)
        if m is None:
            raise ExpressionError(f"unexpected character {text[pos:].lstrip()[:1]!r} at position {pos}")
        number, symbol = m.groups()
        if number is not None and len(number) > MAX_DIGITS:
            raise ExpressionError(f"integer literal longer than {MAX_DIGITS} digits")
        tokens.append(number if number is not None else symbol)
        pos = m.end()
    return tokens


class _Parser:
    """Recursive descent over the token list; evaluates while parsing."""

    def __init__(self, tokens: list[str]):
        self.tokens = tokens
        self.pos = 0
        self.numbers: list[int] = []

    def peek(self) -> str | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self) -> str:
        token = self.peek()
        if token is None:
            raise ExpressionError("expression ends too early")
        self.pos += 1
        return token

    def expr(self, depth: int) -> Fraction | None:
        value = self.term(depth)
        while self.peek() in ("+", "-"):
            op, right = self.take(), self.term(depth)
            value = None if value is None or right is None else (value + right if op == "+" else value - right)
        return value

    def term(self, depth: int) -> Fraction | None:
        value = self.factor(depth)
        while self.peek() in ("*", "/"):
            op, right = self.take(), self.factor(depth)
            if value is None or right is None or (op == "/" and right == 0):
                value = None
            else:
                value = value * right if op == "*" else value / right
        return value

    def factor(self, depth: int) -> Fraction | None:
        token = self.take()
        if token == "(":
            if depth >= MAX_DEPTH:
                raise ExpressionError(f"parentheses nested deeper than {MAX_DEPTH}")
            value = self.expr(depth + 1)
            if self.take() != ")":
                raise ExpressionError("missing ')'")
            return value
        if token.isdigit():
            self.numbers.append(int(token))
            return Fraction(int(token))
        raise ExpressionError(f"expected a number or '(' but found {token!r}")


def parse_expression(text: str) -> Expression:
    """Parse and exactly evaluate ``text``; raises :class:`ExpressionError` when it is not a
    Countdown expression within the limits.  Never evaluates anything but ``+ - * /``.

    >>> parse_expression("3 * 5 + 7").value
    Fraction(22, 1)
    >>> parse_expression("(8-8)").value is None, parse_expression("1/(8-8)").value is None
    (False, True)
    """
    if not isinstance(text, str):
        raise ExpressionError(f"expected a string, got {type(text).__name__}")
    if len(text) > MAX_CHARS:
        raise ExpressionError(f"expression longer than {MAX_CHARS} characters")
    tokens = _tokenize(text)
    if not tokens:
        raise ExpressionError("empty expression")
    parser = _Parser(tokens)
    value = parser.expr(depth=0)
    if parser.peek() is not None:
        raise ExpressionError(f"unexpected {parser.peek()!r} after a complete expression")
    return Expression(text="".join(tokens), numbers=tuple(parser.numbers), value=value)


def try_parse_expression(text: str) -> Expression | None:
    """:func:`parse_expression`, or None when ``text`` is not an expression.  Never raises."""
    try:
        return parse_expression(text)
    except ExpressionError:
        return None


def join(op: str, left: tuple[str, int], right: tuple[str, int]) -> tuple[str, int]:
    """Write ``left op right`` with the fewest parentheses that keep its value, given each side's
    (text, precedence class); returns the result's (text, precedence class).

    Parentheses are dropped wherever re-association keeps the exact value: ``a+(b-c)`` is written
    ``a+b-c`` and ``a*(b/c)`` is written ``a*b/c``.

    >>> join("-", ("7", ATOM), ("2+1", SUM))
    ('7-(2+1)', 1)
    """
    (lt, lp), (rt, rp) = left, right
    if op in "+-":
        wrap_left, wrap_right, prec = False, op == "-" and rp == SUM, SUM
    else:
        wrap_left, wrap_right, prec = lp == SUM, rp == SUM or (op == "/" and rp == PRODUCT), PRODUCT
    lt = f"({lt})" if wrap_left else lt
    rt = f"({rt})" if wrap_right else rt
    return f"{lt}{op}{rt}", prec
