"""A model with peft LoRA adapters whose forward differs from its base's, for tests of the lean forwards."""

import torch

from rewardzoo.core.models import LoraSettings, add_lora


def lora(model: torch.nn.Module, dropout: float = 0.0) -> torch.nn.Module:
    """``model`` with peft LoRA adapters (r 4) on every linear layer, B drawn at random (peft starts it at 0,
    which would hide the adapters' share of the forward)."""
    model = add_lora(model, LoraSettings(enabled=True, r=4, dropout=dropout))
    torch.manual_seed(5)
    for name, p in model.named_parameters():
        if "lora_B" in name:
            torch.nn.init.normal_(p, std=0.1)
    return model
