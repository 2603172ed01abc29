"""A study as a short declaration: its rows, the variable that decides its claim and its seeds, run by the one
path every study shares.

A benchmark script declares what its study is, as data::

    STUDY = Study(
        name="rcrl",
        script="benchmarks/rcrl.py",
        task="rubric_writing",
        rows=(Entry("rubric_writing", "RcRL", "rcrl_rubric_writing"), ...),
        seeds=(0, 1, 2, 3, 4),
        knob=Knob("miscalibration m", {0.0: (...), 2.0: (...)}, home=2.0, rows=("RcRL", "Absolute RaR")),
    )

and this module does what every study does the same way:

- **its command line** (:func:`arguments`): ``--out`` (finished runs are reused), ``--results``, ``--settings``,
  ``--seeds``, ``--levels`` (with a knob), ``--rows``, ``--set``, ``--quick`` and the executor's flags;
- **each row's settings** from the fair protocol's tuning stage (:meth:`Study.settings`): a leaderboard's
  ``tuning.csv`` gives the settings the board chose for the study's task on its validation split
  (:func:`rewardzoo.protocol.read_settings`), so nothing a study trains was chosen from a test reading; a
  row the board has not takes the settings of the row it varies (:attr:`Study.borrow`), and a row may take
  several names' settings one after the other (:attr:`Study.layers`: a family's, then its own), under the
  names the study declares (:attr:`Study.names`, e.g. the board's rows when the study's rows are not);
- **its runs** (:meth:`Study.runs`): every row at every level of the knob it varies over (the others at the
  knob's ``home``, the board's level) and every seed (a row of :attr:`Study.few` on the first few of them
  only), in a directory per level, row, settings and seed
  (``layout="study"``), or in the board's own directories (``layout="board"``: a study of a board's rows,
  whose finished runs it then shares with ``rewardzoo leaderboard --runs``);
- **the sweep** (:func:`sweep`), which first completes the runs it makes with what a declaration cannot
  know until then (:attr:`Study.resolve`: e.g. a warm start a row needs, trained on demand), and **the report's
  first lines** (:func:`header`): the exact command, and a PILOT line when the call is smaller than the study
  it declares.

What a study reads from its runs and how it states its claim stays in its script, beside the declaration.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from rewardzoo.board.rows import Entry
from rewardzoo.board.runs import slug, specs
from rewardzoo.protocol import Choice, Setting, overrides_tag, read_settings
from rewardzoo.sweep import RunResult, RunSpec, add_executor_arguments, executor_from_args, run_sweep

LAYOUTS = ("study", "board")
"""Where a study's runs go: ``study``, ``OUT/[level]/<row><settings hash>/seed<s>`` with the study's own
overrides; ``board``, the leaderboard's ``OUT/<task>/<row>/<setting>/seed<s>`` with the board's."""


@dataclass(frozen=True)
class Knob:
    """The variable a study varies to decide its claim: each level's overrides of every run at it."""

    name: str
    """What the knob is, for the command line's help (e.g. ``miscalibration m``)."""
    levels: Mapping[float, tuple[str, ...]]
    home: float
    """The level the board and the recipes sit at: rows outside :attr:`rows` run there only."""
    rows: tuple[str, ...] | None = None
    """The rows run at every level (None: all)."""
    folder: str = "{:g}"
    """The directory of a level's runs, formatted with the level."""


@dataclass(frozen=True)
class Quick:
    """A study's pilot size (``--quick``): overrides added to every run, and fewer seeds, levels or rows."""

    overrides: tuple[str, ...] = ()
    seeds: tuple[int, ...] | None = None
    levels: tuple[float, ...] | None = None
    rows: tuple[str, ...] | None = None

    def __str__(self) -> str:
        parts = [
            *self.overrides,
            *([f"seeds {' '.join(map(str, self.seeds))}"] if self.seeds else []),
            *([f"levels {' '.join(f'{m:g}' for m in self.levels)}"] if self.levels else []),
            *([f"rows {', '.join(self.rows)}"] if self.rows else []),
        ]
        return "; ".join(parts) or "the full size"


@dataclass(frozen=True)
class RunKey:
    """One run of a study: a row at a level of the knob (None without one) and a seed."""

    level: float | None
    row: str
    seed: int


