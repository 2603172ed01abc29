"""TRL-style reward functions importable by subprocess runs (``reward.name=callable``)."""


def digit_share(prompts, completions, **kwargs):
    """The share of digit characters in each completion: a dense reward with variance even for
    an untrained model."""
    return [sum(c.isdigit() for c in text) / max(len(text), 1) for text in completions]
