"""Registers the noise sources of :mod:`sregym_noise_basic.sources`."""

from __future__ import annotations

from sregym_core import hookimpl

from .sources import NOISE_SOURCES


@hookimpl
def sregym_noise_sources():
    return list(NOISE_SOURCES)
