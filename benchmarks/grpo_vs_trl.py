"""rewardzoo's GRPO ``Trainer`` against TRL's ``GRPOTrainer``: step time per phase and peak memory.

    python benchmarks/grpo_vs_trl.py --out benchmarks/results/grpo_vs_trl.txt     # S1 and S2, 2 + 5 steps
    python benchmarks/grpo_vs_trl.py --settings S2 --release-heap false            # rewardzoo with the heap release off
    python benchmarks/grpo_vs_trl.py --settings S3 --huge-pages both               # both sides' tensors on huge pages
    python benchmarks/grpo_vs_trl.py --settings S3 --mmap-threshold 4              # the memory mode's threshold at 4 MiB

Both sides train the same saved model (S1/S2: rewardzoo's tiny Qwen3 factory model; S3: SmolLM2;
float32) from the same prompts of the multiplication task (S1/S2: 8 prompts × 8 completions, 64 rows;
S3: 4 × 4; one micro-batch, one optimiser step per generation), with the same plain TRL-style reward function (the share of
digits in a completion, given to TRL as is and to rewardzoo through ``FunctionReward``), loss
``grpo`` (per-sequence token mean), group-normalised advantages, ε = 0.2, β = 0 (no reference
model), temperature 1, no top-p/top-k, AdamW (0.9, 0.99) with torch's fused kernel (TRL's default
optimiser), lr 1e-6 constant, gradient clipping at 1, float32, no gradient checkpointing, no
vLLM (rewardzoo's ``HFEngine`` with its decode loop, the default; TRL's transformers ``generate``),
and no logging, evaluation or checkpoints inside the timed steps.

Settings:

    S1  the tiny model as the CPU presets use it (vocabulary 100), 8 new tokens at most
    S2  the same model with a vocabulary of 151,936 (Qwen's; the character tokenizer padded with
        filler tokens), 64 new tokens forced (``min_new_tokens`` = 64 on both sides, i.e. EOS is
        suppressed by transformers' own logits processor)
    S3  a real model: SmolLM2-135M-Instruct (``rewardzoo models fetch smollm2-135m-instruct``), full
        fine-tuning, 4 chat prompts of multiplication × 4, 48 new tokens forced
    S3-lora  the same with LoRA r 16 / alpha 32 on every linear layer on both sides (peft's ``all-linear``)

    python benchmarks/grpo_vs_trl.py --settings S3 S3-lora --warmup 2 --steps 5 --out benchmarks/results/grpo_vs_trl_s3.txt

On S3 the prompts are the chat task's own (rendered by the model's chat template), given to both sides as
the same rendered strings.

Method.  Each side runs in its own process (so its peak resident set size, ``ru_maxrss``, is
that side's alone); the parent alternates them A B A B: it tells one side to run one step, waits
for its timings, then the other, so the two never share the CPU and drift of the machine load
hits both alike.  ``--warmup`` steps are run and dropped, then ``--steps`` steps are timed; the
table gives medians (and the step time's mean ± 95% CI over the timed steps).  Phases are timed
from outside without changing what either side computes: *generate* is the wall time inside the
HF engine's decode loop (rewardzoo) or the model's ``generate`` (TRL), *forward* the policy
forwards outside generation (rewardzoo's ``PolicyLogProbs``, TRL's model calls in the loss),
*backward* the ``accelerator.backward`` calls, *optimizer* ``optimizer.step``; *other* is the rest of the step (tokenising, decoding, rewards,
advantages, packing, gradient clipping, metrics).  TRL's step is timed from its ``on_step_begin``
to its ``on_step_end`` callback (its logging runs after that, untimed).  Every setting ends with
the line ``rewardzoo/trl: speed X, peak memory Y``: X = rewardzoo steps/s ÷ TRL steps/s (median
step times), Y = rewardzoo peak RSS ÷ TRL peak RSS.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple


class Setting(NamedTuple):
    """What a setting trains: the model (``tiny`` or a fetched model's name), its vocabulary (tiny only; 0 = the
    character tokenizer's own), the token budget, whether it is forced, LoRA or full fine-tuning, and the
    batch (prompts × group, one micro-batch)."""

    vocab: int
    max_new: int
    forced: bool
    model: str = "tiny"
    lora: bool = False
    prompts: int = 8
    group: int = 8


REAL = "smollm2-135m-instruct"
SETTINGS = {
    "S1": Setting(0, 8, False),
    "S2": Setting(151_936, 64, True),
    "S3": Setting(0, 48, True, REAL, prompts=4, group=4),
    "S3-lora": Setting(0, 48, True, REAL, lora=True, prompts=4, group=4),
}
DEFAULT_SETTINGS = ["S1", "S2"]
"""What runs without ``--settings`` (S3 needs the fetched model and takes minutes a step on a CPU)."""
LORA_R, LORA_ALPHA = 16, 32
PHASES = ("generate", "forward", "backward", "optimizer")
MARK = "@@grpo_vs_trl "  # prefix of the protocol lines a child writes to stdout


def digit_share(prompts, completions, **kwargs) -> list[float]:
    """A dense reward in TRL's calling convention: the share of digits in each completion."""
    return [sum(c.isdigit() for c in text) / max(len(text), 1) for text in completions]


# ---------------------------------------------------------------------------------------------- timing
class PhaseClock:
    """Wall time per phase, accumulated over one step; ``wrap`` times a callable, ``hook`` a module's
    forward calls (skipped while ``generate`` runs, whose decode steps call the same module)."""

    def __init__(self):
        self.totals = dict.fromkeys(PHASES, 0.0)
        self.in_generate = False
        self._start = 0.0

    def reset(self) -> None:
        """Start a new step."""
        self.totals = dict.fromkeys(PHASES, 0.0)

    def wrap(self, phase: str, fn):
        """``fn`` with its wall time added to ``phase``."""

        def timed(*args, **kwargs):
            t0 = time.perf_counter()
            if phase == "generate":
                self.in_generate = True
            try:
                return fn(*args, **kwargs)
            finally:
                self.in_generate = False if phase == "generate" else self.in_generate
                self.totals[phase] += time.perf_counter() - t0

        return timed

    def hook(self, module) -> None:
        """Time ``module``'s forward calls made outside generation as the forward phase."""

        def before(*_):
            if not self.in_generate:
                self._start = time.perf_counter()

        def after(*_):
            if not self.in_generate:
                self.totals["forward"] += time.perf_counter() - self._start

        module.register_forward_pre_hook(before)
        module.register_forward_hook(after)


def peak_rss_bytes() -> int:
    """This process's peak resident set size (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def send(record: dict) -> None:
    """One protocol line to the parent."""
    print(MARK + json.dumps(record), flush=True)


def wait_for_go() -> bool:
    """Block until the parent says ``go`` (True) or ``stop`` (False)."""
    return sys.stdin.readline().strip() == "go"


# ---------------------------------------------------------------------------------------------- the two sides
def make_model_dir(setting: str, root: Path) -> Path:
    """Save the setting's model and tokenizer once (a fetched model: its files linked, with the generation
    config forcing the token budget); both sides load this directory."""
    from transformers import GenerationConfig

    from rewardzoo.core.model_store import resolve_model
    from rewardzoo.core.models import TinyModelConfig, char_tokenizer, tiny_causal_lm

    s = SETTINGS[setting]
    path = root / setting
    if s.model != "tiny":
        source = Path(resolve_model(s.model))  # fails with the fetch command when the model is absent
        path.mkdir(parents=True)
        for f in source.iterdir():
            (path / f.name).symlink_to(f.resolve())
        config = GenerationConfig.from_pretrained(source)
        if s.forced:
            (path / "generation_config.json").unlink(missing_ok=True)
            config.min_new_tokens = s.max_new
        config.save_pretrained(path)
        return path
    tokenizer = char_tokenizer(s.vocab)
    model = tiny_causal_lm(TinyModelConfig(), len(tokenizer), seed=0)
    if s.forced:
        model.generation_config.min_new_tokens = s.max_new
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def prompts(setting: str, model_dir: Path | None = None) -> list:
    """The prompts both sides train on (every step uses all of them): multiplication's, in chat form rendered
    by the model's own template on a real model."""
    from rewardzoo.zoo import as_chat_task, build_task, load_config

    s = SETTINGS[setting]
    if s.model == "tiny":
        cfg = load_config("algorithms/rlvr_multiplication.yaml", [])
        return build_task(cfg.task).train[: s.prompts]
    cfg = load_config("rlvr_multiplication_smollm2", [f"model.name={model_dir}"])
    return as_chat_task(cfg, build_task(cfg.task)).train[: s.prompts]


