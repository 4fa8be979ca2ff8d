"""The curriculum's multi-step families: the agent must read something in the sandbox first (a
value, a name, a listing, a program's output, a file's size) and then act on it, or do two
dependent things. All are trained on; `heldout.py` has the multi-step families that are not.

What has to be read is drawn anew for every instance (which log, which limit, which folder), so
a command that does not look rarely passes, and decoys (other logs, keys, folders, scripts) catch
a careless one. Each oracle takes 2 or 3 commands and its first alone passes no task
(tests/test_multi_step.py runs both in sandboxes). 3 to 5 checks each give partial credit.
Only bash, coreutils, grep, sed, awk, find and tar are used: no python3, no jq.
"""

from __future__ import annotations

from engine.tasks.families.checks import holds, line_count, no_write_added, number_written, own_copy
from engine.tasks.families.phrasing import phrase
from engine.tasks.families.pools import NUMBER_RANGES, Pool, heredoc, task_spec
from engine.tasks.families.registry import Families
from engine.tasks.spec import TaskSpec

# Declaration order is the order `trsi-tui tasks generate --family all` writes them in.
FAMILIES = Families(Pool)


def multi_spec(p: Pool, instruction: str, setup: str, solve: str, checks: list[tuple[str, str]], tag: str) -> TaskSpec:
    return task_spec(p.name, instruction, setup, solve, checks, tag, difficulty="medium", agent_timeout=120)


@FAMILIES.family
def log_with_host(p: Pool) -> TaskSpec:
    n = p.rng.randint(4, 6)
    *words, out = p.words(2 * n + 1)
    names, hosts = words[:n], words[n:]
    ext, k = p.ext(), p.rng.randrange(n)
    host = hosts[k]
    others = [h for h in hosts if h != host]
    logs = {
        f"/app/logs/{w}.{ext}": [f"host={p.rng.choice(others)} status={p.number()}" for _ in range(p.rng.randint(3, 5))]
        for w in names
    }
    found = f"/app/logs/{names[k]}.{ext}"
    logs[found][p.rng.randrange(len(logs[found]))] = f"host={host} status={p.number()}"
    dst = f"/app/{out}.{ext}"
    return multi_spec(
        p,
        phrase(
            p,
            f"copy that log to {dst}",
            f"find that log and copy it to {dst}",
            context=f"One log file in /app/logs mentions the host {host}.",
            tool="grep -l",
        ),
        "mkdir -p /app/logs\n" + "".join(heredoc(path, lines) for path, lines in logs.items()),
        f'f=$(grep -lw {host} /app/logs/*)\ncp "$f" {dst}\n',
        [
            ("copy_exists", f"test -f {dst}"),
            ("mentions_the_host", f"grep -qw {host} {dst}"),
            ("is_the_right_log", f"cmp -s {found} {dst}"),
            ("a_copy_of_its_own", own_copy(dst, found)),
            (
                "logs_kept",
                " && ".join(holds(path, lines) for path, lines in logs.items())
                + f' && test "$(ls /app/logs | wc -l)" -eq {n}',
            ),
        ],
        "grep",
    )


@FAMILIES.family
def threshold_filter(p: Pool) -> TaskSpec:
    conf, data, out = p.words(3)
    conf, data, out = f"/app/{conf}.conf", f"/app/{data}.{p.ext()}", f"/app/{out}_above.{p.ext()}"
    low, high = NUMBER_RANGES[p.split]
    limit = p.rng.randint(low + 8, high - 8)
    values = p.rng.sample(range(limit + 1, high + 1), p.rng.randint(2, 5))
    values += p.rng.sample(range(low, limit), p.rng.randint(3, 7))
    p.rng.shuffle(values)
    rows = [f"{p.word()} {v}" for v in values]
    settings = [f"name={p.word()}", f"retries={p.number()}", f"limit={limit}", f"timeout={p.number()}"]
    p.rng.shuffle(settings)
    above = sum(v > limit for v in values)
    return multi_spec(
        p,
        phrase(
            p,
            f"write the lines of {data} whose number is above that limit to {out}",
            f"copy the lines of {data} with a number greater than the limit to {out}",
            context=f"The key=value file {conf} sets a limit.",
            tool="awk",
        ),
        heredoc(conf, settings) + heredoc(data, rows),
        f"limit=$(grep '^limit=' {conf} | cut -d= -f2)\nawk -v t=\"$limit\" '$2 > t' {data} > {out}\n",
        [
            ("output_exists", f"test -f {out}"),
            (f"has_{above}_lines", f'test "{line_count(out)}" -eq {above}'),
            ("all_above_the_limit", f"test -f {out} && awk '$2 <= {limit} {{bad = 1}} END {{exit bad}}' {out}"),
            ("the_lines_above", holds(out, [row for row, v in zip(rows, values) if v > limit])),
            ("data_kept", f"{holds(data, rows)} && {holds(conf, settings)}"),
        ],
        "awk",
    )


