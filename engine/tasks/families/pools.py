"""What every curriculum family draws from and how it lays a task out.

Train and eval instances never share parameters: their file and directory names, words,
extensions and numbers come from disjoint pools, so no instruction text of one split appears in
the other (tests/test_curriculum.py checks both). The families are in `one_command.py` (one
step), `multi_step.py` (read, then act) and `heldout.py` (evaluated, never trained on).
"""

from __future__ import annotations

from engine.tasks.families.registry import Draw
from engine.tasks.spec import WORDS, TaskSpec

# More names for train instances than a small model can memorize. With the first 16 alone, every
# SFT sample named files from the same 16 words, so a trained model could answer with a name it
# had seen in training rather than the one its task gives; from 141 it has to copy the task's.
# No word is part of another (a grep for one never matches a second), none is a program's name.
TRAIN_EXTRA_WORDS = (
    "acorn",
    "badger",
    "canyon",
    "dahlia",
    "egret",
    "falcon",
    "gecko",
    "hazel",
    "jasper",
    "kestrel",
    "lagoon",
    "marten",
    "nutmeg",
    "orchid",
    "pebble",
    "quill",
    "ripple",
    "saffron",
    "thistle",
    "urchin",
    "valley",
    "walnut",
    "yucca",
    "zinnia",
    "aspen",
    "bramble",
    "clover",
    "dingo",
    "fern",
    "heron",
    "jackal",
    "koala",
    "lichen",
    "mango",
    "otter",
    "puffin",
    "quince",
    "sorrel",
    "tulip",
    "wren",
    "zebra",
    "anchor",
    "beacon",
    "candle",
    "drum",
    "easel",
    "flute",
    "goblet",
    "igloo",
    "jigsaw",
    "kettle",
    "ladder",
    "mitten",
    "needle",
    "paddle",
    "rudder",
    "saddle",
    "teapot",
    "umbrella",
    "velvet",
    "wagon",
    "zipper",
    "apricot",
    "bagel",
    "cashew",
    "endive",
    "guava",
    "icicle",
    "kiwi",
    "lemon",
    "nougat",
    "olive",
    "papaya",
    "radish",
    "tomato",
    "vanilla",
    "wasabi",
    "bison",
    "cobra",
    "eagle",
    "finch",
    "goose",
    "impala",
    "lark",
    "moose",
    "panda",
    "quail",
    "robin",
    "stork",
    "toucan",
    "walrus",
    "beetle",
    "cricket",
    "coral",
    "pumpkin",
    "meadow",
    "prairie",
    "harp",
    "lantern",
    "compass",
    "marble",
    "pillar",
    "turret",
    "castle",
    "violin",
    "banjo",
    "cello",
    "piano",
    "trumpet",
    "tuba",
    "oboe",
    "spruce",
    "poplar",
    "cypress",
    "magnolia",
    "lilac",
    "lotus",
    "peony",
    "poppy",
    "daisy",
    "mimosa",
    "tamarind",
    "almond",
    "hickory",
    "chestnut",
)
# Disjoint pools per split: a train instance and an eval instance never share a name or a word.
WORD_POOLS = {
    "train": WORDS[:16] + TRAIN_EXTRA_WORDS,
    "eval": WORDS[16:] + ("alder", "basil", "cedar", "dune", "fennel", "glacier"),
}
NUMBER_RANGES = {"train": (2, 49), "eval": (51, 98)}  # both ends included
EXTENSIONS = {"train": ("txt", "log", "csv"), "eval": ("dat", "out", "lst")}
SPLITS = ("train", "eval")


class Pool(Draw):
    """A draw that knows what its split may draw from."""

    def word(self) -> str:
        return self.rng.choice(WORD_POOLS[self.split])

    def words(self, k: int) -> list[str]:
        return self.rng.sample(WORD_POOLS[self.split], k)

    def number(self) -> int:
        low, high = NUMBER_RANGES[self.split]
        return self.rng.randint(low, high)

    def numbers(self, k: int) -> list[int]:
        """`k` different numbers of the split's range."""
        low, high = NUMBER_RANGES[self.split]
        return self.rng.sample(range(low, high + 1), k)

    def ext(self) -> str:
        return self.rng.choice(EXTENSIONS[self.split])

    def lines(self, n: int) -> list[str]:
        return [f"{self.word()} {self.number()}" for _ in range(n)]


def heredoc(path: str, lines: list[str]) -> str:
    """Setup lines that write `lines` to `path`, verbatim."""
    return f"cat > {path} <<'DATA'\n" + "".join(line + "\n" for line in lines) + "DATA\n"


def task_spec(
    name: str,
    instruction: str,
    setup: str,
    solve: str,
    checks: list[tuple[str, str]],
    tag: str,
    *,
    difficulty: str = "basic",
    agent_timeout: int = 90,
) -> TaskSpec:
    return TaskSpec(
        name=name,
        instruction=instruction,
        setup="mkdir -p /app\n" + setup,
        solve=solve,
        checks=checks,
        difficulty=difficulty,
        category="curriculum",
        tags=[tag],
        agent_timeout=agent_timeout,
    )
