"""SREGym core: the thin plugin host every app, fault, agent and cluster plugs into."""

from __future__ import annotations

import pluggy

__version__ = "0.2.0"

#: Marker plugins use to implement SREGym hooks.
hookimpl = pluggy.HookimplMarker("sregym")

__all__ = ["__version__", "hookimpl"]
