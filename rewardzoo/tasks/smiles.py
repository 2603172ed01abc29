"""SMILES → molecular formula (RAL paper, §B.3): name the formula of a molecule, implicit
hydrogens included.

The prompt is a canonical SMILES string; the reference is RDKit's ``CalcMolFormula`` of the
sanitised molecule, which counts implicit hydrogens and writes RDKit's variant of Hill notation:
C, then H, then the other elements alphabetically (unlike strict Hill, H stays first without carbon:
``HBr``, not ``BrH``), e.g. ``CCO`` → ``C2H6O``, ``c1ccccc1`` → ``C6H6``.  A net charge is a suffix,
as RDKit writes it: ``[NH4+]`` → ``H4N+``, ``CC(=O)[O-]`` → ``C2H3O2-``, a charge of two ``+2``.
The generated molecules are all neutral overall (a nitro group ``[N+](=O)[O-]`` has charges that
cancel), so the suffix only matters for formulas users compute with :func:`molecular_formula`.

Answers: the format parser accepts any formula made of element symbols with optional counts and an
optional charge suffix, and rewrites it in that notation, so element order is not graded: ``H6C2O``
and ``C2OH6`` both read as ``C2H6O``.  A symbol written twice is summed (``CH3CH2OH`` reads as
``C2H6O``).  Anything else (an unknown symbol, a zero count, text around the formula) is malformed.
The verifier is exact match of element counts and charge.  Held-out metrics: exact accuracy,
``atom_l1`` = Σ_element |n_pred − n_ref| over all atoms including hydrogens (the charge does not
enter it), and ``atom_l1_rel`` = min(atom_l1 / total reference atoms, 1).  A malformed answer counts
as the empty formula: ``atom_l1`` = the reference's total atom count, ``atom_l1_rel`` = 1.

Deviations from the paper:
1. The paper takes 17,938 training and 800 evaluation molecules from a dataset; nothing here is
   downloaded, so molecules come from a small random grammar (aliphatic chains with branches, double
   and triple bonds, N/O/S and halogens, aliphatic and aromatic ring fragments, a few functional
   groups), are parsed and sanitised by RDKit (invalid valences are rejected), canonicalised, and
   deduplicated by canonical SMILES.  Train and eval are disjoint.  They are far simpler and smaller
   than drug-like molecules (at most ``max_smiles_len`` characters, default 40, for the
   character-level CPU model).
2. The data depend on ``data_seed`` and on the RDKit version (canonical SMILES can change between
   RDKit releases); with one RDKit version they are reproducible.
3. Whether the paper grades formulas as strings or as element counts is not stated; we grade counts.

RDKit is an optional extra (``pip install 'rewardzoo[chem]'``): this module imports without it, and
building the task without it raises an ImportError that says so.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from dataclasses import dataclass
from typing import ClassVar

from rewardzoo.core.config import check_section
from rewardzoo.core.types import Example
from rewardzoo.tasks.base import Task
from rewardzoo.tasks.checks.formats import ANSWER_FORMATS, format_answer

ELEMENTS = frozenset(
    "H He Li Be B C N O F Ne Na Mg Al Si P S Cl Ar K Ca Sc Ti V Cr Mn Fe Co Ni Cu Zn Ga Ge As Se Br Kr "
    "Rb Sr Y Zr Nb Mo Tc Ru Rh Pd Ag Cd In Sn Sb Te I Xe Cs Ba La Ce Pr Nd Pm Sm Eu Gd Tb Dy Ho Er Tm "
    "Yb Lu Hf Ta W Re Os Ir Pt Au Hg Tl Pb Bi Po At Rn Fr Ra Ac Th Pa U Np Pu Am Cm Bk Cf Es Fm Md No "
    "Lr Rf Db Sg Bh Hs Mt Ds Rg Cn Nh Fl Mc Lv Ts Og".split()
)
MAX_FORMULA_CHARS = 1000
"""Longest formula read, in characters (every element once with a six-digit count is ~950)."""
_FORMULA = re.compile(r"((?:[A-Z][a-z]?(?:[1-9][0-9]{0,5})?)+)([+-](?:[1-9][0-9]{0,2})?)?")  # counts < 10⁶
_TERM = re.compile(r"([A-Z][a-z]?)([0-9]*)")

# The molecule grammar.  Ring fragments close every ring they open, so their ring digits never clash.
_ATOMS = ("C",) * 6 + ("N", "O", "O", "S")
_HALOGENS = ("F", "Cl", "Br", "I")
_RINGS = (
    "c1ccccc1",
    "c1ccncc1",
    "c1ccoc1",
    "c1ccsc1",
    "c1cc[nH]c1",
    "c1cncnc1",
    "c1ccc2ccccc2c1",
    "C1CC1",
    "C1CCC1",
    "C1CCCC1",
    "C1CCCCC1",
    "C1CCOC1",
    "C1CCNCC1",
    "C1COCCN1",
)
_GROUPS = ("C(=O)O", "C(=O)N", "C#N", "[N+](=O)[O-]", "S(=O)(=O)N", "C(F)(F)F", "C=O", "OC(=O)C")


@dataclass
class SmilesConfig:
    """Settings of the SMILES → formula task."""

    RANGES: ClassVar[dict[str, str]] = {
        "n_train": "[1, inf)",
        "n_eval": "[1, inf)",
        "max_smiles_len": "[2, inf)",
        "data_seed": "(-inf, inf)",
    }

    n_train: int = 2000
    """Training molecules (the paper uses 17,938; generating that many takes a few seconds)."""
    n_eval: int = 200
    """Held-out molecules, disjoint from the training molecules (the paper uses 800)."""
    max_smiles_len: int = 40
    """Longest canonical SMILES kept, in characters (keeps prompts short for the character-level model)."""
    answer_format: str = "plain"
    """'plain' (the completion is the formula) or 'tags' (<answer>…</answer>)."""
    data_seed: int = 0
    """Seed of the molecule generator (independent of the run's seed)."""

    def validate(self) -> None:
        """Raise ValueError, saying what to change, on settings that cannot run (ranges: ``RANGES``)."""
        if self.answer_format not in ANSWER_FORMATS:
            raise ValueError(f"answer_format must be one of {', '.join(ANSWER_FORMATS)}; got {self.answer_format!r}")


def _rdkit():
    """RDKit's ``Chem``, ``rdBase`` and ``CalcMolFormula``, or an ImportError that says how to install it."""
    try:
        from rdkit import Chem, rdBase
        from rdkit.Chem.rdMolDescriptors import CalcMolFormula
    except ImportError as err:
        raise ImportError(
            "the SMILES → formula task needs RDKit; install it with: pip install 'rewardzoo[chem]'"
        ) from err
    return Chem, rdBase, CalcMolFormula


def molecular_formula(smiles: str) -> str:
    """Hill-notation formula of a SMILES string, implicit hydrogens and net charge included.

    >>> molecular_formula("CCO")
    'C2H6O'

    Raises ValueError for a SMILES that RDKit cannot parse and sanitise.
    """
    Chem, rdBase, CalcMolFormula = _rdkit()
    with rdBase.BlockLogs():
        mol = Chem.MolFromSmiles(smiles)
    if mol is None:
        raise ValueError(f"RDKit cannot parse or sanitise the SMILES {smiles!r}")
    return CalcMolFormula(mol)


def parse_formula(text: str | None) -> tuple[Counter, int] | None:
    """Element counts and net charge of a formula string, or None if it is not one.  Never raises;
    digits are ASCII only, and a text longer than :data:`MAX_FORMULA_CHARS` is no formula (bounded
    work on any input).

    >>> parse_formula("C2H6O")
    (Counter({'H': 6, 'C': 2, 'O': 1}), 0)
    """
    if not isinstance(text, str) or len(text := text.strip()) > MAX_FORMULA_CHARS:
        return None
    found = _FORMULA.fullmatch(text)
    if found is None:
        return None
    counts: Counter = Counter()
    for symbol, count in _TERM.findall(found.group(1)):
        if symbol not in ELEMENTS:
            return None
        counts[symbol] += int(count or 1)
    if any(n >= 10**6 for n in counts.values()):  # "B500000B500000": a count the written formula could not hold
        return None
    sign = found.group(2) or ""
    charge = (int(sign[1:] or 1) if sign else 0) * (-1 if sign.startswith("-") else 1)
    return counts, charge


def hill_formula(counts: Counter, charge: int = 0) -> str:
    """Write element counts the way RDKit's ``CalcMolFormula`` does: carbon, hydrogen, then the other
    elements alphabetically, and the charge suffix ``+``, ``-``, ``+2``, ….

    >>> hill_formula(Counter({"O": 1, "H": 6, "C": 2}))
    'C2H6O'
    """
    order = ["C", "H"] + sorted(e for e in counts if e not in ("C", "H"))
    text = "".join(e + (str(counts[e]) if counts[e] > 1 else "") for e in order if counts[e] > 0)
    if charge:
        text += ("+" if charge > 0 else "-") + (str(abs(charge)) if abs(charge) > 1 else "")
    return text


def atom_l1(answer: str | None, reference: str) -> float:
    """Σ_element |n_pred − n_ref| over all atoms (hydrogens included, charge ignored).

    A malformed answer counts as the empty formula, i.e. the reference's total atom count.
    """
    gold = parse_formula(reference)
    if gold is None:
        raise ValueError(f"reference {reference!r} is not a molecular formula")
    pred = parse_formula(answer)
    counts = pred[0] if pred is not None else Counter()
    return float(sum(abs(counts[e] - gold[0][e]) for e in set(counts) | set(gold[0])))


def _chain(rng: random.Random, depth: int) -> str:
    """One random SMILES chain: 1–4 units (atom, ring fragment or group), each maybe with a branch."""
    parts: list[str] = []
    for _ in range(rng.randint(1, 4)):
        r = rng.random()
        if r < 0.18:
            parts.append(rng.choice(_RINGS))
        elif r < 0.28:
            parts.append(rng.choice(_GROUPS))
        else:
            bond = rng.choices(("", "=", "#"), (0.85, 0.12, 0.03))[0] if parts else ""
            parts.append(bond + rng.choice(_ATOMS))
        if rng.random() < 0.25:
            leaf = depth >= 2 or rng.random() < 0.3
            parts.append("(" + (rng.choice(_HALOGENS) if leaf else _chain(rng, depth + 1)) + ")")
    return "".join(parts)


def generate_molecules(n: int, seed: int = 0, max_smiles_len: int = 40) -> list[tuple[str, str]]:
    """``n`` distinct molecules as (canonical SMILES, formula), drawn from the grammar with ``seed``.

    Molecules RDKit rejects, with fewer than two heavy atoms, longer than ``max_smiles_len`` or
    already drawn are skipped.  Raises ValueError when the grammar cannot supply ``n`` of them.
    """
    Chem, rdBase, CalcMolFormula = _rdkit()
    rng = random.Random(seed)
    found: dict[str, str] = {}
    budget = 20 * n + 2_000
    with rdBase.BlockLogs():
        for _ in range(budget):
            if len(found) == n:
                break
            mol = Chem.MolFromSmiles(_chain(rng, 0))
            if mol is None or mol.GetNumAtoms() < 2:
                continue
            smiles = Chem.MolToSmiles(mol)
            if len(smiles) <= max_smiles_len and smiles not in found:
                found[smiles] = CalcMolFormula(mol)
    if len(found) < n:
        raise ValueError(
            f"the molecule grammar gave only {len(found)} distinct molecules of at most "
            f"{max_smiles_len} characters in {budget} draws, fewer than the {n} asked for; "
            f"lower n_train/n_eval or raise max_smiles_len"
        )
    return list(found.items())


class SmilesFormula(Task):
    """``SMILES>`` → the molecular formula in Hill notation (implicit hydrogens included)."""

    name = "smiles"

    def __init__(self, cfg: SmilesConfig | None = None):
        cfg = cfg or SmilesConfig()
        check_section(cfg, "task.smiles")
        self.cfg = cfg
        self.answer_format = cfg.answer_format
        molecules = generate_molecules(cfg.n_train + cfg.n_eval, cfg.data_seed, cfg.max_smiles_len)
        examples = [self._example(smiles, formula) for smiles, formula in molecules]
        super().__init__(train=examples[cfg.n_eval :], eval=examples[: cfg.n_eval])

    def _example(self, smiles: str, formula: str) -> Example:
        if self.answer_format == "plain":
            prompt = f"{smiles}>"  # '>' never occurs in a molecule's SMILES, so it marks the prompt's end
        else:
            prompt = (
                f"What is the molecular formula of the molecule with SMILES {smiles}? Count the implicit "
                f"hydrogens and write it in Hill notation inside <answer></answer> tags."
            )
        return Example(prompt, formula, format_answer(formula, self.answer_format), {"smiles": smiles})

    def parse(self, completion: str) -> str | None:
        """The answer rewritten in Hill notation if it is a formula, else None.  Never raises."""
        parsed = parse_formula(super().parse(completion))
        return None if parsed is None else hill_formula(*parsed)

    def verify(self, answer: str | None, reference: str, meta: dict) -> float:
        """1.0 when the element counts and the charge equal the reference's, else 0.0.  Never raises."""
        pred = parse_formula(answer)
        return float(pred is not None and pred == parse_formula(reference))

    def row_metrics(
        self, answers: list[str | None], references: list[str], metas: list[dict]
    ) -> dict[str, list[float]]:
        """``correct``, ``atom_l1`` and ``atom_l1_rel`` of every row."""
        rows = super().row_metrics(answers, references, metas)
        rows["atom_l1"] = [atom_l1(a, r) for a, r in zip(answers, references)]
        totals = [sum(parse_formula(r)[0].values()) for r in references]
        rows["atom_l1_rel"] = [min(d / max(t, 1), 1.0) for d, t in zip(rows["atom_l1"], totals)]
        return rows
