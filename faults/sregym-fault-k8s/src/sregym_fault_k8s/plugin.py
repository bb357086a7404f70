"""Hook implementations: every Kubernetes-object and storage fault primitive, and the pairs among
them that cannot take effect although their selector matches."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sregym_core import hookimpl

from . import compatibility, objects, workload

if TYPE_CHECKING:
    from sregym_core.types import AppSpec, ComponentSpec, FaultSpec, Incompatible


@hookimpl
def sregym_faults() -> list[FaultSpec]:
    return [*workload.FAULTS, *objects.FAULTS]


@hookimpl
def sregym_check_compatibility(fault: FaultSpec, component: ComponentSpec, app: AppSpec) -> Incompatible | None:
    """Refuse ``missing-secret`` on a component whose pod template reads no Secret.

    Its selector (a service with env vars) matches such a component, but there is no Secret to
    delete: injection would stop with "reads no Secret". The pod template is in the app's
    manifests, not in the component inventory, hence a check and not a selector (see
    :mod:`sregym_fault_k8s.compatibility`). Every other pair is left to the selectors.
    """
    return compatibility.check_compatibility(fault, component, app)
