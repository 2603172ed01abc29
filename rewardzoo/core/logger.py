"""Run logging: ``metrics.jsonl`` always, TensorBoard and Weights & Biases when asked.

Each JSONL row is one logged step: ``{"step": int, "reward/mean": float, ...}`` with namespaced keys
(``reward/…``, ``judge/…``, ``policy/…``, ``eval/…``, ``time/…``) defined in ``docs/metrics.md``.
``eval_rows.jsonl`` holds, for every held-out evaluation, the task's per-example row metrics
(``{"step": int, "rows": {"correct": [E floats], ...}}``), which paired confidence intervals over
held-out examples need (:func:`rewardzoo.eval.bootstrap_ci`); ``samples.jsonl`` every held-out
completion with its prompt, parsed answer, reference and row metrics (the first few also in
TensorBoard's text tab).
On resume, rows written after the checkpoint's step are dropped so the files read as one run.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

TENSORBOARD_SAMPLES = 4
"""Completions of each evaluation shown in TensorBoard (all of them go to ``samples.jsonl``)."""


def _cell(value) -> str:
    """A value as one Markdown table cell (pipes escaped, newlines shown as ⏎)."""
    return str(value).replace("|", "\\|").replace("\n", "⏎")


def silence_library_progress_bars() -> None:
    """Turn off the progress bars transformers, huggingface_hub and datasets print themselves (weights
    loading, shard writing, dataset maps): with ``logging.progress=false`` a run prints nothing but errors."""
    from huggingface_hub.utils import disable_progress_bars
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    disable_progress_bars()
    try:
        import datasets
    except ImportError:
        return
    datasets.disable_progress_bars()


def read_metrics(path: str | Path) -> list[dict]:
    """All rows of a ``metrics.jsonl`` file."""
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


class MetricLogger:
    """Writes metric rows to every configured sink (call on the main process only)."""

    def __init__(
        self,
        run_dir: Path,
        *,
        tensorboard: bool = True,
        wandb: bool = False,
        wandb_project: str = "rewardzoo",
        config: dict | None = None,
        resume_step: int | None = None,
    ):
        self.path = Path(run_dir) / "metrics.jsonl"
        self.rows_path = Path(run_dir) / "eval_rows.jsonl"
        self.samples_path = Path(run_dir) / "samples.jsonl"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        for path in (self.path, self.rows_path, self.samples_path):
            if resume_step is not None and path.exists():
                kept = [row for row in read_metrics(path) if row["step"] <= resume_step]
                path.write_text("".join(json.dumps(row) + "\n" for row in kept))
            elif resume_step is None:
                path.write_text("")
        self.tb = None
        if tensorboard:
            from torch.utils.tensorboard import SummaryWriter

            self.tb = SummaryWriter(str(Path(run_dir) / "tensorboard"))
        self.wandb = None
        if wandb:
            try:
                import wandb as wandb_lib
            except ImportError as err:
                raise ImportError("logging.wandb=true needs Weights & Biases: pip install 'rewardzoo[wandb]'") from err
            self.wandb = wandb_lib.init(project=wandb_project, config=config, dir=str(run_dir), resume="allow")

    def log(self, step: int, metrics: dict[str, float]) -> None:
        """Append one row (non-finite values are written as null)."""
        row = {"step": step, **{k: (float(v) if math.isfinite(float(v)) else None) for k, v in metrics.items()}}
        with open(self.path, "a") as f:
            f.write(json.dumps(row) + "\n")
        if self.tb is not None:
            for key, value in metrics.items():
                self.tb.add_scalar(key, float(value), step)
        if self.wandb is not None:
            self.wandb.log(metrics, step=step)

    def log_rows(self, step: int, rows: dict[str, list[float]]) -> None:
        """Append one evaluation's per-example row metrics to ``eval_rows.jsonl``."""
        with open(self.rows_path, "a") as f:
            f.write(json.dumps({"step": step, "rows": {k: [float(v) for v in vs] for k, vs in rows.items()}}) + "\n")

    def log_samples(self, step: int, samples: list[dict]) -> None:
        """Append one evaluation's completions to ``samples.jsonl`` — one row per completion: the step,
        prompt, completion, parsed answer, reference and the task's row metrics — and show the first
        :data:`TENSORBOARD_SAMPLES` in TensorBoard (text tab, ``eval/samples``)."""
        with open(self.samples_path, "a") as f:
            f.writelines(json.dumps({"step": step, **row}) + "\n" for row in samples)
        if self.tb is not None and samples:
            head = samples[:TENSORBOARD_SAMPLES]
            keys = list(head[0])
            table = ["| " + " | ".join(keys) + " |", "|" + " --- |" * len(keys)]
            table += ["| " + " | ".join(_cell(row[k]) for k in keys) + " |" for row in head]
            self.tb.add_text("eval/samples", "\n".join(table), step)

    def close(self) -> None:
        """Flush and close the sinks."""
        if self.tb is not None:
            self.tb.close()
        if self.wandb is not None:
            self.wandb.finish()
