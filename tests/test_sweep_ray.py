"""The sweep on a real Ray cluster: two nodes on this machine's loopback (``ray.cluster_utils.Cluster``, a head
and a second node, one CPU each), running the smallest runs of ``tests/test_sweep.py`` made a little longer
(60 steps of ~0.1 s, a checkpoint every 4, so that a run can be lost between two of them).

* the runs on the cluster compute the same bits as the local executor's,
* a worker killed mid-run is retried, the run resumes from its checkpoint and its numbers are unchanged,
* a node removed mid-sweep has its run placed again on the other node, resumed, numbers unchanged,
* Ctrl-C (SIGINT) to a driver process leaves every run resumable, and the same sweep run again finishes them,
* the storage probe names a directory a node does not see.

Marked ``ray`` (``make test-ray``): excluded from the default suite.
"""

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from rewardzoo.core.checkpoint import checkpoints
from rewardzoo.core.logger import read_metrics
from rewardzoo.sweep import DONE, RayExecutor, RunSpec, attempts_file, run_sweep
from tests.conftest import FAST

# Every Ray process on loopback: Ray turns a 127.0.0.1 address into the machine's network address unless it
# is told the cluster stays on this machine (read when ray is imported; inherited by the nodes and drivers).
os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
ray = pytest.importorskip("ray")
from ray.cluster_utils import Cluster  # noqa: E402

pytestmark = pytest.mark.ray

STEPS = 60
NODE = {"num_cpus": 1, "node_ip_address": "127.0.0.1", "include_dashboard": False, "object_store_memory": 80 * 2**20}


def specs(root: Path, fast: list[str]) -> list[RunSpec]:
    """Two runs (seeds 0 and 1), checkpoints every 4 steps, sharing their step-0 work as a board's do."""
    tiny = (*fast, f"steps={STEPS}", "eval.every=20", "checkpoint_every=4", "keep_checkpoints=2")
    return [
        RunSpec(
            f"mult/rlvr/seed{seed}",
            "algorithms/rlvr_multiplication.yaml",
            root / f"seed{seed}",
            (*tiny, f"seed={seed}"),
        )
        for seed in (0, 1)
    ]


def computed(rows: list[dict]) -> list[dict]:
    """A run's metrics without its timings."""
    return [{k: v for k, v in r.items() if not k.startswith("time/")} for r in rows]


def attempts(spec: RunSpec) -> list[dict]:
    return [json.loads(line) for line in attempts_file(spec.run_dir / "train.log").read_text().splitlines()]


@pytest.fixture(scope="module")
def local(tmp_path_factory):
    """The local executor's results: what every test on the cluster must reproduce to the bit."""
    root = tmp_path_factory.mktemp("local")
    results = run_sweep(specs(root, FAST), jobs=2, progress=False, share_dir=root / "shared")
    return {name: computed(r.rows) for name, r in results.items()}


@pytest.fixture(scope="module")
def cluster():
    """A head and a second node on loopback, the test process connected as the driver; shut down after."""
    c = Cluster(initialize_head=True, head_node_args=dict(NODE))
    try:
        c.add_node(**NODE, resources={"second": 1})
        c.wait_for_nodes()
        ray.init(address=c.address, _node_ip_address="127.0.0.1", log_to_driver=False)
        yield c
    finally:
        ray.shutdown()
        c.shutdown()


@pytest.fixture
def two_nodes(cluster):
    """The cluster with its second node (added again when a test removed it)."""
    if not cluster.worker_nodes:
        cluster.add_node(**NODE, resources={"second": 1})
        cluster.wait_for_nodes()
    deadline = time.monotonic() + 60
    while sum(n["Alive"] for n in ray.nodes()) < 2 and time.monotonic() < deadline:
        time.sleep(0.5)
    return cluster


