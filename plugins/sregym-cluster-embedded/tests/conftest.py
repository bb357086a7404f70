"""Shared fixtures: an API server running in a background thread, the real kubectl binaries, the
official Python client, and a small stand-in pod runtime (exec runs local commands, logs are fixed
lines) so logs/exec/metrics can be tested without the node agents.

Other helpers add their own fixtures in ``tests/_fixtures_<prefix>.py``.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from concurrent.futures import Future
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

SRC = Path(__file__).resolve().parent.parent / "src"
if str(SRC) not in sys.path:
    sys.path.insert(0, str(SRC))

from sregym_cluster_embedded.apiserver.errors import ApiError  # noqa: E402
from sregym_cluster_embedded.apiserver.server import RunningApiServer  # noqa: E402
from sregym_cluster_embedded.apiserver.store import clone  # noqa: E402
from sregym_cluster_embedded.settings import ClusterSettings  # noqa: E402

REPO = Path(__file__).resolve().parents[3]
PINNED_KUBECTL = REPO / ".venv" / "bin" / "kubectl"
SYSTEM_KUBECTL = Path("/usr/bin/kubectl")


def kubectl_binaries() -> list[Any]:
    params = []
    if PINNED_KUBECTL.exists():
        params.append(pytest.param(PINNED_KUBECTL, id="kubectl-1.37"))
    if SYSTEM_KUBECTL.exists():
        # the machine's kubectl is a version dispatcher: every call costs a second process, so slow
        params.append(pytest.param(SYSTEM_KUBECTL, id="kubectl-system", marks=pytest.mark.slow))
    return params or [pytest.param(None, marks=pytest.mark.skip(reason="no kubectl binary"))]


# ------------------------------------------------------------------------------------------------
# stand-in pod runtime
# ------------------------------------------------------------------------------------------------
class StandInRuntime:
    """Implements the PodRuntime contract in-process: every container logs LOG_LINES, exec runs
    the command on this machine, usage is a fixed figure."""

    LOG_LINES = [f"log line {i}" for i in range(1, 6)]

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.procs: list[asyncio.subprocess.Process] = []

    async def read_log(self, namespace: str, pod: str, container: str, *, previous: bool = False,
                       tail_lines: int | None = None, since_seconds: int | None = None, timestamps: bool = False,
                       limit_bytes: int | None = None, follow: bool = False) -> AsyncIterator[bytes]:
        if previous:
            raise ApiError(400, f'previous terminated container "{container}" in pod "{pod}" not found')
        lines = list(self.LOG_LINES)
        if tail_lines is not None:
            lines = lines[-tail_lines:] if tail_lines else []
        stamp = datetime(2026, 1, 1, tzinfo=UTC).strftime("%Y-%m-%dT%H:%M:%S.000000000Z")

        async def gen() -> AsyncIterator[bytes]:
            for line in lines:
                yield (f"{stamp} {line}\n" if timestamps else f"{line}\n").encode()
            if follow:
                await asyncio.sleep(0.2)
                yield b"followed line\n"

        return gen()

    async def exec(self, namespace: str, pod: str, container: str, command: list[str], *, tty: bool = False) -> Any:
        if not command or command[0] not in ("sh", "echo", "cat", "ls", "wc", "true", "false", "env"):
            raise ApiError(500, f'exec: "{command[0] if command else ""}": executable file not found in $PATH')
        proc = await asyncio.create_subprocess_exec(
            *command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, cwd=str(self.workdir))
        self.procs.append(proc)
        return proc

    def pod_usage(self, namespace: str, pod: str) -> dict[str, tuple[int, int]]:
        return {"main": (5_000_000, 20 * 1024 * 1024)}

    def node_usage(self, node: str) -> tuple[int, int]:
        return (250_000_000, 512 * 1024 * 1024)


# ------------------------------------------------------------------------------------------------
# the server in a thread
# ------------------------------------------------------------------------------------------------
class ThreadedApiServer:
    """An API server on its own event loop thread; ``call`` runs code on that loop."""

    def __init__(self, state_dir: Path, name: str = "test") -> None:
        self.state_dir = state_dir
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True, name=f"apiserver-{name}")
        self.server = RunningApiServer(ClusterSettings(name=name, state_dir=state_dir))
        self.runtime = StandInRuntime(state_dir)

    def start(self) -> ThreadedApiServer:
        self.thread.start()
        self.run(self.server.start())
        self.server.core.runtime = self.runtime
        return self

    def run(self, coro: Any, timeout: float = 30) -> Any:
        fut: Future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        return fut.result(timeout)

    def call(self, fn: Callable[[], Any]) -> Any:
        async def wrapper() -> Any:
            return fn()

        return self.run(wrapper())

    @property
    def core(self) -> Any:
        return self.server.core

    @property
    def kubeconfig(self) -> Path:
        return self.server.admin_kubeconfig

    @property
    def agent_kubeconfig(self) -> Path:
        return self.server.agent_kubeconfig

    @property
    def url(self) -> str:
        return self.server.url

    def stop(self) -> None:
        try:
            self.run(self.server.stop())
            for proc in self.runtime.procs:
                if proc.returncode is None:
                    proc.kill()
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(10)
            self.loop.close()


@pytest.fixture(scope="session")
def api_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A private $SREGYM_HOME for the test session: set for each test that uses it (see
    ``_api_home_env``), never for the whole session. A session-long change leaked into other
    packages' tests on the same xdist worker: the live-app fixture then looked for its cluster in
    this home ("cluster 'e2e' has no kubeconfig yet")."""
    return tmp_path_factory.mktemp("sregym-home")


