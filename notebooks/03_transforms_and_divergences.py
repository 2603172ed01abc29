# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 3. g-transforms and divergences
#
# A learned reward scores an answer y by a discriminator's probability D(y) that y is a *reference*
# answer rather than one of the policy's, through a transform g: r = g(D) (RAL, notebook 4), or
# r = v · g(D) behind a verifier v (VARL).  Which g you pick decides which divergence between the
# reference distribution p and the policy π the policy gradient descends.  This notebook checks the
# four rows of that table numerically and draws where each transform pushes a policy.
#
# Everything comes from two modules: `rewardzoo/rewards/transforms.py` (the four `GTransform`s, each
# with its identities as text *and* as code) and `rewardzoo/divergences.py` (`kl`, `js`, `le_cam`).
# The derivations are on `docs/rewards/transforms.md`.

# %%
# Outside this repository's environment (Colab, a fresh Jupyter) rewardzoo is not importable:
# this cell installs it from a checkout (by default the folder above this notebook) or from
# the git URL in REWARDZOO_REPO (in Colab: %env REWARDZOO_REPO=<url>).  Elsewhere it does nothing.
import importlib.util
import os
import subprocess
import sys

if importlib.util.find_spec("rewardzoo") is None:
    repo = os.environ.get("REWARDZOO_REPO", "..")
    if "://" in repo or repo.endswith(".git"):  # a git URL: clone it here
        subprocess.run(["git", "clone", "-q", "--depth=1", repo, "rewardzoo-src"], check=True)
        repo = "rewardzoo-src"
    if not os.path.isfile(os.path.join(repo, "rewardzoo", "__init__.py")):
        raise FileNotFoundError(
            f"no rewardzoo checkout at {os.path.abspath(repo)}: set REWARDZOO_REPO to one, or to its git URL"
        )
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "-e", repo], check=True)
    sys.path.insert(0, os.path.abspath(repo))  # importable at once, without a kernel restart

# %%
import time

notebook_start = time.perf_counter()

import math
import warnings

warnings.filterwarnings("ignore", message="IProgress not found")  # tqdm's notebook bars; nothing here shows one

import matplotlib.pyplot as plt
import torch

from rewardzoo.divergences import js, kl, le_cam
from rewardzoo.rewards.transforms import G_TRANSFORMS, frozen_d_star_flow, frozen_d_star_gradient

NAMES = ["D", "neg_log_one_minus_D", "log_D", "logit"]
LABELS = {"D": "D", "neg_log_one_minus_D": "−log(1 − D)", "log_D": "log D", "logit": "log D − log(1 − D)"}
torch.set_default_dtype(torch.float64)

# %% [markdown]
# ## The table
#
# With D* = p / (p + π) the best discriminator between p and π, and m = (p + π) / 2, every
# transform carries its value identity E_π[g(D*)], the divergence its frozen-D* gradient descends,
# and two flags: *positive affinity* (g ≥ 0, so a verifier-passing answer never scores below a
# failing one's 0) and *bounded* (|g| finite on (0, 1)).

# %%
print(f"{'g(D)':<20} {'E_π[g(D*)]':<38} {'descends':<36} affinity  bounded")
for name in NAMES:
    g = G_TRANSFORMS[name]
    print(f"{LABELS[name]:<20} {g.value_identity:<38} {g.divergence:<36} {str(g.positive_affinity):<9} {g.bounded}")

# %% [markdown]
# ## The four g(D)
#
# All four increase with D, so all four prefer answers the judge finds more reference-like.  They
# differ at the ends: only D stays in [0, 1]; −log(1 − D) is ≥ 0 but explodes as D → 1; log D and
# the logit go to −∞ as D → 0, so an answer the judge is sure about can be punished without bound.
# (The library clamps D to [1e-6, 1 − 1e-6] when it is given a probability, and evaluates g from
# the judge's logit when it has one, `g.from_logit(z)`, which needs no clamp.)

# %%
d = torch.linspace(1e-3, 1 - 1e-3, 999)
fig, ax = plt.subplots(figsize=(6, 4))
for name in NAMES:
    ax.plot(d, G_TRANSFORMS[name](d), label=LABELS[name])
ax.axhline(0, color="grey", lw=0.8)
ax.set(xlabel="D (judge's probability that the answer is a reference)", ylabel="reward g(D)", ylim=(-5, 5))
ax.legend()
plt.show()

# %% [markdown]
# ## The value identities, on a random pair of distributions
#
# Draw a reference p and a policy π over 6 answers.  The expected reward under π with the optimal
# judge is a plain sum, Σ_y π(y) g(D*(y)); `value_fn` is the closed form of the table.  They agree
# to rounding: E_π[D*] = (1 − LC)/2, for instance, is why the default transform D is tied to the
# Vincze–Le Cam divergence.

