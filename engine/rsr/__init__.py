"""RSR, Recursive Self-Rewrite: the actor learns from its own verified successes.

explore -> runbook (planner) -> review (leak scan + reviewer) -> approval -> replay -> dataset -> SFT.

round.py sequences the phases; each is a module (explore, distill, replay, samples, train) that
works with a RoundWork (work.py) and reaches the store through records.py.
"""
