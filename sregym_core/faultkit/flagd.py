"""Asking a flagd-compatible flag service what it serves, for faults that edit its flag ConfigMap.

A patched ConfigMap reaches flagd only when the kubelet re-projects the volume (10 s on the embedded
cluster, up to a minute or two on a real one), then flagd re-reads the file. A flag fault returns
once flagd serves the change, as an SRE checks after editing the flag file; otherwise the graded
window after a fix could still meet the old flag.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

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
