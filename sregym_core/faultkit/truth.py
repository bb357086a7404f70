"""Ground truth for faults: :func:`truth_factory` builds a fault's ``ground_truth`` method."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from ..faults import FaultContext
from ..types import GroundTruth, Target

#: ``values(target, params, state) -> mutated values`` (concrete before/after values for the judge)
TruthValues = Callable[[Target, dict, dict], dict]


def truth_factory(name: str, layer: str, resource_kind: str, mechanism: str, *, symptoms: tuple[str, ...] = (),
                  keywords: tuple[str, ...] = (), values: TruthValues | None = None,
                  prose: str | None = None, vocabulary: tuple[str, ...] = (), identified_by: tuple[str, ...] = ()):
    """Build a fault's ``ground_truth(ctx, target, params)``: the fixed description plus the
    concrete values ``values`` reads from ``ctx.state`` (all params when ``values`` is None).
    ``prose`` may use ``{component}``, ``{namespace}`` and the keys of the mutated values.
    ``vocabulary``: phrases asserting the mechanism in ordinary SRE English, for the judge.
    ``identified_by``: keys of the mutated values a diagnosis must name (a flag fault's ``flag``)."""

    def ground_truth(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> GroundTruth:
        mutated = values(target, dict(params), ctx.state) if values else dict(params)
        text = prose or f"{mechanism} on {{component}}."
        return GroundTruth(
            fault=name, layer=layer, components=(target.component.name,), namespace=target.namespace,
            resource_kind=resource_kind, mechanism=mechanism, mutated_values=mutated,
            prose=text.format(component=target.component.name, namespace=target.namespace, **{
                k: (json.dumps(v) if isinstance(v, dict | list) else v) for k, v in mutated.items()}),
            symptoms=symptoms, keywords=keywords, vocabulary=vocabulary, identified_by=identified_by,
        )

    return ground_truth
