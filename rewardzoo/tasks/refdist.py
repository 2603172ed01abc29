"""Reference distribution (our own task): answers drawn from a *known* p_ref(y | x), so the
policy's exact answer distribution and its true divergences to p_ref can be logged.

Each prompt x (``colour3:``, ``animal0:``, …) has a small answer set A(x) of short lowercase words
(``min_answers``–``max_answers`` of them, from the topic's pool; the ``letters`` topic uses random
three-letter strings) and a reference distribution over it, generated from ``data_seed``:

    p_ref(y | x) ∝ exp(s_x · z_y),   z_y ~ N(0, 1),   s_x cycling through ``sharpness``

so with the default ``sharpness: [0.3, 2.0]`` half the prompts are near-uniform and half peaked.
p_ref is then rounded to multiples of 1/K (K = ``copies``; every answer keeps at least 1/K, so
p_ref has full support on A(x) and every KL to it is finite) — the p_ref that is logged and used.

**How the references follow p_ref.**  The trainer takes ``e.reference`` from the Example it draws,
so the train split holds K Examples per prompt whose references are p_ref's *stratified* draw:
exactly K·p_ref(y) copies carry y, in a seeded random order.  A uniformly drawn copy therefore has
a reference distributed exactly as p_ref, and one epoch of the trainer's per-epoch permutation
shows every judge (RAL's, VARL's discriminator) each prompt's references with frequencies p_ref
exactly, not up to sampling noise.  The alternative — a reward drawing references itself from
``meta`` — would make every reward know about this task; expanding the split keeps rewards generic.

**The warm start** (``demonstrations``): ``uniform`` (default) makes the demonstrations a stratified
uniform draw over A(x), so SFT teaches which answers are valid but not how often each is the
reference, and RL has a distribution to learn; ``reference`` makes them the references (SFT alone
then fits p_ref).  With ``uniform``, a reward whose positives are demonstration texts (VARL with
``features: completion``) sees uniform positives: use answer features (VARL's default) here.

**Evaluation** is the exact answer distribution of the policy, not a sample.  The core's
``evaluate`` only sees greedy completions, so this task also implements ``evaluate_policy(score,
examples)`` (:class:`~rewardzoo.core.types.PolicyEvaluatingTask`): ``score`` returns
log π(y, EOS | x) summed over the completion's tokens, at the sampling temperature, and

    π_in(y | x) = exp(score(x, y)) / Σ_{y' ∈ A(x)} exp(score(x, y'))     renormalised over the set
    outside(x)  = 1 − Σ_{y ∈ A(x)} exp(score(x, y))                       mass on anything else

``eval/kl_ref_pi`` = KL(p_ref ‖ π_in), ``eval/kl_pi_ref``, ``eval/js``, ``eval/le_cam``,
``eval/kl_ref_mix`` = KL(p_ref ‖ m), ``eval/kl_mix_ref`` = KL(m ‖ p_ref) (m = (p_ref + π_in)/2: the
divergences the four g-transforms descend), ``eval/top_answer_share`` = max_y π_in(y | x),
``eval/answer_entropy`` = H(π_in) in nats and ``eval/outside_mass``, each the mean over the
evaluation prompts; ``eval/ref_top_answer_share`` and ``eval/ref_answer_entropy`` are p_ref's own
values (the targets).  Greedy ``evaluate`` adds ``accuracy`` = share of greedy answers in A(x).

**The evaluation prompts are the training prompts** (each once, with one reference drawn from
p_ref): p_ref(· | x) of an unseen prompt is arbitrary, so nothing could generalise to it.  What is
measured is how well the policy matches p_ref on the prompts it trains on; no training signal comes
from the evaluation itself.  Sampling settings ``top_p``/``top_k`` are not modelled in π.  For the same
reason the validation split (``eval.split=validation``, what a tuning stage chooses by) is these same
prompts: on this task what keeps a choice independent of the reported number is that tuning runs
use other seeds than the reported ones (:mod:`rewardzoo.protocol`), not other prompts.

Verifier (RLVR, VARL's v): 1 when the answer is in A(x) — any valid answer passes, so v ≡ 1 on
valid answers and "VARL with v ≡ 1" is VARL's discriminator term on this task.  The parser accepts
one lowercase word (1–12 letters), in or out of A(x).
"""

from __future__ import annotations

import math
import random
import re
import string
from dataclasses import dataclass, field
from typing import ClassVar

import torch

