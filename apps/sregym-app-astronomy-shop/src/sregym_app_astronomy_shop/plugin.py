"""SREGym hook implementations for the Astronomy Shop app (made by :mod:`sregym_appkit.plugin`)."""

from __future__ import annotations

from typing import Any

from sregym_appkit.plugin import apps_hook, faults_hook, problems_hook

from .app import app_spec

sregym_apps = apps_hook(app_spec)
sregym_problems = problems_hook(__package__)


def _faults() -> list[Any]:
    from . import cacheflood, edgefilter, leak
    from .faults import faults, queue_faults

    return [*faults(), *queue_faults(), *edgefilter.faults(), *leak.faults(), *cacheflood.faults()]


sregym_faults = faults_hook(_faults)
