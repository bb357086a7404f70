"""What the installed plugins registered, as plugins and the contract read it: :class:`Catalog`.

The plugin host (:class:`sregym_core.plugins.PluginHost`) implements it. A plugin that needs another
plugin's records (a judge that gates with another judge, a cluster that runs the images apps
declare) receives the catalog as the ``host`` argument of its registration hook and binds it into
its factories, instead of reaching for a process-wide host::

    @hookimpl
    def sregym_oracles(host):
        return [OracleSpec(name="my-judge", kind="judge", factory=functools.partial(MyJudge, host=host))]

The hook must only keep the catalog: reading it inside a registration hook asks the host for the
records it is still collecting. Contract code that resolves a problem (:mod:`sregym_core.problems`)
or builds a cluster handle (:mod:`sregym_core.clusters`) takes a catalog too, so the contract never
imports the host.

.. versionadded:: 0.3
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Literal, Protocol, runtime_checkable

import attrs

if TYPE_CHECKING:
    from .types import (
        AgentSpec,
        AppSpec,
        BrokenProblem,
        ClusterProviderSpec,
        ComponentSpec,
        ExecutorSpec,
        FaultSpec,
        LocalImage,
        NoiseSpec,
        ObservabilitySpec,
        OracleSpec,
        ProblemSpec,
        ToolSpec,
    )


@attrs.frozen(kw_only=True)
class Verdict:
    """Whether a fault can take effect on a component, and if not, why (``failed`` says which check)."""

    ok: bool
    reason: str = ""
    failed: Literal["", "target", "capabilities"] = ""

    def __bool__(self) -> bool:
        return self.ok


@runtime_checkable
class Catalog(Protocol):
    """The installed plugins' records, by name (read-only)."""

    def get_apps(self) -> dict[str, AppSpec]: ...

    def get_faults(self) -> dict[str, FaultSpec]: ...

    def get_noise_sources(self) -> dict[str, NoiseSpec]: ...

    def get_oracles(self) -> dict[str, OracleSpec]: ...

    def get_agents(self) -> dict[str, AgentSpec]: ...

    def get_clusters(self) -> dict[str, ClusterProviderSpec]: ...

    def get_executors(self) -> dict[str, ExecutorSpec]: ...

    def get_problems(self) -> dict[str, ProblemSpec]: ...

    def broken_problems(self) -> list[BrokenProblem]: ...

    def get_observability(self) -> dict[str, ObservabilitySpec]: ...

    def get_agent_tools(self) -> dict[str, ToolSpec]: ...

    def get_local_images(self) -> list[LocalImage]: ...

    def get_local_image_owners(self) -> list[tuple[str, LocalImage]]: ...

    def is_compatible(self, fault: FaultSpec, component: ComponentSpec, app: AppSpec, *,
                      capabilities: Iterable[str] | None = None) -> Verdict: ...

    def provider_of(self, plugin_name: str) -> str: ...


__all__ = ["Catalog", "Verdict"]
