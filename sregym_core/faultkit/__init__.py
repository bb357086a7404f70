"""The fault toolkit: helpers every fault pack uses to write :class:`~sregym_core.faults.Fault`\\ s.

* :func:`function_fault` / :class:`FunctionFault` — a fault from five functions ``(ctx, target, params)``.
* :func:`template_fault` / :class:`TemplateFault` — a fault that patches fields of the target's
  workload (inject saves the originals; recover and the reference fix patch exactly those back).
* :func:`truth_factory` — a fault's ``ground_truth`` from a fixed description plus state values.
* :mod:`~sregym_core.faultkit.kube` — read and change objects through the real kubectl as the admin.
* :mod:`~sregym_core.faultkit.flagd` — what a flagd-compatible flag service serves, and waiting for a change.
* :mod:`~sregym_core.faultkit.users` — waiting, after a fix, until the workload's users succeed again.
* :mod:`~sregym_core.faultkit.calico` — Calico's label selectors and the pod routes its BGP peers give.
* :func:`schema` — a closed params JSON Schema; :data:`WORKLOADS` — the workload kinds.
* :func:`~sregym_core.quantity.parse_quantity` — Kubernetes quantities (``500m``, ``1Gi``).

.. versionadded:: 0.1
"""

from __future__ import annotations

from ..quantity import parse_quantity
from . import calico, flagd, kube, users
from .functions import FunctionFault, function_fault
from .templates import (
    WORKLOADS,
    Mutation,
    TemplateFault,
    injected_value,
    original_value,
    pointer_get,
    schema,
    template_fault,
)
from .truth import TruthValues, truth_factory

__all__ = [
    "WORKLOADS", "FunctionFault", "Mutation", "TemplateFault", "TruthValues", "calico", "flagd", "function_fault",
    "injected_value", "kube", "original_value", "parse_quantity", "pointer_get", "schema", "template_fault",
    "truth_factory", "users",
]
