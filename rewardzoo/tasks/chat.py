"""Tasks as conversations: any task's prompts rendered as chat messages through a tokenizer's chat template.

As TRL's conversational format does: each prompt becomes ``[{"role": "system", ...}?, {"role": "user",
"content": prompt}]``, rendered by ``tokenizer.apply_chat_template(..., add_generation_prompt=True)``, so the
policy continues an assistant turn and ends it with the model's end-of-turn token (its EOS: generation stops
there, :func:`rewardzoo.core.engines.eos_token_ids`).  The rendered text is the example's ``prompt`` from then
on — the engine, SFT, the trainer's log-probs and the TRL adapter all see what the policy sees — and the
original prompt stays in ``meta["question"]``: a judge reads the question (:func:`judge_prompts`), rendered
with its *own* chat template when it has one, never the policy's markup.

The wrapped task's parser, verifier and metrics are used unchanged: a chat model's free-text answers need a
task format that reads them (``answer_format=instruct`` for multiplication; strict-format tasks stay strict).
"""

from __future__ import annotations

from dataclasses import replace

from rewardzoo.core.types import Example, Rollouts
from rewardzoo.tasks.base import Task

QUESTION = "question"
"""The ``meta`` key under which a chat task keeps each example's original prompt."""


def chat_messages(prompt: str, system_prompt: str = "") -> list[dict[str, str]]:
    """The conversation of one prompt: an optional system turn, then the prompt as the user's turn."""
    system = [{"role": "system", "content": system_prompt}] if system_prompt else []
    return system + [{"role": "user", "content": prompt}]


def render_chat(tokenizer, prompt: str, system_prompt: str = "") -> str:
    """``prompt`` as a chat-rendered string ending in the assistant header (``add_generation_prompt``).

    A tokenizer that adds its BOS token itself (Llama 3) would add it a second time to a template that writes
    it: the rendered BOS is then dropped, so the engine's tokenization gives the template's tokens exactly."""
    if not getattr(tokenizer, "chat_template", None):
        raise ValueError(
            f"task.chat=true needs a tokenizer with a chat template; {type(tokenizer).__name__} "
            f"({getattr(tokenizer, 'name_or_path', '')!r}) has none: use an instruct model or task.chat=false"
        )
    text = tokenizer.apply_chat_template(
        chat_messages(prompt, system_prompt), tokenize=False, add_generation_prompt=True
    )
    bos = tokenizer.bos_token
    adds_bos = bos is not None and tokenizer("x")["input_ids"][:1] == [tokenizer.bos_token_id]
    return text[len(bos) :] if adds_bos and text.startswith(bos) else text


class ChatTask(Task):
    """``task`` with every prompt rendered as a chat through ``tokenizer``'s template (``task.chat=true``).

    Parsing, verifying, metrics, ``name`` and ``answer_format`` are the wrapped task's."""

    def __init__(self, task: Task, tokenizer, system_prompt: str = ""):
        self.task = task
        self.name = task.name
        self.answer_format = task.answer_format
        self.demonstrations_verify = task.demonstrations_verify
        self.system_prompt = system_prompt

        def chat(examples: list[Example]) -> list[Example]:
            return [
                replace(e, prompt=render_chat(tokenizer, e.prompt, system_prompt), meta={**e.meta, QUESTION: e.prompt})
                for e in examples
            ]

        super().__init__(train=chat(task.train), eval=chat(task.eval), validation=chat(task.validation))

    def __getattr__(self, name: str):
        """Anything else (a task's own settings and helpers) is the wrapped task's."""
        if name == "task":
            raise AttributeError(name)
        return getattr(self.task, name)

    def parse(self, completion: str) -> str | None:
        """The wrapped task's parser."""
        return self.task.parse(completion)

    def verify(self, answer: str | None, reference: str, meta: dict) -> float:
        """The wrapped task's verifier."""
        return self.task.verify(answer, reference, meta)

    def score_completion(self, completion: str, example: Example) -> float:
        """The wrapped task's score of one completion."""
        return self.task.score_completion(completion, example)

    def row_metrics(
        self, answers: list[str | None], references: list[str], metas: list[dict]
    ) -> dict[str, list[float]]:
        """The wrapped task's per-row metrics."""
        return self.task.row_metrics(answers, references, metas)


def judge_prompts(batch: Rollouts) -> list[str]:
    """[N] the prompt a judge reads for each row: the original question of a chat task, else the prompt."""
    return [meta.get(QUESTION, prompt) for prompt, meta in zip(batch.prompts, batch.meta)]
