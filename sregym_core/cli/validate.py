"""``sregym validate``: prove problems sound with the reference, noop and hacker agents, and prove that
each problem's declared user-visible symptom shows after injection, before any agent acts."""

from __future__ import annotations

from pathlib import Path

import attrs
import click

from ..errors import SregymError
from ._app import App, render_table
from ._engine import require_engine
from ._noise import check_noise, noise_options
from ._select import cluster_options, executor_option, parallel_option, plan_runner, select_problems

#: the reference last: its attempt then follows a reset, as an agent's second attempt does (2026-12-01: on Social
#: Network every attempt after a reset failed ``functional_slo`` for the reference too, the users grading the
#: timelines against posts the reset had removed; run first, right after the deploy, validation never saw it). The
#: symptom check rides on the first agent's attempt, ``noop``'s, which changes nothing before it.
VALIDATION_AGENTS = ("noop", "restart-all", "scale-zero-faulty", "delete-faulty", "stub-replace",
                     "different-broken-value", "reference")
SYMPTOM = "symptom"


def symptom_cell(symptom) -> str:
    """The matrix cell for a problem's symptom check (see :mod:`sregym_core.symptoms`)."""
    if not symptom:
        return "-"
    if symptom.get("latent"):
        return "latent"
    if symptom.get("symptom_observed") is None:
        return "UNSOUND (no symptom declared)"
    if symptom["symptom_observed"]:
        return f"observed ({', '.join(symptom['declared'])}; {symptom.get('seconds', 0):g} s)"
    return f"UNSOUND (not observed: {', '.join(symptom.get('missing') or symptom['declared'])})"


def verdicts(records) -> dict[str, dict[str, str]]:
    """problem → agent → 'ok'/'UNSOUND' cell text, from the rules: reference passes both stages,
    every other validation agent fails mitigation; plus the ``symptom`` cell where it was observed."""
    table: dict[str, dict[str, str]] = {}
    for record in records:
        row = table.setdefault(record.problem_id, {})
        if record.deploy_failed:
            row[record.agent] = "deploy-failed"
        elif record.agent == "reference":
            good = bool(record.diagnosis_passed and record.mitigation_passed)
            row[record.agent] = "pass" if good else f"UNSOUND (reference failed{reference_failure(record)})"
        elif record.mitigation_passed:
            row[record.agent] = "UNSOUND (mitigation passed)"
        else:
            not_applicable = str(record.error or "").startswith("not applicable")
            row[record.agent] = "fails (n/a)" if not_applicable else "fails"
        symptom = (record.extra or {}).get("symptom")
        if symptom is not None:
            row[SYMPTOM] = symptom_cell(symptom)
    return table


def reference_failure(record) -> str:
    """What the reference failed, for its matrix cell: ``: diagnosis``, ``: functional_slo`` (the
    mitigation oracles that failed), marked when a failing SLO window was measured on a host starved
    for CPU, a verdict a quieter machine may not repeat."""
    from ..oracles.mitigation import OracleVerdict  # only a failed reference needs it: not at CLI start

    failed: list[str] = [] if record.diagnosis_passed else ["diagnosis"]
    leaves = []
    if record.mitigation_passed is False and isinstance(record.mitigation, dict):
        leaves = OracleVerdict.from_dict(record.mitigation).failures()
    failed += [leaf.name for leaf in leaves]
    if not failed:
        return ""
    starved = any(leaf.evidence.get("host_starved") for leaf in leaves)
    return ": " + ", ".join(failed) + ("; the host was starved for CPU" if starved else "")


def noise_cell(records) -> str:
    """What ambient noise did during a problem's attempts: injects per kind (errors, if any)."""
    counts: dict[str, int] = {}
    errors = 0
    for record in records:
        for event in (record.extra or {}).get("noise_events") or ():
            if event.get("action") == "inject":
                counts[event["kind"]] = counts.get(event["kind"], 0) + 1
            elif event.get("action") == "error":
                errors += 1
    if not counts and not errors:
        return "none"
    text = ", ".join(f"{kind} x{n}" for kind, n in sorted(counts.items()))
    return text + (f" ({errors} errors)" if errors else "")


