"""The full board's wall time under the tuning protocol, estimated from a measured board's per-run costs.

    python benchmarks/board_cost.py --board benchmarks/results/leaderboard --out benchmarks/results/tuning_cost.md

Reads the board's ``TIME.md`` (mean wall seconds of a board run per task and row, and the summed run time
of its board and tuning runs) and ``tuning.csv`` (its tuning stage: which rows chose a rate at the grid's
edge), and counts the runs the tuning stage makes now (``rewardzoo.protocol``): per trained row, every
one of its ``n`` settings at the first tuning seed and the better ⌈n/2⌉ at the other ``k − 1``, and for a row
whose choice sits at an edge, extension steps of at most ``k`` runs each.  A tuning run costs what that
board measured a tuning run to cost relative to a board run (one ratio for every row: the boards' summed
times over their run counts), and the wall time is the summed run time over ``--jobs`` processes times the
measured board's own ratio of wall time to that (``--wall-min``: its measured wall time).
"""

from __future__ import annotations

import argparse
import csv
import math
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from rewardzoo.board import PRESETS, slug  # noqa: E402


def read_time(path: Path) -> tuple[dict[tuple[str, str], tuple[int, float]], float, float]:
    """Per (task, row slug): (board runs, mean wall s); the summed board and tuning minutes."""
    text = path.read_text()
    per = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 4 and re.fullmatch(r"\d+", cells[2] or "x"):
            per[(cells[0], cells[1])] = (int(cells[2]), float(cells[3]))
    summed = re.search(r"board runs ([\d.]+) min, tuning runs ([\d.]+) min", text)
    if summed is None:
        raise ValueError(f"{path}: no line 'Summed wall time: board runs X min, tuning runs Y min'")
    return per, float(summed.group(1)), float(summed.group(2))


def edge_rows(path: Path) -> dict[tuple[str, str], bool]:
    """Per (task, method) of a tuning.csv: whether its chosen learning rate is the grid's highest or lowest."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    out = {}
    for task, method in dict.fromkeys((r["task"], r["method"]) for r in rows):
        mine = [r for r in rows if (r["task"], r["method"]) == (task, method)]
        rates = {float(r["setting"].split("=")[1]) for r in mine if r["setting"].startswith("grpo.lr=")}
        chosen = [float(r["setting"].split("=")[1]) for r in mine if r["chosen"] == "True"]
        out[(task, method)] = bool(chosen) and len(rates) > 1 and chosen[0] in (min(rates), max(rates))
    return out


def main(argv: list[str] | None = None) -> int:
    """Print (and write) the estimate."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--board", type=Path, default=Path("benchmarks/results/leaderboard"))
    parser.add_argument("--wall-min", type=float, default=105.0, help="the measured board's wall time (minutes)")
    parser.add_argument("--tuning-runs", type=int, default=75, help="the measured board's tuning runs")
    parser.add_argument("--points", type=int, default=3, help="settings per row before any extension")
    parser.add_argument("--tune-seeds", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    per, board_min, tuning_min = read_time(args.board / "TIME.md")
    edges = edge_rows(args.board / "tuning.csv")
    board_runs = sum(n for n, _ in per.values())
    ratio = (tuning_min / args.tuning_runs) / (board_min / board_runs)  # a tuning run over a board run
    overhead = args.wall_min / ((board_min + tuning_min) / args.jobs)
    n, k = args.points, args.tune_seeds
    base_runs = n + math.ceil(n / 2) * (k - 1)
    command = f"python benchmarks/board_cost.py --board {args.board}" + (f" --out {args.out}" if args.out else "")
    lines = [
        f"# command: {command}",
        "",
        f"Measured board: `{args.board}` ({board_runs} board runs, {board_min:.1f} min summed; "
        f"{args.tuning_runs} tuning runs, {tuning_min:.1f} min summed; {args.wall_min:.0f} min of wall time). "
        f"A tuning run costs {ratio:.2f} of a board run of its row; wall time = summed / {args.jobs} jobs × "
        f"{overhead:.3f} (that board's own ratio).",
        "",
        f"Tuning now: {n} settings per row, every one at the first of {k} tuning seeds, the better "
        f"{math.ceil(n / 2)} at the other {k - 1}: {base_runs} runs per trained row; a row whose choice sat at "
        f"the grid's edge on the measured board is charged one extension step at its most ({k} runs).",
        "",
        "| task | row | board run s | at the edge | tuning runs | tuning min |",
        "| --- | --- | ---: | --- | ---: | ---: |",
    ]
    tuning_s = 0.0
    tuning_count = 0
    for e in PRESETS["cpu"]:
        if not e.trained:
            continue
        _, mean = per[(e.task, slug(e.method))]
        edge = edges.get((e.task, e.method), False)
        runs = base_runs + (k if edge else 0)
        tuning_s += runs * mean * ratio
        tuning_count += runs
        lines.append(
            f"| {e.task} | {e.method} | {mean:.1f} | {'yes' if edge else ''} | {runs} | "
            f"{runs * mean * ratio / 60:.1f} |"
        )
    tuning_wall = tuning_s / 60 / args.jobs * overhead
    board_wall = board_min / args.jobs * overhead
    lines += [
        "",
        f"Tuning: {tuning_count} runs, {tuning_s / 60:.1f} min summed, **{tuning_wall:.0f} min** of wall "
        f"time; board: {board_runs} runs, {board_min:.1f} min summed, **{board_wall:.0f} min**; the stability "
        f"check reads the tuning runs (no run). **Total ≈ {tuning_wall + board_wall:.0f} min "
        f"({(tuning_wall + board_wall) / 60:.2f} h)**.",
        f"Every row at the extension bound instead (2 steps each way possible, charged 2 steps × {k} runs): "
        f"+{len([e for e in PRESETS['cpu'] if e.trained]) * 2 * k} runs at most.",
    ]
    text = "\n".join(lines) + "\n"
    if args.out:
        args.out.write_text(text)
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
