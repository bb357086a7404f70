"""``sregym run``: run problems end to end with an agent and record the results."""

from __future__ import annotations

from pathlib import Path

import click

from ..clusters import get_cluster
from ._app import App
from ._select import cluster_options, select_problems


@click.command(name="run")
@click.option("--problem", multiple=True, help="Problem id (repeatable).")
@click.option("--suite", help="Every problem of a suite (e.g. lite).")
@click.option("--app", "app_name", help="Ad hoc: the app...")
@click.option("--fault", help="... the fault primitive ...")
@click.option("--target", help="... and the target component.")
@click.option("--params", help="Ad hoc: fault params as JSON.")
@click.option("--agent", "agents", multiple=True, required=True, help="Agent name (repeatable).")
@click.option("--attempts", default=1, show_default=True, type=click.IntRange(1, 1000))
@click.option("--timeout", type=float, help="Agent time limit in seconds (default: the problem's).")
@click.option("--oracle-window", type=float, help="Override the functional-SLO window (seconds).")
@click.option("--judge", default="judge-rules", show_default=True, help="Diagnosis judge.")
@click.option("--judge-model", help="Model for the LLM judge (judge-llm).")
@click.option("--model", help="Model for LLM agents (passed as agent config).")
@click.option("--agent-config", "agent_config", multiple=True, metavar="KEY=VALUE",
              help="Agent setting (repeatable; VALUE is parsed as JSON when it can be).")
@click.option("--results", "results_dir", type=click.Path(path_type=Path), default=Path("results"), show_default=True)
@click.option("--resume", is_flag=True, help="Skip attempts already recorded in --results.")
@click.option("--observability/--no-observability", default=True, show_default=True,
              help="Deploy the metrics/logs/traces stack for the agent tools.")
@cluster_options
@click.pass_obj
def command(app: App, problem, suite, app_name, fault, target, params, agents, attempts, timeout, oracle_window, judge,
            judge_model, model, agent_config, results_dir, resume, observability, cluster_name, provider, keep_cluster) -> None:
    """Run problems with agents on a cluster; one result record per attempt."""
    from ..conductor.attempt import AttemptSettings
    from ..conductor.runner import RunPlan, run_sync
    from ..results.summary import format_summary, summarize_records

    problems = select_problems(app.host, problem=problem, suite=suite, app=app_name, fault=fault, target=target,
                               params=params)
    settings = AttemptSettings(judge=judge, judge_model=judge_model, agent_timeout=timeout, oracle_window=oracle_window,
                               agent_config=_agent_config(agent_config, model))
    plan = RunPlan(problems=problems, agents=agents, attempts=attempts, results_dir=results_dir, resume=resume,
                   settings=settings, observability=observability)
    cluster = get_cluster(app.host, provider=provider, name=cluster_name)
    try:
        records = run_sync(app.host, cluster, plan, progress=lambda line: click.echo(f"• {line}", err=True))
    finally:
        if not keep_cluster:
            cluster.down()
    app.echo(format_summary(summarize_records(records)))
    app.echo(f"\nresults: {results_dir}/ (`sregym report {results_dir}` writes the HTML report)")


def _agent_config(pairs: tuple[str, ...], model: str | None) -> dict:
    import json

    from ..errors import UsageError

    config: dict = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--agent-config expects KEY=VALUE, got {pair!r}")
        try:
            config[key.strip()] = json.loads(value)
        except ValueError:
            config[key.strip()] = value
    if model:
        config["model"] = model
    return config