def wait_for(condition, what: str, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def mid_run(spec: RunSpec, before: int = STEPS) -> bool:
    """The run has a checkpoint before step ``before``: losing it now costs the steps since that checkpoint."""
    done = checkpoints(spec.run_dir)
    return bool(done) and int(done[-1].name.split("_")[1]) < before


def in_background(target) -> tuple[threading.Thread, list]:
    """Run ``target`` on a thread; its result, or the exception it raised, lands in the list."""
    out: list = []

    def body() -> None:
        try:
            out.append(target())
        except Exception as err:  # noqa: BLE001 - the test reads it
            out.append(err)

    thread = threading.Thread(target=body, daemon=True)
    thread.start()
    return thread, out


def test_runs_on_two_nodes_equal_the_local_executors(two_nodes, local, tmp_path, fast_overrides):
    board = specs(tmp_path, fast_overrides)
    results = run_sweep(board, progress=False, share_dir=tmp_path / "shared", executor=RayExecutor())
    assert {name: computed(r.rows) for name, r in results.items()} == local
    nodes = {attempts(s)[0]["node"] for s in board}
    assert len(nodes) == 2, "the two runs (one CPU each) were not spread over the two nodes"
    assert all(json.loads((s.run_dir / DONE).read_text())["executor"] == "ray" for s in board)


def test_a_killed_worker_is_retried_and_the_run_resumes(two_nodes, local, tmp_path, fast_overrides):
    board = specs(tmp_path, fast_overrides)
    victim = board[0]
    thread, out = in_background(
        lambda: run_sweep(board, progress=False, share_dir=tmp_path / "shared", executor=RayExecutor(max_retries=2))
    )
    wait_for(lambda: mid_run(victim), "a checkpoint of the first run")
    os.kill(attempts(victim)[0]["pid"], signal.SIGKILL)  # the Ray worker running it
    thread.join(600)
    assert out, "the sweep did not finish"
    assert {name: computed(r.rows) for name, r in out[0].items()} == local
    tries = attempts(victim)
    assert len(tries) == 2 and tries[1]["resumed"] and not tries[0]["resumed"]
    assert json.loads((victim.run_dir / DONE).read_text())["attempts"] == 2
    assert "Resum" in (victim.run_dir / "train.log").read_text() or tries[1]["resumed"]


def test_a_removed_node_has_its_run_placed_again(two_nodes, local, tmp_path, fast_overrides):
    board = specs(tmp_path, fast_overrides)
    second = next(iter(two_nodes.worker_nodes))
    thread, out = in_background(
        lambda: run_sweep(board, progress=False, share_dir=tmp_path / "shared", executor=RayExecutor(max_retries=2))
    )
    wait_for(lambda: all(attempts_file(s.run_dir / "train.log").is_file() for s in board), "both runs to start")
    on_second = next(s for s in board if attempts(s)[0]["node"] == second.node_id)
    wait_for(lambda: mid_run(on_second), "a checkpoint of the run on the second node")
    two_nodes.remove_node(second)
    thread.join(600)
    assert out, "the sweep did not finish"
    assert {name: computed(r.rows) for name, r in out[0].items()} == local
    tries = attempts(on_second)
    assert len(tries) == 2 and tries[1]["resumed"] and tries[1]["node"] != second.node_id


DRIVER = textwrap.dedent("""
    import signal
    signal.signal(signal.SIGINT, signal.default_int_handler)  # Ctrl-C as in a terminal (a background job ignores it)
    import sys
    from pathlib import Path
    import ray
    sys.path.insert(0, {tests!r})
    from test_sweep_ray import specs
    from rewardzoo.sweep import RayExecutor, run_sweep
    ray.init(address={address!r}, _node_ip_address="127.0.0.1", log_to_driver=False)
    run_sweep(specs(Path({root!r}), {fast!r}), progress=False, share_dir=Path({root!r}) / "shared",
              executor=RayExecutor())
""")


def test_ctrl_c_on_the_driver_leaves_resumable_runs(two_nodes, local, tmp_path, fast_overrides):
    board = specs(tmp_path, fast_overrides)
    code = DRIVER.format(
        tests=str(Path(__file__).parent), address=two_nodes.address, root=str(tmp_path), fast=list(fast_overrides)
    )
    driver = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        early = STEPS // 3  # the run has most of its steps ahead: the interrupt lands while it trains
        wait_for(lambda: any(mid_run(s, early) for s in board) or driver.poll() is not None, "a checkpoint of a run")
        assert driver.poll() is None, driver.communicate()[0]
        midway = next((s for s in board if mid_run(s, early)), None)
        driver.send_signal(signal.SIGINT)
        output = driver.communicate(timeout=300)[0]
    finally:
        if driver.poll() is None:
            driver.kill()
    assert driver.returncode != 0 and "KeyboardInterrupt" in output, output
    stopped = [
        s
        for s in board
        if (s.run_dir / "train.log.status").is_file() and (s.run_dir / "train.log.status").read_text() == "130"
    ]
    assert midway is not None and midway in stopped, "the run under way did not stop as on Ctrl-C (exit 130)"
    # the other run finished, or stopped with a checkpoint, or before its first (then it starts over): the same
    # sweep run again finishes both with the local executor's numbers, the run stopped midway resumed
    assert not (midway.run_dir / DONE).exists() and checkpoints(midway.run_dir)
    results = run_sweep(board, progress=False, share_dir=tmp_path / "shared", executor=RayExecutor())
    assert {name: computed(r.rows) for name, r in results.items()} == local
    assert attempts(midway)[-1]["resumed"]


def test_the_storage_probe_names_a_directory_a_node_does_not_see(two_nodes, tmp_path):
    """On one machine every node sees every directory, so the refusal is shown on the probe itself: a
    directory without the driver's marker (a node mounting other storage there) is named, and the
    message of the check says what to change."""
    from rewardzoo.sweep import _probe

    seen, unseen = tmp_path / "seen", tmp_path / "unseen"
    seen.mkdir(), unseen.mkdir()
    (seen / ".rewardzoo-probe-t0k3n").write_text("t0k3n")
    reply = _probe([str(seen), str(unseen)], "t0k3n", str(tmp_path / "no-such-cwd"))
    assert reply["missing"] == [str(unseen), str(tmp_path / "no-such-cwd")]
    RayExecutor().check_storage([seen])  # both nodes see it: no error, and no marker left behind
    assert {p.name for p in seen.iterdir()} == {".rewardzoo-probe-t0k3n", ".rewardzoo-probe-t0k3n-" + reply["node"]}


def test_a_run_lost_more_often_than_retried_is_named_and_the_others_finish(two_nodes, local, tmp_path, fast_overrides):
    board = specs(tmp_path, fast_overrides)
    victim, other = board
    thread, out = in_background(
        lambda: run_sweep(board, progress=False, share_dir=tmp_path / "shared", executor=RayExecutor(max_retries=0))
    )
    wait_for(lambda: attempts_file(victim.run_dir / "train.log").is_file(), "the first run to start")
    os.kill(attempts(victim)[0]["pid"], signal.SIGKILL)
    thread.join(600)
    assert out and isinstance(out[0], RuntimeError), out
    assert f"these runs failed: {victim.name} (train, lost 1 time" in str(out[0])
    assert f"log {victim.run_dir / 'train.log'}" in str(out[0])
    assert (other.run_dir / DONE).is_file() and not (victim.run_dir / DONE).exists()
    assert computed(read_metrics(other.run_dir / "metrics.jsonl")) == local[other.name]
