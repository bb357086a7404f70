"""``sregym list-problems``."""

from __future__ import annotations

import click

from ..problems import problem_to_dict
from ._app import App, render_table


@click.command(name="list-problems")
@click.option("--suite", help="Only problems in this suite (e.g. lite).")
@click.option("--app", "app_name", help="Only this app's problems.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def list_problems(app: App, suite: str | None, app_name: str | None, as_json: bool) -> None:
    """List curated problems."""
    problems = [p for p in app.host.get_problems().values()
                if (suite is None or suite in p.suites or suite in p.tags) and (app_name is None or p.app == app_name)]
    if as_json:
        app.echo_json([problem_to_dict(p) for p in problems])
        return
    rows = [[p.id, p.app, p.layer, p.failure_mode, p.difficulty, ",".join(p.tags), p.summary] for p in problems]
    app.echo(render_table(["ID", "APP", "LAYER", "MODE", "DIFFICULTY", "TAGS", "SUMMARY"], rows))
    app.echo(f"\n{len(problems)} problem(s)")
