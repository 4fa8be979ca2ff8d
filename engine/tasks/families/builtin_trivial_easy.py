"""The built-in suite's families, trivial and easy tiers: one command, or one pipeline.

Each family is one kind of task; its instances differ in file names, contents and numbers
(`engine/tasks/builtin_suite.py` draws them). The medium and hard tiers are in
`builtin_medium_hard.py`.
"""

from __future__ import annotations

import random

from engine.tasks.families.checks import holds, own_copy
from engine.tasks.families.registry import Draw, Families
from engine.tasks.spec import WORDS, TaskSpec, q

FAMILIES = Families()


def lines_file(rng: random.Random, n: int) -> str:
    return "".join(f"{rng.choice(WORDS)} {rng.randint(1, 999)}\n" for _ in range(n))


# ---------------------------------------------------------------------------------------------
# Trivial tier: one command solves it.
# ---------------------------------------------------------------------------------------------
@FAMILIES.family
def write_file(draw: Draw) -> TaskSpec:
    rng, k = draw.rng, draw.index
    fname = f"{rng.choice(WORDS)}_{k}.txt"
    text = f"{rng.choice(WORDS)} {rng.choice(WORDS)} {rng.randint(10, 99)}"
    path = f"/app/{fname}"
    return TaskSpec(
        name=draw.name,
        instruction=f"Create the file {path} containing exactly this single line of text:\n\n{text}\n",
        setup="mkdir -p /app\n",
        solve=f"printf '%s\\n' {q(text)} > {path}\n",
        checks=[
            ("file_exists", f"test -f {path}"),
            ("content_matches", f'test "$(cat {path})" = {q(text)}'),
            ("single_line", f'test "$(grep -c . {path})" -eq 1'),
        ],
        difficulty="trivial",
        category="file-operations",
        tags=["echo", "files"],
        agent_timeout=120,
    )


@FAMILIES.family
def make_dir(draw: Draw) -> TaskSpec:
    rng = draw.rng
    parts = rng.sample(WORDS, 3)
    path = "/app/" + "/".join(parts)
    return TaskSpec(
        name=draw.name,
        instruction=f"Create the directory {path} (including any missing parent directories). Leave it empty.\n",
        setup="mkdir -p /app\n",
        solve=f"mkdir -p {path}\n",
        checks=[
            ("top_dir_exists", f"test -d /app/{parts[0]}"),
            ("full_path_is_dir", f"test -d {path}"),
            ("leaf_is_empty", f'test -d {path} && test -z "$(ls -A {path})"'),
        ],
        difficulty="trivial",
        category="file-operations",
        tags=["mkdir"],
        agent_timeout=120,
    )


@FAMILIES.family
def count_lines(draw: Draw) -> TaskSpec:
    rng = draw.rng
    n = rng.randint(4, 40)
    src = f"/app/{rng.choice(WORDS)}.log"
    out = f"/app/{rng.choice(['count', 'lines', 'total'])}.txt"
    content = lines_file(rng, n)
    return TaskSpec(
        name=draw.name,
        instruction=f"Count the lines of {src} and write the number alone to {out}.\n",
        setup=f"mkdir -p /app\ncat > {src} <<'DATA'\n{content}DATA\n",
        solve=f"wc -l < {src} > {out}\n",
        checks=[
            ("output_exists", f"test -f {out}"),
            (f"count_is_{n}", f'test "$(tr -d "[:space:]" < {out})" = {n}'),
            ("input_unchanged", f'test "$(wc -l < {src})" -eq {n}'),
        ],
        difficulty="trivial",
        category="file-operations",
        tags=["wc"],
        agent_timeout=120,
    )


@FAMILIES.family
def copy_file(draw: Draw) -> TaskSpec:
    rng = draw.rng
    src, dst = (f"/app/{w}.cfg" for w in rng.sample(WORDS, 2))
    content = lines_file(rng, rng.randint(3, 8))
    return TaskSpec(
        name=draw.name,
        instruction=f"Copy the file {src} to {dst}. Keep the original in place.\n",
        setup=f"mkdir -p /app\ncat > {src} <<'DATA'\n{content}DATA\n",
        solve=f"cp {src} {dst}\n",
        checks=[
            ("copy_exists", f"test -f {dst}"),
            ("copy_identical", f"cmp -s {src} {dst}"),
            ("a_copy_of_its_own", own_copy(dst, src)),  # a link passed the two above
            ("original_kept", holds(src, content.splitlines())),
        ],
        difficulty="trivial",
        category="file-operations",
        tags=["cp"],
        agent_timeout=120,
    )


