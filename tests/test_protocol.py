"""The fair comparison protocol's own logic, on hand-made inputs: twin differences, the tuning grid and its
choice (from validation rows only), and the verdict rules."""

import math

import pytest

from rewardzoo.eval import Estimate
from rewardzoo.protocol import (
    MIN_SEEDS,
    Finding,
    Grid,
    OwnKey,
    Setting,
    TwinException,
    ValidationRow,
    choose,
    load_factory,
    overrides_tag,
    twin_differences,
    verdict,
)


def test_twin_differences_name_every_key_outside_the_reward_unless_excepted():
    base = {
        "seed": 0,
        "run_dir": "a",
        "grpo": {"lr": 1e-3, "advantage": "grpo"},
        "reward": {"name": "rlvr"},
        "steps": 40,
    }
    varl = {**base, "run_dir": "b", "grpo": {"lr": 1e-3, "advantage": "dr_grpo"}, "reward": {"name": "varl"}}
    twin = {**varl, "reward": {"name": "rlvr"}}
    sft = {**base, "steps": 0}
    warm = TwinException({"steps": "the warm start, evaluated"})
    assert twin_differences({"RLVR": base, "VARL": varl, "SFT": sft}) == [
        "VARL: grpo.advantage: 'grpo' → 'dr_grpo'",
        "SFT: steps: 40 → 0",
    ]
    assert twin_differences({"RLVR": base, "SFT": sft}, {"SFT": warm}) == []
    # the reference is the first row that names no exception, so an excepted row never sets the standard
    assert twin_differences({"SFT": sft, "RLVR": base, "RAL": {**base, "reward": {"name": "ral"}}}, {"SFT": warm}) == []
    with pytest.raises(ValueError, match="at least one twin"):
        twin_differences({"SFT": sft}, {"SFT": warm})
    # an exception needs its named twin, running the exception's setting too
    paper = {
        "VARL": TwinException({"grpo.advantage": "paper"}, "RLVR dr"),
        "RLVR dr": TwinException({"grpo.advantage": "paper"}, "VARL"),
    }
    assert twin_differences({"RLVR": base, "VARL": varl, "RLVR dr": twin}, paper) == []
    assert twin_differences({"RLVR": base, "VARL": varl}, paper) == [
        "VARL: its twin 'RLVR dr' (which must run grpo.advantage too) is not on the board"
    ]
    assert twin_differences({"RLVR": base, "VARL": varl, "RLVR dr": {**twin, "steps": 20}}, paper) == [
        "VARL: its twin RLVR dr: steps: 20 → 40",
        "RLVR dr: steps: 40 → 20",
        "RLVR dr: its twin VARL: steps: 40 → 20",
    ]


def _rows(values: dict[Setting, list[float]], split: str = "validation") -> list[ValidationRow]:
    return [ValidationRow("t", "m", s, 1000 + i, split, v) for s, vs in values.items() for i, v in enumerate(vs)]


def test_choose_takes_the_best_mean_and_breaks_ties_by_the_grid_order():
    """Grid order (recipe's lr first, then nearest, smaller first): 1e-3, 5e-4, 2.5e-4.  Means 0.40, 0.55, 0.55
    → a tie between 5e-4 and 2.5e-4, won by 5e-4 (earlier); for 'min' the best is 1e-3 (0.40).  A setting
    whose run logged nothing (NaN) is never chosen over a finite one."""
    grid = Grid((1.0, 0.5, 0.25)).points("t", "m", 1e-3)
    assert [s.label for s in grid] == ["grpo.lr=0.001", "grpo.lr=0.0005", "grpo.lr=0.00025"]
    a, b, c = grid
    rows = _rows({a: [0.4], b: [0.5, 0.6], c: [0.55, 0.55]})
    best = choose(rows, "max", grid)
    assert best.setting == b and best.value == pytest.approx(0.55) and best.by == "validation"
    assert choose(rows, "min", grid).setting == a
    assert choose(_rows({a: [math.nan], b: [0.1], c: [0.2]}), "max", grid).setting == c
    with pytest.raises(ValueError, match="'max' or 'min'"):
        choose(rows, "up", grid)


