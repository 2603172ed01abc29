"""rewardzoo.board.study: a study declared as rows, a knob and seeds, planned and run by the shared path."""

import argparse
from dataclasses import replace
from pathlib import Path

import pytest

from rewardzoo import board as lb
from rewardzoo.board import Entry
from rewardzoo.board.study import Call, Knob, Quick, RunKey, Study, arguments, header, pilot_line, prepare, sweep
from rewardzoo.protocol import Choice, Setting, overrides_tag

ROWS = (
    Entry("multiplication", "A", "rlvr_multiplication", ("grpo.beta=0.0",)),
    Entry("multiplication", "B", "ral_multiplication"),
    Entry("multiplication", "B variant", "ral_multiplication", ("reward.ral.frozen=true",)),
)
KNOB = Knob(
    "temperature",
    {0.5: ("sampling.temperature=0.5",), 1.0: ("sampling.temperature=1.0",)},
    home=1.0,
    rows=("A", "B"),
    folder="t{:g}",
)


def study(**changes) -> Study:
    """A three-row study on multiplication, the variant borrowing B's settings."""
    fields = dict(
        name="toy",
        script="benchmarks/toy.py",
        task="multiplication",
        rows=ROWS,
        seeds=(0, 1),
        knob=KNOB,
        common=("checkpoint_every=0",),
        borrow={"B variant": "B"},
    )
    return Study(**(fields | changes))


def test_the_knob_varies_its_rows_and_leaves_the_others_at_home():
    """A and B at both levels, the variant at the home level only, in the declaration's order."""
    assert study().plan() == [(0.5, "A"), (0.5, "B"), (1.0, "A"), (1.0, "B"), (1.0, "B variant")]
    assert study().plan([0.5], ["B variant"]) == []
    assert study(knob=None).plan() == [(None, "A"), (None, "B"), (None, "B variant")]


def test_a_study_layout_run_has_its_level_settings_and_seed_in_its_directory_and_overrides(tmp_path):
    """OUT/<level>/<row>-<hash of settings and extra>/seed<s>; overrides: seed, SFT cache, common, the row's,
    the level's, its settings (the variant borrows B's), then extra."""
    runs = study().runs(tmp_path, {"B": ["grpo.lr=1e-4"]}, extra=["steps=3"])
    assert len(runs) == 5 * 2
    variant = runs[RunKey(1.0, "B variant", 1)]
    tag = overrides_tag(["grpo.lr=1e-4", "steps=3"])
    assert variant.run_dir == tmp_path / "t1" / f"b_variant-{tag}" / "seed1"
    assert variant.name == "t1/B variant/seed1" and variant.recipe == "ral_multiplication"
    assert variant.overrides == (
        "seed=1",
        f"sft.cache_dir={tmp_path / 'sft-cache'}",
        "checkpoint_every=0",
        "reward.ral.frozen=true",
        "sampling.temperature=1.0",
        "grpo.lr=1e-4",
        "steps=3",
    )
    plain = study().runs(tmp_path)[RunKey(0.5, "A", 0)]
    assert plain.run_dir == tmp_path / "t0.5" / "a" / "seed0"  # the recipe's own settings: no hash
    assert study(knob=None).runs(tmp_path)[RunKey(None, "A", 0)].run_dir == tmp_path / "a" / "seed0"
    own = study().runs(tmp_path, {"B": ["grpo.lr=1e-4"], "B variant": ["grpo.lr=5e-5"]})
    assert own[RunKey(1.0, "B variant", 0)].overrides[-1] == "grpo.lr=5e-5"  # its own settings win


def test_a_board_layout_run_is_the_boards_own_run():
    """A study of a board's rows trains each row exactly as the leaderboard does, in its directory."""
    varl = next(e for e in lb.PRESETS["cpu"] if e.method == "VARL (proxy gate)")
    s = Study(name="h", script="x.py", task=varl.task, rows=(varl,), seeds=(3,), layout="board")
    mine = s.runs(Path("/runs"), {varl.method: ["grpo.lr=0.0005"]})[RunKey(None, varl.method, 3)]
    theirs = lb.specs(
        [varl], [3], Path("/runs"), False, {(varl.task, varl.method): Choice(Setting(("grpo.lr=0.0005",)))}
    )
    assert (mine.run_dir, mine.overrides, mine.recipe) == (theirs[0].run_dir, theirs[0].overrides, theirs[0].recipe)


