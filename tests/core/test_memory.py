"""peak_tensor_bytes: known allocations give known peaks; the fused log-prob path peaks below the naive one.
release_freed_memory hands freed heap pages back to the operating system."""

import subprocess
import sys

import pytest
import torch

from rewardzoo.core.logprobs import fused_token_logprobs, naive_token_logprobs
from rewardzoo.core.memory import AUTO_RELEASE_VOCAB, peak_tensor_bytes, release_freed_memory, releases_heap

MIB = 1 << 20


def test_peak_counts_what_is_alive_at_once():
    """Two float32 tensors of 2^20 elements (4 MiB each): alive together 8 MiB, one after the other 4 MiB;
    a tensor made before the call is not counted, the product it makes inside is."""

    def together():
        a, b = torch.empty(1 << 20), torch.empty(1 << 20)
        return a, b

    def one_after_the_other():
        a = torch.empty(1 << 20)
        del a
        return torch.empty(1 << 20)

    (a, b), peak = peak_tensor_bytes(together)
    assert peak == 8 * MIB and a.numel() == b.numel() == 1 << 20
    assert peak_tensor_bytes(one_after_the_other)[1] == 4 * MIB
    x = torch.randn(1 << 20)
    assert peak_tensor_bytes(lambda: x * 2)[1] == 4 * MIB


def test_fused_logprobs_peak_below_one_full_logits_tensor():
    """K = 512 positions, V = 4,096: one [K, V] fp32 tensor is 8 MiB.  The naive path holds several,
    the fused path (chunks of 64 positions) less than one."""
    gen = torch.Generator().manual_seed(0)
    h = torch.randn(512, 32, generator=gen).requires_grad_()
    W = torch.randn(4096, 32, generator=gen).requires_grad_()
    y = torch.randint(0, 4096, (512,), generator=gen)

    def step(path):
        def run():
            logp, ent = path()
            (logp.sum() + ent.sum()).backward()

        return run

    full = 512 * 4096 * 4
    _, fused = peak_tensor_bytes(step(lambda: fused_token_logprobs(h, W, y, chunk_size=64)))
    _, naive = peak_tensor_bytes(step(lambda: naive_token_logprobs(h, W, y)))
    assert fused < full < 2 * full < naive


def resident_mib() -> float:
    """This process's current resident set (Linux)."""
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS")) / 1024


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc malloc_trim")
def test_freed_heap_blocks_leave_the_resident_set():
    """200 MiB of 64 KiB tensors (below glibc's mmap threshold, so heap blocks) are freed while the
    last one stays alive, which keeps the heap from shrinking by itself; the release returns most of
    their pages."""
    blocks = [torch.ones(16 * 1024) for _ in range(3200)]  # 3,200 × 64 KiB
    keep = blocks[-1]
    del blocks
    before = resident_mib()
    assert release_freed_memory() is True
    after = resident_mib()
    assert before - after > 100, (before, after)
    assert keep.sum().item() == 16 * 1024


def test_release_heap_by_default_decides_by_the_vocabulary_and_only_on_the_cpu():
    assert not releases_heap(None, "cpu", 100) and releases_heap(None, "cpu", 151_936)
    assert releases_heap(None, "cpu", AUTO_RELEASE_VOCAB) and not releases_heap(None, "cpu", AUTO_RELEASE_VOCAB - 1)
    assert releases_heap(True, "cpu", 100) and not releases_heap(False, "cpu", 151_936)
    assert not releases_heap(True, "cuda", 151_936) and not releases_heap(None, "cuda", 151_936)


@pytest.mark.parametrize("switch", [False, True, None])
def test_the_trainer_releases_the_heap_only_with_grpo_release_heap(fast_config, monkeypatch, switch):
    """The release points (after the rollout, after each micro-batch's forward, before the optimiser
    step, after the policy step) call the real release, and only with the switch on (by default, None,
    not at the tiny model's vocabulary)."""
    from rewardzoo.core import trainer as trainer_module
    from rewardzoo.recipes import make_trainer

    calls = []

    def counted() -> bool:
        calls.append(1)
        return release_freed_memory()

    monkeypatch.setattr(trainer_module, "release_freed_memory", counted)
    mapped = []  # the mmap threshold is process-wide: tested in its own process below, only counted here
    monkeypatch.setattr(trainer_module, "map_large_blocks", lambda: mapped.append(1) or True)
    setting = "null" if switch is None else str(switch).lower()
    trainer = make_trainer(fast_config(f"grpo.release_heap={setting}", "grpo.micro_batch_size=16"))
    assert trainer.release_heap is bool(switch)
    assert trainer.module.recompute is bool(switch)  # the lean forward recomputes in the memory mode only
    trainer.train_step()
    # 32 rows in micro-batches of 16: the rollout, 2 forwards, the optimiser step, the policy step
    assert len(calls) == (5 if switch else 0) and len(mapped) == (1 if switch else 0)


def test_the_memory_mode_gives_the_same_update_bit_for_bit(fast_config, monkeypatch, tmp_path):
    """With ``grpo.release_heap`` the lean forward of the fully trained tiny model recomputes its elementwise
    intermediates in the backward pass: one step (a dense reward, so every parameter moves) changes every
    parameter by the same bits as without it."""
    from rewardzoo.core import trainer as trainer_module
    from tests.helpers.steps import dense_step

    monkeypatch.setattr(trainer_module, "map_large_blocks", lambda: True)  # process-wide: not in the test process
    deltas = {}
    for switch in (False, True):
        cfg = fast_config(
            f"grpo.release_heap={str(switch).lower()}", "grpo.micro_batch_size=16", f"run_dir={tmp_path / str(switch)}"
        )
        trainer, _, deltas[switch] = dense_step(cfg)
        assert trainer.module.recompute is switch
    assert all(d.abs().sum() > 0 for d in deltas[False].values())
    assert all(torch.equal(deltas[True][n], d) for n, d in deltas[False].items())


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc mallopt")
def test_map_large_blocks_gives_a_freed_block_back_at_once():
    """In a fresh process, after a freed 4 MiB block has raised glibc's mmap threshold: with
    map_large_blocks a 2 MiB tensor is its own mapping (an mmapped block while alive, gone after), so
    freeing it returns its pages at once; without it the tensor comes from the heap. Eight tensors,
    not one: a free chunk the imports left in the heap may serve one or two of them whatever the
    threshold (how many such chunks there are varies from run to run)."""
    code = """
import ctypes, torch
from rewardzoo.core.memory import map_large_blocks
class MI2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                                "fsmblks", "uordblks", "fordblks", "keepcost")]
libc = ctypes.CDLL(None)
libc.mallinfo2.restype = MI2
x = torch.ones(1 << 20)  # 4 MiB, mmapped; freeing it raises the threshold above 2 MiB
del x
if MAP:
    assert map_large_blocks()
before = libc.mallinfo2().hblks
t = [torch.ones(1 << 19) for _ in range(8)]  # 2 MiB each
alive = libc.mallinfo2().hblks
del t
print(before, alive, libc.mallinfo2().hblks)
"""

    def blocks(map_them: bool) -> list[int]:
        run = subprocess.run(
            [sys.executable, "-c", f"MAP = {map_them}\n" + code], capture_output=True, text=True, check=True
        )
        return list(map(int, run.stdout.split()))

    before, alive, after = blocks(True)
    assert alive - before >= 6 and after == before
    before, alive, after = blocks(False)
    assert alive - before <= 2  # the control: from the heap, where its pages stay after the free
