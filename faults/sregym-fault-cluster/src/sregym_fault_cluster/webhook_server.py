"""An admission webhook server (the ``sregym/admission-webhook`` image): HTTPS, AdmissionReview v1.

Runs as a pod; standard library only. Configured by environment:

* ``WEBHOOK_MODE``: ``allow`` admits everything (a policy webhook that is healthy); ``set-memory``
  answers with a JSONPatch that sets every container's memory limit (and request) to
  ``WEBHOOK_MEMORY``; ``delay`` admits after ``WEBHOOK_DELAY_SECONDS``.
* ``TLS_CERT`` / ``TLS_KEY``: the serving certificate (a mounted Secret), ``PORT`` (8443).

Each decision is logged on one line, as a real webhook's log shows it.
"""

from __future__ import annotations

import base64
import json
import os
import ssl
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def decide(review: dict, mode: str, memory: str) -> tuple[dict, str]:
    """The AdmissionReview response for ``review`` and a log line."""
    request = review.get("request") or {}
    response: dict = {"uid": request.get("uid", ""), "allowed": True}
    obj = request.get("object") or {}
    name = (obj.get("metadata") or {}).get("name") or (obj.get("metadata") or {}).get("generateName", "")
    what = f"{request.get('operation', '?')} {request.get('kind', {}).get('kind', '?')} {name}"
    if mode == "set-memory" and request.get("kind", {}).get("kind") == "Pod":
        patch = []
        for index, container in enumerate((obj.get("spec") or {}).get("containers") or []):
            resources = container.get("resources") or {}
            if "resources" not in container:
                patch.append({"op": "add", "path": f"/spec/containers/{index}/resources", "value": {}})
            for field in ("limits", "requests"):
                if field not in resources:
                    patch.append({"op": "add", "path": f"/spec/containers/{index}/resources/{field}", "value": {}})
                patch.append({"op": "add", "path": f"/spec/containers/{index}/resources/{field}/memory",
                              "value": memory})
        if patch:
            response["patchType"] = "JSONPatch"
            response["patch"] = base64.b64encode(json.dumps(patch).encode()).decode()
            return response, f"mutated {what}: memory limit and request set to {memory} (resource policy)"
    return response, f"allowed {what}"


class Handler(BaseHTTPRequestHandler):
    server_version = "admission-webhook/1.0"
    mode = "allow"
    memory = "16Mi"
    delay = 0.0

    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        length = int(self.headers.get("Content-Length") or 0)
        try:
            review = json.loads(self.rfile.read(length) or b"{}")
        except ValueError:
            self.send_error(400, "malformed AdmissionReview")
            return
        if self.mode == "delay" and self.delay:
            time.sleep(self.delay)
        response, line = decide(review, self.mode, self.memory)
        body = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                           "response": response}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        print(time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), line, flush=True)

    def do_GET(self) -> None:  # noqa: N802
        body = b"ok\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # the decision lines are the log
        pass


def main() -> int:
    Handler.mode = os.environ.get("WEBHOOK_MODE", "allow")
    Handler.memory = os.environ.get("WEBHOOK_MEMORY", "16Mi")
    Handler.delay = float(os.environ.get("WEBHOOK_DELAY_SECONDS", "0") or 0)
    port = int(os.environ.get("PORT", "8443"))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(os.environ.get("TLS_CERT", "/tls/tls.crt"), os.environ.get("TLS_KEY", "/tls/tls.key"))
    server = ThreadingHTTPServer(("0.0.0.0", port), Handler)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    print(f"admission webhook serving on :{port} (mode {Handler.mode})", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
