"""A task from your own examples: a JSONL file or a Hugging Face ``datasets`` dataset.

Each row gives a prompt and a reference final answer (column names configurable), optionally a full
demonstration completion for SFT and VARL (default: the reference written in the task's answer
format) and extra columns passed on as ``meta``.  The final answer of a completion is read by the
task's ``answer_format`` (:func:`~rewardzoo.tasks.base.extract_answer`) and scored by one verifier
of :mod:`rewardzoo.tasks.checks.verifiers` (``exact``, ``last_number``, ``tagged``, ``contains``,
``every_number``, ``math_verify``) as ``verifier(answer, reference)``; held-out ``accuracy`` is the share of rows
that verifier scores 1.

Where the rows come from (``path``): a ``.jsonl``/``.json``, ``.csv`` or ``.parquet`` file (read by
``datasets.load_dataset``), a directory written by ``Dataset.save_to_disk`` or
``DatasetDict.save_to_disk`` (``datasets.load_from_disk``; ``train_split`` picks the split of a
DatasetDict), or — when no such file exists and the text looks like ``owner/name`` — a dataset on
the Hugging Face hub, which needs network and is never used by the CPU presets or the tests.
Held-out rows come from ``eval_path`` (its ``eval_split``, or ``train_split``, if it is a
DatasetDict), else from ``eval_split`` of the DatasetDict at ``path``, else a shuffled
``eval_fraction`` of the rows (shuffled with ``data_seed``).

Prompt, reference and demonstration values are turned into text with ``str``; write them as JSON
strings to keep their exact text (a JSON number ``0.50`` is read as ``0.5``).

Untested: loading from the hub (it needs network).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import ClassVar

from rewardzoo.core.config import check_section
from rewardzoo.core.models import looks_like_path
from rewardzoo.core.types import Example
from rewardzoo.tasks.base import Task
from rewardzoo.tasks.checks.formats import NUMBER_FORMATS, format_answer
from rewardzoo.tasks.checks.verifiers import VERIFIERS

_FILE_BUILDERS = {".jsonl": "json", ".json": "json", ".csv": "csv", ".parquet": "parquet"}


@dataclass
class UserTaskConfig:
    """Settings of a task read from your own examples."""

    RANGES: ClassVar[dict[str, str]] = {
        "eval_fraction": "(0, 1)",
        "n_train": "[0, inf)",
        "n_eval": "[0, inf)",
        "data_seed": "(-inf, inf)",
    }

    path: str = ""
    """A .jsonl/.json/.csv/.parquet file, a directory written by save_to_disk, or a hub dataset name (needs network)."""
    train_split: str = "train"
    """Split of a DatasetDict directory or hub dataset to train on (a single file has only 'train')."""
    eval_path: str = ""
    """Held-out examples from this file or directory (same columns) instead of a split of ``path``."""
    eval_split: str = ""
    """Held-out examples from this split of the DatasetDict or hub dataset at ``path`` (or at ``eval_path``)."""
    eval_fraction: float = 0.1
    """Share of the rows held out when neither eval_path nor eval_split is given."""
    prompt_column: str = "prompt"
    """Column holding the prompt."""
    reference_column: str = "reference"
    """Column holding the reference final answer."""
    demonstration_column: str = ""
    """Column holding a full demonstration completion ('' = the reference in the answer format)."""
    meta_columns: list[str] = field(default_factory=list)
    """Columns passed on to rewards and metrics as each example's ``meta``."""
    verifier: str = "exact"
    """Verifier applied as verifier(answer, reference): exact, last_number, tagged, contains, every_number or
    math_verify (rewardzoo.tasks.checks.verifiers)."""
    answer_format: str = "plain"
    """'plain' (the whole completion is the answer), 'tags' (the last <answer>…</answer>) or 'instruct' (what an
    instruct model states in free text: the last \\boxed{}, else what follows "answer is", else the last '=';
    rewardzoo.tasks.checks.formats) — the one to use with a chat model (task.chat=true)."""
    n_train: int = 0
    """Keep at most this many training rows (0 = all)."""
    n_eval: int = 0
    """Keep at most this many held-out rows (0 = all)."""
    data_seed: int = 0
    """Seed of the shuffle before the eval_fraction split."""

    def validate(self) -> None:
        """Raise ValueError, saying what to change, on settings that cannot run (ranges: ``RANGES``).
        The rows themselves are checked when the task is built."""
        if self.verifier not in VERIFIERS:
            raise ValueError(f"verifier must be one of {', '.join(sorted(VERIFIERS))}; got {self.verifier!r}")
        if self.answer_format not in NUMBER_FORMATS:
            raise ValueError(f"answer_format must be one of {', '.join(NUMBER_FORMATS)}; got {self.answer_format!r}")
        if self.verifier == "tagged" and self.answer_format == "tags":
            raise ValueError(
                "verifier 'tagged' reads <answer> tags itself, but answer_format='tags' already strips "
                "them; set answer_format=plain (or use the 'exact' verifier)"
            )
        if not self.path:
            raise ValueError("path is empty; set it to a JSONL file or a save_to_disk directory")


