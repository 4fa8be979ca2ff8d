"""`trsi-tui sandbox`: Docker base images, failed task builds, cleanup."""

from __future__ import annotations

import subprocess
from pathlib import Path

import click

from engine.api import resolve_paths
from sandboxes import SandboxError
from trsi_tui.cli.common import engine_of, err, failure, out
from trsi_tui.cli.group import cli
from trsi_tui.safe_text import markup


# -- sandbox ----------------------------------------------------------------------------------
@cli.group()
def sandbox() -> None:
    """Sandbox backends: build the Docker base images, rebuild failed task images, clean up."""


@sandbox.command("build-base")
@click.option("--mirror", default="http://deb.debian.org/debian", show_default=True, help="Debian mirror.")
@click.option(
    "--flavour",
    type=click.Choice(["base", "python"]),
    default="base",
    show_default=True,
    help="base: trsi-tui/base:bookworm (the default image). python: trsi-tui/python:bookworm, "
    "with pip, venv, `python` and `pip` on PATH; an alias target for python:3.x-slim.",
)
@click.option(
    "--ca-bundle",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="PEM file of extra certificate authorities to trust inside the image (a proxy that "
    "re-signs TLS); pip, requests, curl and OpenSSL are pointed at the combined store.",
)
@click.option("--force", is_flag=True, help="Rebuild even if the image exists.")
def sandbox_build_base(mirror: str, flavour: str, ca_bundle: Path | None, force: bool) -> None:
    """Build a Docker base image offline: debootstrap Debian, then `docker import`.

    Tasks without an environment/Dockerfile run in the base flavour on the docker backend; map
    image names that cannot be pulled to either flavour under [sandbox.docker.aliases]. Needs
    root, debootstrap, a running Docker engine and a reachable Debian mirror (about a minute).
    """
    from sandboxes.docker_images import FLAVOURS, build_base_image, image_exists, read_ca_bundle

    image = FLAVOURS[flavour].image
    try:
        if ca_bundle is not None:
            read_ca_bundle(ca_bundle)  # a bad file is an error before minutes of debootstrap
        if image_exists(image) and not force:
            out.print(f"{image} already exists (use --force to rebuild)")
            return
        out.print(f"built {build_base_image(mirror, log=err.print, flavour=flavour, ca_bundle=ca_bundle)}")
    except (SandboxError, OSError, subprocess.CalledProcessError) as exc:
        raise failure(exc) from None


@sandbox.command("rebuild")
@click.argument("tasks", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.pass_context
def sandbox_rebuild(ctx: click.Context, tasks: tuple[Path, ...]) -> None:
    """Forget a failed image build of each TASK and build its environment/Dockerfile again now.

    A failed build is remembered for the task's build context, so later episodes fail at once
    with the build log instead of rebuilding; this is how to try again (after fixing a mirror,
    a proxy or the Dockerfile itself: a changed Dockerfile is rebuilt anyway).
    """
    from sandboxes.docker_images import build_task_image, forget_build_failure

    sandbox = engine_of(ctx).config.sandbox
    aliases = sandbox.docker.aliases
    failures = resolve_paths(ctx.find_root().obj.get("home")).build_failures_dir
    failed = 0
    for task in tasks:
        context = task / "environment"
        if not (context / "Dockerfile").is_file():
            err.print(f"{markup(str(task))}: no environment/Dockerfile (it runs in the base image)")
            continue
        forget_build_failure(context, aliases, failures)
        try:
            built = build_task_image(context, aliases, failures, network=sandbox.allow_internet)
            out.print(f"{markup(str(task))}: built {built}")
        except SandboxError as exc:
            failed += 1
            err.print(f"{markup(str(task))}: {markup(str(exc))}")
    if failed:
        raise SystemExit(1)


@sandbox.command("cleanup")
def sandbox_cleanup() -> None:
    """Remove Docker sandbox containers left behind by a process that died, and containers left
    by failed or killed task-image builds."""
    from sandboxes.docker_images import remove_build_leftovers
    from sandboxes.docker_sandbox import remove_orphans

    try:
        out.print(f"removed {remove_orphans()} orphaned containers and {remove_build_leftovers()} left by image builds")
    except SandboxError as exc:
        raise failure(exc) from None
