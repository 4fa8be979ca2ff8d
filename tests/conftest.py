from __future__ import annotations

import importlib.util
import textwrap
from pathlib import Path
from types import ModuleType

import pytest

from engine.config import Config
from engine.store import Store

# The example task in the native layout, kept in the repository: a clone has nothing beside it.
EXAMPLE_TASK = Path(__file__).resolve().parent / "fixtures" / "tasks" / "count-lines"

CTRF_TEST = textwrap.dedent("""\
    #!/bin/bash
    mkdir -p /logs/verifier
    pass=0; total=0; items=""
    check() {
      total=$((total+1))
      if bash -c "$2" >/dev/null 2>&1; then st=passed; pass=$((pass+1)); else st=failed; fi
      items="$items{\\"name\\":\\"$1\\",\\"status\\":\\"$st\\"},"
    }
    %s
    printf '{"results":{"tests":[%%s]}}\\n' "${items%%,}" > /logs/verifier/ctrf.json
    """)


def docs_script(name: str) -> ModuleType:
    """A script of docs/ (`stage_plot`, `seed_table`, `export_run`), loaded as a module: docs/ is no package."""
    spec = importlib.util.spec_from_file_location(name, Path(__file__).resolve().parents[1] / "docs" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def ctrf_test(*checks: tuple[str, str]) -> str:
    body = "\n".join(f"check {name} '{cmd}'" for name, cmd in checks)
    return CTRF_TEST % body


def tiny_actor_critic(precision: str = "fp32", critic_layers: int = 0):
    """The bundled model's actor and critic with fresh adapters (LoRA rank 4), the reference the base;
    the critic's adapter on the top `critic_layers` layers (0: all)."""
    import torch

    from engine.policy.spec import resolve_hf_base
    from engine.rpr.actor_critic import ActorCritic
    from engine.training.loader import LoraShape

    base = resolve_hf_base("bundled:smollm2-135m")  # a first call converts the model, drawing random numbers
    torch.manual_seed(0)
    return ActorCritic.load(
        base,
        actor_adapter=None,
        critic_adapter=None,
        value_head=None,
        reference="base",
        reference_adapter=None,
        lora=LoraShape(4, 8),
        load_4bit=False,
        temperature=1.0,
        precision=precision,
        critic_layers=critic_layers,
    )


def write_task(
    root: Path,
    name: str,
    *,
    instruction: str = "Write hello to /app/out.txt.",
    setup: str | None = "mkdir -p /app",
    solve: str = "echo hello > /app/out.txt",
    test: str | None = None,
    toml: str = "[agent]\ntimeout_sec = 30\n[verifier]\ntimeout_sec = 20\n[environment]\nmemory_mb = 256\n",
) -> Path:
    """A task directory in the native layout; pass None to leave a part out."""
    d = root / name
    (d / "tests").mkdir(parents=True)
    (d / "solution").mkdir()
    (d / "environment").mkdir()
    if toml is not None:
        (d / "task.toml").write_text(toml)
    if instruction is not None:
        (d / "instruction.md").write_text(instruction)
    if setup is not None:
        (d / "environment" / "setup.sh").write_text("#!/bin/bash\nset -e\n" + setup + "\n")
    (d / "solution" / "solve.sh").write_text("#!/bin/bash\n" + solve + "\n")
    if test is None:
        test = ctrf_test(("out_exists", "test -f /app/out.txt"), ("out_is_hello", 'test "$(cat /app/out.txt)" = hello'))
    (d / "tests" / "test.sh").write_text(test)
    return d


@pytest.fixture
def config() -> Config:
    return Config()


@pytest.fixture
def store(tmp_path: Path) -> Store:
    s = Store(tmp_path / "trsi.db")
    yield s
    s.close()


@pytest.fixture(scope="session")
def _session_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("trsi-cache")


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, _session_cache: Path) -> None:
    # No test may touch the developer's real config, database or caches; the caches (a converted
    # bundled model, imported tasks) are shared within the session, since they only cost time.
    monkeypatch.setenv("TRSI_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("TRSI_CACHE_HOME", str(_session_cache))


def _docker_ready() -> str:
    """'' when a Docker engine and the base image are usable, else the reason."""
    try:
        from sandboxes.docker_images import BASE_IMAGE, image_exists

        if not image_exists(BASE_IMAGE):
            return f"{BASE_IMAGE} is missing: run `trsi-tui sandbox build-base`"
    except Exception as exc:  # noqa: BLE001
        return str(exc).splitlines()[0]
    return ""


def pytest_collection_modifyitems(config, items):
    docker_items = [i for i in items if "docker" in i.keywords]
    if not docker_items:
        return
    reason = _docker_ready()
    if not reason:
        return
    import os

    if os.environ.get("CI"):
        return  # in CI they run (and fail loudly): .ci/run starts the engine and builds the image
    for item in docker_items:
        item.add_marker(pytest.mark.skip(reason=f"docker tests need an engine: {reason}"))
