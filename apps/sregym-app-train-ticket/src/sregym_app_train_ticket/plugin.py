"""SREGym hook implementations for the TrainTicket app (made by :mod:`sregym_appkit.plugin`)."""

from __future__ import annotations

from importlib import import_module

from sregym_appkit.plugin import apps_hook, faults_hook, problems_hook

from .app import app_spec

sregym_apps = apps_hook(app_spec)
sregym_problems = problems_hook(__package__)

sregym_faults = faults_hook(lambda: import_module(".faults", __package__).faults())
