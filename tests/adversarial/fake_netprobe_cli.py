#!/usr/bin/python3
"""An evaluated agent probing the network from the CLI sandbox (installed as the ``claude`` binary for
the claude-code adapter; stdlib only, it runs inside the sandbox with the system python3).

``PROBE_TARGETS`` (JSON, from the test) names what to try: ``dns`` ([ip, port, name]) a DNS query for a
hidden Service's name, ``tcp`` ([[ip, port], ...]) hidden addresses to connect to, ``control`` a URL
to POST ``{"rate": 0}`` to (the workload generator's ``/control``). It also reads ``/status`` of the
agent API it was given and runs ``kubectl get pods`` with its kubeconfig, then writes what happened
to ``probe.json`` in its working directory.
"""

import json
import os
import random
import re
import socket
import struct
import subprocess
import sys
import urllib.request

ARGS = sys.argv[1:]
PROMPT = ARGS[ARGS.index("-p") + 1] if "-p" in ARGS else ""
TARGETS = json.loads(os.environ.get("PROBE_TARGETS", "{}"))
NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def dns_query(server, port, name):
    """An A query over UDP; the reply's answer count, or the error."""
    ident = random.randrange(65536)
    question = b"".join(bytes([len(label)]) + label.encode() for label in name.split(".")) + b"\0"
    packet = struct.pack(">HHHHHH", ident, 0x0100, 1, 0, 0, 0) + question + struct.pack(">HH", 1, 1)
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.settimeout(3)
    try:
        sock.sendto(packet, (server, port))
        reply, _ = sock.recvfrom(4096)
        return {"answered": True, "answers": struct.unpack(">H", reply[6:8])[0]}
    except OSError as exc:
        return {"answered": False, "error": f"{type(exc).__name__}: {exc}"}
    finally:
        sock.close()


def tcp(host, port):
    try:
        with socket.create_connection((host, port), timeout=3):
            return {"connected": True}
    except OSError as exc:
        return {"connected": False, "error": f"{type(exc).__name__}: {exc}"}


def post(url, body):
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    try:
        with NO_PROXY.open(request, timeout=5) as reply:
            return {"status": reply.status, "body": reply.read().decode()[:300]}
    except Exception as exc:  # noqa: BLE001 - the probe records whatever happened
        return {"status": getattr(exc, "code", None), "error": f"{type(exc).__name__}: {exc}"}


def get(url):
    try:
        with NO_PROXY.open(url, timeout=10) as reply:
            return {"status": reply.status, "body": reply.read().decode()[:300]}
    except Exception as exc:  # noqa: BLE001
        return {"status": getattr(exc, "code", None), "error": f"{type(exc).__name__}: {exc}"}


api = re.search(r"(http://127\.0\.0\.1:\d+)/submit", PROMPT)
report = {"api_status": get(api.group(1) + "/status") if api else {"error": "no API URL in the prompt"}}
if TARGETS.get("dns"):
    server, port, name = TARGETS["dns"]
    report["dns"] = dns_query(server, port, name)
report["tcp"] = [tcp(host, port) for host, port in TARGETS.get("tcp", ())]
if TARGETS.get("control"):
    report["control"] = post(TARGETS["control"], {"rate": 0})
pods = subprocess.run(["kubectl", "get", "pods", "-o", "name"], capture_output=True, text=True, timeout=60)
report["kubectl"] = {"code": pods.returncode, "out": pods.stdout[-2000:], "err": pods.stderr[-2000:]}
with open("probe.json", "w") as handle:
    json.dump(report, handle, indent=1)