@dataclass(frozen=True)
class Study:
    """A study, declared: the rows it trains on one task, its seeds, the knob it varies and where its runs go."""

    name: str
    """The stem of its result files and the label of its progress bar."""
    script: str
    """The script that runs it, as the report's command names it (``benchmarks/rcrl.py``)."""
    task: str
    """The board task whose tuning stage supplies each row's settings (``--settings tuning.csv``)."""
    rows: tuple[Entry, ...]
    seeds: tuple[int, ...]
    knob: Knob | None = None
    layout: str = "study"
    common: tuple[str, ...] = ()
    """Overrides of every run (``layout="study"``), after the seed and the shared SFT cache."""
    borrow: Mapping[str, str] = field(default_factory=dict)
    """Row → the row whose settings it takes when ``--settings`` names it not (a variant of VARL takes VARL's)."""
    layers: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Row → the names whose settings it takes, concatenated in this order (a later one wins a key both set), each
    name's own, else those of the row it borrows (:attr:`borrow`); a row not named: ``(row,)``, its own alone.  E.g.
    a family's settings, then the row's kind's: ``{"RAL pre300 frozen judge": ("RAL", "RAL frozen judge")}``.  A
    name is one of :attr:`names` or a row."""
    names: tuple[str, ...] = ()
    """The names ``--settings`` may give settings under (empty: the rows' labels), where a study takes them under
    other names than its rows' (a board's rows, a family: :attr:`layers`); any other name is refused."""
    quick: Quick = Quick()
    few: Mapping[str, int] = field(default_factory=dict)
    """Row → how many of the seeds it runs, the first ones (the knobs a study only glances at, to save time);
    a row not named runs every seed.  :meth:`runs` and so the sweep and the full study honour it."""
    resolve: Callable[[RunSpec], RunSpec] | None = None
    """Completes a run just before the sweep, and only the runs a call makes (:func:`sweep`), with what a
    declaration cannot know (a row's placeholder override → a warm start of its own, trained on demand and
    cached); None: every run as planned."""

    def __post_init__(self):
        if self.layout not in LAYOUTS:
            raise ValueError(f"study {self.name!r}: layout {self.layout!r} is not one of {LAYOUTS}")
        if self.layout == "board" and self.knob:
            raise ValueError(f"study {self.name!r}: the board's layout has no level; give a knob layout='study'")
        named = set(self.borrow) | set(self.borrow.values()) | set((self.knob and self.knob.rows) or ()) | set(self.few)
        unknown = sorted(r for r in named | set(self.layers) if r not in self.labels)
        if unknown:
            raise ValueError(f"study {self.name!r} names rows it has not: {unknown}; its rows: {self.labels}")
        layered = {n for chain in self.layers.values() for n in chain}
        if unknown := sorted(n for n in layered if n not in self.known):
            raise ValueError(f"study {self.name!r}: layers name settings it has not: {unknown}; its: {self.known}")
        if bad := {r: n for r, n in self.few.items() if n < 1}:
            raise ValueError(f"study {self.name!r}: a row runs at least one seed, not {bad}")
        if self.knob and self.knob.home not in self.knob.levels:
            raise ValueError(f"study {self.name!r}: the knob's home {self.knob.home:g} is not one of its levels")

    @property
    def labels(self) -> list[str]:
        """The rows' labels, in the declaration's order."""
        return [e.method for e in self.rows]

    @property
    def setting_names(self) -> list[str]:
        """The names ``--settings`` may give: :attr:`names`, else the rows' labels."""
        return list(self.names) or self.labels

    @property
    def known(self) -> list[str]:
        """Every name a row's settings can come from: :attr:`setting_names`, then the labels not among them."""
        return list(dict.fromkeys([*self.setting_names, *self.labels]))

    def settings(self, text: str | None) -> dict[str, list[str]]:
        """``--settings``: the ``key=value`` overrides of each of :attr:`setting_names` from a JSON object
        ``{row: [...]}`` or a leaderboard's ``tuning.csv`` (the choices of the study's task); ``{}`` for none.
        Raises SystemExit saying what to give."""
        try:
            return read_settings(text, self.task, self.setting_names) if text else {}
        except ValueError as err:
            raise SystemExit(f"--settings {err}") from None

    def own(self, settings: Mapping[str, list[str]], row: str) -> list[str]:
        """A row's settings: those of each name of its :attr:`layers` (default: the row alone) in order, each
        name's own, else those of the row it borrows from, else none (the recipe's)."""
        return [
            o
            for name in self.layers.get(row, (row,))
            for o in settings.get(name, settings.get(self.borrow.get(name, ""), []))
        ]

    def seeds_of(self, row: str, seeds: list[int] | None = None) -> list[int]:
        """The seeds ``row`` runs of ``seeds`` (default: the study's): the first :attr:`few` of them where the
        study names it there, else all."""
        seeds = list(seeds or self.seeds)
        return seeds[: self.few.get(row, len(seeds))]

    def plan(self, levels: list[float] | None = None, rows: list[str] | None = None) -> list[tuple[float | None, str]]:
        """(level, row) pairs to run: every row of ``rows`` (default: all) at each of ``levels`` (default: the
        knob's) where the knob varies it, at the knob's home otherwise.  Raises ValueError on an unknown row or
        level, naming the known ones."""
        rows = list(rows or self.labels)
        if unknown := [r for r in rows if r not in self.labels]:
            raise ValueError(f"unknown row(s) {unknown} of study {self.name!r}; its rows: {', '.join(self.labels)}")
        if self.knob is None:
            if levels:
                raise ValueError(f"study {self.name!r} has no knob: drop --levels")
            return [(None, r) for r in rows]
        levels = list(self.knob.levels) if levels is None else list(levels)
        if unknown := [m for m in levels if m not in self.knob.levels]:
            raise ValueError(f"unknown level(s) {unknown} of {self.knob.name}; its levels: {list(self.knob.levels)}")
        varied = self.knob.rows or self.labels
        return [(m, r) for m in levels for r in rows if r in varied or m == self.knob.home]

    def runs(
        self,
        out: Path,
        settings: Mapping[str, list[str]] | None = None,
        *,
        seeds: list[int] | None = None,
        levels: list[float] | None = None,
        rows: list[str] | None = None,
        extra: list[str] = (),
    ) -> dict[RunKey, RunSpec]:
        """Every run of the plan (:meth:`plan`) at each of its row's seeds (:meth:`seeds_of` ``seeds``, default:
        the study's), each row with its settings (:meth:`own`), then ``extra`` overrides of every run."""
        settings = settings or {}
        return {
            RunKey(m, r, s): self.run(out, m, r, s, self.own(settings, r), list(extra))
            for m, r in self.plan(levels, rows)
            for s in self.seeds_of(r, seeds)
        }

    def run(self, out: Path, level: float | None, row: str, seed: int, own: list[str], extra: list[str]) -> RunSpec:
        """One run: ``row`` at ``level`` and ``seed`` with its settings ``own``, then ``extra``."""
        entry = self.rows[self.labels.index(row)]
        if self.layout == "board":
            return board_run(entry, seed, out, own, extra)
        at, level_dir = (self.knob.levels[level], self.knob.folder.format(level)) if self.knob else ((), "")
        tag = overrides_tag([*own, *extra])
        return RunSpec(
            f"{level_dir}/{row}/seed{seed}".lstrip("/"),
            entry.recipe,
            out / level_dir / (slug(row) + (f"-{tag}" if tag else "")) / f"seed{seed}",
            (f"seed={seed}", f"sft.cache_dir={out / 'sft-cache'}", *self.common, *entry.overrides, *at, *own, *extra),
            entry.factory,
        )


