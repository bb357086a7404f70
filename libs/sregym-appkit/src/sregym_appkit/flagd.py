"""A flagd-compatible flag store: flagd's JSON flag file, reloaded on change, evaluated for OFREP.

Flag definitions are flagd's JSON (``{"flags": {"adFailure": {"state": "ENABLED", "variants":
{"on": true, "off": false}, "defaultVariant": "off"}}}``), usually a ConfigMap mounted into the
app's ``flagd`` pod. :class:`FlagFile` re-reads the file when its bytes change, as flagd's file
sync does; a file that does not parse keeps the last good flags and is logged once.

Evaluation is static: the ``defaultVariant`` of an ENABLED flag (reason ``STATIC``, or ``DEFAULT``
when the flag has ``targeting`` rules, which are not evaluated); a DISABLED or unknown flag is
``FLAG_NOT_FOUND`` (the caller uses its own default). Answers are the OpenFeature Remote Evaluation
Protocol's bodies; an app's HTTP server only routes ``POST /ofrep/v1/evaluate/flags[/{key}]`` to
:meth:`FlagFile.evaluate` and :meth:`FlagFile.evaluate_all`.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from . import logs

OFREP_PATH = "/ofrep/v1/evaluate/flags"
#: the JSON schema a flag file names (flagd's own)
SCHEMA = "https://flagd.dev/schema/v0/flags.json"


def flag_file(flags: Iterable[tuple[str, str, Mapping[str, Any]]]) -> str:
    """The flag file an app ships (its ``flagd-config`` ConfigMap): ``flags`` are (name, description,
    variants) in the file's order, each ENABLED and serving its ``off`` variant until a fault edits
    the file; JSON indented by two, ending in a newline."""
    doc = {name: {"description": description, "state": "ENABLED", "variants": dict(variants), "defaultVariant": "off"}
           for name, description, variants in flags}
    return json.dumps({"$schema": SCHEMA, "flags": doc}, indent=2) + "\n"


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


def _served(flag: Any) -> Any:
    """What a flag answers, for logging what a reload changed."""
    if not isinstance(flag, dict):
        return None
    return flag.get("defaultVariant") if flag.get("state") == "ENABLED" else "(disabled)"


class FlagFile:
    """The current flag set, re-read from ``path`` when its bytes change."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.flags: dict[str, Any] = {}
        self.digest = ""
        self.loaded = False
        self.lock = threading.Lock()

    def reload(self) -> bool:
        """Re-read the file if it changed; return whether the flag set changed."""
        try:
            with open(self.path, "rb") as handle:
                raw = handle.read()
        except OSError as exc:
            if not self.loaded:
                logs.error("flags_unreadable", file=self.path, error=str(exc))
            return False
        digest = hashlib.sha256(raw).hexdigest()
        if digest == self.digest:
            return False
        self.digest = digest  # a bad file is logged once; the last good flags keep serving
        try:
            flags = parse(raw)
        except ValueError as exc:
            logs.error("flags_invalid", file=self.path, error=str(exc), kept=len(self.flags))
            return False
        with self.lock:
            before, self.flags, self.loaded = self.flags, flags, True
        changed = {k: _served(v) for k, v in flags.items() if _served(before.get(k)) != _served(v)}
        logs.info("flags_reloaded", file=self.path, flags=len(flags), changed=changed)
        return True

    def evaluate(self, key: str) -> tuple[int, dict[str, Any]]:
        """OFREP's answer for one flag: ``(200, evaluation)`` or ``(404, FLAG_NOT_FOUND error)``."""
        with self.lock:
            flag = self.flags.get(key)
        if flag is None or flag.get("state") != "ENABLED":
            why = "is not defined" if flag is None else "is disabled"
            return 404, {"key": key, "errorCode": "FLAG_NOT_FOUND", "errorDetails": f"flag {key!r} {why}"}
        variant = flag["defaultVariant"]
        return 200, {"key": key, "value": flag["variants"][variant], "variant": variant,
                     "reason": "DEFAULT" if flag.get("targeting") else "STATIC", "metadata": flag.get("metadata", {})}

    def evaluate_all(self) -> dict[str, Any]:
        """OFREP's bulk answer: every ENABLED flag's evaluation."""
        with self.lock:
            keys = [k for k, v in self.flags.items() if v.get("state") == "ENABLED"]
        return {"flags": [self.evaluate(k)[1] for k in keys]}


def serve(stop: threading.Event, http_server: Callable[[FlagFile, int], Any], *, default_file: str) -> None:
    """The app's ``flagd`` process: the flags of ``FLAGD_FILE`` (``default_file``) answered by
    ``http_server(store, port)`` (the app's HTTP server routing OFREP to the store, on
    ``FLAGD_OFREP_PORT``, 8016) and re-read every ``FLAGD_RELOAD_S`` seconds (1) until ``stop`` is
    set; ``/readyz`` on ``ADMIN_PORT`` is ready once a flag file has loaded."""
    from .admin import admin_server

    port, path = int(os.environ.get("FLAGD_OFREP_PORT", "8016")), os.environ.get("FLAGD_FILE", default_file)
    store = FlagFile(path)
    store.reload()
    server = http_server(store, port)
    admin = admin_server(int(os.environ.get("ADMIN_PORT", "9464")), lambda: (store.loaded, {"flags": len(store.flags)}))
    server.start()
    admin.start()
    logs.info("service_started", port=port, file=path, flags=len(store.flags))
    while not stop.wait(float(os.environ.get("FLAGD_RELOAD_S", "1"))):
        store.reload()
    server.stop()
    admin.stop()


def command(http_server: Callable[[FlagFile, int], Any], *, default_file: str) -> Callable[[list[str]], int]:
    """The image's ``flagd`` command (``main`` of the app's flagd module): JSON logs as ``flagd``, then
    :func:`serve` with the app's ``http_server`` until SIGTERM or SIGINT; exit status 0."""
    def main(rest: list[str]) -> int:
        from .service import stop_on_signals

        logs.configure("flagd")
        serve(stop_on_signals(), http_server, default_file=default_file)
        return 0

    return main
