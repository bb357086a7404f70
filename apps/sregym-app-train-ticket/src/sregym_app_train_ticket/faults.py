"""The app's fault primitive: a TrainTicket feature flag switched on, with decoy flags beside it.

``tt-flag`` edits the ConfigMap ``flagd-config`` (flagd's JSON): it sets the faulty flag's
``defaultVariant`` to ``on`` and, like upstream's TrainTicket problems, switches the given decoy
flags on too. flagd reloads within a second and the owning service takes its faulty code path, the
replication of one fault of the TrainTicket fault-analysis study (:mod:`faulty_paths`: wrong SQL on
the real MariaDB, asynchronous ordering, thread-pool starvation, a slow third party...). The
target is the service that evaluates the faulty flag, so the diagnosis must name it and the flag;
the decoys are evaluated on real requests as well but change nothing. The reference fix switches
only the faulty flag off (the decoys may stay on); the fault is present while the faulty flag is
on, whoever turned it, because the owning service takes the faulty path exactly then.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs

from sregym_core.errors import FaultError
from sregym_core.faultkit import flagd, schema
from sregym_core.faultkit.functions import FunctionFault
from sregym_core.faultkit.truth import truth_factory
from sregym_core.types import FaultSpec, TargetSelector

from .faulty_paths import CODE_PATHS
from .topology import DECOY_FLAGS, FAULTY_FLAGS, FLAGD_PORT, FLAGD_SERVICE, FLAGS

if TYPE_CHECKING:
    from sregym_core.faults import FaultContext
    from sregym_core.types import GroundTruth, Target

CONFIG_MAP = "flagd-config"
KEY = "flags.json"


def _flag(target: Target, params: Mapping[str, Any]) -> tuple[str, list[str]]:
    owned = [f for f in FAULTY_FLAGS if FLAGS[f][0] == target.component.name]
    flag = str(params.get("flag") or (owned[0] if owned else ""))
    if flag not in FAULTY_FLAGS:
        raise FaultError(f"tt-flag: {flag!r} is not a flag with a faulty code path",
                         hints=(f"one of: {', '.join(FAULTY_FLAGS)}",))
    if FLAGS[flag][0] != target.component.name:
        raise FaultError(f"tt-flag: {flag} is evaluated by {FLAGS[flag][0]}, not {target.component.name}",
                         hints=(f"target {FLAGS[flag][0]} for {flag}",))
    decoys = [str(d) for d in params.get("decoys") or []]
    bad = [d for d in decoys if d not in DECOY_FLAGS]
    if bad:
        raise FaultError(f"tt-flag: {', '.join(bad)} are not decoy flags", hints=(f"decoys: {', '.join(DECOY_FLAGS)}",))
    return flag, decoys


def _read(ctx: FaultContext) -> dict[str, Any]:
    return flagd.read_flags(ctx, CONFIG_MAP, KEY, fault="tt-flag")


def _set(ctx: FaultContext, values: dict[str, str]) -> None:
    flagd.set_flags(ctx, CONFIG_MAP, KEY, values, fault="tt-flag",
                    shipped=lambda name: {"description": FLAGS[name][2], "state": "ENABLED",
                                          "variants": {"on": True, "off": False}, "defaultVariant": "off"})


#: how long a flag change may take to be served: the node's ConfigMap refresh, then flagd's reload
SERVE_TIMEOUT_S = 60.0


def served_variant(ctx: FaultContext, flag: str) -> str | None:
    """The variant flagd serves for ``flag`` now (see :func:`sregym_core.faultkit.flagd.served_variant`)."""
    return flagd.served_variant(ctx, flag, service=FLAGD_SERVICE, port=FLAGD_PORT, fault="tt-flag")


def _wait_served(ctx: FaultContext, flag: str, variant: str) -> None:
    """Return once flagd serves ``variant``: the change has reached the services, so the reference is
    graded on the flag it set."""
    flagd.wait_served(ctx, flag, variant, service=FLAGD_SERVICE, port=FLAGD_PORT, fault="tt-flag",
                      timeout=SERVE_TIMEOUT_S)


def inject(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    flag, decoys = _flag(target, params)
    _set(ctx, {flag: "on", **{d: "on" for d in decoys}})
    _wait_served(ctx, flag, "on")


def is_present(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> bool:
    flag, _decoys = _flag(target, params)
    entry = (_read(ctx).get("flags") or {}).get(flag) or {}
    return entry.get("state") == "ENABLED" and (entry.get("variants") or {}).get(entry.get("defaultVariant")) is True


def reference_fix(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    flag, _decoys = _flag(target, params)
    _set(ctx, {flag: "off"})
    _wait_served(ctx, flag, "off")


def recover(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    flag, decoys = _flag(target, params)
    _set(ctx, {flag: "off", **{d: "off" for d in decoys}})
    _wait_served(ctx, flag, "off")


def _values(target: Target, params: dict, state: dict) -> dict:
    flag, decoys = _flag(target, params)
    return {"flag": flag, "configmap": CONFIG_MAP, "served_by": "flagd", "mechanism": CODE_PATHS[flag].mechanism,
            "decoys": decoys, "defaultVariant": {"before": "off", "after": "on"}}


VOCABULARY = flagd.VOCABULARY
KEYWORDS = ("feature flag", "flag", "flagd-config")
SYMPTOMS = ("errors", "failed requests", "wrong content")

_truth = truth_factory(
    "tt-flag", "app", "ConfigMap", "a feature flag in the ConfigMap flagd-config switched a faulty code path on",
    symptoms=SYMPTOMS, keywords=KEYWORDS, values=_values, vocabulary=VOCABULARY,
    identified_by=("flag",),  # which flag, not that a flag is on: the decoys are on too
    prose="The feature flag {flag} in the ConfigMap {configmap} (served by {served_by}) was switched on: in "
          "{component}, {mechanism}. Other flags switched on beside it ({decoys}) change nothing. Setting {flag} "
          "back to off fixes it.")


def ground_truth(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> GroundTruth:
    """The common truth, with the faulty code path's own phrases, keywords and symptoms."""
    path = CODE_PATHS[_flag(target, params)[0]]
    truth = _truth(ctx, target, params)
    return attrs.evolve(truth, vocabulary=(*VOCABULARY, *path.vocabulary), keywords=(*KEYWORDS, *path.keywords),
                        symptoms=path.symptoms)


def faults() -> list[Any]:
    return [FaultSpec(
        name="tt-flag", summary="a TrainTicket feature flag turns a faulty code path on (decoy flags beside it)",
        layer="app", selector=TargetSelector(kinds=("Deployment",), requires=("knob:tt-flag",)),
        params_schema=schema(flag={"type": "string", "enum": list(FAULTY_FLAGS)},
                             decoys={"type": "array", "items": {"type": "string", "enum": list(DECOY_FLAGS)},
                                     "default": []}),
        impl=FunctionFault(inject=inject, is_present=is_present, recover=recover, ground_truth=ground_truth,
                           reference_fix=reference_fix),
        symptoms=SYMPTOMS,
    )]
