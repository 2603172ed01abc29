"""The four g-transforms of a discriminator probability D, and the divergence each one descends
(docs/rewards/transforms.md).

A learned reward is r = g(D) (VARL gates it, r = v · g(D)).  With reference p, policy π, the optimal
discriminator D* = p / (p + π) (so 1 − D* = π / (p + π), logit D* = log(p / π)) and m = (p + π) / 2:

| g(D)             | E_π[g(D*)]  (value identity)     | frozen-D* gradient descends        | affinity / bounded |
| ---------------- | -------------------------------- | ---------------------------------- | ------------------ |
| D                | ½ − ¼ Σ(p−π)²/(p+π) = (1 − LC)/2 | KL(p ‖ m)                          | yes / yes          |
| −log(1 − D)      | log 2 − KL(π ‖ m)                | 2·JS(p, π)                         | yes / no           |
| log D            | KL(π ‖ m) − KL(π ‖ p) − log 2    | 2·KL(m ‖ p) = KL(π ‖ p) − 2·JS     | no / no            |
| log D − log(1−D) | −KL(π ‖ p)                       | KL(π ‖ p)                          | no / no            |

LC = ½ Σ(p−π)²/(p+π) (Vincze–Le Cam), JS = ½ KL(p ‖ m) + ½ KL(π ‖ m); all in :mod:`rewardzoo.divergences`.

Value identities (sums over answers y; substitute D* and split the log):
    D            π·p/(p+π) = ¼ [(p+π) − (p−π)²/(p+π)]          ⇒ E_π[D*] = ½ − ¼ Σ(p−π)²/(p+π) = (1 − LC)/2
    −log(1 − D)  log((p+π)/π) = log 2 − log(π/m)              ⇒ log 2 − KL(π ‖ m)
    log D        log(p/(p+π)) = −log(π/p) + log(π/m) − log 2  ⇒ KL(π ‖ m) − KL(π ‖ p) − log 2
    logit        log(D*/(1 − D*)) = log(p/π)                   ⇒ −KL(π ‖ p)

Gradient identities.  "Div is descended" means E_π[g(D*) ∇log π] = −∇_θ Div(π_θ), D* held fixed (at
the current π): the policy-gradient ascent direction of the reward is the descent direction of Div.
With D* fixed, E_π[g(D*) ∇log π] = Σ_y g(D*(y)) ∇π(y); so any Div with ∂Div/∂π(y) = −g(D*(y)) + c
qualifies (c is free because Σ_y ∇π(y) = 0).  The partial derivatives of the table's divergences:
    ∂KL(p ‖ m)/∂π   = −p/(2m)                                    = −D*
    ∂2JS(p, π)/∂π   = log(π/m) + 1 − p/(2m) − π/(2m) = log(π/m)   = log(1 − D*) + log 2
    ∂2KL(m ‖ p)/∂π  = log(m/p) + 1                               = −log D* − log 2 + 1
    ∂KL(π ‖ p)/∂π   = log(π/p) + 1                               = −logit D* + 1
and 2·KL(m ‖ p) = Σ(p+π) log(m/p) = KL(π ‖ p) − KL(p ‖ m) − KL(π ‖ m) = KL(π ‖ p) − 2·JS(p, π) exactly.
Every row of the SPEC table is exact: no missing factor, and no constant (each Div is 0 at π = p).
The value and the descended divergence differ for g = D: the *full* gradient of E_π[D*_π] (D*
following π) is −½ ∇LC, but the frozen-D* gradient is −∇KL(p ‖ m).  Property-tested in
``tests/rewards/test_transforms.py`` (float64, softmax π, autograd).

Flags.  *Positive affinity*: g(D) ≥ 0 for every D, i.e. never below the 0 that a verifier-failing
row gets under r = v · g(D).  *Bounded*: sup over D ∈ (0, 1) of |g(D)| is finite (log D is bounded
above by 0, not below).  Only D has both, hence VARL's default.

Numerics (our choice): ``g(d)`` clamps d to [EPS, 1 − EPS], EPS = 1e-6, so every g is finite at d = 0
and 1 (|g| ≤ log(1/EPS) ≈ 13.8), and then equals ``g.from_logit(logit(d))``.  ``from_logit(z)``
evaluates g from the discriminator logit z (D = σ(z)) without forming D, exact for every finite z:
σ(z), softplus(z) = −log σ(−z), logsigmoid(z) = −softplus(−z), and z itself.

Each row's two identities are also code, ``value_fn(p, π)`` and ``divergence_fn(p, π)``.  Where
each g pushes a softmax policy π = softmax(θ): ascent on the frozen-D* reward moves θ along
∇_θ = π ⊙ (g − E_π[g]) (g = g(D*) per answer; :func:`frozen_d_star_gradient`), and so π along
dπ = J ∇_θ with J = diag(π) − π πᵀ the softmax Jacobian (:func:`frozen_d_star_flow`), i.e.
dπ = −J J ∇_π Div: a descent direction of the row's divergence, within the simplex (Σ dπ = 0).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from rewardzoo.divergences import js, kl, le_cam

DivergenceFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]  # (p, π) [..., A] → [...]

EPS = 1e-6
"""Clamp of D in ``GTransform.__call__``: d ∈ [EPS, 1 − EPS] (our choice, not from a paper)."""


@dataclass(frozen=True)
class GTransform:
    """One reward transform g of a discriminator probability D (a row of the module's table)."""

    name: str
    """Key in :data:`G_TRANSFORMS`."""
    divergence: str
    """What its frozen-D* policy gradient descends: E_π[g(D*) ∇log π] = −∇_θ (this)."""
    value_identity: str
    """E_π[g(D*)] in closed form, D* = p / (p + π)."""
    positive_affinity: bool
    """g(D) ≥ 0 for every D: a verifier-passing row never scores below a failing one under r = v · g(D)."""
    bounded: bool
    """sup over D ∈ (0, 1) of |g(D)| is finite."""
    from_logit: Callable[[torch.Tensor], torch.Tensor]
    """g(σ(z)) from the discriminator logit ``z [*]``: no clamp, accurate for every finite z (``[*]`` → ``[*]``)."""
    value_fn: DivergenceFn | None = None
    """``value_identity`` as code: (p, π) → E_π[g(D*)] (None for a transform of your own without a closed form)."""
    divergence_fn: DivergenceFn | None = None
    """``divergence`` as code: (p, π) → the divergence the frozen-D* gradient descends (None: no closed form)."""

    def __call__(self, d: torch.Tensor) -> torch.Tensor:
        """g(d) for probabilities ``d [*]``, d clamped to [EPS, 1 − EPS] (fp16/bf16 are computed in fp32)."""
        d = d.to(torch.promote_types(d.dtype, torch.float32))  # [*] 1 − EPS must be representable
        return self.from_logit(torch.logit(d, eps=EPS))  # [*]


def softplus(z: torch.Tensor) -> torch.Tensor:
    """−log(1 − σ(z)) = log(1 + e^z), exact for every finite z (``[*]``).

    ``F.softplus`` returns z itself above z = 20, off by up to 2e-9; this form is not.
    """
    return z.clamp(min=0) + torch.log1p(torch.exp(-z.abs()))  # [*]


def logit_identity(z: torch.Tensor) -> torch.Tensor:
    """log D − log(1 − D) with D = σ(z) is z itself (``[*]``)."""
    return z  # [*]


def _mid(p: torch.Tensor, pi: torch.Tensor) -> torch.Tensor:
    return (p + pi) / 2  # [..., A] m


LOG2 = math.log(2)
G_D = GTransform(
    name="D",
    divergence="KL(p ‖ m)",
    value_identity="½ − ¼·Σ(p−π)²/(p+π) = (1 − LC(p, π))/2",
    positive_affinity=True,
    bounded=True,
    from_logit=torch.sigmoid,
    value_fn=lambda p, pi: (1 - le_cam(p, pi)) / 2,
    divergence_fn=lambda p, pi: kl(p, _mid(p, pi)),
)
G_NEG_LOG_ONE_MINUS_D = GTransform(
    name="neg_log_one_minus_D",
    divergence="2·JS(p, π)",
    value_identity="log 2 − KL(π ‖ m)",
    positive_affinity=True,
    bounded=False,
    from_logit=softplus,
    value_fn=lambda p, pi: LOG2 - kl(pi, _mid(p, pi)),
    divergence_fn=lambda p, pi: 2 * js(p, pi),
)
G_LOG_D = GTransform(
    name="log_D",
    divergence="2·KL(m ‖ p) = KL(π ‖ p) − 2·JS(p, π)",
    value_identity="KL(π ‖ m) − KL(π ‖ p) − log 2",
    positive_affinity=False,
    bounded=False,
    from_logit=F.logsigmoid,
    value_fn=lambda p, pi: kl(pi, _mid(p, pi)) - kl(pi, p) - LOG2,
    divergence_fn=lambda p, pi: 2 * kl(_mid(p, pi), p),
)
G_LOGIT = GTransform(
    name="logit",
    divergence="KL(π ‖ p)",
    value_identity="−KL(π ‖ p)",
    positive_affinity=False,
    bounded=False,
    from_logit=logit_identity,
    value_fn=lambda p, pi: -kl(pi, p),
    divergence_fn=lambda p, pi: kl(pi, p),
)

G_TRANSFORMS: dict[str, GTransform] = {
    "D": G_D,
    "identity": G_D,  # alias: the RAL recipes name the default transform "identity"
    "neg_log_one_minus_D": G_NEG_LOG_ONE_MINUS_D,
    "log_D": G_LOG_D,
    "logit": G_LOGIT,
}


def _softmax_jvp(pi: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return pi * (v - (pi * v).sum(-1, keepdim=True))  # [..., A] (diag π − π πᵀ) v


def frozen_d_star_gradient(g: GTransform, p: torch.Tensor, pi: torch.Tensor) -> torch.Tensor:
    """E_π[g(D*) ∇_θ log π] for a softmax policy π = softmax(θ), D* = p / (p + π) held fixed
    (``p, pi [..., A]`` with π > 0 → ``[..., A]``): the policy gradient of the reward, = −∇_θ Div.

    Closed form, as ∇_θ log π(y) = e_y − π: π ⊙ (g(D*) − E_π[g(D*)]).  g(D*) comes from the exact logit
    log p − log π (p = 0 gives the limit −inf, so keep p > 0 for the log-based transforms).
    """
    reward = g.from_logit(torch.log(p) - torch.log(pi))  # [..., A] g(D*) per answer
    return _softmax_jvp(pi, reward)  # [..., A]


def frozen_d_star_flow(g: GTransform, p: torch.Tensor, pi: torch.Tensor) -> torch.Tensor:
    """dπ of one unit step along :func:`frozen_d_star_gradient` in θ: J ∇_θ with the softmax Jacobian
    J = diag(π) − π πᵀ (``[..., A]``, summing to 0 along A) — where g pushes the policy on the simplex."""
    return _softmax_jvp(pi, frozen_d_star_gradient(g, p, pi))  # [..., A]


def get_transform(name: str) -> GTransform:
    """The g-transform called ``name``; a ValueError lists the valid names."""
    if name not in G_TRANSFORMS:
        raise ValueError(f"g-transform must be one of {sorted(G_TRANSFORMS)}, got {name!r}")
    return G_TRANSFORMS[name]
