"""Feature flags: a flagd-compatible ``flagd`` (OFREP) and the services' OpenFeature client.

``flagd`` serves the flags of the ConfigMap ``flagd-config`` (flagd's JSON, mounted at
``/etc/flagd/flags.json``) over the OpenFeature Remote Evaluation Protocol
(``POST /ofrep/v1/evaluate/flags/{key}``) and reloads the file within a second of a change. A file
that does not parse keeps the last good flags (logged). Evaluation is static: an ENABLED flag's
``defaultVariant``; a DISABLED or unknown flag is FLAG_NOT_FOUND and the caller uses its default.

Services evaluate through the OpenFeature SDK with the OFREP provider; an answer is reused for
``FLAG_CACHE_S`` (1 s) so flagd sees a handful of requests per service per second at most. Every
evaluation is a ``feature_flag.evaluation`` span event and a counter sample; a change is logged.
The flag file's parsing, reloading and evaluation are :mod:`sregym_appkit.flagd` (shared with
Astronomy Shop's flagd).
"""

from __future__ import annotations

import json
import os
import threading
import time
from typing import Any

from opentelemetry import trace
from sregym_appkit.flagd import FlagFile, parse  # noqa: F401 - parse: the app's flag file checker

from . import runtime

_lock = threading.Lock()
_client: dict[str, Any] = {"client": None, "service": "", "cache": {}, "last": {}, "error_logged": 0.0}


# ------------------------------------------------------------------------------- the services' side
def configure(service: str) -> None:
    from openfeature import api
    from openfeature.contrib.provider.ofrep import OFREPProvider

    base = f"http://{os.environ.get('FLAGD_HOST', 'flagd')}:{os.environ.get('FLAGD_OFREP_PORT', '8016')}"
    provider = OFREPProvider(base, timeout=float(os.environ.get("FLAGD_TIMEOUT_S", "1.0")))
    provider.session.trust_env = False  # flagd is in-cluster: never a proxy from the environment
    api.set_provider(provider)
    _client.update(client=api.get_client(service), service=service)


def enabled(key: str) -> bool:
    """Whether the flag's current variant is ``True`` (False when flagd cannot answer)."""
    now = time.monotonic()
    ttl = float(os.environ.get("FLAG_CACHE_S", "1"))
    with _lock:
        cached = _client["cache"].get(key)
    if cached and now - cached[0] < ttl:
        value, variant = cached[1], cached[2]
    else:
        value, variant = _ask(key)
        with _lock:
            _client["cache"][key] = (now, value, variant)
    span = trace.get_current_span()
    if span.is_recording():
        span.add_event("feature_flag.evaluation", {"feature_flag.key": key, "feature_flag.result.variant": variant,
                                                   "feature_flag.provider.name": "flagd"})
    runtime.FLAG_EVALUATIONS.labels(_client["service"], key, variant).inc()
    with _lock:
        previous = _client["last"].get(key, False)
        _client["last"][key] = value
    if previous != value:
        runtime.info("feature_flag_changed", flag=key, variant=variant, value=value, previous=previous)
    return value


def _ask(key: str) -> tuple[bool, str]:
    client = _client["client"]
    if client is None:
        return False, "default"
    details = client.get_boolean_details(key, False)
    if details.error_code is not None and details.error_code.value != "FLAG_NOT_FOUND":
        now = time.monotonic()
        if now - _client["error_logged"] > 60:
            _client["error_logged"] = now
            runtime.warning("feature_flag_unavailable", flag=key, error=str(details.error_message or details.error_code))
    return bool(details.value), details.variant or "default"


# ------------------------------------------------------------------------------------- flagd
def serve_flagd(port: int, path: str, stop: threading.Event) -> None:
    """flagd: the shared flag store (:mod:`sregym_appkit.flagd`) over OFREP."""
    store = FlagFile(path)
    store.reload()

    def one(request: runtime.Request) -> Any:
        status, body = store.evaluate(request["params"]["key"])
        if status != 200:  # OFREP's error body is the error object itself
            raise runtime.HttpError(status, json.dumps(body))
        return body

    server = runtime.HttpServer("flagd", port, [("POST", r"/ofrep/v1/evaluate/flags/(?P<key>[^/]+)", one),
                                                ("POST", r"/ofrep/v1/evaluate/flags/?", lambda _r: store.evaluate_all())],
                                traced=False)
    admin = runtime.AdminServer(int(os.environ.get("ADMIN_PORT", "9464")),
                                lambda: (store.loaded, {"flags": len(store.flags)}))
    server.start()
    admin.start()
    runtime.info("service_started", port=port, file=path, flags=len(store.flags))
    while not stop.wait(float(os.environ.get("FLAGD_RELOAD_S", "1"))):
        store.reload()
    server.stop()
    admin.stop()
