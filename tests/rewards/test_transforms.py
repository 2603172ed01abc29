"""g-transforms: the value and frozen-D* gradient identities of SPEC §4.4, the flags, and the numerics.

Random pairs (p, π) are softmax(logits) of support 2–50 with logits in [−30, 30], float64, so entries
near 1e−26 sit next to entries near 1.  D* = p / (p + π) is evaluated through its exact logit
log p − log π and ``from_logit`` (the clamped ``__call__`` would move D* < EPS).  Identities are
checked with ``torch.testing.assert_close(rtol=1e-9, atol=1e-9)``: |got − want| ≤ 1e−9 + 1e−9·|want|.
"""

import ast
import math
import runpy
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from rewardzoo.divergences import js, kl, le_cam
from rewardzoo.rewards import transforms
from rewardzoo.rewards.transforms import (
    EPS,
    G_TRANSFORMS,
    GTransform,
    frozen_d_star_flow,
    frozen_d_star_gradient,
    get_transform,
)

NAMES = ["D", "neg_log_one_minus_D", "log_D", "logit"]
LOG2 = math.log(2)
TOL = dict(rtol=1e-9, atol=1e-9)


def mid(p, pi):
    return (p + pi) / 2  # [..., A]


VALUE = {  # E_π[g(D*)] in closed form (the table's second column)
    "D": lambda p, pi: (1 - le_cam(p, pi)) / 2,
    "neg_log_one_minus_D": lambda p, pi: LOG2 - kl(pi, mid(p, pi)),
    "log_D": lambda p, pi: kl(pi, mid(p, pi)) - kl(pi, p) - LOG2,
    "logit": lambda p, pi: -kl(pi, p),
}
DESCENDS = {  # Div with E_π[g(D*) ∇log π] = −∇_θ Div, D* frozen (the table's third column)
    "D": lambda p, pi: kl(p, mid(p, pi)),
    "neg_log_one_minus_D": lambda p, pi: 2 * js(p, pi),
    "log_D": lambda p, pi: 2 * kl(mid(p, pi), p),
    "logit": lambda p, pi: kl(pi, p),
}


@st.composite
def pairs(draw):
    """(p, π logits θ): p = softmax of logits in [−30, 30], θ the policy's logits, support 2–50, float64."""
    size = draw(st.integers(2, 50))
    logits = st.lists(st.floats(-30, 30), min_size=size, max_size=size)
    p = torch.softmax(torch.tensor(draw(logits), dtype=torch.float64), 0)  # [A]
    return p, torch.tensor(draw(logits), dtype=torch.float64)  # [A], [A]


def g_at_optimum(g: GTransform, p: torch.Tensor, pi: torch.Tensor) -> torch.Tensor:
    """g(D*) with D* = p / (p + π), through the exact logit log p − log π."""
    return g.from_logit(torch.log(p) - torch.log(pi))  # [A]


def test_table_names_alias_and_lookup():
    assert sorted(G_TRANSFORMS) == sorted([*NAMES, "identity"])
    assert G_TRANSFORMS["identity"] is G_TRANSFORMS["D"]
    assert all(G_TRANSFORMS[n].name == n for n in NAMES)
    assert get_transform("identity") is get_transform("D")
    with pytest.raises(ValueError, match="g-transform must be one of .*'log_D'.*got 'sqrt'"):
        get_transform("sqrt")


def test_flags_follow_the_spec_table():
    """Only D has positive affinity and a bounded reward; −log(1 − D) has affinity but is unbounded."""
    flags = {n: (G_TRANSFORMS[n].positive_affinity, G_TRANSFORMS[n].bounded) for n in NAMES}
    assert flags == {
        "D": (True, True),
        "neg_log_one_minus_D": (True, False),
        "log_D": (False, False),
        "logit": (False, False),
    }