# ---------------------------------------------------------------------------------------------
# Easy tier: one pipeline.
# ---------------------------------------------------------------------------------------------
@FAMILIES.family
def count_matches(draw: Draw) -> TaskSpec:
    rng, k = draw.rng, draw.index
    word = ("ERROR", "WARN", "TIMEOUT")[k]
    log = f"/app/{('service', 'gateway', 'worker')[k]}.log"
    levels = ["INFO", "DEBUG", word, "NOTICE"]
    rows = [f"2026-11-{rng.randint(10, 28)} {rng.choice(levels)} {rng.choice(WORDS)} request {i}" for i in range(60)]
    expected = sum(1 for r in rows if word in r.split())
    out = "/app/matches.txt"
    return TaskSpec(
        name=draw.name,
        instruction=f"The log {log} has one event per line. Count the lines that contain "
        f"the word {word} and write that number alone to {out}.\n",
        setup=f"mkdir -p /app\ncat > {log} <<'DATA'\n" + "\n".join(rows) + "\nDATA\n",
        solve=f"grep -cw {word} {log} > {out}\n",
        checks=[
            ("output_exists", f"test -f {out}"),
            ("count_correct", f'test "$(tr -d "[:space:]" < {out})" = {expected}'),
            ("log_unchanged", f'test "$(wc -l < {log})" -eq 60'),
        ],
        difficulty="easy",
        category="text-processing",
        tags=["grep"],
        agent_timeout=180,
    )


@FAMILIES.family
def sort_unique(draw: Draw) -> TaskSpec:
    rng, k = draw.rng, draw.index
    names = [rng.choice(WORDS).capitalize() + rng.choice(["son", "ley", "ton", "ford"]) for _ in range(25)]
    uniq = sorted(set(names))
    src, out = (
        ("/app/names.txt", "/app/sorted.txt"),
        ("/app/guests.txt", "/app/guests_sorted.txt"),
        ("/app/cities.txt", "/app/unique_cities.txt"),
    )[k]
    return TaskSpec(
        name=draw.name,
        instruction=f"Write the lines of {src} to {out} sorted alphabetically with duplicate lines removed.\n",
        setup=f"mkdir -p /app\ncat > {src} <<'DATA'\n" + "\n".join(names) + "\nDATA\n",
        solve=f"sort -u {src} > {out}\n",
        checks=[
            ("output_exists", f"test -f {out}"),
            ("is_sorted", f"LC_ALL=C sort -c {out}"),
            ("no_duplicates", f'test -z "$(sort {out} | uniq -d)"'),
            ("same_names", f'test "$(sort -u {src} | tr "\\n" ,)" = "$(sort -u {out} | tr "\\n" ,)"'),
            (f"has_{len(uniq)}_lines", f'test "$(grep -c . {out})" -eq {len(uniq)}'),
        ],
        difficulty="easy",
        category="text-processing",
        tags=["sort", "uniq"],
        agent_timeout=180,
    )


@FAMILIES.family
def replace_word(draw: Draw) -> TaskSpec:
    rng = draw.rng
    old, new = rng.sample(WORDS, 2)
    others = [w for w in WORDS if w not in (old, new)]
    lines = []
    for _ in range(20):
        ws = [rng.choice(others) for _ in range(4)]
        if rng.random() < 0.5:
            ws.insert(rng.randint(0, 4), old)
        lines.append(" ".join(ws))
    expected = sum(line.split().count(old) for line in lines)
    path = "/app/notes.txt"
    return TaskSpec(
        name=draw.name,
        instruction=f"In {path}, replace every occurrence of the word '{old}' with '{new}'. "
        "Edit the file in place and change nothing else.\n",
        setup=f"mkdir -p /app\ncat > {path} <<'DATA'\n" + "\n".join(lines) + "\nDATA\n",
        solve=f"sed -i 's/{old}/{new}/g' {path}\n",
        checks=[
            ("old_word_gone", f"! grep -qw {old} {path}"),
            (f"new_word_count_{expected}", f'test "$(grep -ow {new} {path} | wc -l)" -eq {expected}'),
            ("line_count_kept", f'test "$(wc -l < {path})" -eq 20'),
        ],
        difficulty="easy",
        category="text-processing",
        tags=["sed"],
        agent_timeout=180,
    )


@FAMILIES.family
def sum_column(draw: Draw) -> TaskSpec:
    rng, k = draw.rng, draw.index
    cols = ["id", "item", "qty", "price"]
    target = ("qty", "price", "qty")[k]
    csv_path = f"/app/{('orders', 'sales', 'stock')[k]}.csv"
    rows = [[str(i), rng.choice(WORDS), str(rng.randint(1, 50)), str(rng.randint(100, 9999))] for i in range(1, 31)]
    idx = cols.index(target)
    total = sum(int(r[idx]) for r in rows)
    csv = ",".join(cols) + "\n" + "\n".join(",".join(r) for r in rows) + "\n"
    return TaskSpec(
        name=draw.name,
        instruction=f"{csv_path} is a CSV file with a header row. Compute the sum of the '{target}' "
        "column and write the number alone to /app/sum.txt.\n",
        setup=f"mkdir -p /app\ncat > {csv_path} <<'DATA'\n{csv}DATA\n",
        solve=f"awk -F, 'NR>1 {{s+=${idx + 1}}} END {{print s}}' {csv_path} > /app/sum.txt\n",
        checks=[
            ("output_exists", "test -f /app/sum.txt"),
            ("sum_correct", f'test "$(tr -d "[:space:]" < /app/sum.txt)" = {total}'),
            ("csv_unchanged", f'test "$(wc -l < {csv_path})" -eq 31'),
        ],
        difficulty="easy",
        category="data-processing",
        tags=["awk", "csv"],
        agent_timeout=180,
    )