@pytest.mark.parametrize(
    "changes, message",
    [
        (dict(layout="grid"), "layout 'grid' is not one of"),
        (dict(borrow={"C": "B"}), r"names rows it has not: \['C'\]"),
        (dict(knob=Knob("t", {0.5: ()}, home=1.0)), "home 1 is not one of its levels"),
        (dict(layout="board"), "the board's layout has no level"),
        (dict(few={"C": 1}), r"names rows it has not: \['C'\]"),
        (dict(few={"A": 0}), r"a row runs at least one seed, not \{'A': 0\}"),
    ],
)
def test_a_declaration_that_cannot_run_fails_when_declared(changes, message):
    """Mistakes in a declaration are caught at import, not in the middle of a sweep."""
    with pytest.raises(ValueError, match=message):
        study(**changes)


def test_an_unknown_row_or_level_is_named_with_the_known_ones():
    """plan() says what the study has."""
    with pytest.raises(ValueError, match="unknown row.*'C'.*its rows: A, B, B variant"):
        study().plan(rows=["C"])
    with pytest.raises(ValueError, match=r"unknown level\(s\) \[2.0\] of temperature; its levels: \[0.5, 1.0\]"):
        study().plan(levels=[2.0])
    with pytest.raises(ValueError, match="has no knob: drop --levels"):
        study(knob=None).plan(levels=[0.5])


def parse(s: Study, argv: list[str]) -> argparse.Namespace:
    """The shared command line of ``s``, parsed."""
    parser = argparse.ArgumentParser()
    arguments(parser, s, "runs/toy", "results")
    return parser.parse_args(argv)


def test_bad_input_stops_the_sweep_before_any_work(tmp_path):
    """An unknown row, an unknown level, an unreadable --settings or one naming a row the study has not:
    SystemExit with what to change, and no run directory written."""
    out = tmp_path / "runs"
    for argv, message in [
        (["--rows", "C"], "unknown row"),
        (["--levels", "7"], "unknown level"),
        (["--settings", str(tmp_path / "missing.json")], "--settings .*neither a tuning.csv nor a JSON object"),
        (["--settings", '{"C": ["grpo.lr=1e-4"]}'], "--settings .*unknown methods"),
    ]:
        with pytest.raises(SystemExit, match=message):
            sweep(study(), parse(study(), [*argv, "--out", str(out)]))
    assert not out.exists()


def test_the_command_line_and_the_pilot_line():
    """The flags every study takes (the old --methods and --variants spell --rows); --quick's size in the help;
    the header is the exact command, quoted; the PILOT paragraph only for a call smaller than the study."""
    s = study(quick=Quick(overrides=("steps=2",), seeds=(0,)))
    args = parse(s, ["--methods", "A", "B variant", "--seeds", "1", "--levels", "1", "--set", "steps=4"])
    assert (args.rows, args.seeds, args.levels, args.set, args.jobs) == (["A", "B variant"], [1], [1.0], ["steps=4"], 2)
    assert parse(s, ["--variants", "B"]).rows == ["B"] and parse(s, ["--override", "steps=4"]).set == ["steps=4"]
    assert str(s.quick) == "steps=2; seeds 0" and str(Quick()) == "the full size"
    assert header(s, ["--rows", "B variant"]) == "<!-- command: python benchmarks/toy.py --rows 'B variant' -->"

    full = s.runs(Path("/runs"))
    some = dict(list(full.items())[:3])
    assert pilot_line(Call(s, full, {}, full, {}, quick=False)) == []
    assert Call(s, some, {}, full, {}, quick=False).rows == ["A", "B"]
    assert "**PILOT** (3 of the full study's 10 runs): reduced" in pilot_line(Call(s, some, {}, full, {}, False))[1]
    assert "(10 of the full study's 10 runs, --quick size)" in pilot_line(Call(s, full, {}, full, {}, True))[1]


def test_a_row_of_few_runs_the_first_of_the_seeds(tmp_path):
    """``few``: A on the first 2 of the seeds, the variant on the first 1, B on all 3 — of the study's seeds or of
    the ones a call gives (in their order); the full study counts each row's own."""
    s = study(seeds=(0, 1, 2), few={"A": 2, "B variant": 1})
    assert (s.seeds_of("A"), s.seeds_of("B"), s.seeds_of("B variant")) == ([0, 1], [0, 1, 2], [0])
    assert (s.seeds_of("A", [7, 5, 3]), s.seeds_of("A", [4]), s.seeds_of("B", [7, 5])) == ([7, 5], [4], [7, 5])
    runs = s.runs(tmp_path)
    assert len(runs) == 2 * 2 + 2 * 3 + 1  # A at both levels on 2 seeds, B at both on 3, the variant at home on 1
    assert [k.seed for k in runs if k.row == "A" and k.level == 0.5] == [0, 1]
    assert [k for k in runs if k.row == "B variant"] == [RunKey(1.0, "B variant", 0)]
    assert len(study().runs(tmp_path)) == 5 * 2  # without few, every row on every seed


