"""The real-model judge's own positive control: can a SmolLM2-135M-Instruct judge, trained as RAL trains it (no
correctness label), tell right answers from wrong ones on **validation** prompts before any RL step?

    python benchmarks/real_judge_control.py --out benchmarks/results/real_model/judge_control.md

The real board's RAL row (benchmarks/results/real_model/README.md) co-trains its judge, and a claim about a learned
judge is read only once the judge is shown able to learn: before any RL run the judge gets what the protocol gives
a testbed, a positive control of its own.  On the real board's task (chat
multiplication, 2-digit × 1-digit, T = 0.7, 2 prompts × G = 8; ``REAL_SETTINGS``):

1. **The probe** (``ral_capacity.make_probe``): the instruct model's replies to the 200 validation prompts (2 each,
   the judge reading the question and the parsed answer), and ``max(--rounds)`` RAL-shaped warm-up batches on
   training prompts (references against the starting policy's answers).
2. **Each judge setting** (:data:`SETTINGS`, every one a set of ``reward.ral.judge.*`` keys over the recipe's): a
   fresh :class:`rewardzoo.rewards.ral.RAL` built as the board builds it (seed 0), its update run on the warm-up
   batches exactly as RAL's warm-up runs it; after each count of ``--rounds`` updates, the AUC of its logit for
   right against wrong answers of the probe (the verifier labels the probe's rows only; a percentile bootstrap
   over validation prompts gives the interval).
3. **The rule, fixed before the first measurement**: the setting with the highest AUC after the recipe's own
   warm-up (10 rounds) is the one RAL runs with on the board; the judge's positive control *works* when that
   AUC's interval lies above ½.  A setting that works only after more rounds says the warm-up is too short, not
   that the judge works at the recipe's.

Only validation and training prompts are read, never the test split.  The probe and each setting's numbers are
cached under ``--runs`` (a killed run resumes).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np
import torch
from ral_capacity import Probe, cached, make_probe

from rewardzoo.board.rows import REAL_SETTINGS
from rewardzoo.core.model_store import resolve_model
from rewardzoo.eval import auc
from rewardzoo.recipes import task_for
from rewardzoo.rewards.context import RewardContext
from rewardzoo.rewards.ral import RAL
from rewardzoo.zoo import load_config

RECIPE = "ral_multiplication_smollm2"
JUDGE = "reward.ral.judge."
SETTINGS: dict[str, list[str]] = {
    "recipe: lm_likelihood, lr 1e-5 (a, b too)": [],
    "lm_likelihood, a and b at lr 1e-2": ["head_lr=1e-2"],
    "lm_likelihood + EOS, a and b at lr 1e-2": ["head_lr=1e-2", "end_token=true"],
    "lm_likelihood + EOS, lr 1e-4, a and b at 1e-2": ["lr=1e-4", "head_lr=1e-2", "end_token=true"],
    "lm_likelihood + EOS, backbone frozen, a and b at 1e-2": ["freeze_backbone=true", "head_lr=1e-2", "end_token=true"],
    "last-token classifier (the RAL paper's), head at 1e-3": ["readout=last_token", "head_lr=1e-3"],
}
"""The judge settings measured: the recipe's, then the readout's own parameters at a rate that lets them fit within
the warm-up (the tiny model's lesson, ral_capacity.JUDGE), the answer's end included, a faster backbone, the base
model's likelihood only calibrated, and the RAL paper's sequence classifier."""


def auc_interval(probe: Probe, z: torch.Tensor, n_boot: int = 1000, seed: int = 0) -> tuple[float, float, float]:
    """AUC of ``z`` (right vs wrong answers of the probe) with a 95% percentile bootstrap over validation prompts
    (each prompt's answers stay together)."""
    right = np.array(probe.correct)
    z = z.double().numpy()
    groups: dict[str, list[int]] = {}
    for i, p in enumerate(probe.prompts):
        groups.setdefault(p, []).append(i)
    clusters = list(groups.values())
    rng = np.random.default_rng(seed)
    reps = []
    for _ in range(n_boot):
        rows = np.concatenate([clusters[j] for j in rng.integers(0, len(clusters), len(clusters))])
        a = auc(z[rows][right[rows]], z[rows][~right[rows]])
        if math.isfinite(a):
            reps.append(a)
    low, high = np.quantile(reps, [0.025, 0.975])
    return auc(z[right], z[~right]), float(low), float(high)


def measure(cfg, probe: Probe, policy_dir: str, rounds: list[int]) -> dict:
    """One setting: its RAL's judge scored on the probe at build and after each count of ``rounds`` warm-up updates."""
    start = time.perf_counter()
    reward = RAL.from_config(cfg.reward.ral, RewardContext(seed=0, init_dir=policy_dir))
    out: dict[str, list] = {}
    stats: dict = {}
    for done in range(max(rounds) + 1):
        if done in rounds:
            z = reward.judge.logit_reference(probe.prompts, probe.answers)  # [n]
            out[str(done)] = [
                *auc_interval(probe, z),
                stats.get("judge/auc", math.nan),
                stats.get("judge/d_reference_mean", math.nan),
                stats.get("judge/d_generated_mean", math.nan),
            ]
        if done < len(probe.warmup):
            batch = probe.warmup[done]
            stats = reward.update(batch, reward.score(batch))
    return {"rounds": out, "seconds": time.perf_counter() - start}


def report(args, probe: Probe, results: dict[str, dict], cost: dict) -> str:
    """The Markdown: the probe, every setting's AUC after each count of rounds, the rule's choice and its reading."""
    rounds = [str(r) for r in args.rounds]
    head = " | ".join(f"AUC after {r} rounds" if r != "0" else "AUC at build" for r in rounds)
    lines = [
        f"# command: python benchmarks/real_judge_control.py {' '.join(args.argv)}",
        "",
        "The real board's judge (SmolLM2-135M-Instruct, RAL's label-free warm-up on references against the instruct",
        "model's answers) scored on **validation** prompts: the AUC of its logit for right against wrong answers of",
        "the instruct model (95% bootstrap over prompts; ½ = chance).  Per round: 2 training prompts × G = 8, as on",
        "the board.  The batch AUC (references against generated answers, the run log's `judge/auc`) is one batch's:",
        "2 references against 16 answers of 2 prompts, right ones among them (a right answer is the reference), so",
        "it compares answers across prompts and says little about verification.",
        "",
        f"Probe: {len(probe.answers)} parseable answers to {len(set(probe.prompts))} validation prompts "
        f"({sum(probe.correct)} right, {len(probe.correct) - sum(probe.correct)} wrong); "
        f"{len(probe.warmup)} warm-up batches.",
        "",
        f"| judge setting (`reward.ral.judge.*`) | {head} | batch AUC, refs vs generated, last round | D(ref) | "
        "D(gen) | s |",
        "| --- | " + " | ".join("---:" for _ in rounds) + " | ---: | ---: | ---: | ---: |",
    ]
    for name, res in results.items():
        cells = [f"{v[0]:.3f} [{v[1]:.3f}, {v[2]:.3f}]" for v in (res["rounds"][r] for r in rounds)]
        last = res["rounds"][rounds[-1]]
        keys = ", ".join(f"`{k}`" for k in SETTINGS[name]) or "the recipe's"
        lines.append(
            f"| {name} ({keys}) | {' | '.join(cells)} | {last[3]:.3f} | {last[4]:.3f} | {last[5]:.3f} | "
            f"{res['seconds']:.0f} |"
        )
    at = str(args.choose_at)
    best = max(results, key=lambda n: results[n]["rounds"][at][0])
    value, low, high = results[best]["rounds"][at][:3]
    works = low > 0.5
    lines += [
        "",
        f"**Rule** (fixed before the first measurement): the setting with the highest AUC after {at} rounds (the "
        "recipe's warm-up) is RAL's on the board; the judge's positive control works when that AUC's interval lies "
        "above ½.",
        "",
        f"**Chosen**: {best}: AUC {value:.3f} [{low:.3f}, {high:.3f}] after {at} rounds — the judge's positive "
        f"control {'**works**' if works else '**does not work**'}.",
        "",
        f"Cost: probe {cost['probe']:.0f} s, settings {sum(r['seconds'] for r in results.values()):.0f} s "
        f"(torch threads: {torch.get_num_threads()}).",
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Measure every setting of :data:`SETTINGS` and write the report."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, nargs="+", default=[0, 10, 40], help="AUC after these warm-up counts")
    parser.add_argument("--choose-at", type=int, default=10, help="the count the rule reads (the recipe's warm-up)")
    parser.add_argument("--settings", nargs="+", choices=list(SETTINGS), help="default: all")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--runs", type=Path, default=Path("runs/real_judge_control"))
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    args.argv = argv if argv is not None else sys.argv[1:]
    if args.choose_at not in args.rounds:
        parser.error(f"--choose-at {args.choose_at} must be one of --rounds {args.rounds}")
    torch.set_num_threads(args.threads)
    base = list(REAL_SETTINGS["chat_multiplication"])
    cfg = load_config(RECIPE, base)
    policy_dir = resolve_model(cfg.model.name)
    task = task_for(cfg)
    args.runs.mkdir(parents=True, exist_ok=True)
    probe_file = args.runs / f"probe_{max(args.rounds)}.pt"
    if not probe_file.is_file():
        start = time.perf_counter()
        probe = make_probe(cfg, task, Path(policy_dir), cfg.sampling.temperature, max(args.rounds))
        torch.save({"probe": probe, "seconds": time.perf_counter() - start}, probe_file)
    stored = torch.load(probe_file, weights_only=False)
    probe: Probe = stored["probe"]
    cost = {"probe": stored["seconds"]}
    results = {}
    for name in args.settings or SETTINGS:
        overrides = [*base, *(JUDGE + k for k in SETTINGS[name])]
        key = {"overrides": overrides, "rounds": args.rounds, "probe": probe_file.name}
        results[name] = cached(
            args.runs / "settings.json",
            key,
            lambda overrides=overrides: measure(load_config(RECIPE, overrides), probe, policy_dir, args.rounds),
        )
        print(name, results[name], flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(report(args, probe, results, cost))
    print(args.out.read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
