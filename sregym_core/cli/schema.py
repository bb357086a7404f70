"""``sregym schema NAME``: print a JSON Schema (core documents, or a plugin's fault params)."""

from __future__ import annotations

import click

from ..errors import UsageError
from ..validation import load_schema, schema_names
from ._app import App


@click.command(name="schema")
@click.argument("name", required=False)
@click.pass_obj
def schema_show(app: App, name: str | None) -> None:
    """Print the JSON Schema NAME (problem, app, fault-params, result, or fault/<fault-name>).

    Without NAME, list the available schemas.
    """
    if name is None:
        for known in schema_names():
            app.echo(known)
        for fault in app.host.get_faults():
            app.echo(f"fault/{fault}")
        return
    if name.startswith("fault/"):
        fault = app.host.get_faults().get(name.split("/", 1)[1])
        if fault is None:
            raise UsageError(f"no fault named {name.split('/', 1)[1]!r}", hints=("`sregym list-faults` lists them",))
        app.echo_json(dict(fault.params_schema))
        return
    schema = load_schema(name)
    if name == "problem":
        schema = _with_oracle_schema(schema)
    app.echo_json(schema)


def _with_oracle_schema(schema: dict) -> dict:
    from ..oracles.mitigation import ORACLE_SCHEMA

    composed = dict(schema)
    composed["$defs"] = {**schema["$defs"], "oracle": ORACLE_SCHEMA}
    return composed