def test_the_tuner_reads_no_test_row():
    """No test number may influence a choice: one row of another split and the tuner refuses all of them."""
    grid = Grid((1.0, 0.5)).points("t", "m", 1e-3)
    rows = _rows({grid[0]: [0.4], grid[1]: [0.5]}) + _rows({grid[0]: [0.9]}, split="test")
    with pytest.raises(ValueError, match="validation rows only; got rows of split test"):
        choose(rows, "max", grid)


def test_grid_order_own_keys_and_an_equal_budget():
    grid = Grid(
        (2.0, 0.25, 1.0, 0.5),
        (OwnKey.parse("t/RAL=reward.ral.judge.lr=1e-3,3e-3"), OwnKey.parse("t/RLVR=reward.rlvr.format_weight=0,0.1")),
    )
    # |log f| then the smaller: 1, 0.5, 2, 0.25; each lr with the own key's values in the order given
    assert [s.label for s in grid.points("t", "RAL", 1e-3)][:3] == [
        "grpo.lr=0.001 reward.ral.judge.lr=1e-3",
        "grpo.lr=0.001 reward.ral.judge.lr=3e-3",
        "grpo.lr=0.0005 reward.ral.judge.lr=1e-3",
    ]
    assert [s.overrides[0] for s in grid.points("t", "RLVR", 1e-3)][::2] == [
        "grpo.lr=0.001",
        "grpo.lr=0.0005",
        "grpo.lr=0.002",
        "grpo.lr=0.00025",
    ]
    grid.check_equal_budget("t", ["RAL", "RLVR"])
    with pytest.raises(ValueError, match="same tuning budget"):
        grid.check_equal_budget("t", ["RAL", "RLVR", "VARL"])  # VARL has no own key: 8 runs against 4
    with pytest.raises(ValueError, match="at most one key"):
        Grid((1.0,), (OwnKey("t/RAL", "a", ("1",)), OwnKey("t/RAL", "b", ("1",))))
    with pytest.raises(ValueError, match="distinct positive"):
        Grid((1.0, 1.0))
    with pytest.raises(ValueError, match="TASK/METHOD=KEY=V1,V2"):
        OwnKey.parse("RAL=reward.ral.judge.lr")
    assert Setting(("grpo.lr=0.001",)).slug == "grpo.lr-0.001" and Setting().slug == "recipe"


def _finding(low: float, high: float, threshold: float = 0.0, above: bool = True) -> Finding:
    return Finding("t", "claim", "control", Estimate((low + high) / 2, low, high, 5), threshold, above, "numbers", "n")


def test_a_verdict_needs_three_seeds_and_a_positive_control_that_works():
    works, fails = _finding(0.1, 0.3), _finding(-0.05, 0.2)
    claim = _finding(0.02, 0.05)
    assert verdict(claim, MIN_SEEDS, works) == "reproduced"
    assert verdict(_finding(-0.02, 0.05), 5, works) == "undecided (CI)"
    assert verdict(_finding(-0.05, -0.01), 5, works) == "not reproduced"
    assert verdict(_finding(0.55, 0.6, 0.5, above=False), 5, works) == "not reproduced"
    assert verdict(claim, 2, works) == "no verdict (n = 2 seeds < 3)"
    assert verdict(claim, 1, works) == "no verdict (n = 1 seed < 3)"
    assert verdict(claim, 5, fails) == "testbed cannot decide (positive control control: numbers)"
    assert verdict(claim, 5, None) == "testbed cannot decide (no positive control on this board)"
    assert verdict(claim, 5, _finding(-0.3, -0.1, above=False)) == "reproduced"  # a control whose effect is a fall


def test_a_bad_reward_factory_is_a_clear_error():
    with pytest.raises(ValueError, match="MODULE:FUNCTION"):
        load_factory("no_colon")
    with pytest.raises(ValueError, match="cannot load the reward factory 'rewardzoo.protocol:nope'"):
        load_factory("rewardzoo.protocol:nope")
    with pytest.raises(ValueError, match="not callable"):
        load_factory("rewardzoo.protocol:MIN_SEEDS")
    assert load_factory("rewardzoo.protocol:choose") is choose


