"""How far a board run's phases are from what this CPU's matrix products allow: the floating-point
operations of a rollout, a policy step and an evaluation, counted, against their measured time.

    python benchmarks/flop_floor.py --out benchmarks/results/flop_floor.txt
    python benchmarks/flop_floor.py --recipe rlvr_multiplication --board multiplication --steps 5

One process, one intra-op thread (as each job of the leaderboard runs), the recipe as the ``cpu`` board
trains it (``rewardzoo.board.CPU_SETTINGS`` of ``--board``) from its cached SFT warm start.  For
each phase — the trainer's own ``rollout``, ``policy_step`` and ``evaluate`` — it counts the FLOPs of one
call with ``torch.utils.flop_counter.FlopCounterMode`` (matrix products and attention: what the kernels
must compute), then times ``--steps`` calls without the counter (medians).  The matmul rate is measured
in the same process, on the model's own MLP product (4,096 rows × hidden → intermediate).  The floor of
a phase is its FLOPs at that rate: what no kernel work can beat on this machine without computing less.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path


def matmul_rate(hidden: int, intermediate: int, seconds: float = 1.0) -> float:
    """FLOP/s of a [4096, hidden] × [hidden, intermediate] float32 product on this thread."""
    import torch

    x, w = torch.randn(4096, hidden), torch.randn(intermediate, hidden)
    for _ in range(3):
        x @ w.T
    calls, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        x @ w.T
        calls += 1
    return 2 * 4096 * hidden * intermediate * calls / (time.perf_counter() - t0)


def measure(recipe: str, board: str, steps: int, overrides: list[str]) -> tuple[list[tuple[str, float, float]], float]:
    """([(phase, FLOPs of one call, median seconds of a call)] for rollout, policy step and evaluation; the
    matmul rate in FLOP/s)."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    from rewardzoo.board import CPU_SETTINGS
    from rewardzoo.core.advantages import compute_advantages
    from rewardzoo.recipes import make_trainer
    from rewardzoo.zoo import load_config

    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        cfg = load_config(
            recipe,
            [
                *CPU_SETTINGS[board],
                "logging.progress=false",
                "logging.tensorboard=false",
                *overrides,
                f"run_dir={tmp}/run",
            ],
        )
        trainer = make_trainer(cfg)

        def rollout():
            return trainer.rollout(trainer.step)

        def policy_step(rollouts, gen):
            adv = compute_advantages(trainer.score(rollouts).rewards, rollouts.group_ids, cfg.grpo.advantage)
            trainer.policy_step(gen, trainer._local(adv))
            trainer.step += 1

        policy_step(*rollout())  # warm-up: first calls allocate
        with FlopCounterMode(display=False) as counter:
            rollouts, gen = rollout()
        flops = {"rollout": counter.get_total_flops()}
        with FlopCounterMode(display=False) as counter:
            policy_step(rollouts, gen)
        flops["policy step"] = counter.get_total_flops()
        with FlopCounterMode(display=False) as counter:
            trainer.evaluate()
        flops["evaluation"] = counter.get_total_flops()
        times: dict[str, list[float]] = {name: [] for name in flops}
        for _ in range(steps):
            t0 = time.perf_counter()
            rollouts, gen = rollout()
            t1 = time.perf_counter()
            adv = compute_advantages(trainer.score(rollouts).rewards, rollouts.group_ids, cfg.grpo.advantage)
            t2 = time.perf_counter()
            trainer.policy_step(gen, trainer._local(adv))
            trainer.step += 1
            t3 = time.perf_counter()
            times["rollout"].append(t1 - t0)
            times["policy step"].append(t3 - t2)
        for _ in range(max(1, steps // 3)):
            t0 = time.perf_counter()
            trainer.evaluate()
            times["evaluation"].append(time.perf_counter() - t0)
        config = trainer.policy.config
        rate = matmul_rate(config.hidden_size, config.intermediate_size)
    return [(name, flops[name], statistics.median(times[name])) for name in flops], rate


def main(argv: list[str] | None = None) -> int:
    """Measure and print (and optionally write) the report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recipe", default="rlvr_multiplication", help="a shipped recipe or a path")
    parser.add_argument("--board", default="multiplication", help="whose cpu-board settings it runs under")
    parser.add_argument("--steps", type=int, default=5, help="timed rollouts and policy steps")
    parser.add_argument("--override", nargs="*", default=[], help="key=value for the run (e.g. a shorter test)")
    parser.add_argument("--out", help="also write the report to this file")
    args = parser.parse_args(argv)
    argv = sys.argv[1:] if argv is None else argv
    import torch

    phases, rate = measure(args.recipe, args.board, args.steps, args.override)
    lines = [
        f"# command: python benchmarks/flop_floor.py {' '.join(argv)}".rstrip(),
        f"# torch {torch.__version__}, 1 intra-op thread; {args.recipe} under the cpu board's {args.board} settings",
        "",
        f"matmul rate of this thread: {rate / 1e9:.1f} GFLOP/s",
        "",
        "| phase | GFLOP a call | s a call (median) | GFLOP/s | share of the matmul rate | floor s | measured / floor |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, flops, seconds in phases:
        floor = flops / rate
        lines.append(
            f"| {name} | {flops / 1e9:.2f} | {seconds:.3f} | {flops / seconds / 1e9:.1f} | "
            f"{flops / seconds / rate:.0%} | {floor:.3f} | {seconds / floor:.2f} |"
        )
    report = "\n".join(lines) + "\n"
    print(report, end="")
    if args.out:
        Path(args.out).write_text(report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
