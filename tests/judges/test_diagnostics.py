"""The classifier diagnostics RAL's judge and VARL's discriminator share, against values worked by hand."""

import math

import pytest
import torch

from rewardzoo.judges.diagnostics import balanced_ece, classifier_diagnostics, reference_auc

# D⁺ on three references, D⁻ on two generated answers (each D inside a bin, away from a bin's edge).
POS, NEG = torch.tensor([0.95, 0.65, 0.35]), torch.tensor([0.25, 0.75])


def test_every_statistic_matches_its_hand_computed_value():
    out = classifier_diagnostics(POS, NEG)
    # accuracy: 2 of 3 references above ½, 1 of 2 generated below ½ → ½ (2/3 + 1/2) = 7/12
    assert out["accuracy_reference"] == pytest.approx(2 / 3)
    assert out["accuracy_generated"] == pytest.approx(1 / 2)
    assert out["accuracy"] == pytest.approx(7 / 12)
    # auc: of the 6 (reference, generated) pairs, 0.65 < 0.75 and 0.35 < 0.75 are lost → 4/6
    assert out["auc"] == pytest.approx(4 / 6)
    assert out["d_reference_mean"] == pytest.approx(0.65) and out["d_generated_mean"] == pytest.approx(0.5)
    # brier: ½ ((0.05² + 0.35² + 0.65²)/3 + (0.25² + 0.75²)/2) = ½ (0.1825 + 0.3125)
    assert out["brier"] == pytest.approx(0.2475)
    # ece, 10 bins: every D in a bin of its own; weights 1/6 (references), 1/4 (generated):
    # |0.05/6| + |0.35/6| + |0.65/6| + |−0.25/4| + |−0.75/4| = 0.175 + 0.25
    assert out["ece"] == pytest.approx(0.425)


def test_ece_nets_the_gaps_within_a_bin():
    # 2 bins: [0, ½) holds 0.35 (+0.65/6) and 0.25 (−0.25/4): 11/240; [½, 1] holds 0.95, 0.65 (+0.4/6) and
    # 0.75 (−0.75/4): −29/240 → 40/240, less than the 0.425 of ten bins
    assert balanced_ece(POS, NEG, bins=2) == pytest.approx(1 / 6)


def test_a_classifier_that_says_half_everywhere_is_calibrated_but_uninformative():
    out = classifier_diagnostics(torch.full((4,), 0.5), torch.full((7,), 0.5))
    assert out["ece"] == pytest.approx(0.0) and out["brier"] == pytest.approx(0.25) and out["auc"] == 0.5
    assert out["accuracy"] == 0.0  # D > ½ says "reference", D < ½ "generated": ½ is neither


def test_a_perfect_classifier():
    out = classifier_diagnostics(torch.ones(3), torch.zeros(5))  # D = 1 falls in the last bin
    assert (out["accuracy"], out["auc"], out["brier"], out["ece"]) == (1.0, 1.0, 0.0, 0.0)


def test_the_classes_weigh_equally_whatever_their_sizes():
    few = classifier_diagnostics(torch.tensor([0.8]), torch.tensor([0.4]))
    many = classifier_diagnostics(torch.tensor([0.8]), torch.tensor([0.4] * 9))
    assert few == pytest.approx(many)


def test_empty_sides():
    assert math.isnan(reference_auc(POS, torch.tensor([]))) and math.isnan(balanced_ece(torch.tensor([]), NEG))
    with pytest.raises(ValueError, match="needs references and generated answers; got 3 and 0"):
        classifier_diagnostics(POS, torch.tensor([]))
    with pytest.raises(ValueError, match="bins must be >= 1"):
        balanced_ece(POS, NEG, bins=0)
