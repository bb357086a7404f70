"""What the conductor needs from a cluster, and how it finds one.

A cluster provider's factory returns a handle with at least::

    handle.name: str
    handle.capabilities: frozenset[str]
    handle.up() -> None                    # idempotent: reuse a running cluster
    handle.down() -> None
    handle.kubeconfig(agent: bool = False) -> Path   # admin kubeconfig (agent=True is optional)

and optionally ``snapshot(label)``/``restore(label)`` (fast resets), ``service_url(namespace,
service, port) -> str`` (how the benchmark reaches a Service from the host; the default goes
through the API server's service proxy) and ``observability() -> ObservabilityEndpoints``.

.. versionadded:: 0.1
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from .errors import UsageError

if TYPE_CHECKING:
    from .plugins import PluginHost


class ClusterHandle(Protocol):
    name: str
    capabilities: frozenset[str]

    def up(self) -> None: ...

    def down(self) -> None: ...

    def kubeconfig(self, agent: bool = False) -> Path: ...


def default_provider(host: PluginHost) -> str:
    providers = host.get_clusters()
    if not providers:
        raise UsageError("no cluster provider is installed",
                         hints=("install sregym-cluster-embedded (the default) or sregym-cluster-kubeconfig",))
    flagged = [p.name for p in providers.values() if p.default]
    return flagged[0] if flagged else next(iter(providers))


def get_cluster(host: PluginHost, *, provider: str | None = None, name: str = "sregym", **options: Any) -> Any:
    """Build the cluster handle ``name`` of ``provider`` (the default provider when None)."""
    providers = host.get_clusters()
    provider = provider or default_provider(host)
    spec = providers.get(provider)
    if spec is None:
        raise UsageError(f"unknown cluster provider {provider!r}",
                         hints=(f"installed providers: {', '.join(providers) or 'none'}",))
    handle = spec.factory(name=name, **options)
    if not getattr(handle, "capabilities", None):
        try:
            handle.capabilities = frozenset(spec.capabilities)
        except AttributeError:
            pass
    return handle