MEMORY_SWITCHES = {
    "release-heap": "rewardzoo's grpo.release_heap (default auto: the library's default, on from a 32,768-entry "
    "vocabulary; true: lower peak memory on the CPU, slower small steps)",
    "recompute": "rewardzoo's lean forward recomputing its elementwise intermediates in the backward pass (default "
    "auto: in the memory mode, for fully trained layers; true/false force it, which no configuration key does)",
    "trims": "rewardzoo's heap trims at the trainer's release points (default auto: with the memory mode; true/false "
    "force them apart from the mode's 1 MiB mmap threshold, which no configuration key does)",
}
"""rewardzoo's memory switches on the command line (each one of :data:`SWITCH_VALUES`) and what each does."""
SWITCH_VALUES = ("auto", "true", "false")
"""What a memory switch can be set to (auto: the library's default)."""

MMAP_THRESHOLD_HELP = (
    "the memory mode's mmap threshold in MiB (default auto: the library's 1 MiB, map_large_blocks; a number moves it, "
    "which no configuration key does: blocks below it are reused from the heap, blocks of it or more go back to the OS "
    "when freed)"
)


def mmap_threshold(value: str) -> str:
    """``--mmap-threshold``: ``auto`` or a positive number of MiB (argparse's type; a clear error otherwise)."""
    if value == "auto":
        return value
    try:
        ok = float(value) > 0
    except ValueError:
        ok = False
    if not ok:
        raise argparse.ArgumentTypeError(f"give auto or a positive number of MiB, not {value!r}")
    return value


