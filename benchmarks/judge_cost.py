"""Judge cost of RcRL's comparisons: round robin against a Swiss tournament + Bradley–Terry (seed 004 §6.1).

    python benchmarks/judge_cost.py                 # G = 4, 8, 16, 32; writes benchmarks/results/judge_cost.md

For each group size G it reports, per criterion and group:

- ordered judge calls of a round robin, G(G − 1), and of the Swiss tournament, 2·⌊G/2⌋·⌈log2 G⌉;
- wall time of both with a real LM judge (the tiny CPU model as self-judge, default templates) on
  one group of toy-task texts, one criterion, and with the rule judge (all 13 criteria);
- the fidelity of Swiss + Bradley–Terry: Spearman rank correlation of the resulting rewards (all 13
  criteria of the toy rubric, uniform weights, the recipes' biased rule judge) with the round-robin
  rewards, mean and 95% t-interval over ``--groups`` groups of G rollouts sampled from the toy task's
  demonstrations.  The rule judge is used for fidelity because a random tiny LM has no ranking to
  recover.
"""

from __future__ import annotations

import argparse
import random
import shlex
import sys
import time
from pathlib import Path

import numpy as np
import torch
from scipy.stats import spearmanr

from rewardzoo.core.models import TinyModelConfig, char_tokenizer, tiny_causal_lm
from rewardzoo.eval import mean_ci
from rewardzoo.judges.pairwise import LMJudge, RuleJudge, Tournament
from rewardzoo.judges.rubric import load_rubric
from rewardzoo.tasks.rubric_writing import RubricWriting, RubricWritingConfig
from rewardzoo.zoo import load_config

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"
PRESET_JUDGE = load_config(REPO / "algorithms" / "rcrl_rubric_writing.yaml").reward.rcrl.judge.rule  # the recipes' rule judge


def group_of(task: RubricWriting, G: int, rng: random.Random) -> tuple[list[str], list[str], list[dict]]:
    """G rollouts for one prompt: demonstrations of G random training prompts, judged against one prompt's meta."""
    ex = task.train[rng.randrange(len(task.train))]
    texts = [task.train[rng.randrange(len(task.train))].demonstration for _ in range(G)]
    return [ex.prompt] * G, texts, [ex.meta] * G


def rewards(method: str, judge, rubric, prompts, texts, metas, seed: int, rounds: int = 0) -> tuple[torch.Tensor, int]:
    """[G] uniform-weight rewards over every criterion of ``rubric`` and the ordered calls made."""
    tournament = Tournament(method, rounds)
    total, calls = torch.zeros(len(texts), dtype=torch.float64), 0
    for k, c in enumerate(rubric.criteria):
        def ask(first, second, c=c):
            return judge.compare(c, [prompts[i] for i in first], [metas[i] for i in first], [texts[i] for i in first],
                                 [texts[i] for i in second])
        w, stats = tournament.win_rates(ask, [list(range(len(texts)))], seed=seed * 100 + k)
        total += w / len(rubric.criteria)
        calls += stats.calls
    return total, calls


def main(argv: list[str] | None = None) -> int:
    """Measure and write the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[4, 8, 16, 32])
    parser.add_argument("--groups", type=int, default=40, help="groups per size for the rank correlation")
    parser.add_argument("--extra-rounds", type=int, nargs="+", default=[0, 1, 2],
                        help="Swiss rounds beyond ⌈log2 G⌉ to measure (0 = the default schedule)")
    parser.add_argument("--results", default=str(RESULTS), help="where judge_cost.md goes")
    args = parser.parse_args(argv)
    torch.manual_seed(0)
    task = RubricWriting(RubricWritingConfig(n_train=1000, n_eval=10))
    toy = load_rubric("rubric_writing")
    rule = RuleJudge(PRESET_JUDGE, seed=0)
    tok = char_tokenizer()
    lm = LMJudge.self_judge(tiny_causal_lm(TinyModelConfig(), len(tok), seed=0), tok)
    one = load_rubric("rubric_writing")
    one = type(one)(one.name, one.criteria[:1])
    rng = random.Random(0)

    command = shlex.join(["python", "benchmarks/judge_cost.py", *(sys.argv[1:] if argv is None else argv)])
    lines = [f"<!-- command: {command} -->", "",
             "Judge cost per criterion and group of G rollouts, round robin (RR) vs Swiss tournament + Bradley–Terry.",
             "Wall time: one criterion with the tiny CPU model as LM self-judge (default templates, batch 16), and",
             "all 13 toy criteria with the rule judge.  Fidelity: Spearman correlation of Swiss+BT rewards (13",
             f"criteria, uniform weights, the recipes' biased rule judge) with RR rewards over {args.groups} groups "
             "(mean ± 95% t-interval).", "",
             "| G | RR calls | Swiss calls (⌈log2 G⌉ rounds) | calls saved | LM judge RR s | LM judge Swiss s "
             "| rule judge RR s | rule judge Swiss s | Spearman(Swiss, RR) | "
             + " | ".join(f"Spearman, +{e} rounds (calls)" for e in args.extra_rounds if e) + " |",
             "|---" * (9 + sum(1 for e in args.extra_rounds if e)) + "|"]
    for G in args.sizes:
        rr_t, sw_t = Tournament("round_robin"), Tournament("swiss")
        prompts, texts, metas = group_of(task, G, rng)
        t0 = time.perf_counter()
        rewards("round_robin", lm, one, prompts, texts, metas, 0)
        t1 = time.perf_counter()
        rewards("swiss", lm, one, prompts, texts, metas, 0)
        t2 = time.perf_counter()
        rewards("round_robin", rule, toy, prompts, texts, metas, 0)
        t3 = time.perf_counter()
        rewards("swiss", rule, toy, prompts, texts, metas, 0)
        t4 = time.perf_counter()
        fidelity = {}
        for extra in args.extra_rounds:
            rounds = sw_t.swiss_rounds(G) + extra if extra else 0
            corrs = []
            for g in range(args.groups):
                p, t, m = group_of(task, G, rng)
                rr, _ = rewards("round_robin", rule, toy, p, t, m, g)
                sw, _ = rewards("swiss", rule, toy, p, t, m, g, rounds)
                corrs.append(spearmanr(rr.numpy(), sw.numpy()).statistic if rr.std() > 0 and sw.std() > 0 else np.nan)
            fidelity[extra] = (mean_ci([c for c in corrs if np.isfinite(c)]), Tournament("swiss", rounds).calls_per_group(G))
        rr_calls, sw_calls = rr_t.calls_per_group(G), sw_t.calls_per_group(G)
        row = [str(G), str(rr_calls), str(sw_calls), f"{1 - sw_calls / rr_calls:.0%}", f"{t1 - t0:.2f}", f"{t2 - t1:.2f}",
               f"{t3 - t2:.3f}", f"{t4 - t3:.3f}", fidelity[0][0].format(digits=3)]
        row += [f"{fidelity[e][0].format(digits=3)} ({fidelity[e][1]})" for e in args.extra_rounds if e]
        lines.append("| " + " | ".join(row) + " |")
        print(lines[-1], flush=True)
    Path(args.results).mkdir(parents=True, exist_ok=True)
    (Path(args.results) / "judge_cost.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
