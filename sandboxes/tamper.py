"""What the verifier runs on, checked for changes the agent made (Docker backend).

A root agent in a container can rewrite anything in it: the interpreter, the standard library,
pytest, bash. The verifier then runs the agent's code, as root, and reports whatever it likes.
Nothing inside the container can be trusted to detect that, so the check is made from the host,
on the container's writable overlay layer (`UpperDir`), which holds exactly the files created,
changed or deleted since the container started.

`snapshot()` records that layer before the agent's turn (after setup.sh, whose changes are the
task's); `changes()` lists what differs afterwards, and `tampered()` keeps the paths the
verifier depends on. Deliberately narrow, so that packages an agent installs with pip or apt
keep working:

- a file that existed before the turn (in the image or after setup) under the system's program
  and library directories, changed, replaced or deleted: the interpreter, the standard library,
  shared libraries, bash, coreutils (site-packages excepted, where upgrades are ordinary);
- in any site-packages that existed before the turn (the image's, or a virtual environment it
  ships; not one the agent made) or where the system's Python would look for one
  (`/usr/local/lib/python3.X/site-packages`, made by the agent, is on its sys.path too): the
  test runner and what it imports at start-up (pytest, _pytest, pluggy, iniconfig, packaging,
  ...), created or changed, in any form (a package, `.py`, `.pyc`, an extension module); any
  `.pth` file, created or changed (an `import` line runs code at start-up, and a path line puts
  a directory of the agent's on sys.path, where the verifier's guard trusts it);
  `sitecustomize` / `usercustomize`; an `entry_points.txt` of a `.dist-info` or `.egg-info`
  (in any case) declaring pytest plugins (`[pytest11]`), which pytest loads by itself;
- any change in the standard library's directories or zip (a new `pytest/` there is found
  before site-packages);
- a system directory, or one on the way to it (`/lib64`, `/usr/local/bin`, `/usr`), replaced by
  a link or a file, or removed and remade;
- a new program in a PATH directory that shadows one later on PATH (`/usr/local/bin/python3`
  before `/usr/bin/python3`); the dynamic loader's preload list, its search configuration
  (`ld.so.conf*`; not `ld.so.cache`, which `ldconfig` rewrites after every `apt-get` that adds a
  library) and Python's own config under /etc; a new library anywhere in a library tree named
  like one the image has, by its file name or its soname (`glibc-hwcaps/x86-64-v2/libtinfo.so.6`,
  which `ldconfig` puts ahead of bash's own);
- `/etc/nsswitch.conf` and `/etc/gconv`-style module lists, and a new NSS module
  (`libnss_*`) or gconv module in a library directory: glibc loads them into every program that
  looks up a user (bash at start-up) or converts a charset, the verifier's included;
- the alternatives (`/etc/alternatives/awk`, through which `/usr/bin/awk` runs a program), changed;
  OpenSSL's, apt's, git's, npm's, pip's and uv's configuration (the system's and root's) and
  Perl's `/etc/perl/`, created or changed: each can make a program the verifier runs load or run
  the agent's code; a new Perl module in a site or vendor directory that shadows a core one;
- an interpreter's landmark files beside or above it (`pyvenv.cfg`, `*._pth`, `pybuilddir.txt`
  in /, /usr, /usr/local or a PATH directory): they move Python's standard library elsewhere.

What the engine reads here it opens without following links or blocking, as regular files
only, and at most `READ_LIMIT` bytes: a FIFO, a link to `/dev/zero` or a sparse file must not
hang the engine or fill its memory (anything else where a small file is expected is tampering).

New files elsewhere (a package pip installed, a library apt unpacked) are not tampering.
"""

from __future__ import annotations

import functools
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from sandboxes import elf, links
from sandboxes.base import HOME_CONFIGS

