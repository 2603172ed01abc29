"""How the policy, its reference and the judges are spread over processes: DDP (every process holds
a full copy) or FSDP2 (torch's ``fully_shard``: every process holds 1/world of each weight, its
gradient and its optimizer state, and gathers a block's weights only while that block runs).

    distributed.strategy=ddp     accelerate's DDP (GPU or MULTI_CPU/gloo): the default
    distributed.strategy=fsdp2   torch.distributed.fsdp.fully_shard on one mesh over every process

Under ``fsdp2`` (:class:`Sharding`):

* **units**: each transformer block (the classes a transformers model lists in ``_no_split_modules``)
  is one FSDP unit; the root unit holds the rest — embeddings, final norm and the output layer.
  The root of the policy is :class:`~rewardzoo.core.logprobs.PolicyLogProbs`, so the fused
  log-prob head runs inside the root's forward with the output weight already gathered (a plain
  tensor, never a DTensor): the kernel is unchanged and computes on each process's own tokens.
* **reference** (β > 0): with LoRA the adapters-disabled policy itself; otherwise the frozen copy
  of the starting weights is sharded the same way (no full second copy on any process).
* **generation**: :meth:`Sharding.gathered` all-gathers every unit once before the rollout and
  frees the full weights after it, so the decode loop runs on plain weights without any collective
  (processes may decode different numbers of steps).  Measured against generating from the
  sharded module with transformers ``generate(synced_gpus=True)`` in
  ``benchmarks/fsdp_generation.py`` (docs/distributed.md).  The vLLM engine (one per process) samples
  from its own copy, nothing gathered for the rollout; its weight push streams the shards through
  :func:`full_tensors`, one gathered tensor at a time.
* **judges** (RAL's judge and its Polyak copy, VARL's discriminator): sharded the same way by the
  reward's optional ``distribute(sharding)`` hook, their optimizers built over the shards; every
  process still runs the whole global batch through the judge (memory is sharded, judge compute
  is not split), so every process computes the same rewards.
* **mixed precision** (``distributed.mixed_precision=bf16``): FSDP2's ``MixedPrecisionPolicy`` —
  parameters stored (and optimised) in fp32, gathered and computed in bf16, gradients reduced in
  fp32.  Under DDP the same switch runs the decoder body under ``torch.autocast(bf16)`` (fp32
  master weights; the fused log-prob head stays in fp32).
* **checkpoints**: sharded, through ``torch.distributed.checkpoint``
  (:mod:`rewardzoo.core.sharded_checkpoint`).

Departures and limits (docs/distributed.md): the SFT warm start runs under DDP whatever the
strategy; every process loads the full starting weights before they are sharded (no meta-device
loading); a judge is sharded but every process scores the whole batch with it.
"""

from __future__ import annotations

import contextlib
import functools
import os
from dataclasses import dataclass
from typing import ClassVar

import torch
import torch.distributed as dist

STRATEGIES = ("ddp", "fsdp2")
MIXED_PRECISION = ("no", "bf16")


@dataclass
class DistributedConfig:
    """How training is spread over processes (launch with ``torchrun`` or ``accelerate launch``)."""

    RANGES: ClassVar[dict[str, str]] = {}

    strategy: str = "ddp"
    """'ddp': every process holds the full policy, judges and optimizer states (accelerate DDP); 'fsdp2':
    torch's fully_shard — weights, gradients and optimizer states of the policy, its reference and the judges
    split over all processes (docs/distributed.md)."""
    reshard_after_forward: bool = True
    """fsdp2: free each block's gathered weights after its forward and gather them again for the backward (less
    memory, one more all-gather per block); false keeps them until the backward."""
    mixed_precision: str = "no"
    """'no' (fp32) or 'bf16': fp32 master weights and optimizer, bf16 compute — fsdp2 gathers bf16 weights and
    reduces gradients in fp32 (MixedPrecisionPolicy); ddp runs the decoder under torch.autocast(bf16)."""

    def validate(self) -> None:
        """Raise ValueError, saying what to change, on an unknown strategy or precision."""
        if self.strategy not in STRATEGIES:
            raise ValueError(f"strategy must be one of {', '.join(STRATEGIES)}; got {self.strategy!r}")
        if self.mixed_precision not in MIXED_PRECISION:
            raise ValueError(
                f"mixed_precision must be one of {', '.join(MIXED_PRECISION)}; got {self.mixed_precision!r}"
            )


def check_combination(distributed: DistributedConfig, *, model_dtype: str) -> None:
    """Raise ValueError, saying what to change, on a distribution setting the rest of the run cannot
    use: bf16 mixed precision for a policy whose parameters are not fp32 (there would be no fp32
    master weights), and ``reshard_after_forward`` set under DDP (it only means something to FSDP2)."""
    if distributed.mixed_precision != "no" and model_dtype != "float32":
        raise ValueError(
            f"distributed.mixed_precision={distributed.mixed_precision} keeps fp32 master weights and "
            f"computes in bf16, but model.dtype={model_dtype}; set model.dtype=float32, or "
            f"distributed.mixed_precision=no to train {model_dtype} parameters directly"
        )
    if distributed.strategy == "ddp" and not distributed.reshard_after_forward:
        raise ValueError(
            "distributed.reshard_after_forward=false applies to distributed.strategy=fsdp2 only; "
            "set distributed.strategy=fsdp2, or drop the reshard_after_forward override"
        )


