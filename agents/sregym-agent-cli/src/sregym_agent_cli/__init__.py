"""SREGym adapters that run popular coding-agent CLIs as evaluated agents."""

from __future__ import annotations

__version__ = "0.2.0"