# Where programs and libraries live: a pre-existing file changed here is tampering.
SYSTEM_DIRS = (
    "bin/",
    "sbin/",
    "lib/",
    "lib32/",
    "lib64/",
    "libx32/",
    "usr/bin/",
    "usr/sbin/",
    "usr/lib/",
    "usr/lib32/",
    "usr/lib64/",
    "usr/libexec/",
    "usr/share/perl5/",
    "usr/share/perl/",
    "usr/local/bin/",
    "usr/local/sbin/",
    "usr/local/lib/",
    "etc/python",
    # The maintainer scripts of the image's packages: dpkg runs them (a trigger of libc-bin's on
    # any install), as root, when a test.sh installs a package.
    "var/lib/dpkg/info/",
    # /usr/bin/awk -> /etc/alternatives/awk -> the program: the link here picks what runs.
    "etc/alternatives/",
)
PATH_DIRS = ("usr/local/sbin/", "usr/local/bin/", "usr/sbin/", "usr/bin/", "sbin/", "bin/")
_SITE = re.compile(r"/(site|dist)-packages/")
# Where the system's Python looks for site-packages whether or not the image has made them yet.
_SYSTEM_SITE = re.compile(r"^(usr/(local/)?)?lib(64)?/python[\d.]*/(site|dist)-packages$")
# pytest and what it imports while starting, before any test runs.
RUNNER_PACKAGES = frozenset(
    {"pytest", "_pytest", "py", "pluggy", "iniconfig", "packaging", "exceptiongroup", "tomli", "attr", "attrs"}
)
# The directories above, and each directory on the way to them: replaced by a link or a file,
# or emptied and refilled (an opaque directory), everything below them changed at once.
SYSTEM_ROOTS = frozenset(
    "/".join(d.rstrip("/").split("/")[: i + 1]) for d in SYSTEM_DIRS for i in range(d.rstrip("/").count("/") + 1)
)
# The standard library (outside site-packages) and its zip, first on sys.path.
_STDLIB = re.compile(r"^(usr/(local/)?)?lib(64)?/python\d[\d.]*(/|$)|^(usr/(local/)?)?lib(64)?/python\d+\.zip$")
# Configuration that makes a program the verifier may run load or run code of the agent's:
# OpenSSL providers (dlopened into Python by `import hashlib`), apt hooks (a test.sh's
# `apt-get update` runs them), git's (fsmonitor, hooksPath, aliases), npm's (node-options,
# script-shell), Perl's sitecustomize.
ALWAYS_PROTECTED = (
    "etc/ld.so.preload",
    "etc/ld.so.conf",
    "etc/nsswitch.conf",
    "etc/ssl/openssl.cnf",
    "usr/lib/ssl/openssl.cnf",
    "usr/local/ssl/openssl.cnf",
    "etc/gitconfig",
    "etc/npmrc",
    "usr/etc/npmrc",
    "usr/local/etc/npmrc",
    "usr/local/etc/gitconfig",
    # pip's and uv's: a test.sh's own `pip install pytest` took the agent's wheel.
    "etc/pip.conf",
    "usr/pip.conf",
    "usr/local/pip.conf",
    "etc/uv/uv.toml",
    "etc/wgetrc",
    # The same in root's HOME (the verifier runs as root, with root's HOME), sandboxes/base.py.
    # Not ~/.gitconfig, where agents set their identity: the verifier overrides the programs git
    # runs by itself above every config file (engine/rollout/verifier.py).
    *(f"root/{name}" for name in HOME_CONFIGS),
)
PROTECTED_PREFIXES = (
    "etc/ld.so.conf.d/",
    # apt's and dpkg's whole configuration: a source of the agent's (`deb [trusted=yes]
    # file:/opt/r ./` in sources.list.d) made a test.sh's `apt-get install -y curl` install the
    # agent's package, offline, whose pre-install script wrote the verdict; dpkg.cfg.d runs
    # `pre-invoke` commands. (A package list planted for the image's own source is not read: apt
    # wants its Release file signed by a key of /etc/apt's.)
    "etc/apt/",
    "etc/dpkg/",
    # git's built-in template directory: its hooks go into every repository the tests make.
    "usr/share/git-core/",
    # uv reads the XDG one before /etc/uv/uv.toml.
    "etc/xdg/uv/",
    "etc/perl/",
    "etc/xdg/pip/",
    *(f"root/{name}/" for name in HOME_CONFIGS),
)
# Perl's module directories on Debian, the site and vendor ones first on @INC, before the core
# modules: a new `strict.pm` in one of the first shadows the core one for every Perl program
# (`shasum` is one).
_PERL_SITE = re.compile(
    r"^(usr/local/lib/[^/]+/perl/[^/]+|usr/local/share/perl/[^/]+|usr/lib/[^/]+/perl5/[^/]+|usr/share/perl5"
    r"|usr/local/lib/site_perl)/(.+\.(pm|pl|so))$"
)
_PERL_CORE = ("usr/lib/*/perl-base", "usr/lib/*/perl/*", "usr/share/perl/*")
# Files glibc loads by name from its library directories into programs that never asked for them.
_GLIBC_MODULES = re.compile(r"(^|/)(libnss_[^/]*|gconv-modules[^/]*|gconv/[^/]*)$")
# A shared library anywhere in a library tree (glibc-hwcaps/x86-64-v2/, tls/ and the like are
# searched before the directory above them), and the directories the loader searches by default.
# (ldconfig takes any file whose name starts with `lib` or `ld-` and holds `.so`.)
_LIBRARY_TREE = re.compile(r"^(usr/(local/)?)?lib(32|64|x32)?/(.*/)?(lib|ld-)[^/]*\.so[^/]*$")
_TRIPLETS = ("x86_64-linux-gnu", "aarch64-linux-gnu", "i386-linux-gnu")
LIBRARY_DIRS = tuple(
    f"{top}{sub}"
    for top in ("lib/", "lib64/", "usr/lib/", "usr/lib64/", "usr/local/lib/")
    for sub in ("", *(f"{t}/" for t in _TRIPLETS))
)
# Python's landmarks: beside the interpreter or one directory up, they relocate its stdlib.
_LANDMARK_DIRS = frozenset({"", "usr", "usr/local", *(d.rstrip("/") for d in PATH_DIRS)})
READ_LIMIT = 1 << 20
# root's own git configuration, which agents set their identity in and which is not protected as
# a whole. But from it git runs programs on the tests' `git clone file://...`: a
# `uploadpack.packObjectsHook` (no environment setting reaches a local upload-pack), a filter's
# smudge on checkout (a committed .gitattributes names it), a diff driver on `git diff`, the hooks
# of a template directory or a hooks path; and an include could bring in any of those.
GLOBAL_GIT_CONFIGS = ("/root/.gitconfig", "/root/.config/git/config")
# insteadOf: `url.<x>.insteadOf /tests/` sends the tests' clone of their own repository to one
# of the agent's; sshCommand and gitProxy run a program (their transports are also refused);
# diff.external and a diff driver's textconv run one on `git diff` and `git log -p`.
_GIT_HAZARD = re.compile(
    rb"packobjectshook|\[\s*include|templatedir|attributesfile|hookspath|insteadof|sshcommand|gitproxy|external|textconv",
    re.IGNORECASE,
)
# What `git lfs install` writes, the only filter commands allowed, and only in [filter "lfs"]
# (which the verifier turns off: engine/rollout/verifier.py). Anything else is a program git
# runs through the shell: `git-lfs >/dev/null; /app/hook` began like git-lfs's own.
GIT_LFS_FILTER = {"smudge": "git-lfs smudge -- %f", "clean": "git-lfs clean -- %f", "process": "git-lfs filter-process"}
_SECTION = re.compile(r'^\[\s*([A-Za-z0-9.-]+)(?:\s+"((?:[^"\\]|\\.)*)")?\s*\]')
_KEY = re.compile(r"^([A-Za-z][A-Za-z0-9-]*)\s*(?:=\s*(.*))?$")


