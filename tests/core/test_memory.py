"""peak_tensor_bytes: known allocations give known peaks; the fused log-prob path peaks below the naive one."""

import torch

from rewardzoo.core.logprobs import fused_token_logprobs, naive_token_logprobs
from rewardzoo.core.memory import peak_tensor_bytes

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
