"""What every service's configuration starts with, and how a bad one is reported.

A service of an app reads a config file (its ConfigMap) and environment variables; whatever the app
adds (databases, caches, retry policy), the service first needs its name, where to listen, its admin
port and its peers' addresses (:class:`ServiceConfig`, which an app's ``Config`` extends). Validation
collects every problem before giving up (:class:`ConfigInvalid`), so one crash-looping pod's log
names all that is wrong with its ConfigMap at once, each with the fix.

Needs ``attrs``, which the images of the apps that use this module install.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs


class ConfigInvalid(Exception):
    """The configuration failed validation; ``problems`` lists every (path, message, hint)."""

    def __init__(self, problems: list[tuple[str, str, str]]) -> None:
        super().__init__("; ".join(f"{p}: {m}" for p, m, _ in problems))
        self.problems = problems


@attrs.frozen
class ServiceConfig:
    """The fields every service's configuration has first (an app's ``Config`` adds its own after)."""

    service: str
    host: str
    port: int
    admin_port: int
    peers: Mapping[str, str]
