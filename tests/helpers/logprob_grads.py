"""The log-probs, entropies and parameter gradients of one batch, for tests that compare two ways of
computing them (the lean forward) against the packed rows through the modules."""

import torch

from rewardzoo.core.logprobs import sequence_logprobs


def logprobs_and_grads(model, batch, **kwargs):
    """Log-probs, entropies and the gradient of a GRPO-like loss (the log-probs weighted from −1 to 1,
    divided by the token count) with respect to every trained parameter (a LoRA model's adapters); ``kwargs`` go to ``sequence_logprobs``."""
    model.zero_grad()
    logp, ent = sequence_logprobs(model, batch, temperature=0.9, **kwargs)
    weights = torch.linspace(-1, 1, logp.numel()).view_as(logp)
    ((logp * weights).sum() / batch.mask.sum().clamp(min=1)).backward()
    return logp.detach(), ent.detach(), {k: p.grad.clone() for k, p in model.named_parameters() if p.requires_grad}
