"""The shared GRPO core: rollout types, advantages, losses, fused log-probs, engines, models, the trainer."""
