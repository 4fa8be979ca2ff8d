"""Rollouts: one episode (sandbox, setup, agent, verifier, reward) and running many of them.

agents.py (oracle, nop), model_agent.py + harnesses/ + token_buffer.py (a model acting),
episode.py, runner.py (concurrency, storing, events), verifier.py + verifier_results.py +
verifier_guard/ (test.sh in the private view, its reports), reward.py, validation.py (tasks check).
"""
