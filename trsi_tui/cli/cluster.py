"""`trsi-tui cluster`: the Ray cluster episodes run on (docs/cluster.md)."""

from __future__ import annotations

from dataclasses import asdict

import click

from engine.api import ClusterAccess, ClusterError, is_loopback
from trsi_tui.cli.common import cluster_option, engine_of, failure, new_table, out, write_json
from trsi_tui.cli.group import cli
from trsi_tui.render import cluster_line
from trsi_tui.safe_text import markup


@cli.group()
def cluster() -> None:
    """The Ray cluster that runs episodes when [cluster] engine = "ray" or --cluster is given."""


@cluster.command("status")
@cluster_option
@click.option("--json", "json_path", metavar="FILE", default=None, help="Write the nodes as JSON.")
@click.pass_context
def cluster_status(ctx: click.Context, cluster: str | None, json_path: str | None) -> None:
    """Each live node: its sandbox backends, free sandbox slots and loaded checkpoint.

    Slots and the checkpoint come from the node's rollout worker, which exists while a run uses
    the cluster; a node without one is probed for its backends. Then who can use the cluster:
    whether its head refuses a client without the token, and where it listens.
    """
    engine = engine_of(ctx, cluster)
    try:
        nodes = engine.cluster_status()
    except ClusterError as exc:
        raise failure(exc) from None
    access = engine.cluster_access()
    table = new_table(
        f"cluster at {engine.config.cluster.address}",
        "node",
        "host",
        "address",
        "cpus",
        "backends",
        "free slots",
        "checkpoint",
        "trsi-tui",
    )
    for n in nodes:
        w = n.worker
        table.add_row(
            n.node_id[:8] + (" (head)" if n.is_head else ""),
            n.hostname,
            n.address,
            str(n.cpus),
            ", ".join(n.backends) or (n.error or "none"),
            "-" if w is None else f"{w.slots - w.running}/{w.slots}",
            "-" if w is None or not w.checkpoint else w.checkpoint,
            n.version,
        )
    out.print(table)
    out.print(markup(cluster_line(nodes)))  # hostnames and backends come from other machines
    out.print(markup(access_line(access)))
    write_json(
        json_path,
        {"address": engine.config.cluster.address, "access": asdict(access), "nodes": [asdict(n) for n in nodes]},
    )


def access_line(access: ClusterAccess) -> str:
    """`auth: token (...) · head H listens on 127.0.0.1 (this machine only)`, and why auth is off
    or unknown."""
    auth = "token (a client without it is refused)" if access.auth == "token" else access.auth
    if access.detail:
        auth += f" ({access.detail})"
    where = access.listen
    if is_loopback(where):
        where += " (this machine only)"
    elif where == "all interfaces":
        where += " (anyone who reaches its ports; see docs/cluster.md)"
    return f"auth: {auth} · head {access.head} listens on {where}"