def load_rows(path: str, split: str = "train") -> list[dict]:
    """The rows of a dataset file, a ``save_to_disk`` directory or a hub dataset, as dicts.

    Raises FileNotFoundError for a local path that does not exist and ValueError for a file that
    cannot be read or a split that is not there.
    """
    import datasets  # imported here: it takes seconds, and `import rewardzoo` must stay fast

    local = Path(path).expanduser()
    if local.is_dir():
        try:
            data = datasets.load_from_disk(str(local))
        except (FileNotFoundError, ValueError) as err:
            raise ValueError(f"{path!r} is a directory but not one written by save_to_disk: {err}") from err
        if isinstance(data, datasets.DatasetDict):
            if split not in data:
                raise ValueError(
                    f"{path!r} has splits {sorted(data)}, not {split!r}; "
                    f"set task.user.train_split (or eval_split) to one of them"
                )
            data = data[split]
        return data.to_list()
    if local.is_file():
        if split != "train":
            raise ValueError(
                f"{path!r} is a single file, whose only split is 'train', not {split!r}; hold out rows "
                f"with eval_path (another file) or eval_fraction instead of eval_split"
            )
        builder = _FILE_BUILDERS.get(local.suffix.lower())
        if builder is None:
            raise ValueError(
                f"cannot read {path!r}: give a {', '.join(_FILE_BUILDERS)} file or a save_to_disk directory"
            )
        if local.stat().st_size == 0:
            raise ValueError(f"{path!r} is empty; give a dataset with at least one example")
        try:
            return datasets.load_dataset(builder, data_files=str(local), split="train").to_list()
        except Exception as err:  # datasets wraps parse errors in its own types; say what failed either way
            raise ValueError(f"cannot read {path!r} as {builder}: {err.__cause__ or err!r}") from err
    if local.suffix or looks_like_path(path):
        raise FileNotFoundError(
            f"no file or directory at {path!r}; give the path of a JSONL file or a save_to_disk directory"
        )
    try:
        return datasets.load_dataset(path, split=split).to_list()
    except Exception as err:  # anything the hub client raises: no network, no such dataset, no such split
        raise ValueError(
            f"no local file or directory at {path!r}, and loading it from the Hugging Face hub failed "
            f"({err}); give the path of a JSONL file or a save_to_disk directory"
        ) from err


def row_name(i: int, source: str) -> str:
    """How to find row ``i`` (0-based) of ``source``: ``row 6 (line 6)`` of a JSONL file, ``row 6 (line 7)`` of
    a CSV file (after its header), ``row 6`` elsewhere — counting from 1, as editors do (a JSONL file's
    blank lines, which are skipped, are not counted)."""
    header = {".jsonl": 0, ".csv": 1}.get(Path(str(source)).suffix.lower())
    return f"row {i + 1}" + ("" if header is None else f" (line {i + 1 + header})")


