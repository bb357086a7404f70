"""The workload generator: DeathStarBench's mixed workload with every answer checked."""

from .generator import main

__all__ = ["main"]
