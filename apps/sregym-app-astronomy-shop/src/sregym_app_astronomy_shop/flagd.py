"""``flagd``: a flagd-compatible flag service answering the OpenFeature Remote Evaluation Protocol.

Flag definitions are flagd's JSON read from ``FLAGD_FILE`` (the ConfigMap ``flagd-config`` mounted
at ``/etc/flagd``) and reloaded within a second of a change; parsing, reloading and evaluation are
:mod:`sregym_appkit.flagd` (shared with TrainTicket's flagd).

API (port 8016)::

    POST /ofrep/v1/evaluate/flags/{key}   {"key","value","variant","reason","metadata"} or 404
    POST /ofrep/v1/evaluate/flags         {"flags": [...]} (bulk)
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any

from sregym_appkit import logs
from sregym_appkit.flagd import OFREP_PATH, FlagFile, parse

__all__ = ["FlagFile", "parse", "run"]


def run(port: int, path: str, stop: threading.Event) -> None:
    from .rpc import HttpServer, admin_server

    store = FlagFile(path)
    store.reload()

    def route(method: str, url: str, query: dict[str, str], body: Any) -> tuple[int, Any]:
        if method != "POST" or not url.startswith(OFREP_PATH):
            return 404, {"error": "not found", "hint": f"POST {OFREP_PATH}/{{key}}"}
        key = url[len(OFREP_PATH):].strip("/")
        return store.evaluate(key) if key else (200, store.evaluate_all())

    server = HttpServer("flagd", port, route, traced=False)  # evaluations are attributed to the callers' spans
    admin = admin_server(int(os.environ.get("ADMIN_PORT", "9464")), lambda: (store.loaded, {"flags": len(store.flags)}))
    server.start()
    admin.start()
    logs.info("service_started", port=port, file=path, flags=len(store.flags))
    while not stop.wait(float(os.environ.get("FLAGD_RELOAD_S", "1"))):
        store.reload()
    server.stop()
    admin.stop()
    time.sleep(0)
