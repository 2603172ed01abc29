"""Code rewards: the fraction of unit tests a candidate function passes, run in the sandbox.

Deviation from the RLVR lesson: its ``unit_test_reward`` ``exec``s the code in the trainer's own process
("only ever run this in a sandbox"); here it runs in :func:`~rewardzoo.tasks.checks.sandbox.run`,
and return values are compared in the caller — the sandbox reports each call's return value as
JSON, the expected values never enter it — so an object whose ``__eq__`` always says True cannot
pass a test.  The candidate and the test harness share one interpreter, so a candidate can still
special-case the test inputs (the hack the RLVR lesson warns about); it cannot forge a pass without producing
the expected value.
"""

from __future__ import annotations

import ast
import json
import secrets
from collections.abc import Sequence

from rewardzoo.tasks.checks.sandbox.caller import run


def unit_test_reward(
    code: str,
    tests: Sequence[tuple[tuple, object]],
    *,
    entry_point: str,
    timeout_s: float = 5.0,
    memory_mb: int = 512,
    isolation: str = "auto",
) -> float:
    """Fraction of ``tests`` that ``code``'s function ``entry_point`` passes, run in the sandbox.

    ``tests`` is a list of ``(args, expected)``: ``args`` a tuple of Python literals, ``expected``
    a JSON value (numbers, strings, booleans, None, lists/tuples, dicts with string keys).  A test
    passes when ``entry_point(*args)``, sent back as JSON, equals ``expected`` (tuples compare as
    lists, ``5 == 5.0`` as in Python).  Code that does not compile, lacks the entry point, or runs
    out of time scores the tests finished so far; the RLVR lesson's example gives 1.00 / 0.33 / 0.00.

    >>> unit_test_reward("def add(a, b):\\n    return a + b\\n", [((2, 3), 5), ((0, 0), 0)], entry_point="add")
    1.0
    """
    if not tests:
        raise ValueError("unit_test_reward needs at least one (args, expected) test")
    if not entry_point.isidentifier():
        raise ValueError(f"entry_point must be a Python identifier, got {entry_point!r}")
    wanted = []
    for i, test in enumerate(tests):
        if not (isinstance(test, (tuple, list)) and len(test) == 2 and isinstance(test[0], tuple)):
            raise ValueError(f"test {i} must be (args_tuple, expected), got {test!r}")
        try:
            if ast.literal_eval(repr(test[0])) != test[0]:
                raise ValueError
            wanted.append(json.loads(json.dumps(test[1], allow_nan=False)))
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            raise ValueError(
                f"test {i}: args must be Python literals and expected a JSON value, got {test!r}"
            ) from None
    marker = "@rewardzoo-result-" + secrets.token_hex(8) + " "
    harness = _HARNESS.format(marker=marker, entry=entry_point, cases=repr([t[0] for t in tests]))
    result = run(
        harness,
        files={"solution.py": code},
        timeout_s=timeout_s,
        memory_mb=memory_mb,
        max_output_bytes=1 << 20,
        isolation=isolation,
    )
    got = {}
    for line in result.stdout.splitlines():
        if line.startswith(marker):
            try:
                index, value = json.loads(line[len(marker) :])
                got[int(index)] = value
            except (ValueError, TypeError, RecursionError):
                continue
    passed = sum(1 for i, want in enumerate(wanted) if i in got and got[i] == want)
    return passed / len(wanted)


# The harness runs in the sandbox: it loads solution.py, calls the entry point on each test's
# arguments and writes "<marker>[index, value]" lines to a private copy of stdout (the candidate's
# own prints go to /dev/null, so they can neither fill the output cap nor mix with the results).
_HARNESS = """\
import ast, json, os
_out = os.fdopen(os.dup(1), "w", encoding="utf-8")
os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
_scope = {{"__name__": "__solution__"}}
try:
    with open("solution.py", encoding="utf-8", errors="replace") as _f:
        exec(compile(_f.read(), "solution.py", "exec"), _scope)
    _fn = _scope[{entry!r}]
except BaseException:
    raise SystemExit(1)
for _i, _args in enumerate(ast.literal_eval({cases!r})):
    try:
        _line = json.dumps([_i, _fn(*_args)])
    except BaseException:
        continue
    if len(_line) <= 100000:
        _out.write({marker!r} + _line + "\\n")
        _out.flush()
"""
