"""What ``grpo.release_heap`` costs a small model's RL step on the CPU: rollout and policy-step times
with and without the heap release, alternating in one process (A B A B), medians.

    python benchmarks/heap_release.py --out benchmarks/results/heap_release.txt

One process, one intra-op thread, the multiplication recipe as the ``cpu`` leaderboard runs it (20
prompts × 8 a step, the tiny model, its cached SFT warm start): one untimed step, then ``--rounds``
rounds of ``--steps`` steps with the release and ``--steps`` without.  Each step is rollout →
score → policy step (the trainer's own verbs); the release points are the trainer's.  Prints the
median rollout and policy-step times of each side, their ratio, and the freed heap (glibc
``mallinfo2``) and the ``malloc_trim`` time at the release points.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import statistics
import sys
import tempfile
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch  # noqa: E402

from rewardzoo.core.advantages import compute_advantages  # noqa: E402
from rewardzoo.core.memory import release_freed_memory  # noqa: E402
from rewardzoo.recipes import make_trainer  # noqa: E402
from rewardzoo.zoo import load_config  # noqa: E402

BOARD = ["grpo.batch_size=160", "grpo.micro_batch_size=160", "logging.progress=false", "logging.tensorboard=false"]


class MallInfo2(ctypes.Structure):
    """glibc's ``struct mallinfo2``."""

    _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                                 "fsmblks", "uordblks", "fordblks", "keepcost")]


def main(argv: list[str] | None = None) -> int:
    """Alternate the two sides and print (and optionally write) the report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=3, help="steps per side per round")
    parser.add_argument("--out", help="also write the report to this file")
    parser.add_argument("--override", nargs="*", default=[], help="key=value for the run (e.g. a shorter test)")
    args = parser.parse_args(argv)
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

    with tempfile.TemporaryDirectory() as tmp:
        cfg = load_config("algorithms/rlvr_multiplication.yaml", [*BOARD, *args.override, f"run_dir={tmp}/run"])
        trainer = make_trainer(cfg)
        import rewardzoo.core.trainer as trainer_module

        trainer_module.release_freed_memory = measured_release  # the trainer's release points, timed

        def step(release: bool) -> tuple[float, float]:
            trainer.cfg.grpo.release_heap = release
            t0 = time.perf_counter()
            rollouts, gen = trainer.rollout(trainer.step)
            trainer._release_heap()
            t1 = time.perf_counter()
            out = trainer.score(rollouts)
            adv = compute_advantages(out.rewards, rollouts.group_ids, cfg.grpo.advantage)
            trainer.policy_step(gen, trainer._local(adv))
            trainer._release_heap()
            trainer.step += 1
            return t1 - t0, time.perf_counter() - t1

        step(False)
        times = {True: [], False: []}
        for _ in range(args.rounds):
            for release in (True, False):
                times[release] += [step(release) for _ in range(args.steps)]
    argv = sys.argv[1:] if argv is None else argv
    lines = [f"# command: python benchmarks/heap_release.py {' '.join(argv)}".rstrip(),
             f"# torch {torch.__version__}, 1 intra-op thread; multiplication recipe with {' '.join(BOARD[:2])}", "",
             "| grpo.release_heap | rollout s (median) | policy step s (median) | steps |", "|---|---|---|---|"]
    med = {r: (statistics.median(a for a, _ in t), statistics.median(b for _, b in t)) for r, t in times.items()}
    for release in (True, False):
        lines.append(f"| {str(release).lower()} | {med[release][0]:.3f} | {med[release][1]:.3f} | {len(times[release])} |")
    frees = sorted(f for f, _ in trims)
    lines += ["", f"with/without: rollout {med[True][0] / med[False][0]:.2f}, policy step {med[True][1] / med[False][1]:.2f}",
              f"at the {len(trims)} release points: freed heap {frees[0] / 2**20:.0f}–{frees[-1] / 2**20:.0f} MiB, "
              f"malloc_trim {min(t for _, t in trims) * 1e3:.1f}–{max(t for _, t in trims) * 1e3:.1f} ms", ""]
    print("\n".join(lines))
    if args.out:
        with open(args.out, "w") as f:
            f.write("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