def _runs_a_program(section: str, sub: str | None, key: str, value: str) -> bool:
    """Whether one `key = value` of git config section `[section "sub"]` names a program git
    runs by itself: a filter other than git-lfs's own, or a diff or merge driver."""
    if section == "filter" and key in GIT_LFS_FILTER:
        return sub != "lfs" or value != GIT_LFS_FILTER[key]
    return (section, key) in {("diff", "command"), ("merge", "driver")}


def _value(raw: str) -> str:
    """A git config value as git reads it, for the simple forms: surrounding quotes removed and
    a trailing comment dropped. Escapes are left as written, so they never equal an allowed
    value."""
    out, quoted = [], False
    for ch in raw:
        if ch == '"':
            quoted = not quoted
        elif ch in "#;" and not quoted:
            break
        else:
            out.append(ch)
    return "".join(out).strip()


# Repositories where the tests work without meaning one: git looks upward from its working
# directory, so `git diff --no-index` in test.sh's /app, or in a temporary folder below /tmp,
# ran the diff.external of a repository the agent made there (a seventh red-team pass). In those,
# what git runs by itself on a diff, a status or a checkout is refused; hooks and the rest are a
# repository's own, as a task may ask for them.
REPOSITORY_GIT_CONFIGS = ("/.git/config", "/tmp/.git/config", "/root/.git/config", "/app/.git/config")
_REPOSITORY_HAZARD = re.compile(rb"external|textconv", re.IGNORECASE)


