"""``flagd``: a flagd-compatible flag service answering the OpenFeature Remote Evaluation Protocol.

Flag definitions are flagd's JSON read from ``FLAGD_FILE`` (the ConfigMap ``flagd-config`` mounted
at ``/etc/flagd``) and reloaded within a second of a change; parsing, reloading and evaluation are
:mod:`sregym_appkit.flagd` (shared with TrainTicket's flagd).

API (port 8016)::

    POST /ofrep/v1/evaluate/flags/{key}   {"key","value","variant","reason","metadata"} or 404
    POST /ofrep/v1/evaluate/flags         {"flags": [...]} (bulk)
"""

from __future__ import annotations

from typing import Any

from sregym_appkit.flagd import OFREP_PATH, FlagFile, command, parse

__all__ = ["FlagFile", "main", "parse"]


def http_server(store: FlagFile, port: int) -> Any:
    """OFREP on the shop's HTTP server, routed to ``store`` (untraced: evaluations are attributed to the
    callers' spans)."""
    from .rpc import HttpServer

    def route(method: str, url: str, query: dict[str, str], body: Any) -> tuple[int, Any]:
        if method != "POST" or not url.startswith(OFREP_PATH):
            return 404, {"error": "not found", "hint": f"POST {OFREP_PATH}/{{key}}"}
        key = url[len(OFREP_PATH):].strip("/")
        return store.evaluate(key) if key else (200, store.evaluate_all())

    return HttpServer("flagd", port, route, traced=False)


#: ``serve flagd``: ``FLAGD_FILE`` (default ``/etc/flagd/demo.flagd.json``) on ``FLAGD_OFREP_PORT`` until SIGTERM
main = command(http_server, default_file="/etc/flagd/demo.flagd.json")
