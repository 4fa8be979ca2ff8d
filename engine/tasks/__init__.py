"""Tasks: the task model and loader (`task.py`), classic Terminal-Bench import (`importer.py`),
and the canary string that marks task files (`canary.py`)."""

from engine.tasks.task import SPLITS, EnvironmentSettings, Suite, Task, TaskLoadError, load_suite, load_task

__all__ = ["SPLITS", "EnvironmentSettings", "Suite", "Task", "TaskLoadError", "load_suite", "load_task"]
