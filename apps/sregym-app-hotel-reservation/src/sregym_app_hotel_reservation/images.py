"""Image catalog entries: how the embedded cluster runs this app's image as local processes.

The node's image catalog lets later entries win, so the buggy variant comes after the catch-all
pattern and ``*-buggy`` tags resolve to it. ``postgres:15`` and ``memcached:1.6`` are mapped by the embedded cluster itself.
"""

from __future__ import annotations

import sys
from typing import Any

from . import IMAGE_REPO

ENTRYPOINT = (sys.executable, "-m", "sregym_app_hotel_reservation.serve")


def local_images() -> tuple[Any, ...]:
    from sregym_core.types import LocalImage

    return (
        LocalImage(image=f"{IMAGE_REPO}:*", argv=ENTRYPOINT, cmd=("frontend",),
                   env={"HOTEL_BUILD_VARIANT": "stable", "PYTHONUNBUFFERED": "1"},
                   summary="Hotel Reservation services (argv[1] chooses the service)"),
        LocalImage(image=f"{IMAGE_REPO}:*-buggy", argv=ENTRYPOINT, cmd=("frontend",),
                   env={"HOTEL_BUILD_VARIANT": "buggy", "PYTHONUNBUFFERED": "1"},
                   summary="Hotel Reservation services, build with the reservation date defect"),
    )
