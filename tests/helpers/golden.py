"""The golden replay: a short RLVR and RAL run that must reproduce a recording on every CPU.

What it guards is the update: after a refactor, the same data must give the same rewards,
advantages, losses, gradients and weights.  What it must not depend on is the machine: float
kernels round differently with the vector width torch dispatches (AVX2, AVX-512, the scalar
default, ARM), and sampling or greedy decoding turns a last-bit difference into a different token
and, a few steps later, a different run.  So the replay splits the run where the math stops being
smooth:

* **Completions are replayed.**  The recording ran the real engine and saved every ``generate``
  call (prompts, token ids, truncation flags); the replay's engine returns those tokens after
  checking that the trainer asked for the same prompts, so the data pipeline is checked exactly
  and nothing downstream branches on a sampled token.  Sampling itself is tested token for token
  elsewhere (``tests/core/test_engines.py``, on one machine).
* **The weights start the same everywhere**: tiny models are drawn by
  :func:`rewardzoo.core.models.init_portable_` (``torch.normal_`` is not the same bits on every
  CPU); the SFT warm start then trains on them, smoothly.
* **Two kinds of tolerance.**  A value computed from text and counts (RLVR's rewards, accuracies,
  the evaluation, lengths, the learning rate) must match to 1e-12 — exact up to the order of a
  float reduction.  A value that passes through the model (losses, entropies, gradient norms, a
  judge's scores, the fingerprint below) must match within its kind's :data:`TOLERANCES` of its
  recorded scale: several times the spread measured between ``ATEN_CPU_CAPABILITY=default``,
  ``avx2`` and ``avx512``, and far below what a wrong update moves (advantages with the wrong
  sign, a dropped micro-batch: ``tests/test_golden.py`` shows both fail).
* **A fingerprint of the update**: per parameter tensor, the RL displacement Δ = θ_end − θ_start
  projected on a fixed random direction and its norm, and the policy's log-likelihood of the
  step-0 held-out completions before and after RL (which covers the warm start too).

Record anew (after a deliberate change of the math, saying why in the commit) with
``python tests/helpers/golden.py record``; the recording must then pass under every capability
(``spread`` prints the largest deviation of each kind).
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import torch

from rewardzoo.core.config import resolved_run_dir, to_yaml
from rewardzoo.core.logger import read_metrics
from rewardzoo.core.models import portable_normal_
from rewardzoo.core.types import Generation
from rewardzoo.recipes import make_trainer
from rewardzoo.zoo import load_config, shipped_recipe

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
COMMON = [
    "steps=4",
    "checkpoint_every=0",
    "logging.progress=false",
    "logging.tensorboard=false",
    "task.multiplication.digits_a=2",
    "task.multiplication.n_train=610",
    "task.multiplication.n_eval=200",
    "sft.steps=40",
    "sft.n_examples=400",
    "eval.n_examples=32",
    "eval.every=2",
    "eval.samples=0",
    "grpo.batch_size=64",
    "grpo.micro_batch_size=32",
    "grpo.warmup_steps=0",
    "grpo.lr=2e-4",
    "grpo.beta=0.05",
    "grpo.kl_estimator=k3",
    "sampling.temperature=1.0",
    "sampling.max_new_tokens=16",
]
"""Shortened recipes: 2-digit × 1-digit so that 150 SFT steps give rewards with variance in every
group batch; β > 0 so the reference path is covered; two micro-batches so accumulation is."""
RECIPES = {
    "rlvr_multiplication": [
        "reward.rlvr.format_weight=0.5",
        "reward.rlvr.length_weight=0.2",
        "reward.rlvr.length_target=12",
    ],
    "ral_multiplication": ["reward.ral.warmup_steps=3", "reward.ral.gate_threshold=1.0"],
}
"""The recipes replayed, with their own overrides (RAL's gate never closes: a skip decision at a
threshold is a discrete branch, and the gate has tests of its own)."""
EXACT_TOLERANCE = 1e-12
"""Values computed from text and counts: exact up to the order of a float reduction."""
TOLERANCES = {"policy": 1e-2, "learned": 1e-1, "delta": 0.25, "logp": 1e-3}
"""Values that pass through a model, as a fraction of their recorded scale.  The largest deviation
measured between ``ATEN_CPU_CAPABILITY=default``, ``avx2`` and ``avx512`` on one machine, and the
smallest a wrong update gives (advantages of the wrong sign, a dropped micro-batch), per kind:

