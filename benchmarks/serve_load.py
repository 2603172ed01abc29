"""``rewardzoo serve`` under load and under a kill, on 127.0.0.1 only, bounded in requests and time.

    python benchmarks/serve_load.py --out benchmarks/results/serve_load.md

Load: a service of a learned judge (RAL, the CPU recipe ral_multiplication at test sizes: tests/helpers/serving.py)
is sent ``--requests`` requests of ``--rows`` rows (whole groups of 4) from 1, 8 and 32 concurrent clients
(each level at most ``--level-s`` seconds); requests/s, rows/s and the latency percentiles p50/p95/p99 are
measured at the client, and the batches the judge learned from are read from the service.

Kill: a fresh service is sent ``--kill-batches`` batches by one client; after half of them it is killed with
SIGKILL while a request is in flight, restarted on the same directory, and the client retries the request
with the same request id (:func:`rewardzoo.integrations.remote.post_score`). The service's judge after every
batch is then compared with the same reward driven in-process over the same batches (warm-up on the first,
score → update on each): equal state means no batch's update was lost and none learned twice; the service's
own account of lost updates (``lost_updates``) is reported too.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import platform
import shlex
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rewardzoo.integrations.remote import post_score  # noqa: E402
from tests.helpers.serving import Served  # noqa: E402
from tests.serve.test_serve_service import (  # noqa: E402
    TASK,
    G,
    assert_same_state,
    in_process,
    served_state,
)


def rows_of(i: int, n_rows: int) -> dict:
    """Request ``i``: ``n_rows // 4`` task prompts × 4 completions (demonstration, wrong answer, bare answer,
    garbage)."""
    prompts, completions = [], []
    n = n_rows // G
    for k in range(n):
        e = TASK.train[(i * n + k) % len(TASK.train)]
        wrong = e.demonstration[:-1] + str((int(e.demonstration[-1]) + 1) % 10)
        prompts += [e.prompt] * G
        completions += [e.demonstration, wrong, f"={e.reference}", "no answer"]
    return {"prompts": prompts, "completions": completions}


def percentile(values: list[float], q: float) -> float:
    """The q-quantile (0..1) by linear interpolation (statistics.quantiles' inclusive method)."""
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[round(q * 100) - 1]


def load_level(served: Served, clients: int, requests: int, n_rows: int, level_s: float) -> dict:
    """``requests`` requests from ``clients`` concurrent clients (stopping early after ``level_s`` seconds)."""
    before = served.health()["batches"]
    latencies: list[float] = []
    deadline = time.monotonic() + level_s
    counter = iter(range(requests))
    lock = threading.Lock()

    def client() -> None:
        while time.monotonic() < deadline:
            with lock:
                i = next(counter, None)
            if i is None:
                return
            t0 = time.perf_counter()
            post_score(rows_of(i, n_rows), served.url)
            with lock:
                latencies.append(time.perf_counter() - t0)

    t0 = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(clients) as pool:
        for f in [pool.submit(client) for _ in range(clients)]:
            f.result()
    wall = time.perf_counter() - t0
    batches = served.health()["batches"] - before
    return {
        "clients": clients,
        "requests": len(latencies),
        "wall_s": wall,
        "req_per_s": len(latencies) / wall,
        "rows_per_s": len(latencies) * n_rows / wall,
        "batches": batches,
        "rows_per_batch": len(latencies) * n_rows / max(batches, 1),
        **{f"p{q}_ms": 1000 * percentile(latencies, q / 100) for q in (50, 95, 99)},
    }


def kill_run(out_dir: Path, n_batches: int) -> dict:
    """One client, ``n_batches`` batches, a SIGKILL while the batch after half of them is in flight, a restart."""
    served = Served(out_dir).start()
    answers: list[dict] = []
    done = threading.Event()

    def client() -> None:
        for b in range(n_batches):
            answers.append(post_score(rows_of(b, 16), served.url, retry_s=300))
        done.set()

    thread = threading.Thread(target=client)
    thread.start()
    try:
        while len(answers) < n_batches // 2:
            time.sleep(0.005)
        t_kill = time.monotonic()
        served.kill()  # the client is sending (or waiting for) the next batch
        killed_after = len(answers)
        served.start()
        restarted_s = time.monotonic() - t_kill
        health = served.health()
        thread.join(600)
        final = served.health()
    finally:
        served.stop()
    expected_rewards, reward = in_process(n_batches)  # rows_of(b, 16) are the test's batches
    try:
        assert_same_state(served_state(out_dir), reward.state_dict())
        same = "equal (to float tolerance: every tensor within atol 1e-6, rtol 1e-5)"
    except AssertionError as err:
        same = f"DIFFERENT at {err}"
    rewards_equal = all(abs(x - y) <= 1e-5 for a, e in zip(answers, expected_rewards) for x, y in zip(a["rewards"], e))
    return {
        "batches_sent": n_batches,
        "answered": len(answers),
        "answered_before_kill": killed_after,
        "resumed_from_batch": health["batches"],
        "lost_updates_reported": health["lost_updates"],
        "replayed_answers": sum(bool(a.get("replayed")) for a in answers),
        "final_batches": final["batches"],
        "restart_s": restarted_s,
        "judge_state_vs_in_process": same,
        "rewards_equal_in_process": rewards_equal,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="benchmarks/results/serve_load.md")
    parser.add_argument("--requests", type=int, default=96, help="requests per concurrency level")
    parser.add_argument("--rows", type=int, default=16, help="rows per request (whole groups of 4)")
    parser.add_argument("--clients", default="1,8,32", help="concurrency levels")
    parser.add_argument("--level-s", type=float, default=120.0, help="time limit of one level")
    parser.add_argument("--kill-batches", type=int, default=8, help="batches of the kill run (0: no kill run)")
    args = parser.parse_args()
    command = "python benchmarks/serve_load.py " + shlex.join(sys.argv[1:])
    with tempfile.TemporaryDirectory() as tmp:
        served = Served(Path(tmp) / "load").start()
        try:
            post_score(rows_of(0, args.rows), served.url)  # the warm-up batch, outside the measurement
            levels = [
                load_level(served, int(c), args.requests, args.rows, args.level_s) for c in args.clients.split(",")
            ]
        finally:
            served.stop()
        kill = kill_run(Path(tmp) / "kill", args.kill_batches) if args.kill_batches else None
    lines = [
        f"# command: {command}",
        "",
        (
            f"Machine: {platform.machine()}, {os.cpu_count()} CPU cores, shared with other jobs while measured: the "
            f"absolute numbers are upper bounds on the latency and lower bounds on the throughput an idle machine "
            f"gives. Loopback only (127.0.0.1). Reward: RAL (ral_multiplication at test sizes, a tiny judge from "
            f"scratch), learning on every batch, a checkpoint written before each batch is answered; defaults "
            f"--max-batch-rows 512 --max-wait-ms 10."
        ),
        "",
        f"## Load: {args.requests} requests of {args.rows} rows per level",
        "",
        (
            "| clients | requests | wall s | requests/s | rows/s | judge batches | rows/batch | p50 ms | p95 ms "
            "| p99 ms |"
        ),
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in levels:
        lines.append(
            f"| {r['clients']} | {r['requests']} | {r['wall_s']:.1f} | {r['req_per_s']:.1f} | "
            f"{r['rows_per_s']:.0f} | {r['batches']} | {r['rows_per_batch']:.1f} | {r['p50_ms']:.0f} | "
            f"{r['p95_ms']:.0f} | {r['p99_ms']:.0f} |"
        )
    if kill:
        lines += ["", f"## SIGKILL mid-run and restart ({kill['batches_sent']} batches of 16 rows, one client)", ""]
        lines += [f"- {k}: {v}" for k, v in kill.items()]
    text = "\n".join(lines) + "\n"
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text)
    Path(args.out).with_suffix(".json").write_text(
        json.dumps({"command": command, "levels": levels, "kill": kill}, indent=1)
    )
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
