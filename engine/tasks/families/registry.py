"""The one way to declare a task family and draw instances of it.

A family is a function from a `Draw` to a `TaskSpec`, registered with `@FAMILIES.family` on a
`Families` set and named after the function (`echo_line` is `echo-line`). A suite decides what
each instance is drawn with (its seed, name, split and index) and the family decides everything
else, so the same draw always gives the same task.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from engine.tasks.spec import TaskSpec


@dataclass(frozen=True)
class Draw:
    """What one instance is made from: its own random generator, and the name, split and index
    its suite gives it."""

    rng: random.Random
    name: str
    split: str
    index: int


Build = Callable[[Draw], TaskSpec]  # a family: one instance from one draw


class Families(Mapping[str, Build]):
    """Task families by name, in the order they were declared (a suite may seed by that order).

    `draw` is the `Draw` subclass every family of the set is given: the curriculum's carries its
    split's pools of names, words and numbers."""

    def __init__(self, draw: type[Draw] = Draw) -> None:
        self.draw = draw
        self._by_name: dict[str, Build] = {}

    def family(self, build: Build) -> Build:
        """Decorator: declare `build` a family of this set; `build` itself is left as it is."""
        name = build.__name__.replace("_", "-")
        if name in self._by_name:
            raise ValueError(f"two task families are named {name!r}")
        self._by_name[name] = build
        return build

    @classmethod
    def joined(cls, *sets: Families) -> Families:
        """One set of the families of `sets`, in their order; their draws must be the same kind."""
        joined = cls(sets[0].draw)
        for s in sets:
            if s.draw is not joined.draw:
                raise ValueError("families drawn with different kinds of draw cannot be joined")
            for build in s.values():
                joined.family(build)
        return joined

    def instance(self, family: str, seed: int | str, *, name: str, split: str, index: int) -> TaskSpec:
        """The instance of `family` drawn from `random.Random(seed)`."""
        return self._by_name[family](self.draw(random.Random(seed), name, split, index))

    def __getitem__(self, name: str) -> Build:
        return self._by_name[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_name)

    def __len__(self) -> int:
        return len(self._by_name)
