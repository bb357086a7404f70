"""Shared option handling for commands that run problems."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import click

from ..clusters import get_cluster
from ..errors import ConfigError, UsageError
from ..problems import as_upstream, broken_hint, broken_warning, compose_adhoc, load_problem_file, unresolvable
from ..upstream_catalog import LITE_SUITE, UPSTREAM_IDS, UPSTREAM_PROBLEMS


def alias_index(problems: Mapping[str, Any]) -> dict[str, Any]:
    """Every alias (``aliases:`` in problem files, e.g. upstream SREGym ids) -> its problem."""
    index: dict[str, Any] = {}
    for problem in problems.values():
        for alias in getattr(problem, "aliases", ()):
            index.setdefault(alias, problem)
    return index


def find_problem(problems: Mapping[str, Any], name: str) -> Any | None:
    """A problem by id or by alias; found by an upstream SREGym id, it is run as that id (recorded
    beside ours, with upstream's agent time limit: :func:`~sregym_core.problems.as_upstream`)."""
    if name in problems:
        return problems[name]
    problem = alias_index(problems).get(name)
    if problem is not None and name in UPSTREAM_IDS:
        return as_upstream(problem, name)
    return problem


def upstream_suite(problems: Mapping[str, Any], say: Callable[[str], None]) -> list:
    """``--suite sregym-lite``: the equivalents of upstream's lite ids that exist here, once each."""
    index = alias_index(problems)
    chosen: dict[str, Any] = {}
    missing = []
    for upstream in UPSTREAM_PROBLEMS:
        if not upstream.lite:
            continue
        problem = index.get(upstream.id)
        if problem is None:
            missing.append(upstream.id)
        elif problem.id not in chosen:  # two lite ids with one equivalent: run it once, as the first
            chosen[problem.id] = as_upstream(problem, upstream.id)
    if missing:
        say(f"{LITE_SUITE}: {len(missing)} of {len(missing) + sum(1 for u in UPSTREAM_PROBLEMS if u.lite and u.id in index)} "
            f"upstream ids have no equivalent here and are not run: {', '.join(missing)}")
    return list(chosen.values())


def _is_path(value: str) -> bool:
    """``--problem`` takes an id or a path to a problem file (anything with a slash or a YAML suffix)."""
    return "/" in value or value.endswith((".yaml", ".yml", ".json")) or Path(value).is_file()


def select_problems(host: Any, *, problem: tuple[str, ...] = (), suite: str | None = None, app: str | None = None,
                    fault: str | None = None, target: str | None = None, params: str | None = None,
                    say: Callable[[str], None] | None = None) -> list:
    """Problems from ``--problem``/``--suite`` or one ad-hoc ``--app/--fault/--target`` problem.

    ``--problem`` takes ids or aliases (upstream SREGym ids); ``--suite sregym-lite`` is upstream's
    lite suite mapped onto the equivalents that exist (``say`` tells which ids have none).
    """
    say = say or (lambda text: click.echo(f"• {text}", err=True))
    selected = _select(host, problem=problem, suite=suite, app=app, fault=fault, target=target, params=params, say=say)
    if fault:
        return selected  # composed and resolved already
    # a problem that parses but does not resolve (its fault's pack is not installed...) stops a run
    # half-way: asked for by id or path it is an error now, in a suite it is skipped like a bad file
    broken = {b.id: b for b in unresolvable(selected, host)}
    if broken and problem:
        first = next(iter(broken.values()))
        raise ConfigError(f"problem(s) {', '.join(broken)} cannot run on the installed plugins",
                          errors=[(str(b.source), b.error) for b in broken.values()], hints=(broken_hint(first),))
    for each in broken.values():
        say(broken_warning(each))
    return [p for p in selected if p.id not in broken]


def _select(host: Any, *, problem: tuple[str, ...], suite: str | None, app: str | None, fault: str | None,
            target: str | None, params: str | None, say: Callable[[str], None]) -> list:
    chosen = sum(bool(x) for x in (problem, suite, fault))
    if chosen != 1:
        raise UsageError("choose exactly one of --problem, --suite or --app/--fault/--target")
    if fault:
        if not (app and target):
            raise UsageError("--fault needs --app and --target", hints=("`sregym list-faults --app APP` lists the pairs",))
        try:
            parsed = json.loads(params) if params else {}
        except ValueError as exc:
            raise UsageError(f"--params is not JSON: {exc}") from exc
        return [compose_adhoc(host, app=app, fault=fault, target=target, params=parsed)]
    if problem and all(_is_path(p) for p in problem):
        return [load_problem_file(p) for p in problem]  # a file's errors name the file and the JSON path
    known = host.get_problems()
    broken = host.broken_problems()
    for each in broken:  # a broken file disables its own problem only
        say(broken_warning(each))
    if problem:
        found = {name: None if _is_path(name) else find_problem(known, name) for name in problem}
        asked_broken = [b for b in broken if b.id in found and found[b.id] is None]
        if asked_broken:
            raise ConfigError(f"problem(s) {', '.join(b.id for b in asked_broken)} cannot run: "
                              "the file that defines it is invalid",
                              errors=[(str(b.source), b.error) for b in asked_broken],
                              hints=(broken_hint(asked_broken[0]),))
        missing = [name for name, spec in found.items() if spec is None and not _is_path(name)]
        if missing:
            upstream = [name for name in missing if name in UPSTREAM_IDS]
            hints = ["`sregym list-problems` lists them; --problem also takes a path to a problem file"]
            if upstream:
                hints.insert(0, f"{', '.join(upstream)}: upstream SREGym id(s) with no equivalent problem here "
                                "(`sregym list-problems --upstream` shows every upstream id)")
            raise UsageError(f"unknown problem(s): {', '.join(missing)}", hints=tuple(hints))
        return [load_problem_file(name) if _is_path(name) else found[name] for name in problem]
    if suite == LITE_SUITE:
        return upstream_suite(known, say)
    selected = [p for p in known.values() if suite in p.tags or suite in p.suites]
    if not selected:
        raise UsageError(f"suite {suite!r} has no problems", hints=("`sregym list-problems` shows the tags",))
    return selected


def cluster_options(func):
    func = click.option("--cluster", "cluster_name", default="sregym", show_default=True,
                        help="Cluster name (several clusters can run side by side).")(func)
    func = click.option("--provider", default=None, help="Cluster provider (default: embedded).")(func)
    func = click.option("--keep-cluster/--no-keep-cluster", default=True, show_default=True,
                        help="Leave the cluster running afterwards, with its deployed apps, for the next command "
                             "to reuse; --no-keep-cluster stops it unless another command still uses it.")(func)
    return func


def parallel_option(func):
    return click.option("--parallel", type=click.IntRange(1, 32), default=1, show_default=True,
                        help="Environments side by side: N clusters (<cluster>, <cluster>-2, ...), each with its own "
                             "agent API/MCP ports, taking the next attempt when free; one results directory.")(func)


def executor_option(func):
    return click.option("--executor", default=LOCAL_EXECUTOR, show_default=True,
                        help="Where the work items run: 'local' (--parallel N environments in this process) or an "
                             "installed executor plugin, e.g. 'ray' (sregym-executor-ray: --parallel N Ray workers "
                             "on a local Ray cluster, each with an embedded cluster of its own, stopped at the end; "
                             "--keep-cluster does not apply).")(func)


LOCAL_EXECUTOR = "local"


def find_executor(host: Any, name: str) -> Any:
    """The executor plugin ``name`` (None for the built-in ``local``); a clear error for one not installed."""
    if name == LOCAL_EXECUTOR:
        return None
    executors = host.get_executors()
    if name not in executors:
        raise UsageError(f"unknown executor {name!r}",
                         hints=(f"installed executors: {', '.join([LOCAL_EXECUTOR, *executors])}",
                                "the Ray executor is the sregym-executor-ray plugin: "
                                "pip install -e plugins/sregym-executor-ray (it brings the ray package)"))
    return executors[name]


@contextlib.contextmanager
def plan_runner(host: Any, *, executor: str, provider: str | None, name: str, keep: bool,
                parallel: int) -> Iterator[Any]:
    """``run(plan, progress) -> records`` for a command: the built-in executor on ``parallel``
    clusters of this process, or an executor plugin on ``parallel`` workers of its own."""
    spec = find_executor(host, executor)
    if spec is None:
        from ..conductor.runner import run_sync

        with command_clusters(host, provider=provider, name=name, keep=keep, parallel=parallel) as clusters:
            yield lambda plan, progress: run_sync(host, clusters[0], plan, progress=progress, clusters=clusters)
        return
    yield lambda plan, progress: spec.run(host=host, plan=plan, provider=provider, cluster_name=name,
                                          workers=parallel, progress=progress)


def parallel_cluster_names(name: str, parallel: int) -> list[str]:
    """The clusters of ``--parallel N``: the named one first, then ``<name>-2`` ... ``<name>-N``."""
    return [name] + [f"{name}-{index}" for index in range(2, parallel + 1)]


@contextlib.contextmanager
def command_clusters(host: Any, *, provider: str | None, name: str, keep: bool, parallel: int) -> Iterator[list[Any]]:
    """``parallel`` clusters for a command (see :func:`command_cluster`); more than one needs a
    provider that starts clusters of its own."""
    if parallel > 1:
        from ..clusters import default_provider

        spec = host.get_clusters().get(provider or default_provider(host))
        if spec is not None and "embedded" not in spec.capabilities:
            raise UsageError(f"--parallel {parallel} needs {parallel} clusters, and provider {spec.name!r} does not "
                             "start clusters",
                             hints=("use the embedded provider (the default) for environments side by side",
                                    "on one existing cluster, run with --parallel 1"))
    with contextlib.ExitStack() as stack:
        yield [stack.enter_context(command_cluster(host, provider=provider, name=each, keep=keep))
               for each in parallel_cluster_names(name, parallel)]


@contextlib.contextmanager
def command_cluster(host: Any, *, provider: str | None, name: str, keep: bool) -> Iterator[Any]:
    """The cluster a command deploys to and injects faults on (not yet up: ``Environment.up`` does that).

    The command has the cluster's apps to itself: a second such command on the same cluster fails at
    once (two would revert each other's faults). A cluster the command starts outlives it when
    ``keep``; otherwise the cluster is stopped at the end, and dies with the command if it is killed.
    """
    cluster = get_cluster(host, provider=provider, name=name, owned=not keep, exclusive=True)
    try:
        yield cluster
    finally:
        if not keep:
            cluster.down()
