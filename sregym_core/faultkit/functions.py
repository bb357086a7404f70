"""Build a :class:`~sregym_core.faults.Fault` from plain functions.

Most fault packs write their behaviour as module-level functions; :class:`FunctionFault` bundles
them into one object that satisfies the contract. Every function takes ``(ctx, target, params)``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import attrs

from ..faults import FaultContext, FaultMethod
from ..types import Capability, FailureMode, FaultSpec, GroundTruth, Layer, Target, TargetSelector
from .templates import WORKLOADS, schema
from .truth import TruthValues, truth_factory

TruthMethod = Callable[[FaultContext, Target, Mapping[str, Any]], GroundTruth]


@attrs.frozen(kw_only=True)
class FunctionFault:
    """A :class:`~sregym_core.faults.Fault` whose methods are the given functions.

    ``reference_fix`` defaults to ``recover`` — right only when ``recover`` is itself what an SRE
    would do (a targeted ``kubectl patch`` back to the saved values); give a separate fix otherwise.
    """

    inject_fn: FaultMethod = attrs.field(alias="inject")
    is_present_fn: FaultMethod = attrs.field(alias="is_present")
    recover_fn: FaultMethod = attrs.field(alias="recover")
    truth_fn: TruthMethod = attrs.field(alias="ground_truth")
    reference_fix_fn: FaultMethod | None = attrs.field(default=None, alias="reference_fix")

    def inject(self, ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> Any:
        return self.inject_fn(ctx, target, params)

    def is_present(self, ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> Any:
        return self.is_present_fn(ctx, target, params)

    def recover(self, ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> Any:
        return self.recover_fn(ctx, target, params)

    def reference_fix(self, ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> Any:
        return (self.reference_fix_fn or self.recover_fn)(ctx, target, params)

    def ground_truth(self, ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> GroundTruth:
        return self.truth_fn(ctx, target, params)


def function_fault(*, name: str, summary: str, inject: FaultMethod, recover: FaultMethod, is_present: FaultMethod,
                   reference_fix: FaultMethod | None = None, resource_kind: str, mechanism: str, layer: Layer = "k8s",
                   selector: TargetSelector | None = None, params_schema: Mapping[str, Any] | None = None,
                   symptoms: tuple[str, ...] = (), keywords: tuple[str, ...] = (), values: TruthValues | None = None,
                   prose: str | None = None, capabilities: Iterable[Capability] = frozenset({"any"}),
                   failure_mode: FailureMode = "persistent", recreates: tuple[str, ...] = (),
                   vocabulary: tuple[str, ...] = (), identified_by: tuple[str, ...] = (),
                   fault_mechanisms: Mapping[str, tuple[str, ...]] | None = None) -> FaultSpec:
    """A :class:`FaultSpec` from functions, with ground truth from :func:`truth_factory`.

    ``selector`` defaults to any workload; ``params_schema`` to no params; ``vocabulary`` (the
    mechanism in ordinary SRE English, for the judge) to the judge's own table for ``name``.
    ``fault_mechanisms``: ``FaultSpec.mechanisms`` (the real machinery per operation; ``mechanism``
    is the ground truth's phrase). ``identified_by``: keys of the mutated values that identify the fault
    among its siblings, which a diagnosis must name (see :class:`~sregym_core.types.GroundTruth`).
    """
    truth = truth_factory(name, layer, resource_kind, mechanism, symptoms=symptoms, keywords=keywords,
                          values=values, prose=prose, vocabulary=vocabulary,
                          identified_by=identified_by)
    return FaultSpec(
        name=name, summary=summary, layer=layer, selector=selector or TargetSelector(kinds=WORKLOADS),
        params_schema=params_schema or schema(),
        impl=FunctionFault(inject=inject, is_present=is_present, recover=recover, reference_fix=reference_fix,
                           ground_truth=truth),
        capabilities=capabilities, failure_mode=failure_mode, symptoms=symptoms, recreates=recreates,
        mechanisms=fault_mechanisms or {},
    )
