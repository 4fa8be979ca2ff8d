"""Generate the built-in task suite (assets/tasks/{train,eval}/) from parametrized families.

    python assets/generate.py          # rewrite assets/tasks
    python assets/generate.py --check  # exit 1 if assets/tasks differs from what this writes

Each family is one kind of task; its instances differ in file names, contents and numbers,
and train and eval instances never share parameters. Every verifier runs several checks, writes
one CTRF test per check plus reward.txt, and carries the canary string.
"""

from __future__ import annotations

import argparse
import filecmp
import random
import shutil
import sys
import tempfile
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent))
from engine.tasks.spec import WORDS, TaskSpec, q, write_task  # noqa: E402

TASKS_DIR = ROOT / "tasks"
# Instances 0 and 1 of each family go to train, instance 2 to eval.
SPLIT_OF = {0: "train", 1: "train", 2: "eval"}


def lines_file(rng: random.Random, n: int) -> str:
    return "".join(f"{rng.choice(WORDS)} {rng.randint(1, 999)}\n" for _ in range(n))


# ---------------------------------------------------------------------------------------------
# Trivial tier: one command solves it.
# ---------------------------------------------------------------------------------------------
def write_file(rng: random.Random, k: int) -> TaskSpec:
    fname = f"{rng.choice(WORDS)}_{k}.txt"
    text = f"{rng.choice(WORDS)} {rng.choice(WORDS)} {rng.randint(10, 99)}"
    path = f"/app/{fname}"
    return TaskSpec(
        name=f"write-file-{k + 1}",
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


def make_dir(rng: random.Random, k: int) -> TaskSpec:
    parts = rng.sample(WORDS, 3)
    path = "/app/" + "/".join(parts)
    return TaskSpec(
        name=f"make-dir-{k + 1}",
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


def count_lines(rng: random.Random, k: int) -> TaskSpec:
    n = rng.randint(4, 40)
    src = f"/app/{rng.choice(WORDS)}.log"
    out = f"/app/{rng.choice(['count', 'lines', 'total'])}.txt"
    content = lines_file(rng, n)
    return TaskSpec(
        name=f"count-lines-{k + 1}",
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


def copy_file(rng: random.Random, k: int) -> TaskSpec:
    src, dst = (f"/app/{w}.cfg" for w in rng.sample(WORDS, 2))
    content = lines_file(rng, rng.randint(3, 8))
    return TaskSpec(
        name=f"copy-file-{k + 1}",
        instruction=f"Copy the file {src} to {dst}. Keep the original in place.\n",
        setup=f"mkdir -p /app\ncat > {src} <<'DATA'\n{content}DATA\n",
        solve=f"cp {src} {dst}\n",
        checks=[
            ("copy_exists", f"test -f {dst}"),
            ("copy_identical", f"cmp -s {src} {dst}"),
            ("original_kept", f'test -f {src} && test "$(wc -l < {src})" -eq {content.count(chr(10))}'),
        ],
        difficulty="trivial",
        category="file-operations",
        tags=["cp"],
        agent_timeout=120,
    )


# ---------------------------------------------------------------------------------------------
# Easy tier: one pipeline.
# ---------------------------------------------------------------------------------------------
def count_matches(rng: random.Random, k: int) -> TaskSpec:
    word = ("ERROR", "WARN", "TIMEOUT")[k]
    log = f"/app/{('service', 'gateway', 'worker')[k]}.log"
    levels = ["INFO", "DEBUG", word, "NOTICE"]
    rows = [f"2026-11-{rng.randint(10, 28)} {rng.choice(levels)} {rng.choice(WORDS)} request {i}" for i in range(60)]
    expected = sum(1 for r in rows if word in r.split())
    out = "/app/matches.txt"
    return TaskSpec(
        name=f"count-matches-{k + 1}",
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


def sort_unique(rng: random.Random, k: int) -> TaskSpec:
    names = [rng.choice(WORDS).capitalize() + rng.choice(["son", "ley", "ton", "ford"]) for _ in range(25)]
    uniq = sorted(set(names))
    src, out = (
        ("/app/names.txt", "/app/sorted.txt"),
        ("/app/guests.txt", "/app/guests_sorted.txt"),
        ("/app/cities.txt", "/app/unique_cities.txt"),
    )[k]
    return TaskSpec(
        name=f"sort-unique-{k + 1}",
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


def replace_word(rng: random.Random, k: int) -> TaskSpec:
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
        name=f"replace-word-{k + 1}",
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


def sum_column(rng: random.Random, k: int) -> TaskSpec:
    cols = ["id", "item", "qty", "price"]
    target = ("qty", "price", "qty")[k]
    csv_path = f"/app/{('orders', 'sales', 'stock')[k]}.csv"
    rows = [[str(i), rng.choice(WORDS), str(rng.randint(1, 50)), str(rng.randint(100, 9999))] for i in range(1, 31)]
    idx = cols.index(target)
    total = sum(int(r[idx]) for r in rows)
    csv = ",".join(cols) + "\n" + "\n".join(",".join(r) for r in rows) + "\n"
    return TaskSpec(
        name=f"sum-column-{k + 1}",
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


# ---------------------------------------------------------------------------------------------
# Medium tier: several steps or a small program.
# ---------------------------------------------------------------------------------------------
def rename_ext(rng: random.Random, k: int) -> TaskSpec:
    names = rng.sample(WORDS, rng.randint(3, 6))
    folder = f"/app/{('notes', 'docs', 'drafts')[k]}"
    old, new = (("txt", "md"), ("log", "txt"), ("draft", "md"))[k]
    setup = f"mkdir -p {folder}\n" + "".join(f"echo {q(n + ' note')} > {folder}/{n}.{old}\n" for n in names)
    setup += f"echo keep > {folder}/readme.rst\n"
    checks = [
        (f"no_{old}_left", f"test -z \"$(find {folder} -name '*.{old}')\""),
        (f"all_{new}_present", " && ".join(f"test -f {folder}/{n}.{new}" for n in names)),
        ("contents_kept", " && ".join(f'test "$(cat {folder}/{n}.{new})" = {q(n + " note")}' for n in names)),
        ("other_files_untouched", f"test -f {folder}/readme.rst"),
    ]
    return TaskSpec(
        name=f"rename-ext-{k + 1}",
        instruction=f"Rename every file ending in .{old} in {folder} so that it ends in .{new} instead "
        f"(a.{old} becomes a.{new}). Leave all other files alone.\n",
        setup=setup,
        solve=f'cd {folder} && for f in *.{old}; do mv "$f" "${{f%.{old}}}.{new}"; done\n',
        checks=checks,
        difficulty="medium",
        category="file-operations",
        tags=["mv", "loops"],
        agent_timeout=240,
    )


def find_largest(rng: random.Random, k: int) -> TaskSpec:
    dirs = rng.sample(WORDS, 3)
    base = f"/app/{('data', 'assets', 'cache')[k]}"
    out = f"/app/{('largest', 'biggest', 'max_file')[k]}.txt"
    files = []
    for d in dirs:
        for w in rng.sample(WORDS, 3):
            files.append((f"{base}/{d}/{w}.bin", rng.randint(100, 5000)))
    sizes = [s for _, s in files]
    while len(set(sizes)) != len(sizes):  # a unique largest file keeps the answer unambiguous
        files = [(p, rng.randint(100, 5000)) for p, _ in files]
        sizes = [s for _, s in files]
    largest = max(files, key=lambda f: f[1])[0]
    setup = "".join(f"mkdir -p {d}\n" for d in sorted({str(Path(p).parent) for p, _ in files}))
    setup += "".join(f"head -c {s} /dev/zero > {p}\n" for p, s in files)
    return TaskSpec(
        name=f"find-largest-{k + 1}",
        instruction=f"Find the largest regular file anywhere under {base} and write its absolute path "
        f"alone to {out}.\n",
        setup=setup,
        solve=f"find {base} -type f -printf '%s %p\\n' | sort -n | tail -1 | cut -d' ' -f2 > {out}\n",
        checks=[
            ("output_exists", f"test -f {out}"),
            ("path_correct", f'test "$(tr -d "[:space:]" < {out})" = {largest}'),
            ("data_untouched", f'test "$(find {base} -type f | wc -l)" -eq {len(files)}'),
        ],
        difficulty="medium",
        category="file-operations",
        tags=["find", "sort"],
        agent_timeout=240,
    )


def json_extract(rng: random.Random, k: int) -> TaskSpec:
    port = rng.randint(2000, 9000)
    user = rng.choice(WORDS)
    replicas = rng.randint(2, 9)
    key, value = (("server.port", str(port)), ("database.user", user), ("deploy.replicas", str(replicas)))[k]
    doc = (
        "{\n"
        f'  "server": {{"host": "0.0.0.0", "port": {port}, "tls": false}},\n'
        f'  "database": {{"user": "{user}", "pool": {{"min": 1, "max": {replicas * 2}}}}},\n'
        f'  "deploy": {{"replicas": {replicas}, "region": "{rng.choice(WORDS)}"}}\n'
        "}\n"
    )
    py_path = "".join(f"[{p!r}]" for p in key.split("."))
    return TaskSpec(
        name=f"json-extract-{k + 1}",
        instruction=f"/app/config.json holds a JSON document. Write the value found at the path "
        f"'{key}' (dot-separated keys) alone to /app/value.txt, without quotes.\n",
        setup=f"mkdir -p /app\ncat > /app/config.json <<'DATA'\n{doc}DATA\n",
        solve=f"python3 -c \"import json; print(json.load(open('/app/config.json')){py_path})\" > /app/value.txt\n",
        checks=[
            ("output_exists", "test -f /app/value.txt"),
            ("value_correct", f'test "$(tr -d "[:space:]" < /app/value.txt)" = {q(value)}'),
            ("json_still_valid", "python3 -c 'import json; json.load(open(\"/app/config.json\"))'"),
        ],
        difficulty="medium",
        category="data-processing",
        tags=["json", "python"],
        agent_timeout=240,
    )


def greet_script(rng: random.Random, k: int) -> TaskSpec:
    greeting = rng.choice(["Hello", "Welcome", "Greetings", "Hi"])
    hidden = rng.sample([w.capitalize() for w in WORDS], 2)
    script = "/app/greet.sh"
    checks = [("script_exists", f"test -f {script}"), ("script_executable", f"test -x {script}")]
    for i, name in enumerate(hidden):
        checks.append((f"greets_name_{i + 1}", f'test "$({script} {name})" = {q(f"{greeting}, {name}!")}'))
    return TaskSpec(
        name=f"greet-script-{k + 1}",
        instruction=f"Write an executable bash script {script} that prints '{greeting}, NAME!' where NAME "
        f"is its first argument. For example `{script} Ada` prints `{greeting}, Ada!`.\n",
        setup="mkdir -p /app\n",
        solve=f"cat > {script} <<'EOF'\n#!/bin/bash\necho \"{greeting}, $1!\"\nEOF\nchmod +x {script}\n",
        checks=checks,
        difficulty="medium",
        category="scripting",
        tags=["bash", "chmod"],
        agent_timeout=240,
    )


def tar_archive(rng: random.Random, k: int) -> TaskSpec:
    top = ("project", "website", "service")[k]
    archive = f"/app/{('backup.tar.gz', 'site.tgz', 'service-archive.tar.gz')[k]}"
    files = {f"{top}/{w}.txt": f"{w} {rng.randint(1, 999)}" for w in rng.sample(WORDS, 4)}
    files[f"{top}/src/main.c"] = "int main(void) { return 0; }"
    setup = f"mkdir -p /app/{top}/src\n" + "".join(f"echo {q(c)} > /app/{p}\n" for p, c in files.items())
    list_check = " && ".join(f"grep -qx {q(p)} /tmp/listing" for p in files)
    content_check = " && ".join(f'test "$(tar -xzOf {archive} {p})" = {q(c)}' for p, c in list(files.items())[:2])
    return TaskSpec(
        name=f"tar-archive-{k + 1}",
        instruction=f"Create a gzip-compressed tar archive {archive} of the directory "
        f"/app/{top}. Paths inside the archive must start with '{top}/'.\n",
        setup=setup,
        solve=f"tar -czf {archive} -C /app {top}\n",
        checks=[
            ("archive_exists", f"test -f {archive}"),
            ("is_gzip_tar", f"tar -tzf {archive} > /dev/null"),
            ("all_files_inside", f"tar -tzf {archive} | sed 's|^\\./||' > /tmp/listing && {list_check}"),
            ("contents_match", content_check),
        ],
        difficulty="medium",
        category="file-operations",
        tags=["tar", "gzip"],
        agent_timeout=240,
    )


# ---------------------------------------------------------------------------------------------
# Hard tier: debugging, version control, writing a real script.
# ---------------------------------------------------------------------------------------------
BUGGY_STATS = {
    "skips_first": ("for i in range(1, len(values)):", "for i in range(len(values)):"),
    "integer_division": ("print(total // len(values))", "print(total / len(values))"),
    "wrong_start": ("total = 1", "total = 0"),
}


def fix_bug(rng: random.Random, k: int) -> TaskSpec:
    bug = list(BUGGY_STATS)[k % len(BUGGY_STATS)]
    prog = f"/app/{('stats', 'mean', 'average')[k]}.py"
    wrong, right = BUGGY_STATS[bug]
    program = textwrap.dedent("""\
        import sys


        def main(path):
            values = [float(line) for line in open(path) if line.strip()]
            total = 0
            for i in range(len(values)):
                total += values[i]
            print(total / len(values))


        if __name__ == "__main__":
            main(sys.argv[1])
        """).replace(right, wrong)
    cases = []
    while len(cases) < 3:
        nums = [rng.randint(1, 60) for _ in range(rng.randint(3, 7))]
        if sum(nums) % len(nums) == 0:
            continue  # an integer mean would hide the integer-division bug
        cases.append((nums, sum(nums) / len(nums)))
    checks = [("program_present", f"test -f {prog}")]
    for i, (nums, mean) in enumerate(cases):
        data = "\\n".join(str(n) for n in nums)
        checks.append(
            (
                f"mean_case_{i + 1}",
                f"printf '{data}\\n' > /tmp/case{i}.txt && "
                f"python3 -c 'import sys; v=float(sys.argv[1]); assert abs(v-{mean!r})<1e-6' "
                f'"$(timeout 10 python3 {prog} /tmp/case{i}.txt)"',
            )
        )
    return TaskSpec(
        name=f"fix-bug-{k + 1}",
        instruction=f"`python3 {prog} FILE` should print the arithmetic mean of the numbers in FILE "
        "(one number per line), but it prints wrong results. Find and fix the bug in "
        f"{prog}.\n",
        setup=f"mkdir -p /app\ncat > {prog} <<'EOF'\n{program}EOF\nprintf '2\\n4\\n9\\n' > /app/sample.txt\n",
        solve=f"sed -i {q(f's/{_sed_escape(wrong)}/{_sed_escape(right)}/')} {prog}\n",
        checks=checks,
        difficulty="hard",
        category="debugging",
        tags=["python", "debugging"],
        agent_timeout=400,
    )


def _sed_escape(text: str) -> str:
    out = text
    for ch in "\\/.[]*^$":
        out = out.replace(ch, "\\" + ch)
    return out


def git_recover(rng: random.Random, k: int) -> TaskSpec:
    fname = f"{rng.choice(WORDS)}.md"
    secret = f"{rng.choice(WORDS)}-{rng.randint(1000, 9999)}-{rng.choice(WORDS)}"
    setup = textwrap.dedent(f"""\
        mkdir -p /app/repo && cd /app/repo
        git init -q -b main .
        export GIT_AUTHOR_NAME=dev GIT_AUTHOR_EMAIL=dev@example.com GIT_COMMITTER_NAME=dev GIT_COMMITTER_EMAIL=dev@example.com
        echo "# project" > README.md && git add README.md && git commit -qm "initial commit"
        echo {q(secret)} > {fname} && git add {fname} && git commit -qm "add {fname}"
        git reset -q --hard HEAD~1
        """)
    return TaskSpec(
        name=f"git-recover-{k + 1}",
        instruction=f"In the git repository /app/repo, a commit that added the file {fname} was thrown "
        f"away with `git reset --hard`. Recover the content of {fname} from that lost "
        f"commit and write it to /app/recovered.txt.\n",
        setup=setup,
        solve=f'cd /app/repo && git show "$(git reflog --format=%H | sed -n 2p)":{fname} > /app/recovered.txt\n',
        checks=[
            ("output_exists", "test -f /app/recovered.txt"),
            ("content_recovered", f'test "$(cat /app/recovered.txt)" = {q(secret)}'),
            ("repo_intact", "git -C /app/repo rev-parse --verify HEAD >/dev/null"),
        ],
        difficulty="hard",
        category="version-control",
        tags=["git", "reflog"],
        agent_timeout=400,
    )


WORDFREQ_TEXTS = [
    "the cat and the hat sat on the mat and the cat ran",
    "Red fish, blue fish; one fish, two fish! Red? Blue. red",
    "to be or not to be that is the question to ask",
    "a b a c b a d e a c",
]


def word_freq(rng: random.Random, k: int) -> TaskSpec:
    n = (2, 3, 4)[k]
    script = f"/app/{('topwords', 'wordfreq', 'common_words')[k]}.sh"
    checks = [("script_executable", f"test -x {script}")]
    texts = rng.sample(WORDFREQ_TEXTS, 2)
    for i, text in enumerate(texts):
        words = "".join(c.lower() if c.isalpha() else " " for c in text).split()
        counts: dict[str, int] = {}
        for w in words:
            counts[w] = counts.get(w, 0) + 1
        top = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:n]
        expected = "\n".join(f"{c} {w}" for w, c in top)
        checks.append(
            (
                f"top_words_case_{i + 1}",
                f"printf '%s\\n' {q(text)} > /tmp/text{i}.txt && "
                f'test "$(timeout 10 {script} /tmp/text{i}.txt | sed "s/^ *//")" = "$(printf {q(expected)})"',
            )
        )
    solve = textwrap.dedent(f"""\
        cat > {script} <<'EOF'
        #!/bin/bash
        tr -cs '[:alpha:]' '\\n' < "$1" | tr '[:upper:]' '[:lower:]' | grep . | sort | uniq -c \\
          | sort -k1,1nr -k2,2 | head -n {n} | awk '{{print $1, $2}}'
        EOF
        chmod +x {script}
        """)
    return TaskSpec(
        name=f"word-freq-{k + 1}",
        instruction=f"Write an executable script {script} that takes a text file as its first argument "
        f"and prints the {n} most frequent words, one per line as 'COUNT WORD', most frequent "
        "first, ties broken alphabetically. Words are runs of letters, compared lowercase.\n",
        setup="mkdir -p /app\necho 'the quick brown fox jumps over the lazy dog the end' > /app/example.txt\n",
        solve=solve,
        checks=checks,
        difficulty="hard",
        category="scripting",
        tags=["bash", "sort", "uniq"],
        agent_timeout=480,
    )


FAMILIES = [
    write_file,
    make_dir,
    count_lines,
    copy_file,
    count_matches,
    sort_unique,
    replace_word,
    sum_column,
    rename_ext,
    find_largest,
    json_extract,
    greet_script,
    tar_archive,
    fix_bug,
    git_recover,
    word_freq,
]
INSTANCES = 3


def generate(dest: Path) -> int:
    count = 0
    for fam_index, family in enumerate(FAMILIES):
        for k in range(INSTANCES):
            # A per-(family, instance) seed: regenerating never reshuffles other tasks.
            rng = random.Random(1000 * fam_index + k)
            spec = family(rng, k)
            write_task(spec, family.__name__.replace("_", "-"), SPLIT_OF[k], dest)
            count += 1
    return count


def _same_tree(a: Path, b: Path) -> bool:
    cmp = filecmp.dircmp(a, b)
    if cmp.left_only or cmp.right_only or cmp.diff_files or cmp.funny_files:
        return False
    _, mismatch, errors = filecmp.cmpfiles(a, b, cmp.common_files, shallow=False)
    if mismatch or errors:
        return False
    return all(_same_tree(a / s, b / s) for s in cmp.common_dirs)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="compare with assets/tasks instead of writing")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        n = generate(Path(tmp))
        if args.check:
            ok = TASKS_DIR.is_dir() and _same_tree(Path(tmp), TASKS_DIR)
            print(f"{n} tasks: {'up to date' if ok else 'assets/tasks differs from the generator'}")
            return 0 if ok else 1
        if TASKS_DIR.exists():
            shutil.rmtree(TASKS_DIR)
        shutil.copytree(tmp, TASKS_DIR)
    print(f"wrote {n} tasks to {TASKS_DIR}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
