"""Generate the built-in task suite (assets/tasks/{train,eval}/) from parametrized families.

    python assets/generate.py          # rewrite assets/tasks
    python assets/generate.py --check  # exit 1 if assets/tasks differs from what this writes

Each family is one kind of task; its instances differ in file names, contents and numbers,
and train and eval instances never share parameters. Every verifier runs several checks, writes
one CTRF test per check plus reward.txt, and carries the canary string. The families live in
engine/tasks/families/ (engine/tasks/builtin_suite.py draws them).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent
# Runs from a checkout without the package installed.
sys.path.insert(0, str(ROOT.parent))
from engine.tasks.builtin_suite import generate, same_tree  # noqa: E402

TASKS_DIR = ROOT / "tasks"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="compare with assets/tasks instead of writing")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        n = generate(Path(tmp))
        if args.check:
            ok = TASKS_DIR.is_dir() and same_tree(Path(tmp), TASKS_DIR)
            print(f"{n} tasks: {'up to date' if ok else 'assets/tasks differs from the generator'}")
            return 0 if ok else 1
        if TASKS_DIR.exists():
            shutil.rmtree(TASKS_DIR)
        shutil.copytree(tmp, TASKS_DIR)
    print(f"wrote {n} tasks to {TASKS_DIR}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