def compare_tables(quiet: dict[str, dict[str, str]], noisy: dict[str, dict[str, str]],
                 noise: dict[str, str]) -> dict[str, dict[str, str]]:
    """problem → column → ``quiet | noise`` cells, plus the ``noise`` column saying what played."""
    table: dict[str, dict[str, str]] = {}
    for pid in [*quiet, *[p for p in noisy if p not in quiet]]:
        left, right = quiet.get(pid, {}), noisy.get(pid, {})
        row = {column: f"{left.get(column, '-')} | {right.get(column, '-')}" for column in [*left, *[c for c in right if c not in left]]}
        row["noise"] = noise.get(pid, "none")
        table[pid] = row
    return table


def adhoc_symptom(symptoms: tuple[str, ...], *, adhoc: bool, checked: bool) -> tuple[str, ...]:
    """``--symptom`` values as a problem file's ``symptom:`` normalizes them. Only an ad hoc
    ``--app/--fault/--target`` problem takes them (a problem file declares its own), and an ad hoc
    validation with the symptom check on needs one: without it the check can only say UNSOUND."""
    from ..errors import UsageError
    from ..symptoms import KINDS, normalize

    if symptoms and not adhoc:
        raise UsageError("--symptom declares the symptom of an ad hoc --app/--fault/--target problem",
                         hints=("a problem file declares its own (`symptom:`; see `sregym schema problem`)",))
    if symptoms and not checked:
        raise UsageError("--symptom declares what the symptom check must observe, and --no-symptom skips that check",
                         hints=("give one of them",))
    if not adhoc or not checked:
        return ()
    if not symptoms:
        raise UsageError("an ad hoc validation declares no symptom, so it can never be sound: the symptom check "
                         "proves the fault hurts users before any agent acts",
                         hints=(f"declare what the fault must cause: --symptom {' | --symptom '.join(KINDS[:2])} "
                                "| --symptom error-logs | --symptom 'alert-firing <Alert>' | --symptom latent "
                                "(repeatable; every one must show)",
                                "or skip the symptom check with --no-symptom"))
    try:
        return normalize(list(symptoms))
    except ValueError as exc:
        raise UsageError(f"--symptom: {exc}", hints=("the forms of a problem file's `symptom:`; see "
                                                     "`sregym schema problem` ($.properties.symptom)",)) from None


@click.command(name="validate")
@click.option("--problem", multiple=True, help="Problem id or path to a problem file (repeatable).")
@click.option("--suite", help="Every problem of a suite (e.g. lite).")
@click.option("--app", "app_name", help="Ad hoc: the app...")
@click.option("--fault", help="... the fault primitive ...")
@click.option("--target", help="... and the target component.")
@click.option("--params", help="Ad hoc: fault params as JSON.")
@click.option("--symptom", "symptoms", multiple=True, metavar="SYMPTOM",
              help="Ad hoc: the user-visible symptom the fault must cause, as a problem file's `symptom:` "
                   "(slo-drop, pods-not-ready, error-logs, 'alert-firing <Alert>', latent); repeatable, every one "
                   "must show. Without it (or --no-symptom) an ad hoc validation cannot be sound.")
@click.option("--agents", "agent_list", default=",".join(VALIDATION_AGENTS), show_default=True)
@click.option("--timeout", type=float, default=300.0, show_default=True)
@click.option("--oracle-window", type=float, help="Override the functional-SLO window (seconds).")
@click.option("--symptom-timeout", type=float, default=60.0, show_default=True,
              help="Seconds to wait for the declared symptom after injection.")
@click.option("--no-symptom", is_flag=True, help="Skip the symptom check.")
@click.option("--results", "results_dir", type=click.Path(path_type=Path), default=Path("results/validate"), show_default=True)
@click.option("--api-port", type=click.IntRange(0, 65535), default=None,
              help="Agent API port the validation agents use, 0 for a free one (as `run`). [env API_PORT; 8000]")
@click.option("--mcp-port", type=click.IntRange(0, 65535), default=None,
              help="MCP port, 0 for a free one (as `run`). [env MCP_SERVER_PORT; 9954]")
@cluster_options
@parallel_option
@executor_option
@noise_options
@click.option("--side-by-side", is_flag=True,
              help="With --noise: validate every problem quiet first, then with the noise, and print both verdicts "
                   "in each cell (quiet | noise) with what the noise did.")