=========  =========================================  ============  =================
kind       keys                                       kernel noise  wrong update
=========  =========================================  ============  =================
policy     ``policy/*`` statistics of the update      2.4e-3        ≥ 1 (several keys)
learned    a learned reward's ``reward/``, ``judge/``,  2.4e-2        ≥ 1 (through the
           ``warmup/``, ``analysis/`` keys (RAL)                     policy keys)
delta      Δθ · probe per tensor (scale: largest ‖Δθ‖)  4.5e-2        ≥ 1 (23+ tensors)
logp       log π of the held-out completions          8e-5          ≥ 1.8e-2
=========  =========================================  ============  =================

Adam's first steps move each weight by about ±lr whatever its gradient's size, so a weight whose
gradient is zero up to rounding moves by a kernel-dependent sign: the per-tensor projections and a
learned judge's statistics are the noisiest.  Remeasure after re-recording with
``ATEN_CPU_CAPABILITY=<each> python tests/helpers/golden.py spread``."""
LEARNED_PREFIXES = ("reward/", "judge/", "warmup/", "analysis/")
"""For a learned reward (RAL) its rewards, judge statistics and their correlations pass through a model too."""
BOUNDED_PREFIXES = ("analysis/corr/", "analysis/auc/", "analysis/auc_within/")
"""Correlations and AUCs: judged on their own range (scale at least 1), not on their recorded size — a correlation
recorded near 0 at every step (RAL's reward against correctness, 0.018) would otherwise get a tolerance of 0.0018,
below the kernel noise of a value that passes through a judge (0.0024 on an AVX-512 Intel Xeon, 2026-12-05)."""


class RecordingEngine:
    """The real engine, with every ``generate`` call saved (what the replay returns)."""

    def __init__(self, engine):
        self.engine, self.calls = engine, []
        self.runs_policy = engine.runs_policy

    def generate(self, prompts: list[str], n: int = 1, greedy: bool = False) -> Generation:
        """The real engine's completions, recorded."""
        gen = self.engine.generate(prompts, n=n, greedy=greedy)
        lengths = gen.completion_mask.sum(1).tolist()
        self.calls.append(
            {
                "prompts": prompts,
                "n": n,
                "greedy": greedy,
                "prompt_ids": gen.prompt_ids,
                "completion_ids": [row[:k] for row, k in zip(gen.completion_ids.tolist(), lengths)],
                "truncated": gen.truncated.tolist(),
                "texts": gen.texts,
            }
        )
        return gen

    def sync_weights(self, policy: torch.nn.Module) -> None:
        """Passed on to the real engine."""
        self.engine.sync_weights(policy)


class ReplayEngine:
    """Returns the recorded completions, call by call, after checking the trainer asked for the
    recorded prompts (same order, same ``n``, same greedy flag)."""

    runs_policy = False  # the completions are recorded: nothing of the policy is called

    def __init__(self, calls: list[dict], pad_id: int):
        self.calls, self.pad_id, self.position = calls, pad_id, 0

    def generate(self, prompts: list[str], n: int = 1, greedy: bool = False) -> Generation:
        """The next recorded call's completions as a :class:`Generation`."""
        if self.position >= len(self.calls):
            raise AssertionError(f"generate call {self.position}: the recording has only {len(self.calls)} calls")
        call = self.calls[self.position]
        asked = {"prompts": prompts, "n": n, "greedy": greedy}
        if any(call[k] != v for k, v in asked.items()):
            raise AssertionError(
                f"generate call {self.position}: the trainer asked for other prompts, n or greedy "
                f"than recorded (the data pipeline changed): {asked} vs "
                f"{ {k: call[k] for k in asked} }"
            )
        self.position += 1
        rows = call["completion_ids"]
        T = max(len(r) for r in rows)
        ids = torch.tensor([r + [self.pad_id] * (T - len(r)) for r in rows], dtype=torch.long)  # [N, T]
        mask = torch.tensor([[t < len(r) for t in range(T)] for r in rows], dtype=torch.bool)  # [N, T]
        return Generation(
            prompt_ids=call["prompt_ids"],
            completion_ids=ids,
            completion_mask=mask,
            texts=call["texts"],
            truncated=torch.tensor(call["truncated"], dtype=torch.bool),
        )

    def sync_weights(self, policy: torch.nn.Module) -> None:
        """Nothing to push: the completions are recorded."""


def config(recipe: str, workdir: Path, recorded: bool = True):
    """The configuration of ``recipe``'s replay, writing a new run directory under ``workdir`` (the warm
    start is cached in ``workdir/sft``, shared by the recipes and replays): the recorded, fully resolved one, or (``recorded=False``,
    for a new recording) the shipped recipe with :data:`COMMON` and its own overrides."""
    workdir.mkdir(parents=True, exist_ok=True)
    where = [f"run_dir={tempfile.mkdtemp(prefix=recipe, dir=workdir)}", f"sft.cache_dir={workdir / 'sft'}"]
    if recorded:
        return load_config(paths(recipe)["config"], where)
    return load_config(shipped_recipe(recipe), [*COMMON, *RECIPES[recipe], *where])


def run(cfg, calls: list[dict] | None = None) -> tuple[list[dict], dict, list[dict]]:
    """Train ``cfg``; replay ``calls`` when given, else record them from the real engine.  Returns
    the metrics rows, the fingerprint and the generate calls."""
    trainer = make_trainer(cfg)
    engine = RecordingEngine(trainer.engine) if calls is None else ReplayEngine(calls, trainer.tokenizer.pad_token_id)
    trainer.engine = engine
    start = {k: v.detach().clone() for k, v in trainer.policy.named_parameters()}
    trainer.train()
    calls = engine.calls
    held_out = next(c for c in calls if c["greedy"])  # the step-0 evaluation
    prompts = [p for p in held_out["prompts"] for _ in range(held_out["n"])]
    probe = torch.Generator().manual_seed(0)
    fp: dict[str, float] = {}
    for name, p in trainer.policy.named_parameters():
        delta = (p.detach() - start[name]).double()  # the RL displacement
        direction = portable_normal_(torch.empty_like(delta), 1.0, probe)
        fp[f"{name}/delta_dot_probe"] = float((delta * direction).sum())
        fp["delta_norm_max"] = max(fp.get("delta_norm_max", 0.0), float(delta.norm()))
    fp["logp_heldout_end"] = float(trainer.score_completions(prompts, held_out["texts"]).double().sum())
    trainer.policy.load_state_dict(start, strict=False)
    fp["logp_heldout_start"] = float(trainer.score_completions(prompts, held_out["texts"]).double().sum())
    return read_metrics(resolved_run_dir(cfg) / "metrics.jsonl"), fp, calls


def kind(recipe: str, key: str) -> str | None:
    """The :data:`TOLERANCES` kind of a metric or fingerprint key; None for a value computed from text."""
    if key.startswith("policy/") and key != "policy/lr" and "length" not in key and "truncated" not in key:
        return "policy"
    if recipe.startswith("ral") and key.startswith(LEARNED_PREFIXES):
        return "learned"
    if key.endswith("/delta_dot_probe"):
        return "delta"
    return "logp" if key.startswith("logp_") else None


def mismatches(recipe: str, rows: list[dict], fp: dict, want_rows: list[dict], want_fp: dict) -> list[str]:
    """Every way ``rows`` / ``fp`` differ from the recording (empty when the replay reproduces it).

    A model-dependent value may differ by its kind's :data:`TOLERANCES` × its scale — the largest
    magnitude the recording has for that key over all steps (so a loss that is zero up to rounding
    at one step is judged against the key's typical size, not against its own rounding noise; at least 1
    for a correlation or AUC, :data:`BOUNDED_PREFIXES`), and for the projections the largest ‖Δθ‖ of any tensor; every other value by :data:`EXACT_TOLERANCE`."""
    if [r["step"] for r in rows] != [r["step"] for r in want_rows]:
        return [f"logged steps {[r['step'] for r in rows]}, recorded {[r['step'] for r in want_rows]}"]
    scales = {"delta": max(want_fp.get("delta_norm_max", 0.0), 1e-30)}
    for w in want_rows:
        for k, v in w.items():
            scales[k] = max(scales.get(k, 1.0 if k.startswith(BOUNDED_PREFIXES) else 0.0), abs(v))
    got = [
        (r["step"], k, g.get(k), v) for r, g in zip(want_rows, rows) for k, v in r.items() if not k.startswith("time/")
    ]
    got += [("end", k, fp.get(k), v) for k, v in want_fp.items() if k != "delta_norm_max"]
    out = []
    for step, k, g, w in got:
        which = kind(recipe, k)
        scale = scales["delta"] if which == "delta" else scales.get(k, abs(w))
        tol = TOLERANCES[which] * scale if which else EXACT_TOLERANCE * max(1.0, scale)
        if g is None:
            out.append(f"step {step}: {k} missing now")
        elif not abs(g - w) <= tol:
            out.append(f"step {step}: {k} = {g!r}, recorded {w!r} (tolerance {tol:.2g}, {which or 'exact'})")
    return out


def paths(recipe: str) -> dict[str, Path]:
    """The recording's files of ``recipe``."""
    return {
        "config": GOLDEN / f"{recipe}.config.yaml",
        "metrics": GOLDEN / f"{recipe}.metrics.jsonl",
        "calls": GOLDEN / f"{recipe}.calls.jsonl",
        "fingerprint": GOLDEN / f"{recipe}.fingerprint.json",
    }


def load(recipe: str) -> tuple[list[dict], dict, list[dict]]:
    """The recorded metrics rows, fingerprint and generate calls of ``recipe``."""
    p = paths(recipe)
    calls = [json.loads(line) for line in p["calls"].read_text().splitlines()]
    return read_metrics(p["metrics"]), json.loads(p["fingerprint"].read_text()), calls


def replay(recipe: str, workdir: Path) -> list[str]:
    """Replay ``recipe`` against its recording; the mismatches (empty: reproduced)."""
    want_rows, want_fp, calls = load(recipe)
    rows, fp, _ = run(config(recipe, workdir), calls)
    return mismatches(recipe, rows, fp, want_rows, want_fp)


def record(workdir: Path) -> None:
    """Run every recipe with the real engine and write its recording under ``tests/golden/``."""
    for recipe in RECIPES:
        cfg = config(recipe, workdir, recorded=False)
        rows, fp, calls = run(cfg)
        p = paths(recipe)
        p["config"].write_text(to_yaml(cfg))
        p["metrics"].write_text("".join(json.dumps(r) + "\n" for r in rows))
        p["calls"].write_text("".join(json.dumps(c) + "\n" for c in calls))
        p["fingerprint"].write_text(json.dumps(fp, indent=1) + "\n")
        print(f"recorded {recipe}: {len(rows)} metric rows, {len(calls)} generate calls")


def spread(recipe: str, workdir: Path) -> dict[str, tuple[float, str]]:
    """The largest deviation from the recording of each kind, as a fraction of its scale (the numbers
    behind :data:`TOLERANCES`), with the key where it occurs."""
    global TOLERANCES, EXACT_TOLERANCE
    saved = TOLERANCES, EXACT_TOLERANCE
    want_rows, want_fp, calls = load(recipe)
    rows, fp, _ = run(config(recipe, workdir), calls)
    worst: dict[str, tuple[float, str]] = {}
    for fraction in (10.0**-e for e in range(0, 13)):  # from loose to tight: the first that a kind fails
        TOLERANCES, EXACT_TOLERANCE = {k: fraction for k in saved[0]}, fraction
        for line in mismatches(recipe, rows, fp, want_rows, want_fp):
            which = line.rsplit(", ", 1)[1].rstrip(")")
            worst.setdefault(which, (fraction * 10, line.split(" = ")[0]))
    TOLERANCES, EXACT_TOLERANCE = saved
    return worst


def main(argv: list[str]) -> int:
    """``record [DIR]`` writes the recording; ``replay [DIR]`` prints the mismatches (exit 1 when any);
    ``spread [DIR]`` the largest deviation of each kind (an upper bound, to the next power of ten)."""
    torch.set_num_threads(1)
    command = argv[0] if argv else ""
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(argv[1]) if len(argv) > 1 else Path(tmp)
        capability = torch.backends.cpu.get_cpu_capability()
        if command == "record":
            record(workdir)
            return 0
        if command == "replay":
            bad = [f"{r}: {m}" for r in RECIPES for m in replay(r, workdir)]
            print("\n".join(bad) or f"reproduced ({capability})")
            return 1 if bad else 0
        if command == "spread":
            for recipe in RECIPES:
                print(capability, recipe, spread(recipe, workdir))
            return 0
    print("usage: python tests/helpers/golden.py record|replay|spread [WORKDIR]", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
