"""Images that installed SREGym plugins register (``AppSpec.images`` and ``sregym_local_images``),
as an image source for the node agents' catalog."""

from __future__ import annotations

import logging
from collections.abc import Iterable

from .node.images import Recipe

log = logging.getLogger(__name__)


def plugin_image_source() -> Iterable[tuple[str, Recipe]]:
    """(pattern, recipe) for every local image the installed plugins declare."""
    try:
        from sregym_core.plugins import get_plugin_manager

        images = get_plugin_manager().get_local_images()
    except Exception:  # a broken plugin must not stop the cluster; its images are simply missing
        log.exception("loading plugin images failed")
        return []
    return [(image.image, Recipe.make(entrypoint=image.argv, cmd=image.cmd, env=dict(image.env),
                                      workdir=image.workdir, description=image.summary or image.image))
            for image in images]