from rewardzoo.core.config import check_section
from rewardzoo.core.types import Example, SequenceScorer
from rewardzoo.divergences import js, kl, le_cam
from rewardzoo.tasks.base import Task

TOPICS: dict[str, tuple[str, ...]] = {
    "colour": (
        "red",
        "blue",
        "green",
        "black",
        "white",
        "pink",
        "grey",
        "brown",
        "gold",
        "cyan",
        "lime",
        "navy",
        "teal",
        "plum",
        "rose",
        "tan",
    ),
    "animal": (
        "cat",
        "dog",
        "cow",
        "pig",
        "hen",
        "fox",
        "owl",
        "bee",
        "ant",
        "elk",
        "emu",
        "yak",
        "bat",
        "ram",
        "rat",
        "eel",
    ),
    "fruit": (
        "fig",
        "kiwi",
        "pear",
        "date",
        "apple",
        "grape",
        "lemon",
        "mango",
        "melon",
        "peach",
        "berry",
        "olive",
        "guava",
        "prune",
        "quince",
        "lychee",
    ),
    "letters": (),  # random three-letter strings, drawn per prompt
}
_WORD = re.compile(r"[a-z]{1,12}")


@dataclass
class RefDistConfig:
    """Settings of the reference-distribution task (every default is our own choice)."""

    RANGES: ClassVar[dict[str, str]] = {
        "n_prompts": "[1, inf)",
        "min_answers": "[2, 16]",
        "max_answers": "[2, 16]",
        "sharpness": "[0, inf)",
        "copies": "[2, inf)",
        "data_seed": "[0, inf)",
    }

    n_prompts: int = 16
    """Distinct prompts (they cycle through the topics colour, animal, fruit, letters)."""
    min_answers: int = 4
    """Smallest answer set (at least 2)."""
    max_answers: int = 8
    """Largest answer set (at most 16)."""
    sharpness: list[float] = field(default_factory=lambda: [0.3, 2.0])
    """s of p_ref ∝ exp(s·z), z ~ N(0, 1), cycled over the prompts: small = near-uniform, large = peaked."""
    copies: int = 64
    """K: training Examples per prompt; p_ref is rounded to multiples of 1/K and the K references are its
    stratified draw (K·p_ref(y) copies of y).  Must be at least max_answers."""
    demonstrations: str = "uniform"
    """What the SFT demonstrations are: 'uniform' (a stratified uniform draw over the answer set: the warm start
    learns the set, not p_ref) or 'reference' (the references: SFT fits p_ref)."""
    data_seed: int = 0
    """Seed of the answer sets, p_ref and the draws."""

    def validate(self) -> None:
        """Raise ValueError, saying what to change, on settings that cannot run."""
        if self.min_answers > self.max_answers:
            raise ValueError(f"min_answers must be <= max_answers; got {self.min_answers}, {self.max_answers}")
        if self.copies < self.max_answers:
            raise ValueError(
                f"copies must be >= max_answers ({self.max_answers}) so every answer keeps "
                f"p_ref >= 1/copies; got {self.copies}"
            )
        if not self.sharpness:
            raise ValueError("sharpness must be a nonempty list of numbers >= 0")
        if self.demonstrations not in ("uniform", "reference"):
            raise ValueError(f"demonstrations must be 'uniform' or 'reference'; got {self.demonstrations!r}")


def stratified_counts(p: list[float], total: int) -> list[int]:
    """Counts c_y >= 1 summing to ``total`` with c_y ≈ total · p_y (largest remainder after a floor of 1).

    >>> stratified_counts([0.7, 0.2, 0.1], 10), stratified_counts([0.98, 0.01, 0.01], 10)
    ([7, 2, 1], [8, 1, 1])
    """
    if total < len(p):
        raise ValueError(f"cannot give each of {len(p)} answers a count >= 1 out of {total}")
    counts = [max(1, math.floor(total * q)) for q in p]
    while sum(counts) > total:  # the floors of 1 overshot: take from the largest count above 1
        counts[max((i for i in range(len(p)) if counts[i] > 1), key=lambda i: counts[i] - total * p[i])] -= 1
    while sum(counts) < total:  # hand out the rest by largest remainder
        counts[max(range(len(p)), key=lambda i: total * p[i] - counts[i])] += 1
    return counts


