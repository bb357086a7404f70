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
import time
from typing import Any

from sregym_appkit.flagclient import FlagClient
from sregym_appkit.flagd import FlagFile, command, parse  # noqa: F401 - parse: the app's flag file checker

from . import runtime

_flags = FlagClient(runtime.FLAG_EVALUATIONS)


# ------------------------------------------------------------------------------- the services' side
configure = _flags.configure  # (service): install the OFREP provider pointing at flagd (idempotent)


def enabled(key: str) -> bool:
    """Whether the flag's current variant is ``True`` (False when flagd cannot answer)."""
    now = time.monotonic()
    ttl = float(os.environ.get("FLAG_CACHE_S", "1"))
    with _flags.lock:
        cached = _flags.cache.get(key)
    if cached and now - cached[0] < ttl:
        value, variant = cached[1], cached[2]
    else:
        answer, variant = _flags.ask("boolean", key, False)
        value = bool(answer)
        with _flags.lock:
            _flags.cache[key] = (now, value, variant)
    _flags.record(key, value, variant, False)
    return value


# ------------------------------------------------------------------------------------- flagd
def flagd_http_server(store: FlagFile, port: int) -> runtime.HttpServer:
    """flagd's OFREP routes on the app's HTTP server, answered by the shared flag store (untraced)."""
    def one(request: runtime.Request) -> Any:
        status, body = store.evaluate(request["params"]["key"])
        if status != 200:  # OFREP's error body is the error object itself
            raise runtime.HttpError(status, json.dumps(body))
        return body

    return runtime.HttpServer("flagd", port, [("POST", r"/ofrep/v1/evaluate/flags/(?P<key>[^/]+)", one),
                                              ("POST", r"/ofrep/v1/evaluate/flags/?", lambda _r: store.evaluate_all())],
                              traced=False)


#: ``serve flagd``: the shared flag store (:mod:`sregym_appkit.flagd`) over OFREP until SIGTERM
serve_flagd = command(flagd_http_server, default_file="/etc/flagd/flags.json")
