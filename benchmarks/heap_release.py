"""What a trainer switch — ``grpo.release_heap`` by default — costs or saves a small model's RL step on the
CPU: rollout and policy-step times with the switch on and off, each in its own process (the heap
release's mmap threshold is process-wide), alternating A B A B, medians, and the pages faulted in.

    python benchmarks/heap_release.py --out benchmarks/results/heap_release.txt
    python benchmarks/heap_release.py --switch grpo.lean_forward --out benchmarks/results/lean_forward_board.txt

Each process has one intra-op thread and trains the multiplication recipe as the ``cpu`` leaderboard
runs it (20 prompts × 8 a step, the tiny model, its cached SFT warm start) with ``grpo.release_heap``
(or ``--switch``) on or off: one untimed step, then ``--steps`` timed ones, each rollout → score →
policy step (the trainer's own verbs and release points).  ``--rounds`` rounds of one process per side.
Prints the median rollout and policy-step times of each side and their ratio, and, for the side that
releases the heap, the freed heap (glibc ``mallinfo2``) and the ``malloc_trim`` time at the release points.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BOARD = ["grpo.batch_size=160", "grpo.micro_batch_size=160", "logging.progress=false", "logging.tensorboard=false"]
MARK = "@@heap_release "


class MallInfo2(ctypes.Structure):
    """glibc's ``struct mallinfo2``."""

    _fields_ = [
        (n, ctypes.c_size_t)
        for n in (
            "arena",
            "ordblks",
            "smblks",
            "hblks",
            "hblkhd",
            "usmblks",
            "fsmblks",
            "uordblks",
            "fordblks",
            "keepcost",
        )
    ]


def child(on: bool, steps: int, overrides: list[str], switch: str = "grpo.release_heap") -> None:
    """One side: build the trainer with ``switch`` as asked, time ``steps`` steps, print one JSON line."""
    import resource

    import torch

    from rewardzoo.core import trainer as trainer_module
    from rewardzoo.core.advantages import compute_advantages
    from rewardzoo.core.memory import release_freed_memory
    from rewardzoo.recipes import make_trainer
    from rewardzoo.zoo import load_config

    torch.set_num_threads(1)
    libc = ctypes.CDLL(None)
    libc.mallinfo2.restype = MallInfo2
    trims: list[tuple[int, float]] = []

    def measured_release() -> bool:
        free = libc.mallinfo2().fordblks
        t0 = time.perf_counter()
        done = release_freed_memory()
        trims.append((free, time.perf_counter() - t0))
        return done

    trainer_module.release_freed_memory = measured_release  # the trainer's release points, timed

    def faults() -> int:
        return resource.getrusage(resource.RUSAGE_SELF).ru_minflt

    with tempfile.TemporaryDirectory() as tmp:
        cfg = load_config(
            "algorithms/rlvr_multiplication.yaml",
            [*BOARD, *overrides, f"{switch}={str(on).lower()}", f"run_dir={tmp}/run"],
        )
        trainer = make_trainer(cfg)

        def step() -> tuple[float, float, int]:
            f0, t0 = faults(), time.perf_counter()
            rollouts, gen = trainer.rollout(trainer.step)
            trainer._release_heap()
            t1 = time.perf_counter()
            out = trainer.score(rollouts)
            adv = compute_advantages(out.rewards, rollouts.group_ids, cfg.grpo.advantage)
            trainer.policy_step(gen, trainer._local(adv))
            trainer._release_heap()
            trainer.step += 1
            return t1 - t0, time.perf_counter() - t1, faults() - f0

        step()
        times = [step() for _ in range(steps)]
    print(MARK + json.dumps({"times": times, "trims": trims}), flush=True)


def main(argv: list[str] | None = None) -> int:
    """Alternate the two sides' processes and print (and optionally write) the report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=3, help="timed steps per process")
    parser.add_argument("--out", help="also write the report to this file")
    parser.add_argument("--override", nargs="*", default=[], help="key=value for the runs (e.g. a shorter test)")
    parser.add_argument(
        "--switch",
        default="grpo.release_heap",
        choices=["grpo.release_heap", "grpo.lean_forward"],
        help="the boolean setting compared on and off",
    )
    parser.add_argument("--child", choices=["on", "off"], help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.child == "on", args.steps, args.override, args.switch)
        return 0
    argv = sys.argv[1:] if argv is None else argv
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    times: dict[bool, list] = {True: [], False: []}
    trims: list = []
    for _ in range(args.rounds):
        for release in (True, False):
            cmd = [
                sys.executable,
                __file__,
                "--child",
                "on" if release else "off",
                "--steps",
                str(args.steps),
                "--switch",
                args.switch,
                "--override",
                *args.override,
            ]
            proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=Path(__file__).resolve().parents[1])
            if proc.returncode != 0:
                raise RuntimeError(f"the {'on' if release else 'off'} process failed:\n{proc.stderr[-3000:]}")
            record = json.loads(next(line for line in proc.stdout.splitlines() if line.startswith(MARK))[len(MARK) :])
            times[release] += record["times"]
            trims += record["trims"]
    import torch

    lines = [
        f"# command: python benchmarks/heap_release.py {' '.join(argv)}".rstrip(),
        f"# torch {torch.__version__}, 1 intra-op thread, one process per side and round; multiplication "
        f"recipe with {' '.join(BOARD[:2])}",
        "",
        f"| {args.switch} | rollout s (median) | policy step s (median) | pages faulted in a step (median) | steps |",
        "|---|---|---|---|---|",
    ]
    med = {r: [statistics.median(x[i] for x in t) for i in range(3)] for r, t in times.items()}
    for release in (True, False):
        lines.append(
            f"| {str(release).lower()} | {med[release][0]:.3f} | {med[release][1]:.3f} | {med[release][2]:.0f} | "
            f"{len(times[release])} |"
        )
    frees = sorted(f for f, _ in trims)
    lines += [
        "",
        f"with/without: rollout {med[True][0] / med[False][0]:.2f}, policy step {med[True][1] / med[False][1]:.2f}",
    ]
    if trims:  # the side that released the heap
        lines.append(
            f"at the {len(trims)} release points: freed heap {frees[0] / 2**20:.0f}–{frees[-1] / 2**20:.0f} MiB, "
            f"malloc_trim {min(t for _, t in trims) * 1e3:.1f}–{max(t for _, t in trims) * 1e3:.1f} ms"
        )
    lines.append("")
    print("\n".join(lines))
    if args.out:
        with open(args.out, "w") as f:
            f.write("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