def answer_distribution_metrics(p_ref: torch.Tensor, logp: torch.Tensor) -> dict[str, float]:
    """Divergences and shape of the policy's answer distribution on one prompt.

    ``p_ref [A]`` is the reference distribution over the answer set, ``logp [A]`` the policy's
    log π(y, EOS | x) of each answer.  π_in = softmax(logp) is π renormalised over the set.
    """
    p = p_ref.double()  # [A]
    lp = logp.double()  # [A]
    pi = torch.softmax(lp, dim=-1)  # [A]
    m = (p + pi) / 2  # [A]
    return {
        "kl_ref_pi": kl(p, pi).item(),
        "kl_pi_ref": kl(pi, p).item(),
        "js": js(p, pi).item(),
        "le_cam": le_cam(p, pi).item(),
        "kl_ref_mix": kl(p, m).item(),
        "kl_mix_ref": kl(m, p).item(),
        "top_answer_share": pi.max().item(),
        "answer_entropy": -torch.xlogy(pi, pi).sum().item(),
        "outside_mass": max(0.0, 1.0 - torch.logsumexp(lp, dim=-1).exp().item()),
        "ref_top_answer_share": p.max().item(),
        "ref_answer_entropy": -torch.xlogy(p, p).sum().item(),
    }


class RefDist(Task):
    """``colour3:`` → one answer of a known distribution p_ref over a small set (module docstring)."""

    name = "refdist"

    def __init__(self, cfg: RefDistConfig | None = None):
        self.cfg = cfg = cfg or RefDistConfig()
        check_section(cfg, "task.refdist")
        rng = random.Random(f"refdist-{cfg.data_seed}")
        train, evals = [], []
        topics = list(TOPICS)
        for i in range(cfg.n_prompts):
            topic = topics[i % len(topics)]
            k = rng.randint(cfg.min_answers, cfg.max_answers)
            answers = self._answer_set(topic, k, rng)
            s = cfg.sharpness[(i // len(topics)) % len(cfg.sharpness)]  # topics and sharpness cross
            weights = [math.exp(s * rng.gauss(0.0, 1.0)) for _ in answers]
            counts = stratified_counts([w / sum(weights) for w in weights], cfg.copies)
            meta = {"answers": answers, "p_ref": [c / cfg.copies for c in counts], "topic": topic}
            prompt = f"{topic}{i // len(topics)}:"
            references = [a for a, c in zip(answers, counts) for _ in range(c)]
            rng.shuffle(references)
            if cfg.demonstrations == "uniform":
                demos = [a for a, c in zip(answers, stratified_counts([1 / k] * k, cfg.copies)) for _ in range(c)]
                rng.shuffle(demos)
            else:
                demos = references
            train += [Example(prompt, ref, demo, meta) for ref, demo in zip(references, demos)]
            ref = rng.choices(answers, weights=counts)[0]
            evals.append(Example(prompt, ref, ref, meta))
        rng.shuffle(train)  # any prefix (e.g. sft.n_examples) covers the prompts evenly
        super().__init__(train=train, eval=evals, validation=list(evals))

    @staticmethod
    def _answer_set(topic: str, k: int, rng: random.Random) -> list[str]:
        pool = TOPICS[topic]
        if pool:
            return rng.sample(pool, min(k, len(pool)))
        words: dict[str, None] = {}
        while len(words) < k:
            words["".join(rng.choices(string.ascii_lowercase, k=3))] = None
        return list(words)

    def parse(self, completion: str) -> str | None:
        """One lowercase word of 1–12 letters (the whole completion, stripped), else None.  Never raises."""
        answer = completion.strip()
        return answer if _WORD.fullmatch(answer) else None

    def verify(self, answer: str | None, reference: str, meta: dict) -> float:
        """1 when the answer is in the prompt's answer set (any valid answer, not only the reference)."""
        return float(answer is not None and answer in meta["answers"])

    def evaluate_policy(self, score: SequenceScorer, examples: list[Example]) -> dict[str, float]:
        """Means over ``examples`` of :func:`answer_distribution_metrics`, from the policy's exact
        log-probabilities of every answer of each answer set (module docstring)."""
        prompts = [e.prompt for e in examples for _ in e.meta["answers"]]
        logp = score(prompts, [a for e in examples for a in e.meta["answers"]])  # [Σ A]
        rows: dict[str, float] = {}
        start = 0
        for e in examples:
            k = len(e.meta["answers"])
            metrics = answer_distribution_metrics(torch.tensor(e.meta["p_ref"]), logp[start : start + k])
            for key, value in metrics.items():
                rows[key] = rows.get(key, 0.0) + value / len(examples)
            start += k
        return rows
