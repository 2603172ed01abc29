"""Judge cost of RcRL's comparisons: round robin against a Swiss tournament + Bradley–Terry (seed 004 §6.1).

    python benchmarks/judge_cost.py                 # G = 4, 8, 16, 32; writes benchmarks/results/judge_cost.md

For each group size G it reports, per criterion and group:

- ordered judge calls of a round robin, G(G − 1), and of the Swiss tournament, 2·⌊G/2⌋·⌈log2 G⌉;
- wall time of both with a real LM judge (the tiny CPU model as self-judge, default templates) on
  one group of toy-task texts, one criterion, and with the rule judge (all 13 criteria);
- the fidelity of Swiss + Bradley–Terry: Spearman rank correlation of the resulting rewards (all 13
  criteria of the toy rubric, uniform weights, the recipes' noisy, biased rule judge) with the
  round-robin rewards, mean and 95% t-interval over ``--groups`` groups of G rollouts sampled from
  the toy task's demonstrations; next to it the ceiling set by the judge's own noise (round robin
  against a round robin with fresh noise), a longer Swiss schedule, and the same comparison with the
  judge's noise and position bias switched off.  The rule judge is used for fidelity because a random
  tiny LM has no ranking to recover.
"""

from __future__ import annotations

import argparse
import random
import shlex
import sys
import time
from dataclasses import replace
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
PRESET_JUDGE = load_config(
    REPO / "algorithms" / "rcrl_rubric_writing.yaml"
).reward.rcrl.judge.rule  # the recipes' rule judge


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
            return judge.compare(
                c,
                [prompts[i] for i in first],
                [metas[i] for i in first],
                [texts[i] for i in first],
                [texts[i] for i in second],
            )

        w, stats = tournament.win_rates(ask, [list(range(len(texts)))], seed=seed * 100 + k)
        total += w / len(rubric.criteria)
        calls += stats.calls
    return total, calls


def spearman(a: torch.Tensor, b: torch.Tensor) -> float:
    """Spearman correlation of two reward vectors (NaN when either is constant)."""
    return spearmanr(a.numpy(), b.numpy()).statistic if a.std() > 0 and b.std() > 0 else np.nan


def main(argv: list[str] | None = None) -> int:
    """Measure and write the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[4, 8, 16, 32])
    parser.add_argument("--groups", type=int, default=40, help="groups per size for the rank correlations")
    parser.add_argument(
        "--extra-rounds", type=int, default=2, help="a second Swiss schedule with this many more rounds"
    )
    parser.add_argument("--results", default=str(RESULTS), help="where judge_cost.md goes")
    args = parser.parse_args(argv)
    torch.manual_seed(0)
    task = RubricWriting(RubricWritingConfig(n_train=1000, n_eval=10))
    toy = load_rubric("rubric_writing")
    rule, rule_again = RuleJudge(PRESET_JUDGE, seed=0), RuleJudge(PRESET_JUDGE, seed=1)
    clean = RuleJudge(replace(PRESET_JUDGE, noise=0.0, position_bias=0.0), seed=0)
    tok = char_tokenizer()
    lm = LMJudge.self_judge(tiny_causal_lm(TinyModelConfig(), len(tok), seed=0), tok)
    one = replace(toy, criteria=toy.criteria[:1])
    rng = random.Random(0)

    command = shlex.join(["python", "benchmarks/judge_cost.py", *(sys.argv[1:] if argv is None else argv)])
    lines = [
        f"<!-- command: {command} -->",
        "",
        "Judge cost per criterion and group of G rollouts, round robin (RR) vs Swiss tournament + Bradley–Terry "
        "(⌈log2 G⌉ rounds unless marked).",
        "Wall time: one criterion with the tiny CPU model as LM self-judge (default templates, batch 16), and",
        "all 13 toy criteria with the rule judge.  Fidelity: Spearman correlation of the rewards (13 toy criteria,",
        f"uniform weights) over {args.groups} groups of G toy-task texts, mean ± 95% t-interval: Swiss+BT against RR "
        "with the recipes' noisy, biased rule judge; the ceiling, RR against a second RR whose judge noise is drawn "
        "afresh; and Swiss against RR with that judge's noise and position bias off.",
        "",
        "| G | RR calls | Swiss calls | calls saved | LM judge RR s | LM judge Swiss s | rule judge RR s "
        f"| rule judge Swiss s | Spearman Swiss vs RR | ceiling: RR vs RR, fresh noise "
        f"| Spearman Swiss +{args.extra_rounds} rounds vs RR (calls) | Spearman Swiss vs RR, noise-free judge |",
        "|---" * 12 + "|",
    ]
    for G in args.sizes:
        rr_t, sw_t = Tournament("round_robin"), Tournament("swiss")
        prompts, texts, metas = group_of(task, G, rng)
        times = []
        for judge, rubric in ((lm, one), (rule, toy)):
            for method in ("round_robin", "swiss"):
                t0 = time.perf_counter()
                rewards(method, judge, rubric, prompts, texts, metas, 0)
                times.append(time.perf_counter() - t0)
        extra = sw_t.swiss_rounds(G) + args.extra_rounds
        corr = {k: [] for k in ("swiss", "ceiling", "extra", "clean")}
        for g in range(args.groups):
            p, t, m = group_of(task, G, rng)
            rr = rewards("round_robin", rule, toy, p, t, m, g)[0]
            corr["swiss"].append(spearman(rewards("swiss", rule, toy, p, t, m, g)[0], rr))
            corr["ceiling"].append(spearman(rewards("round_robin", rule_again, toy, p, t, m, g)[0], rr))
            corr["extra"].append(spearman(rewards("swiss", rule, toy, p, t, m, g, extra)[0], rr))
            corr["clean"].append(
                spearman(rewards("swiss", clean, toy, p, t, m, g)[0], rewards("round_robin", clean, toy, p, t, m, g)[0])
            )
        est = {k: mean_ci([c for c in v if np.isfinite(c)]).format(digits=3) for k, v in corr.items()}
        rr_calls, sw_calls = rr_t.calls_per_group(G), sw_t.calls_per_group(G)
        row = [
            str(G),
            str(rr_calls),
            str(sw_calls),
            f"{1 - sw_calls / rr_calls:.0%}",
            *(f"{x:.2f}" for x in times[:2]),
            *(f"{x:.3f}" for x in times[2:]),
            est["swiss"],
            est["ceiling"],
            f"{est['extra']} ({Tournament('swiss', extra).calls_per_group(G)})",
            est["clean"],
        ]
        lines.append("| " + " | ".join(row) + " |")
        print(lines[-1], flush=True)
    Path(args.results).mkdir(parents=True, exist_ok=True)
    (Path(args.results) / "judge_cost.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
