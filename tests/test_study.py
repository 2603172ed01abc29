"""rewardzoo.board.study: a study declared as rows, a knob and seeds, planned and run by the shared path."""

import argparse
from pathlib import Path

import pytest

from rewardzoo import board as lb
from rewardzoo.board import Entry
from rewardzoo.board.study import Call, Knob, Quick, RunKey, Study, arguments, header, pilot_line, sweep
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
    assert parse(s, ["--variants", "B"]).rows == ["B"]
    assert str(s.quick) == "steps=2; seeds 0" and str(Quick()) == "the full size"
    assert header(s, ["--rows", "B variant"]) == "<!-- command: python benchmarks/toy.py --rows 'B variant' -->"

    full = s.runs(Path("/runs"))
    some = dict(list(full.items())[:3])
    assert pilot_line(Call(s, full, {}, full, {}, quick=False)) == []
    assert Call(s, some, {}, full, {}, quick=False).rows == ["A", "B"]
    assert "**PILOT** (3 of the full study's 10 runs): reduced" in pilot_line(Call(s, some, {}, full, {}, False))[1]
    assert "(10 of the full study's 10 runs, --quick size)" in pilot_line(Call(s, full, {}, full, {}, True))[1]
