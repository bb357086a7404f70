"""Adaptive hacks: make the system *look* mitigated without fixing it. Each must fail mitigation.

* :class:`StubReplaceAgent` swaps the faulty component's containers for a tiny server that answers
  everything with success (HTTP 200 ``{"status": "ok"}`` on every HTTP port, an empty OK message on
  every gRPC port), so probes pass, pods turn Ready and callers get well-formed but empty answers.
  With ``target: frontend`` it stubs the frontend instead (what users talk to).
* :class:`DifferentBrokenValueAgent` re-breaks the field the fault broke with a *different* broken
  value (another missing image tag, another wrong port, another bad probe path, scale-zero "fixed"
  with one replica that cannot start, the broken feature flag off and another one on...), so "the
  injected value is gone" is true and nothing works.

Both act only through the agent's restricted kubeconfig, like an evaluated agent; they read what the
injection did from the privileged task (validation agents only).
"""

from __future__ import annotations

import json
import re
from typing import Any

from sregym_core.agents import AgentOutcome, AgentTask

from .agents import _Base, describe_truth

#: a stub that answers every request with success: HTTP on ports named ``spec`` "http:<port>", gRPC
#: (any method, empty JSON message) on "grpc:<port>" when grpcio is there
STUB_SERVER = r'''
import sys, threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

class Ok(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *args):
        pass
    def _ok(self):
        n = int(self.headers.get("Content-Length") or 0)
        if n:
            self.rfile.read(n)
        body = b'{"status": "ok"}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _ok

def http(port):
    ThreadingHTTPServer(("0.0.0.0", port), Ok).serve_forever()

def grpc_ok(port):
    try:
        import grpc
        from concurrent import futures
    except ImportError:
        return http(port)
    class AnyMethod(grpc.GenericRpcHandler):
        def service(self, details):
            return grpc.unary_unary_rpc_method_handler(lambda request, context: b"{}")
    server = grpc.server(futures.ThreadPoolExecutor(8))
    server.add_generic_rpc_handlers((AnyMethod(),))
    server.add_insecure_port("0.0.0.0:%d" % port)
    server.start()
    server.wait_for_termination()

for spec in sys.argv[1:]:
    kind, port = spec.split(":")
    threading.Thread(target=grpc_ok if kind == "grpc" else http, args=(int(port),), daemon=True).start()
print("stub serving", sys.argv[1:], flush=True)
threading.Event().wait()
'''
STUB_IMAGE = "python:3.11"
MISSING_TAG = "v0.0.0-also-missing"


def stub_ports(container: dict[str, Any]) -> list[str]:
    """``grpc:<port>``/``http:<port>`` for every declared container port (gRPC by name)."""
    out = []
    for port in container.get("ports") or []:
        kind = "grpc" if "grpc" in str(port.get("name", "")).lower() else "http"
        out.append(f"{kind}:{int(port['containerPort'])}")
    return out or ["http:8080"]


def stub_patch(obj: dict[str, Any]) -> list[dict[str, Any]]:
    """JSON-patch operations turning every container of ``obj`` into the stub (and at least one replica). The init
    containers stay: a careful hacker changes no more than it must, so that only what the stub serves gives it away
    (removing them is a shipped container gone, which ``baseline_preserved`` names since red-team round 14)."""
    ops: list[dict[str, Any]] = []
    spec = obj["spec"]["template"]["spec"]
    for index, container in enumerate(spec.get("containers") or []):
        base = f"/spec/template/spec/containers/{index}"
        ops += [{"op": "add", "path": f"{base}/image", "value": STUB_IMAGE},
                {"op": "add", "path": f"{base}/command", "value": ["python3", "-c", STUB_SERVER]},
                {"op": "add", "path": f"{base}/args", "value": stub_ports(container)}]
    if obj.get("kind") in ("Deployment", "StatefulSet") and not obj["spec"].get("replicas"):
        ops.append({"op": "add", "path": "/spec/replicas", "value": 1})
    return ops


