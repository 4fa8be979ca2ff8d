"""Where a train instance's files live: families are written in /app, and most train instances
are moved to another folder, at another depth.

A model trained only on `/app/<name>.<ext>` learns the path as much as the command, and tasks
written elsewhere keep their files in `/srv/...`, `/home/user/...`, `/opt/...`. So each train
instance gets a folder of its own, drawn from its name with a generator of its own (its files,
words and numbers are drawn exactly as before), and every `/app` of its instruction, setup,
solution and checks names that folder instead. Eval instances stay in /app: every stage table
since curriculum v2 was measured on them (tests/test_curriculum.py holds them to it).
"""

from __future__ import annotations

import dataclasses
import random
import re

from engine.tasks.families.pools import WORD_POOLS
from engine.tasks.spec import TaskSpec

# {w} and {v}: two words of the train pool. /app stays the most common single folder.
TRAIN_FOLDERS = (
    "/app",
    "/app",
    "/app/{w}",
    "/srv/{w}",
    "/home/user/{w}",
    "/opt/{w}/{v}",
    "/data/{w}",
    "/var/lib/{w}",
    "/mnt/{w}/{v}",
)
# /app as a path of its own: not /apple, /app-x or /app_x.
_APP = re.compile(r"/app(?![\w-])")


def train_folder(name: str) -> str:
    """The folder of the train instance called `name`."""
    rng = random.Random(f"{name}/folder")
    w, v = rng.sample(WORD_POOLS["train"], 2)
    return rng.choice(TRAIN_FOLDERS).format(w=w, v=v)


def moved(spec: TaskSpec, folder: str) -> TaskSpec:
    """`spec` with every /app of its text naming `folder` instead."""

    def move(text: str) -> str:
        return _APP.sub(lambda _: folder, text)

    return dataclasses.replace(
        spec,
        instruction=move(spec.instruction),
        setup=move(spec.setup),
        solve=move(spec.solve),
        checks=[(name, move(command)) for name, command in spec.checks],
        extra_test_files={path: move(text) for path, text in spec.extra_test_files.items()},
    )
