"""Learned judges: the sequence-classifier judge, its replay buffer, update gate and Polyak averaging."""
