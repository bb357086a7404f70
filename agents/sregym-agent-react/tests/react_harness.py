"""Test harness: a real MCP server (``AgentServer``) over a stand-in attempt and a fake kubectl.

The fake kubectl plays a small broken app: geo's image tag does not exist until someone runs
``kubectl set image`` or ``kubectl rollout undo`` on it. Every call is appended to ``calls.log``.
"""

from __future__ import annotations

import sys
from contextlib import asynccontextmanager
from pathlib import Path

from sregym_core.agent_api.kubectl_tool import KubectlTool
from sregym_core.agent_api.server import AgentServer
from sregym_core.agents import AgentTask

NS = "hotel-reservation"
BAD_IMAGE = "sregym/hotel-reservation:1.0-rc9"
GOOD_IMAGE = "sregym/hotel-reservation:1.0"

FAKE_KUBECTL = r'''#!{python}
import sys, pathlib
here = pathlib.Path(__file__).parent
args = sys.argv[1:]
with open(here / "calls.log", "a") as log:
    log.write(" ".join(args) + "\n")
state = here / "state"
fixed = state.exists() and state.read_text() == "fixed"
words = [a for a in args if not a.startswith("-")]
if "set" in words and "image" in words or "rollout" in words and "undo" in words:
    state.write_text("fixed")
    print("deployment.apps/geo image updated" if "set" in words else "deployment.apps/geo rolled back")
elif "get" in words and any(a.startswith("custom-columns") for a in args):
    for name in ("frontend-5c7b9", "search-7f8d6", "profile-6d5c4"):
        print(f"{{name}}   Running   true   0")
    print("geo-7d9f8-x2x4k   Running   true   0" if fixed else "geo-7d9f8-x2x4k   Pending   false   0")
elif "get" in words and "json" in args:
    print('{{"apiVersion": "v1", "kind": "List", "items": []}}')
elif "get" in words and "pods" in words:
    print("NAME                 READY   STATUS             RESTARTS   AGE")
    print("frontend-5c7b9       1/1     Running            0          5m")
    print("search-7f8d6         1/1     Running            0          5m")
    if fixed:
        print("geo-7d9f8-x2x4k      1/1     Running            0          10s")
    else:
        print("geo-7d9f8-x2x4k      0/1     ImagePullBackOff   0          2m")
elif "describe" in words:
    print("Name:         geo-7d9f8-x2x4k")
    print("Namespace:    {ns}")
    print("Containers:\n  hotel-reservation-geo:\n    Image:      {bad}")
    print("Events:\n  Warning  Failed  kubelet  Failed to pull image \"{bad}\": manifest unknown")
else:
    print("kubectl-called: " + " ".join(args))
'''


class Sink:
    """Stands in for the attempt: the conductor's two-submission stage machine."""

    def __init__(self) -> None:
        self.stage = "diagnosis"
        self.received: list[str] = []

    def submit(self, solution: str):
        if self.stage in ("diagnosis", "mitigation"):
            self.received.append(solution)
            self.stage = "mitigation" if self.stage == "diagnosis" else "tearing_down"
            return 200, {"status": "accepted", "stage": self.stage}
        return 409, {"error": f"no submission is expected in stage {self.stage!r}", "stage": self.stage}

    def app_info(self):
        return {"app_name": "hotel-reservation", "namespace": NS, "descriptions": "A hotel booking app."}


def fake_kubectl(directory: Path) -> Path:
    script = directory / "kubectl"
    script.write_text(FAKE_KUBECTL.format(python=sys.executable, ns=NS, bad=BAD_IMAGE))
    script.chmod(0o755)
    return script


def kubectl_calls(directory: Path) -> list[str]:
    log = directory / "calls.log"
    return log.read_text().splitlines() if log.exists() else []


@asynccontextmanager
async def mcp_server(tmp_path: Path):
    """(sink, server, task) with a live MCP server on 127.0.0.1; stopped on exit."""
    sink = Sink()
    tool = KubectlTool(kubeconfig=tmp_path / "agent-kubeconfig", kubectl=str(fake_kubectl(tmp_path)), namespace=NS,
                       cache_dir=tmp_path / "kube-cache", isolation="none")  # a script stands in for kubectl
    server = AgentServer(sink, tool)
    await server.start()
    workdir = tmp_path / "agent"
    workdir.mkdir(exist_ok=True)
    task = AgentTask(attempt_id="a1", app_name="hotel-reservation", app_namespace=NS,
                     app_description="Hotel Reservation: frontend, search, geo, rate, profile... (gRPC, MongoDB, memcached).",
                     api_url=server.api_url, mcp_url=server.mcp_url, kubeconfig=tmp_path / "agent-kubeconfig",
                     workdir=workdir, timeout=120.0)
    try:
        yield sink, server, task
    finally:
        await server.stop()
