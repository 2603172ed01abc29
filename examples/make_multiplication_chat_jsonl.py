"""Write ``examples/multiplication_chat.jsonl``: every 2-digit × 1-digit product, asked as a chat question.

The example data of ``algorithms/ral_jsonl_smollm2.yaml`` and ``algorithms/rlvr_jsonl_smollm2.yaml`` (your own
JSONL on a real instruct model, docs/tasks.md).  One JSON object per line in the user task's default columns:
``prompt`` ("What is 47 * 6? Answer with the number only.") and ``reference`` (the product, as a string).  The
810 pairs (10–99 × 1–9) are the real-model board's testbed (benchmarks/results/real_model/README.md), where most
GRPO groups of SmolLM2-135M-Instruct have a reward spread at temperature 0.7.  Deterministic: run it again and
the file is byte-identical.

    python examples/make_multiplication_chat_jsonl.py
"""

import json
import random
from pathlib import Path


def rows(seed: int = 0) -> list[dict]:
    """Every pair ``a`` in 10–99, ``b`` in 1–9 as a question and its product, in a seeded random order."""
    pairs = [(a, b) for a in range(10, 100) for b in range(1, 10)]
    random.Random(seed).shuffle(pairs)
    return [{"prompt": f"What is {a} * {b}? Answer with the number only.", "reference": str(a * b)} for a, b in pairs]


if __name__ == "__main__":
    out = Path(__file__).with_name("multiplication_chat.jsonl")
    data = rows()
    out.write_text("".join(json.dumps(r) + "\n" for r in data))
    print(f"wrote {len(data)} rows to {out}")
