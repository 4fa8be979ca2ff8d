"""The built-in suite's families, medium and hard tiers: several steps, a small program,
debugging, version control, a real script.

Each family is one kind of task; its instances differ in file names, contents and numbers
(`engine/tasks/builtin_suite.py` draws them). The trivial and easy tiers are in
`builtin_trivial_easy.py`.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from engine.tasks.families.registry import Draw, Families
from engine.tasks.spec import WORDS, TaskSpec, q

FAMILIES = Families()


# ---------------------------------------------------------------------------------------------
# Medium tier: several steps or a small program.
# ---------------------------------------------------------------------------------------------
@FAMILIES.family
def rename_ext(draw: Draw) -> TaskSpec:
    rng, k = draw.rng, draw.index
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
        name=draw.name,
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


@FAMILIES.family
def find_largest(draw: Draw) -> TaskSpec:
    rng, k = draw.rng, draw.index
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
        name=draw.name,
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


@FAMILIES.family
def json_extract(draw: Draw) -> TaskSpec:
    rng, k = draw.rng, draw.index
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
        name=draw.name,
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


@FAMILIES.family
def greet_script(draw: Draw) -> TaskSpec:
    rng = draw.rng
    greeting = rng.choice(["Hello", "Welcome", "Greetings", "Hi"])
    hidden = rng.sample([w.capitalize() for w in WORDS], 2)
    script = "/app/greet.sh"
    checks = [("script_exists", f"test -f {script}"), ("script_executable", f"test -x {script}")]
    for i, name in enumerate(hidden):
        checks.append((f"greets_name_{i + 1}", f'test "$({script} {name})" = {q(f"{greeting}, {name}!")}'))
    return TaskSpec(
        name=draw.name,
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


@FAMILIES.family
def tar_archive(draw: Draw) -> TaskSpec:
    rng, k = draw.rng, draw.index
    top = ("project", "website", "service")[k]
    archive = f"/app/{('backup.tar.gz', 'site.tgz', 'service-archive.tar.gz')[k]}"
    files = {f"{top}/{w}.txt": f"{w} {rng.randint(1, 999)}" for w in rng.sample(WORDS, 4)}
    files[f"{top}/src/main.c"] = "int main(void) { return 0; }"
    setup = f"mkdir -p /app/{top}/src\n" + "".join(f"echo {q(c)} > /app/{p}\n" for p, c in files.items())
    list_check = " && ".join(f"grep -qx {q(p)} /tmp/listing" for p in files)
    content_check = " && ".join(f'test "$(tar -xzOf {archive} {p})" = {q(c)}' for p, c in list(files.items())[:2])
    return TaskSpec(
        name=draw.name,
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


@FAMILIES.family
def fix_bug(draw: Draw) -> TaskSpec:
    rng, k = draw.rng, draw.index
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
        name=draw.name,
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


# The setup's commits need an author, and the sandbox has no git config.
GIT_IDENTITY = (
    "GIT_AUTHOR_NAME=dev GIT_AUTHOR_EMAIL=dev@example.com GIT_COMMITTER_NAME=dev GIT_COMMITTER_EMAIL=dev@example.com"
)


@FAMILIES.family
def git_recover(draw: Draw) -> TaskSpec:
    rng = draw.rng
    fname = f"{rng.choice(WORDS)}.md"
    secret = f"{rng.choice(WORDS)}-{rng.randint(1000, 9999)}-{rng.choice(WORDS)}"
    setup = textwrap.dedent(f"""\
        mkdir -p /app/repo && cd /app/repo
        git init -q -b main .
        export {GIT_IDENTITY}
        echo "# project" > README.md && git add README.md && git commit -qm "initial commit"
        echo {q(secret)} > {fname} && git add {fname} && git commit -qm "add {fname}"
        git reset -q --hard HEAD~1
        """)
    return TaskSpec(
        name=draw.name,
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


@FAMILIES.family
def word_freq(draw: Draw) -> TaskSpec:
    rng, k = draw.rng, draw.index
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
        name=draw.name,
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
