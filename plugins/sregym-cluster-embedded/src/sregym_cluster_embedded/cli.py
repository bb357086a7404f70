"""Click commands: ``sregym cluster up|down|status|kubeconfig`` (and the daemon's ``serve``)."""

from __future__ import annotations

import json
import os
import sys

import click

from . import cluster as clusters
from .cluster import DEFAULT_NAME, DEFAULT_NODES


def _fail(exc: Exception) -> None:
    lines = [f"Error: {getattr(exc, 'message', str(exc))}"]
    lines += [f"  hint: {h}" for h in getattr(exc, "hints", ())]
    click.echo("\n".join(lines), err=True)
    sys.exit(1)


@click.group(name="cluster")
def cluster() -> None:
    """Manage embedded Kubernetes-compatible clusters."""


@cluster.command()
@click.option("--name", default=DEFAULT_NAME, show_default=True, help="Cluster name (the one `sregym run` uses by default).")
@click.option("--nodes", default=DEFAULT_NODES, show_default=True, type=int, help="Number of virtual nodes.")
@click.option("--node-cpu", default="4", show_default=True, help="Allocatable CPU per node.")
@click.option("--node-memory", default="8Gi", show_default=True, help="Allocatable memory per node.")
@click.option("--json", "as_json", is_flag=True, help="Print the cluster info as JSON.")
def up(name: str, nodes: int, node_cpu: str, node_memory: str, as_json: bool) -> None:
    """Start a cluster and wait until its API answers."""
    try:
        info = clusters.up(name, nodes, node_cpu=node_cpu, node_memory=node_memory)
    except Exception as exc:
        _fail(exc)
        return
    if as_json:
        click.echo(json.dumps(info.to_json(), indent=2))
    else:
        click.echo(f"cluster {name!r} is up at {info.url} (pid {info.pid})")
        click.echo(f"export KUBECONFIG={info.kubeconfig}")


@cluster.command()
@click.option("--name", default=DEFAULT_NAME, show_default=True, help="Cluster name (the one `sregym run` uses by default).")
@click.option("--forget", is_flag=True, help="Also release the cluster's address range.")
def down(name: str, forget: bool) -> None:
    """Stop a cluster and everything it runs."""
    try:
        was_running = clusters.down(name, forget=forget)
    except Exception as exc:
        _fail(exc)
        return
    click.echo(f"cluster {name!r} stopped" if was_running else f"cluster {name!r} was not running")


@cluster.command()
@click.option("--name", default=None, help="Cluster name (default: every known cluster).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def status(name: str | None, as_json: bool) -> None:
    """Show whether clusters are running (and their API answers); exit 3 if --name is not."""
    try:
        infos = [clusters.status(name)] if name else clusters.list_clusters()
    except Exception as exc:
        _fail(exc)
        return
    answering = {i.name: clusters.answers(i) for i in infos}
    if as_json:
        click.echo(json.dumps([{**i.to_json(), "answering": answering[i.name]} for i in infos], indent=2))
    elif not infos:
        click.echo("no clusters")
    else:
        _print_status(infos, answering)
    if name and not answering[name]:
        sys.exit(3)


def _print_status(infos: list[clusters.ClusterInfo], answering: dict[str, bool]) -> None:
    click.echo(f"{'NAME':<20} {'STATUS':<14} {'PID':<8} {'NODES':<6} URL")
    for i in infos:
        state = i.state if i.state != "running" or answering[i.name] else "not-answering"
        click.echo(f"{i.name:<20} {state:<14} {i.pid or '-'!s:<8} "
                   f"{i.nodes if i.nodes is not None else '-'!s:<6} {i.url or '-'}")
    for i in infos:
        if i.running and i.isolation_warning:
            click.echo(f"warning: cluster {i.name!r}: {i.isolation_warning}")


@cluster.command()
@click.option("--name", default=DEFAULT_NAME, show_default=True, help="Cluster name (the one `sregym run` uses by default).")
@click.option("--agent", is_flag=True, help="The restricted agent kubeconfig instead of the admin one.")
def kubeconfig(name: str, agent: bool) -> None:
    """Print the path of a cluster's kubeconfig."""
    try:
        click.echo(str(clusters.kubeconfig(name, agent=agent)))
    except Exception as exc:
        _fail(exc)


@cluster.command(hidden=True)
@click.option("--name", default=DEFAULT_NAME)
@click.option("--nodes", default=DEFAULT_NODES, type=int)
@click.option("--owner-pid", default=None, type=int)
@click.option("--ready-fd", default=None, type=int)
@click.option("--port", default=0, type=int)
@click.option("--node-cpu", default="4")
@click.option("--node-memory", default="8Gi")
def serve(name: str, nodes: int, owner_pid: int | None, ready_fd: int | None, port: int, node_cpu: str,
          node_memory: str) -> None:
    """Run a cluster in the foreground (what `up` starts in the background)."""
    from .daemon import run

    clusters._check_name(name)
    run(name, nodes, owner_pid=owner_pid, ready_fd=ready_fd, port=port, node_cpu=node_cpu,
        node_memory=node_memory)


def main(argv: list[str] | None = None) -> int:
    try:
        cluster.main(args=argv, prog_name="python -m sregym_cluster_embedded", standalone_mode=True)
    except SystemExit as exc:
        if isinstance(exc.code, str):
            click.echo(f"Error: {exc.code}", err=True)
            return 1
        return int(exc.code or 0)
    return 0


__all__ = ["cluster", "main", "os"]
