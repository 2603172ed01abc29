"""Tasks: examples, parsers, verifiers and held-out evaluation; each also a Gymnasium environment."""
