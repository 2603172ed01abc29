"""Rewards behind the one interface: RLVR (verifiers, sandbox), RAL, and plain callables."""
