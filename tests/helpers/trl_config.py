"""TRL's GRPOConfig for the tests that run its GRPOTrainer on the CPU: one process, fp32, no checkpoints, no
report, a step a log line; each test gives what it varies (steps, group, token budget, learning rate)."""

from __future__ import annotations

from pathlib import Path


def cpu_grpo_config(output_dir: Path, **varied):
    """``trl.GRPOConfig`` with the CPU test defaults below, ``varied`` on top (e.g. ``max_steps=2``)."""
    import trl

    defaults = dict(
        output_dir=str(output_dir),
        use_cpu=True,
        bf16=False,
        per_device_train_batch_size=8,
        num_generations=4,
        report_to="none",
        save_strategy="no",
        logging_steps=1,
        gradient_checkpointing=False,
        dataloader_num_workers=0,
        seed=0,
    )
    return trl.GRPOConfig(**{**defaults, **varied})
