"""Where a leaderboard's time goes: per task and method, the mean wall time of a board run and its
parts — rollouts, reward (a learned reward's scoring and updates), policy steps, and the rest
(evaluations, the judge's warm-up, process start) — read from the run directories a board wrote.

    python benchmarks/board_time.py --runs runs/lb_lean --out benchmarks/results/history/leaderboard_lean/TIME.md
    python benchmarks/board_time.py --runs runs/leaderboard --board benchmarks/results/leaderboard  # its runs only

A board run's directory is ``<runs>/<task>/<method>/<setting>/seed<k>/`` (tuning runs under
``<runs>/tuning/`` are counted apart); its ``sweep_done.json`` holds the run's wall time and its
``metrics.jsonl`` the per-step ``time/generate_s``, ``time/reward_s`` and ``time/policy_s`` the
trainer logs.  Several boards may share one ``--runs`` folder (two tuning-seed sets, say); ``--board`` counts
only the runs one board's ``leaderboard.csv`` (task, method, setting, seed) and ``tuning.csv`` name.
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

PARTS = ("time/generate_s", "time/reward_s", "time/policy_s")


def run_times(run_dir: Path) -> tuple[float, ...]:
    """(wall, rollout, reward, policy step) seconds of one finished run."""
    wall = json.loads((run_dir / "sweep_done.json").read_text())["wall_s"]
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines() if line.strip()]
    return (wall, *(sum(r.get(key, 0.0) for r in rows) for key in PARTS))


def board_runs(board: Path) -> set[tuple[str, ...]]:
    """The run directories, relative to the board's ``--runs``, that one board's ``leaderboard.csv`` and
    ``tuning.csv`` name: ``(task, method, setting, seed<k>)`` and ``("tuning", task, method, setting, seed<k>)``."""
    from rewardzoo.board.runs import slug  # here, not at the top: the package pulls in torch (~5 s), which the
    from rewardzoo.protocol import Setting  # report without --board, reading JSON files only, does not need

    def rows(name: str) -> list[dict[str, str]]:
        path = board / name
        if not path.is_file():
            raise SystemExit(f"--board {board}: no {name} there; give the folder a `rewardzoo leaderboard` wrote")
        with open(path, newline="") as f:
            return list(csv.DictReader(f))

    def where(r: dict[str, str]) -> tuple[str, ...]:
        setting = Setting.from_label(r["setting"]).slug
        return (r["task"], slug(r["method"]), setting, f"seed{r['seed']}")

    return {where(r) for r in rows("leaderboard.csv")} | {("tuning", *where(r)) for r in rows("tuning.csv")}


def board_table(runs: Path, only: set[tuple[str, ...]] | None = None) -> tuple[list[str], float, float]:
    """The report's table lines, the summed wall time of the board runs and of the tuning runs (seconds);
    with ``only`` (:func:`board_runs`), those runs alone."""
    board, tuning = defaultdict(list), 0.0
    for done in sorted(runs.glob("**/sweep_done.json")):
        run_dir = done.parent
        parts = run_dir.relative_to(runs).parts
        if only is not None and parts not in only:
            continue
        if parts[0] == "tuning":
            tuning += json.loads(done.read_text())["wall_s"]
        elif len(parts) >= 4:
            board[(parts[0], parts[1])].append(run_times(run_dir))
    if not board:
        raise SystemExit(
            f"no finished board run under {runs} (expected <task>/<method>/<setting>/seed<k>/sweep_done.json)"
        )
    lines = [
        "| task | method | runs | wall s | rollout s | reward s | policy step s | rest s (evaluation, judge warm-up, start) |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for (task, method), times in sorted(board.items()):
        wall, gen, reward, policy = (statistics.mean(t[i] for t in times) for i in range(4))
        lines.append(
            f"| {task} | {method} | {len(times)} | {wall:.1f} | {gen:.1f} | {reward:.1f} | {policy:.1f} | "
            f"{wall - gen - reward - policy:.1f} |"
        )
    return lines, sum(t[0] for times in board.values() for t in times), tuning


def main(argv: list[str] | None = None) -> int:
    """Print (and optionally write) the report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", required=True, help="the board's --runs directory")
    parser.add_argument("--out", help="also write the report to this file")
    parser.add_argument("--board", type=Path, help="count only this board's runs (its leaderboard.csv, tuning.csv)")
    args = parser.parse_args(argv)
    argv = sys.argv[1:] if argv is None else argv
    table, board_s, tuning_s = board_table(Path(args.runs), board_runs(args.board) if args.board else None)
    lines = [
        f"# command: python benchmarks/board_time.py {' '.join(argv)}",
        "",
        "Mean seconds per board run; the parts are the trainer's own per-step timers summed over the run.",
        "",
        *table,
        "",
        f"Summed wall time: board runs {board_s / 60:.1f} min, tuning runs {tuning_s / 60:.1f} min.",
        "",
    ]
    print("\n".join(lines))
    if args.out:
        Path(args.out).write_text("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
