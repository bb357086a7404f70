"""``sregym list-faults``: the fault × target compatibility matrix."""

from __future__ import annotations

import attrs
import click

from ..compat import STAND_IN_REASON, build_matrix, render_markdown
from ..errors import UsageError
from ._app import App, render_table


@click.command(name="list-faults")
@click.option("--app", "app_name", help="Only this app's components.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option("--format", "fmt", type=click.Choice(["table", "markdown"]), default="table", show_default=True)
@click.option("--capabilities", help="Comma-separated cluster capabilities to filter by (default: no filter).")
@click.option("--all", "show_all", is_flag=True, help="Also list pairs that are not viable, with the reason.")
@click.pass_obj
def list_faults(app: App, app_name: str | None, as_json: bool, fmt: str, capabilities: str | None, show_all: bool) -> None:
    """Show which faults can target which app components.

    A pair is viable when the fault can take effect there. Test stand-ins (the noop fault) never
    are, though "sregym run" accepts them; --all also lists the pairs that are not viable, with the
    reason.
    """
    if app_name and app_name not in app.host.get_apps():
        raise UsageError(f"unknown app {app_name!r}", hints=(f"installed apps: {', '.join(app.host.get_apps()) or 'none'}",))
    caps = frozenset(c.strip() for c in capabilities.split(",")) if capabilities else None
    matrix = build_matrix(app.host, app=app_name, capabilities=caps)
    faults = app.host.get_faults()
    if as_json:
        counts = matrix.counts_by_fault()
        app.echo_json({
            "faults": [{"name": f.name, "layer": f.layer, "summary": f.summary, "selector": f.selector.describe(),
                        "capabilities": sorted(f.capabilities), "stand_in": f.stand_in,
                        "viable_targets": counts.get(f.name, 0)}
                       for f in faults.values()],
            "pairs": [attrs.asdict(c) for c in (matrix.cells if show_all else matrix.viable())],
            "counts_by_layer": matrix.counts_by_layer(),
            "total": matrix.total,
        })
        return
    if fmt == "markdown":
        app.echo(render_markdown(matrix))
        return
    rows = []
    for fault in faults.values():
        cells = [c for c in matrix.cells if c.fault == fault.name]
        targets = [f"{c.app}/{c.component}" for c in cells if c.viable]
        listed = ", ".join(targets) or (f"- ({STAND_IN_REASON})" if fault.stand_in else "-")
        rows.append([fault.name, fault.layer, len(targets), listed])
    app.echo(render_table(["FAULT", "LAYER", "TARGETS", "VIABLE (APP/COMPONENT)"], rows))
    app.echo()
    app.echo("viable pairs by layer: " + ", ".join(f"{k}={v}" for k, v in matrix.counts_by_layer().items()))
    app.echo(f"total viable pairs: {matrix.total}")
