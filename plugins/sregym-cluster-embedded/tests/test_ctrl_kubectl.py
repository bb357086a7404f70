"""End to end with the real kubectl against a real cluster process: rollouts (status, history, undo,
restart, pause/resume), service traffic through the proxy and cluster DNS, FailedScheduling, drain,
StatefulSet claims, Jobs and namespace deletion. Every test leaves nothing running."""

from __future__ import annotations

import json
import socket
import struct
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from conftest import PINNED_KUBECTL

pytestmark = pytest.mark.slow

WEB = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: python:3.11
        command: ["python", "-m", "http.server", "8080"]
        ports: [{containerPort: 8080, name: http}]
        readinessProbe: {tcpSocket: {port: 8080}, periodSeconds: 1}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: http}]
"""

STATEFUL = """
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  serviceName: db
  replicas: 2
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers:
      - name: db
        image: busybox
        command: ["sh", "-c", "echo hi > /data/x; sleep 3600"]
        volumeMounts: [{name: data, mountPath: /data}]
  volumeClaimTemplates:
  - metadata: {name: data}
    spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
---
apiVersion: batch/v1
kind: Job
metadata: {name: once}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: m, image: busybox, command: ["sh", "-c", "echo done"]}]
"""


class Cluster:
    def __init__(self, info) -> None:
        self.info = info
        self.kubeconfig = Path(info.kubeconfig)

    def kubectl(self, *args: str, input: str | None = None, check: bool = True, timeout: float = 90) -> str:
        proc = subprocess.run([str(PINNED_KUBECTL), f"--kubeconfig={self.kubeconfig}",
                               f"--cache-dir={self.kubeconfig.parent / 'kube-cache'}", *args],
                              input=input, capture_output=True, text=True, timeout=timeout,
                              env={"HOME": str(self.kubeconfig.parent)})
        if check:
            assert proc.returncode == 0, f"kubectl {' '.join(args)}: {proc.stderr}"
        return proc.stdout + proc.stderr

    def json(self, *args: str) -> dict:
        return json.loads(self.kubectl(*args, "-o", "json"))


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    import os

    from sregym_cluster_embedded import cluster as clusters

    old = os.environ.get("SREGYM_HOME")
    os.environ["SREGYM_HOME"] = str(tmp_path_factory.mktemp("ctrl-home"))
    info = clusters.up("ctrl-e2e", 2)
    pid = info.pid
    try:
        yield Cluster(info)
    finally:
        clusters.down("ctrl-e2e")
        if old is None:
            os.environ.pop("SREGYM_HOME", None)
        else:
            os.environ["SREGYM_HOME"] = old
        deadline = time.monotonic() + 15
        while psutil.pid_exists(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


def http_status(url: str) -> int:
    with urllib.request.urlopen(url, timeout=5) as resp:
        return resp.status


def dns_a(server: tuple[str, int], name: str) -> str | None:
    """The first A record for `name` from the cluster DNS (None on NXDOMAIN or no answer)."""
    query = struct.pack("!6H", 7, 0x100, 1, 0, 0, 0) + b"".join(
        bytes([len(p)]) + p.encode() for p in name.split(".")) + b"\0" + struct.pack("!2H", 1, 1)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.settimeout(3)
        sock.sendto(query, server)
        data = sock.recv(512)
    answers = struct.unpack("!H", data[6:8])[0]
    return socket.inet_ntoa(data[-4:]) if answers else f"rcode={data[3] & 15}"


def test_rollout_lifecycle_and_service_traffic(cluster: Cluster) -> None:
    k = cluster.kubectl
    k("apply", "-f", "-", input=WEB)
    assert "successfully rolled out" in k("rollout", "status", "deploy/web", "--timeout=90s")
    svc = cluster.json("get", "svc", "web")
    ip = svc["spec"]["clusterIP"]
    assert ip.startswith(cluster.info.service_cidr_prefix + ".")
    assert http_status(f"http://{ip}/") == 200  # through the service proxy to a real python process
    # port 53 of this address may belong to a cluster of another SREGYM_HOME: ask where DNS really is
    dns = json.loads((Path(cluster.info.state_dir) / "network.json").read_text())
    assert dns["dns_host"] == f"{cluster.info.service_cidr_prefix}.0.10"
    assert dns_a((dns["dns_host"], dns["dns_port"]), "web.default.svc.cluster.local") == ip
    deadline = time.monotonic() + 15  # Endpoints follow pod readiness a moment after the rollout
    while len((eps := cluster.json("get", "endpoints", "web"))["subsets"][0].get("addresses", [])) < 3 \
            and time.monotonic() < deadline:
        time.sleep(0.2)
    assert len(eps["subsets"][0]["addresses"]) == 3 and eps["subsets"][0]["ports"][0]["port"] == 8080

    k("set", "image", "deploy/web", "web=python:3.12")
    assert "successfully rolled out" in k("rollout", "status", "deploy/web", "--timeout=90s")
    history = k("rollout", "history", "deploy/web")
    assert "1         <none>" in history and "2         <none>" in history
    k("rollout", "undo", "deploy/web")
    assert "successfully rolled out" in k("rollout", "status", "deploy/web", "--timeout=90s")
    history = k("rollout", "history", "deploy/web")
    assert "3         <none>" in history and "1         <none>" not in history  # revision 1 became 3
    images = {p["spec"]["containers"][0]["image"] for p in cluster.json("get", "pods", "-l", "app=web")["items"]}
    assert images == {"python:3.11"}

    k("rollout", "pause", "deploy/web")
    k("set", "env", "deploy/web", "A=1")
    time.sleep(1)
    assert len(cluster.json("get", "rs", "-l", "app=web")["items"]) == 2  # paused: no new ReplicaSet
    assert cluster.json("get", "deploy", "web")["status"]["conditions"][1]["reason"] == "DeploymentPaused"
    k("rollout", "resume", "deploy/web")
    assert "successfully rolled out" in k("rollout", "status", "deploy/web", "--timeout=90s")
    k("rollout", "restart", "deploy/web")
    assert "successfully rolled out" in k("rollout", "status", "deploy/web", "--timeout=90s")
    described = k("describe", "deploy", "web")
    assert "deployment-controller  Scaled up replica set web-" in described
    assert "NewReplicaSetAvailable" in described
    assert http_status(f"http://{ip}/") == 200


def test_failed_scheduling_and_drain(cluster: Cluster) -> None:
    k = cluster.kubectl
    k("run", "huge", "--image=busybox", "--overrides", json.dumps({"spec": {"containers": [{
        "name": "huge", "image": "busybox", "command": ["sleep", "3600"],
        "resources": {"requests": {"memory": "100Gi"}}}]}}))
    deadline = time.monotonic() + 20
    while "FailedScheduling" not in (text := k("describe", "pod", "huge")) and time.monotonic() < deadline:
        time.sleep(0.3)
    assert ("0/2 nodes are available: 2 Insufficient memory. preemption: 0/2 nodes are available: "
            "2 No preemption victims found for incoming pod.") in text
    k("delete", "pod", "huge", "--wait=false")
    k("scale", "deploy/web", "--replicas=4")
    assert "successfully rolled out" in k("rollout", "status", "deploy/web", "--timeout=90s")
    k("drain", "node-1", "--ignore-daemonsets", "--delete-emptydir-data", "--force", "--timeout=90s")
    assert "successfully rolled out" in k("rollout", "status", "deploy/web", "--timeout=90s")
    nodes = {p["spec"]["nodeName"] for p in cluster.json("get", "pods", "-l", "app=web")["items"]
             if not p["metadata"].get("deletionTimestamp")}
    assert nodes == {"node-2"}
    assert "SchedulingDisabled" in k("get", "node", "node-1")
    k("uncordon", "node-1")


def test_statefulset_job_and_namespace_deletion(cluster: Cluster) -> None:
    k = cluster.kubectl
    k("create", "namespace", "shop")
    k("apply", "-n", "shop", "-f", "-", input=STATEFUL)
    k("rollout", "status", "sts/db", "-n", "shop", "--timeout=90s")
    k("wait", "--for=condition=complete", "job/once", "-n", "shop", "--timeout=60s")
    claims = cluster.json("get", "pvc", "-n", "shop")["items"]
    assert sorted(c["metadata"]["name"] for c in claims) == ["data-db-0", "data-db-1"]
    assert all(c["status"]["phase"] == "Bound" for c in claims)
    volumes = cluster.json("get", "pv")["items"]
    path = Path(volumes[0]["spec"]["hostPath"]["path"])
    deadline = time.monotonic() + 20
    while not (path / "x").exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert (path / "x").read_text() == "hi\n"  # the pod wrote into its provisioned volume
    assert "kube-root-ca.crt" in k("get", "configmaps", "-n", "shop")
    k("set", "env", "sts/db", "-n", "shop", "MODE=two")
    k("rollout", "status", "sts/db", "-n", "shop", "--timeout=90s")
    history = k("rollout", "history", "sts/db", "-n", "shop")
    assert "1         <none>" in history and "2         <none>" in history
    k("rollout", "undo", "sts/db", "-n", "shop")
    k("rollout", "status", "sts/db", "-n", "shop", "--timeout=90s")
    template = cluster.json("get", "sts", "db", "-n", "shop")["spec"]["template"]
    assert not template["spec"]["containers"][0].get("env")
    assert "3         <none>" in k("rollout", "history", "sts/db", "-n", "shop")
    k("delete", "namespace", "shop", "--timeout=90s")
    assert "NotFound" in k("get", "namespace", "shop", check=False)
    deadline = time.monotonic() + 20
    while cluster.json("get", "pv")["items"] and time.monotonic() < deadline:
        time.sleep(0.3)
    assert cluster.json("get", "pv")["items"] == [] and not path.exists()  # reclaim policy Delete
