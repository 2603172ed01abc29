"""Answer formats: how a final answer is written into a completion and read back out of one.

    plain   the whole completion, stripped, is the answer (the tiny-tokenizer CPU presets)
    tags    the content of the last ``<answer>…</answer>`` pair, stripped

An empty answer is malformed (None).  :func:`extract_answer` never raises and runs in linear time
on any input.
"""

from __future__ import annotations

ANSWER_FORMATS = ("plain", "tags")


def extract_answer(completion: str, answer_format: str) -> str | None:
    """The final-answer text of a completion under a format, or None when the format is not met.

    ``tags`` takes the last closing tag and the nearest opening tag before it.

    >>> extract_answer(" 42 ", "plain"), extract_answer("<answer>1</answer> <answer> 42 </answer>", "tags")
    ('42', '42')
    >>> extract_answer("42", "tags") is None
    True
    """
    if answer_format == "plain":
        text = completion.strip()
    elif answer_format == "tags":
        end = completion.rfind("</answer>")
        start = completion.rfind("<answer>", 0, end) if end >= 0 else -1
        text = completion[start + len("<answer>") : end].strip() if start >= 0 else ""
    else:
        raise ValueError(f"answer_format must be one of {ANSWER_FORMATS}, got {answer_format!r}")
    return text or None


def format_answer(answer: str, answer_format: str) -> str:
    """Write a final answer the way :func:`extract_answer` reads it back."""
    return answer if answer_format == "plain" else f"<answer>{answer}</answer>"
