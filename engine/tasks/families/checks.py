"""Check commands the curriculum's families build their checks from.

A success is trained on, so what a check does not compare, an agent can break and still pass: a
count of lines or one line passes a file rewritten in place, `test -f` passes a link, and `!
grep` passes a file that is not there. Before curriculum v5 such commands passed every check of
their family (docs/tasks.md, "What the checks compare").
"""

from __future__ import annotations

from engine.tasks.spec import q


def holds(path: str, lines: list[str]) -> str:
    """`path` is a regular file of its own (not a link) whose text is exactly `lines`; a missing
    last newline is forgiven, as `$(cat)` drops it."""
    return f'test -f {path} && test ! -L {path} && test "$(cat {path})" = {q(chr(10).join(lines))}'


def own_copy(copy: str, original: str) -> str:
    """`copy` is a file of its own: neither is a link, and it is not `original` under a second
    name (a hard link), which a later change to either would change in both."""
    return f"test -f {copy} && test ! -L {copy} && test ! -L {original} && ! test {copy} -ef {original}"


def no_write_added(paths: list[str]) -> str:
    """None of `paths` (all set up without it) became writable by its group or by others: `chmod
    777` makes a script executable too."""
    return " && ".join(f'test -e {path} && test -z "$(find {path} -perm /022)"' for path in paths)


def line_count(path: str) -> str:
    """The number of lines of `path`, a last line without its newline counted too (`wc -l` does not)."""
    return f"$(grep -c '' {path})"


def listing(folder: str, names: list[str]) -> str:
    """`folder` is a directory (not a link) holding exactly the entries `names`."""
    expected = q("\n".join(sorted(names)))  # sorted as LC_ALL=C sorts: the names are ASCII
    return f'test -d {folder} && test ! -L {folder} && test "$(ls -A {folder} | LC_ALL=C sort)" = {expected}'


def number_written(out: str, label: str, value: int) -> list[tuple[str, str]]:
    """The checks of an answer that is a number written to `out`: the file, a number in it, and
    exactly `value` (whitespace aside), the last named `{label}_is_{value}`."""
    return [
        ("output_exists", f"test -f {out}"),
        ("has_a_number", f"grep -qE '[0-9]+' {out}"),
        (f"{label}_is_{value}", f'test "$(tr -d "[:space:]" < {out})" = {value}'),
    ]