def ensure_process_group(device: torch.device) -> None:
    """A default process group for FSDP2: the one ``torchrun`` / accelerate started, or a one-process
    group (an in-memory store: no port) when the run has a single process."""
    if dist.is_initialized():
        return
    if int(os.environ.get("WORLD_SIZE", "1") or 1) > 1:
        raise RuntimeError(
            "WORLD_SIZE > 1 but no process group is initialised; launch with torchrun or "
            "accelerate launch (rewardzoo builds its Accelerator before sharding)"
        )
    backend = "nccl" if device.type == "cuda" else "gloo"
    dist.init_process_group(backend, store=dist.HashStore(), rank=0, world_size=1)


def blocks(model: torch.nn.Module) -> list[torch.nn.Module]:
    """The transformer blocks of a transformers model (the classes its ``_no_split_modules`` names), in
    module order; empty for a model that names none (it is then one FSDP unit)."""
    names = set(getattr(model, "_no_split_modules", None) or ())
    return [m for m in model.modules() if type(m).__name__ in names]


def is_sharded(module: torch.nn.Module) -> bool:
    """Whether any parameter of ``module`` is a DTensor (sharded by FSDP2)."""
    from torch.distributed.tensor import DTensor

    return any(isinstance(p, DTensor) for p in module.parameters())


def full_tensors(module: torch.nn.Module, keep=None):
    """(name, full plain tensor) of every entry of ``module``'s state dict (those whose name ``keep``
    accepts, when given), one at a time: a sharded entry is all-gathered when its turn comes (a
    collective: every process iterates in step), so at most one gathered tensor beyond the shards is
    alive — a weight push streams through it, never holding a second full copy of the model."""
    from torch.distributed.tensor import DTensor

    for name, t in module.state_dict().items():
        if keep is None or keep(name):
            yield name, (t.full_tensor() if isinstance(t, DTensor) else t)


def load_full_state(module: torch.nn.Module, state: dict[str, torch.Tensor]) -> tuple[list[str], list[str]]:
    """Load a full (plain-tensor) state dict into ``module``, sharded or not; returns (missing,
    unexpected) keys, as ``load_state_dict(strict=False)``."""
    if not is_sharded(module):
        return module.load_state_dict(state, strict=False)
    from torch.distributed.checkpoint.state_dict import StateDictOptions, set_model_state_dict

    return set_model_state_dict(module, state, options=StateDictOptions(full_state_dict=True, strict=False))


def module_state(model: torch.nn.Module, optimizer: torch.optim.Optimizer | None) -> dict:
    """{"model", "optimizer"} states of a trained module: the plain ``state_dict()`` s, or, when sharded,
    the sharded ones of ``torch.distributed.checkpoint.state_dict`` (keyed by parameter names, the
    optimizer's moments created when it has not stepped yet) — what a sharded checkpoint saves."""
    if not is_sharded(model):
        return {"model": model.state_dict(), "optimizer": None if optimizer is None else optimizer.state_dict()}
    from torch.distributed.checkpoint.state_dict import get_model_state_dict, get_optimizer_state_dict

    return {
        "model": get_model_state_dict(model),
        "optimizer": None if optimizer is None else get_optimizer_state_dict(model, optimizer),
    }


def load_module_state(model: torch.nn.Module, optimizer: torch.optim.Optimizer | None, state: dict) -> bool:
    """Restore what :func:`module_state` returned into a *sharded* module; False (nothing done) when the
    module is not sharded, for the caller's own plain path."""
    if not is_sharded(model):
        return False
    from torch.distributed.checkpoint.state_dict import set_model_state_dict, set_optimizer_state_dict

    set_model_state_dict(model, state["model"])
    if optimizer is not None:
        set_optimizer_state_dict(model, optimizer, state["optimizer"])
    return True


def autocast_decoder(model: torch.nn.Module, device_type: str) -> None:
    """Run the decoder body of a causal LM (peft-wrapped or not) under ``torch.autocast(bf16)`` from now
    on: its ``forward`` is wrapped in place, so training, reference and generation forwards all use it,
    while the output layer — and the fused log-prob head — stay in fp32."""
    from rewardzoo.core.models import causal_lm

    decoder = causal_lm(model).get_decoder()
    forward = decoder.forward

    @functools.wraps(forward)
    def forward_bf16(*args, **kwargs):
        with torch.autocast(device_type=device_type, dtype=torch.bfloat16):
            return forward(*args, **kwargs)

    decoder.forward = forward_bf16


def _reshard_without_autograd(module, args, output) -> None:
    """Forward hook of a trained FSDP root: after a forward without autograd, free the gathered weights of
    the root and of every unit under it (with ``reshard_after_forward=false`` the blocks keep theirs after
    a forward, and a forward without a backward would leave the full tensors registered, which the
    optimizer and the state dicts do not know)."""
    if not torch.is_grad_enabled():
        from torch.distributed.fsdp import FSDPModule

        for unit in module.modules():
            if isinstance(unit, FSDPModule):
                unit.reshard()


