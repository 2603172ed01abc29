"""Divergences: hand-computed known answers, the definitions, and Hypothesis properties.

Distributions are softmax(logits) with logits in [−30, 30] (float64), so entries reach ~1e−26 next to
entries near 1: near-degenerate cases are drawn as often as smooth ones.  Tolerances are absolute
1e−12 plus relative 1e−12 unless said otherwise.
"""

import ast
import doctest
import math
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from rewardzoo import divergences
from rewardzoo.divergences import js, kl, le_cam

LOG2 = math.log(2)
TOL = dict(rtol=1e-12, atol=1e-12)


def dist(*xs):
    return torch.tensor(xs, dtype=torch.float64)


@st.composite
def pairs(draw, min_size=2, max_size=50):
    """Two float64 distributions of the same support size (2–50), softmax of logits in [−30, 30]."""
    size = draw(st.integers(min_size, max_size))
    logits = st.lists(st.floats(-30, 30), min_size=size, max_size=size)
    p, q = (torch.softmax(torch.tensor(draw(logits), dtype=torch.float64), 0) for _ in range(2))
    return p, q


def test_hand_computed_half_half_vs_quarter():
    """p = (1/2, 1/2), q = (1/4, 3/4), m = (3/8, 5/8):
    KL(p‖q) = ½ log 2 + ½ log(2/3) = ½ log(4/3) = 0.1438410
    KL(q‖p) = ¼ log(1/2) + ¾ log(3/2) = ¾ log 3 − log 2 = 0.1308120
    JS = ½ KL(p‖m) + ½ KL(q‖m) = ¼ log(16/15) + ⅛ log(2/3) + ⅜ log(6/5) = 0.0338221
    LC = ½ ((1/4)²/(3/4) + (1/4)²/(5/4)) = ½ (1/12 + 1/20) = 1/15
    """
    p, q = dist(0.5, 0.5), dist(0.25, 0.75)
    assert kl(p, q).item() == pytest.approx(0.5 * math.log(4 / 3), rel=1e-14)
    assert kl(q, p).item() == pytest.approx(0.75 * math.log(3) - LOG2, rel=1e-14)
    expected_js = math.log(16 / 15) / 4 + math.log(2 / 3) / 8 + 3 * math.log(6 / 5) / 8
    assert js(p, q).item() == pytest.approx(expected_js, rel=1e-13)
    assert js(p, q).item() == pytest.approx(0.0338221, abs=1e-7)
    assert le_cam(p, q).item() == pytest.approx(1 / 15, rel=1e-14)


def test_disjoint_supports_reach_the_maxima():
    """p = (1, 0), q = (0, 1): KL = +inf, JS = ½ log 2 + ½ log 2 = log 2, LC = ½ (1/1 + 1/1) = 1."""
    p, q = dist(1, 0), dist(0, 1)
    assert kl(p, q).item() == math.inf
    assert js(p, q).item() == pytest.approx(LOG2, rel=1e-15)
    assert le_cam(p, q).item() == 1.0


def test_zeros_follow_the_conventions():
    """p = (1, 0), q = (½, ½): KL(p‖q) = 1·log 2 + 0·log 0 = log 2; KL(q‖p) = +inf (q > 0 = p).
    A coordinate where both are 0 adds nothing (no nan): ((½, ½, 0), (¼, ¾, 0)) gives the 2-point values."""
    p, q = dist(1, 0), dist(0.5, 0.5)
    assert kl(p, q).item() == pytest.approx(LOG2, rel=1e-15)
    assert kl(q, p).item() == math.inf
    a, b = dist(0.5, 0.5, 0), dist(0.25, 0.75, 0)
    for f in (kl, js, le_cam):
        assert f(a, b).item() == pytest.approx(f(a[:2], b[:2]).item(), rel=1e-15)
        assert f(b, a).item() == pytest.approx(f(b[:2], a[:2]).item(), rel=1e-15)


def test_no_normalisation_is_done():
    """Unnormalised inputs are used as given: KL((2, 2), (1, 1)) = 2 log 2 + 2 log 2 = 4 log 2."""
    assert kl(dist(2, 2), dist(1, 1)).item() == pytest.approx(4 * LOG2, rel=1e-15)


