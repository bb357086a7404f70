"""What the conductor needs from a cluster, and how it finds one.

A cluster provider's factory returns a handle with at least::

    handle.name: str
    handle.capabilities: frozenset[str]
    handle.up() -> None                    # idempotent: reuse a running cluster
    handle.down() -> None
    handle.kubeconfig(agent: bool = False) -> Path   # admin kubeconfig (agent=True is optional)

and optionally the capabilities below, each a runtime-checkable Protocol the core and plugins test with
``isinstance`` (never by probing attribute names): :class:`SupportsSnapshot` (fast resets),
:class:`SupportsServiceUrl` (how the benchmark reaches a Service from the host; the default goes
through the API server's service proxy), :class:`SupportsObservability` (endpoints of a stack the
cluster runs itself), :class:`SupportsNodeFaults` and :class:`SupportsNetworkFaults` (the node and
service-proxy fault hooks node-level faults and network noise act through).

The factory is called with ``name`` and may get ``owned`` (True: a cluster the handle starts may stop
when this process ends; False: it outlives the process) and ``exclusive`` (True: this handle changes
the apps on the cluster, so a second exclusive handle on the same cluster should fail clearly).
Providers ignore options they have no use for.

.. versionadded:: 0.1
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast, runtime_checkable

from .errors import UsageError

if TYPE_CHECKING:
    from .catalog import Catalog


#: A namespace labelled with one of these (value ``"true"``) holds the benchmark's own machinery (the
#: agent's account, the workload generator, the observability stack): hidden from the agent, outside
#: the cluster under test. Apps label their workload namespace so; clusters and the conductor read it.
HIDDEN_NAMESPACE_LABELS = ("sregym.io/hidden", "sregym.dev/hidden")


def is_hidden_namespace(labels: dict[str, str] | None) -> bool:
    """Whether a namespace with these labels is one of the benchmark's hidden ones."""
    return any((labels or {}).get(key) == "true" for key in HIDDEN_NAMESPACE_LABELS)


#: The app a namespace belongs to, set by the conductor at deploy on every namespace of the app (the
#: agent cannot change namespaces). Pods of one app may not connect to another app's pods or Services;
#: a namespace without it (kube-system, the ingress controller's, one a user made) belongs to no app.
APP_GROUP_LABEL = "sregym.io/app"


def app_group(labels: dict[str, str] | None) -> str | None:
    """The app whose namespace carries these labels, or None (no app's: reached by and reaching all)."""
    return (labels or {}).get(APP_GROUP_LABEL) or None


@runtime_checkable
class ClusterHandle(Protocol):
    name: str
    capabilities: frozenset[str]

    def up(self) -> None: ...

    def down(self) -> None: ...

    def kubeconfig(self, agent: bool = False) -> Path: ...


@runtime_checkable
class SupportsSnapshot(Protocol):
    """Saves and restores the cluster's objects (a reset faster than redeploying)."""

    def snapshot(self, label: str = "baseline") -> None: ...

    def restore(self, label: str = "baseline") -> None: ...


@runtime_checkable
class SupportsServiceUrl(Protocol):
    """Says how the host reaches a Service directly (None: go through the API server's proxy)."""

    def service_url(self, namespace: str, service: str, port: int) -> str | None: ...


@runtime_checkable
class SupportsObservability(Protocol):
    """The endpoints of an observability stack the cluster itself runs (None: none)."""

    def observability(self) -> Any: ...


@runtime_checkable
class SupportsNetworkFaults(Protocol):
    """The service proxy's fault hook: delay or drop traffic to one Service, then clear it."""

    def network_fault(self, fault_id: str, **spec: Any) -> dict: ...

    def fault_status(self, kind: str, fault_id: str) -> dict | None: ...

    def clear_fault(self, kind: str, fault_id: str) -> bool: ...


