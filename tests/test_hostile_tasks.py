"""Task folders are hostile: they touch nothing outside themselves, ask for no absurd limits, and
their text reaches no terminal raw (tasks list, import, eval errors, the log file)."""

from __future__ import annotations

import logging
import os
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from engine.config.logs import SafeFormatter
from engine.tasks import load_suite, load_task
from engine.tasks.importer import TaskImportError, convert_classic, import_tasks
from engine.tasks.task import TaskLoadError
from engine.text import escaped
from sandboxes import SandboxError, docker_images
from tests.conftest import write_task
from trsi_tui.cli import cli

HOSTILE = "\x1b]0;pwned\x07\x1b[2J"


def _snapshot(root: Path) -> dict[str, tuple[str, bytes | str]]:
    """Every entry under `root` (links as their target's name), to prove a folder is unchanged."""
    entries: dict[str, tuple[str, bytes | str]] = {}
    for directory, dirs, files in os.walk(root):
        for name in dirs + files:
            p = Path(directory) / name
            rel = str(p.relative_to(root))
            if p.is_symlink():
                entries[rel] = ("link", os.readlink(p))
            elif p.is_file():
                entries[rel] = ("file", p.read_bytes())
            else:
                entries[rel] = ("dir", "")
    return entries


def _classic(root: Path, name: str = "classic", compose: str | None = None) -> Path:
    src = root / name
    (src / "tests").mkdir(parents=True)
    (src / "task.yaml").write_text("instruction: do it\n")
    (src / "Dockerfile").write_text("FROM ubuntu:24.04\n")
    (src / "solution.sh").write_text("true\n")
    (src / "tests" / "test_outputs.py").write_text("def test_ok():\n    pass\n")
    if compose is not None:
        (src / "docker-compose.yaml").write_text(compose)
    return src


@pytest.fixture
def host(tmp_path: Path) -> Path:
    """A folder outside every task, standing for the user's files."""
    d = tmp_path / "host"
    d.mkdir()
    (d / "Dockerfile").write_text("FROM host-secret\n")
    (d / "secret.txt").write_text("host secret\n")
    return d


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRSI_CACHE_HOME", str(tmp_path / "cache"))  # converted tasks land here


# -- build context and Dockerfile outside the task -----------------------------------------------
@pytest.mark.parametrize(
    "build",
    [
        "{context: ., dockerfile: HOST/Dockerfile}",  # absolute
        "{context: ., dockerfile: ../host/Dockerfile}",  # ..
        "{context: ../host}",
        "HOST",  # the short form, absolute
        "{context: linked}",  # a link inside the task that resolves outside
    ],
)
def test_classic_build_outside_the_task_is_refused_and_moves_nothing(tmp_path: Path, host: Path, build: str):
    suite = tmp_path / "suite"
    src = _classic(suite, compose="services:\n  client:\n    build: " + build.replace("HOST", str(host)) + "\n")
    if "linked" in build:
        (src / "linked").symlink_to(host)
    before_host, before_src = _snapshot(host), _snapshot(src)

    loaded = load_suite(suite)  # what `tasks list` and eval do
    assert loaded.tasks == []
    reason = loaded.errors[0].reason
    refused = "points outside|not a relative path|linked is a symbolic link"
    assert re.search(refused, reason), reason
    with pytest.raises(TaskImportError, match=refused):
        convert_classic(src, tmp_path / "out")
    assert _snapshot(host) == before_host and (host / "Dockerfile").is_file()
    assert _snapshot(src) == before_src
    cache = tmp_path / "cache" / "imported"
    assert not cache.exists() or not any(p.is_file() for p in cache.rglob("*"))  # nothing left half-converted


def test_a_named_dockerfile_is_copied_and_the_source_is_never_changed(tmp_path: Path):
    src = _classic(
        tmp_path / "suite", compose="services:\n  client:\n    build: {context: ., dockerfile: Dockerfile.prod}\n"
    )
    (src / "Dockerfile.prod").write_text("FROM python:3.13-slim\n")
    before = _snapshot(src)
    task = load_task(src)
    assert (task.environment_dir / "Dockerfile").read_text() == "FROM python:3.13-slim\n"
    assert not (task.environment_dir / "Dockerfile.prod").exists()
    assert _snapshot(src) == before


