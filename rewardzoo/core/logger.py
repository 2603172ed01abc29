"""Run logging: ``metrics.jsonl`` always, TensorBoard and Weights & Biases when asked.

Each JSONL row is one logged step: ``{"step": int, "reward/mean": float, ...}`` with namespaced keys
(``reward/…``, ``judge/…``, ``policy/…``, ``eval/…``, ``time/…``) defined in ``docs/metrics.md``.
``eval_rows.jsonl`` holds, for every held-out evaluation, the task's per-example row metrics
(``{"step": int, "rows": {"correct": [E floats], ...}}``), which paired confidence intervals over
held-out examples need (:func:`rewardzoo.eval.bootstrap_ci`).
On resume, rows written after the checkpoint's step are dropped so the files read as one run.
"""

from __future__ import annotations

import json
import math
from pathlib import Path


def read_metrics(path: str | Path) -> list[dict]:
    """All rows of a ``metrics.jsonl`` file."""
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


class MetricLogger:
    """Writes metric rows to every configured sink (call on the main process only)."""

    def __init__(self, run_dir: Path, *, tensorboard: bool = True, wandb: bool = False,
                 wandb_project: str = "rewardzoo", config: dict | None = None, resume_step: int | None = None):
        self.path = Path(run_dir) / "metrics.jsonl"
        self.rows_path = Path(run_dir) / "eval_rows.jsonl"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        for path in (self.path, self.rows_path):
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

    def close(self) -> None:
        """Flush and close the sinks."""
        if self.tb is not None:
            self.tb.close()
        if self.wandb is not None:
            self.wandb.finish()
