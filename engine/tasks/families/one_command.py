"""The curriculum's one-step families, one command (or short pipeline) each at the bundled model's
frontier: create, append, copy, move, head/tail, grep, sort, cut, sed, chmod, tar; all trained on
(`heldout.py` has those that are not; `counting.py` those whose answer is a number). Names, words
and numbers come from the split's pools (`pools.py`), wording from `phrasing.py`, checks from
`checks.py`: 3 to 5 a family, so a partial answer earns partial credit, never success
(`curriculum.py` writes them)."""

from __future__ import annotations

from engine.tasks.families.checks import holds, line_count, no_write_added, own_copy
from engine.tasks.families.phrasing import phrase
from engine.tasks.families.pools import Pool, heredoc, task_spec
from engine.tasks.families.registry import Families
from engine.tasks.spec import TaskSpec, q

# Declaration order is the order `trsi-tui tasks generate --family all` writes them in.
FAMILIES = Families(Pool)


@FAMILIES.family
def echo_line(p: Pool) -> TaskSpec:
    path, text = f"/app/{p.word()}.{p.ext()}", f"{p.word()} {p.word()} {p.number()}"
    return task_spec(
        p.name,
        phrase(
            p,
            f"write the line `{text}` to the file {path}",
            f"put the line `{text}` in the new file {path}",
            tool="echo",
        ),
        "",
        f"echo {q(text)} > {path}\n",
        [
            ("file_exists", f"test -f {path}"),
            ("text_present", f"grep -qF {q(text)} {path}"),
            ("exact_content", f'test "$(cat {path})" = {q(text)}'),
        ],
        "echo",
    )


@FAMILIES.family
def append_line(p: Pool) -> TaskSpec:
    path, old, text = f"/app/{p.word()}.{p.ext()}", p.lines(p.rng.randint(3, 6)), f"{p.word()} {p.number()}"
    n = len(old)
    return task_spec(
        p.name,
        phrase(
            p,
            f"append the line `{text}` to the end of {path}",
            f"add the line `{text}` to the end of {path}",
            tool=">>",
        ),
        heredoc(path, old),
        f"echo {q(text)} >> {path}\n",
        [
            ("file_exists", f"test -f {path}"),
            ("last_line", f'test "$(tail -n 1 {path})" = {q(text)}'),
            ("one_more_line", f'test "{line_count(path)}" -eq {n + 1}'),
            ("old_lines_kept", f'test "$(head -n {n} {path})" = {q(chr(10).join(old))}'),
        ],
        "append",
    )


@FAMILIES.family
def copy_file(p: Pool) -> TaskSpec:
    a, b = p.words(2)
    src, dst = f"/app/{a}.{p.ext()}", f"/app/{b}.{p.ext()}"
    lines = p.lines(4)
    return task_spec(
        p.name,
        phrase(p, f"copy {src} to {dst}", tool="cp"),
        heredoc(src, lines),
        f"cp {src} {dst}\n",
        [
            ("copy_exists", f"test -f {dst}"),
            ("copy_identical", f"cmp -s {src} {dst}"),
            ("a_copy_of_its_own", own_copy(dst, src)),
            ("original_kept", holds(src, lines)),
        ],
        "cp",
    )


@FAMILIES.family
def move_file(p: Pool) -> TaskSpec:
    a, b = p.words(2)
    src, dst = f"/app/{a}.{p.ext()}", f"/app/{b}.{p.ext()}"
    lines = p.lines(3)
    return task_spec(
        p.name,
        phrase(p, f"rename {src} to {dst}", f"move {src} to {dst} to rename it", tool="mv"),
        heredoc(src, lines),
        f"mv {src} {dst}\n",
        [
            ("new_name_exists", f"test -f {dst}"),
            ("old_name_gone", f"test ! -e {src}"),
            ("content_kept", holds(dst, lines)),
        ],
        "mv",
    )


