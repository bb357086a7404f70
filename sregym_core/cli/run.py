"""``sregym run``: run problems end to end with an agent and record the results."""

from __future__ import annotations

from pathlib import Path

import click

from ._app import App
from ._engine import require_engine
from ._noise import check_noise, noise_options
from ._select import cluster_options, executor_option, parallel_option, plan_runner, select_problems


@click.command(name="run")
@click.option("--problem", multiple=True, help="Problem id or path to a problem file (repeatable).")
@click.option("--suite", help="Every problem of a suite (e.g. lite).")
@click.option("--app", "app_name", help="Ad hoc: the app...")
@click.option("--fault", help="... the fault primitive ...")
@click.option("--target", help="... and the target component.")
@click.option("--params", help="Ad hoc: fault params as JSON.")
@click.option("--agent", "agents", multiple=True, help="Agent name (repeatable).")
@click.option("--external-harness", is_flag=True,
              help="No agent of ours: deploy, inject, serve the agent API/MCP on the configured ports and wait for "
                   "an outside agent to submit; then grade and record.")
@click.option("--attempts", default=1, show_default=True, type=click.IntRange(1, 1000))
@click.option("--agent-timeout", "--timeout", "timeout", type=float,
              help="Agent time limit in seconds (default: the problem's, else 1800 as upstream; a problem run by "
                   "an upstream id gets upstream's 1800 unless its file says why not).")
@click.option("--stages", type=click.Choice(["diagnosis", "mitigation", "both"]), default=None,
              help="Graded stages (default: the problem's, else both).")
@click.option("--api-bind-host", default=None,
              help="Listen address of the agent API and MCP (upstream listens on 0.0.0.0). [env API_BIND_HOST; 127.0.0.1]")
@click.option("--api-token", default=None, metavar="TOKEN",
              help="Require this token (Authorization: Bearer TOKEN) on every agent API/MCP request but GET /status, "
                   "for an outside harness that sends one. With --parallel each environment asks for its own token, "
                   "an HMAC of this one (sregym_core.agent_api.server.environment_token; printed with its API "
                   "address). [env SREGYM_API_TOKEN]")
@click.option("--api-port", type=click.IntRange(0, 65535), default=None,
              help="Agent API port, 0 for a free one. [env API_PORT; 8000]")
@click.option("--mcp-port", type=click.IntRange(0, 65535), default=None,
              help="MCP port (/kubectl/sse, /prometheus/sse, ...), 0 for a free one. [env MCP_SERVER_PORT; 9954]")
@click.option("--oracle-window", type=float, envvar="SREGYM_ORACLE_WINDOW",
              help="Override the functional-SLO window (seconds); the request floor keeps the problem's rate. "
                   "The landing suite sets a short one: it grades no service level. [env SREGYM_ORACLE_WINDOW]")
@click.option("--judge", default=None,
              help="Diagnosis judge. Default: judge-llm-gated when a judge model is configured (--judge-model, "
                   "JUDGE_MODEL or JUDGE_MODEL_ID), else judge-rules.")
@click.option("--judge-model", help="Model for the LLM judge (a litellm model string). [env JUDGE_MODEL, JUDGE_MODEL_ID]")
@click.option("--judge-rubric", type=click.Choice(["sregym", "upstream"]), default="sregym", show_default=True,
              help="Checklist: the project's, or upstream SREGym's (D1-Q1 ... D3-Q3, weights 0.33/0.33/0.34).")
@click.option("--model", help="Model for LLM agents (passed as agent config).")
@click.option("--agent-config", "agent_config", multiple=True, metavar="KEY=VALUE",
              help="Agent setting (repeatable; VALUE is parsed as JSON when it can be).")
@click.option("--results", "results_dir", type=click.Path(path_type=Path), default=Path("results"), show_default=True)
@click.option("--resume", is_flag=True, help="Skip attempts already recorded in --results.")
@click.option("--observability/--no-observability", default=True, show_default=True,
              help="Deploy the metrics/logs/traces stack for the agent tools.")