@FAMILIES.family
def note_to_folder(p: Pool) -> TaskSpec:
    *folders, note_name = p.words(6)
    dest, came_from = p.rng.sample(folders, 2)
    ext = p.ext()
    note, moved = f"/app/inbox/{note_name}.{ext}", f"/app/{dest}/{note_name}.{ext}"
    text = [f"from: {came_from}", f"folder: {dest}", f"{p.word()} {p.number()}"]
    setup = "mkdir -p /app/inbox " + " ".join(f"/app/{f}" for f in folders) + "\n" + heredoc(note, text)
    others = " ".join(f"/app/{f}" for f in folders if f != dest)
    return multi_spec(
        p,
        phrase(
            p,
            "move the note into that folder",
            "put the note in that folder",
            context=f"The line `folder:` of the note {note} names the folder of /app it belongs in.",
            tool="mv",
        ),
        setup,
        f"d=$(grep '^folder:' {note} | cut -d' ' -f2)\nmv {note} /app/$d/\n",
        [
            ("in_the_right_folder", f"test -f {moved}"),
            ("gone_from_the_inbox", f"test ! -e {note}"),
            ("content_kept", holds(moved, text)),
            # The folders must still be there: `find` over a folder that was moved away (`mv
            # inbox/x */` moves every folder into the last) lists nothing, as an empty one does.
            (
                "other_folders_untouched",
                f'for d in {others} /app/inbox; do test -d "$d" || exit 1; done; '
                f'test "$(find {others} -mindepth 1 | wc -l)" -eq 0',
            ),
        ],
        "mv",
    )


@FAMILIES.family
def run_and_create(p: Pool) -> TaskSpec:
    prog, folder, part, old = p.words(4)
    prog, folder, ext = f"/app/{prog}.sh", f"/app/{folder}", p.ext()
    number, stale = p.number(), f"{old}_{p.number()}.{ext}"
    made = f"{part}_{number}.{ext}"
    script = ["#!/bin/sh", f"# it used to print {stale}", f"part={part}", f'echo "${{part}}_{number}.{ext}"']
    return multi_spec(
        p,
        phrase(
            p,
            f"run it and create an empty file with that name in {folder}",
            f"create a file named what it prints in {folder}",
            context=f"The program {prog} prints a file name.",
        ),
        f"mkdir -p {folder}\n" + heredoc(prog, script) + f"chmod 755 {prog}\n",
        f'name=$({prog})\ntouch {folder}/"$name"\n',
        [
            ("file_created", f"test -f {folder}/{made}"),
            ("only_that_file", f'test "$(ls -A {folder} | wc -l)" -eq 1'),
            ("program_kept", f"test -x {prog}"),
        ],
        "run",
    )


@FAMILIES.family
def largest_file(p: Pool) -> TaskSpec:
    n = p.rng.randint(4, 6)
    folder, out, *names = p.words(n + 2)
    folder, out, ext = f"/app/{folder}", f"/app/{out}_largest.{p.ext()}", p.ext()
    contents = [p.lines(k) for k in p.rng.sample(range(2, 16), n)]
    sizes = [sum(len(line) + 1 for line in c) for c in contents]
    biggest = max(range(n), key=sizes.__getitem__)
    if sorted(sizes)[-2] == sizes[biggest]:  # a tie: the largest gets one line more
        contents[biggest].append(p.lines(1)[0])
    largest = f"{folder}/{names[biggest]}.{ext}"
    setup = f"mkdir -p {folder}\n" + "".join(heredoc(f"{folder}/{w}.{ext}", c) for w, c in zip(names, contents))
    return multi_spec(
        p,
        phrase(
            p,
            f"copy the largest file in {folder} to {out}",
            f"find the largest file of {folder} and copy it to {out}",
            tool="ls -S",
        ),
        setup,
        f'f=$(ls -S {folder} | head -n 1)\ncp {folder}/"$f" {out}\n',
        [
            ("copy_exists", f"test -f {out}"),
            ("is_the_largest", f"cmp -s {largest} {out}"),
            ("a_copy_of_its_own", own_copy(out, largest)),
            (
                "folder_kept",
                " && ".join(holds(f"{folder}/{w}.{ext}", c) for w, c in zip(names, contents))
                + f' && test "$(ls {folder} | wc -l)" -eq {n}',
            ),
        ],
        "ls",
    )