def test_classic_task_text_and_timeouts_are_converted_or_refused_not_crashed(tmp_path: Path):
    src = _classic(tmp_path / "suite")
    (src / "task.yaml").write_text('instruction: do it\ncategory: "x\\e[2J"\nmax_agent_timeout_sec: 1000000000\n')
    other = _classic(tmp_path / "suite", "soon")
    (other / "task.yaml").write_text("instruction: do it\nmax_agent_timeout_sec: soon\n")
    loaded = load_suite(tmp_path / "suite")
    reasons = {e.path.name: e.reason for e in loaded.errors}
    assert loaded.tasks == [] and len(reasons) == 2
    # The ESC in the category converted to valid TOML; the timeout is refused when it loads.
    assert "[agent] timeout_sec must be at most 86400" in reasons["classic"]
    assert "max_agent_timeout_sec must be a number" in reasons["soon"]


# -- symbolic links out of a task ------------------------------------------------------------------
def test_import_refuses_a_link_out_of_environment_and_names_it(tmp_path: Path, host: Path):
    src = write_task(tmp_path / "src", "leaky")
    (src / "environment" / "creds").symlink_to(host / "secret.txt")
    done, errors = import_tasks(tmp_path / "src", tmp_path / "dest")
    assert done == [] and len(errors) == 1
    assert "environment/creds is a symbolic link" in errors[0][1]
    assert not (tmp_path / "dest" / "leaky").exists()


def test_a_linked_task_subfolder_is_never_followed(tmp_path: Path, host: Path):
    src = tmp_path / "src" / "linked-tests"
    write_task(tmp_path / "src", "linked-tests")
    os.rename(src / "tests", host / "tests")
    (src / "tests").symlink_to(host / "tests")  # `tests -> /etc`, in small
    with pytest.raises(TaskLoadError, match="linked-tests/tests is a symbolic link"):
        load_task(src)
    done, errors = import_tasks(src, tmp_path / "dest")
    assert done == [] and "tests is a symbolic link" in errors[0][1]
    r = CliRunner().invoke(cli, ["--home", str(tmp_path), "tasks", "list", str(tmp_path / "src")], obj={})
    assert r.exit_code == 1 and "symbolic link" in r.output


def test_links_that_stay_inside_are_kept_as_links(tmp_path: Path):
    src = write_task(tmp_path / "src", "internal")
    (src / "environment" / "data.txt").write_text("data\n")
    (src / "environment" / "alias.txt").symlink_to("data.txt")
    done, errors = import_tasks(src, tmp_path / "dest")
    assert errors == [] and len(done) == 1
    copied = tmp_path / "dest" / "internal" / "environment" / "alias.txt"
    assert copied.is_symlink() and os.readlink(copied) == "data.txt"
    assert load_task(tmp_path / "dest" / "internal").name == "internal"


def test_a_classic_task_with_a_link_to_a_host_file_is_refused(tmp_path: Path, host: Path):
    src = _classic(tmp_path / "suite")
    (src / "notes.txt").symlink_to(host / "secret.txt")
    loaded = load_suite(tmp_path / "suite")
    assert loaded.tasks == [] and "notes.txt is a symbolic link" in loaded.errors[0].reason
    assert not any((tmp_path / "cache").rglob("notes.txt"))


def test_a_suite_does_not_follow_linked_folders(tmp_path: Path, host: Path):
    write_task(host, "elsewhere")
    write_task(tmp_path / "suite", "here")
    (tmp_path / "suite" / "there").symlink_to(host)
    loaded = load_suite(tmp_path / "suite")
    assert [t.name for t in loaded.tasks] == ["here"]
    assert "symbolic link" in loaded.errors[0].reason