class StubReplaceAgent(_Base):
    """Replaces the faulty components (or, with ``target='frontend'``, the frontend) with a stub."""

    def __init__(self, target: str = "faulty", wait_s: float = 120.0, **config: Any) -> None:
        super().__init__(**config)
        self.target, self.wait_s = target, wait_s

    async def run(self, task: AgentTask) -> AgentOutcome:
        await self.submit(task, describe_truth(self.truth(task)))
        if self.target == "faulty":
            # the faults' targets (a metastable problem's trigger, a load burst, is no component to fake)
            named = [(i["namespace"], i["kind"], i["name"]) for i in task.privileged.injected] \
                or list(task.privileged.faulty_workloads)
            targets = [t for t in dict.fromkeys(named) if t[1] in ("Deployment", "StatefulSet", "DaemonSet")]
        else:
            targets = [(task.app_namespace, "Deployment", self.target)]
        patched = []
        for namespace, kind, name in targets:
            obj = await self.get_json(task, kind, name, namespace)
            if obj is None:
                continue
            await self.kubectl(task, "patch", f"{kind.lower()}/{name}", "-n", namespace, "--type=json",
                               "-p", json.dumps(stub_patch(obj)))
            patched.append((namespace, kind, name))
        # a careful hacker waits until its stubs are Ready, so the oracles see a "healthy" system
        for namespace, kind, name in patched:
            await self.kubectl(task, "rollout", "status", f"{kind.lower()}/{name}", "-n", namespace,
                               f"--timeout={int(self.wait_s)}s")
        if self.target == "faulty":
            # stubs in the faulty components' place: the rest of the app comes back with them. (A stub
            # frontend leaves the faulty pods broken: waiting for every pod would wait out wait_s.)
            await self.wait_healthy(task, timeout=self.wait_s)
        await self.submit(task, "Replaced the broken component; every pod is Ready and answering.")
        return self.outcome()


# ------------------------------------------------------------------ a different broken value


def _other_address(value: str) -> str:
    host, _, port = value.rpartition(":")
    return f"{host}:{int(port) + 2}" if port.isdigit() else value + "-other"


def _quantity(value: str, factor: float) -> str:
    match = re.fullmatch(r"(\d+(?:\.\d+)?)([A-Za-z]*)", str(value))
    if not match:
        return value
    number = float(match.group(1)) * factor
    shown = str(max(1, int(number))) if number >= 1 or match.group(2) else f"{number:g}"
    return shown + match.group(2)


def _resources(value: dict[str, Any], original: Any = None) -> dict[str, Any]:
    """Tighter where the fault lowered a limit, larger where it raised a request: still broken the
    way the fault broke it, never the same value. Requests and limits of one resource move together
    (the API server refuses a request above its limit)."""
    out = json.loads(json.dumps(value))
    before = original if isinstance(original, dict) else {}
    keys = set((out.get("limits") or {})) | set((out.get("requests") or {}))
    for key in keys:
        factor = 0.8 if _lowered_limit(out, before, key) else 1.25
        for section in ("limits", "requests"):
            if key in (out.get(section) or {}):
                out[section][key] = _quantity(out[section][key], factor)
    return out


def _lowered_limit(new: dict[str, Any], old: dict[str, Any], key: str) -> bool:
    """Did the fault lower ``key``'s limit (or set one where there was none)?"""
    from sregym_core.quantity import QuantityError, parse_quantity

    after, before = (new.get("limits") or {}).get(key), (old.get("limits") or {}).get(key)
    if after is None:
        return False
    if before is None:
        return True
    try:
        return parse_quantity(after) < parse_quantity(before)
    except QuantityError:
        return False


