"""Every task as a Gymnasium environment: one prompt, one completion, the verifier's reward.

    import gymnasium, rewardzoo
    env = gymnasium.make("rewardzoo/Multiplication-v0", n_train=100, n_eval=20)
    prompt, info = env.reset(seed=0)
    prompt, reward, terminated, truncated, info = env.step("42")   # terminated is always True

An episode is one step: ``reset`` draws an example of the chosen split (``split="train"`` or
``"eval"``) with the environment's seeded generator and returns its prompt; ``step(completion)``
returns the task's verifier score of the completion (:meth:`Task.score_completion`), the prompt again
as the final observation, ``terminated=True``, and an ``info`` with the ``reference``, the parsed
``answer`` (None when malformed) and every row metric of the task (``correct``, …).

Spaces: the observation is :class:`gymnasium.spaces.Text` over the characters of the task's prompts,
as long as its longest prompt; the action is ``Text`` over printable ASCII, newline and the
characters of the demonstrations, up to ``max_completion_length`` characters.  ``step`` accepts any
string, in the action space or not (a language model can write any character); what the task cannot
parse scores the verifier's 0.

Every task of :data:`rewardzoo.zoo.TASKS` is registered as ``rewardzoo/<ClassName>-v0`` by
:func:`register_envs`, which ``import rewardzoo`` calls; the entry points are lazy, so registering
builds no dataset.  Keyword arguments of ``gymnasium.make`` other than ``split`` and
``max_completion_length`` are settings of the task's config section (e.g. ``n_train``; a nested
section takes a dict); without
``import rewardzoo`` first, use the id ``"rewardzoo:rewardzoo/Multiplication-v0"``, which imports it.
"""

from __future__ import annotations

import dataclasses
import string

import gymnasium
from gymnasium.spaces import Text

from rewardzoo.core.types import Example
from rewardzoo.tasks.base import Task
from rewardzoo.zoo import TASKS, TaskConfig

SPLITS = ("train", "eval")
_COMPLETION_CHARS = frozenset(string.printable) - frozenset("\t\r\x0b\x0c")  # printable ASCII, space and newline


class TaskEnv(gymnasium.Env):
    """A :class:`Task` as a one-step environment: observation = prompt, action = completion,
    reward = the task's verifier."""

    metadata = {"render_modes": []}

    def __init__(self, task: Task, split: str = "train", max_completion_length: int = 256):
        if split not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}; got {split!r}")
        if max_completion_length < 1:
            raise ValueError(f"max_completion_length must be at least 1; got {max_completion_length}")
        self.task = task
        self.examples: list[Example] = task.train if split == "train" else task.eval
        prompts = [e.prompt for e in self.examples]
        prompt_chars = frozenset("".join(prompts)) or frozenset(" ")  # Text needs a nonempty charset
        self.observation_space = Text(max_length=max(map(len, prompts)), min_length=0, charset=prompt_chars)
        demo_chars = frozenset("".join(e.demonstration for e in task.train + task.eval))
        self.action_space = Text(max_length=max_completion_length, min_length=0, charset=_COMPLETION_CHARS | demo_chars)
        self._example: Example | None = None

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[str, dict]:
        """Draw an example with the seeded generator; returns its prompt and ``{"index": i}``."""
        super().reset(seed=seed)
        index = int(self.np_random.integers(len(self.examples)))
        self._example = self.examples[index]
        return self._example.prompt, {"index": index}

    def step(self, action: str) -> tuple[str, float, bool, bool, dict]:
        """Score a completion of the current prompt; the episode ends here."""
        if self._example is None:
            raise RuntimeError("call reset() before step(): each episode is one prompt and one completion")
        if not isinstance(action, str):
            raise TypeError(f"the action is the completion text (a str); got {type(action).__name__}")
        example, self._example = self._example, None
        reward = self.task.score_completion(action, example)
        answer = self.task.parse(action)
        rows = self.task.row_metrics([answer], [example.reference], [example.meta])
        info = {"reference": example.reference, "answer": answer, **{k: v[0] for k, v in rows.items()}}
        return example.prompt, float(reward), True, False, info


def env_id(task_name: str) -> str:
    """The Gymnasium id of a task of ``TASKS``: ``rewardzoo/<ClassName>-v0``."""
    return f"rewardzoo/{TASKS[task_name].__name__}-v0"


def make_env(task: str, split: str = "train", max_completion_length: int = 256, **settings) -> TaskEnv:
    """Build the task named ``task`` (a key of ``TASKS``) from its default config section with
    ``settings`` replaced, and wrap it in a :class:`TaskEnv` (the registered entry point).  A nested
    section takes a dict: ``make_env("hackable_multiplication", multiplication={"n_train": 50})``."""
    section = _replace(getattr(TaskConfig(), task), settings, f"task {task!r}")
    return TaskEnv(TASKS[task](section), split, max_completion_length)


def _replace(section, settings: dict, where: str):
    """``section`` (a config dataclass) with ``settings`` replaced, recursing into nested sections."""
    valid = {f.name: getattr(section, f.name) for f in dataclasses.fields(section)}
    unknown = sorted(set(settings) - set(valid))
    if unknown:
        raise TypeError(
            f"unknown setting(s) {unknown} for {where}; its settings are {sorted(valid)} "
            f"(the environment itself takes split and max_completion_length)"
        )
    changes = {
        k: _replace(valid[k], v, f"{where}.{k}") if dataclasses.is_dataclass(valid[k]) and isinstance(v, dict) else v
        for k, v in settings.items()
    }
    return dataclasses.replace(section, **changes)


def register_envs() -> None:
    """Register ``rewardzoo/<ClassName>-v0`` for every task (idempotent; builds nothing)."""
    for name in TASKS:
        if env_id(name) not in gymnasium.registry:
            gymnasium.register(
                id=env_id(name), entry_point="rewardzoo.integrations.gym:make_env", kwargs={"task": name}
            )