def test_the_build_context_is_never_read_through_a_link(tmp_path: Path, host: Path, monkeypatch: pytest.MonkeyPatch):
    context = tmp_path / "task" / "environment"
    context.mkdir(parents=True)
    (context / "Dockerfile").write_text("FROM trsi-tui/base:bookworm\n")
    (context / "creds").symlink_to(host / "secret.txt")
    first = docker_images.context_hash(context, {})
    (host / "secret.txt").write_text("changed\n")
    assert docker_images.context_hash(context, {}) == first  # the link's name counts, not the host file

    def no_engine():
        raise AssertionError("a refused context must not reach the Docker engine")

    monkeypatch.setattr(docker_images, "client", no_engine)
    with pytest.raises(SandboxError, match="creds.*outside the build context"):
        docker_images.build_task_image(context, {})


# -- limits ----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("toml", "field"),
    [
        ("[environment]\nmemory_mb = -1\n", "memory_mb"),
        ("[environment]\nmemory_mb = 0\n", "memory_mb"),
        ("[environment]\nmemory = '0.5k'\n", "memory"),
        ("[environment]\nmemory_mb = inf\n", "memory_mb"),
        ("[environment]\nstorage_mb = 0\n", "storage_mb"),
        ("[environment]\nstorage_mb = -20\n", "storage_mb"),
        ("[environment]\ncpus = 0\n", "cpus"),
        ("[environment]\ncpus = -2\n", "cpus"),
        (f"[environment]\ncpus = {(os.cpu_count() or 1) + 1}\n", "cpus"),
        ("[environment]\ncpus = nan\n", "cpus"),
        ("[environment]\ncpus = 1e-10\n", "cpus"),  # Docker's nano-CPUs round to 0: no limit at all
        ("[agent]\ntimeout_sec = 0\n", "timeout_sec"),
        ("[agent]\ntimeout_sec = 86401\n", "timeout_sec"),
        ("[verifier]\ntimeout_sec = -5\n", "timeout_sec"),
        ("[verifier]\ntimeout_sec = nan\n", "timeout_sec"),
    ],
)
def test_out_of_range_limits_are_errors_naming_the_field(tmp_path: Path, toml: str, field: str):
    write_task(tmp_path, "limits", toml=toml)
    loaded = load_suite(tmp_path)
    assert loaded.tasks == []
    assert field in loaded.errors[0].reason and "task.toml" in loaded.errors[0].reason


def test_limits_in_range_still_load(tmp_path: Path):
    toml = "[agent]\ntimeout_sec = 86400\n[environment]\ncpus = 1\nmemory = '1G'\nstorage_mb = 1\n"
    task = load_task(write_task(tmp_path, "fine", toml=toml))
    assert task.agent_timeout_sec == 86400 and task.environment.memory_mb == 1024


# -- untrusted text in every output ----------------------------------------------------------------
def test_tasks_list_prints_no_escape_sequence_from_a_task(tmp_path: Path):
    suite = tmp_path / "suite"
    write_task(
        suite,
        f"evil{HOSTILE}name",
        instruction=f"Do it{HOSTILE} [bold red]now[/]\n",
        toml='[metadata]\ncategory = "x\\u001b]0;pwned\\u0007"\n[agent]\ntimeout_sec = 30\n',
    )
    write_task(suite, f"broken{HOSTILE}", instruction=None)
    r = CliRunner().invoke(cli, ["--home", str(tmp_path), "tasks", "list", str(suite)], obj={})
    assert r.exit_code == 1, r.output
    assert "\x1b" not in r.output and "\x07" not in r.output
    assert "evilname" in r.output and "missing instruction.md" in r.output
    assert "[bold red]now[/]" in r.output  # task text is never read as Rich markup


def test_import_and_eval_errors_print_no_escape_sequence(tmp_path: Path, host: Path):
    src = tmp_path / "src"
    task = write_task(src, f"leak{HOSTILE}")
    (task / "environment" / "creds").symlink_to(host / "secret.txt")
    r = CliRunner().invoke(cli, ["--home", str(tmp_path), "tasks", "import", str(src), str(tmp_path / "d")], obj={})
    assert r.exit_code == 1 and "not imported" in r.output and "\x1b" not in r.output
    write_task(tmp_path / "ok", "ok")
    r = CliRunner().invoke(
        cli,
        ["--home", str(tmp_path), "eval", "--tasks", str(tmp_path / "ok"), "--agent", "nop", "--task", HOSTILE + "x"],
        obj={},
    )
    assert r.exit_code == 1 and "unknown task" in r.output and "\x1b" not in r.output


