"""What a mitigation oracle may ask of the live system: the :class:`OracleContext` protocol.

The conductor implements it over the cluster (admin kubeconfig), the fault instances and the
workload generator's stats API; tests implement it with a fake. Oracles never talk to the cluster
directly, which keeps them pure functions of what the context reports and easy to unit-test.

.. versionadded:: 0.1
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class OracleContext(Protocol):
    """The live system as mitigation oracles see it.

    Attributes:
        baseline_workloads: the workloads snapshotted right after deploy (same shape as
            :meth:`list_workloads`).
        fault_instances: the problem's fault instances (``FaultInstance`` records or anything with
            ``id``/``fault``/``target``/``role``), indexed as :meth:`fault_present` expects.
        faulty_workloads: the workloads the faults target (trigger instances excluded), as mappings
            with ``kind``, ``namespace``, ``name``, ``service`` (the component's Service name, or
            ``None``) and ``instance`` (the fault instance id). Oracles check that these are healthy
            and leave their pod templates to the fix; every other workload must match the baseline.

    .. versionchanged:: 0.2 ``faulty_workloads``; ``list_workloads`` also returns Endpoints.

    Optional (not part of the protocol, so that older contexts still are one): ``fault_config_changes``,
    ``{(namespace, name): paths}`` of what the faults changed in the app's ConfigMaps
    (:func:`sregym_core.oracles.config_paths.fault_changes`); where a context has it, ``baseline_preserved``
    fails any other change in them (Unreleased). ``fault_secret_values``, ``{(namespace, secret, key): value}`` of the app's
    Secrets as the faults left them: a key holding what a fault put there is no credential swap (Unreleased).
    ``fault_workload_changes``, ``{(kind, namespace, name): paths}`` of what the faults changed in the app's pod
    templates and Services (:func:`sregym_core.oracles.mitigation.fault_workload_changes`, read around each injection),
    or None when unknown: where a context has it, ``baseline_preserved`` fails a change no fault made that is no
    known-harmless repair (:func:`sregym_core.faultkit.weakening.unexplained`, ``service_weaker``; Unreleased).

    Optional too: ``async rbac_state()``, the app's RBAC as a mapping: ``baseline`` (Roles and RoleBindings after
    deploy), ``injected`` (after the faults were injected), ``current`` (now), ``repairs`` (the rules the faults name
    as their repair, from their state's ``rbac_repair``), ``cluster_roles`` (name -> rules) and
    ``skip_subject_namespaces`` (the benchmark's own identities); where a context has it, ``baseline_preserved`` fails a
    subject granted more (:func:`sregym_core.faultkit.weakening.over_grants`; Unreleased).
    """

    # read-only (properties): the engine's context exposes them as such, and a plain attribute fits too
    @property
    def baseline_workloads(self) -> list[dict[str, Any]]: ...

    @property
    def fault_instances(self) -> Sequence[Any]: ...

    @property
    def faulty_workloads(self) -> Sequence[Mapping[str, Any]]: ...

    async def list_workloads(self) -> list[dict[str, Any]]:
        """Deployments, StatefulSets, DaemonSets, Services, Endpoints, ConfigMaps, Secrets, PVCs and
        Pods of the app's namespace(s), as Kubernetes JSON objects; each dict must carry ``kind``
        (list responses omit it per item)."""
        ...

    async def fault_present(self, instance_index: int) -> bool:
        """Whether fault instance ``instance_index`` is still present (its ``is_present`` check)."""
        ...

    async def workload_stats(self, window_s: float) -> dict[str, Any]:
        """The workload generator's view of the last ``window_s`` seconds: ``success_rate`` (0..1,
        requests answered as expected *with correct content*), ``count``, ``content_errors``
        (answers whose status looked fine but whose content contradicts the seeded data),
        ``p50_ms``, ``p95_ms``, ``p99_ms`` (and anything else it reports), and ``host_cpu_stall``:
        the share of the window the app's host was starved for CPU (0..1), or ``None``/absent when
        unknown or when the app does not run on the conductor's host.

        .. versionchanged:: 0.3 ``host_cpu_stall``."""
        ...

    async def replay_trigger(self, name: str) -> None:
        """Re-run the named trigger (a fault instance id of role ``trigger``, or a named load burst)."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Wait (fakes advance a virtual clock)."""
        ...

    def now(self) -> float:
        """Monotonic seconds."""
        ...
