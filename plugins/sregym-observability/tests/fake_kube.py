"""A tiny Kubernetes API stand-in over real HTTP for collector and exporter tests.

It serves only what those components call: lists, pod watches (chunked JSON lines) and follow-mode
``pods/log`` with ``timestamps`` and ``sinceTime``. Bearer tokens are checked like a real server.
"""

from __future__ import annotations

import asyncio
import json

from aiohttp import web
from sregym_observability.timeparse import format_rfc3339_ns, parse_rfc3339_ns

TOKEN = "test-token"


class FakeKube:
    def __init__(self) -> None:
        self.objects: dict[str, list[dict]] = {}
        self.logs: dict[tuple[str, str, str], list[tuple[int, str]]] = {}
        self.log_requests: list[dict[str, str]] = []
        self._watchers: list[asyncio.Queue] = []
        self._log_waiters: list[asyncio.Event] = []
        self.version = 1
        self.runner: web.AppRunner | None = None
        self.url = ""

    # -- test controls ---------------------------------------------------------------------------

    def put_pod(self, pod: dict) -> None:
        pods = self.objects.setdefault("/api/v1/pods", [])
        key = (pod["metadata"]["namespace"], pod["metadata"]["name"])
        kind = "ADDED"
        for i, existing in enumerate(pods):
            if (existing["metadata"]["namespace"], existing["metadata"]["name"]) == key:
                pods[i] = pod
                kind = "MODIFIED"
                break
        else:
            pods.append(pod)
        self._emit(kind, pod)

    def delete_pod(self, namespace: str, name: str) -> None:
        pods = self.objects.get("/api/v1/pods", [])
        for pod in list(pods):
            if (pod["metadata"]["namespace"], pod["metadata"]["name"]) == (namespace, name):
                pods.remove(pod)
                self._emit("DELETED", pod)

    def write_log(self, namespace: str, pod: str, container: str, ts_ns: int, line: str) -> None:
        self.logs.setdefault((namespace, pod, container), []).append((ts_ns, line))
        for waiter in self._log_waiters:
            waiter.set()

    def _emit(self, kind: str, obj: dict) -> None:
        self.version += 1
        obj["metadata"]["resourceVersion"] = str(self.version)
        for queue in self._watchers:
            queue.put_nowait({"type": kind, "object": obj})

    # -- server ----------------------------------------------------------------------------------

    async def start(self) -> str:
        app = web.Application(middlewares=[self._auth])
        app.router.add_get("/api/v1/namespaces/{ns}/pods/{pod}/log", self._log)
        app.router.add_get("/{path:.*}", self._list_or_watch)
        self.runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.2)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"http://127.0.0.1:{port}"
        return self.url

    async def stop(self) -> None:
        if self.runner is not None:
            await self.runner.cleanup()

    @web.middleware
    async def _auth(self, request: web.Request, handler):
        if request.headers.get("Authorization") != f"Bearer {TOKEN}":
            return web.json_response({"kind": "Status", "status": "Failure", "message": "Unauthorized",
                                      "reason": "Unauthorized", "code": 401}, status=401)
        return await handler(request)

    async def _list_or_watch(self, request: web.Request) -> web.StreamResponse:
        path = "/" + request.match_info["path"]
        if path not in self.objects and path != "/api/v1/pods":
            return web.json_response({"kind": "Status", "code": 404, "message": "the server could not find the "
                                      "requested resource", "reason": "NotFound"}, status=404)
        if request.query.get("watch") != "true":
            return web.json_response({"kind": "List", "metadata": {"resourceVersion": str(self.version)},
                                      "items": self.objects.get(path, [])})
        response = web.StreamResponse()
        response.content_type = "application/json"
        await response.prepare(request)
        queue: asyncio.Queue = asyncio.Queue()
        self._watchers.append(queue)
        try:
            while True:
                event = await queue.get()
                await response.write(json.dumps(event).encode() + b"\n")
        finally:
            self._watchers.remove(queue)

    async def _log(self, request: web.Request) -> web.StreamResponse:
        ns, pod, container = request.match_info["ns"], request.match_info["pod"], request.query.get("container", "")
        self.log_requests.append(dict(request.query))
        since = parse_rfc3339_ns(request.query["sinceTime"]) if "sinceTime" in request.query else 0
        response = web.StreamResponse()
        response.content_type = "text/plain"
        await response.prepare(request)
        sent = 0
        waiter = asyncio.Event()
        self._log_waiters.append(waiter)
        try:
            while True:
                lines = self.logs.get((ns, pod, container), [])
                for ts, line in lines[sent:]:
                    if ts >= since:
                        await response.write(f"{format_rfc3339_ns(ts)} {line}\n".encode())
                sent = len(lines)
                if request.query.get("follow") != "true":
                    break
                waiter.clear()
                await waiter.wait()
        finally:
            self._log_waiters.remove(waiter)
        return response


def kubeconfig_text(server: str) -> str:
    return (f"apiVersion: v1\nkind: Config\ncurrent-context: fake\nclusters:\n- name: fake\n  cluster:\n"
            f"    server: {server}\ncontexts:\n- name: fake\n  context: {{cluster: fake, user: u}}\n"
            f"users:\n- name: u\n  user: {{token: {TOKEN}}}\n")


def make_pod(namespace: str, name: str, *, app: str, containers: dict[str, dict], node: str = "node-1",
             ready: bool = True, phase: str = "Running") -> dict:
    """``containers`` maps a name to its status extras (state, restartCount, lastState...)."""
    return {
        "metadata": {"namespace": namespace, "name": name, "uid": f"uid-{name}",
                     "labels": {"app": app, "pod-template-hash": "abc123", "app.kubernetes.io/part-of": "hotel"},
                     "ownerReferences": [{"kind": "ReplicaSet", "name": f"{app}-abc123", "controller": True}]},
        "spec": {"nodeName": node, "containers": [
            {"name": c, "image": "sregym/hotel-reservation:1.0",
             "resources": {"limits": {"cpu": "500m", "memory": "128Mi"}, "requests": {"cpu": "100m"}}}
            for c in containers]},
        "status": {"phase": phase, "podIP": "127.42.0.9", "hostIP": "127.0.0.1",
                   "conditions": [{"type": "Ready", "status": "True" if ready else "False"},
                                  {"type": "PodScheduled", "status": "True"}],
                   "containerStatuses": [
                       {"name": c, "ready": ready, "restartCount": 0, "image": "sregym/hotel-reservation:1.0",
                        "containerID": f"local://{name}-{c}", "state": {"running": {"startedAt": "x"}}, **extra}
                       for c, extra in containers.items()]},
    }


class ThreadedFakeKube:
    """A :class:`FakeKube` on its own event loop thread, for tests that drive real subprocesses."""

    def __init__(self) -> None:
        import threading

        self.kube = FakeKube()
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.url = asyncio.run_coroutine_threadsafe(self.kube.start(), self.loop).result(10)

    def call(self, fn, *args) -> None:
        self.loop.call_soon_threadsafe(fn, *args)

    def close(self) -> None:
        asyncio.run_coroutine_threadsafe(self.kube.stop(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()
