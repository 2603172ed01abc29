"""A tiny board on a Ray cluster of this machine: one node against two, and the Ray executor's scheduling
overhead per run against the local executor's, all in one run of this script.

    python benchmarks/ray_board.py --out benchmarks/results/ray_board.md

The board: ``--runs`` RLVR runs on multiplication (seeds 0..N-1), each the tests' tiny model for
``--steps`` steps, as :func:`rewardzoo.sweep.run_sweep` runs a leaderboard (``share_dir`` on).  Four
sweeps of it, each into fresh run directories, one after the other:

    local 1     the local executor, one process at a time
    ray 1 node  a Ray cluster on loopback of one node with one CPU (one run at a time)
    local 2     the local executor, two processes at a time
    ray 2 nodes a Ray cluster on loopback of two nodes with one CPU each (two runs at a time)

The scheduling overhead per run is (ray − local) / runs at the same number of runs at a time; it
holds what the Ray executor adds: the storage probe, a task per run, and each Ray worker's first
import of the package and start of its fork server.  The 1-node : 2-node ratio is the two Ray walls.
Every sweep's metrics are checked equal to the bit (timings aside).  The clusters' start and stop are
not in the walls.  The machine's load average is recorded before and after: on a machine shared with
other work the walls are longer than on an idle one, and the ratio is the figure to read.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # every Ray process on loopback (read at import)

import ray  # noqa: E402
from ray.cluster_utils import Cluster  # noqa: E402

from rewardzoo.sweep import LocalExecutor, RayExecutor, RunSpec, run_sweep  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.conftest import FAST as TINY  # noqa: E402  (the tests' tiny run)

NODE = {"num_cpus": 1, "node_ip_address": "127.0.0.1", "include_dashboard": False, "object_store_memory": 80 * 2**20}


def board(root: Path, runs: int, steps: int) -> list[RunSpec]:
    """The tiny board: ``runs`` seeds of RLVR on multiplication."""
    tiny = (*TINY, f"steps={steps}", f"eval.every={steps}", "checkpoint_every=0")
    return [
        RunSpec(
            f"mult/rlvr/seed{seed}",
            "algorithms/rlvr_multiplication.yaml",
            root / f"seed{seed}",
            (*tiny, f"seed={seed}"),
        )
        for seed in range(runs)
    ]


def sweep(root: Path, runs: int, steps: int, executor) -> tuple[float, dict]:
    """One sweep of the board: its wall time and every run's metrics without timings."""
    start = time.perf_counter()
    results = run_sweep(board(root, runs, steps), progress=False, share_dir=root / "shared", executor=executor)
    wall = time.perf_counter() - start
    return wall, {
        n: [{k: v for k, v in row.items() if not k.startswith("time/")} for row in r.rows] for n, r in results.items()
    }


def on_cluster(root: Path, runs: int, steps: int, nodes: int) -> tuple[float, dict]:
    """The board on a fresh loopback cluster of ``nodes`` one-CPU nodes (start and stop not timed)."""
    cluster = Cluster(initialize_head=True, head_node_args=dict(NODE))
    try:
        for _ in range(nodes - 1):
            cluster.add_node(**NODE)
        cluster.wait_for_nodes()
        ray.init(address=cluster.address, _node_ip_address="127.0.0.1", log_to_driver=False)
        return sweep(root, runs, steps, RayExecutor())
    finally:
        ray.shutdown()
        cluster.shutdown()


def main(argv: list[str] | None = None) -> int:
    """Run the four sweeps and write the report (Markdown, with a JSON copy beside it)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=8, help="runs in the board (seeds 0..N-1)")
    parser.add_argument("--steps", type=int, default=20, help="RL steps per run")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/ray_board.md"))
    args = parser.parse_args(argv)
    if args.runs < 2 or args.steps < 1:
        parser.error("--runs must be at least 2 (two at a time) and --steps at least 1")
    command = "python benchmarks/ray_board.py " + " ".join(map(shlex.quote, argv if argv is not None else sys.argv[1:]))
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="ray_board-") as tmp:
        root = Path(tmp)
        walls, metrics = {}, {}
        for name, run in [
            ("local 1", lambda r: sweep(r, args.runs, args.steps, LocalExecutor(1))),
            ("ray 1 node", lambda r: on_cluster(r, args.runs, args.steps, 1)),
            ("local 2", lambda r: sweep(r, args.runs, args.steps, LocalExecutor(2))),
            ("ray 2 nodes", lambda r: on_cluster(r, args.runs, args.steps, 2)),
        ]:
            walls[name], metrics[name] = run(root / name.replace(" ", "_"))
            print(f"{name}: {walls[name]:.1f} s", flush=True)
    load_after = os.getloadavg()
    same = all(m == metrics["local 1"] for m in metrics.values())
    result = {
        "command": command,
        "runs": args.runs,
        "steps": args.steps,
        "cpus": os.cpu_count(),
        "walls_s": walls,
        "ratio_1_to_2_nodes": walls["ray 1 node"] / walls["ray 2 nodes"],
        "overhead_per_run_s": {
            "1 at a time": (walls["ray 1 node"] - walls["local 1"]) / args.runs,
            "2 at a time": (walls["ray 2 nodes"] - walls["local 2"]) / args.runs,
        },
        "same_bits": same,
        "load_average_before": load_before,
        "load_average_after": load_after,
        "ray": ray.__version__,
    }
    over = result["overhead_per_run_s"]
    lines = [
        f"`{command}`",
        "",
        f"# A tiny board on Ray: 1 node vs 2 nodes of this machine ({os.cpu_count()} cores)",
        "",
        f"{args.runs} tiny RLVR runs of {args.steps} steps; Ray {ray.__version__}; each node one CPU, on loopback.",
        f"Load average (1, 5, 15 min) before: {', '.join(f'{x:.1f}' for x in load_before)}; after: "
        f"{', '.join(f'{x:.1f}' for x in load_after)} (the machine was shared with other work).",
        "",
        "| sweep | wall (s) |",
        "|---|---|",
        *(f"| {n} | {w:.1f} |" for n, w in walls.items()),
        "",
        f"- 1 node : 2 nodes wall = **{result['ratio_1_to_2_nodes']:.2f}**",
        f"- Ray scheduling overhead per run against the local executor: **{over['1 at a time']:.2f} s** one at a "
        f"time, **{over['2 at a time']:.2f} s** two at a time",
        f"- every sweep's metrics the same bits as `local 1`: **{same}**",
        "",
    ]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines))
    args.out.with_suffix(".json").write_text(json.dumps(result, indent=1) + "\n")
    print("\n".join(lines))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
