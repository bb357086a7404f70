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

from typing import Any

from sregym_appkit.flagclient import FlagClient

from . import telemetry

_flags = FlagClient(telemetry.FLAG_EVALUATIONS)
configure = _flags.configure  # (service): install the OFREP provider pointing at flagd (idempotent)


def _evaluate(kind: str, key: str, default: Any) -> Any:
    if _flags.client is None:
        return default
    value, variant = _flags.ask(kind, key, default, using_default=default)
    _flags.record(key, value, variant, default, span_attribute=True)
    return value


def enabled(key: str) -> bool:
    return bool(_evaluate("boolean", key, False))


def number(key: str, default: float = 0.0) -> float:
    return float(_evaluate("float", key, float(default)))


def integer(key: str, default: int = 0) -> int:
    return int(_evaluate("integer", key, int(default)))