class Sharding:
    """FSDP2 over every process of the run (one device mesh), as ``distributed`` describes it.

    :meth:`shard` makes a module's blocks and the module itself FSDP units; :meth:`shard_policy` does
    that for the policy's :class:`~rewardzoo.core.logprobs.PolicyLogProbs` (and the reference copy);
    :meth:`gathered` holds a sharded module's full weights for code that calls its parts directly
    (generation, rewards that read the policy).
    """

    def __init__(self, cfg: DistributedConfig, device: torch.device):
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.fsdp import MixedPrecisionPolicy

        ensure_process_group(device)
        self.cfg = cfg
        self.device = device
        self.world = dist.get_world_size()
        self.mesh = init_device_mesh(device.type, (self.world,))
        self.mp_policy = (
            MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
            if cfg.mixed_precision == "bf16"
            else MixedPrecisionPolicy()
        )
        self._root_reshards: dict[int, bool] = {}  # id(root) → the root's reshard_after_forward

    def shard(
        self, root: torch.nn.Module, model: torch.nn.Module | None = None, *, trains: bool = True
    ) -> torch.nn.Module:
        """Shard ``root`` in place: every block of ``model`` (default ``root``; :func:`blocks`) one FSDP
        unit, then ``root`` the root unit.  A root that ``trains`` keeps its gathered weights from a
        forward to its backward (FSDP2's default for a root) — but not after a forward without autograd
        (scoring, fixed log-probs), which has no backward: its weights are freed then, so the
        registered parameters are the shards again (what the optimizer and the state dicts hold); a
        frozen root (the reference copy, the Polyak judge) frees them after every forward.  Returns ``root``."""
        from torch.distributed.fsdp import fully_shard

        common = dict(mesh=self.mesh, mp_policy=self.mp_policy)
        for block in blocks(model if model is not None else root):
            fully_shard(block, reshard_after_forward=self.cfg.reshard_after_forward, **common)
        fully_shard(root, reshard_after_forward=not trains, **common)
        if trains:
            root.register_forward_hook(_reshard_without_autograd)
        self._root_reshards[id(root)] = not trains
        return root

    def shard_policy(self, module: torch.nn.Module, reference: torch.nn.Module | None = None) -> None:
        """Shard the policy's ``PolicyLogProbs`` module (root) and its blocks, and ``reference`` (the
        reference copy's ``PolicyLogProbs``, when there is one) frozen; then run one no-grad forward
        of the policy root on every process, so FSDP knows its root before any direct call of its
        parts (generation inside :meth:`gathered`)."""
        from rewardzoo.core.logprobs import PackedBatch
        from rewardzoo.core.models import causal_lm

        self.shard(module, causal_lm(module.model))
        if reference is not None:
            self.shard(reference, causal_lm(reference.model), trains=False)
        ids = torch.zeros(1, 2, dtype=torch.long, device=self.device)  # [1, S]
        one = torch.zeros(1, 1, dtype=torch.long, device=self.device)  # [1, T]
        with torch.no_grad():
            module(PackedBatch(ids, torch.ones_like(ids), one, one, one.bool()))

    @contextlib.contextmanager
    def gathered(self, root: torch.nn.Module):
        """Within the block, every FSDP unit of the sharded ``root`` holds its full weights (gathered
        once, in the compute dtype) and forwards run without any collective; on exit they are freed.
        Every process must enter and leave together (the gathering is a collective)."""
        from torch.distributed.fsdp import FSDPModule

        units = [m for m in root.modules() if isinstance(m, FSDPModule)]
        for unit in units:
            unit.set_reshard_after_forward(False, recurse=False)
            unit.unshard()
        try:
            yield root
        finally:
            for unit in units:
                unit.reshard()
                unit.set_reshard_after_forward(
                    self._root_reshards.get(id(unit), self.cfg.reshard_after_forward), recurse=False
                )


def make_sharding(cfg: DistributedConfig, device: torch.device) -> Sharding | None:
    """The run's :class:`Sharding` under ``fsdp2``; None under ``ddp``."""
    return Sharding(cfg, device) if cfg.strategy == "fsdp2" else None


def prepare_policy(
    accelerator,
    module: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    cfg: DistributedConfig,
    sharding: Sharding | None,
    reference: torch.nn.Module | None = None,
):
    """(module, optimizer) ready to train: under ``fsdp2`` the already sharded module and its optimizer as
    they are; under ``ddp`` through ``accelerator.prepare``, after the bf16 autocast of the decoder of the
    policy and of the ``reference`` copy when ``mixed_precision=bf16``."""
    if sharding is not None:
        return module, optimizer
    if cfg.mixed_precision == "bf16":
        for m in (module, reference):
            if m is not None:
                autocast_decoder(m.model, accelerator.device.type)
    return accelerator.prepare(module, optimizer)