@pytest.mark.parametrize("f", [kl, js, le_cam])
def test_batched_over_leading_dims_and_broadcast(f):
    gen = torch.Generator().manual_seed(0)
    p = torch.softmax(torch.randn(3, 4, 7, generator=gen, dtype=torch.float64), -1)  # [3, 4, 7]
    q = torch.softmax(torch.randn(3, 4, 7, generator=gen, dtype=torch.float64), -1)  # [3, 4, 7]
    out = f(p, q)  # [3, 4]
    assert out.shape == (3, 4)
    looped = torch.stack([torch.stack([f(p[i, j], q[i, j]) for j in range(4)]) for i in range(3)])
    torch.testing.assert_close(out, looped, rtol=1e-14, atol=0)
    torch.testing.assert_close(
        f(p, q[0, 0]),
        torch.stack([f(p[i, j], q[0, 0]) for i in range(3) for j in range(4)]).reshape(3, 4),
        rtol=1e-14,
        atol=0,
    )


@pytest.mark.parametrize(
    "dtype, abs_tol", [(torch.float16, 1e-3), (torch.bfloat16, 1e-2), (torch.float32, 1e-6), (torch.float64, 1e-15)]
)
@pytest.mark.parametrize("f", [kl, js, le_cam])
def test_any_float_dtype(f, dtype, abs_tol):
    """The result keeps the input dtype; its error is that dtype's rounding (JS cancels: ~3e-3 in bf16)."""
    p, q = dist(0.5, 0.5).to(dtype), dist(0.25, 0.75).to(dtype)
    out = f(p, q)
    assert out.dtype == dtype
    assert out.double().item() == pytest.approx(f(p.double(), q.double()).item(), abs=abs_tol)


def test_doctests_pass():
    assert doctest.testmod(divergences).failed == 0


def test_bottom_layer_imports_only_torch():
    tree = ast.parse(Path(divergences.__file__).read_text())
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert imported == {"torch", "__future__"}


def by_definition(p, q):
    """KL, JS and LC computed term by term in Python floats, straight from the formulas."""
    p, q = p.tolist(), q.tolist()
    kl_ = lambda a, b: sum(x * math.log(x / y) for x, y in zip(a, b) if x > 0)  # noqa: E731
    m = [(x + y) / 2 for x, y in zip(p, q)]
    lc = 0.5 * sum((x - y) ** 2 / (x + y) for x, y in zip(p, q) if x + y > 0)
    return kl_(p, q), 0.5 * kl_(p, m) + 0.5 * kl_(q, m), lc


@settings(max_examples=200, deadline=None)
@given(pairs())
def test_matches_the_definitions(pq):
    p, q = pq
    want_kl, want_js, want_lc = by_definition(p, q)
    assert kl(p, q).item() == pytest.approx(want_kl, rel=1e-10, abs=1e-12)
    assert js(p, q).item() == pytest.approx(want_js, rel=1e-10, abs=1e-12)
    assert le_cam(p, q).item() == pytest.approx(want_lc, rel=1e-10, abs=1e-12)


@settings(max_examples=200, deadline=None)
@given(pairs())
def test_ranges_symmetry_and_zero_at_equality(pq):
    p, q = pq
    assert kl(p, q).item() >= -1e-12 and kl(p, p).item() == 0.0
    assert js(p, p).item() == 0.0 and le_cam(p, p).item() == 0.0
    torch.testing.assert_close(js(p, q), js(q, p), **TOL)
    torch.testing.assert_close(le_cam(p, q), le_cam(q, p), **TOL)
    assert -1e-12 <= js(p, q).item() <= LOG2 + 1e-12
    assert 0.0 <= le_cam(p, q).item() <= 1.0 + 1e-12


@settings(max_examples=100, deadline=None)
@given(pairs(), st.data())
def test_kl_is_inf_where_q_is_zero_on_the_support_of_p(pq, data):
    p, q = pq
    k = data.draw(st.integers(0, len(q) - 1))
    q = q.clone()
    q[k] = 0.0
    q = q / q.sum()  # [A] still a distribution, now with q_k = 0 < p_k
    assert kl(p, q).item() == math.inf
    assert math.isfinite(js(p, q).item()) and math.isfinite(le_cam(p, q).item())