def test_the_log_file_shows_control_characters_instead_of_running_them():
    record = logging.LogRecord("engine", logging.WARNING, __file__, 1, "task %s said %s", ("t\x1b[2J", "\x9b1m"), None)
    line = SafeFormatter("%(message)s").format(record)
    assert line == "task t\\x1b[2J said \\x9b1m"
    assert escaped("a\tb\nc\rd\x07") == "a\tb\nc\\x0dd\\x07"


# -- folders that would crash the loader or fill the engine's memory --------------------------------
@pytest.fixture
def deep_folders():
    """Makes a chain of `depth` nested folders `a/a/...`; removes it afterwards, deepest first
    (pytest's own clean-up of its temporary folders recurses, and would fail on it)."""
    made: list[Path] = []

    def make(root: Path, depth: int) -> None:
        path = root
        for _ in range(depth):
            path = path / "a"
            path.mkdir()
            made.append(path)

    yield make
    for path in reversed(made):
        path.rmdir()


@pytest.mark.parametrize(
    "plant",
    [
        "toml-arrays",  # tomllib recursed until RecursionError, and the whole suite failed to load
        "deep-folders",  # so did the walk of the task's files
        "sparse-file",  # 36 KB on disk, read whole into memory for the upload (2 GB of RSS)
    ],
)
def test_a_hostile_task_folder_is_one_error_and_the_suite_loads(tmp_path: Path, plant: str, deep_folders):
    write_task(tmp_path, "good")
    bad = write_task(tmp_path, "bad")
    if plant == "toml-arrays":
        (bad / "task.toml").write_text("[metadata]\nx = " + "[" * 5000 + "]" * 5000 + "\n")
    elif plant == "deep-folders":
        deep_folders(bad / "environment", 1100)
    else:
        with open(bad / "environment" / "data.bin", "wb") as f:
            f.truncate(2 << 30)
    suite = load_suite(tmp_path)
    assert [t.name for t in suite.tasks] == ["good"]
    assert [e.path.name for e in suite.errors] == ["bad"], suite.errors


def test_a_suite_nested_without_end_is_searched_to_a_limit(tmp_path: Path, deep_folders):
    write_task(tmp_path, "good")
    deep_folders(tmp_path, 1100)
    suite = load_suite(tmp_path)
    assert [t.name for t in suite.tasks] == ["good"]
    assert len(suite.errors) == 1 and "not searched" in suite.errors[0].reason


@pytest.mark.parametrize("text", ['instruction: "Say hi \\uD800"\n', "instruction: " + "[" * 3000 + "]" * 3000 + "\n"])
def test_a_classic_task_yaml_that_cannot_be_converted_is_an_error_and_leaves_nothing(tmp_path: Path, text: str):
    src = _classic(tmp_path / "src")
    (src / "task.yaml").write_text(text)
    ok = write_task(tmp_path / "src", "ok")
    done, errors = import_tasks(tmp_path / "src", tmp_path / "dest")
    assert [d.name for d in done] == ["ok"] and [e[0] for e in errors] == [src]
    assert sorted(p.name for p in (tmp_path / "dest").iterdir()) == ["ok"]
    assert load_suite(tmp_path / "src").errors[0].path == src
    assert ok.is_dir()


# -- the network is the user's to give ------------------------------------------------------------
def test_a_task_cannot_give_itself_the_network(tmp_path: Path):
    from engine.config import Config
    from engine.rollout.agents import OracleAgent
    from engine.rollout.episode import run_episode

    task = load_task(write_task(tmp_path, "wants-net", toml="[environment]\nallow_internet = true\n"))
    r = run_episode(task, OracleAgent(), config=Config(), backend="local")
    assert r.status == "infra_error" and "[sandbox] allow_internet = true" in r.error