@click.pass_obj
def command(app: App, problem, suite, app_name, fault, target, params, symptoms, agent_list, timeout, oracle_window,
            symptom_timeout, no_symptom, results_dir, api_port, mcp_port, cluster_name, provider, parallel, executor,
            keep_cluster, noise, noise_seed, side_by_side) -> None:
    """Run the validation agents on each problem and print the soundness matrix."""
    require_engine("validate")
    from ..agent_api.server import ServeSettings
    from ..conductor.attempt import AttemptSettings
    from ..conductor.runner import RunPlan
    from ..progress import RunProgress

    declared = adhoc_symptom(symptoms, adhoc=bool(fault), checked=not no_symptom)
    serve = ServeSettings.from_env(api_port=api_port, mcp_port=mcp_port)
    problems = select_problems(app.host, problem=problem, suite=suite, app=app_name, fault=fault, target=target,
                               params=params)
    if declared:
        problems = [attrs.evolve(p, symptom=declared) for p in problems]
    if not no_symptom:
        for each in problems:
            if not each.symptom:
                click.echo(f"Note: problem {each.id} declares no symptom (`symptom:` in its file): its symptom "
                           "cell will read UNSOUND (no symptom declared)", err=True)
    agents = [a.strip() for a in agent_list.split(",") if a.strip()]
    # the symptom is a property of the problem: observed once, in the first agent's attempt
    symptom_agents = () if no_symptom or not agents else (agents[0],)
    # validation agents do not read metrics or traces: skip the observability stack (faster, lighter)
    # unless a symptom is a firing alert
    alerts = any(s.startswith("alert-firing") for p in problems for s in getattr(p, "symptom", ()))
    profile = check_noise(noise)
    if side_by_side and profile is None:
        raise SregymError("--side-by-side compares quiet and noisy runs: give a noise profile",
                          hints=("e.g. sregym validate --suite lite --noise upstream --side-by-side",))

    def plan_for(noise_profile, directory):
        return RunPlan(problems=problems, agents=agents, results_dir=directory, serve=serve,
                       observability=bool(alerts and symptom_agents),
                       settings=AttemptSettings(agent_timeout=timeout, oracle_window=oracle_window,
                                                symptom_agents=symptom_agents, symptom_timeout=symptom_timeout,
                                                noise=noise_profile, noise_seed=noise_seed))

    runs = [(None, results_dir / "quiet"), (profile, results_dir / f"noise-{Path(profile).stem}")] \
        if side_by_side and profile is not None else [(profile, results_dir)]  # (side by side needs a profile: above)
    outcomes = []
    with plan_runner(app.host, executor=executor, provider=provider, name=cluster_name, keep=keep_cluster,
                     parallel=parallel) as run, \
            RunProgress(len(problems) * len(agents) * len(runs), per_problem=len(agents)) as progress:
        for noise_profile, directory in runs:
            outcomes.append(run(plan_for(noise_profile, directory), progress))
    columns = [*agents, *([SYMPTOM] if symptom_agents else [])]
    if side_by_side:
        quiet, noisy = outcomes
        by_problem: dict[str, list] = {}
        for record in noisy:
            by_problem.setdefault(record.problem_id, []).append(record)
        table = compare_tables(verdicts(quiet), verdicts(noisy), {pid: noise_cell(rs) for pid, rs in by_problem.items()})
        columns.append("noise")
        headers = [f"{a.upper()} (quiet | {profile})" if a != "noise" else "NOISE" for a in columns]
    else:
        table = verdicts(outcomes[0])
        headers = [a.upper() for a in columns]
    rows = [[pid, *[cells.get(a, "-") for a in columns]] for pid, cells in table.items()]
    app.echo(render_table(["PROBLEM", *headers], rows))
    unsound = [pid for pid, cells in table.items()
               if any(part.strip().startswith(("UNSOUND", "deploy")) for v in cells.values() for part in v.split(" | "))]
    if unsound:
        raise SregymError(f"{len(unsound)} problem(s) are not sound: {', '.join(unsound)}",
                          hints=("see the per-attempt evidence in " + str(results_dir / "results.jsonl"),))
    app.echo(f"\nall {len(table)} problem(s) sound")
