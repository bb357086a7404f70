"""SREGym's open baseline SRE agent (``react``)."""

from __future__ import annotations

__version__ = "0.2.0"
