"""Feature flags as the services see them: the OpenFeature SDK with the OFREP provider, asking the
``flagd`` service (``FLAGD_HOST``:``FLAGD_OFREP_PORT``) on every evaluation, as the demo's services
ask flagd.

Every evaluation becomes a ``feature_flag.evaluation`` span event (``feature_flag.key``,
``feature_flag.result.variant``, ``feature_flag.provider.name``) on the current span and a counter
sample; a change of a flag's value is logged once (``feature_flag_changed``), so logs and traces show
which flag turned a code path on. When flagd cannot answer, the default (the healthy behaviour) is
used and the error is logged once per minute.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any

from opentelemetry import trace

from sregym_appkit import logs

from . import telemetry

_lock = threading.Lock()
_state: dict[str, Any] = {"client": None, "service": "", "last": {}, "error_logged": 0.0}


def configure(service: str) -> None:
    """Install the OFREP provider pointing at flagd (idempotent)."""
    from openfeature import api
    from openfeature.contrib.provider.ofrep import OFREPProvider

    host = os.environ.get("FLAGD_HOST", "flagd")
    port = os.environ.get("FLAGD_OFREP_PORT", "8016")
    provider = OFREPProvider(f"http://{host}:{port}", timeout=float(os.environ.get("FLAGD_TIMEOUT_S", "1.0")))
    provider.session.trust_env = False  # never a proxy from the environment: flagd is in-cluster
    api.set_provider(provider)
    _state.update(client=api.get_client(service), service=service)


def _evaluate(kind: str, key: str, default: Any) -> Any:
    client = _state["client"]
    if client is None:
        return default
    details = getattr(client, f"get_{kind}_details")(key, default)
    if details.error_code is not None and details.error_code.value != "FLAG_NOT_FOUND":
        now = time.monotonic()
        if now - _state["error_logged"] > 60:
            _state["error_logged"] = now
            logs.warning("feature_flag_unavailable", flag=key, error=str(details.error_message or details.error_code),
                         using_default=default)
    value, variant = details.value, details.variant or "default"
    span = trace.get_current_span()
    if span.is_recording():
        span.add_event("feature_flag.evaluation", {"feature_flag.key": key, "feature_flag.result.variant": variant,
                                                   "feature_flag.provider.name": "flagd"})
        span.set_attribute(f"app.feature_flag.{key}", str(value))
    telemetry.FLAG_EVALUATIONS.labels(_state["service"], key, variant).inc()
    with _lock:
        previous = _state["last"].get(key, default)
        _state["last"][key] = value
    if previous != value:
        logs.info("feature_flag_changed", flag=key, variant=variant, value=value, previous=previous)
    return value


def enabled(key: str) -> bool:
    return bool(_evaluate("boolean", key, False))


def number(key: str, default: float = 0.0) -> float:
    return float(_evaluate("float", key, float(default)))


def integer(key: str, default: int = 0) -> int:
    return int(_evaluate("integer", key, int(default)))