def test_hand_computed_values_at_half_half_vs_quarter():
    """p = (1/2, 1/2), π = (1/4, 3/4): D* = (2/3, 2/5), 1 − D* = (1/3, 3/5), m = (3/8, 5/8).
    E_π[D*]           = ¼·⅔ + ¾·⅖ = 7/15,  and (1 − LC)/2 = (1 − 1/15)/2 = 7/15
    E_π[−log(1 − D*)] = ¼ log 3 + ¾ log(5/3) = ¾ log 5 − ½ log 3 = 0.6577723
    E_π[log D*]       = ¼ log(2/3) + ¾ log(2/5) = log 2 − ¼ log 3 − ¾ log 5 = −0.7885843
    E_π[logit D*]     = ¼ log 2 + ¾ log(2/3) = log 2 − ¾ log 3 = −KL(π‖p) = −0.1308120
    Softmax π: ∇_θ log π_y = e_y − π, so E_π[g ∇log π] = π ⊙ (g − E_π[g]); for the logit
    g = (log 2, log(2/3)) and this is (¼(log 2 + 0.1308120), ¾(log(2/3) + 0.1308120)) = (0.2059898, −0.2059898).
    """
    p, pi = torch.tensor([0.5, 0.5], dtype=torch.float64), torch.tensor([0.25, 0.75], dtype=torch.float64)
    want = {
        "D": 7 / 15,
        "neg_log_one_minus_D": 0.75 * math.log(5) - 0.5 * math.log(3),
        "log_D": LOG2 - 0.25 * math.log(3) - 0.75 * math.log(5),
        "logit": LOG2 - 0.75 * math.log(3),
    }
    for name in NAMES:
        g = G_TRANSFORMS[name]
        assert (pi * g(p / (p + pi))).sum().item() == pytest.approx(want[name], rel=1e-12)
        assert VALUE[name](p, pi).item() == pytest.approx(want[name], rel=1e-12)
    assert want["neg_log_one_minus_D"] == pytest.approx(0.6577723, abs=1e-7)
    assert want["log_D"] == pytest.approx(-0.7885843, abs=1e-7)
    theta = torch.log(pi).requires_grad_()
    (torch.softmax(theta, 0) * g_at_optimum(G_TRANSFORMS["logit"], p, pi)).sum().backward()
    assert theta.grad.tolist() == pytest.approx([0.2059898, -0.2059898], abs=1e-7)


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=100, deadline=None)
@given(pq=pairs())
def test_value_identity(name, pq):
    """E_π[g(D*)] = Σ_y π(y) g(D*(y)) equals the closed form of the table, and the library's value_fn
    and divergence_fn are this file's transcription of the table."""
    p, theta = pq
    pi = torch.softmax(theta, 0)  # [A]
    got = (pi * g_at_optimum(G_TRANSFORMS[name], p, pi)).sum()
    torch.testing.assert_close(got, VALUE[name](p, pi), **TOL)
    torch.testing.assert_close(G_TRANSFORMS[name].value_fn(p, pi), VALUE[name](p, pi), **TOL)
    torch.testing.assert_close(G_TRANSFORMS[name].divergence_fn(p, pi), DESCENDS[name](p, pi), **TOL)


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=100, deadline=None)
@given(pq=pairs())
def test_frozen_d_star_gradient_identity(name, pq):
    """E_π[g(D*) ∇_θ log π] = ∇_θ Σ_y π_θ(y) g(D*(y)) with g(D*) detached, equals −∇_θ Div(p, π_θ)."""
    p, theta0 = pq
    theta = theta0.clone().requires_grad_()
    pi = torch.softmax(theta, 0)  # [A]
    reward = g_at_optimum(G_TRANSFORMS[name], p, pi).detach()  # [A] D* frozen at the current π
    (pg,) = torch.autograd.grad((pi * reward).sum(), theta, retain_graph=True)  # [A]
    (div_grad,) = torch.autograd.grad(DESCENDS[name](p, pi), theta)  # [A]
    torch.testing.assert_close(pg, -div_grad, **TOL)


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=50, deadline=None)
@given(pq=pairs())
def test_frozen_d_star_flow_is_the_softmax_image_of_the_divergence_descent(name, pq):
    """frozen_d_star_gradient = −∇_θ Div; frozen_d_star_flow = d/dε softmax(θ − ε ∇_θ Div) at ε = 0
    (a Jacobian-vector product by autograd), sums to 0 and never increases Div to first order:
    ⟨∇_π Div, dπ⟩ = −‖J ∇_π Div‖² ≤ 0."""
    p, theta0 = pq
    theta = theta0.clone().requires_grad_()
    (div_grad,) = torch.autograd.grad(DESCENDS[name](p, torch.softmax(theta, 0)), theta)  # [A]
    _, want = torch.autograd.functional.jvp(lambda t: torch.softmax(t, 0), theta0, -div_grad)  # [A]
    pi = torch.softmax(theta0, 0)  # [A]
    torch.testing.assert_close(frozen_d_star_gradient(G_TRANSFORMS[name], p, pi), -div_grad, **TOL)
    got = frozen_d_star_flow(G_TRANSFORMS[name], p, pi)  # [A]
    torch.testing.assert_close(got, want, **TOL)
    assert abs(got.sum().item()) < 1e-9
    pi_var = pi.clone().requires_grad_()
    (grad_pi,) = torch.autograd.grad(DESCENDS[name](p, pi_var), pi_var)  # [A]
    assert (grad_pi * got).sum().item() <= 1e-9


