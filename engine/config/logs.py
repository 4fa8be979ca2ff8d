"""Logging to the data dir's logs/, and libraries kept off the user's console.

Headless commands print the project's own progress only. Everything else that talks goes to
`logs/trsi-tui.log`: the engine's and the sandboxes' own records (swallowed exceptions with
their tracebacks), Python warnings, and the chatter of transformers, peft, bitsandbytes and
huggingface_hub (weight-loading progress bars, kernel notices, deprecation warnings).
"""

from __future__ import annotations

import logging
import logging.handlers
import os
import sys
from pathlib import Path

from engine.text import escaped

LOG_FILE = "trsi-tui.log"
_FORMAT = "%(asctime)s %(levelname)s %(threadName)s %(name)s: %(message)s"
_configured: Path | None = None
# Libraries whose loggers print to the console on their own; their records go to the file instead.
LIBRARIES = (
    "transformers",
    "peft",
    "bitsandbytes",
    "huggingface_hub",
    "accelerate",
    "torch",
    "urllib3",
    "docker",
    "llama_cpp",
    "ray",
)


class _LogFile(logging.handlers.RotatingFileHandler):
    """The project's log file (a type of its own, so a second setup replaces it)."""


class SafeFormatter(logging.Formatter):
    """Records carry task names, commands and agent output: every control character in the
    formatted record (message and traceback) is written as a visible `\\xNN`, so that reading
    the log in a terminal (`tail -f`, `less -R`) never runs an escape sequence a task or an agent
    wrote."""

    def format(self, record: logging.LogRecord) -> str:
        return escaped(super().format(record))


def setup_logging(logs_dir: Path, level: int = logging.INFO) -> Path:
    """Send logging to logs_dir/trsi-tui.log (rotated at 10 MB); idempotent per directory."""
    global _configured
    path = Path(logs_dir) / LOG_FILE
    if _configured == path:
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    handler = _LogFile(path, maxBytes=10 * 1024 * 1024, backupCount=3, encoding="utf-8")
    handler.setFormatter(SafeFormatter(_FORMAT))
    root = logging.getLogger()
    for old in [h for h in root.handlers if isinstance(h, _LogFile)]:  # another home opened before
        root.removeHandler(old)
        old.close()
    root.addHandler(handler)
    if root.level == logging.NOTSET or root.level > level:
        root.setLevel(level)  # the root logger starts at WARNING: INFO records would not reach the file
    logging.captureWarnings(True)  # FutureWarnings and the like: into the file, not onto the console
    quiet_libraries()
    _configured = path
    return path


def quiet_libraries() -> None:
    """Keep library progress bars and notices off the console; their records reach the log file."""
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")
    os.environ.setdefault("TQDM_DISABLE", "1")
    for name in LIBRARIES:
        logger = logging.getLogger(name)
        for handler in list(logger.handlers):
            logger.removeHandler(handler)
        logger.propagate = True
    transformers = sys.modules.get("transformers")  # configured once it is loaded (importing it costs seconds)
    if transformers is None:
        return
    transformers.utils.logging.disable_default_handler()
    transformers.utils.logging.enable_propagation()
    transformers.utils.logging.disable_progress_bar()
