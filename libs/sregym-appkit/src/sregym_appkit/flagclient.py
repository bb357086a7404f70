"""Feature flags as an app's services see them: the OpenFeature SDK with the OFREP provider, asking
the app's ``flagd`` service (``FLAGD_HOST``:``FLAGD_OFREP_PORT``), as the OpenTelemetry demo's
services ask flagd.

What a flag did must be visible, since faults turn flags on: :meth:`FlagClient.record` makes every
evaluation a ``feature_flag.evaluation`` span event on the current span and a counter sample, and
logs a change of a flag's value once (``feature_flag_changed``), so logs and traces show which flag
turned a code path on. When flagd cannot answer, the caller's default (the healthy behaviour) is
used and the error is logged once a minute (:meth:`FlagClient.ask`).

Needs ``openfeature-sdk`` and ``openfeature-provider-ofrep`` (``sregym-appkit[flags]``), which the
images of apps with flags install.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any

from opentelemetry import trace

from . import logs

#: seconds between two ``feature_flag_unavailable`` warnings
UNAVAILABLE_LOG_EVERY_S = 60


class FlagClient:
    """One process's flag client; ``evaluations`` is the app's counter (service, flag, variant)."""

    def __init__(self, evaluations: Any) -> None:
        self.evaluations = evaluations
        self.client: Any = None
        self.service = ""
        self.last: dict[str, Any] = {}
        self.cache: dict[str, tuple[float, Any, str]] = {}  # for apps that reuse an answer a while
        self.error_logged = 0.0
        self.lock = threading.Lock()

    def configure(self, service: str) -> None:
        """Install the OFREP provider pointing at flagd (idempotent)."""
        from openfeature import api
        from openfeature.contrib.provider.ofrep import OFREPProvider

        base = f"http://{os.environ.get('FLAGD_HOST', 'flagd')}:{os.environ.get('FLAGD_OFREP_PORT', '8016')}"
        provider = OFREPProvider(base, timeout=float(os.environ.get("FLAGD_TIMEOUT_S", "1.0")))
        provider.session.trust_env = False  # flagd is in-cluster: never a proxy from the environment
        api.set_provider(provider)
        self.client, self.service = api.get_client(service), service

    def ask(self, kind: str, key: str, default: Any, **warning_fields: Any) -> tuple[Any, str]:
        """flagd's ``(value, variant)`` for ``key`` (``kind``: boolean, float, integer...); the default
        and variant ``default`` when flagd cannot answer or nothing is configured."""
        if self.client is None:
            return default, "default"
        details = getattr(self.client, f"get_{kind}_details")(key, default)
        if details.error_code is not None and details.error_code.value != "FLAG_NOT_FOUND":
            now = time.monotonic()
            if now - self.error_logged > UNAVAILABLE_LOG_EVERY_S:
                self.error_logged = now
                logs.warning("feature_flag_unavailable", flag=key,
                             error=str(details.error_message or details.error_code), **warning_fields)
        return details.value, details.variant or "default"

    def record(self, key: str, value: Any, variant: str, default: Any, *, span_attribute: bool = False) -> None:
        """Make one evaluation visible: span event (and ``app.feature_flag.<key>`` attribute when
        asked), counter sample, and a ``feature_flag_changed`` log line if the value changed."""
        span = trace.get_current_span()
        if span.is_recording():
            span.add_event("feature_flag.evaluation", {"feature_flag.key": key, "feature_flag.result.variant": variant,
                                                       "feature_flag.provider.name": "flagd"})
            if span_attribute:
                span.set_attribute(f"app.feature_flag.{key}", str(value))
        self.evaluations.labels(self.service, key, variant).inc()
        with self.lock:
            previous = self.last.get(key, default)
            self.last[key] = value
        if previous != value:
            logs.info("feature_flag_changed", flag=key, variant=variant, value=value, previous=previous)
