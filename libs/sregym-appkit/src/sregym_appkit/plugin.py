"""An app package's SREGym hook implementations, made from what the app already defines.

Every app's ``plugin`` module (its ``sregym`` entry point) registers the same three things: its
:class:`~sregym_core.types.AppSpec`, the problems in its ``problems/`` folder and, for apps that ship
app-specific faults, those faults. Each function here returns one such hook implementation, so an
app's ``plugin.py`` is three assignments::

    from sregym_appkit.plugin import apps_hook, faults_hook, problems_hook

    from .app import app_spec

    sregym_apps = apps_hook(app_spec)
    sregym_problems = problems_hook(__package__)
    sregym_faults = faults_hook(lambda: import_module(".faults", __package__).faults())

pluggy finds a hook implementation by its name in the module and its marker, so the assignments'
names must be the hooks' names. The callables are called lazily, inside the hooks: listing plugins
imports no fault code. Host side only (needs sregym-core, as :mod:`sregym_appkit.deploy` does).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

try:
    from sregym_core import hookimpl
except ImportError as exc:  # re-raised with the fix: this module runs on the host, not in an image
    raise ImportError("sregym_appkit.plugin runs on the host and needs sregym-core: "
                      "pip install 'sregym-appkit[deploy]'", name=exc.name) from exc


def apps_hook(app_spec: Callable[[], Any]) -> Callable[[], list[Any]]:
    """``sregym_apps``: the app's one AppSpec."""
    @hookimpl
    def sregym_apps() -> list[Any]:
        return [app_spec()]

    return sregym_apps


def problems_hook(package: str) -> Callable[[], Iterable[Any]]:
    """``sregym_problems``: every problem file in the ``problems`` folder of the app's ``package``."""
    @hookimpl
    def sregym_problems() -> Iterable[Any]:
        from sregym_core.problems import load_problem_dir

        from .appspec import problems_dir

        return load_problem_dir(problems_dir(package))

    return sregym_problems


def faults_hook(faults: Callable[[], Iterable[Any]]) -> Callable[[], list[Any]]:
    """``sregym_faults``: the app's own FaultSpecs, built when the host asks for them."""
    @hookimpl
    def sregym_faults() -> list[Any]:
        return list(faults())

    return sregym_faults
