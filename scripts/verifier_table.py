"""The RLVR lesson's verifier table and code-reward example, computed by rewardzoo's own verifiers and sandbox.

    python scripts/verifier_table.py              # the RLVR lesson's table as it prints it, plus a math-verify column
    python scripts/verifier_table.py --markdown   # the same as Markdown (pasted into docs/rewards/rlvr.md)

The first four columns must equal the RLVR lesson's printed output character for character (tested in
tests/rewards/test_verifiers.py); the math-verify column and the code rewards are computed here,
the code rewards in the sandbox (rewardzoo.tasks.checks.sandbox.unit_test_reward).
"""

from __future__ import annotations

import argparse

from rewardzoo.tasks.checks.sandbox import unit_test_reward
from rewardzoo.tasks.checks.verifiers import SEED_003_CANDIDATES as CANDIDATES
from rewardzoo.tasks.checks.verifiers import SEED_003_GOLD as GOLD
from rewardzoo.tasks.checks.verifiers import contains, exact, last_number, math_verify, tagged

COLUMNS = [
    ("exact", exact),
    ("last-number", last_number),
    ("tagged", tagged),
    ("contains", contains),
    ("math-verify", math_verify),
]
ADD_TESTS = [((2, 3), 5), ((0, 0), 0), ((-1, 1), 0)]
CODE = [  # the RLVR lesson's code question: add(a, b), three submissions
    ("correct", "def add(a, b):\n    return a + b\n"),
    ("off by a sign", "def add(a, b):\n    return a - b\n"),
    ("syntax error", "def add(a, b)\n  return a+b"),
]


def scores() -> list[list[float]]:
    """One row per candidate: each column's verifier on it against GOLD."""
    return [[fn(candidate, GOLD) for _, fn in COLUMNS] for candidate in CANDIDATES]


def code_rewards() -> list[float]:
    """unit_test_reward of each of the RLVR lesson's three submissions."""
    return [unit_test_reward(code, ADD_TESTS, entry_point="add") for _, code in CODE]


def text_lines() -> list[str]:
    """The table and code rewards in the RLVR lesson's own print layout."""
    lines = [f"gold answer: {GOLD!r}", "", f"{'model output':<34} " + " ".join(f"{name:>12}" for name, _ in COLUMNS)]
    lines += [f"{c:<34} " + " ".join(f"{s:>12.0f}" for s in row) for c, row in zip(CANDIDATES, scores())]
    lines += ["", "what a code question looks like instead"]
    lines += [f"  {name:<15} reward {r:.2f}" for (name, _), r in zip(CODE, code_rewards())]
    return lines


def markdown_lines() -> list[str]:
    """The same results as two Markdown tables."""
    lines = [
        f"Gold answer: `{GOLD}`",
        "",
        "| model output | " + " | ".join(name for name, _ in COLUMNS) + " |",
        "| --- |" + " ---: |" * len(COLUMNS),
    ]
    lines += [f"| `{c}` | " + " | ".join(f"{s:.0f}" for s in row) + " |" for c, row in zip(CANDIDATES, scores())]
    lines += ["", "| code submission for `add(a, b)` | unit-test reward |", "| --- | ---: |"]
    lines += [f"| {name} | {r:.2f} |" for (name, _), r in zip(CODE, code_rewards())]
    return lines


def main(argv: list[str] | None = None) -> None:
    """Print the table (``--markdown``: as Markdown)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--markdown", action="store_true", help="print Markdown tables instead of the lesson's layout")
    args = parser.parse_args(argv)
    print("\n".join(markdown_lines() if args.markdown else text_lines()))


if __name__ == "__main__":
    main()
