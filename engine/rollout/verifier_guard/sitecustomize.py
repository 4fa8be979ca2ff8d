"""trsi-tui's verifier guard: on PYTHONPATH while a task's tests run, never during the agent's turn.

`python3 -m pytest` puts the working directory first on sys.path and then imports pytest, so a
`pytest.py` (or `_pytest/`, `pluggy/`, `iniconfig.py`, ...) that the agent left in /app would run
instead of the real test runner and report whatever it likes. This module runs at interpreter
start-up, before that entry is added: for `-m pytest` it imports the real runner and the plugins
and libraries pytest loads at start-up, from the image's own sys.path. Nothing else changes:
the working directory and a script's directory stay on sys.path, so a task's tests and the
programs they start import the task's modules exactly as they do under Harbor.

The interpreter's own sitecustomize (if any) runs afterwards, as it would without this one.
"""

import importlib.machinery
import importlib.util
import os
import sys

_ARG_OPTIONS = ("-W", "-X", "--check-hash-based-pycs")


def _module_to_run() -> str:
    """The module of `python -m MODULE`, or '' for a script, `-c` or the REPL."""
    argv = list(getattr(sys, "orig_argv", ()))
    i = 1
    while i < len(argv):
        arg = argv[i]
        if arg in _ARG_OPTIONS:
            i += 2
            continue
        if not arg.startswith("-") or arg == "-" or arg.startswith("-c") or arg == "--":
            return ""
        if not arg.startswith("--") and "m" in arg[1:]:
            rest = arg[arg.index("m", 1) + 1 :]
            return rest or (argv[i + 1] if i + 1 < len(argv) else "")
        i += 1
    return ""


def _load_real_pytest() -> None:
    try:
        import pytest  # noqa: F401 - imported now, while sys.path holds no working directory
        from _pytest import config

        for name in sorted(getattr(config, "builtin_plugins", ()) or getattr(config, "default_plugins", ())):
            try:
                __import__(f"_pytest.{name}")
            except ImportError:
                pass  # plugins pytest itself would fail to load are reported by pytest
        import iniconfig  # noqa: F401
        import pluggy  # noqa: F401
    except ImportError:
        pass  # no pytest here: the task's own test run reports that


def _chain_to_the_interpreters_sitecustomize() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    path = [p for p in sys.path if os.path.abspath(p or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)


if _module_to_run() in ("pytest", "py.test"):
    _load_real_pytest()
_chain_to_the_interpreters_sitecustomize()
