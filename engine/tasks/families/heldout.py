"""The curriculum's held-out families: evaluated, never trained on, to measure transfer.

`materialize` never puts an instance of these in the train split (`trsi-tui tasks generate` still
writes one when asked). Each uses skills the trained families teach, in a combination none of
them has: the one-step ones a command or file format no trained family uses on its own
(a symbolic link, a key=value file, a JSON file); the multi-step ones join two trained steps
(grep -l then tar, find the newest then move, read a setting then head).
"""

from __future__ import annotations

from engine.tasks.families.checks import holds, line_count, number_written
from engine.tasks.families.multi_step import multi_spec
from engine.tasks.families.phrasing import phrase
from engine.tasks.families.pools import Pool, heredoc, task_spec
from engine.tasks.families.registry import Families
from engine.tasks.spec import TaskSpec, q

ONE_STEP = Families(Pool)
MULTI_STEP = Families(Pool)


@ONE_STEP.family
def make_symlink(p: Pool) -> TaskSpec:
    a, b = p.words(2)
    target, link = f"/app/{a}.{p.ext()}", f"/app/{b}_link"
    lines = p.lines(3)
    return task_spec(
        p.name,
        phrase(
            p,
            f"create a symbolic link {link} that points to {target}",
            f"make {link} a symbolic link that points to {target}",
        ),
        heredoc(target, lines),
        f"ln -s {target} {link}\n",
        [
            ("is_a_link", f"test -L {link}"),
            ("points_to_the_target", f'test "$(readlink -f {link})" = {target}'),
            ("reads_the_target", f'test "$(head -n 1 {link})" = {q(lines[0])}'),
            ("target_kept", holds(target, lines)),
        ],
        "ln",
    )


@ONE_STEP.family
def config_value(p: Pool) -> TaskSpec:
    n = p.rng.randint(4, 6)
    conf, out, *keys = p.words(n + 2)
    conf, out = f"/app/{conf}.conf", f"/app/{out}_value.{p.ext()}"
    values = p.numbers(n)
    k = p.rng.randrange(n)
    return task_spec(
        p.name,
        phrase(
            p,
            f"write the value of {keys[k]} to {out}",
            f"save the value of {keys[k]} in {out}",
            context=f"{conf} has key=value lines.",
        ),
        heredoc(conf, [f"{key}={v}" for key, v in zip(keys, values)]),
        f"grep '^{keys[k]}=' {conf} | cut -d= -f2 > {out}\n",
        [
            *number_written(out, "value", values[k]),
            ("config_kept", holds(conf, [f"{key}={v}" for key, v in zip(keys, values)])),
        ],
        "grep",
    )


@ONE_STEP.family
def json_field(p: Pool) -> TaskSpec:
    n = p.rng.randint(3, 5)
    doc, out, *keys = p.words(n + 2)
    doc, out = f"/app/{doc}.json", f"/app/{out}_field.{p.ext()}"
    values = p.numbers(n)
    k = p.rng.randrange(n)
    body = ["{", *(f'  "{key}": {v},' for key, v in zip(keys, values)), "}"]
    body[-2] = body[-2].rstrip(",")
    return task_spec(
        p.name,
        phrase(
            p,
            f'write the value of its field "{keys[k]}" to {out}',
            f'save the number of the field "{keys[k]}" in {out}',
            context=f"{doc} is a small JSON object.",
        ),
        heredoc(doc, body),
        f"sed -n 's/.*\"{keys[k]}\": *\\([0-9]*\\).*/\\1/p' {doc} > {out}\n",
        [*number_written(out, "value", values[k]), ("json_kept", holds(doc, body))],
        "sed",
    )


