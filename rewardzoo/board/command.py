"""``rewardzoo leaderboard``: every reward head-to-head on one core, under the fair comparison protocol.

    rewardzoo leaderboard --preset cpu --seeds 5 --out benchmarks/results/leaderboard
    rewardzoo leaderboard --preset cpu --plan                       # the grid and every run, nothing trained
    rewardzoo leaderboard --preset cpu --tune-only                  # the tuning stage alone: TUNING.md
    rewardzoo leaderboard --preset cpu --quick --out /tmp/lb        # 1 seed, short: the command's own test
    rewardzoo leaderboard --preset cpu --add-method "multiplication:My method:my.yaml:grpo.beta=0"
    rewardzoo leaderboard --report-from benchmarks/results/leaderboard/leaderboard.csv   # LEADERBOARD.md from the CSV
    rewardzoo leaderboard --reported-seeds 5,6 --out part2 ...     # more seeds of the same board, in a part
    rewardzoo leaderboard --report-from part1/leaderboard.csv part2/leaderboard.csv --out board   # the parts merged

The command line of :func:`rewardzoo.board.report.leaderboard` (the protocol and what it writes: the
package's docstring, :mod:`rewardzoo.board`).
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from rewardzoo.board.report import check_seeds, default_tune_seeds, leaderboard, plan, report_from_csv
from rewardzoo.board.rows import PRESETS, QUICK_LR_FACTORS
from rewardzoo.protocol import GRID_EXTENSION, TUNING_SEEDS, Grid, OwnKey, Setting
from rewardzoo.sweep import add_executor_arguments, executor_from_args

DEFAULT_OUT = Path("benchmarks/results/leaderboard")


def _by_hand(texts: list[str]) -> dict[tuple[str, str], Setting]:
    """``--choose TASK/METHOD=key=value ...``: settings taken as given, not tuned."""
    out = {}
    for text in texts:
        target, _, overrides = text.partition("=")
        task, _, method = target.partition("/")
        if not task or not method or "=" not in overrides:
            raise ValueError(f"--choose takes TASK/METHOD=key=value [key=value ...]; got {text!r}")
        out[(task, method)] = Setting(tuple(overrides.split()))
    return out


def seed_list(text: str) -> list[int]:
    """``--tuning-seeds 2000,2001,2002``: the seeds, in order; ``12-53`` stands for 12, 13, …, 53."""
    try:
        found = []
        for part in (x.strip() for x in text.split(",") if x.strip()):
            low, dash, high = part.partition("-")
            found += list(range(int(low), int(high) + 1)) if dash and low else [int(part)]
        return found
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"seeds are comma-separated integers or ranges, e.g. 2000,2001,2002 or 12-53; got {text!r}"
        ) from None


def main(argv: list[str] | None = None) -> int:
    """``rewardzoo leaderboard`` (also reachable as ``python -m rewardzoo.board``)."""
    parser = argparse.ArgumentParser(prog="rewardzoo leaderboard", description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", default="cpu", choices=list(PRESETS))
    parser.add_argument("--seeds", type=int, default=5, help="seeds 0..N-1 (--quick: 1)")
    parser.add_argument(
        "--reported-seeds",
        type=seed_list,
        metavar="S1,S2,...",
        help="the reported seeds themselves instead of 0..N-1, e.g. 5,6 (a board extended in parts; "
        "--report-from merges the parts' CSVs)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        help="where LEADERBOARD.md, leaderboard.csv, the curves and TUNING.md go (default "
        f"{DEFAULT_OUT}; merging several --report-from CSVs: required)",
    )
    parser.add_argument(
        "--runs",
        type=Path,
        default=Path("runs/leaderboard"),
        help="where the run directories go (finished runs there, tuning runs too, are reused)",
    )
    parser.add_argument("--tasks", nargs="+", help="only these tasks' entries (default: all of the preset)")
    parser.add_argument("--jobs", type=int, default=2, help="runs in parallel, one thread each (default: 2 cores)")
    parser.add_argument(
        "--quick",
        action="store_true",
        help="1 seed, a few steps per run, a 2-point grid, no verdicts: checks the command itself",
    )
    parser.add_argument(
        "--add-method",
        action="append",
        default=[],
        metavar="TASK:LABEL:SOURCE[:OVERRIDES]",
        help="add a row: SOURCE a recipe (YAML path or shipped name) or MODULE:FUNCTION, a reward "
        "factory(cfg, ctx); OVERRIDES space-separated key=value (repeatable)",
    )
    parser.add_argument(
        "--lr-factors",
        type=float,
        nargs="+",
        help=f"the learning-rate grid, × the task's shared "
        f"grpo.lr (default {' '.join(map(str, Grid().lr_factors))}; --quick: "
        f"{' '.join(map(str, QUICK_LR_FACTORS))})",
    )
    parser.add_argument(
        "--tune-key",
        action="append",
        default=[],
        metavar="TASK/METHOD=KEY=V1,V2",
        help="a method's own tuned key (every tuned method of the task needs one of one size)",
    )
    parser.add_argument(
        "--tune-seeds", type=int, help=f"tuning seeds 1000..1000+N-1 (default {TUNING_SEEDS}; --quick: 1)"
    )
    parser.add_argument(
        "--tuning-seeds",
        type=seed_list,
        help="the tuning seeds themselves, e.g. 2000,2001,2002 (a second board on disjoint tuning seeds)",
    )
    parser.add_argument(
        "--grid-extend",
        type=int,
        help=f"steps the learning rates may extend beyond each end of "
        f"the grid while a row's choice sits there (default {GRID_EXTENSION}; --quick: 0)",
    )
    parser.add_argument(
        "--choose",
        action="append",
        default=[],
        metavar="TASK/METHOD=key=value",
        help="take this setting for the row instead of tuning it (marked 'by hand' in TUNING.md)",
    )
    parser.add_argument("--no-tune", action="store_true", help="train the recipes' settings (not the fair protocol)")
    parser.add_argument(
        "--tune-only",
        action="store_true",
        help="run the tuning stage alone and write TUNING.md (the board reuses its runs later)",
    )
    parser.add_argument(
        "--keep-checkpoints",
        action="store_true",
        help="keep every run's checkpoints and the runs' shared work (by default a finished run keeps only its "
        "trained policy, RUN_DIR/policy, and runs/shared goes once the board is written: a real model's "
        "checkpoint with a learned judge is gigabytes)",
    )
    parser.add_argument("--plan", action="store_true", help="print the grid and the runs, train nothing")
    add_executor_arguments(parser)
    parser.add_argument(
        "--report-from",
        type=Path,
        nargs="+",
        metavar="CSV",
        help="rewrite LEADERBOARD.md beside this leaderboard.csv from it alone, train nothing; several CSVs "
        "(one board run in parts over disjoint seeds) merge into --out's leaderboard.csv and LEADERBOARD.md",
    )
    parser.add_argument(
        "--registered-seeds",
        type=seed_list,
        help="with --report-from: the board's pre-registered seeds, e.g. 12-53; a read on fewer is refused "
        "unless --interim",
    )
    parser.add_argument(
        "--interim",
        action="store_true",
        help="with --report-from and --registered-seeds: read before every pre-registered seed has landed, "
        "labelled as an interim read (never a verdict)",
    )
    args = parser.parse_args(argv)
    command = "rewardzoo leaderboard " + " ".join(shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:]))
    if args.interim and args.registered_seeds is None:
        parser.error("--interim labels a read on part of the pre-registered seeds: give them with --registered-seeds")
    if args.report_from is not None:
        if len(args.report_from) > 1 and args.out is None:
            parser.error("several --report-from CSVs merge into a new board: name its folder with --out DIR")
        try:
            print(report_from_csv(args.report_from, command, args.out, args.registered_seeds, args.interim).read_text())
        except (OSError, ValueError) as err:
            parser.error(str(err))
        return 0
    seeds = [0] if args.quick else args.reported_seeds or list(range(args.seeds))
    factors = tuple(args.lr_factors) if args.lr_factors else QUICK_LR_FACTORS if args.quick else Grid().lr_factors
    if args.tune_only and args.no_tune:
        parser.error("--tune-only runs the tuning stage, which --no-tune turns off; give one of them")
    try:
        extend = args.grid_extend if args.grid_extend is not None else 0 if args.quick else GRID_EXTENSION
        grid = Grid(factors, tuple(OwnKey.parse(t) for t in args.tune_key), extend)
        by_hand = _by_hand(args.choose)
        executor = executor_from_args(args)
    except (ValueError, ImportError) as err:
        parser.error(str(err))
    tune_seeds = args.tuning_seeds or default_tune_seeds(args.quick, args.tune_seeds)
    try:
        check_seeds(seeds, tune_seeds)
    except ValueError as err:
        parser.error(str(err))
    if args.plan:
        print(plan(args.preset, args.tasks, args.add_method, grid, seeds, tune_seeds, by_hand))
        return 0
    path = leaderboard(
        args.preset,
        seeds,
        args.out or DEFAULT_OUT,
        args.jobs,
        args.quick,
        command,
        runs=args.runs,
        tasks=args.tasks,
        grid=grid,
        tune_seeds=tune_seeds,
        tuning=not args.no_tune,
        by_hand=by_hand,
        added=args.add_method,
        tune_only=args.tune_only,
        executor=executor,
        keep_checkpoints=args.keep_checkpoints,
        part=args.reported_seeds is not None,
    )
    print(path.read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
