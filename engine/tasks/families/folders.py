"""The same curriculum task in a folder other than /app, to measure how much of what a model
learned is the curriculum's paths (`trsi-tui tasks generate --elsewhere`).

Families are written in /app, and every task the demo trains and evaluates on keeps its files
there; tasks written elsewhere keep theirs in `/srv/...`, `/home/user/...` or `/opt/...`. An
instance moved here gets a folder drawn from its name (with a generator of its own, so its
files, words and numbers are what they were) and its split's word pool, and every `/app` of its
instruction, setup, solution and checks names that folder instead.

Training on moved instances was tried (curriculum "v7", docs/results.md) and reverted: the
bundled model does not copy a path like /mnt/kettle/banjo/beacon.csv, so the first round's
exploration found 5 successes where /app's found 29.
"""

from __future__ import annotations

import dataclasses
import random
import re

from engine.tasks.families.pools import WORD_POOLS
from engine.tasks.spec import TaskSpec

# {w} and {v}: two words of the instance's split pool.
FOLDERS = ("/app/{w}", "/srv/{w}", "/home/user/{w}", "/opt/{w}/{v}", "/data/{w}", "/var/lib/{w}", "/mnt/{w}/{v}")
# /app as a path of its own: not /apple, /app-x or /app_x.
_APP = re.compile(r"/app(?![\w-])")


def folder_for(name: str, split: str) -> str:
    """The folder the instance called `name`, of `split`, is moved to."""
    rng = random.Random(f"{name}/folder")
    w, v = rng.sample(WORD_POOLS[split], 2)
    return rng.choice(FOLDERS).format(w=w, v=v)


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
