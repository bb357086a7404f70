"""``sregym plugins``: what is installed."""

from __future__ import annotations

import attrs
import click

from ._app import App, render_table


@click.command(name="plugins")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def plugins_list(app: App, as_json: bool) -> None:
    """List plugins: name, distribution, version, status and hooks."""
    infos = app.host.plugin_infos()
    if as_json:
        app.echo_json([attrs.asdict(i) for i in infos])
        return
    rows = [[i.name, i.distribution, i.version, i.status, ", ".join(h.removeprefix("sregym_") for h in i.hooks)]
            for i in infos]
    app.echo(render_table(["NAME", "DISTRIBUTION", "VERSION", "STATUS", "HOOKS"], rows))
