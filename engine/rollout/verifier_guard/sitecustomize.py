"""trsi-tui's verifier guard: on PYTHONPATH while a task's tests run, never during the agent's turn.

Python puts the working directory (`python3 -m pytest` run from /app) or the script's directory
(`python3 /app/check.py`) first on sys.path, so a `hashlib.py`, `pytest.py` or `_pytest/` that
the agent left there would be imported instead of the standard library or the test runner, and
could report whatever it likes. This module runs at interpreter start-up, before that entry is
added, and puts a finder in front of the path finder that looks up every top-level module in
the interpreter's own locations first (the standard library, site-packages, and what the
image's PYTHONPATH names). Only a module found in none of those is looked up on the rest of
sys.path, so the task's own modules beside its script or in its working directory still
import, as under Harbor; they can no longer replace one of the interpreter's.

Modules of other platforms (`nt`, `org`, ...), which the standard library imports where they
exist and does without where they do not, are never imported: any file by such a name is the
agent's. Likewise an `import` statement in the interpreter's own code (pytest importing
`pygments` to colour a traceback) never takes a module from outside the interpreter's
locations: what such code does without is optional, never the task's.

The task's tests come first of all: the engine uploads them to /tests, which no agent process
outlives to write, and pytest imports a test file by its bare name (`test_outputs`, `conftest`)
after putting its folder on sys.path. A folder of /tests that is on sys.path is searched before
the interpreter's locations, so that a `test_outputs.py` the agent added to site-packages is
never imported in the test's place.

It also keeps pytest from loading plugins that are declared by metadata outside those
locations (an agent's `evil.dist-info/entry_points.txt` with a `pytest11` entry in /app).

The interpreter's own sitecustomize (if any) runs afterwards, as it would without this one.
Written for every Python 3 a task image may have: no newer syntax.
"""

import importlib.machinery
import importlib.util
import opcode
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
_TESTS = "/tests"  # where the engine uploads a task's tests for the verifier
_IMPORT_NAME = opcode.opmap["IMPORT_NAME"]
# Modules of other platforms that the standard library and pytest try to import and do without
# when they are missing (ntpath tries `nt`, copy and pickle try `org`): from anywhere else on
# sys.path they would be the agent's code, imported by pytest itself. On this platform none of
# them is the interpreter's, so none is imported at all.
_OTHER_PLATFORMS = frozenset(
    ("nt", "_winapi", "msvcrt", "winreg", "_winreg", "_overlapped", "winsound", "_wmi", "org")
    + (() if sys.platform == "darwin" else ("_scproxy",))
)


def _trusted_path():
    """sys.path as it is now, before the working or script directory joins it, less this guard,
    with the interpreter's own locations before what PYTHONPATH names (an image's
    `ENV PYTHONPATH=/app` must not let /app replace the standard library either)."""
    named = set(os.path.abspath(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p)
    own, extra = [], []
    for entry in sys.path:
        if not entry or not os.path.isabs(entry):
            continue  # '' or a relative entry means the working directory
        if os.path.abspath(entry) == _HERE:
            continue
        (extra if os.path.abspath(entry) in named else own).append(entry)
    return own, extra


def _import_statement_of_the_interpreters_own(own):
    """Whether this import is an `import` statement in the interpreter's own code (the standard
    library, site-packages: pytest, its plugins). Such code imports what it depends on, and tries
    what it can do without (`pygments` to colour a traceback, anyio's plugin `trio`): a name
    found in none of the interpreter's locations is then optional, never the task's, and from
    the working directory it would be the agent's code run by pytest. Dynamic imports by name
    (`importlib.import_module`, `__import__`: pytest's plugins, pickle, a framework's settings
    module) are calls, not statements, and keep the whole sys.path."""
    frame = sys._getframe(2)  # noqa: SLF001 - the importer, without importing inspect at start-up
    while frame is not None and frame.f_code.co_filename.startswith("<frozen importlib"):
        frame = frame.f_back
    if frame is None:
        return False
    filename = frame.f_code.co_filename
    if not any(filename.startswith(d.rstrip(os.sep) + os.sep) for d in own):
        return False
    code = frame.f_code.co_code
    return 0 <= frame.f_lasti < len(code) and code[frame.f_lasti] == _IMPORT_NAME


def _tests_first(path):
    """`path` with the folders of /tests that are on sys.path now (pytest adds them) in front."""
    tests = [p for p in sys.path if p == _TESTS or p.startswith(_TESTS + "/")]
    return tests + path if tests else path


class _InterpreterFirst(object):
    """Top-level modules come from the interpreter's own locations when they exist there."""

    def __init__(self, path, own):
        self.path = path
        self.own = own

    def find_spec(self, name, path=None, target=None):
        if path is not None:
            return None  # a submodule: its package's own __path__ decides
        if name in _OTHER_PLATFORMS and sys.platform != "win32":
            raise ModuleNotFoundError("No module named %r" % name, name=name)
        spec = importlib.machinery.PathFinder.find_spec(name, _tests_first(self.path))
        if spec is None and _import_statement_of_the_interpreters_own(self.own):
            raise ModuleNotFoundError("No module named %r" % name, name=name)
        return spec

    def find_distributions(self, context=None):
        return iter(())

    def invalidate_caches(self):
        pass


def _install_finder():
    own, named = _trusted_path()
    meta = sys.meta_path
    index = next((i for i, f in enumerate(meta) if f is importlib.machinery.PathFinder), len(meta))
    meta.insert(index, _InterpreterFirst(own + named, [os.path.abspath(p) for p in own]))
    _path_finder_interpreter_first(own + named)
    # Plugins' metadata only from the interpreter's own locations: a directory PYTHONPATH names
    # may be one the agent writes.
    _restrict_metadata(own)


def _path_finder_interpreter_first(trusted):
    """The same order for whoever asks PathFinder directly. pytest's assertion-rewriting hook
    goes in front of every meta path finder, this guard's included, and looks the modules it
    rewrites up itself (plugins' packages among them: anyio, hypothesis): over the whole sys.path,
    an /app/anyio/ in the working directory came before the installed one."""
    original = importlib.machinery.PathFinder.find_spec

    def find_spec(cls, name, path=None, target=None):
        if path is None and "." not in name:
            spec = original(name, _tests_first(trusted), target)
            if spec is not None:
                return spec
        return original(name, path, target)

    importlib.machinery.PathFinder.find_spec = classmethod(find_spec)


def _restrict_metadata(trusted):
    """Distribution metadata (entry points: pytest's plugins) only from the trusted locations."""
    original = getattr(importlib.machinery.PathFinder, "find_distributions", None)
    if original is None:
        return

    def find_distributions(*args, **kwargs):
        context = kwargs.get("context") or (args[0] if args else None)
        if context is not None and getattr(context, "path", None) is sys.path:
            try:
                context = type(context)(name=getattr(context, "name", None), path=list(trusted))
            except Exception:  # noqa: BLE001 - an old importlib.metadata: leave discovery as it is
                return original(*args, **kwargs)
            return original(context)
        return original(*args, **kwargs)

    importlib.machinery.PathFinder.find_distributions = staticmethod(find_distributions)


def _chain_to_the_interpreters_sitecustomize():
    # Only from the interpreter's own locations: a directory PYTHONPATH names may be the agent's.
    path = _trusted_path()[0]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)


_install_finder()
_chain_to_the_interpreters_sitecustomize()
