"""Tasks: the task model and loader (`task.py`), classic Terminal-Bench import (`importer.py`),
the canary string that marks task files (`canary.py`), and the generated suites: task families
(`families/`), the curriculum (`curriculum.py`) and the built-in suite (`builtin_suite.py`)."""

from engine.tasks.task import SPLITS, EnvironmentSettings, Suite, Task, TaskLoadError, load_suite, load_task

__all__ = ["SPLITS", "EnvironmentSettings", "Suite", "Task", "TaskLoadError", "load_suite", "load_task"]
