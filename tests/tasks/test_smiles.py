"""SMILES → formula: RDKit formulas by hand, the formula parser, atom-count L1, the generated sets."""

import sys
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rewardzoo.tasks.smiles import SmilesConfig, atom_l1, hill_formula, parse_formula

SMALL = SmilesConfig(n_train=300, n_eval=60)


@pytest.fixture(scope="module")
def task():
    pytest.importorskip("rdkit")
    from rewardzoo.tasks.smiles import SmilesFormula

    return SmilesFormula(SMALL)


@pytest.mark.parametrize(
    "smiles, formula",
    [
        ("CCO", "C2H6O"),  # ethanol: 2 C, 5 + 1 implicit H, 1 O
        ("c1ccccc1", "C6H6"),  # benzene: one implicit H per aromatic carbon
        ("OC(=O)c1ccccc1", "C7H6O2"),  # benzoic acid
        ("Br", "HBr"),  # RDKit keeps H first without carbon (strict Hill would write BrH)
        ("[NH4+]", "H4N+"),  # a net charge is a suffix
        ("CC(=O)[O-]", "C2H3O2-"),
        ("[Fe+2]", "Fe+2"),
        ("C[N+](=O)[O-]", "CH3NO2"),  # nitromethane: the charges cancel, no suffix
    ],
)
def test_molecular_formula_by_hand(smiles, formula):
    pytest.importorskip("rdkit")
    from rewardzoo.tasks.smiles import molecular_formula

    assert molecular_formula(smiles) == formula
    assert hill_formula(*parse_formula(formula)) == formula


def test_molecular_formula_rejects_bad_smiles():
    pytest.importorskip("rdkit")
    from rewardzoo.tasks.smiles import molecular_formula

    with pytest.raises(ValueError, match="cannot parse"):
        molecular_formula("C(C")


@pytest.mark.parametrize(
    "text, parsed",
    [
        ("C2H6O", ({"C": 2, "H": 6, "O": 1}, 0)),
        ("  H6C2O\n", ({"C": 2, "H": 6, "O": 1}, 0)),  # any element order, surrounding whitespace
        ("CH3CH2OH", ({"C": 2, "H": 6, "O": 1}, 0)),  # a repeated symbol is summed
        ("C1H4", ({"C": 1, "H": 4}, 0)),
        ("H4N+", ({"H": 4, "N": 1}, 1)),
        ("Fe+2", ({"Fe": 1}, 2)),
        ("C2H3O2-", ({"C": 2, "H": 3, "O": 2}, -1)),
        ("", None),
        ("C2 H6", None),
        ("c2h6", None),
        ("C0H4", None),
        ("C02", None),
        ("Xx2", None),
        ("C2H6O is it", None),
        ("+", None),
        ("C2+-", None),
        ("C1234567", None),
        (None, None),
    ],
)
def test_parse_formula(text, parsed):
    got = parse_formula(text)
    assert (got if got is None else (dict(got[0]), got[1])) == parsed


FORMULA_LIKE = st.one_of(
    st.text(max_size=40), st.from_regex(r"\s?([A-Z][a-z]?[0-9]{0,8}){1,6}([+-][0-9]{0,4})?\s?", fullmatch=True)
)


@given(FORMULA_LIKE)
def test_parse_formula_never_raises(text):
    parsed = parse_formula(text)
    if parsed is not None:  # whatever parses, writes back and parses to the same counts
        assert parse_formula(hill_formula(*parsed)) == parsed


def test_hill_order():
    assert hill_formula(Counter({"O": 1, "C": 2, "H": 6})) == "C2H6O"
    assert hill_formula(Counter({"S": 1, "Cl": 1, "H": 1})) == "HClS"
    assert hill_formula(Counter({"Na": 1, "Cl": 1})) == "ClNa"
    assert hill_formula(Counter({"N": 1, "H": 4}), 1) == "H4N+"
    assert hill_formula(Counter({"O": 1}), -2) == "O-2"


def test_atom_l1_by_hand():
    assert atom_l1("C2H6O", "C2H6O") == 0
    assert atom_l1("C2H5O", "C2H6O") == 1  # one hydrogen missing
    assert atom_l1("C3H6", "C2H6O") == 2  # one C too many, one O missing
    assert atom_l1("CH4N+", "CH4N") == 0  # the charge does not count
    assert atom_l1(None, "C2H6O") == 9  # malformed = the empty formula: 2 + 6 + 1 atoms
    assert atom_l1("garbage", "C6H6") == 12


