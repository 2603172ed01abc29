"""Checkers shared by tasks and RLVR: answer formats, verifiers, the code sandbox, safe arithmetic.

This sub-package sits below the rest of :mod:`rewardzoo.tasks` (it imports nothing from it), so a
task and the RLVR reward can both use a checker without importing each other.
"""
