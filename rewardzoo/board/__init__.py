"""The leaderboard (``rewardzoo leaderboard``): every reward head-to-head on one core, under the fair comparison
protocol.

    rewardzoo leaderboard --preset cpu --seeds 5 --out benchmarks/results/leaderboard
    rewardzoo leaderboard --preset cpu --plan                       # the grid and every run, nothing trained
    rewardzoo leaderboard --preset cpu --tune-only                  # the tuning stage alone: TUNING.md
    rewardzoo leaderboard --preset cpu --quick --out /tmp/lb        # 1 seed, short: the command's own test
    rewardzoo leaderboard --preset cpu --add-method "multiplication:My method:my.yaml:grpo.beta=0"

A preset is a literal list of :class:`Entry` rows (a task, a method label, a recipe, overrides and its
role: method, control or positive control).  The protocol (:mod:`rewardzoo.protocol`):

1. **Equal twins**: every entry of a task resolves to the same configuration outside the reward
   (:func:`check_twins`, before any work; exceptions only by :data:`TWIN_EXCEPTIONS`, with reasons);
2. **tuning**: each trained entry runs over the same :class:`~rewardzoo.protocol.Grid` on the task's
   validation split at tuning seeds disjoint from the reported ones, and its setting is chosen from
   those validation numbers alone (``TUNING.md``, ``tuning.csv``); the board then trains the chosen
   settings at the reported seeds and reports the **test** split only;
3. **controls as rows**: each learned reward beside the control that removes its learned part and a
   positive control per task (:data:`POSITIVE_CONTROLS`);
4. **verdicts need power**: a claim (:data:`CLAIMS`) gets a verdict only from ≥ 3 seeds and when its
   task's positive control shows its effect; ``--quick`` prints and writes none.

Runs go through :func:`rewardzoo.sweep.run_sweep`: in parallel up to ``--jobs`` processes, one
thread each, finished runs reused (a half-finished board, and its tuning, resume), one progress bar.
Then:

- ``LEADERBOARD.md``: one table per task, every column mean ± 95% t-interval over seeds of the
  run's final test value (held-out metrics, hack rate, token entropy, wall-clock), each row with
  its role and chosen setting; the best method of a column is **bold** only where its interval
  separates from the runner-up's; then the positive controls and one line per claim — control,
  verdict, interval (the t-interval over seeds of each seed's effect, as mean [low, high]), n;
- ``leaderboard.csv``: one row per run, every final metric and the hash of its resolved config,
- ``curves_<task>.png``: each method's headline metric over steps, mean and 95% band over seeds,
- ``TUNING.md`` and ``tuning.csv``: the grid, every tuning run's validation value, each choice.

One idea per file, each layer importing only those below it (import-linter checks it):

- :mod:`~rewardzoo.board.command`: the command line (``rewardzoo leaderboard``);
- :mod:`~rewardzoo.board.study`: a study as a short declaration (its rows, its knob, its seeds) over the path
  every study shares (the benchmark scripts' ``Study``);
- :mod:`~rewardzoo.board.report`: a board from end to end (:func:`leaderboard`) and its :func:`plan`;
- :mod:`~rewardzoo.board.claims`: the positive controls and the claims, and their verdict lines;
- :mod:`~rewardzoo.board.table`: the tables, ``leaderboard.csv`` and the curves;
- :mod:`~rewardzoo.board.tuning`: the tuning stage;
- :mod:`~rewardzoo.board.runs`: each row's runs, their final values, the twin check, the board's rows;
- :mod:`~rewardzoo.board.rows`: the presets' rows, each task's table and positive control.

The names below are the package's public face (``from rewardzoo import board``).
"""

from rewardzoo.board.claims import (
    CLAIMS,
    DIVERGENCE_OF,
    Claim,
    claim_lines,
    each_g_descends_its_divergence,
    each_g_descends_its_own_most,
    frozen_judge_collapses,
    frozen_judge_is_exploited,
    positive_control,
    ral_approaches_rlvr,
    ral_judge_beats_format_only,
    rcrl_beats_its_absolute_twin,
    rcrl_beats_rar,
    rcrl_keeps_entropy,
    varl_resists_the_proxy,
)
from rewardzoo.board.command import main
from rewardzoo.board.report import leaderboard, plan, report_from_csv
from rewardzoo.board.rows import (
    BOARDS,
    CPU_SETTINGS,
    GPU,
    HACKABLE_SETTINGS,
    POSITIVE_CONTROLS,
    PRESETS,
    QUICK,
    QUICK_LR_FACTORS,
    TWIN_EXCEPTIONS,
    Board,
    Entry,
    PositiveControl,
    entry,
    recipe,
    task_settings,
)
from rewardzoo.board.runs import (
    SHARED,
    board_entries,
    check_twins,
    config_hash,
    final,
    parse_added,
    run_spec,
    slug,
    specs,
)
from rewardzoo.board.table import Table, markdown, plot_curves, tables, tables_from_csv, write_csv
from rewardzoo.board.tuning import base_lr, grid_points, start_order, tune, tuning_specs, validation_rows

__all__ = [
    "BOARDS",
    "CLAIMS",
    "CPU_SETTINGS",
    "DIVERGENCE_OF",
    "GPU",
    "HACKABLE_SETTINGS",
    "POSITIVE_CONTROLS",
    "PRESETS",
    "QUICK",
    "QUICK_LR_FACTORS",
    "SHARED",
    "TWIN_EXCEPTIONS",
    "Board",
    "Claim",
    "Entry",
    "PositiveControl",
    "Table",
    "base_lr",
    "board_entries",
    "check_twins",
    "claim_lines",
    "config_hash",
    "each_g_descends_its_divergence",
    "each_g_descends_its_own_most",
    "entry",
    "final",
    "frozen_judge_collapses",
    "frozen_judge_is_exploited",
    "grid_points",
    "leaderboard",
    "main",
    "markdown",
    "parse_added",
    "plan",
    "plot_curves",
    "positive_control",
    "ral_approaches_rlvr",
    "ral_judge_beats_format_only",
    "rcrl_beats_its_absolute_twin",
    "rcrl_beats_rar",
    "rcrl_keeps_entropy",
    "recipe",
    "report_from_csv",
    "run_spec",
    "slug",
    "specs",
    "start_order",
    "tables",
    "tables_from_csv",
    "task_settings",
    "tune",
    "tuning_specs",
    "validation_rows",
    "varl_resists_the_proxy",
    "write_csv",
]