class Memory(NamedTuple):
    """rewardzoo's memory switches: those of :data:`MEMORY_SWITCHES`, each ``auto``, ``true`` or ``false``, and
    the memory mode's mmap threshold (``auto`` or MiB, :data:`MMAP_THRESHOLD_HELP`)."""

    release_heap: str = "auto"
    recompute: str = "auto"
    trims: str = "auto"
    mmap_threshold: str = "auto"

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Memory:
        """The switches the command line gives."""
        return cls(*(getattr(args, field) for field in cls._fields))

    def argv(self) -> list[str]:
        """The switches as the rewardzoo side's command line gives them."""
        return [f"--{field.replace('_', '-')}={value}" for field, value in zip(self._fields, self)]


DEFAULT_MEMORY = Memory()
"""Every memory switch at ``auto``: the library's defaults."""


HUGE_PAGES_ENV = "THP_MEM_ALLOC_ENABLE"
"""torch's switch for CPU tensors on transparent huge pages (read once, at torch's first CPU allocation)."""
HUGE_PAGES: dict[str, dict[str, bool | None]] = {
    "environment": {"rewardzoo": None, "trl": None},
    "rewardzoo": {"rewardzoo": True, "trl": False},
    "both": {"rewardzoo": True, "trl": True},
    "neither": {"rewardzoo": False, "trl": False},
}
"""``--huge-pages``: each side's ``THP_MEM_ALLOC_ENABLE``, 1 or 0 (None: as the benchmark's own environment has it;
torch's default is off)."""


def huge_pages() -> bool:
    """Whether this process's torch puts CPU tensors of 2 MiB or more on huge pages (its environment switch)."""
    return os.environ.get(HUGE_PAGES_ENV, "0").strip() not in ("", "0")