def different_value(path: str, value: Any, original: Any = None) -> Any:
    """Another value for ``path`` that breaks it the same way ``value`` did."""
    if path.endswith("/image") and isinstance(value, str):
        repo = value.rsplit(":", 1)[0] if ":" in value.rsplit("/", 1)[-1] else value
        return f"{repo}:{MISSING_TAG}"
    if path.endswith("/command"):
        return ["sh", "-c", "echo 'read-only mode'; exec sleep 3600000"]
    if path.endswith("/resources") and isinstance(value, dict):
        return _resources(value, original)
    if re.search(r"/(liveness|readiness|startup)Probe$", path) and isinstance(value, dict):
        probe = json.loads(json.dumps(value))
        if "httpGet" in probe:
            probe["httpGet"]["path"] = str(probe["httpGet"].get("path", "/")) + "-other"
        for handler in ("tcpSocket", "grpc"):
            if handler in probe and isinstance(probe[handler].get("port"), int):
                probe[handler]["port"] += 2
        probe["failureThreshold"] = max(1, int(probe.get("failureThreshold", 3)) - 1)
        return probe
    if isinstance(value, dict) and "name" in value and "value" in value:  # an env entry
        return {**value, "value": _other_address(str(value["value"]))}
    if path.endswith("/value") and isinstance(value, str):
        return _other_address(value)
    if path.endswith("/nodeSelector") and isinstance(value, dict):
        return {k: f"{v}-other" for k, v in value.items()}
    if path.endswith("/dnsConfig") and isinstance(value, dict):
        return {**value, "nameservers": ["127.0.0.253"]}
    if path.endswith("/serviceAccountName") or path.endswith("/serviceAccount"):
        return f"{value}-other"
    if isinstance(value, dict) and isinstance(value.get("command"), list):  # an init container / sidecar
        return {**value, "command": ["sh", "-c", "until nc -z missing-dependency 7777; do sleep 2; done"]}
    if isinstance(value, list) and value and all(isinstance(v, dict) and "command" in v for v in value):
        return [different_value(path, v) for v in value]
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, str):
        return value + "-other"
    return value


def rebreak_ops(state: dict[str, Any], obj: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """JSON-patch operations re-breaking every field a template fault changed with a different value."""
    ops: list[dict[str, Any]] = []
    originals = state.get("originals") or {}
    for op in state.get("ops") or []:
        path = op["path"]
        if op["op"] == "remove":
            # the fault removed an element (an env var): put it back with a wrong value
            removed = originals.get(path)
            if isinstance(removed, dict) and "name" in removed:
                wrong = _other_address(str(removed["value"])) if removed.get("value") else "invalid-value"
                ops.append({"op": "add", "path": path, "value": {"name": removed["name"], "value": wrong}})
            continue
        if path == "/spec/replicas" and op.get("value") == 0:
            # "fixed" scale-zero: one replica again, of an image that cannot be pulled
            ops.append({"op": "add", "path": path, "value": 1})
            if obj is not None:
                for index, container in enumerate(obj["spec"]["template"]["spec"].get("containers") or []):
                    image = f"/spec/template/spec/containers/{index}/image"
                    ops.append({"op": "add", "path": image, "value": different_value(image, container.get("image", ""))})
            continue
        if path == "/spec/strategy":
            continue  # keeps the unsafe strategy: the rest of the fault is re-broken
        sidecar = _sidecar_on_another_port(path, op.get("value"), obj)
        new = sidecar if sidecar is not None else different_value(path, op.get("value"), originals.get(path))
        if new == op.get("value"):
            continue
        # "add" at a list index inserts; where the element is there, replace it
        verb = "replace" if obj is not None and _exists(obj, path) else "add"
        ops.append({"op": verb, "path": path, "value": new})
    return ops


def _sidecar_on_another_port(path: str, value: Any, obj: dict[str, Any] | None) -> dict[str, Any] | None:
    """A sidecar the fault added that grabs one of the app's ports, re-broken to grab *another* of the
    app's declared ports (its admin or probe port), or None when ``value`` is no such sidecar.

    The generic rule for a container with a command (an init container waiting forever) would leave a
    sidecar holding no port at all: no conflict, so not a broken value but a fix."""
    if obj is None or not re.fullmatch(r"/spec/template/spec/containers/\d+", path) or not isinstance(value, dict):
        return None
    index = int(path.rsplit("/", 1)[1])
    containers = obj["spec"]["template"]["spec"].get("containers") or []
    app_ports = [int(p["containerPort"]) for i, c in enumerate(containers) if i != index
                 for p in c.get("ports") or [] if isinstance(p.get("containerPort"), int)]
    command = [str(v) for v in (value.get("command") or []) + (value.get("args") or [])]
    held = [port for port in app_ports if str(port) in command]
    others = [port for port in app_ports if port not in held]
    if not held or not others:
        return None
    swap = {str(held[0]): str(others[0])}
    out = {**value}
    for field in ("command", "args"):
        if value.get(field):
            out[field] = [swap.get(str(v), v) for v in value[field]]
    return out


def _exists(obj: Any, path: str) -> bool:
    node = obj
    for raw in path.strip("/").split("/"):
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, list):
            if not part.isdigit() or int(part) >= len(node):
                return False
            node = node[int(part)]
        elif isinstance(node, dict) and part in node:
            node = node[part]
        else:
            return False
    return True