def board_run(e: Entry, seed: int, out: Path, own: list[str], extra: list[str]) -> RunSpec:
    """The board's run of row ``e`` at ``seed`` with its chosen settings ``own`` (the leaderboard's own spec,
    under ``out/<task>/<slug>/<setting>/seed<s>``), then ``extra`` (less any ``steps=`` for a row that does not
    train, which stays the warm start); with ``extra`` the setting's directory gets a hash of it, so the board's
    directories hold only the board's runs."""
    extra = [o for o in extra if e.trained or not o.startswith("steps=")]
    board = specs([e], [seed], out, False, {(e.task, e.method): Choice(Setting(tuple(own)))})[0]
    run_dir = board.run_dir
    if extra:
        run_dir = run_dir.parent.with_name(f"{run_dir.parent.name}__{overrides_tag(extra)}") / run_dir.name
    return replace(board, name=f"{e.method}/seed{seed}", run_dir=run_dir, overrides=(*board.overrides, *extra))


# ------------------------------------------------------------------ the command line every study shares
def arguments(parser: argparse.ArgumentParser, study: Study, out: str, results: str) -> None:
    """Add the flags every study takes to ``parser`` (a script's parser, or its subcommand's), with ``out`` and
    ``results`` as the default run and result directories."""
    parser.add_argument("--out", default=out, help="run directories (finished runs are reused)")
    parser.add_argument("--results", default=results, help="where the Markdown, CSV and figures go")
    parser.add_argument("--jobs", type=int, default=2, help="runs at a time (one thread each)")
    add_executor_arguments(parser)
    parser.add_argument(
        "--settings",
        metavar="FILE",
        help=f"each row's overrides: a leaderboard's tuning.csv (the settings it chose for {study.task} on its "
        "validation split) or JSON {row: [key=value, ...]}; default: the recipes' own",
    )
    few = "; a row run on fewer seeds takes the first of them" if study.few else ""
    parser.add_argument("--seeds", type=int, nargs="+", help=f"default: {' '.join(map(str, study.seeds))}{few}")
    if study.knob:
        parser.add_argument(
            "--levels", type=float, nargs="+", help=f"levels of {study.knob.name} (default: {list(study.knob.levels)})"
        )
    parser.add_argument(
        "--rows", "--methods", "--variants", dest="rows", nargs="+", metavar="ROW", help="run only these rows"
    )
    parser.add_argument(
        "--set",
        "--override",
        dest="set",
        nargs="*",
        default=[],
        metavar="KEY=VALUE",
        help="overrides added to every run (after its settings)",
    )
    parser.add_argument("--quick", action="store_true", help=f"the pilot size: {study.quick}")