def test_frozen_d_star_flow_vanishes_at_the_reference_and_broadcasts():
    """At π = p every g(D*) is the constant g(½): no push.  A batch of policies [M, A] gives [M, A]."""
    p = torch.tensor([0.5, 0.3, 0.2], dtype=torch.float64)
    pis = torch.stack([p, torch.tensor([0.2, 0.3, 0.5], dtype=torch.float64)])  # [2, 3]
    for name in NAMES:
        flow = frozen_d_star_flow(G_TRANSFORMS[name], p, pis)  # [2, 3]
        assert flow.shape == (2, 3) and flow[0].abs().max().item() < 1e-15
        assert flow[1, 0].item() > 0 > flow[1, 2].item()  # mass moves toward the under-covered answer 0


@settings(max_examples=100, deadline=None)
@given(pq=pairs())
def test_log_d_divergence_forms_agree(pq):
    """2·KL(m ‖ p) = KL(π ‖ p) − 2·JS(p, π) as values, not only as gradients."""
    p, theta = pq
    pi = torch.softmax(theta, 0)  # [A]
    torch.testing.assert_close(2 * kl(mid(p, pi), p), kl(pi, p) - 2 * js(p, pi), **TOL)


GRID = torch.linspace(EPS, 1 - EPS, 2001, dtype=torch.float64)  # [2001]
LOGITS = torch.linspace(-30, 30, 6001, dtype=torch.float64)  # [6001]


@pytest.mark.parametrize("name", NAMES)
def test_strictly_increasing_on_a_grid(name):
    g = G_TRANSFORMS[name]
    assert (g(GRID).diff() > 0).all()
    assert (g.from_logit(LOGITS).diff() > 0).all()


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=100, deadline=None)
@given(a=st.floats(EPS, 1 - EPS - 1e-9), gap=st.floats(1e-9, 1))
def test_strictly_increasing(name, a, gap):
    b = min(a + gap, 1 - EPS)
    g = G_TRANSFORMS[name]
    assert g(torch.tensor(a, dtype=torch.float64)) < g(torch.tensor(b, dtype=torch.float64))


@pytest.mark.parametrize("name", NAMES)
def test_positive_affinity_flag_on_a_grid(name):
    """positive_affinity ⇔ g(D) ≥ 0, the reward of a verifier-failing row under r = v·g(D), for every D."""
    g = G_TRANSFORMS[name]
    assert (g(GRID) >= 0).all() == g.positive_affinity
    assert (g.from_logit(LOGITS) >= 0).all() == g.positive_affinity


