"""Rollout throughput of the two engines, HFEngine and VLLMEngine, on the same policy and batch.

    python benchmarks/engines.py                                          # three tiny models, CPU
    python benchmarks/engines.py --models default --prompts 128 --new 32  # any size, on a GPU as well

Run it from the vLLM environment (``.venv-vllm/bin/python``, ``make test-vllm`` creates it).  For each
model one policy is built and both engines sample the same multiplication prompts, ``--n`` rows each,
up to ``--new`` tokens at temperature 1, through ``Engine.generate`` exactly as the trainer calls it
(torch seeded before every call).  After one warm-up call of each, the engines alternate call by call
(HF, vLLM, HF, ...) so that both see the same machine load; each reports the median and the fastest of
``--reps`` calls, the completion tokens generated (EOS included; rows may stop early, so the counts
differ a little) and tokens per second at the median.  Also measured: vLLM's start time and the time
of one full-weight push (``sync_weights``: reload of every weight plus the prefix-cache reset).
vLLM decodes all rows of a call together (``max_num_seqs`` = prompts × n), as HFEngine does.

The header states the machine, the versions and the 1-minute load average at the start and the end;
a load above the core count means other processes shared the cores (the timings are then slower than
on a quiet machine, for both engines alike as far as alternation makes it so).
"""

from __future__ import annotations

import argparse
import os
import platform
import shlex
import statistics
import sys
import time

import torch
import transformers

from rewardzoo.core.engines import HFEngine, SamplingConfig, VLLMConfig, VLLMEngine
from rewardzoo.core.models import ModelConfig, TinyModelConfig, load_policy
from rewardzoo.zoo import TaskConfig, build_task

MODELS = {  # tiny Qwen3 shapes; every head size (hidden / heads) is 32, which vLLM's CPU attention supports
    "small": TinyModelConfig(hidden_size=64, num_layers=2, num_heads=2, num_kv_heads=1, intermediate_size=128),
    "default": TinyModelConfig(),  # the recipes' model: hidden 128, 4 layers
    "large": TinyModelConfig(hidden_size=256, num_layers=4, num_heads=8, num_kv_heads=4, intermediate_size=768),
}


def timed_call(engine, prompts: list[str], n: int, seed: int) -> tuple[float, int]:
    """Seconds of one ``generate`` call and the completion tokens it produced."""
    torch.manual_seed(seed)
    t0 = time.perf_counter()
    gen = engine.generate(prompts, n=n)
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return time.perf_counter() - t0, int(gen.completion_mask.sum())


def bench_model(name: str, args, prompts: list[str]) -> list[str]:
    """The table rows of one model."""
    device = "cuda" if torch.cuda.is_available() else "cpu"
    policy, tokenizer = load_policy(ModelConfig(tiny=MODELS[name]), seed=0)
    policy.to(device)
    params = sum(p.numel() for p in policy.parameters())
    rows = args.prompts * args.n
    hf = HFEngine(policy, tokenizer, SamplingConfig(max_new_tokens=args.new))
    t0 = time.perf_counter()
    vllm_cfg = VLLMConfig(max_num_seqs=rows, kv_cache_memory_bytes=args.kv_cache_mib << 20 if device == "cpu" else 0)
    vllm = VLLMEngine(policy, tokenizer, SamplingConfig(engine="vllm", max_new_tokens=args.new, vllm=vllm_cfg))
    start_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    vllm.sync_weights(policy)
    push_s = time.perf_counter() - t0
    engines = {"hf": hf, "vllm": vllm}
    times: dict[str, list[float]] = {k: [] for k in engines}
    tokens: dict[str, list[int]] = {k: [] for k in engines}
    for engine in engines.values():
        timed_call(engine, prompts, args.n, seed=args.reps)  # warm-up
    for rep in range(args.reps):
        for key, engine in engines.items():
            s, t = timed_call(engine, prompts, args.n, seed=rep)
            times[key].append(s)
            tokens[key].append(t)
    vllm.close()
    out = []
    for key in engines:
        median = statistics.median(times[key])
        tok = statistics.median(tokens[key])
        out.append(
            f"{name:8s} {params:>9,d} {key:5s} {median:9.3f} {min(times[key]):7.3f} {tok:8.0f} {tok / median:10.0f}"
        )
    ratio = (statistics.median(tokens["vllm"]) / statistics.median(times["vllm"])) / (
        statistics.median(tokens["hf"]) / statistics.median(times["hf"])
    )
    out.append(
        f"#   {name}: vllm/hf tokens per second {ratio:.2f}; vLLM start {start_s:.1f} s, one full-weight push "
        f"{push_s * 1000:.0f} ms"
    )
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default="small,default,large", help=f"comma list of {', '.join(MODELS)}")
    parser.add_argument("--prompts", type=int, default=64, help="prompts per generate call")
    parser.add_argument("--n", type=int, default=8, help="rows sampled per prompt")
    parser.add_argument("--new", type=int, default=16, help="max new tokens per row")
    parser.add_argument("--reps", type=int, default=5, help="timed calls per engine")
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads (CPU)")
    parser.add_argument("--kv-cache-mib", type=int, default=256, help="vLLM KV cache on CPU, MiB")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    import vllm

    load_start = os.getloadavg()[0]
    task = build_task(TaskConfig())
    prompts = [e.prompt for e in task.train[: args.prompts]]
    device = "cuda" if torch.cuda.is_available() else "cpu"
    lines = [
        f"# command: python benchmarks/engines.py {shlex.join(sys.argv[1:])}".rstrip(),
        f"# machine: {platform.machine()}, {os.cpu_count()} cores, device {device}"
        + (f" ({torch.cuda.get_device_name()})" if device == "cuda" else f", torch threads {args.threads}")
        + f"; torch {torch.__version__}, transformers {transformers.__version__}, vllm {vllm.__version__}",
        f"# workload: {len(prompts)} multiplication prompts x {args.n} rows, up to {args.new} new tokens, "
        f"temperature 1.0, float32; median of {args.reps} calls per engine after one warm-up, alternating",
        "# model       params engine median_s   min_s   tokens  tok/s(med)",
    ]
    print("\n".join(lines), flush=True)
    for name in args.models.split(","):
        rows = bench_model(name, args, prompts)
        print("\n".join(rows), flush=True)
    load_end = os.getloadavg()[0]
    print(
        f"# load average (1 min): {load_start:.1f} at the start, {load_end:.1f} at the end, on {os.cpu_count()} cores"
        + (
            "; the machine was shared with other jobs, so both engines ran slower than on a quiet one"
            if max(load_start, load_end) > (os.cpu_count() or 1)
            else ""
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
