"""Image catalog entries: how the embedded cluster runs this app's image as local processes.

Only the tags this project publishes resolve; any other tag of the repository is an image that does
not exist, so a pod asking for it goes to ErrImagePull/ImagePullBackOff as on a real registry. ``postgres:15`` and ``memcached:1.6`` are mapped by the embedded cluster itself.
"""

from __future__ import annotations

from typing import Any

from sregym_appkit import appspec as kit

from . import IMAGE_REPO

#: the build with a real defect (the buggy-image fault's default tag)
BUGGY_TAG = "1.0-buggy"
SUMMARY = "Hotel Reservation services (argv[1] chooses the service)"


def local_images() -> tuple[Any, ...]:
    """The published tags (:data:`sregym_appkit.appspec.STABLE_TAGS`), then the buggy build."""
    stable = kit.service_images(IMAGE_REPO, __package__, "frontend", SUMMARY,
                                env={"HOTEL_BUILD_VARIANT": "stable", "PYTHONUNBUFFERED": "1"})
    buggy = kit.service_images(IMAGE_REPO, __package__, "frontend",
                               "Hotel Reservation services, build with the reservation date defect", tags=(BUGGY_TAG,),
                               env={"HOTEL_BUILD_VARIANT": "buggy", "PYTHONUNBUFFERED": "1"})
    return (*stable, *buggy)