def run_rewardzoo(
    setting: str,
    model_dir: Path,
    run_dir: Path,
    total_steps: int,
    memory: Memory = DEFAULT_MEMORY,
    threads: int = 0,
) -> None:
    """rewardzoo's Trainer, one ``train_step`` per ``go`` (``memory``: the switches of :data:`MEMORY_SWITCHES`,
    ``grpo.release_heap`` through the configuration, the recomputation and the trims through the built trainer's
    log-prob module and release points; ``threads`` 0 = torch's default)."""
    import torch

    from rewardzoo.core import trainer as trainer_module
    from rewardzoo.core.engines import hf as hf_engine
    from rewardzoo.core.memory import map_large_blocks
    from rewardzoo.core.trainer import Trainer
    from rewardzoo.rewards.functions import FunctionReward
    from rewardzoo.zoo import build_task, load_config

    if threads:
        torch.set_num_threads(threads)
    s = SETTINGS[setting]
    real = [] if s.model == "tiny" else [f"model.name={model_dir}", "model.dtype=float32", "task.chat=false"]
    lora = ["model.lora.enabled=true", f"model.lora.r={LORA_R}", f"model.lora.alpha={LORA_ALPHA}"] if s.lora else []
    cfg = load_config(
        "algorithms/rlvr_multiplication.yaml",
        real
        + lora
        + [
            f"run_dir={run_dir}",
            "sft.enabled=false",
            "logging.progress=false",
            "logging.tensorboard=false",
            f"grpo.batch_size={s.prompts * s.group}",
            f"grpo.group_size={s.group}",
            f"grpo.micro_batch_size={s.prompts * s.group}",
            "grpo.loss_type=grpo",
            "grpo.advantage=grpo",
            "grpo.beta=0",
            "grpo.lr=1e-6",
            "grpo.warmup_steps=0",
            "grpo.max_grad_norm=1.0",
            "grpo.adam_betas=[0.9,0.99]",
            "grpo.weight_decay=0",
            "sampling.temperature=1.0",
            "sampling.top_p=1.0",
            "sampling.top_k=0",
            f"sampling.max_new_tokens={s.max_new}",
        ]
        + ([] if memory.release_heap == "auto" else [f"grpo.release_heap={memory.release_heap}"]),
    )
    if memory.mmap_threshold != "auto":  # what the trainer calls when it is built in the memory mode
        trainer_module.map_large_blocks = functools.partial(
            map_large_blocks, threshold=round(float(memory.mmap_threshold) * 2**20)
        )
    examples = prompts(setting, model_dir)
    init = model_dir if s.model == "tiny" else None  # a real model loads by its name (model.name), LoRA on top
    trainer = Trainer(
        cfg, task=build_task(cfg.task), reward=FunctionReward(digit_share), init_dir=init, prompts=examples
    )
    released = trainer.release_heap  # the memory mode as built: the mmap threshold, and by default the trims
    if memory.recompute != "auto":
        trainer.module.recompute = memory.recompute == "true"
    if memory.trims != "auto":
        trainer.release_heap = memory.trims == "true"  # what the trainer's release points read
    clock = PhaseClock()
    hf_engine.decode = clock.wrap("generate", hf_engine.decode)  # the HF engine's decode loop (default sampler)
    trainer.policy.generate = clock.wrap("generate", trainer.policy.generate)  # its generate path
    clock.hook(trainer.module)
    trainer.acc.backward = clock.wrap("backward", trainer.acc.backward)
    trainer.optimizer.step = clock.wrap("optimizer", trainer.optimizer.step)
    send(
        {
            "ready": True,
            "rss": peak_rss_bytes(),
            "threads": torch.get_num_threads(),
            "release_heap": released,
            "mmap_threshold": memory.mmap_threshold if released else None,
            "trims": trainer.release_heap,
            "recompute": trainer.module.recompute and not s.lora,  # LoRA's frozen base layers never recompute
            "huge_pages": huge_pages(),
        }
    )
    for _ in range(total_steps):
        if not wait_for_go():
            break
        clock.reset()
        t0 = time.perf_counter()
        metrics = trainer.train_step()
        step = time.perf_counter() - t0
        send({"step": step, **clock.totals, "completion_length": metrics["policy/completion_length"]})
    send({"peak_rss": peak_rss_bytes()})