@runtime_checkable
class SupportsNodeFaults(SupportsNetworkFaults, Protocol):
    """The node agents' fault hooks: stop/start a node agent, syscall and disk faults on its pods."""

    def stop_node(self, node: str) -> dict: ...

    def start_node(self, node: str) -> dict: ...

    def node_agents(self) -> dict: ...

    def node_fault(self, fault_id: str, **spec: Any) -> dict: ...

    def disk_fill(self, fault_id: str, **spec: Any) -> dict: ...

    def faults(self) -> dict: ...


@runtime_checkable
class SupportsNodePods(Protocol):
    """The node agents' own account of the pods they run: a list of ``{namespace, name, uid, ip,
    ready, containers: [{name, image, ready, running}]}``. Oracles believe it over pod status, which
    an identity allowed to write ``pods/status`` could forge."""

    def node_pods(self) -> list[dict]: ...


@runtime_checkable
class SupportsPodNetworks(Protocol):
    """Says which address ranges pods of this cluster (and of any cluster of its kind on this host)
    connect from, so the agent API can refuse them."""

    def pod_networks(self) -> list[str]: ...


@runtime_checkable
class ProbesFaultMechanisms(Protocol):
    """Says which fault mechanisms (:mod:`sregym_core.mechanisms`) this cluster's nodes accept:
    ``{name: {"available": bool, "reason": str, "operations": [...] or None}}``, ``reason`` saying
    why one is not (the probe's own words, e.g. the kernel's EPERM). Answered without starting
    the cluster; a mechanism it does not name is unavailable."""

    def fault_mechanisms(self) -> dict[str, dict]: ...


@runtime_checkable
class DeclaresCapabilities(Protocol):
    """A handle that says what it can do (``{"any"}`` is assumed for one that does not)."""

    capabilities: frozenset[str]


@runtime_checkable
class Named(Protocol):
    """A handle with a name to show."""

    name: str


_Capability = TypeVar("_Capability")


def capability(handle: Any, protocol: Callable[..., _Capability]) -> _Capability | None:
    """``handle`` as ``protocol`` (a runtime-checkable Protocol class) when it implements it, else None.

    ``protocol`` is typed as a callable, not ``type[...]``: mypy refuses a Protocol class where a
    concrete ``type[T]`` is expected (its ``type-abstract`` check), and every caller passes one."""
    if handle is not None and isinstance(handle, cast(type, protocol)):
        return cast(_Capability, handle)
    return None


def capabilities_of(handle: Any) -> frozenset[str]:
    """What ``handle`` declares it can do; ``{"any"}`` when it declares nothing (or nothing at all)."""
    declared = handle.capabilities if isinstance(handle, DeclaresCapabilities) else None
    return frozenset(declared or {"any"})


def name_of(handle: Any, default: str = "cluster") -> str:
    """``handle``'s name, or ``default`` for a handle without one."""
    return handle.name if isinstance(handle, Named) else default


def default_provider(host: Catalog) -> str:
    providers = host.get_clusters()
    if not providers:
        raise UsageError("no cluster provider is installed",
                         hints=("install sregym-cluster-embedded (the default) or sregym-cluster-kubeconfig",))
    flagged = [p.name for p in providers.values() if p.default]
    return flagged[0] if flagged else next(iter(providers))


def get_cluster(host: Catalog, *, provider: str | None = None, name: str = "sregym", **options: Any) -> Any:
    """Build the cluster handle ``name`` of ``provider`` (the default provider when None)."""
    providers = host.get_clusters()
    provider = provider or default_provider(host)
    spec = providers.get(provider)
    if spec is None:
        raise UsageError(f"unknown cluster provider {provider!r}",
                         hints=(f"installed providers: {', '.join(providers) or 'none'}",))
    handle = spec.factory(name=name, **options)
    if not (isinstance(handle, DeclaresCapabilities) and handle.capabilities):
        try:
            handle.capabilities = frozenset(spec.capabilities)
        except AttributeError:
            pass
    return handle