def test_a_call_resolves_only_the_runs_it_makes_and_only_after_checking_them(tmp_path):
    """``resolve`` completes each run of the call (A on 2 seeds, B on its 1), never the full study's other runs,
    and nothing when the input is bad; a call of the whole study (each row on its own seeds) is no pilot."""
    seen = []

    def resolve(spec):
        seen.append(spec.name)
        return replace(spec, overrides=(*spec.overrides, "resolved=1"))

    s = study(knob=None, few={"B": 1}, resolve=resolve)
    with pytest.raises(SystemExit, match="unknown row"):
        prepare(s, parse(s, ["--rows", "A", "C", "--out", str(tmp_path)]))
    assert seen == []
    chosen, full, settings = prepare(s, parse(s, ["--rows", "A", "B", "--out", str(tmp_path)]))
    assert seen == ["A/seed0", "A/seed1", "B/seed0"]
    assert all(x.overrides[-1] == "resolved=1" for x in chosen.values())
    assert len(full) == 2 + 1 + 2 and "resolved=1" not in full[RunKey(None, "A", 0)].overrides
    call = Call(s, chosen, {}, full, settings, quick=False)
    assert call.pilot and call.rows == ["A", "B"] and [k.seed for k in call.keys("B")] == [0]
    everything, full, settings = prepare(s, parse(s, ["--out", str(tmp_path)]))
    assert not Call(s, everything, {}, full, settings, quick=False).pilot


def test_layers_concatenate_a_familys_settings_and_a_rows_own_under_the_declared_names(tmp_path):
    """``layers``: a row takes each name's settings in order (a family's, then its own or its kind's); ``names``: the
    names --settings may give instead of the labels (a row's label stays a name a script's own settings may use);
    a row not layered keeps its own-else-borrowed settings."""
    s = study(
        knob=None,
        names=("fam", "kind"),
        layers={"B": ("fam", "B"), "B variant": ("fam", "kind")},
    )
    settings = {"fam": ["grpo.lr=1e-4"], "kind": ["grpo.beta=0.1"], "B": ["grpo.lr=5e-5"]}
    assert s.own(settings, "B") == ["grpo.lr=1e-4", "grpo.lr=5e-5"]  # the family's, then its own (the later wins)
    assert s.own(settings, "B variant") == ["grpo.lr=1e-4", "grpo.beta=0.1"]
    assert s.own(settings, "A") == [] and s.known == ["fam", "kind", "A", "B", "B variant"]
    run = s.runs(tmp_path, settings)[RunKey(None, "B variant", 0)]
    assert run.overrides[-2:] == ("grpo.lr=1e-4", "grpo.beta=0.1")
    assert run.run_dir == tmp_path / f"b_variant-{overrides_tag(['grpo.lr=1e-4', 'grpo.beta=0.1'])}" / "seed0"
    assert s.settings('{"fam": ["grpo.lr=1e-4"]}') == {"fam": ["grpo.lr=1e-4"]}
    with pytest.raises(SystemExit, match="unknown methods"):  # --settings gives the declared names only
        s.settings('{"B": ["grpo.lr=1e-4"]}')
    chosen, _, used = prepare(s, parse(s, ["--out", str(tmp_path)]), settings={"fam": ["x=1"], "B": ["y=2"]})
    assert used == {"fam": ["x=1"], "B": ["y=2"]} and chosen[RunKey(None, "B", 1)].overrides[-2:] == ("x=1", "y=2")
    with pytest.raises(SystemExit, match=r"--settings names \['C'\], which no row"):
        prepare(s, parse(s, ["--out", str(tmp_path)]), settings={"C": ["x=1"]})
    with pytest.raises(ValueError, match=r"layers name settings it has not: \['other'\]"):
        study(layers={"B": ("other",)})
    with pytest.raises(ValueError, match=r"names rows it has not: \['C'\]"):
        study(layers={"C": ("B",)})


def test_the_docs_show_the_rcrl_declaration_as_it_is_in_its_script():
    """docs/leaderboard.md quotes benchmarks/rcrl.py's STUDY verbatim: an edit to one and not the other fails."""
    import re

    root = Path(__file__).resolve().parents[1]
    source = (root / "benchmarks" / "rcrl.py").read_text()
    declared = re.search(r"^STUDY = Study\(\n.*?^\)\n", source, re.S | re.M)[0]
    assert f"```python\n{declared}```" in (root / "docs" / "leaderboard.md").read_text()
