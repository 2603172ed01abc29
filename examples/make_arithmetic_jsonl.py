"""Write ``examples/arithmetic.jsonl``: 2,000 distinct two-digit additions and subtractions.

The example data of ``algorithms/rlvr_jsonl.yaml`` and of the JSONL format in ``docs/tasks.md``.
One JSON object per line with the columns ``prompt`` ("37+45="), ``answer`` (the exact result, as a
string) and ``op`` ("+" or "-"); subtractions never go below zero.  Deterministic: run it again and
the file is byte-identical.

    python examples/make_arithmetic_jsonl.py
"""

import json
import random
from pathlib import Path

N_ROWS = 2000


def rows(n: int, seed: int = 0) -> list[dict]:
    """``n`` distinct questions, half additions and half subtractions, in a seeded random order."""
    rng = random.Random(seed)
    seen: dict[str, dict] = {}
    while len(seen) < n:
        a, b = rng.randint(10, 99), rng.randint(10, 99)
        op = "+" if len(seen) % 2 == 0 else "-"
        a, b = (a, b) if op == "+" else (max(a, b), min(a, b))
        prompt = f"{a}{op}{b}="
        seen.setdefault(prompt, {"prompt": prompt, "answer": str(a + b if op == "+" else a - b), "op": op})
    return list(seen.values())


if __name__ == "__main__":
    out = Path(__file__).with_name("arithmetic.jsonl")
    out.write_text("".join(json.dumps(r) + "\n" for r in rows(N_ROWS)))
    print(f"wrote {N_ROWS} rows to {out}")
