"""Adapters between rewardzoo and other training libraries (TRL)."""
