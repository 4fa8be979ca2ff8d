"""The curriculum's one-step families whose answer is a number: count lines, matching lines or
files, add two numbers, and write the number to a file. All are trained on.

A verifier sees only the number written, not how it was found, so a fixed guess passes every
instance whose answer it happens to be. The answer is drawn from a range wide enough that no
guess passes more than a few percent of instances (tests/test_curriculum.py checks it): before
curriculum v6, grep-count's answer came from each line's word drawn at random and was 4 in 22% of
instances, count-files' was 2-7 (3 in 18%), and the trained model's `echo "5" > out` was 3 of
the 4 successes a trained model found on these families in a probe (docs/results.md).
"""

from __future__ import annotations

from engine.tasks.families.checks import holds, listing, number_written
from engine.tasks.families.phrasing import phrase
from engine.tasks.families.pools import EXTENSIONS, Pool, heredoc, task_spec
from engine.tasks.families.registry import Families
from engine.tasks.spec import TaskSpec

FAMILIES = Families(Pool)


@FAMILIES.family
def count_lines(p: Pool) -> TaskSpec:
    src, out = f"/app/{p.word()}.{p.ext()}", f"/app/{p.word()}_count.txt"
    n = p.rng.randint(3, 60)
    instruction = phrase(p, f"count the lines of {src} and write the number to {out}", tool="wc -l")
    lines = p.lines(n)  # drawn after the wording, as always
    return task_spec(
        p.name,
        instruction,
        heredoc(src, lines),
        f"wc -l < {src} > {out}\n",
        [*number_written(out, "count", n), ("input_kept", holds(src, lines))],
        "wc",
    )


@FAMILIES.family
def grep_count(p: Pool) -> TaskSpec:
    target, *others = p.words(4)
    src, out = f"/app/{p.word()}.{p.ext()}", f"/app/{target}_matches.txt"
    n = p.rng.randint(3, 40)
    lines = [f"{target} {p.number()}" for _ in range(n)]
    lines += [f"{p.rng.choice(others)} {p.number()}" for _ in range(p.rng.randint(5, 15))]
    p.rng.shuffle(lines)
    return task_spec(
        p.name,
        phrase(
            p, f"count the lines of {src} that contain the word {target} and write the number to {out}", tool="grep -c"
        ),
        heredoc(src, lines),
        f"grep -c {target} {src} > {out}\n",
        [*number_written(out, "count", n), ("input_kept", holds(src, lines))],
        "grep",
    )


@FAMILIES.family
def count_files(p: Pool) -> TaskSpec:
    folder, out = f"/app/{p.word()}", f"/app/{p.word()}_files.txt"
    ext, other = p.rng.sample(EXTENSIONS[p.split], 2)
    n, m = p.rng.randint(3, 40), p.rng.randint(1, 8)
    files = [*(f"f{i}.{ext}" for i in range(n)), *(f"g{i}.{other}" for i in range(m))]
    setup = f"mkdir -p {folder}\ntouch " + " ".join(f"{folder}/{f}" for f in files) + "\n"
    return task_spec(
        p.name,
        phrase(
            p,
            f"count the .{ext} files in {folder} and write the number to {out}",
            f"How many .{ext} files are in {folder}? Count the files and write the number to {out}.",
            tool="ls",
        ),
        setup,
        f"ls {folder}/*.{ext} | wc -l > {out}\n",
        [*number_written(out, "count", n), ("folder_kept", listing(folder, files))],
        "find",
    )


@FAMILIES.family
def arithmetic(p: Pool) -> TaskSpec:
    a, b, out = p.number(), p.number(), f"/app/{p.word()}_sum.txt"
    return task_spec(
        p.name,
        phrase(
            p, f"write the sum of {a} and {b} to {out}", f"add {a} and {b} and write their sum to {out}", tool="$(( ))"
        ),
        "",
        f"echo $(({a} + {b})) > {out}\n",
        number_written(out, "sum", a + b),
        "arithmetic",
    )