# %%
gen = torch.Generator().manual_seed(0)
p = torch.softmax(torch.randn(6, generator=gen), 0)
pi = torch.softmax(torch.randn(6, generator=gen), 0)
z_star = torch.log(p) - torch.log(pi)  # the optimal judge's logit, log(p / π)
print("p =", [round(x, 3) for x in p.tolist()])
print("π =", [round(x, 3) for x in pi.tolist()])
print(f"\n{'g':<20} {'Σ π g(D*)':>12} {'closed form':>12} {'difference':>11}")
for name in NAMES:
    g = G_TRANSFORMS[name]
    direct = (pi * g.from_logit(z_star)).sum().item()
    closed = g.value_fn(p, pi).item()
    print(f"{LABELS[name]:<20} {direct:>12.6f} {closed:>12.6f} {direct - closed:>11.1e}")

# %% [markdown]
# ## The gradient identities
#
# Training does not follow the value; it follows the gradient.  With the judge held fixed at D*
# (as it is within one policy step), the policy gradient of the reward is
# E_π[g(D*) ∇_θ log π] — for a softmax policy π = softmax(θ) this is π ⊙ (g − E_π[g])
# (`frozen_d_star_gradient`).  The table says it equals −∇_θ Div for the divergence in the third
# column.  Autograd through `divergence_fn` gives the right-hand side.
#
# Note the first row: the *value* of g = D is tied to Le Cam, but the frozen-judge gradient descends
# KL(p ‖ m) — a different divergence.  The difference matters because a co-trained judge is always
# one step behind the policy.

# %%
theta = torch.log(pi).requires_grad_()
print(f"{'g':<20} {'descends':<36} {'max |pg + ∇Div|':>16}")
for name in NAMES:
    g = G_TRANSFORMS[name]
    (div_grad,) = torch.autograd.grad(g.divergence_fn(p, torch.softmax(theta, 0)), theta)
    pg = frozen_d_star_gradient(g, p, pi)
    print(f"{LABELS[name]:<20} {g.divergence:<36} {(pg + div_grad).abs().max().item():>16.1e}")

# %% [markdown]
# ## Where each transform pushes the policy: three answers
#
# With three answers, a policy is a point of a triangle (the simplex): each corner is a policy that
# always gives one answer, and p is the black dot.  At every π on a grid we draw
# `frozen_d_star_flow`, the direction dπ in which one policy-gradient step in θ moves π, over the
# contours of the divergence that transform descends (darker = larger).  All four flows point
# downhill to p, along similar routes; what differs is the speed (colour, one scale for all four
# panels): the unbounded transforms shove hardest where the policy gives an answer far less mass
# than p does (there D* → 1 and −log(1 − D*) → ∞), D pushes gently everywhere.

# %%
p3 = torch.tensor([0.6, 0.3, 0.1])
a, b = torch.meshgrid(torch.linspace(0.02, 0.96, 19), torch.linspace(0.02, 0.96, 19), indexing="ij")
inside = (a + b) < 0.98
grid = torch.stack([a[inside], b[inside], 1 - a[inside] - b[inside]], -1)  # [M, 3] interior policies
to_xy = torch.tensor([[0.0, 0.0], [1.0, 0.0], [0.5, math.sqrt(3) / 2]])  # the three corners on the page
fine_a, fine_b = torch.meshgrid(torch.linspace(1e-3, 1, 200), torch.linspace(1e-3, 1, 200), indexing="ij")
fine_in = (fine_a + fine_b) < 1 - 1e-3
fine = torch.stack([fine_a[fine_in], fine_b[fine_in], 1 - fine_a[fine_in] - fine_b[fine_in]], -1)
flows = {name: frozen_d_star_flow(G_TRANSFORMS[name], p3, grid) @ to_xy for name in NAMES}  # [M, 2] each
log_speed = {name: torch.log10(flow.norm(dim=-1)) for name, flow in flows.items()}
low, high = min(v.min().item() for v in log_speed.values()), max(v.max().item() for v in log_speed.values())

fig, axes = plt.subplots(2, 2, figsize=(11, 10), layout="constrained")
for ax, name in zip(axes.flat, NAMES):
    g = G_TRANSFORMS[name]
    xy = fine @ to_xy
    ax.tricontourf(xy[:, 0], xy[:, 1], g.divergence_fn(p3, fine).clamp(max=2.0), levels=20, cmap="Blues")
    at, unit = grid @ to_xy, flows[name] / flows[name].norm(dim=-1, keepdim=True)
    arrows = ax.quiver(
        at[:, 0],
        at[:, 1],
        unit[:, 0],
        unit[:, 1],
        log_speed[name],
        cmap="plasma",
        clim=(low, high),
        scale=25,
        width=0.005,
    )
    ax.plot(*(p3 @ to_xy).tolist(), "ko", ms=7)
    for (x, y), label in zip(to_xy.tolist(), ["answer 1", "answer 2", "answer 3"]):
        ax.text(x, y - 0.03 if y == 0 else y + 0.02, label, ha="center", va="top" if y == 0 else "bottom")
    ax.set_title(f"g = {LABELS[name]}: descends {g.divergence.split(' =')[0]}", pad=22)
    ax.set_aspect("equal")
    ax.axis("off")
