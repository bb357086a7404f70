"""``sregym list-apps``."""

from __future__ import annotations

import click

from ._app import App, render_table


@click.command(name="list-apps")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def list_apps(app: App, as_json: bool) -> None:
    """List installed applications and their components."""
    apps = app.host.get_apps()
    if as_json:
        app.echo_json([
            {"name": a.name, "summary": a.summary, "namespace": a.namespace,
             "components": [{"name": c.name, "kind": c.kind, "roles": list(c.roles), "ports": list(c.ports),
                             "pvcs": list(c.pvcs)} for c in a.components]}
            for a in apps.values()
        ])
        return
    rows = [[a.name, a.namespace, len(a.components), a.summary] for a in apps.values()]
    app.echo(render_table(["NAME", "NAMESPACE", "COMPONENTS", "SUMMARY"], rows))
