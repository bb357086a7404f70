"""Asking a flagd-compatible flag service what it serves, for faults that edit its flag ConfigMap.

A patched ConfigMap reaches flagd only when the kubelet re-projects the volume (10 s on the embedded
cluster, up to a minute or two on a real one), then flagd re-reads the file. A flag fault returns
once flagd serves the change, as an SRE checks after editing the flag file; otherwise the graded
window after a fix could still meet the old flag.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ..errors import FaultError
from . import kube

if TYPE_CHECKING:
    from ..faults import FaultContext


def served_variant(ctx: FaultContext, flag: str, *, service: str, port: int, fault: str) -> str | None:
    """The variant flagd answers for ``flag`` now (OFREP through the API server's service proxy), or
    None while it cannot answer (restarting: the proxy's error) or reports the flag missing/disabled.
    A reply with no body at all comes from no flagd (a context without a cluster): FaultError."""
    path = f"/api/v1/namespaces/{ctx.namespace}/services/{service}:{port}/proxy/ofrep/v1/evaluate/flags/{flag}"
    try:
        out = ctx.kubectl("create", "--raw", path, "-f", "-", input="{}", timeout=15.0)
    except FaultError:
        return None
    if not out.strip():
        raise FaultError(f"{fault}: asking flagd for {flag} returned nothing (no flagd behind this context)")
    try:
        answer = json.loads(out)
    except ValueError:
        return None
    return answer.get("variant") if isinstance(answer, dict) else None


def wait_served(ctx: FaultContext, flag: str, variant: str, *, service: str, port: int, fault: str, timeout: float) -> None:
    """Return once flagd serves ``variant`` for ``flag``; FaultError after ``timeout`` seconds."""
    if not kube.wait_until(lambda: served_variant(ctx, flag, service=service, port=port, fault=fault) == variant,
                           timeout=timeout, interval=1.0):
        raise FaultError(f"{fault}: flagd still does not serve {flag}={variant} {timeout:g} s after the "
                         "ConfigMap change", hints=("is the flagd pod running and mounting its flag ConfigMap?",))


#: how SREs say "a flag was turned on" (judge-rules pattern syntax: ``a + b`` = both in one sentence), for a
#: flag fault's ground truth
VOCABULARY = ("feature flag", "feature toggle", "toggle", "flag + turned on", "flag + switched on", "flag + enabl*",
              "flag + set to", "flag + flipped", "flagd config", "toggle + switched on", "toggle + turned on")


def read_flags(ctx: FaultContext, configmap: str, key: str, *, fault: str) -> dict[str, Any]:
    """The flag file (flagd's JSON) in ``key`` of ``configmap``; ``{}`` for a file that does not parse."""
    cm = kube.get(ctx, "configmap", configmap, missing_ok=True)
    if cm is None:
        raise FaultError(f"{fault}: ConfigMap {configmap} not found", hints=("is the app deployed?",))
    try:
        doc = json.loads((cm.get("data") or {}).get(key, ""))
    except ValueError:
        doc = {}
    return doc if isinstance(doc, dict) else {}


def set_flags(ctx: FaultContext, configmap: str, key: str, variants: Mapping[str, str], *, fault: str,
              shipped: Callable[[str], dict[str, Any]]) -> None:
    """Serve ``variants`` (flag -> variant) from the flag file, each flag ENABLED; a definition removed by hand
    is put back as the app ships it (``shipped(flag)``) first."""
    doc = read_flags(ctx, configmap, key, fault=fault)
    flags = doc.setdefault("flags", {})
    for name, variant in variants.items():
        if not isinstance(flags.get(name), dict):
            flags[name] = shipped(name)
        flags[name]["state"] = "ENABLED"
        flags[name]["defaultVariant"] = variant
    kube.patch(ctx, "configmap", configmap, {"data": {key: json.dumps(doc, indent=2) + "\n"}})
