"""TRL-style reward functions importable by subprocess runs (``reward.name=callable``)."""


def digit_share(prompts, completions, **kwargs):
    """The share of digit characters in each completion: a dense reward with variance even for
    an untrained model."""
    return [sum(c.isdigit() for c in text) / max(len(text), 1) for text in completions]


def starts_with_seven(prompts, completions, **kwargs):
    """1 when the completion starts with '7': a sparse bandit whose optimum is known."""
    return [float(text.startswith("7")) for text in completions]


def not_a_number(prompts, completions, **kwargs):
    """NaN for every row: a reward that must stop the run at its first scoring."""
    return [float("nan")] * len(completions)