fig.colorbar(arrows, ax=axes, shrink=0.6, label="log10 |dπ| (speed of the push)")
plt.show()
for name in NAMES:
    print(
        f"{LABELS[name]:<20} speed on the grid: {10 ** log_speed[name].min().item():.1e} to "
        f"{10 ** log_speed[name].max().item():.1e}"
    )

# %% [markdown]
# The speed is what a learning rate multiplies.  Follow the flow from a policy collapsed near the
# third answer, π_0 = (0.05, 0.05, 0.9): 300 Euler steps of size 1 in θ, the ascent an exact,
# always-retrained judge would produce.  Left: the four paths (a dot every 25 steps); right: the
# distance to p, measured by one common yardstick, KL(p ‖ π).  All four arrive; the logit in the
# fewest steps, D in by far the most — the price of D's bounded, never-negative reward is a weaker
# push, which a larger learning rate would have to make up.

# %%
start = torch.tensor([0.05, 0.05, 0.90])
fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
left.plot(*torch.cat([to_xy, to_xy[:1]]).T.tolist(), color="grey", lw=0.8)
left.plot(*(p3 @ to_xy).tolist(), "ko", ms=7)
for name in NAMES:
    theta_t, path = torch.log(start), [start]
    for _ in range(300):
        theta_t = theta_t + frozen_d_star_gradient(G_TRANSFORMS[name], p3, torch.softmax(theta_t, 0))
        path.append(torch.softmax(theta_t, 0))
    path = torch.stack(path)  # [301, 3]
    line = left.plot(*(path @ to_xy).T.tolist(), label=LABELS[name])[0]
    left.plot(*(path[::25] @ to_xy).T.tolist(), "o", color=line.get_color(), ms=3)
    right.plot(kl(p3.expand_as(path), path), label=LABELS[name])
    print(f"{LABELS[name]:<20} after 300 steps: π = {[round(x, 3) for x in path[-1].tolist()]}")
left.set_aspect("equal")
left.axis("off")
left.legend(loc="upper right", fontsize=8)
right.set(xlabel="Euler step in θ", ylabel="KL(p ‖ π)", yscale="log")
plt.show()

# %% [markdown]
# ## The divergences along a path
#
# Walk the straight line π_t = (1 − t)·π_0 + t·p from the collapsed policy π_0 to p and evaluate
# every divergence of the table with `rewardzoo.divergences`.  All are 0 at t = 1 and, being convex
# in π, all decrease along the segment.  Near p each is quadratic — locally a multiple of the χ²
# distance Σ(π − p)²/p: ½ for both KLs, ¼ for 2·JS, 2·KL(m ‖ p) and LC, ⅛ for KL(p ‖ m) — so on a
# log scale they run parallel close to t = 1.  Far from p they part: KL(p ‖ π), the forward KL that
# none of the four transforms descends, would be infinite if π_0 gave some answer no mass at all,
# while the bounded ones (KL(p ‖ m) ≤ log 2, 2·JS ≤ 2 log 2, LC ≤ 1) cannot grow past their caps.

# %%
t = torch.linspace(0, 1, 201).unsqueeze(1)
path = (1 - t) * start + t * p3  # [201, 3] the straight line from π_0 to p
ref = p3.expand_as(path)
mid = (ref + path) / 2
curves = {
    "KL(p ‖ π)   (none of the four)": kl(ref, path),
    "KL(π ‖ p)   (logit)": kl(path, ref),
    "2·KL(m ‖ p)   (log D)": 2 * kl(mid, ref),
    "2·JS(p, π)   (−log(1 − D))": 2 * js(ref, path),
    "KL(p ‖ m)   (D)": kl(ref, mid),
    "LC(p, π)   (value of D)": le_cam(ref, path),
}
fig, ax = plt.subplots(figsize=(7, 4.5))
for label, values in curves.items():
    ax.plot(t.squeeze(1), values, label=label)
ax.set(xlabel="t   (π_t = (1 − t)·π_0 + t·p)", ylabel="nats", yscale="log", ylim=(1e-4, 5))
ax.legend(fontsize=8)
plt.show()
for label, values in curves.items():
    print(f"{label:<32} at t=0: {values[0].item():.3f}   t=0.5: {values[100].item():.4f}")

# %%
print(f"wall time of this notebook: {time.perf_counter() - notebook_start:.1f} s")

# %% [markdown]
# ## What to try next
#
# - Put p on a corner's edge (one answer with p = 0.001): which transforms' arrows blow up, and why
#   does that make log D and the logit dangerous as rewards for a judge that is sometimes sure?
# - Add a constant to g (say g = D + 1): the value changes, `frozen_d_star_gradient` does not —
#   advantages in GRPO remove such constants anyway (notebook 2).
# - Freeze the judge for good: compute D* once at π_0 and keep ascending on g(D*(π_0)).  The policy no
#   longer stops at p — it runs to the corner with the highest frozen reward, the collapse that a
#   frozen judge invites (notebook 4 measures it on a real run).