def git_config_runs_programs(head: bytes | None, hazard: re.Pattern[bytes] = _GIT_HAZARD) -> bool:
    """Whether a git config file that begins with `head` (None: not a regular file) sets a
    program git runs by itself on a clone or a diff, or includes another file; a file that
    cannot be read small and whole counts as one. It reads the file as git does: lines end at
    `\\n` only (a `[core]` after a form feed in a comment is no header to git), a line may hold
    headers and then a key (`[filter "x"] smudge = ...`), a value may hold `]`, and a value
    continued on the next line or a lone `\\r` makes the file count as one that runs programs.
    (The verifier's git reads only some keys of root's configuration anyway:
    engine/rollout/verifier.py GIT_GLOBAL_KEYS.)"""
    if head is None or len(head) >= READ_LIMIT:
        return True
    text = head.removeprefix(b"\xef\xbb\xbf").replace(b"\r\n", b"\n")
    if hazard.search(text) or b"\r" in text or re.search(rb"\\\s*\n", text):
        return True
    section, sub = "", None
    for raw in text.decode("utf-8", errors="replace").split("\n"):
        line = raw.strip()
        while line.startswith("["):
            m = _SECTION.match(line)
            if m is None:
                return True  # a header git may read otherwise than this: fail closed
            name, sub = m.group(1).lower(), m.group(2)
            # `[filter.lfs]`, the old form: the subsection after the first dot, lower-cased.
            section, _, dotted = name.partition(".")
            sub = sub if sub is not None else (dotted or None)
            line = line[m.end() :].strip()
        if not line or line[0] in "#;":
            continue
        m = _KEY.match(line)
        if m and _runs_a_program(section, sub, m.group(1).lower(), _value(m.group(2) or "")):
            return True
    return False


def git_configs_that_run_programs(root: str) -> list[str]:
    """root's own git config files, and those of REPOSITORY_GIT_CONFIGS, that run programs
    (above), each resolved inside the sandbox whose root the host sees at `root`
    (`/proc/<init>/root`): a linked file or folder counts as what it leads to."""
    found = []
    for name, hazard in [
        *((n, _GIT_HAZARD) for n in GLOBAL_GIT_CONFIGS),
        *((n, _REPOSITORY_HAZARD) for n in REPOSITORY_GIT_CONFIGS),
    ]:
        where = links.resolve(root, name)
        # Read a folder at a time, never through a link: `root + where` would let the host's
        # kernel follow one the agent made (`/run -> /`) to the host's own files.
        there, head = links.head_inside(root, where, READ_LIMIT) if where is not None else (False, None)
        if there and git_config_runs_programs(head, hazard):
            found.append(name)
    return found


