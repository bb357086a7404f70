"""Issue 34, attack 4: ``--parallel`` environments are embedded clusters side by side on one machine,
all in 127.0.0.0/8. An agent in one must not reach the other's pods, Services or API server:
not by dialling them from an app pod, and not through Endpoints that point there.

The shared cluster (Hotel Reservation deployed) is environment 1; a second cluster is brought up
beside it in the same SREGYM_HOME, as ``--parallel 2`` does, and stopped at the end.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from sregym_core.testing.reach import connect_args, reach

pytestmark = [pytest.mark.slow, pytest.mark.skipif(os.geteuid() != 0, reason="the pod network guard needs root")]

BIN = Path(sys.executable).parent
SREGYM, KUBECTL = str(BIN / "sregym"), str(BIN / "kubectl")
NS = "hotel-reservation"


def kubectl(config: Path, *args: str, input: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([KUBECTL, f"--kubeconfig={config}", *args], capture_output=True, text=True, timeout=90,
                          input=input, env={"PATH": os.environ.get("PATH", ""), "HOME": str(config.parent)})


def _json(done: subprocess.CompletedProcess) -> dict:
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def two(deployed, tmp_path_factory):
    from sregym_core.conductor.agent_access import grant_agent_access, revoke_agent_access
    from sregym_core.conductor.kube import Kube

    second = f"{deployed.name}-iso"
    up = subprocess.run([SREGYM, "cluster", "up", "--name", second, "--nodes", "1"], env=deployed.environ,
                        capture_output=True, text=True, timeout=300)
    kube = Kube(deployed.kubeconfig, kubectl=KUBECTL)
    account = f"agent-{uuid.uuid4().hex[:12]}"
    work = tmp_path_factory.mktemp("parallel-isolation")
    try:
        assert up.returncode == 0, up.stderr[-2000:]
        other = Path(deployed.home) / "clusters" / second / "kubeconfig"
        agent = grant_agent_access(kube, [NS], work / "agent.kubeconfig", account=account, expiration_seconds=600)
        yield {"admin": deployed.kubeconfig, "agent": agent, "other": other}
    finally:
        revoke_agent_access(kube, [NS], account)
        for kind in ("service", "endpoints"):
            kubectl(deployed.kubeconfig, "delete", kind, "cross-door", "-n", NS, "--ignore-not-found")
        subprocess.run([SREGYM, "cluster", "down", "--name", second], env=deployed.environ, capture_output=True,
                       timeout=180)


def _other_targets(other: Path) -> dict[str, tuple[str, int]]:
    """The second environment's ingress controller pod, its Service, and its API server."""
    deadline = time.monotonic() + 120  # a hang-only bound: the controller pod starts in seconds
    while True:
        pods = _json(kubectl(other, "get", "pods", "-n", "ingress-nginx", "-o", "json"))["items"]
        ready = [p for p in pods if any(c.get("type") == "Ready" and c.get("status") == "True"
                                        for c in (p.get("status") or {}).get("conditions") or [])]
        if ready or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert ready, "the second cluster's ingress controller never got ready"
    svc = _json(kubectl(other, "get", "svc", "ingress-nginx-controller", "-n", "ingress-nginx", "-o", "json"))
    api = _json(kubectl(other, "get", "endpoints", "kubernetes", "-n", "default", "-o", "json"))["subsets"][0]
    return {"pod": (ready[0]["status"]["podIP"], 10254), "service": (svc["spec"]["clusterIP"], 80),
            "apiserver": (api["addresses"][0]["ip"], int(api["ports"][0]["port"]))}


def test_an_environment_cannot_reach_the_other_environments_pods_services_or_api(two):
    targets = _other_targets(two["other"])
    for what, address in targets.items():  # the positive control: each answers from the host
        with socket.create_connection(address, timeout=10):
            pass
    pods = _json(kubectl(two["admin"], "get", "pods", "-n", NS, "-l", "app.kubernetes.io/name=frontend", "-o", "json"))
    frontend = next(p["metadata"]["name"] for p in pods["items"] if p["status"].get("phase") == "Running")
    wanted = [f"{ip}:{port}" for ip, port in targets.values()]
    probe = kubectl(two["agent"], "exec", "-n", NS, frontend, "--", *connect_args(sys.executable, *wanted))
    assert probe.returncode == 0, probe.stderr
    seen = reach(probe.stdout)
    assert all(seen[t] == "refused" for t in wanted), probe.stdout
    # nor through Endpoints: the agent's are refused, and ones that got in anyway are not forwarded
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "cross-door", "namespace": NS},
               "spec": {"ports": [{"port": 8080, "targetPort": 8080}]}}
    assert kubectl(two["agent"], "apply", "-f", "-", input=json.dumps(service)).returncode == 0
    ip = _json(kubectl(two["admin"], "get", "svc", "cross-door", "-n", NS, "-o", "json"))["spec"]["clusterIP"]
    for what, (target_ip, port) in targets.items():
        endpoints = json.dumps({"apiVersion": "v1", "kind": "Endpoints",
                                "metadata": {"name": "cross-door", "namespace": NS},
                                "subsets": [{"addresses": [{"ip": target_ip}], "ports": [{"port": port}]}]})
        written = kubectl(two["agent"], "apply", "-f", "-", input=endpoints)
        assert written.returncode != 0 and "subsets[0].addresses[0].ip" in written.stderr, what
        assert kubectl(two["admin"], "apply", "-f", "-", input=endpoints).returncode == 0
        time.sleep(0.5)
        via = kubectl(two["agent"], "exec", "-n", NS, frontend, "--", *connect_args(sys.executable, f"{ip}:8080"))
        assert "refused" in via.stdout, (what, via.stdout, via.stderr)
