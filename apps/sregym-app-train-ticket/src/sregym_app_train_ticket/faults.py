"""The app's fault primitive: a TrainTicket feature flag switched on, with decoy flags beside it.

``tt-flag`` edits the ConfigMap ``flagd-config`` (flagd's JSON): it sets the faulty flag's
``defaultVariant`` to ``on`` and, like upstream's TrainTicket problems, switches the given decoy
flags on too. flagd reloads within a second and the owning service takes its faulty code path (a
real SQL error from MariaDB). The target is the service that evaluates the faulty flag, so the
diagnosis must name it and the flag; the decoys are evaluated on real requests as well but change
nothing. The reference fix switches only the faulty flag off (the decoys may stay on); the fault
is present while the faulty flag is on, whoever turned it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from sregym_core.errors import FaultError
from sregym_core.faultkit import kube, schema
from sregym_core.faultkit.functions import FunctionFault
from sregym_core.faultkit.truth import truth_factory
from sregym_core.types import FaultSpec, TargetSelector

from .topology import DECOY_FLAGS, FAULTY_FLAGS, FLAGS

CONFIG_MAP = "flagd-config"
KEY = "flags.json"
#: what each faulty code path does, for the ground truth
MECHANISMS = {
    "tt-feat-17": "the sold-ticket query filters through a nested select whose select clause lists two columns "
                  "(MySQL error 1241: Operand should contain 1 column(s)), so seat availability, search and booking fail",
    "tt-feat-22": "the contacts query reads a column that does not exist (document_num instead of document_number; "
                  "MySQL error 1054: Unknown column), so contacts lookups and booking fail",
}


def _flag(target: Any, params: Mapping[str, Any]) -> tuple[str, list[str]]:
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


def _read(ctx: Any) -> dict[str, Any]:
    cm = kube.get(ctx, "configmap", CONFIG_MAP)
    if cm is None:
        raise FaultError(f"tt-flag: ConfigMap {CONFIG_MAP} not found", hints=("is train-ticket deployed?",))
    try:
        doc = json.loads((cm.get("data") or {}).get(KEY, ""))
    except ValueError:
        doc = {}
    return doc if isinstance(doc, dict) else {}


def _set(ctx: Any, values: dict[str, str]) -> None:
    doc = _read(ctx)
    flags = doc.setdefault("flags", {})
    for name, variant in values.items():
        if not isinstance(flags.get(name), dict):  # a definition removed by hand: put the shipped one back
            flags[name] = {"description": FLAGS[name][2], "state": "ENABLED", "variants": {"on": True, "off": False},
                           "defaultVariant": "off"}
        flags[name]["state"] = "ENABLED"
        flags[name]["defaultVariant"] = variant
    kube.patch(ctx, "configmap", CONFIG_MAP, {"data": {KEY: json.dumps(doc, indent=2) + "\n"}})


def inject(ctx: Any, target: Any, params: Mapping[str, Any]) -> None:
    flag, decoys = _flag(target, params)
    _set(ctx, {flag: "on", **{d: "on" for d in decoys}})


def is_present(ctx: Any, target: Any, params: Mapping[str, Any]) -> bool:
    flag, _decoys = _flag(target, params)
    entry = (_read(ctx).get("flags") or {}).get(flag) or {}
    return entry.get("state") == "ENABLED" and (entry.get("variants") or {}).get(entry.get("defaultVariant")) is True


def reference_fix(ctx: Any, target: Any, params: Mapping[str, Any]) -> None:
    flag, _decoys = _flag(target, params)
    _set(ctx, {flag: "off"})


def recover(ctx: Any, target: Any, params: Mapping[str, Any]) -> None:
    flag, decoys = _flag(target, params)
    _set(ctx, {flag: "off", **{d: "off" for d in decoys}})


def _values(target: Any, params: dict, state: dict) -> dict:
    flag, decoys = _flag(target, params)
    return {"flag": flag, "configmap": CONFIG_MAP, "served_by": "flagd", "mechanism": MECHANISMS[flag],
            "decoys": decoys, "defaultVariant": {"before": "off", "after": "on"}}


VOCABULARY = ("feature flag", "feature toggle", "toggle", "flag + turned on", "flag + switched on", "flag + enabl*",
              "flag + set to", "flag + flipped", "flagd config", "toggle + switched on", "toggle + turned on")
SYMPTOMS = ("errors", "SQL errors", "failed requests")


def faults() -> list[Any]:
    truth = truth_factory(
        "tt-flag", "app", "ConfigMap",
        "a feature flag in the ConfigMap flagd-config switched a faulty SQL code path on", symptoms=SYMPTOMS,
        keywords=("feature flag", "flag", "flagd-config", "SQL", "column"), values=_values, vocabulary=VOCABULARY,
        prose="The feature flag {flag} in the ConfigMap {configmap} (served by {served_by}) was switched on: in "
              "{component}, {mechanism}. Other flags switched on beside it ({decoys}) change nothing. Setting {flag} "
              "back to off fixes it.")
    return [FaultSpec(
        name="tt-flag", summary="a TrainTicket feature flag turns a faulty SQL code path on (decoy flags beside it)",
        layer="app", selector=TargetSelector(kinds=("Deployment",), requires=("knob:tt-flag",)),
        params_schema=schema(flag={"type": "string", "enum": list(FAULTY_FLAGS)},
                             decoys={"type": "array", "items": {"type": "string", "enum": list(DECOY_FLAGS)},
                                     "default": []}),
        impl=FunctionFault(inject=inject, is_present=is_present, recover=recover, ground_truth=truth,
                           reference_fix=reference_fix),
        symptoms=SYMPTOMS,
    )]