def run_trl(setting: str, model_dir: Path, run_dir: Path, total_steps: int, threads: int = 0) -> None:
    """TRL's GRPOTrainer; a callback blocks between steps until the parent says ``go`` (``threads`` 0 =
    torch's default, what TRL runs with)."""
    import torch
    import trl
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback

    if threads:
        torch.set_num_threads(threads)
    s = SETTINGS[setting]
    max_new, forced = s.max_new, s.forced
    clock = PhaseClock()
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    tokenizer.padding_side = "left"
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32, attn_implementation="sdpa")
    args = trl.GRPOConfig(
        output_dir=str(run_dir),
        max_steps=total_steps,
        seed=0,
        use_cpu=True,
        bf16=False,
        fp16=False,
        per_device_train_batch_size=s.prompts * s.group,
        gradient_accumulation_steps=1,
        num_generations=s.group,
        steps_per_generation=1,
        num_iterations=1,
        max_completion_length=max_new,
        temperature=1.0,
        top_p=1.0,
        top_k=0,
        generation_kwargs={"min_new_tokens": max_new} if forced else None,
        loss_type="grpo",
        scale_rewards="group",
        beta=0.0,
        epsilon=0.2,
        learning_rate=1e-6,
        lr_scheduler_type="constant",
        warmup_steps=0,
        optim="adamw_torch_fused",
        adam_beta1=0.9,
        adam_beta2=0.99,
        weight_decay=0.0,
        max_grad_norm=1.0,
        activation_checkpointing=False,
        use_vllm=False,
        cast_lm_head_to_fp32=False,
        report_to="none",
        logging_strategy="no",
        save_strategy="no",
        eval_strategy="no",
        log_completions=False,
        disable_tqdm=True,
        dataloader_num_workers=0,
    )
    dataset = Dataset.from_dict({"prompt": [e.prompt for e in prompts(setting, model_dir)]})
    peft_config = None
    if s.lora:
        from peft import LoraConfig

        peft_config = LoraConfig(
            r=LORA_R, lora_alpha=LORA_ALPHA, lora_dropout=0.0, target_modules="all-linear", task_type="CAUSAL_LM"
        )
    trainer = trl.GRPOTrainer(
        model=model,
        reward_funcs=[digit_share],
        args=args,
        train_dataset=dataset,
        processing_class=tokenizer,
        peft_config=peft_config,
    )

    class Lockstep(TrainerCallback):
        """Times each step from on_step_begin to on_step_end and waits for the parent between steps."""

        def __init__(self):
            self.t0 = 0.0
            self.lengths = []

        def on_train_begin(self, args, state, control, **kwargs):
            trainer.optimizer.step = clock.wrap("optimizer", trainer.optimizer.step)
            send(
                {"ready": True, "rss": peak_rss_bytes(), "threads": torch.get_num_threads(), "huge_pages": huge_pages()}
            )
            control.should_training_stop = not wait_for_go()

        def on_step_begin(self, args, state, control, **kwargs):
            clock.reset()
            self.t0 = time.perf_counter()

        def on_step_end(self, args, state, control, **kwargs):
            step = time.perf_counter() - self.t0
            length = trainer._metrics["train"]["completions/mean_length"][-1]
            send({"step": step, **clock.totals, "completion_length": length})
            if state.global_step < total_steps and not wait_for_go():
                control.should_training_stop = True

    trainer.model.generate = clock.wrap("generate", trainer.model.generate)
    clock.hook(trainer.model)
    trainer.accelerator.backward = clock.wrap("backward", trainer.accelerator.backward)
    trainer.add_callback(Lockstep())
    trainer.train()
    send({"peak_rss": peak_rss_bytes()})


