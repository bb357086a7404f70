"""SREGym hook implementations for the FleetCast app."""

from __future__ import annotations

from sregym_core import hookimpl

from .app import app_spec


@hookimpl
def sregym_apps():
    return [app_spec()]


@hookimpl
def sregym_faults():
    from .faults import faults

    return faults()


@hookimpl
def sregym_problems():
    from sregym_core.problems import load_problem_dir

    from .app import problems_dir

    return load_problem_dir(problems_dir())
