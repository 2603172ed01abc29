"""Where rewardzoo's step peaks in memory: the peak resident set of each phase of one step, for memory settings
side by side — to see which phase a memory switch lowers, and so which phase pays for it.

    python benchmarks/phase_peaks.py --setting S3 --memory auto release-heap=false,trims=true,recompute=true \
        --out benchmarks/results/phase_peaks_s3.md

Each ``--memory`` item is one configuration of ``benchmarks/grpo_vs_trl.py``'s memory switches (``auto``: all at
the library's defaults; else ``switch=value`` pairs, as that script's flags name them), run in its own process
(the mmap threshold is process-wide) with rewardzoo's side of that script on one thread. The trainer's verbs
(``rollout``, ``score``), its policy module's forward, ``accelerator.backward`` and ``optimizer.step`` are
wrapped: each resets the kernel's high-water mark of the resident set (``/proc/self/clear_refs``, Linux) when it
starts and reads it (``VmHWM``) when it ends. A phase's figure is its peak in the last of ``--steps`` steps; the
resident set when it ends beside it. Memory only: the peaks do not depend on the machine's load, so this may run
beside other work (the step times are not read).
"""

from __future__ import annotations

import argparse
import functools
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import grpo_vs_trl as bench  # noqa: E402  (the benchmark whose rewardzoo side this measures)

PHASES = ("rollout", "score", "forward", "backward", "optimizer")
MARK = "@@phase_peaks "


def status_gib(field: str) -> float:
    """A resident-set figure of this process from ``/proc/self/status`` (``VmHWM`` or ``VmRSS``), in GiB."""
    kib = re.search(rf"^{field}:\s+(\d+) kB", Path("/proc/self/status").read_text(), re.M)
    return int(kib.group(1)) / 2**20


def reset_high_water() -> None:
    """Restart the kernel's high-water mark of this process's resident set at its current size."""
    Path("/proc/self/clear_refs").write_text("5")


def memory_of(item: str) -> bench.Memory:
    """``auto`` or ``switch=value,...`` as a :class:`grpo_vs_trl.Memory` (a clear error for an unknown switch)."""
    if item == "auto":
        return bench.DEFAULT_MEMORY
    if any("=" not in pair for pair in item.split(",")):
        raise SystemExit(f"--memory {item!r}: give auto or switch=value pairs joined by commas")
    pairs = dict(pair.split("=", 1) for pair in item.split(","))
    fields = {name.replace("-", "_"): value for name, value in pairs.items()}
    unknown = sorted(set(fields) - set(bench.Memory._fields))
    if unknown:
        known = ", ".join(f.replace("_", "-") for f in bench.Memory._fields)
        raise SystemExit(f"--memory {item!r}: unknown switch {', '.join(unknown)}; give auto or pairs of {known}")
    for name, value in fields.items():
        if name == "mmap_threshold":
            try:
                bench.mmap_threshold(value)
            except argparse.ArgumentTypeError as err:
                raise SystemExit(f"--memory {item!r}: mmap-threshold: {err}") from None
        elif value not in bench.SWITCH_VALUES:
            raise SystemExit(f"--memory {item!r}: {name.replace('_', '-')} is auto, true or false, not {value!r}")
    return bench.Memory(**fields)


def child(setting: str, steps: int, item: str) -> None:
    """Run ``steps`` steps of rewardzoo's side with every phase's peak read; print one protocol line."""
    import rewardzoo.core.trainer as trainer_module

    peaks: dict[str, tuple[float, float]] = {}

    def watched(phase, fn):
        @functools.wraps(fn)
        def run(*args, **kwargs):
            reset_high_water()
            out = fn(*args, **kwargs)
            peaks[phase] = (status_gib("VmHWM"), status_gib("VmRSS"))
            reset_high_water()
            return out

        return run

    class Watched(trainer_module.Trainer):
        """The trainer with its phases watched (built as the benchmark builds it)."""

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.rollout, self.score = watched("rollout", self.rollout), watched("score", self.score)
            self.module.forward = watched("forward", self.module.forward)
            self.acc.backward = watched("backward", self.acc.backward)
            self.optimizer.step = watched("optimizer", self.optimizer.step)

    trainer_module.Trainer = Watched  # what the benchmark's side imports when it builds its trainer
    bench.send = lambda record: None  # the side's own protocol: nobody listens
    bench.wait_for_go = lambda: True
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = bench.make_model_dir(setting, Path(tmp))  # the model as the benchmark saves it
        bench.run_rewardzoo(setting, model_dir, Path(tmp) / "run", steps, memory_of(item), threads=1)
    print(MARK + json.dumps(peaks), flush=True)


def measure(setting: str, steps: int, item: str) -> dict[str, list[float]]:
    """One configuration's phase peaks, from its own process."""
    cmd = [sys.executable, __file__, "--child", "--setting", setting, "--steps", str(steps), "--memory", item]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    lines = [line for line in proc.stdout.splitlines() if line.startswith(MARK)]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"--memory {item}: the process failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    return json.loads(lines[-1][len(MARK) :])


def report(setting: str, steps: int, items: list[str], measured: list[dict]) -> list[str]:
    """The Markdown table: a row per phase, per configuration its peak and its resident set at the phase's end."""
    lines = [
        f"# command: python benchmarks/phase_peaks.py {' '.join(sys.argv[1:])}",
        "",
        f"## {setting}: rewardzoo's peak resident set per phase, GiB (step {steps} of {steps}; peak / at the end)",
        "",
        "| phase | " + " | ".join(f"`{item}`" for item in items) + " |",
        "| --- |" + " ---: |" * len(items),
    ]
    for phase in PHASES:
        lines.append(f"| {phase} | " + " | ".join("{:.3f} / {:.3f}".format(*m[phase]) for m in measured) + " |")
    lines.append("| the step's peak | " + " | ".join(f"{max(p for p, _ in m.values()):.3f}" for m in measured) + " |")
    return lines


def main() -> int:
    """Measure each configuration and print (and optionally write) the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--setting", default="S3", choices=list(bench.SETTINGS))
    parser.add_argument("--steps", type=int, default=2, help="steps per configuration; the last is read")
    parser.add_argument("--memory", nargs="+", default=["auto"], help="configurations: auto, or switch=value,...")
    parser.add_argument("--out", help="also write the table to this file")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if not Path("/proc/self/clear_refs").exists():
        raise SystemExit("phase_peaks.py reads the kernel's resident-set high-water mark: it needs Linux's /proc")
    if args.child:
        child(args.setting, args.steps, args.memory[0])
        return 0
    for item in args.memory:  # every configuration parses before any process starts
        memory_of(item)
    lines = report(args.setting, args.steps, args.memory, [measure(args.setting, args.steps, m) for m in args.memory])
    print("\n".join(lines))
    if args.out:
        Path(args.out).write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
