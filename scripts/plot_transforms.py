"""The two figures of ``docs/rewards/transforms.md``: the four g(D), and the divergences along a path.

1. ``transforms_g.png``: every g of :data:`rewardzoo.rewards.transforms.G_TRANSFORMS` on D ∈ (0, 1),
   evaluated through ``GTransform.__call__`` (so with the library's clamp EPS).
2. ``transforms_divergences.png``: KL(p ‖ π), KL(π ‖ p), JS(p, π), LC(p, π), KL(p ‖ m) and
   2·KL(m ‖ p) from :mod:`rewardzoo.divergences` along π_t = (1 − t)·π_0 + t·p_ref, t ∈ [0, 1], for
   the 8-answer reference ``P_REF`` and a policy π_0 collapsed on answer 5 (our illustrative choice).

    .venv/bin/python scripts/plot_transforms.py [--out docs/rewards]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402

from rewardzoo.divergences import js, kl, le_cam  # noqa: E402
from rewardzoo.rewards.transforms import G_TRANSFORMS  # noqa: E402

P_REF = torch.tensor([0.30, 0.20, 0.15, 0.10, 0.10, 0.07, 0.05, 0.03], dtype=torch.float64)  # [8]
COLLAPSED_ON = 5  # π_0 puts all its mass on this answer (p_ref = 0.07 there)
LABELS = {"D": "D", "neg_log_one_minus_D": "−log(1 − D)", "log_D": "log D", "logit": "log D − log(1 − D)"}


def plot_g(path: Path) -> None:
    """The four g(D) on (0, 1); each is strictly increasing, only D and −log(1 − D) stay ≥ 0."""
    d = torch.linspace(1e-3, 1 - 1e-3, 999, dtype=torch.float64)  # [999]
    fig, ax = plt.subplots(figsize=(6, 4))
    for name, label in LABELS.items():
        ax.plot(d, G_TRANSFORMS[name](d), label=label)
    ax.axhline(0, color="grey", lw=0.8)
    ax.set(xlabel="D", ylabel="g(D)", ylim=(-5, 5), title="The four g-transforms")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_divergences(path: Path) -> None:
    """Divergences between p_ref and π_t along the straight path from the collapsed π_0 to p_ref."""
    t = torch.linspace(0, 1, 401, dtype=torch.float64).unsqueeze(1)  # [401, 1]
    pi0 = torch.zeros_like(P_REF).index_fill_(0, torch.tensor([COLLAPSED_ON]), 1.0)  # [8] one-hot
    pi = (1 - t) * pi0 + t * P_REF  # [401, 8]
    p = P_REF.expand_as(pi)  # [401, 8]
    m = (p + pi) / 2  # [401, 8]
    curves = {
        "KL(p ‖ π)": kl(p, pi),
        "KL(π ‖ p)   (descended by logit)": kl(pi, p),
        "2·KL(m ‖ p)   (descended by log D)": 2 * kl(m, p),
        "JS(p, π)   (×2 descended by −log(1−D))": js(p, pi),
        "Le Cam LC(p, π)": le_cam(p, pi),
        "KL(p ‖ m)   (descended by D)": kl(p, m),
    }  # [401] each
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for label, values in curves.items():
        ax.plot(t.squeeze(1), values, label=label)
    ax.set(
        xlabel="t   (π_t = (1 − t)·π_0 + t·p_ref)",
        ylabel="divergence (nats)",
        ylim=(0, 3),
        title=f"From π_0 collapsed on answer {COLLAPSED_ON} to an 8-answer p_ref",
    )
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> None:
    """Write ``transforms_g.png`` and ``transforms_divergences.png`` into ``--out``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("docs/rewards"))
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    plot_g(args.out / "transforms_g.png")
    plot_divergences(args.out / "transforms_divergences.png")


if __name__ == "__main__":
    main()
