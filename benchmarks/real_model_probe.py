"""Which chat-multiplication size and temperature give GRPO a signal at step 0 on SmolLM2-135M-Instruct.

    python benchmarks/real_model_probe.py 2,3 0.7,1.0 > benchmarks/results/real_model/probe.md

For each operand size ``digits_a`` (× 1 digit) and sampling temperature: 16 training prompts of the chat task
(never the test split), 8 samples each (48 new tokens, ending at ``<|im_end|>``), read by the task's own instruct
parser and exact verifier.  Printed: sampled accuracy, the share of replies with a parseable answer, and the share
of groups whose 8 rewards are not all equal — GRPO's group-normalised advantage is 0 on the others, so that share
is the fraction of prompts that move the policy at all.  The ``real`` board (:data:`rewardzoo.board.rows.
REAL_SETTINGS`) takes the size and temperature with the largest share.  Needs the model fetched
(``rewardzoo models fetch smollm2-135m-instruct``).
"""

from __future__ import annotations

import sys
import time

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from rewardzoo.core.model_store import resolve_model
from rewardzoo.zoo import as_chat_task, build_task, load_config

PROMPTS, GROUP, NEW_TOKENS = 16, 8, 48


def probe(model, tokenizer, digits_a: int, temperature: float) -> str:
    """One line: sampled accuracy, format rate and the share of groups with a reward spread."""
    cfg = load_config("rlvr_multiplication_smollm2", [f"task.multiplication.digits_a={digits_a}"])
    task = as_chat_task(cfg, build_task(cfg.task))
    examples = task.train[:PROMPTS]
    start = time.time()
    enc = tokenizer([e.prompt for e in examples], return_tensors="pt", padding=True, add_special_tokens=False)
    end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    with torch.no_grad():
        out = model.generate(
            **enc,
            do_sample=True,
            temperature=temperature,
            top_p=1.0,
            top_k=0,
            max_new_tokens=NEW_TOKENS,
            num_return_sequences=GROUP,
            eos_token_id=end,
            pad_token_id=tokenizer.pad_token_id or end,
        )
    texts = tokenizer.batch_decode(out[:, enc.input_ids.shape[1] :], skip_special_tokens=True)
    answers = [task.parse(t) for t in texts]
    scores = [
        task.verify(a, examples[i // GROUP].reference, examples[i // GROUP].meta) if a is not None else 0.0
        for i, a in enumerate(answers)
    ]
    groups = [scores[i * GROUP : (i + 1) * GROUP] for i in range(PROMPTS)]
    spread = sum(len(set(g)) > 1 for g in groups) / PROMPTS
    return (
        f"digits_a={digits_a} T={temperature}: acc {sum(scores) / len(scores):.3f} "
        f"format {sum(a is not None for a in answers) / len(answers):.3f} "
        f"groups with variance {spread:.2f} ({time.time() - start:.0f}s)"
    )


def main() -> None:
    """Print the probe's table for the sizes and temperatures given as comma lists (argv 1 and 2)."""
    sizes = [int(x) for x in sys.argv[1].split(",")]
    temperatures = [float(x) for x in sys.argv[2].split(",")]
    torch.manual_seed(0)
    path = resolve_model("smollm2-135m-instruct")
    tokenizer = AutoTokenizer.from_pretrained(path)
    tokenizer.padding_side = "left"
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
    print(f"# Step-0 GRPO signal on chat multiplication (SmolLM2-135M-Instruct, {torch.get_num_threads()} threads)\n")
    print(f"Command: `python benchmarks/real_model_probe.py {sys.argv[1]} {sys.argv[2]}`\n")
    print(f"{PROMPTS} training prompts × {GROUP} samples, {NEW_TOKENS} new tokens, seed 0.\n\n```")
    for digits_a in sizes:
        for temperature in temperatures:
            print(probe(model, tokenizer, digits_a, temperature), flush=True)
    print("```")


if __name__ == "__main__":
    main()