def test_tuning_md_and_csv_hold_the_grid_the_numbers_and_the_choice(tmp_path):
    """The chosen setting is marked, and flagged when it is the grid's highest or lowest learning rate."""
    import csv

    from rewardzoo.protocol import Choice, write_tuning

    order = Grid((1.0, 0.5, 0.25)).points("t", "m", 1e-3)
    rows = _rows({order[0]: [0.2], order[1]: [0.3], order[2]: [0.4]})
    grids = {"t": {"metric": "eval/accuracy", "direction": "max", "points": {"m": order}}}
    write_tuning(tmp_path, grids, rows, {("t", "m"): choose(rows, "max", order)}, [10.0, 20.0, 30.0], [1000], "cmd")
    text = (tmp_path / "TUNING.md").read_text()
    assert (
        text.startswith("`cmd`")
        and "| m | `grpo.lr=0.00025` | 1000: 0.4000 | 0.4000 | **chosen** (at the grid's edge) |" in text
    )
    assert (
        "| m | `grpo.lr=0.0005` | 1000: 0.3000 | 0.3000 |  |" in text
        and "3 tuning runs; summed run wall time 1.0 min." in text
    )
    with open(tmp_path / "tuning.csv") as f:
        table = list(csv.DictReader(f))
    assert [(r["setting"], r["split"], r["chosen"]) for r in table] == [
        ("grpo.lr=0.001", "validation", "False"),
        ("grpo.lr=0.0005", "validation", "False"),
        ("grpo.lr=0.00025", "validation", "True"),
    ]
    write_tuning(tmp_path, grids, rows, {("t", "m"): Choice(order[1], by="hand")}, [], [1000])
    assert "**chosen by hand**" in (tmp_path / "TUNING.md").read_text()


def test_read_choices_gives_back_what_write_tuning_chose(tmp_path):
    """A study reads the board's choices from tuning.csv: per method its chosen overrides, [] for the recipe's own."""
    from rewardzoo.protocol import Choice, read_choices, write_tuning

    order = Grid((1.0, 0.5)).points("t", "m", 1e-3)
    rows = [
        *_rows({order[0]: [0.2], order[1]: [0.3]}),
        ValidationRow("t", "n", Setting(), 1000, "validation", 0.1),
        ValidationRow("u", "m", order[0], 1000, "validation", 0.9),
    ]
    grids = {"t": {"metric": "eval/accuracy", "direction": "max", "points": {"m": order, "n": [Setting()]}}}
    choices = {("t", "m"): choose(rows[:2], "max", order), ("t", "n"): Choice(Setting()), ("u", "m"): Choice(order[0])}
    write_tuning(tmp_path, grids, rows, choices, [], [1000])
    assert read_choices(tmp_path / "tuning.csv", "t") == {"m": ["grpo.lr=0.0005"], "n": []}
    assert read_choices(tmp_path / "tuning.csv", "t", ["n"]) == {"n": []}
    with pytest.raises(ValueError, match="no chosen row of task 'v'.*its tasks: t, u.*--tasks v --tune-only"):
        read_choices(tmp_path / "tuning.csv", "v")
    (tmp_path / "other.csv").write_text("a,b\n1,2\n")
    with pytest.raises(ValueError, match="is not a tuning.csv"):
        read_choices(tmp_path / "other.csv", "t")


def test_read_settings_takes_a_tuning_csv_a_json_file_or_a_json_object_and_says_what_is_wrong(tmp_path):
    """A study's --settings: the board's choices from its tuning.csv (only the study's methods), a JSON file or
    an inline object; a tuning.csv for a study without board rows, bad JSON, a wrong shape and an unknown
    method each raise a ValueError that says what to give."""
    from rewardzoo.protocol import read_settings

    (tmp_path / "tuning.csv").write_text(
        "task,method,setting,chosen\nt,m,grpo.lr=0.0005,True\nt,n,recipe,True\nt,x,grpo.lr=1,True\n"
    )
    assert read_settings(str(tmp_path / "tuning.csv"), "t", ["m", "n"]) == {"m": ["grpo.lr=0.0005"], "n": []}
    (tmp_path / "s.json").write_text('{"m": ["grpo.lr=1e-5", "steps=3"]}')
    assert read_settings(str(tmp_path / "s.json"), "t", ["m"]) == {"m": ["grpo.lr=1e-5", "steps=3"]}
    assert read_settings('{"n": []}', None, ["m", "n"]) == {"n": []}
    with pytest.raises(ValueError, match="a tuning.csv gives a board's rows; give this study a JSON file"):
        read_settings(str(tmp_path / "tuning.csv"), None, ["m"])
    with pytest.raises(ValueError, match="neither a tuning.csv nor a JSON object"):
        read_settings("{m: [", "t", ["m"])
    with pytest.raises(ValueError, match=r'method -> \[key=value, ...\], e.g. \{"m"'):
        read_settings('{"m": "grpo.lr=1"}', "t", ["m"])
    with pytest.raises(ValueError, match=r"unknown methods \['z'\]; known: \['m'\]"):
        read_settings('{"z": []}', "t", ["m"])


