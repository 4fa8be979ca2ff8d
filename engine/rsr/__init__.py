"""RSR, Recursive Self-Rewrite: the actor learns from its own verified successes.

explore -> runbook (planner) -> review (leak scan + reviewer) -> approval -> replay -> dataset -> SFT.
"""
