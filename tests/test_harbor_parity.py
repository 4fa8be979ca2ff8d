"""Docker sandboxes behave as Harbor's do where real tasks rely on it (tests/fixtures/harbor-parity).

Each fixture is a small task in the Harbor layout that failed on the Docker backend before the
behaviour it names was fixed: Docker's default capabilities, the image's ENV and WORKDIR, a
non-root USER, the verifier's Python imports, build failures, and the python flavour.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from engine.config import Config, parse_config
from engine.rollout.agents import NopAgent, OracleAgent
from engine.rollout.episode import run_episode
from engine.tasks import load_task
from sandboxes.docker_images import BASE_IMAGE, LABEL, PYTHON_IMAGE, client, image_exists, trust_ca_bundle
from trsi_tui.cli import cli

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "harbor-parity"
DOCKER_TOML = (
    '[sandbox]\nbackend = "docker"\n[sandbox.docker.aliases]\n'
    f'"ubuntu:24.04" = "{BASE_IMAGE}"\n"python:3.12-slim" = "{PYTHON_IMAGE}"\n'
)
DOCKER = parse_config(DOCKER_TOML)


def oracle(name: str, backend: str = "docker"):
    config = DOCKER if backend == "docker" else Config()
    return run_episode(load_task(FIXTURES / name), OracleAgent(), config=config, backend=backend)


def checks(result) -> dict[str, str]:
    return {c.name: c.status for c in result.checks}


@pytest.mark.docker
@pytest.mark.parametrize("name", ["default-capabilities", "image-environment", "non-root-user", "python-slim"])
def test_fixture_oracle_passes_every_check_and_nop_does_not(name: str):
    if name == "python-slim" and not os.environ.get("CI") and not image_exists(PYTHON_IMAGE):
        pytest.skip(f"{PYTHON_IMAGE} is missing: run `trsi-tui sandbox build-base --flavour python`")
    r = oracle(name)
    assert r.success, (r.error, checks(r), r.verifier_output)
    nop = run_episode(load_task(FIXTURES / name), NopAgent(), config=DOCKER, backend="docker")
    assert nop.scored and not nop.success


@pytest.mark.docker
def test_apt_get_and_a_verifier_that_drops_to_nobody_work_with_default_capabilities():
    r = oracle("default-capabilities")
    assert checks(r) == {
        "package_installed": "passed",
        "owned_by_nobody": "passed",
        "verifier_drops_to_nobody": "passed",
    }, r.verifier_output
    (step,) = r.steps
    assert "setgroups" not in step.output and "seteuid" not in step.output


@pytest.mark.parametrize("backend", ["local", pytest.param("docker", marks=pytest.mark.docker)])
def test_the_verifiers_python_imports_the_tasks_modules_as_the_agents_does(backend: str):
    r = oracle("verifier-imports", backend)
    assert r.success and checks(r) == {
        "script_imports_its_neighbour": "passed",
        "import_from_working_directory": "passed",
        "pytest_from_app": "passed",
    }, r.verifier_output


CAUSE = "certificate verify failed (the real cause)"


@pytest.mark.docker
def test_a_failed_build_says_why_is_remembered_and_leaves_no_container(tmp_path: Path, monkeypatch):
    from docker.models.images import ImageCollection

    builds: list[str] = []
    real_build = ImageCollection.build
    monkeypatch.setattr(ImageCollection, "build", lambda self, **kw: builds.append(kw["tag"]) or real_build(self, **kw))
    before = {c.id for c in client().containers.list(all=True)}
    first = oracle("build-fails")
    assert first.status == "infra_error"
    assert CAUSE in first.error  # the build log's tail, not just "returned a non-zero code: 3"
    assert "step one is fine" in first.error and "\x1b" not in first.error
    assert "sandbox rebuild" in first.error
    assert {c.id for c in client().containers.list(all=True)} <= before  # forcerm: nothing left behind
    second = oracle("build-fails")
    assert second.status == "infra_error" and CAUSE in second.error and "remembered" in second.error
    assert len(builds) == 1  # the second episode did not build again
    # The user asks for a rebuild: it is tried again (and fails again, saying why).
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    (home / "config.toml").write_text(DOCKER_TOML)
    result = CliRunner().invoke(cli, ["--home", str(home), "sandbox", "rebuild", str(FIXTURES / "build-fails")])
    assert result.exit_code == 1 and CAUSE in result.output
    assert len(builds) == 2


@pytest.mark.docker
def test_cleanup_removes_containers_left_by_builds():
    leftover = client().containers.create(BASE_IMAGE, ["true"], labels={LABEL: "task-build"}, network_mode="none")
    result = CliRunner().invoke(cli, ["sandbox", "cleanup"])
    assert result.exit_code == 0, result.output
    assert "left by image builds" in result.output
    assert not client().containers.list(all=True, filters={"id": leftover.id})


@pytest.mark.docker
def test_a_ca_bundle_is_trusted_inside_the_image(tmp_path: Path):
    key, crt = tmp_path / "ca.key", tmp_path / "ca.crt"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=trsi-test-proxy-ca",
            "-keyout",
            str(key),
            "-out",
            str(crt),
        ],
        check=True,
        capture_output=True,
    )
    tag = "trsi-tui/test-ca:latest"
    try:
        trust_ca_bundle(BASE_IMAGE, crt.read_bytes(), tag)
        out = (
            client()
            .containers.run(
                tag,
                [
                    "/bin/sh",
                    "-c",
                    "echo $PIP_CERT; openssl x509 -noout -subject "
                    "-in /usr/local/share/ca-certificates/trsi-extra-ca.crt 2>/dev/null || "
                    "grep -c BEGIN /etc/ssl/certs/ca-certificates.crt",
                ],
                network_mode="none",
                remove=True,
            )
            .decode()
        )
        assert out.splitlines()[0] == "/etc/ssl/certs/ca-certificates.crt"
        body = "".join(crt.read_text().splitlines()[1:-1])[:60]
        store = (
            client()
            .containers.run(tag, ["cat", "/etc/ssl/certs/ca-certificates.crt"], network_mode="none", remove=True)
            .decode()
        )
        assert body in store.replace("\n", "")
    finally:
        client().images.remove(tag, force=True)


def test_a_bad_ca_bundle_is_a_clear_error(tmp_path: Path):
    bad = tmp_path / "not-a-cert.pem"
    bad.write_text("hello\n")
    result = CliRunner().invoke(
        cli, ["sandbox", "build-base", "--flavour", "python", "--ca-bundle", str(bad), "--force"]
    )
    assert result.exit_code == 1 and "holds no PEM certificate" in result.output


@pytest.mark.docker
def test_a_base_image_that_would_have_to_be_pulled_is_refused_before_building(tmp_path: Path):
    task = tmp_path / "unaliased"
    (task / "environment").mkdir(parents=True)
    (task / "environment" / "Dockerfile").write_text("FROM example.org/nothing:1 AS build\nFROM build\n")
    from sandboxes import SandboxError
    from sandboxes.docker_images import build_task_image

    with pytest.raises(SandboxError, match="'example.org/nothing:1' is not available locally.*add an alias"):
        build_task_image(task / "environment", {})