def home_configs_elsewhere(root: str) -> list[str]:
    """root's configuration files (HOME_CONFIGS) that a link on the way to them leads elsewhere,
    where something is. The local view masks each at its own path, and the Docker check refuses
    each there, so a link from /root/.config to a folder of the agent's would go round both; and
    the local view, mounting its mask through such a link, covered the image's own pip with an
    empty folder (a red-team pass: `! python3 -m pip show pytest` passed)."""
    found = []
    for name in HOME_CONFIGS:
        path = f"/root/{name}"
        try:
            where = links.resolve(root, path)
        except links.Unresolvable:
            found.append(path)
            continue
        if where is not None and where != path and links.head_inside(root, where, 1)[0]:
            found.append(path)
    return found


@dataclass(frozen=True)
class Entry:
    kind: int  # stat.S_IFMT of the upper-layer entry (a whiteout is a character device)
    size: int
    mtime_ns: int
    ctime_ns: int
    inode: int


Manifest = dict[str, Entry]


def snapshot(upper: Path, limit: int | None = None) -> Manifest | None:
    """Every entry of the writable layer, by path relative to the container's root; None when
    there are more than `limit` (hard links are entries without inodes: millions of them would
    take the engine's memory, gigabytes of it, to record)."""
    found: Manifest = {}
    stack = [upper]
    while stack:
        try:
            with os.scandir(stack.pop()) as entries:  # read as it goes: one directory may hold millions
                for e in entries:
                    try:
                        st = e.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    if limit is not None and len(found) >= limit:
                        return None
                    rel = os.path.relpath(e.path, upper)
                    found[rel] = Entry(stat.S_IFMT(st.st_mode), st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
                    if stat.S_ISDIR(st.st_mode):
                        stack.append(Path(e.path))
        except OSError:
            continue
    return found


def changes(before: Manifest, after: Manifest) -> list[str]:
    """Paths created, changed or removed in the writable layer between the two snapshots."""
    changed = [p for p, e in after.items() if before.get(p) != e]
    changed += [p for p in before if p not in after]
    return sorted(changed)


# Where an image's own PATH may lead that is the agent's to change: its working folder and the
# users' homes and temporary files (uv's /app/.venv, ~/.local/bin).
_AGENTS_PLACES = ("app/", "root/", "home/", "tmp/", "var/tmp/")


def image_path_dirs(path: tuple[str, ...]) -> tuple[str, ...]:
    """The folders of an image's PATH beyond the system's (`/opt/venv/bin`), as layer paths
    (`opt/venv/bin/`): a program there is what the verifier's `python3` or `pytest` is."""
    dirs = {d.strip("/") + "/" for d in path if d.strip("/")}
    return tuple(sorted(d for d in dirs if d not in PATH_DIRS and not d.startswith(_AGENTS_PLACES)))


def tampered(
    changed: list[str],
    upper: Path,
    lowers: list[Path],
    before: Manifest,
    root: str | None,
    image_path: tuple[str, ...] = (),
) -> list[str]:
    """The changed paths that touch what the verifier runs on (see the module's docstring).
    `root`: the container's root as the host sees it (`/proc/<init>/root`), where a link the
    check must follow is resolved as the container will, never on the host."""
    found = []
    extra = image_path_dirs(image_path)
    for rel in changed:
        reason = _why(rel, upper, lowers, before, root) or _on_the_images_path(rel, extra, upper, lowers, before)
        if reason:
            found.append(f"{'/' + rel} ({reason})")
    return found


def _is_landmark(name: str) -> bool:
    """A file name that moves Python's standard library when it stands beside or above the
    interpreter."""
    return name in ("pyvenv.cfg", "pybuilddir.txt") or name.endswith("._pth")


def _on_the_images_path(rel: str, extra: tuple[str, ...], upper: Path, lowers: list[Path], before: Manifest) -> str:
    """Why `rel` touches a folder of the image's own PATH (image_path_dirs), or ''. An image
    with `ENV PATH=/opt/venv/bin:$PATH` ran the agent's /opt/venv/bin/python3 for the tests'
    `python3 -m pytest`, and a venv's pyvenv.cfg whose `home` the agent pointed at a copy of the
    standard library loaded it at every start (an eighth red-team pass)."""
    if os.path.isdir(upper / rel) and not os.path.islink(upper / rel):
        return ""  # a directory's own entry changes whenever a file in it does
    if rel.startswith(extra) and _existed(rel, lowers, before):
        return "a program on the image's PATH changed, replaced or removed"
    landmarks = {d.rstrip("/") for d in extra} | {os.path.dirname(d.rstrip("/")) for d in extra}
    base = os.path.basename(rel)
    if _is_landmark(base) and os.path.dirname(rel) in landmarks:
        return "a Python landmark beside a folder of the image's PATH"
    return ""


def _existed(rel: str, lowers: list[Path], before: Manifest) -> bool:
    if rel in before:
        return before[rel].kind != stat.S_IFCHR  # a whiteout recorded before means it was gone
    return any(os.path.lexists(lower / rel) for lower in lowers)


def _why(rel: str, upper: Path, lowers: list[Path], before: Manifest, root: str | None) -> str:
    if rel in ALWAYS_PROTECTED or rel.startswith(PROTECTED_PREFIXES):
        return "read or sourced by the verifier's programs"
    path = upper / rel
    try:
        st = os.lstat(path)
    except OSError:
        st = None
    if rel in SYSTEM_ROOTS and (st is None or not stat.S_ISDIR(st.st_mode) or _opaque(path)):
        return "a system directory replaced"
    if st is not None and stat.S_ISDIR(st.st_mode):
        return ""  # a directory's own entry changes whenever a file in it does
    site = _SITE.search("/" + rel)
    if site and rel.startswith(("root/", "home/")):
        return ""  # a user's site-packages: the verifier runs with PYTHONNOUSERSITE=1
    if site:
        site_dir = rel[: site.end() - 2]  # e.g. usr/lib/python3/dist-packages
        if not _existed(site_dir, lowers, before) and not _SYSTEM_SITE.match(site_dir):
            return ""  # a virtual environment the agent made: its own code, like any program of its
        inside = ("/" + rel)[site.end() :]
        top = inside.split("/", 1)[0]
        # A module's name is what precedes its first dot, whatever its form: `iniconfig.pyc`,
        # `foo.cpython-311-x86_64-linux-gnu.so`, or a compiled copy in a top-level __pycache__.
        parts = inside.split("/")
        name = (parts[1] if top == "__pycache__" and len(parts) > 1 else top).split(".", 1)[0]
        if name in RUNNER_PACKAGES:
            return "the test runner's packages"
        if name in startup_imports(tuple(lowers)):
            return "a module every Python process imports at start-up"
        if name in ("sitecustomize", "usercustomize"):
            return "start-up hook of every Python process"
        if top.endswith(".pth") and st is not None:
            return "a .pth file (it runs code or adds a directory to sys.path at start-up)"
        # importlib.metadata matches these folder names in any case (`X-1.0.DIST-INFO`).
        if rel.lower().endswith(("dist-info", "egg-info")) and st is not None and stat.S_ISLNK(st.st_mode):
            return "package metadata linked from elsewhere (its entry points would go unread)"
        if rel.lower().endswith(("dist-info/entry_points.txt", "egg-info/entry_points.txt")) and st is not None:
            head = _head(path)
            if head is None or len(head) >= READ_LIMIT:
                return "an entry_points.txt that is not a small regular file"
            if _declares_pytest_plugin(head):
                return "declares a pytest plugin"
        return ""
    perl = _PERL_SITE.match(rel)
    if perl and st is not None and _perl_core_module(perl.group(2), upper, lowers):
        return "a Perl module that shadows a core one"
    if _STDLIB.match(rel):
        return "the standard library (a new module there shadows site-packages)"
    base = os.path.basename(rel)
    if _is_landmark(base) and os.path.dirname(rel) in _LANDMARK_DIRS:
        return "a Python landmark that relocates the standard library"
    if st is not None and rel.startswith(SYSTEM_DIRS) and _GLIBC_MODULES.search(rel):
        return "a module glibc loads into every program (NSS, gconv)"
    if st is not None and _LIBRARY_TREE.match(rel) and not _existed(rel, lowers, before):
        # A copy of libtinfo.so.6 in glibc-hwcaps/x86-64-v2/ and `ldconfig`: every bash, the
        # verifier's included, loaded the agent's library first, which wrote the verdict. The
        # loader's cache goes by soname, so a file of another name (`ldconfig -X`) counts too.
        names = {base, elf.soname(str(path))} - {None}
        if any(_existed(d + n, lowers, before) for n in names for d in LIBRARY_DIRS if d + n != rel):
            return "a new library named like one the image has, where the loader may find it first"
    if base.split(".", 1)[0] in ("sitecustomize", "usercustomize") and rel.startswith(SYSTEM_DIRS):
        return "start-up hook of every Python process"
    if rel.startswith("etc/alternatives/") and st is not None and _an_image_program(path, upper, lowers, root):
        return ""  # `update-alternatives --set editor /usr/bin/vim.basic`: a program the image has
    if rel.startswith(SYSTEM_DIRS) and _existed(rel, lowers, before):
        return "a system file changed, replaced or removed"
    if rel in ("etc/passwd", "etc/group") and st is not None and _names_moved(rel, path, lowers):
        return "an id of the image named otherwise, or a name of the image given another id"
    if rel in ("usr/bin/git", "bin/git") and st is not None:
        return "a git of the agent's where the image has none: the verifier runs the system's git itself"
    if rel.startswith(PATH_DIRS) and st is not None:
        later = PATH_DIRS[PATH_DIRS.index(next(d for d in PATH_DIRS if rel.startswith(d))) + 1 :]
        if any(_existed(d + base, lowers, before) for d in later):
            return "a new program that shadows one later on PATH"
    return ""


# What the image runs at every Python start-up: its .pth files' import lines and sitecustomize.
_STARTUP_SOURCES = (
    "etc/python3*/sitecustomize.py",
    "usr/lib/python3*/*-packages/*.pth",
    "usr/local/lib/python3*/*-packages/*.pth",
)
_IMPORTED = re.compile(
    rb"\bimport\s+([A-Za-z_]\w*)|\bfrom\s+([A-Za-z_]\w*)[\w.]*\s+import\b|__import__\(\s*['\"]([A-Za-z_]\w*)"
)


@functools.lru_cache(maxsize=8)
def startup_imports(lowers: tuple[Path, ...]) -> frozenset[str]:
    """The top-level modules the image's start-up code imports (Debian's sitecustomize tries
    `apport_python_hook`, which it lacks; setuptools' .pth imports `_distutils_hack`): a module
    of that name the agent adds or changes in site-packages runs in every Python, the verifier's
    pytest included, whatever the tests import."""
    names: set[str] = set()
    for lower in lowers:
        for pattern in _STARTUP_SOURCES:
            for source in lower.glob(pattern):
                for match in _IMPORTED.finditer(_head(source) or b""):
                    names.add(next(g for g in match.groups() if g).decode())
    return frozenset(names) - {"os", "sys", "site"}


def _declares_pytest_plugin(head: bytes) -> bool:
    """Whether entry points hold a `pytest11` group as a plugin loader reads them: a line that
    starts with `[` and ends with `]` is a section, named by what `strip("[]")` leaves for
    importlib.metadata (so `[]pytest11]` is one) and by its inside, stripped, for pkg_resources
    (`[ pytest11 ]`)."""
    text = head.decode("utf-8", errors="replace")
    return any(
        line.startswith("[") and line.endswith("]") and "pytest11" in (line.strip("[]"), line[1:-1].strip())
        for line in (raw.strip() for raw in text.splitlines())
    )


def _an_image_program(link: Path, upper: Path, lowers: list[Path], root: str | None) -> bool:
    """Whether `link` (an alternative) points, by an absolute path, to a program the image has,
    registers as one of that alternative's choices, and the agent did not change or replace
    (nothing at that path in the writable layer). The
    path is resolved inside the container: on the host, the image's `/var/run -> /run` led to the
    host's own /run, and a file there passed for one of the image's."""
    try:
        target = os.readlink(link)
    except OSError:
        return False
    where = links.resolve(root, target) if root is not None and target.startswith("/") else None
    if where is None or where == "/" or links.head_inside(str(upper), where, 1)[0]:
        return False
    if not any(links.head_inside(str(lower), where, 1)[1] is not None for lower in lowers):
        return False
    # And one the image registers for this name: `/bin/false` is a program of the image too, and
    # as `which` it turned a `! which perl` check into a pass (a fourth red-team pass).
    registered = f"/var/lib/dpkg/alternatives/{link.name}"
    for lower in lowers:
        _, listing = links.head_inside(str(lower), registered, READ_LIMIT)
        # The links themselves (`/usr/bin/which`, which leads through the alternative just set)
        # come first, up to a blank line; the choices, with their priorities, after it.
        _, _, choices = (listing or b"").decode("utf-8", errors="replace").partition("\n\n")
        for line in choices.splitlines():
            if line.startswith("/") and root is not None and links.resolve(root, line) == where:
                return True
    return False


def _ids(text: bytes) -> tuple[dict[str, str], dict[str, str]]:
    """An /etc/passwd or /etc/group file's first name for each id (what `stat -c %U` and
    getpwuid print) and each name's id."""
    first: dict[str, str] = {}
    ids: dict[str, str] = {}
    for line in text.decode("utf-8", errors="replace").splitlines():
        fields = line.split(":")
        if len(fields) >= 3 and fields[0] and not line.startswith(("#", "+", "-")):
            first.setdefault(fields[2], fields[0])
            ids.setdefault(fields[0], fields[2])
    return first, ids


def _names_moved(rel: str, path: Path, lowers: list[Path]) -> bool:
    """Whether the changed /etc/passwd or /etc/group names an id of the image's otherwise, or
    gives a name of the image's another id: a second uid-0 line `nobody:x:0:0:...` ahead of
    root's made `stat -c %U` print nobody for a file left root's, and an ownership check pass (an
    eighth red-team pass). New users and groups with new ids are what `useradd` makes."""
    now = _head(path)
    if now is None or len(now) >= READ_LIMIT:
        return True
    image = next((h for lower in lowers if (h := links.head_inside(str(lower), "/" + rel, READ_LIMIT)[1])), None)
    if image is None:
        return False
    (was_first, was_ids), (first, ids) = _ids(image), _ids(now)
    return any(first.get(i, name) != name for i, name in was_first.items()) or any(
        ids.get(name, i) != i for name, i in was_ids.items()
    )


def _perl_core_module(module: str, upper: Path, lowers: list[Path]) -> bool:
    """Whether `module` (`strict.pm`, `Digest/SHA.pm`) is one of Perl's core modules here."""
    return any(any(layer.glob(f"{core}/{module}")) for layer in (upper, *lowers) for core in _PERL_CORE)


def _opaque(path: Path) -> bool:
    """An overlay directory that hides everything below it in the image: removed and remade."""
    for name in ("trusted.overlay.opaque", "user.overlay.opaque"):
        try:
            if os.getxattr(path, name, follow_symlinks=False) == b"y":
                return True
        except OSError:
            continue
    return False


def _head(path: Path) -> bytes | None:
    """Up to READ_LIMIT bytes of a regular file in the layer, or None for anything else (a link,
    which would be followed on the host; a FIFO, which would block the engine)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return os.read(fd, READ_LIMIT)
    except OSError:
        return None
    finally:
        os.close(fd)
