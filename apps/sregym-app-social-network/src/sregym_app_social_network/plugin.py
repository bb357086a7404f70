"""SREGym hook implementations for the Social Network app (made by :mod:`sregym_appkit.plugin`)."""

from __future__ import annotations

from sregym_appkit.plugin import apps_hook, problems_hook

from .app import app_spec

sregym_apps = apps_hook(app_spec)
sregym_problems = problems_hook(__package__)
