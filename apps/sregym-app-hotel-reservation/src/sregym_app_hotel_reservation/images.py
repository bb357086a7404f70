"""Image catalog entries: how the embedded cluster runs this app's image as local processes.

Only the tags this project publishes resolve; any other tag of the repository is an image that does
not exist, so a pod asking for it goes to ErrImagePull/ImagePullBackOff as on a real registry. ``postgres:15`` and ``memcached:1.6`` are mapped by the embedded cluster itself.
"""

from __future__ import annotations

import sys
from typing import Any

from . import IMAGE_REPO

#: the published tags: the release the manifests use and its aliases
STABLE_TAGS = ("1.0", "1.0.0", "latest")
#: the build with a real defect (the buggy-image fault's default tag)
BUGGY_TAG = "1.0-buggy"
ENTRYPOINT = (sys.executable, "-m", "sregym_app_hotel_reservation.serve")


def local_images() -> tuple[Any, ...]:
    from sregym_core.types import LocalImage

    stable = tuple(
        LocalImage(image=f"{IMAGE_REPO}:{tag}", argv=ENTRYPOINT, cmd=("frontend",),
                   env={"HOTEL_BUILD_VARIANT": "stable", "PYTHONUNBUFFERED": "1"},
                   summary="Hotel Reservation services (argv[1] chooses the service)")
        for tag in STABLE_TAGS)
    return (*stable,
            LocalImage(image=f"{IMAGE_REPO}:{BUGGY_TAG}", argv=ENTRYPOINT, cmd=("frontend",),
                       env={"HOTEL_BUILD_VARIANT": "buggy", "PYTHONUNBUFFERED": "1"},
                       summary="Hotel Reservation services, build with the reservation date defect"))
