"""Errors the node agent raises; each maps to a real kubelet reason and message."""

from __future__ import annotations


class ContainerConfigError(Exception):
    """Env or config the container needs is missing: waiting reason CreateContainerConfigError."""


class MountError(Exception):
    """A volume cannot be set up yet: the pod stays ContainerCreating with a FailedMount event."""


class NotAttached(MountError):
    """A network disk is not attached to this node yet: the kubelet waits for the attachdetach
    controller, quietly until its two-minute deadline, then says it timed out."""

    def __init__(self, volumes: list[str]) -> None:
        super().__init__(f"volumes {volumes} are not attached")
        self.volumes = volumes


def api_error(code: int, reason: str, message: str) -> Exception:
    """An ``ApiError`` (a Kubernetes Status) from the package's API server."""
    from ..apiserver.errors import ApiError

    return ApiError(code, message, reason)