# ---------------------------------------------------------------------------------------------- the parent
class Side:
    """A child process running one side, driven one step at a time."""

    def __init__(
        self,
        name: str,
        setting: str,
        model_dir: Path,
        run_dir: Path,
        total_steps: int,
        extra: list[str],
        huge_pages: bool | None = None,
    ):
        """Start the side's process (``huge_pages``: ``THP_MEM_ALLOC_ENABLE`` 1 or 0 in its environment; None
        leaves the benchmark's own)."""
        self.name = name
        cmd = [
            sys.executable,
            __file__,
            "--child",
            name,
            "--setting",
            setting,
            "--model-dir",
            str(model_dir),
            "--run-dir",
            str(run_dir),
            "--total-steps",
            str(total_steps),
            *extra,
        ]
        env = dict(os.environ)
        if huge_pages is not None:
            env[HUGE_PAGES_ENV] = str(int(huge_pages))
        self.proc = subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=Path(__file__).resolve().parents[1],
            env=env,
        )
        self.ready = self.read()

    def read(self) -> dict:
        """The child's next protocol line (other output is ignored)."""
        for line in self.proc.stdout:
            if line.startswith(MARK):
                return json.loads(line[len(MARK) :])
        raise RuntimeError(f"the {self.name} process ended early (exit {self.proc.wait()}); see its output above")

    def step(self) -> dict:
        """Run one step in the child and return its timings."""
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()
        return self.read()

    def finish(self) -> int:
        """Let the child end and return its peak RSS in bytes."""
        peak = self.read()["peak_rss"]
        self.proc.stdin.close()
        if self.proc.wait() != 0:
            raise RuntimeError(f"the {self.name} process failed with exit {self.proc.returncode}")
        return peak


def compare(
    setting: str,
    warmup: int,
    steps: int,
    root: Path,
    memory: Memory = DEFAULT_MEMORY,
    threads: int = 0,
    huge_pages: str = "environment",
) -> list[str]:
    """Alternate the two sides on one setting; the report lines (``huge_pages``: which sides put CPU tensors on
    huge pages, :data:`HUGE_PAGES`)."""
    from rewardzoo.eval import mean_ci

    model_dir = make_model_dir(setting, root)
    total = warmup + steps
    extra = ["--threads", str(threads)]
    rz_extra = extra + memory.argv()
    sides = [
        Side(
            name,
            setting,
            model_dir,
            root / f"{setting}-{name}",
            total,
            rz_extra if name == "rewardzoo" else extra,
            HUGE_PAGES[huge_pages][name],
        )
        for name in ("rewardzoo", "trl")
    ]
    rows = {s.name: [] for s in sides}
    for _ in range(total):
        for side in sides:
            rows[side.name].append(side.step())
    peaks = {s.name: s.finish() for s in sides}
    s = SETTINGS[setting]
    max_new, forced = s.max_new, s.forced
    model = f"tiny model, vocabulary {s.vocab or 100:,}" if s.model == "tiny" else s.model
    lines = [
        f"## {setting}: {model}, {'LoRA r ' + str(LORA_R) if s.lora else 'full fine-tuning'}, {s.prompts} prompts x "
        f"{s.group}, {max_new} new tokens{' forced' if forced else ' at most'}; {warmup} warm-up + {steps} timed "
        "steps each",
        "",
        "| side | threads | step s (median) | step s (mean ± 95% CI) | "
        + " | ".join(f"{p} s" for p in PHASES)
        + " | other s | completion tokens | peak RSS GiB |",
        "|---|---|---|---|" + "---|" * (len(PHASES) + 3),
    ]
    medians = {}
    for name, timed in ((n, r[warmup:]) for n, r in rows.items()):
        med = {k: statistics.median(r[k] for r in timed) for k in ("step", *PHASES, "completion_length")}
        other = statistics.median(r["step"] - sum(r[p] for p in PHASES) for r in timed)
        medians[name] = med
        threads_used = next(side.ready["threads"] for side in sides if side.name == name)
        lines.append(
            f"| {name} | {threads_used} | {med['step']:.3f} | {mean_ci([r['step'] for r in timed]).format(digits=3)} | "
            + " | ".join(f"{med[p]:.3f}" for p in PHASES)
            + f" | {other:.3f} | {med['completion_length']:.1f} | {peaks[name] / 2**30:.3f} |"
        )
    if forced and any(m["completion_length"] != max_new for m in medians.values()):
        raise RuntimeError(f"{setting} must force {max_new} tokens on both sides; got {medians}")
    speed = medians["trl"]["step"] / medians["rewardzoo"]["step"]
    memory_ratio = peaks["rewardzoo"] / peaks["trl"]
    ready = next(side.ready for side in sides if side.name == "rewardzoo")
    released = ready["release_heap"]
    lines += [
        "",
        f"rewardzoo's grpo.release_heap: {memory.release_heap} (the heap {'was' if released else 'was not'} released"
        + (f"; mmap threshold {ready['mmap_threshold']} MiB" if released and memory.mmap_threshold != "auto" else "")
        + ")",
        "",
        f"rewardzoo's recomputation in the backward pass: {memory.recompute} "
        f"({'on' if ready['recompute'] else 'off'}); heap trims: {memory.trims} ({'on' if ready['trims'] else 'off'})",
        "",
        "CPU tensors of 2 MiB or more on huge pages (THP_MEM_ALLOC_ENABLE): "
        + ", ".join(f"{side.name} {'yes' if side.ready['huge_pages'] else 'no'}" for side in sides)
        + f" (--huge-pages {huge_pages})",
        "",
        f"rewardzoo/trl: speed {speed:.2f}, peak memory {memory_ratio:.3f}",
        "",
    ]
    return lines


