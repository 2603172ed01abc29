"""Answer formats: how a final answer is written into a completion and read back out of one.

    plain     the whole completion, stripped, is the answer (the tiny-tokenizer CPU presets)
    tags      the content of the last ``<answer>…</answer>`` pair, stripped
    instruct  how an instruct model states a number in free text (:func:`instruct_answer`): the last
              ``\\boxed{…}``, else what follows the last "answer is" / "answer:" (or "result", "product"),
              else what follows the last ``=``, else the whole completion — up to the end of its line, without
              a closing period or markdown emphasis.  Only for tasks whose answer is a number
              (:data:`NUMBER_FORMATS`); a task whose point is a strict format keeps ``plain`` or ``tags``.

An empty answer is malformed (None).  :func:`extract_answer` never raises and runs in linear time
on any input.
"""

from __future__ import annotations

import re

ANSWER_FORMATS = ("plain", "tags")
NUMBER_FORMATS = ANSWER_FORMATS + ("instruct",)
"""The formats a task whose answer is one number accepts (multiplication)."""
BOXED = re.compile(r"\\boxed\{([^{}]*)\}")
_ANSWER_IS = re.compile(r"\b(?:answer|result|product)(?: is|:)", re.IGNORECASE)


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
    elif answer_format == "instruct":
        text = instruct_answer(completion)
    elif answer_format == "tags":
        end = completion.rfind("</answer>")
        start = completion.rfind("<answer>", 0, end) if end >= 0 else -1
        text = completion[start + len("<answer>") : end].strip() if start >= 0 else ""
    else:
        raise ValueError(f"answer_format must be one of {NUMBER_FORMATS}, got {answer_format!r}")
    return text or None


def instruct_answer(completion: str) -> str:
    """The final-answer text of an instruct model's free-text reply (the ``instruct`` format); "" when none.

    >>> [instruct_answer(t) for t in ("347 * 6 = 2082", "The answer is 2082.", "so \\\\boxed{2082}", " 2,082 ")]
    ['2082', '2082', '2082', '2,082']
    >>> instruct_answer("**Answer:** 12\\nbecause 3 * 4 = 12")
    '12'
    """
    boxed = BOXED.findall(completion)
    if boxed:
        return boxed[-1].strip()
    stated = stated_answer(completion)
    if stated is not None:
        text = stated
    elif "=" in completion:
        text = completion.rpartition("=")[2]
    else:
        text = completion
    return tidy_answer(text.strip(" \t*:").split("\n", 1)[0])


def tidy_answer(text: str) -> str:
    """A stated answer without surrounding space, markdown emphasis or a closing period."""
    return text.strip().strip("*").strip().removesuffix(".").strip()


def stated_answer(completion: str) -> str | None:
    """What follows the last "answer is" / "answer:" (or "result", "product") of a reply, up to the end of its
    line; None when the reply states no answer so."""
    stated = list(_ANSWER_IS.finditer(completion))
    if not stated:
        return None
    return completion[stated[-1].end() :].strip(" \t*:").split("\n", 1)[0]


def format_answer(answer: str, answer_format: str) -> str:
    """Write a final answer the way :func:`extract_answer` reads it back."""
    if answer_format == "instruct":
        return f"The answer is {answer}."
    return answer if answer_format == "plain" else f"<answer>{answer}</answer>"
