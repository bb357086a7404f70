"""Image catalog entries: how the embedded cluster runs this app's image as local processes.

Only the tags this project publishes resolve; any other tag of the repository is an image that does
not exist, so a pod asking for it goes to ErrImagePull/ImagePullBackOff as on a real registry.
``postgres:15``, ``redis:7`` and ``memcached:1.6`` are mapped by the embedded cluster itself; the
``nginx`` argument runs the host's Debian nginx (the Dockerfile installs the same package).
"""

from __future__ import annotations

import sys
from typing import Any

from . import IMAGE_REPO

STABLE_TAGS = ("1.0", "1.0.0", "latest")
ENTRYPOINT = (sys.executable, "-m", "sregym_app_social_network.serve")


def local_images() -> tuple[Any, ...]:
    from sregym_core.types import LocalImage

    return tuple(LocalImage(image=f"{IMAGE_REPO}:{tag}", argv=ENTRYPOINT, cmd=("nginx-thrift",),
                            env={"PYTHONUNBUFFERED": "1"},
                            summary="Social Network services (argv[1] chooses the service)")
                 for tag in STABLE_TAGS)
