"""SREGym observability: logs (Loki API), traces (OTLP in, Jaeger API out), cluster metrics
exporters, Prometheus configuration, and the agents' observability tools."""

from __future__ import annotations

__version__ = "0.2.0"
