"""The eight services. Each backend module exposes ``handlers(ctx) -> {method: handler}``."""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from typing import TYPE_CHECKING, Any

import attrs

from ..config import Config

if TYPE_CHECKING:  # psycopg and pymemcache cost ~20 MiB per process; only data services load them
    from ..cache import CacheClient
    from ..db import Store
    from ..rpc import Handler, Peer


@attrs.define
class Context:
    """What a service's handlers use: its config, datastores and peer clients."""

    cfg: Config
    store: Store | None = None
    cache: CacheClient | None = None
    peers: dict[str, Peer] = attrs.Factory(dict)

    def peer(self, name: str) -> Peer:
        return self.peers[name]


def handlers_for(service: str) -> Callable[[Context], dict[str, Handler]]:
    module: Any = import_module(f"{__name__}.{service}")
    return module.handlers
