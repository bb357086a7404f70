"""Registers the ``ray`` executor. Importing this module never imports ray: only running does."""

from __future__ import annotations

from sregym_core import hookimpl
from sregym_core.types import ExecutorSpec


def _run(**kwargs):
    from .executor import run_on_ray

    return run_on_ray(**kwargs)


@hookimpl
def sregym_executors():
    return [ExecutorSpec(name="ray", run=_run,
                         summary="work items on a local Ray cluster: one worker process per environment, "
                                 "a lost worker's item retried on another")]
