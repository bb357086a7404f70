"""SREGym hook implementations for My App (made by :mod:`sregym_appkit.plugin`).

The names must be the hooks' names. An app with faults of its own adds
``sregym_faults = faults_hook(lambda: import_module(".faults", __package__).faults())``
(FleetCast's ``plugin.py`` does).
"""

from __future__ import annotations

from sregym_appkit.plugin import apps_hook, problems_hook

from .app import app_spec

sregym_apps = apps_hook(app_spec)
sregym_problems = problems_hook(__package__)