@dataclass(frozen=True)
class Call:
    """What one call of a study ran: its runs and their results, next to the full study's runs (the cost and the
    PILOT line compare them)."""

    study: Study
    specs: dict[RunKey, RunSpec]
    """The runs this call made (completed by :attr:`Study.resolve`)."""
    results: dict[RunKey, RunResult]
    full: dict[RunKey, RunSpec]
    """The full study's runs as planned (each row on its seeds, :attr:`Study.few`; not resolved)."""
    settings: dict[str, list[str]]
    quick: bool

    @property
    def seeds(self) -> list[int]:
        """The seeds this call ran, in order."""
        return sorted({k.seed for k in self.specs})

    @property
    def levels(self) -> list[float | None]:
        """The levels this call ran, in the order given."""
        return list(dict.fromkeys(k.level for k in self.specs))

    @property
    def rows(self) -> list[str]:
        """The rows this call ran, in the declaration's order."""
        ran = {k.row for k in self.specs}
        return [r for r in self.study.labels if r in ran]

    def keys(self, row: str, level: float | None = None) -> list[RunKey]:
        """The runs of ``row`` at ``level``, seed by seed."""
        return [k for k in self.specs if k.row == row and k.level == level]

    @property
    def pilot(self) -> bool:
        """Whether this call is smaller than the study: fewer runs, or ``--quick``'s smaller ones."""
        return self.quick or set(self.specs) != set(self.full)


def prepare(
    study: Study,
    args: argparse.Namespace,
    extra: list[str] = (),
    settings: Mapping[str, list[str]] | None = None,
) -> tuple[dict[RunKey, RunSpec], dict[RunKey, RunSpec], dict[str, list[str]]]:
    """The runs a call of ``study`` makes, before any work: read ``--settings`` (or take ``settings``, chosen
    by the script itself, e.g. by a tuning stage it runs first), plan the runs ``args`` select (``--quick``'s size,
    ``--seeds``, ``--levels``, ``--rows``; ``extra`` then ``--set`` added to every run) and complete them
    (:attr:`Study.resolve`); with the full study's runs as planned and the settings used.  Raises SystemExit,
    before anything is resolved, on an unknown row or level or an unreadable ``--settings``."""
    q = study.quick if args.quick else Quick()
    if settings is None:
        settings = study.settings(args.settings)  # refuses a name the study does not take
    elif unknown := sorted(set(settings) - set(study.known)):
        raise SystemExit(f"--settings names {unknown}, which no row of study {study.name!r} takes: {study.known}")
    settings = {k: list(v) for k, v in settings.items()}
    try:
        chosen = study.runs(
            Path(args.out),
            settings,
            seeds=args.seeds or (list(q.seeds) if q.seeds else None),
            levels=getattr(args, "levels", None) or (list(q.levels) if q.levels else None),
            rows=args.rows or (list(q.rows) if q.rows else None),
            extra=[*q.overrides, *extra, *args.set],
        )
    except ValueError as err:
        raise SystemExit(str(err)) from None
    full = study.runs(Path(args.out), settings)
    if study.resolve:
        chosen = {k: study.resolve(s) for k, s in chosen.items()}
    return chosen, full, settings


def sweep(
    study: Study, args: argparse.Namespace, extra: list[str] = (), settings: Mapping[str, list[str]] | None = None
) -> Call:
    """Run (or reuse) the runs a call of ``study`` makes (:func:`prepare`, which checks them all before any work;
    ``settings``: the rows' settings as :func:`prepare` takes them, instead of ``--settings``)."""
    chosen, full, settings = prepare(study, args, extra, settings)
    done = run_sweep(list(chosen.values()), desc=study.name, executor=executor_from_args(args))
    return Call(study, chosen, {k: done[s.name] for k, s in chosen.items()}, full, settings, bool(args.quick))


def header(study: Study, argv: list[str] | None) -> str:
    """The report's first line: the exact command (``argv``: the script's arguments; None: ``sys.argv``)."""
    words = sys.argv[1:] if argv is None else list(argv)
    return f"<!-- command: {shlex.join(['python', study.script, *words])} -->"


def pilot_line(call: Call) -> list[str]:
    """The report's PILOT paragraph when the call is smaller than its study (none otherwise)."""
    if not call.pilot:
        return []
    size = ", --quick size" if call.quick else ""
    return [
        "",
        f"**PILOT** ({len(call.specs)} of the full study's {len(call.full)} runs{size}): reduced size, not a result; "
        "the command above made it.",
    ]