def main() -> int:
    """Run the chosen settings and print (and optionally write) the report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--settings", nargs="+", default=DEFAULT_SETTINGS, choices=list(SETTINGS))
    parser.add_argument("--warmup", type=int, default=2, help="untimed steps per side")
    parser.add_argument("--steps", type=int, default=5, help="timed steps per side")
    parser.add_argument("--out", help="also write the report to this file")
    for name, what in MEMORY_SWITCHES.items():
        parser.add_argument(f"--{name}", choices=SWITCH_VALUES, default="auto", help=what)
    parser.add_argument("--mmap-threshold", type=mmap_threshold, default="auto", help=MMAP_THRESHOLD_HELP)
    parser.add_argument(
        "--huge-pages",
        choices=list(HUGE_PAGES),
        default="environment",
        help="which sides put CPU tensors of 2 MiB or more on transparent huge pages, torch's THP_MEM_ALLOC_ENABLE "
        "(default environment: as this process's environment has it, torch's default off; rewardzoo; both; neither)",
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=0,
        help="torch intra-op threads of both sides (default 0: torch's default, one per core; give 1 for a "
        "meaningful ratio on a loaded machine, where a second thread waits for a core)",
    )
    parser.add_argument("--child", choices=["rewardzoo", "trl"], help=argparse.SUPPRESS)
    parser.add_argument("--setting", help=argparse.SUPPRESS)
    parser.add_argument("--model-dir", help=argparse.SUPPRESS)
    parser.add_argument("--run-dir", help=argparse.SUPPRESS)
    parser.add_argument("--total-steps", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        if args.child == "rewardzoo":
            run_rewardzoo(
                args.setting,
                Path(args.model_dir),
                Path(args.run_dir),
                args.total_steps,
                Memory.from_args(args),
                args.threads,
            )
        else:
            run_trl(args.setting, Path(args.model_dir), Path(args.run_dir), args.total_steps, args.threads)
        return 0
    import torch
    import transformers
    import trl

    lines = [
        f"# command: python benchmarks/grpo_vs_trl.py {' '.join(sys.argv[1:])}".rstrip(),
        f"# machine: {platform.machine()} {platform.processor() or ''} torch {torch.__version__} "
        f"transformers {transformers.__version__} trl {trl.__version__}, {os.cpu_count()} CPUs, "
        f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())} at the start",
        "",
    ]
    print("\n".join(lines), flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        for setting in args.settings:
            report = compare(
                setting, args.warmup, args.steps, Path(tmp), Memory.from_args(args), args.threads, args.huge_pages
            )
            print("\n".join(report), flush=True)
            lines += report
    if args.out:
        Path(args.out).write_text("\n".join(lines).rstrip() + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