def test_overrides_tag_is_empty_without_overrides_and_a_stable_hash_with_them():
    """'' for none; 8 hex digits that depend on the overrides and their order (a run directory's name part)."""
    assert overrides_tag([]) == ""
    tag = overrides_tag(["grpo.lr=0.001"])
    assert len(tag) == 8 and int(tag, 16) >= 0 and tag == overrides_tag(("grpo.lr=0.001",))
    assert tag != overrides_tag(["grpo.lr=0.0005"])
    assert overrides_tag(["a=1", "b=2"]) != overrides_tag(["b=2", "a=1"])


def test_within_noise_is_a_paired_interval_over_the_tuning_seeds():
    """Paired by seed: a constant gap is signal however small; a gap that changes sign across seeds is noise;
    with one common seed only equal values tie."""
    from rewardzoo.protocol import within_noise

    base = {1000: 0.50, 1001: 0.60, 1002: 0.40}
    assert not within_noise(base, {s: v - 0.01 for s, v in base.items()})  # the same gap at every seed
    assert within_noise(base, {1000: 0.55, 1001: 0.50, 1002: 0.45})
    assert within_noise({1000: 0.5}, {1000: 0.5}) and not within_noise({1000: 0.5}, {1000: 0.51})
    assert not within_noise({1000: 0.5}, {2000: 0.5})


def test_choose_breaks_a_tie_within_noise_by_the_grid_order_and_names_the_tied():
    """The best mean is 2.5e-4's, but 5e-4 is within noise of it and earlier in the grid's order: 5e-4 is
    chosen, and both are named near; 1e-3 is clearly worse."""
    grid = Grid((1.0, 0.5, 0.25)).points("t", "m", 1e-3)
    a, b, c = grid
    rows = _rows({a: [0.10, 0.12, 0.11], b: [0.50, 0.40, 0.45], c: [0.45, 0.50, 0.47]})
    choice = choose(rows, "max", grid)
    assert choice.setting == b and choice.near == (b, c) and choice.value == pytest.approx(0.45)


def test_halving_keeps_the_better_half_at_the_first_seed():
    from rewardzoo.protocol import survivors

    grid = Grid((1.0, 0.5, 0.25, 0.125)).points("t", "m", 1e-3)
    rows = _rows({grid[0]: [0.1], grid[1]: [0.4], grid[2]: [math.nan], grid[3]: [0.3]})
    assert survivors(rows, "max", grid, 1000) == [grid[1], grid[3]]
    assert survivors(rows, "min", grid, 1000) == [grid[0], grid[3]]  # a run without a value is never kept first
    assert survivors(rows, "max", grid[:1], 1000) == grid[:1]


def test_the_grid_extends_past_the_edge_its_choice_sits_at_up_to_its_bound():
    """×2 past the highest rate, ÷2 past the lowest, never more than ``steps`` doublings beyond the initial ends."""
    from rewardzoo.protocol import extension

    initial = (1.0, 0.5, 0.25)
    assert extension(initial, initial, 0.5, 2) is None  # interior
    assert extension(initial, initial, 1.0, 2) == 2.0 and extension(initial, initial, 0.25, 2) == 0.125
    assert extension((*initial, 2.0), initial, 2.0, 2) == 4.0
    assert extension((*initial, 2.0, 4.0), initial, 4.0, 2) is None
    assert extension((*initial, 0.125, 0.0625), initial, 0.0625, 2) is None
    assert extension(initial, initial, 0.25, 0) is None and extension((1.0,), (1.0,), 1.0, 2) is None
    with pytest.raises(ValueError, match="0 or more steps"):
        Grid(initial, extend=-1)