@cluster_options
@parallel_option
@executor_option
@noise_options
@click.pass_obj
def command(app: App, problem, suite, app_name, fault, target, params, agents, external_harness, attempts, timeout,
            stages, api_bind_host, api_token, api_port, mcp_port, oracle_window, judge, judge_model, judge_rubric, model,
            agent_config, results_dir, resume, observability, cluster_name, provider, parallel, executor, keep_cluster,
            noise, noise_seed) -> None:
    """Run problems with agents on a cluster; one result record per attempt."""
    require_engine("run")
    from ..agent_api.external import EXTERNAL_AGENT
    from ..agent_api.server import ServeSettings
    from ..errors import UsageError

    if external_harness == bool(agents):
        raise UsageError("give --agent NAME (repeatable) or --external-harness, not both and not neither",
                         hints=("`sregym plugins` lists the installed agents",))
    agents = (EXTERNAL_AGENT,) if external_harness else agents
    serve = ServeSettings.from_env(bind_host=api_bind_host, api_port=api_port, mcp_port=mcp_port, token=api_token)
    from ..conductor.attempt import AttemptSettings
    from ..conductor.runner import RunPlan
    from ..progress import RunProgress
    from ..results.summary import format_summary, judges_note, summarize_records

    problems = select_problems(app.host, problem=problem, suite=suite, app=app_name, fault=fault, target=target,
                               params=params)
    judge, judge_model = choose_judge(judge, judge_model)
    preflight_judge(app.host, judge, judge_model, judge_rubric)
    settings = AttemptSettings(judge=judge, judge_model=judge_model, judge_rubric=judge_rubric, agent_timeout=timeout,
                               oracle_window=oracle_window, agent_config=_agent_config(agent_config, model),
                               stages=_stages(stages), noise=check_noise(noise), noise_seed=noise_seed)
    plan = RunPlan(problems=problems, agents=agents, attempts=attempts, results_dir=results_dir, resume=resume,
                   settings=settings, observability=observability, serve=serve)
    with plan_runner(app.host, executor=executor, provider=provider, name=cluster_name, keep=keep_cluster,
                     parallel=parallel) as run, \
            RunProgress(len(problems) * len(agents) * attempts, per_problem=len(agents) * attempts) as progress:
        records = run(plan, progress)
    app.echo(format_summary(summarize_records(records)))
    if note := judges_note(records):
        app.echo(note)
    app.echo(f"\nresults: {results_dir}/ (`sregym report {results_dir}` writes the HTML report)")


def _stages(choice: str | None) -> tuple[str, ...] | None:
    """``--stages``: None keeps each problem's own selection."""
    if choice is None:
        return None
    return ("diagnosis", "mitigation") if choice == "both" else (choice,)


def choose_judge(judge: str | None, judge_model: str | None) -> tuple[str, str | None]:
    """The judge a run uses: the one asked for; else, when a judge model is configured (the option,
    ``JUDGE_MODEL`` or upstream's ``JUDGE_MODEL_ID``), the LLM judge behind the rules' gates; else the
    offline ``judge-rules``."""
    import os

    judge_model = judge_model or os.environ.get("JUDGE_MODEL") or os.environ.get("JUDGE_MODEL_ID") or None
    if judge:
        return judge, judge_model
    return ("judge-llm-gated" if judge_model else "judge-rules"), judge_model


def preflight_judge(host, judge: str, judge_model: str | None, rubric: str) -> None:
    """Build the judge once before anything is deployed, and let it check it can answer (an LLM judge
    makes one tiny call), so a misconfigured judge fails the run at once with a clear error."""
    from ..errors import UsageError

    spec = host.get_oracles().get(judge)
    if spec is None or spec.kind != "judge":
        judges = sorted(n for n, s in host.get_oracles().items() if s.kind == "judge")
        raise UsageError(f"no diagnosis judge named {judge!r}",
                         hints=(f"installed judges: {', '.join(judges) or 'none (pip install sregym-judge-rules)'}",))
    options: dict = {}
    if judge_model and "model" in spec.config_schema.get("properties", {}):
        options["model"] = judge_model
    if rubric != "sregym":
        if "rubric" not in spec.config_schema.get("properties", {}):
            raise UsageError(f"judge {judge!r} has no rubric option", hints=("--judge-rubric upstream needs judge-rules or judge-llm",))
        options["rubric"] = rubric
    instance = spec.factory(**options)
    check = getattr(instance, "preflight", None)
    if callable(check):
        check()


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