@MULTI_STEP.family
def archive_matching(p: Pool) -> TaskSpec:
    n = p.rng.randint(4, 6)
    folder, archive, word, *names = p.words(n + 5)
    names, fillers = names[:n], names[n:]
    folder, archive, ext = f"/app/{folder}", f"/app/{archive}.tar.gz", p.ext()
    matching = p.rng.sample(names, p.rng.randint(2, 3))
    setup, written = f"mkdir -p {folder}\n", {}
    for w in names:
        lines = [f"{p.rng.choice(fillers)} {p.number()}" for _ in range(3)]
        if w in matching:
            lines[p.rng.randrange(3)] = f"{word} {p.number()}"
        written[f"{folder}/{w}.{ext}"] = lines
        setup += heredoc(f"{folder}/{w}.{ext}", lines)
    listed = f"tar -tzf {archive}"
    return multi_spec(
        p,
        phrase(
            p,
            f"put the files of {folder} that contain the word {word} into the gzip-compressed tar archive {archive}",
            f"make the gzip-compressed tar archive {archive} of the files in {folder} that contain the word {word}",
            tool="grep -l",
        ),
        setup,
        f"cd {folder}\ntar -czf {archive} $(grep -lw {word} *)\n",
        [
            ("archive_exists", f"test -f {archive}"),
            ("is_gzip_tar", f"{listed} > /dev/null"),
            ("has_the_matching_files", " && ".join(f"{listed} | grep -qE '(^|/){w}[.]{ext}$'" for w in matching)),
            (
                "has_no_other_file",
                f"{listed} > /dev/null && ! {listed} | grep -qE '(^|/)("
                + "|".join(w for w in names if w not in matching)
                + f")[.]{ext}$'",
            ),
            (
                "files_kept",
                " && ".join(holds(path, lines) for path, lines in written.items())
                + f' && test "$(ls {folder} | wc -l)" -eq {n}',
            ),
        ],
        "tar",
    )


@MULTI_STEP.family
def newest_file(p: Pool) -> TaskSpec:
    n = p.rng.randint(4, 6)
    folder, dest, *names = p.words(n + 2)
    folder, dest, ext = f"/app/{folder}", f"/app/{dest}", p.ext()
    days = p.numbers(n)  # modified that many days into 2024
    newest = names[days.index(max(days))]
    setup, written = f"mkdir -p {folder} {dest}\n", {}
    for w, day in zip(names, days):
        path = f"{folder}/{w}.{ext}"
        written[w] = p.lines(2)
        setup += heredoc(path, written[w]) + f"touch -d '2024-01-01 12:00 UTC +{day} days' {path}\n"
    return multi_spec(
        p,
        phrase(
            p,
            f"move the newest file of {folder} into {dest}",
            f"find the newest file in {folder} and move it into {dest}",
            tool="ls -t",
        ),
        setup,
        f'f=$(ls -t {folder} | head -n 1)\nmv {folder}/"$f" {dest}/\n',
        [
            ("newest_moved", holds(f"{dest}/{newest}.{ext}", written[newest])),
            ("gone_from_the_folder", f"test ! -e {folder}/{newest}.{ext}"),
            ("others_stay", " && ".join(holds(f"{folder}/{w}.{ext}", written[w]) for w in names if w != newest)),
            ("only_one_moved", f'test "$(ls -A {dest} | wc -l)" -eq 1'),
        ],
        "mv",
    )


@MULTI_STEP.family
def head_from_config(p: Pool) -> TaskSpec:
    conf, data, out = p.words(3)
    conf, data, out = f"/app/{conf}.conf", f"/app/{data}.{p.ext()}", f"/app/{out}_top.{p.ext()}"
    count = p.number()
    lines = p.lines(count + p.rng.randint(3, 10))
    settings = [f"name={p.word()}", f"lines={count}", f"skip={p.number()}"]
    p.rng.shuffle(settings)
    return multi_spec(
        p,
        phrase(
            p,
            f"write that many lines from the top of {data} to {out}",
            f"save the first lines of {data}, as many as it says, in {out}",
            context=f"The setting `lines` in the key=value file {conf} is a number.",
            tool="head -n",
        ),
        heredoc(conf, settings) + heredoc(data, lines),
        f"n=$(grep '^lines=' {conf} | cut -d= -f2)\nhead -n \"$n\" {data} > {out}\n",
        [
            ("output_exists", f"test -f {out}"),
            (f"has_{count}_lines", f'test "{line_count(out)}" -eq {count}'),
            ("first_line", f'test "$(head -n 1 {out})" = {q(lines[0])}'),
            (f"the_first_{count}_lines", holds(out, lines[:count])),
            ("data_kept", f"{holds(data, lines)} && {holds(conf, settings)}"),
        ],
        "head",
    )
