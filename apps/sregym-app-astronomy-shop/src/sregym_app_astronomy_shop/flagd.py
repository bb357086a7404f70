"""``flagd``: a flagd-compatible flag service answering the OpenFeature Remote Evaluation Protocol.

Flag definitions are flagd's JSON (``{"flags": {"adFailure": {"state": "ENABLED", "variants":
{"on": true, "off": false}, "defaultVariant": "off"}}}``) read from ``FLAGD_FILE`` (the ConfigMap
``flagd-config`` mounted at ``/etc/flagd``) and reloaded within a second of a change, as flagd's
file sync does; a file that does not parse keeps the last good flags and is logged.

API (port 8016)::

    POST /ofrep/v1/evaluate/flags/{key}   {"key","value","variant","reason","metadata"} or 404/400
    POST /ofrep/v1/evaluate/flags         {"flags": [...]} (bulk)

Evaluation is static: the ``defaultVariant`` of an ENABLED flag (reason STATIC); a DISABLED or
unknown flag is ``FLAG_NOT_FOUND`` (the caller uses its default). ``targeting`` rules are not
evaluated (reason DEFAULT), which the flags this app ships never use.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from typing import Any

from sregym_appkit import logs


class FlagStore:
    """The current flag set, reloaded from a file."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.flags: dict[str, Any] = {}
        self.digest = ""
        self.loaded = False
        self.lock = threading.Lock()

    def reload(self) -> bool:
        """Re-read the file if it changed; return whether the flag set changed."""
        try:
            raw = open(self.path, "rb").read()
        except OSError as exc:
            if self.loaded:
                return False
            logs.error("flags_unreadable", file=self.path, error=str(exc))
            return False
        digest = hashlib.sha256(raw).hexdigest()
        if digest == self.digest:
            return False
        try:
            flags = parse(raw)
        except ValueError as exc:
            self.digest = digest  # log a bad file once, keep serving the last good flags
            logs.error("flags_invalid", file=self.path, error=str(exc), kept=len(self.flags))
            return False
        with self.lock:
            before = self.flags
            self.flags, self.digest, self.loaded = flags, digest, True
        changed = {k: _default_of(v) for k, v in flags.items() if _default_of(before.get(k)) != _default_of(v)}
        logs.info("flags_reloaded", file=self.path, flags=len(flags), changed=changed)
        return True

    def evaluate(self, key: str) -> tuple[int, dict[str, Any]]:
        with self.lock:
            flag = self.flags.get(key)
        if flag is None:
            return 404, {"key": key, "errorCode": "FLAG_NOT_FOUND", "errorDetails": f"flag {key!r} is not defined"}
        if flag.get("state") != "ENABLED":
            return 404, {"key": key, "errorCode": "FLAG_NOT_FOUND", "errorDetails": f"flag {key!r} is disabled"}
        variant = flag["defaultVariant"]
        reason = "DEFAULT" if flag.get("targeting") else "STATIC"
        return 200, {"key": key, "value": flag["variants"][variant], "variant": variant, "reason": reason,
                     "metadata": flag.get("metadata", {})}


def _default_of(flag: Any) -> Any:
    if not isinstance(flag, dict):
        return None
    if flag.get("state") != "ENABLED":
        return "(disabled)"
    return flag.get("defaultVariant")


def parse(raw: bytes | str) -> dict[str, Any]:
    """The ``flags`` object of a flagd flag file; ValueError naming the JSON path of a problem."""
    try:
        doc = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON: {exc}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("flags"), dict):
        raise ValueError("$.flags: must be an object of flag definitions")
    for key, flag in doc["flags"].items():
        where = f"$.flags.{key}"
        if not isinstance(flag, dict):
            raise ValueError(f"{where}: must be an object")
        if flag.get("state") not in ("ENABLED", "DISABLED"):
            raise ValueError(f"{where}.state: must be ENABLED or DISABLED")
        variants = flag.get("variants")
        if not isinstance(variants, dict) or not variants:
            raise ValueError(f"{where}.variants: must be a non-empty object")
        if flag.get("defaultVariant") not in variants:
            raise ValueError(f"{where}.defaultVariant: {flag.get('defaultVariant')!r} is not one of {sorted(variants)}")
    return doc["flags"]


def run(port: int, path: str, stop: threading.Event) -> None:
    from .rpc import HttpServer, admin_server

    store = FlagStore(path)
    store.reload()

    def route(method: str, url: str, query: dict[str, str], body: Any) -> tuple[int, Any]:
        prefix = "/ofrep/v1/evaluate/flags"
        if method != "POST" or not url.startswith(prefix):
            return 404, {"error": "not found", "hint": f"POST {prefix}/{{key}}"}
        key = url[len(prefix):].strip("/")
        if key:
            return store.evaluate(key)
        with store.lock:
            keys = list(store.flags)
        return 200, {"flags": [store.evaluate(k)[1] for k in keys]}

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