def _first_or_last(p: Pool, end: str) -> TaskSpec:
    """head-lines and tail-lines: the first or the last k lines of a file."""
    tool = "head" if end == "first" else "tail"
    src, out = f"/app/{p.word()}.{p.ext()}", f"/app/{p.word()}_{tool}.txt"
    lines = p.lines(p.rng.randint(8, 14))
    k = p.rng.randint(2, 5)
    kept = lines[:k] if end == "first" else lines[-k:]
    return task_spec(
        p.name,
        phrase(
            p, f"write the {end} {k} lines of {src} to {out}", f"save the {end} {k} lines of {src} in {out}", tool=tool
        ),
        heredoc(src, lines),
        f"{tool} -n {k} {src} > {out}\n",
        [
            ("output_exists", f"test -f {out}"),
            (f"has_{k}_lines", f'test "{line_count(out)}" -eq {k}'),
            ("first_line", f'test "$(head -n 1 {out})" = {q(kept[0])}'),
            (f"the_{end}_{k}_lines", holds(out, kept)),
            ("input_kept", holds(src, lines)),
        ],
        tool,
    )


@FAMILIES.family
def head_lines(p: Pool) -> TaskSpec:
    return _first_or_last(p, "first")


@FAMILIES.family
def tail_lines(p: Pool) -> TaskSpec:
    return _first_or_last(p, "last")


@FAMILIES.family
def grep_lines(p: Pool) -> TaskSpec:
    target, *others = p.words(3)
    src, out = f"/app/{p.word()}.{p.ext()}", f"/app/{target}_lines.txt"
    lines = [f"{p.rng.choice([target, *others])} {p.number()}" for _ in range(12)]
    if not any(line.startswith(target) for line in lines):
        lines[0] = f"{target} {p.number()}"
    hits = [line for line in lines if line.split()[0] == target]
    return task_spec(
        p.name,
        phrase(p, f"write the lines of {src} that contain the word {target} to {out}", tool="grep"),
        heredoc(src, lines),
        f"grep {target} {src} > {out}\n",
        [
            ("output_exists", f"test -f {out}"),
            (f"has_{len(hits)}_lines", f'test "{line_count(out)}" -eq {len(hits)}'),
            ("only_matching_lines", f"test -f {out} && ! grep -v {target} {out}"),
            ("the_matching_lines", holds(out, hits)),
            ("input_kept", holds(src, lines)),
        ],
        "grep",
    )


@FAMILIES.family
def sort_file(p: Pool) -> TaskSpec:
    src, out = f"/app/{p.word()}.{p.ext()}", f"/app/{p.word()}_sorted.txt"
    words = p.words(p.rng.randint(5, 8))
    return task_spec(
        p.name,
        phrase(
            p,
            f"sort the lines of {src} alphabetically and write them to {out}",
            f"write the lines of {src} to {out}, sorted alphabetically",
            tool="sort",
        ),
        heredoc(src, words),
        f"sort {src} > {out}\n",
        [
            ("output_exists", f"test -f {out}"),
            ("is_sorted", f"sort -c {out}"),
            ("same_lines", f'test "$(sort {src})" = "$(cat {out})"'),
            ("first_line", f'test "$(head -n 1 {out})" = {q(sorted(words)[0])}'),
            ("input_kept", holds(src, words)),
        ],
        "sort",
    )


@FAMILIES.family
def cut_column(p: Pool) -> TaskSpec:
    src, out = f"/app/{p.word()}.csv", f"/app/{p.word()}_column.txt"
    rows = [f"{p.word()},{p.number()},{p.word()}" for _ in range(p.rng.randint(4, 8))]
    col = p.rng.choice([1, 2, 3])
    values = [r.split(",")[col - 1] for r in rows]
    return task_spec(
        p.name,
        phrase(
            p,
            f"write field {col} of every line to {out}",
            f"save field {col} of each line in {out}",
            context=f"{src} has comma-separated fields.",
            tool="cut",
        ),
        heredoc(src, rows),
        f"cut -d, -f{col} {src} > {out}\n",
        [
            ("output_exists", f"test -f {out}"),
            ("first_value", f'test "$(head -n 1 {out})" = {q(values[0])}'),
            ("no_commas", f"test -f {out} && ! grep -q , {out}"),
            (f"field_{col}_of_every_line", holds(out, values)),
            ("input_kept", holds(src, rows)),
        ],
        "cut",
    )