@pytest.mark.parametrize("name", [n for n in NAMES if G_TRANSFORMS[n].positive_affinity])
@settings(max_examples=100, deadline=None)
@given(d=st.floats(0, 1))
def test_positive_affinity_holds_everywhere(name, d):
    """A passing row never scores below a failing one: v·g(D) = g(D) ≥ 0 = 0·g(D)."""
    assert G_TRANSFORMS[name](torch.tensor(d, dtype=torch.float64)).item() >= 0


@pytest.mark.parametrize("name", NAMES)
def test_bounded_flag(name):
    """bounded ⇔ sup |g(D)| < ∞ on (0, 1): |g| ≤ 1 for D = σ(±1e4), else |g| ≥ 1e3 there."""
    g = G_TRANSFORMS[name]
    extremes = g.from_logit(torch.tensor([-1e4, 1e4], dtype=torch.float64)).abs().max().item()
    assert (extremes <= 1) if g.bounded else (extremes >= 1e3)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("name", NAMES)
def test_finite_at_the_ends(name, dtype):
    g = G_TRANSFORMS[name]
    assert torch.isfinite(g(torch.tensor([0.0, 1.0], dtype=dtype))).all()
    assert torch.isfinite(g.from_logit(torch.tensor([-1e4, 1e4], dtype=dtype))).all()
    torch.testing.assert_close(
        g(torch.tensor([0.0, 1.0], dtype=dtype)), g(torch.tensor([EPS, 1 - EPS], dtype=dtype)), rtol=0, atol=0
    )


@pytest.mark.parametrize("name", NAMES)
def test_half_precision_is_computed_in_float32(name):
    out = G_TRANSFORMS[name](torch.tensor([0.0, 0.5, 1.0], dtype=torch.bfloat16))
    assert out.dtype == torch.float32 and torch.isfinite(out).all()


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=100, deadline=None)
@given(z=st.floats(-13, 13))
def test_call_agrees_with_from_logit(name, z):
    """Inside the clamp, g(σ(z)) = from_logit(z) up to the rounding of forming σ(z)."""
    g = G_TRANSFORMS[name]
    z = torch.tensor(z, dtype=torch.float64)
    torch.testing.assert_close(g(torch.sigmoid(z)), g.from_logit(z), rtol=1e-9, atol=1e-9)


def test_from_logit_forms_are_exact_against_the_naive_formulas():
    """On moderate logits the stable forms equal D, −log(1 − D), log D, log D − log(1 − D) computed directly."""
    z = torch.linspace(-20, 20, 401, dtype=torch.float64)  # [401]
    d = torch.sigmoid(z)  # [401]
    naive = {
        "D": d,
        "neg_log_one_minus_D": -torch.log1p(-d),
        "log_D": torch.log(d),
        "logit": torch.log(d) - torch.log1p(-d),
    }
    for name in NAMES:
        torch.testing.assert_close(G_TRANSFORMS[name].from_logit(z), naive[name], rtol=1e-7, atol=1e-12)
    assert G_TRANSFORMS["neg_log_one_minus_D"].from_logit(
        torch.tensor(25.0, dtype=torch.float64)
    ).item() == pytest.approx(25 + math.log1p(math.exp(-25)), rel=1e-16)


def test_imports_only_torch_and_divergences():
    tree = ast.parse(Path(transforms.__file__).read_text())
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert {m for m in imported if m.startswith("rewardzoo")} <= {"rewardzoo.divergences"}
    assert {m.split(".")[0] for m in imported} <= {
        "torch",
        "rewardzoo",
        "__future__",
        "collections",
        "dataclasses",
        "typing",
        "math",
    }


def test_plot_script_writes_both_figures(tmp_path):
    """``scripts/plot_transforms.py`` draws from the library and writes the two PNGs of the docs page."""
    script = runpy.run_path(str(Path(__file__).resolve().parents[2] / "scripts" / "plot_transforms.py"))
    script["main"](["--out", str(tmp_path)])
    for name in ("transforms_g.png", "transforms_divergences.png"):
        assert (tmp_path / name).stat().st_size > 10_000