def _examples(rows: list[dict], cfg: UserTaskConfig, source: str) -> list[Example]:
    """Rows → examples, after checking that every configured column exists."""
    if not rows:
        raise ValueError(f"{source} has no rows; give a dataset with at least one example")
    wanted = {"prompt_column": cfg.prompt_column, "reference_column": cfg.reference_column}
    if cfg.demonstration_column:
        wanted["demonstration_column"] = cfg.demonstration_column
    wanted.update({f"meta_columns[{i}]": c for i, c in enumerate(cfg.meta_columns)})
    columns = list(rows[0])
    for key, column in wanted.items():
        if column not in columns:
            raise ValueError(f"{source} has no column {column!r} (set by task.user.{key}); its columns are {columns}")
    examples = []
    for i, row in enumerate(rows):
        for key in ("prompt_column", "reference_column"):
            if row.get(wanted[key]) is None:
                raise ValueError(
                    f"{row_name(i, source)} of {source} has no value in column {wanted[key]!r} (task.user.{key})"
                )
        reference = str(row[cfg.reference_column])
        demonstration = row.get(cfg.demonstration_column) if cfg.demonstration_column else None
        examples.append(
            Example(
                prompt=str(row[cfg.prompt_column]),
                reference=reference,
                demonstration=format_answer(reference, cfg.answer_format)
                if demonstration is None
                else str(demonstration),
                meta={c: row.get(c) for c in cfg.meta_columns},
            )
        )
    return examples


def holdout_split(
    examples: list[Example], fraction: float, seed: int, source: str, key: str
) -> tuple[list[Example], list[Example]]:
    """(train, held-out): the examples shuffled with ``seed`` and a share ``fraction`` held out (at least one each
    side); errors name the config section ``key``."""
    if not 0 < fraction < 1:
        raise ValueError(f"{key}.eval_fraction must be in (0, 1); got {fraction} (or give eval_path or eval_split)")
    if len(examples) < 2:
        raise ValueError(f"{source} has {len(examples)} row; at least 2 are needed to hold some out, or give eval_path")
    order = list(range(len(examples)))
    random.Random(seed).shuffle(order)
    n_eval = min(max(round(fraction * len(examples)), 1), len(examples) - 1)
    return [examples[i] for i in order[n_eval:]], [examples[i] for i in order[:n_eval]]


class UserTask(Task):
    """Your prompts and reference answers, scored by a named verifier."""

    name = "user"

    def __init__(
        self, cfg: UserTaskConfig | None = None, rows: list[dict] | None = None, eval_rows: list[dict] | None = None
    ):
        """Build from ``cfg.path`` or, when given, from in-memory ``rows`` (a list of dicts or a
        ``datasets.Dataset``) and optional held-out ``eval_rows``."""
        cfg = cfg or UserTaskConfig()
        check_section(cfg if rows is None else replace(cfg, path=cfg.path or "<rows>"), "task.user")
        self.cfg = cfg
        self.answer_format = cfg.answer_format
        self._verifier = VERIFIERS[cfg.verifier]
        if rows is None:
            rows = load_rows(cfg.path, cfg.train_split)
            if eval_rows is None and (cfg.eval_path or cfg.eval_split):
                eval_rows = load_rows(cfg.eval_path or cfg.path, cfg.eval_split or cfg.train_split)
        source = cfg.path or "the given rows"
        train = _examples(list(rows), cfg, source)
        if eval_rows is not None:
            held_out = cfg.eval_path or (
                f"split {cfg.eval_split!r} of {cfg.path}" if cfg.eval_split else "the given held-out rows"
            )
            eval = _examples(list(eval_rows), cfg, held_out)
        else:
            train, eval = holdout_split(train, cfg.eval_fraction, cfg.data_seed, source, "task.user")
        super().__init__(train=train[: cfg.n_train or None], eval=eval[: cfg.n_eval or None])

    def verify(self, answer: str | None, reference: str, meta: dict) -> float:
        """The configured verifier's score of the parsed answer; 0.0 for a malformed one.  Never raises."""
        return 0.0 if answer is None else float(self._verifier(answer, reference))
