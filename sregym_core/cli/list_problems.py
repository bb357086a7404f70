"""``sregym list-problems``."""

from __future__ import annotations

import click

from ..problems import broken_warning, problem_to_dict, unresolvable
from ._app import App, render_table


@click.command(name="list-problems")
@click.option("--suite", help="Only problems in this suite (e.g. lite; sregym-lite: upstream's lite ids, as `run` maps them).")
@click.option("--app", "app_name", help="Only this app's problems.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option("--upstream", is_flag=True, help="Every upstream SREGym problem id with its equivalent here, or 'missing'.")
@click.option("--format", "fmt", type=click.Choice(["table", "markdown"]), default="table", show_default=True,
              help="With --upstream: markdown is docs/upstream-aliases.md.")
@click.option("--all", "show_all", is_flag=True,
              help="Also list broken problem files (status 'broken', with the error), which are never run.")
@click.pass_obj
def list_problems(app: App, suite: str | None, app_name: str | None, as_json: bool, upstream: bool, fmt: str,
                  show_all: bool) -> None:
    """List curated problems (a broken problem file is reported with its path and skipped; --all lists it)."""
    problems = [p for p in suite_problems(app.host, suite) if app_name is None or p.app == app_name]
    # a file that does not validate, and a problem that does not resolve on the installed plugins
    broken = [*app.host.broken_problems(), *unresolvable(problems, app.host)]
    for each in broken:
        click.echo(f"Warning: {broken_warning(each)}", err=True)
    if upstream:
        _list_upstream(app, as_json, fmt)
        return
    problems = [p for p in problems if p.id not in {b.id for b in broken}]
    if as_json:
        records = [{**problem_to_dict(p), "status": "ok"} for p in problems]
        if show_all:
            records += [{"id": b.id, "status": "broken", "error": b.error, "source": str(b.source), "plugin": b.plugin}
                     for b in broken]
        app.echo_json(records)
        return
    rows = [[p.id, p.app, p.layer, p.failure_mode, p.difficulty, ",".join(p.tags), p.summary] for p in problems]
    headers = ["ID", "APP", "LAYER", "MODE", "DIFFICULTY", "TAGS", "SUMMARY"]
    if any(p.upstream_id for p in problems):  # sregym-lite: the upstream id each one is run as
        headers.insert(1, "UPSTREAM ID")
        for row, problem in zip(rows, problems):
            row.insert(1, problem.upstream_id)
    if show_all:
        for each in broken:
            row = [each.id, "-", "-", "-", "-", "broken", f"BROKEN ({each.source}): {each.error.splitlines()[0]}"]
            rows.append(row[:1] + [""] * (len(headers) - len(row)) + row[1:])
    app.echo(render_table(headers, rows))
    app.echo(f"\n{len(problems)} problem(s)")
    if broken:
        app.echo(f"{len(broken)} broken problem file(s) " + ("listed above as broken (never run)" if show_all
                                                            else "skipped: `sregym list-problems --all` lists them"))


def suite_problems(host, suite: str | None) -> list:
    """The problems ``sregym run --suite SUITE`` runs (every problem without a suite): the same
    selection, so the two commands agree on every suite name; an unknown suite lists nothing."""
    problems = host.get_problems()
    if suite is None:
        return list(problems.values())
    from ..upstream_catalog import LITE_SUITE
    from ._select import upstream_suite

    if suite == LITE_SUITE:
        return upstream_suite(problems, lambda text: click.echo(f"Note: {text}", err=True))
    return [p for p in problems.values() if suite in p.suites or suite in p.tags]


def upstream_rows(problems) -> list[dict]:
    """One row per upstream SREGym problem id, in upstream's registry order."""
    from ..upstream_catalog import UPSTREAM_PROBLEMS
    from ._select import alias_index

    index = alias_index(problems)
    return [{"upstream_id": u.id, "upstream_app": u.app, "lite": u.lite,
             "equivalent": index[u.id].id if u.id in index else None, "note": u.note} for u in UPSTREAM_PROBLEMS]


def _list_upstream(app: App, as_json: bool, fmt: str) -> None:
    rows = upstream_rows(app.host.get_problems())
    if as_json:
        app.echo_json(rows)
        return
    found = sum(1 for r in rows if r["equivalent"])
    lite = [r for r in rows if r["lite"]]
    summary = (f"{found} of {len(rows)} upstream ids have an equivalent problem here "
               f"({sum(1 for r in lite if r['equivalent'])} of the {len(lite)} SREGym-Lite ids). "
               "`sregym run --problem <upstream id>` runs the equivalent; `--suite sregym-lite` runs the lite ones "
               "that exist.")
    if fmt == "markdown":
        table = [[f"`{r['upstream_id']}`", r["upstream_app"], "yes" if r["lite"] else "",
                  f"`{r['equivalent']}`" if r["equivalent"] else "missing", r["note"]] for r in rows]
        app.echo("# Upstream SREGym problem ids\n\n"
                 "Generated by `sregym list-problems --upstream --format markdown`; do not edit by hand. An id has an "
                 "equivalent when a problem file lists it under `aliases:` (same fault mechanism, ported to Hotel "
                 "Reservation or Social Network where upstream used another app: HR hotel-reservation, AS astronomy-shop, "
                 "SN social-network, BHR blueprint-hotel-reservation, TT train-ticket, FC FleetCast).\n\n"
                 f"{summary}\n\n"
                 + render_table(["upstream id", "upstream app", "lite", "equivalent", "note"], table, fmt="markdown"))
        return
    table = [[r["upstream_id"], r["upstream_app"], "yes" if r["lite"] else "", r["equivalent"] or "missing", r["note"]]
             for r in rows]
    app.echo(render_table(["UPSTREAM ID", "UPSTREAM APP", "LITE", "EQUIVALENT", "NOTE"], table))
    app.echo(f"\n{summary}")