@FAMILIES.family
def sed_replace(p: Pool) -> TaskSpec:
    old, new, other = p.words(3)
    path = f"/app/{p.word()}.{p.ext()}"
    lines = [f"{p.rng.choice([old, other])} {p.number()}" for _ in range(8)]
    lines[0] = f"{old} {p.number()}"
    n_old = sum(line.split()[0] == old for line in lines)
    return task_spec(
        p.name,
        phrase(p, f"replace every {old} with {new} in {path}", tool="sed"),
        heredoc(path, lines),
        f"sed -i 's/{old}/{new}/g' {path}\n",
        [
            ("file_exists", f"test -f {path}"),
            (f"no_{old}_left", f"test -f {path} && ! grep -q {old} {path}"),
            (f"{n_old}_{new}", f'test "$(grep -c {new} {path})" -eq {n_old}'),
            ("line_count_kept", f'test "{line_count(path)}" -eq {len(lines)}'),
            # The rest of every line too: `s/^{old} .*/{new}/` passed the three above.
            ("only_the_word_replaced", holds(path, [line.replace(old, new) for line in lines])),
        ],
        "sed",
    )


@FAMILIES.family
def make_executable(p: Pool) -> TaskSpec:
    path, text = f"/app/{p.word()}.sh", f"{p.word()} {p.number()}"
    setup = f"printf '#!/bin/sh\\necho %s\\n' {q(text)} > {path}\nchmod 644 {path}\n"
    return task_spec(
        p.name,
        phrase(
            p,
            f"make the script {path} executable",
            f"allow the script {path} to run by making it executable",
            tool="chmod +x",
        ),
        setup,
        f"chmod +x {path}\n",
        [
            ("script_exists", f"test -f {path}"),
            ("is_executable", f"test -x {path}"),
            ("still_runs", f'test "$({path})" = {q(text)}'),
            ("no_write_permission_added", no_write_added([path])),
        ],
        "chmod",
    )


@FAMILIES.family
def make_dirs(p: Pool) -> TaskSpec:
    parts = p.words(3)
    path = "/app/" + "/".join(parts)
    return task_spec(
        p.name,
        phrase(
            p,
            f"create the directory {path}, with its parent directories",
            f"make the directory {path} and any missing parent directories",
            tool="mkdir -p",
        ),
        "",
        f"mkdir -p {path}\n",
        [
            ("top_exists", f"test -d /app/{parts[0]}"),
            ("middle_exists", f"test -d /app/{parts[0]}/{parts[1]}"),
            ("full_path_exists", f"test -d {path}"),
        ],
        "mkdir",
    )


@FAMILIES.family
def tar_folder(p: Pool) -> TaskSpec:
    folder, archive = p.word(), f"/app/{p.word()}.tar.gz"
    files = [f"{w}.{p.ext()}" for w in p.words(3)]
    numbers = [p.number() for _ in files]
    setup = f"mkdir -p /app/{folder}\n" + "".join(f"echo {n} > /app/{folder}/{f}\n" for f, n in zip(files, numbers))
    return task_spec(
        p.name,
        phrase(
            p,
            f"create the gzip-compressed tar archive {archive} of the directory /app/{folder}",
            f"pack the directory /app/{folder} into the gzip-compressed tar archive {archive}",
            tool="tar -czf",
        ),
        setup,
        f"tar -czf {archive} -C /app {folder}\n",
        [
            ("archive_exists", f"test -f {archive}"),
            ("is_gzip_tar", f"tar -tzf {archive} > /dev/null"),
            ("has_the_files", " && ".join(f"tar -tzf {archive} | grep -q {q(f)}" for f in files)),
            ("folder_kept", " && ".join(holds(f"/app/{folder}/{f}", [str(n)]) for f, n in zip(files, numbers))),
        ],
        "tar",
    )
