"""``sregym deploy APP``: deploy an app on a cluster and wait until it serves its workload."""

from __future__ import annotations

import asyncio
from pathlib import Path

import click

from ..errors import UsageError
from ._app import App
from ._engine import require_engine
from ._select import cluster_options, command_cluster


@click.command(name="deploy")
@click.argument("app_name")
@click.option("--workdir", type=click.Path(path_type=Path), default=Path("results/.work"), show_default=True)
@click.option("--observability/--no-observability", default=True, show_default=True,
              help="Also deploy the metrics/logs/traces stack.")
@cluster_options
@click.pass_obj
def command(app: App, app_name: str, workdir: Path, observability: bool, cluster_name: str, provider: str | None,
            keep_cluster: bool) -> None:
    """Deploy APP and wait until every pod is Ready and its workload succeeds."""
    require_engine("deploy")
    from ..conductor.environment import Environment

    apps = app.host.get_apps()
    if app_name not in apps:
        raise UsageError(f"unknown app {app_name!r}", hints=(f"installed apps: {', '.join(apps) or 'none'}",))
    with command_cluster(app.host, provider=provider, name=cluster_name, keep=keep_cluster) as cluster:
        env = Environment(host=app.host, cluster=cluster, workdir=workdir, with_observability=observability)

        async def go():
            await env.up()
            return await env.ensure_app(apps[app_name])

        deployed = asyncio.run(go())
        app.echo(f"{app_name} is ready in {deployed.deploy_seconds:.1f} s on cluster {cluster_name!r}")
        app.echo(f"admin kubeconfig: {cluster.kubeconfig()}")
        app.echo(f"agent kubeconfig: {deployed.agent_kubeconfig}")
