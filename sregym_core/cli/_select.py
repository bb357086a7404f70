"""Shared option handling for commands that run problems."""

from __future__ import annotations

import json
from typing import Any

import click

from ..errors import UsageError
from ..problems import compose_adhoc


def select_problems(host: Any, *, problem: tuple[str, ...] = (), suite: str | None = None, app: str | None = None,
                    fault: str | None = None, target: str | None = None, params: str | None = None) -> list:
    """Problems from ``--problem``/``--suite`` or one ad-hoc ``--app/--fault/--target`` problem."""
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
    known = host.get_problems()
    if problem:
        missing = [p for p in problem if p not in known]
        if missing:
            raise UsageError(f"unknown problem(s): {', '.join(missing)}", hints=("`sregym list-problems` lists them",))
        return [known[p] for p in problem]
    selected = [p for p in known.values() if suite in p.tags or suite in p.suites]
    if not selected:
        raise UsageError(f"suite {suite!r} has no problems", hints=("`sregym list-problems` shows the tags",))
    return selected


def cluster_options(func):
    func = click.option("--cluster", "cluster_name", default="sregym", show_default=True,
                        help="Cluster name (several clusters can run side by side).")(func)
    func = click.option("--provider", default=None, help="Cluster provider (default: embedded).")(func)
    func = click.option("--keep-cluster/--stop-cluster", default=True, show_default=True,
                        help="Leave the cluster running afterwards (deployed apps are reused next time).")(func)
    return func
