"""Image catalog entries: how the embedded cluster runs this app's image as local processes.

Only the tags this project publishes resolve; any other tag of the repository is an image that does
not exist, so a pod asking for it goes to ErrImagePull/ImagePullBackOff as on a real registry.
``postgres:15``, ``redis:7`` and ``memcached:1.6`` are mapped by the embedded cluster itself; the
``nginx`` argument runs the host's Debian nginx (the Dockerfile installs the same package).
"""

from __future__ import annotations

from typing import Any

from sregym_appkit import appspec as kit

from . import IMAGE_REPO


def local_images() -> tuple[Any, ...]:
    return kit.service_images(IMAGE_REPO, __package__, "nginx-thrift",
                              "Social Network services (argv[1] chooses the service)")