@pytest.fixture(autouse=True)
def _api_home_env(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    if "api_home" in request.fixturenames:
        monkeypatch.setenv("SREGYM_HOME", str(request.getfixturevalue("api_home")))


@pytest.fixture(scope="session")
def api_server(api_home: Path) -> Iterator[ThreadedApiServer]:
    with pytest.MonkeyPatch.context() as patch:  # what the server reads at start
        patch.setenv("SREGYM_HOME", str(api_home))
        server = ThreadedApiServer(api_home / "clusters" / "test").start()
    yield server
    server.stop()


class Kubectl:
    """Runs one kubectl binary against a kubeconfig with a private cache dir."""

    def __init__(self, binary: Path, kubeconfig: Path, home: Path) -> None:
        self.binary = binary
        self.kubeconfig = kubeconfig
        self.home = home
        self.cache = home / "kube-cache"

    def __call__(self, *args: str, input: str | None = None, check: bool = True, timeout: float = 60,
                 env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        full_env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(self.home),
                    "KUBECONFIG": str(self.kubeconfig), "LANG": "C.UTF-8"}
        full_env.update(env or {})
        proc = subprocess.run([str(self.binary), f"--cache-dir={self.cache}", *args], input=input,
                              capture_output=True, text=True, timeout=timeout, env=full_env)
        if check and proc.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
        return proc

    def as_agent(self, kubeconfig: Path) -> Kubectl:
        return Kubectl(self.binary, kubeconfig, self.home / "agent")


@pytest.fixture(scope="session", params=kubectl_binaries())
def kubectl(request: pytest.FixtureRequest, api_server: ThreadedApiServer, tmp_path_factory: pytest.TempPathFactory) -> Kubectl:
    binary = request.param
    home = tmp_path_factory.mktemp(f"home-{binary.parent.name}")
    return Kubectl(binary, api_server.kubeconfig, home)


@pytest.fixture()
def namespace(api_server: ThreadedApiServer, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh namespace per test (removed from the store afterwards)."""
    import re

    name = re.sub(r"[^a-z0-9-]", "-", request.node.name.lower())[:50].strip("-") + f"-{os.getpid() % 1000}"
    core = api_server.core
    api_server.call(lambda: core.create(core.registry.by_key("namespaces"), None,
                                        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}))
    yield name

    def cleanup() -> None:
        for key in {rt.storage_key for rt in core.registry.storage_types() if rt.namespaced}:
            for obj in core.store.list(key, name):
                core.store.remove(key, name, obj["metadata"]["name"])
        core.store.remove("namespaces", None, name)

    api_server.call(cleanup)


def python_client(kubeconfig: Path) -> Any:
    """An ApiClient of the official ``kubernetes`` package for this kubeconfig."""
    from kubernetes import client, config

    cfg = client.Configuration()
    config.load_kube_config(config_file=str(kubeconfig), client_configuration=cfg)
    return client.ApiClient(cfg)


@pytest.fixture(scope="session")
def k8s_client(api_server: ThreadedApiServer) -> Iterator[Any]:
    api = python_client(api_server.kubeconfig)
    yield api
    api.close()


def which(name: str) -> str | None:
    return shutil.which(name)


# ------------------------------------------------------------------------------------------------
# objects no kubelet would otherwise make in these tests
# ------------------------------------------------------------------------------------------------
NODE = "node-1"


def ensure_node(api: ThreadedApiServer, name: str = NODE) -> None:
    core = api.core

    def make() -> None:
        if core.store.get("nodes", None, name) is None:
            core.create(core.registry.by_key("nodes"), None, {
                "apiVersion": "v1", "kind": "Node",
                "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux"}},
                "spec": {},
                "status": {
                    "capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                    "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                    "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                    "message": "kubelet is posting ready status",
                                    "lastHeartbeatTime": "2026-01-01T00:00:00Z",
                                    "lastTransitionTime": "2026-01-01T00:00:00Z"}],
                    "addresses": [{"type": "InternalIP", "address": "127.40.1.1"},
                                  {"type": "Hostname", "address": name}],
                    "nodeInfo": {"kubeletVersion": "v1.32.4", "osImage": "Debian GNU/Linux 12 (bookworm)",
                                 "kernelVersion": "6.1.0", "containerRuntimeVersion": "sregym-process://0.1.0",
                                 "operatingSystem": "linux", "architecture": "amd64"},
                },
            })

    api.call(make)


def running_pod(api: ThreadedApiServer, namespace: str, name: str, *, labels: dict[str, str] | None = None,
                containers: tuple[str, ...] = ("main",), grace: int | None = 0) -> None:
    """A pod bound to NODE whose status says Running/Ready (no kubelet runs in these tests)."""
    ensure_node(api)
    core = api.core

    def make() -> None:
        spec: dict[str, Any] = {"nodeName": NODE,
                                "containers": [{"name": c, "image": "busybox"} for c in containers]}
        if grace is not None:
            spec["terminationGracePeriodSeconds"] = grace
        pods = core.registry.by_key("pods")
        core.create(pods, namespace, {"apiVersion": "v1", "kind": "Pod",
                                      "metadata": {"name": name, "labels": labels or {}}, "spec": spec})
        obj = clone(core.get(pods, namespace, name))
        stamp = "2026-01-01T00:00:00Z"
        obj["status"] = {
            "phase": "Running", "podIP": "127.40.1.9", "hostIP": "127.40.1.1", "startTime": stamp,
            "conditions": [{"type": t, "status": "True", "lastTransitionTime": stamp}
                           for t in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady",
                                     "PodScheduled")],
            "containerStatuses": [{"name": c, "ready": True, "restartCount": 0, "image": "busybox",
                                   "imageID": "", "started": True, "state": {"running": {"startedAt": stamp}}}
                                  for c in containers],
        }
        core.update(pods, namespace, name, obj, subresource="status")

    api.call(make)