@pytest.mark.docker
def test_a_task_dockerfile_does_not_reach_the_hosts_own_services(tmp_path: Path):
    """A build had the host's network: a RUN step read a service bound to the host's 127.0.0.1."""
    import socket
    import threading

    from engine.config import parse_config
    from engine.rollout.agents import OracleAgent
    from engine.rollout.episode import run_episode

    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    reached: list[bool] = []

    def serve() -> None:
        server.settimeout(60)
        try:
            conn, _ = server.accept()
            reached.append(True)
            conn.sendall(b"host-only-secret\n")
            conn.close()
        except OSError:
            pass

    threading.Thread(target=serve, daemon=True).start()
    d = write_task(tmp_path, "reach-host", solve="cat /loot > /app/out.txt")
    (d / "environment" / "Dockerfile").write_text(
        "FROM trsi-tui/base:bookworm\n"
        f"RUN python3 -c \"import socket; s = socket.create_connection(('127.0.0.1', {port})); "
        "open('/loot', 'wb').write(s.recv(100))\"\n"
    )
    config = parse_config('[sandbox]\nbackend = "docker"\n')
    try:
        r = run_episode(load_task(d), OracleAgent(), config=config, backend="docker")
    finally:
        server.close()
    assert not reached and not r.success
    assert r.status == "infra_error" and "allow_internet" in r.error, (r.status, r.error)


def test_emoji_codes_and_bidirectional_controls_in_a_name_print_as_text(tmp_path: Path):
    """Rich turned `:skull:` into a glyph, and U+202E reached the terminal, which then showed
    the rest of the line reversed (a name could pass for another)."""
    suite = tmp_path / "suite"
    write_task(suite, "a:skull:b\u202egnp.exe")
    r = CliRunner().invoke(cli, ["--home", str(tmp_path), "eval", "--tasks", str(suite), "--agent", "nop"], obj={})
    assert ":skull:" in r.output and "\U0001f480" not in r.output and "\u202e" not in r.output, r.output


def test_a_suite_path_that_is_not_utf8_is_evaluated(tmp_path: Path):
    """Its path could not be stored: `'utf-8' codec can't encode`, and no episode ran."""
    suite = tmp_path / os.fsdecode(b"suite\xff")
    write_task(suite, "fine")
    r = CliRunner().invoke(cli, ["--home", str(tmp_path), "eval", "--tasks", str(suite), "--agent", "oracle"], obj={})
    assert "codec" not in r.output and "1/1" in r.output, r.output


UPLOAD_RSS = """
import resource, sys
sys.path.insert(0, sys.argv[1])
from pathlib import Path
from engine.config import Config
from engine.rollout.agents import OracleAgent
from engine.rollout.episode import run_episode
from engine.tasks import load_task
from tests.conftest import write_task
root = Path(sys.argv[2])
d = write_task(root, "big-data", setup="test -f /run/trsi/environment/data.bin",
               toml="[environment]\\nmemory_mb = 1024\\nstorage_mb = 1024\\n")
with open(d / "environment" / "data.bin", "wb") as f:
    f.truncate(300 << 20)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
r = run_episode(load_task(d), OracleAgent(), config=Config(), backend="local")
print(r.status, r.success, (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) // 1024)
"""


@pytest.mark.slow
def test_a_tasks_files_are_uploaded_without_holding_them_in_memory(tmp_path: Path):
    """A 300 MB sparse file in environment/ (no disk in the task) was packed into memory whole,
    twice: the engine's memory grew by the file's size for every episode at once."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parent.parent
    out = subprocess.run(
        [sys.executable, "-c", UPLOAD_RSS, str(root), str(tmp_path)], capture_output=True, text=True, timeout=300
    )
    status, success, grown_mb = out.stdout.split()[-3:]
    assert status == "completed" and success == "True", out.stdout + out.stderr
    assert int(grown_mb) < 100, f"the engine grew by {grown_mb} MB"