@FAMILIES.family
def csv_lookup(p: Pool) -> TaskSpec:
    n = p.rng.randint(4, 7)
    table, query, out, *keys = p.words(n + 3)
    table, query, out = f"/app/{table}.csv", f"/app/{query}_query.{p.ext()}", f"/app/{out}_amount.{p.ext()}"
    amounts = p.numbers(n)
    k = p.rng.randrange(n)
    rows = ["name,amount", *(f"{key},{a}" for key, a in zip(keys, amounts))]
    return multi_spec(
        p,
        phrase(
            p,
            f"write the amount for that name in {table} to {out}",
            f"look up that name in {table} and write its amount to {out}",
            context=f"The file {query} holds a name.",
        ),
        heredoc(table, rows) + heredoc(query, [keys[k]]),
        f'key=$(cat {query})\ngrep "^$key," {table} | cut -d, -f2 > {out}\n',
        [
            *number_written(out, "amount", amounts[k]),
            ("table_kept", f"{holds(table, rows)} && {holds(query, [keys[k]])}"),
        ],
        "csv",
    )


@FAMILIES.family
def dedup_count(p: Pool) -> TaskSpec:
    k = p.rng.randint(3, 8)
    src, uniq, count, *words = p.words(k + 3)
    ext = p.ext()
    src, uniq, count = f"/app/{src}.{ext}", f"/app/{uniq}_unique.{ext}", f"/app/{count}_count.{ext}"
    distinct = [f"{w} {n}" for w, n in zip(words, p.numbers(k))]
    lines = [line for line in distinct for _ in range(p.rng.randint(1, 4))]
    lines.append(distinct[0])  # at least one line repeats
    p.rng.shuffle(lines)
    return multi_spec(
        p,
        phrase(
            p,
            f"write the lines of {src} without repeats to {uniq}, and the number of those lines to {count}",
            f"save the lines of {src} without repeats in {uniq}, and the number of those lines in {count}",
            tool="sort -u",
        ),
        heredoc(src, lines),
        f"sort -u {src} > {uniq}\nwc -l < {uniq} > {count}\n",
        [
            ("unique_file_exists", f"test -f {uniq}"),
            ("every_line_once", f'test -s {uniq} && test "$(sort {src} | uniq)" = "$(sort {uniq})"'),
            (f"count_is_{k}", f'test "$(tr -d "[:space:]" < {count})" = {k}'),
            ("source_kept", holds(src, lines)),
        ],
        "uniq",
    )


@FAMILIES.family
def exec_listed(p: Pool) -> TaskSpec:
    n = p.rng.randint(4, 6)
    folder, listing, *names = p.words(n + 2)
    folder, listing = f"/app/{folder}", f"/app/{listing}_list.{p.ext()}"
    listed = p.rng.sample(names, p.rng.randint(2, 3))
    setup = f"mkdir -p {folder}\n"
    for w in names:
        setup += f"printf '#!/bin/sh\\necho {w}\\n' > {folder}/{w}.sh\nchmod 644 {folder}/{w}.sh\n"
    setup += heredoc(listing, [f"{w}.sh" for w in listed])
    return multi_spec(
        p,
        phrase(
            p,
            "make exactly those scripts executable",
            "make the listed scripts executable and leave the others as they are",
            context=f"The file {listing} names some of the scripts in {folder}.",
            tool="chmod +x",
        ),
        setup,
        f"cd {folder}\nchmod +x $(cat {listing})\n",
        [
            ("listed_are_executable", " && ".join(f"test -x {folder}/{w}.sh" for w in listed)),
            # A deleted script is not executable either: each must still be there.
            (
                "others_are_not",
                " && ".join(f"test -f {folder}/{w}.sh && test ! -x {folder}/{w}.sh" for w in names if w not in listed),
            ),
            ("listed_still_run", f'test "$({folder}/{listed[0]}.sh)" = {listed[0]}'),
            ("no_write_permission_added", no_write_added([f"{folder}/{w}.sh" for w in names])),
        ],
        "chmod",
    )


@FAMILIES.family
def link_active(p: Pool) -> TaskSpec:
    n = p.rng.randint(3, 5)
    folder, *names = p.words(n + 1)
    folder, active = f"/app/{folder}", p.rng.choice(names)
    target = f"{folder}/{active}.conf"
    setup = f"mkdir -p {folder}\n"
    setup += "".join(heredoc(f"{folder}/{w}.conf", [f"mode={p.word()}", f"port={p.number()}"]) for w in names)
    setup += heredoc("/app/ACTIVE", [f"{active}.conf"])
    return multi_spec(
        p,
        phrase(
            p,
            "make /app/current a symbolic link to that config",
            "create the symbolic link /app/current, pointing to that config",
            context=f"The file /app/ACTIVE names one of the configs in {folder}.",
            tool="ln -s",
        ),
        setup,
        f'name=$(cat /app/ACTIVE)\nln -s {folder}/"$name" /app/current\n',
        [
            ("is_a_link", "test -L /app/current"),
            ("points_to_the_active_config", f'test "$(readlink -f /app/current)" = {target}'),
            ("config_kept", f"test -f {target} && test ! -L {target}"),
            ("configs_kept", f'test "$(ls {folder} | wc -l)" -eq {n}'),
        ],
        "ln",
    )
