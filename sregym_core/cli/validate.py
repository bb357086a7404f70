"""``sregym validate``: prove problems sound with the reference, noop and hacker agents."""

from __future__ import annotations

from pathlib import Path

import click

from ..clusters import get_cluster
from ..errors import SregymError
from ._app import App, render_table
from ._select import cluster_options, select_problems

VALIDATION_AGENTS = ("reference", "noop", "restart-all", "scale-zero-faulty", "delete-faulty")


def verdicts(records) -> dict[str, dict[str, str]]:
    """problem → agent → 'ok'/'UNSOUND' cell text, from the rules: reference passes both stages,
    every other validation agent fails mitigation."""
    table: dict[str, dict[str, str]] = {}
    for record in records:
        row = table.setdefault(record.problem_id, {})
        if record.deploy_failed:
            row[record.agent] = "deploy-failed"
        elif record.agent == "reference":
            good = bool(record.diagnosis_passed and record.mitigation_passed)
            row[record.agent] = "pass" if good else "UNSOUND (reference failed)"
        else:
            row[record.agent] = "fails" if not record.mitigation_passed else "UNSOUND (mitigation passed)"
    return table


@click.command(name="validate")
@click.option("--problem", multiple=True, help="Problem id (repeatable).")
@click.option("--suite", help="Every problem of a suite (e.g. lite).")
@click.option("--app", "app_name", help="Ad hoc: the app...")
@click.option("--fault", help="... the fault primitive ...")
@click.option("--target", help="... and the target component.")
@click.option("--params", help="Ad hoc: fault params as JSON.")
@click.option("--agents", "agent_list", default=",".join(VALIDATION_AGENTS), show_default=True)
@click.option("--timeout", type=float, default=300.0, show_default=True)
@click.option("--oracle-window", type=float, help="Override the functional-SLO window (seconds).")
@click.option("--results", "results_dir", type=click.Path(path_type=Path), default=Path("results/validate"), show_default=True)
@cluster_options
@click.pass_obj
def command(app: App, problem, suite, app_name, fault, target, params, agent_list, timeout, oracle_window,
            results_dir, cluster_name, provider, keep_cluster) -> None:
    """Run the validation agents on each problem and print the soundness matrix."""
    from ..conductor.attempt import AttemptSettings
    from ..conductor.runner import RunPlan, run_sync

    problems = select_problems(app.host, problem=problem, suite=suite, app=app_name, fault=fault, target=target,
                               params=params)
    agents = [a.strip() for a in agent_list.split(",") if a.strip()]
    # validation agents do not read metrics or traces: skip the observability stack (faster, lighter)
    plan = RunPlan(problems=problems, agents=agents, results_dir=results_dir, observability=False,
                   settings=AttemptSettings(agent_timeout=timeout, oracle_window=oracle_window))
    cluster = get_cluster(app.host, provider=provider, name=cluster_name)
    try:
        records = run_sync(app.host, cluster, plan, progress=lambda line: click.echo(f"• {line}", err=True))
    finally:
        if not keep_cluster:
            cluster.down()
    table = verdicts(records)
    rows = [[pid, *[cells.get(a, "-") for a in agents]] for pid, cells in table.items()]
    app.echo(render_table(["PROBLEM", *[a.upper() for a in agents]], rows))
    unsound = [pid for pid, cells in table.items() if any(v.startswith(("UNSOUND", "deploy")) for v in cells.values())]
    if unsound:
        raise SregymError(f"{len(unsound)} problem(s) are not sound: {', '.join(unsound)}",
                          hints=("see the per-attempt evidence in " + str(results_dir / "results.jsonl"),))
    app.echo(f"\nall {len(table)} problem(s) sound")