def test_task_metrics_by_hand(task):
    ref = task.eval[0].reference
    total = sum(parse_formula(ref)[0].values())
    rows = task.row_metrics([ref, None, ref + "C"], [ref] * 3, [{}] * 3)
    assert rows["correct"] == [1.0, 0.0, 0.0]
    assert rows["atom_l1"] == [0.0, float(total), 1.0]
    assert rows["atom_l1_rel"] == [0.0, 1.0, pytest.approx(1 / total)]
    assert task.evaluate([e.demonstration for e in task.eval], task.eval)["accuracy"] == 1.0


def test_parse_and_verify_ignore_element_order(task):
    assert task.parse(" H6OC2 ") == "C2H6O"
    assert task.parse("C2H6O!") is None
    assert task.verify("H6C2O", "C2H6O", {}) == 1.0
    assert task.verify("C2H6O+", "C2H6O", {}) == 0.0  # the charge must match
    assert task.verify(None, "C2H6O", {}) == 0.0


def test_repeated_symbols_beyond_the_count_limit_are_not_a_formula(task):
    assert parse_formula("B500000B500000") is None and task.parse("B500000B500000") is None
    assert parse_formula("B500000B499999") == (Counter({"B": 999_999}), 0)


@given(FORMULA_LIKE)
def test_parse_never_raises(task, text):
    answer = task.parse(text)
    assert answer is None or parse_formula(answer) is not None


def test_references_are_rdkit_formulas(task):
    from rewardzoo.tasks.smiles import molecular_formula

    for e in task.train[:50] + task.eval[:50]:
        assert e.reference == molecular_formula(e.meta["smiles"])
        assert e.prompt == e.meta["smiles"] + ">"
        assert e.demonstration == e.reference


def test_generated_sets_distinct_disjoint_and_short(task):
    train = [e.meta["smiles"] for e in task.train]
    held_out = [e.meta["smiles"] for e in task.eval]
    assert (len(train), len(held_out)) == (300, 60)
    assert len(set(train)) == 300 and len(set(held_out)) == 60
    assert not set(train) & set(held_out)
    assert max(map(len, train + held_out)) <= SMALL.max_smiles_len


def test_default_sizes_distinct():
    pytest.importorskip("rdkit")
    from rewardzoo.tasks.smiles import SmilesFormula

    t = SmilesFormula()
    smiles = {e.meta["smiles"] for e in t.train + t.eval}
    assert (len(t.train), len(t.eval), len(smiles)) == (2000, 200, 2200)


def test_reproducible_from_data_seed(task):
    from rewardzoo.tasks.smiles import SmilesFormula

    again = SmilesFormula(SMALL)
    assert again.train == task.train and again.eval == task.eval
    other = SmilesFormula(SmilesConfig(n_train=300, n_eval=60, data_seed=1))
    assert [e.prompt for e in other.eval] != [e.prompt for e in task.eval]


def test_tags_format():
    pytest.importorskip("rdkit")
    from rewardzoo.tasks.smiles import SmilesFormula

    t = SmilesFormula(SmilesConfig(n_train=5, n_eval=2, answer_format="tags"))
    e = t.eval[0]
    assert e.meta["smiles"] in e.prompt and "<answer>" in e.prompt
    assert e.demonstration == f"<answer>{e.reference}</answer>"
    assert t.score_completion(f"thinking... <answer>{e.reference}</answer>", e) == 1.0
    assert t.score_completion(e.reference, e) == 0.0


def test_bad_settings():
    pytest.importorskip("rdkit")
    from rewardzoo.tasks.smiles import SmilesFormula

    with pytest.raises(ValueError, match="answer_format"):
        SmilesFormula(SmilesConfig(answer_format="json"))
    with pytest.raises(ValueError, match="raise max_smiles_len"):
        SmilesFormula(SmilesConfig(n_train=40, n_eval=10, max_smiles_len=2))


def test_without_rdkit_says_how_to_install(monkeypatch):
    from rewardzoo.tasks.smiles import SmilesFormula

    monkeypatch.setitem(sys.modules, "rdkit", None)  # makes `import rdkit` raise ImportError
    with pytest.raises(ImportError, match=r"pip install 'rewardzoo\[chem\]'"):
        SmilesFormula(SMALL)
