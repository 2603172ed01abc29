"""The pairwise judge's time in an RcRL step: each question read whole against the KV-cache prefix tree
(:mod:`rewardzoo.judges.prefix_tree`), alternating in one run, at equal verdicts.

    python benchmarks/perf/judge_prefix.py --out benchmarks/results/perf/judge_prefix.md

One rollout batch of ``--recipe`` (default ``rcrl_rubric_writing_smollm2``: the SmolLM2-135M-Instruct
self-judge through its chat template, 4 prompts × G = 8, 40 new tokens, round robin, 16 questions per
forward pass) sampled at step ``--step``, then ``--repeats`` rounds of RcRL's ``score`` on that batch, the
two reading modes alternating within each round (whole first).  Written: per round and mode the wall time,
the process's CPU time (less moved by other processes' load than the wall time) and the tokens the judge read (padding excluded); the median time of each mode and their ratio; the largest
difference between the modes of any verdict J and of any reward; the torch threads; and the 1-minute load
average at the start and at the end (other processes may share the machine).  ``--set`` passes recipe
overrides (the smoke test runs the tiny ``rcrl_rubric_writing`` recipe with an LM self-judge).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import torch

from rewardzoo.judges.pairwise import LMJudge, Verdicts
from rewardzoo.recipes import make_trainer

MODES = {"whole": False, "tree": True}  # name -> LMJudge.share_prefixes


class Recording:
    """An LM judge that keeps every comparison's verdicts (RcRL's ``score`` asks only ``compare``)."""

    def __init__(self, judge: LMJudge):
        self.judge, self.verdicts = judge, []

    def compare(self, *args, **kwargs) -> Verdicts:
        """The wrapped judge's verdicts, recorded."""
        v = self.judge.compare(*args, **kwargs)
        self.verdicts.append(v.prob)
        return v


def measure(recipe: str, overrides: list[str], step: int, repeats: int) -> dict:
    """Rounds of the two modes on one rollout batch: times, tokens read, and the verdicts' agreement."""
    with tempfile.TemporaryDirectory() as tmp:
        base = ["steps=1", "checkpoint_every=0", "logging.progress=false", f"run_dir={tmp}/run"]
        trainer = make_trainer(recipe, base + overrides)
        batch, _ = trainer.rollout(step)
    reward = trainer.reward
    judge = reward.judge
    if not isinstance(judge, LMJudge):
        raise SystemExit(f"{recipe} does not judge with an LM (reward.rcrl.judge.kind=lm); nothing to measure")
    rounds, last = [], {}
    for r in range(repeats):
        for mode, share in MODES.items():
            judge.share_prefixes = share
            recorder = Recording(judge)
            reward.judge = recorder
            tokens, cpu = judge.tokens_read, time.process_time()
            start = time.perf_counter()
            out = reward.score(batch)
            seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
            reward.judge = judge
            rounds.append({"round": r, "mode": mode, "s": seconds, "cpu_s": cpu, "tokens": judge.tokens_read - tokens})
            print(rounds[-1], f"load {os.getloadavg()[0]:.2f}", flush=True)
            last[mode] = (torch.cat(recorder.verdicts), out.rewards.double())  # [questions], [N]
    (j_whole, r_whole), (j_tree, r_tree) = last["whole"], last["tree"]
    median = {(m, k): statistics.median(x[k] for x in rounds if x["mode"] == m) for m in MODES for k in ("s", "cpu_s")}
    return {
        "rounds": rounds,
        "median": median,
        "questions": len(j_whole),
        "rollouts": len(batch),
        "max_dj": float((j_whole - j_tree).abs().max()),
        "max_dreward": float((r_whole - r_tree).abs().max()),
    }


def report(command: str, recipe: str, step: int, result: dict, load: tuple[float, float]) -> str:
    """The markdown result file: its command first."""
    median = result["median"]
    tokens = {m: next(x["tokens"] for x in result["rounds"] if x["mode"] == m) for m in MODES}
    lines = [
        f"Command: `{command}`",
        "",
        f"# The pairwise judge's time in one RcRL step, each question whole against the prefix tree ({recipe})",
        "",
        f"One rollout batch at step {step} ({result['rollouts']} rollouts, {result['questions']} ordered "
        f"comparisons per mode), RcRL's `score` on it, the modes alternating; torch threads "
        f"{torch.get_num_threads()}, 1-minute load average {load[0]:.2f} at the start and {load[1]:.2f} at "
        "the end (other agents' processes shared this machine's CPUs).",
        "",
        "| round | mode | time_s | cpu_s | tokens read |",
        "| --- | --- | --- | --- | --- |",
        *[
            f"| {x['round']} | {x['mode']} | {x['s']:.2f} | {x['cpu_s']:.2f} | {x['tokens']} |"
            for x in result["rounds"]
        ],
        "",
        *[
            f"- median {label}: whole {median['whole', k]:.2f} s, tree {median['tree', k]:.2f} s; "
            f"tree / whole = {median['tree', k] / median['whole', k]:.3f}"
            for k, label in (("s", "wall time"), ("cpu_s", "CPU time (all threads)"))
        ],
        f"- tokens read: tree / whole = {tokens['tree'] / tokens['whole']:.3f}",
        f"- largest |ΔJ| between the modes: {result['max_dj']:.2e}; largest |Δreward|: {result['max_dreward']:.2e}",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    """Measure and write the result file."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--recipe", default="rcrl_rubric_writing_smollm2")
    parser.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE", help="recipe overrides")
    parser.add_argument("--step", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    if args.repeats < 1 or args.step < 0:
        parser.error("--repeats must be >= 1 and --step >= 0")
    load_start = os.getloadavg()[0]
    result = measure(args.recipe, args.set, args.step, args.repeats)
    command = (
        f"python benchmarks/perf/judge_prefix.py --recipe {args.recipe} --step {args.step} "
        f"--repeats {args.repeats}" + (f" --set {' '.join(args.set)}" if args.set else "") + f" --out {args.out}"
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(report(command, args.recipe, args.step, result, (load_start, os.getloadavg()[0])))
    print(args.out.read_text())


if __name__ == "__main__":
    main()