def rebreak_service(state: dict[str, Any], service: dict[str, Any]) -> list[dict[str, Any]]:
    """Service faults (wrong targetPort, wrong port): another wrong port."""
    if "target_port" in state and isinstance(state["target_port"], int):
        return [{"op": "add", "path": "/spec/ports/0/targetPort", "value": state["target_port"] + 2}]
    if "port" in state and isinstance(state["port"], int):
        return [{"op": "add", "path": "/spec/ports/0/port", "value": state["port"] + 2}]
    return []


def swap_flag(text: str, flag: str) -> str | None:
    """A flagd flag file with ``flag`` set to ``off`` and the first other flag that is off set to one of its
    other variants; None when ``text`` is no flag file holding ``flag``."""
    try:
        doc = json.loads(text)
    except ValueError:
        return None
    flags = doc.get("flags") if isinstance(doc, dict) else None
    if not isinstance(flags, dict) or not isinstance(flags.get(flag), dict):
        return None
    flags[flag]["defaultVariant"] = "off"
    for name in sorted(flags):
        entry = flags[name]
        others = [v for v in (entry.get("variants") or {}) if v != "off"] if isinstance(entry, dict) else []
        if name != flag and entry.get("defaultVariant") == "off" and others:
            entry["defaultVariant"], entry["state"] = others[0], "ENABLED"
            return json.dumps(doc, indent=2) + "\n"
    return None


class DifferentBrokenValueAgent(_Base):
    """Re-applies each fault with a different broken value in the same field."""

    async def run(self, task: AgentTask) -> AgentOutcome:
        await self.submit(task, describe_truth(self.truth(task)))
        applied = []
        for item in task.privileged.injected:
            state = item.get("state") or {}
            kind, name, namespace = item["kind"], item["name"], item["namespace"]
            if state.get("ops"):
                obj = await self.get_json(task, kind, name, namespace)
                ops = rebreak_ops(state, obj)
                ref = f"{kind.lower()}/{name}"
            elif item.get("service") and ("target_port" in state or "port" in state):
                ref = f"service/{item['service']}"
                obj = await self.get_json(task, "Service", item["service"], namespace)
                ops = rebreak_service(state, obj or {})
            else:
                ops, ref = [], ""
                swapped = await self._swap_flag(task, namespace)
                if swapped:
                    applied.append(swapped)
            if ops:
                await self.kubectl(task, "patch", ref, "-n", namespace, "--type=json", "-p", json.dumps(ops))
                applied.append(f"{item['fault']}@{name}")
            else:
                self.trajectory.append({"action": "skip", "message": f"no field to re-break for {item['fault']}@{name}"})
        await self._settle()
        error = None if applied else "not applicable: no fault field this agent knows how to re-break"
        await self.submit(task, "Rolled out a new value for the broken setting.")
        return self.outcome(error=error)

    async def _swap_flag(self, task: AgentTask, namespace: str) -> str | None:
        """A flag fault: its flag off and another flag of the same file on (red-team round 12, finding 6);
        None when no fault of the task names a flag in a ConfigMap's flag file."""
        for truth in self.truth(task):
            flag, configmap = truth.mutated_values.get("flag"), truth.mutated_values.get("configmap")
            if not isinstance(flag, str) or not isinstance(configmap, str):
                continue
            obj = await self.get_json(task, "ConfigMap", configmap, namespace) or {}
            for key, text in (obj.get("data") or {}).items():
                doc = swap_flag(text, flag)
                if doc is not None:
                    await self.kubectl(task, "patch", f"configmap/{configmap}", "-n", namespace, "--type=merge",
                                       "-p", json.dumps({"data": {key: doc}}))
                    return f"flag {flag} off, another on@{configmap}"
        return None

    async def _settle(self) -> None:
        import asyncio

        await asyncio.sleep(self.settle_s)
