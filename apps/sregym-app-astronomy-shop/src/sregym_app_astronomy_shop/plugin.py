"""SREGym hook implementations for the Astronomy Shop app."""

from __future__ import annotations

from sregym_core import hookimpl

from .app import app_spec


@hookimpl
def sregym_apps():
    return [app_spec()]


@hookimpl
def sregym_faults():
    from . import cacheflood, edgefilter, leak
    from .faults import faults, queue_faults

    return [*faults(), *queue_faults(), *edgefilter.faults(), *leak.faults(), *cacheflood.faults()]


@hookimpl
def sregym_problems():
    from sregym_core.problems import load_problem_dir

    from .app import problems_dir

    return load_problem_dir(problems_dir())
