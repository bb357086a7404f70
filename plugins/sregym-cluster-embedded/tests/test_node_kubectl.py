"""End to end through the real daemon and the real kubectl: pods run as processes on two nodes."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import psutil
import pytest

pytestmark = pytest.mark.slow

KUBECTL = shutil.which("kubectl", path=str(Path(__file__).resolve().parents[3] / ".venv" / "bin")) or "kubectl"

MANIFEST = """
apiVersion: v1
kind: ConfigMap
metadata: {name: web-cfg}
data: {index.html: "hello from configmap\\n"}
---
apiVersion: v1
kind: Secret
metadata: {name: web-secret}
stringData: {token: abc123}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: python:3.11
        command: ["python", "-m", "http.server", "8080", "--directory", "/srv"]
        env:
        - name: TOKEN
          valueFrom: {secretKeyRef: {name: web-secret, key: token}}
        volumeMounts: [{name: cfg, mountPath: /srv}]
        readinessProbe: {httpGet: {path: /index.html, port: 8080}, periodSeconds: 1}
        resources: {requests: {cpu: 50m, memory: 32Mi}, limits: {cpu: 500m, memory: 128Mi}}
      volumes: [{name: cfg, configMap: {name: web-cfg}}]
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080}]
---
apiVersion: v1
kind: Pod
metadata: {name: crash}
spec:
  containers: [{name: app, image: busybox, command: ["sh", "-c", "echo boom $(date +%s%N); exit 1"]}]
---
apiVersion: v1
kind: Pod
metadata: {name: badimage}
spec:
  containers: [{name: app, image: nosuchimage:1.0}]
---
apiVersion: v1
kind: Pod
metadata: {name: hog}
spec:
  restartPolicy: Never
  containers:
  - name: hog
    image: python:3.11
    command: ["python", "-c", "x=[]\\nwhile True: x.append(bytearray(10*2**20))"]
    resources: {limits: {memory: 50Mi}}
"""


@pytest.fixture(scope="module")
def cluster():
    home = Path(tempfile.mkdtemp(prefix="sregym-nodee2e-", dir="/tmp"))
    home.chmod(0o755)
    # a private address range: clusters under other SREGYM_HOMEs keep their own allocation tables
    (home / "clusters").mkdir()
    (home / "clusters" / "allocations.json").write_text(json.dumps({"nodee2e": random.randint(30, 99)}))
    old = os.environ.get("SREGYM_HOME")
    os.environ["SREGYM_HOME"] = str(home)
    from sregym_cluster_embedded import cluster as clusters
    name = "nodee2e"
    info = clusters.up(name, 2, owner_pid=os.getpid())
    env = dict(os.environ, KUBECONFIG=str(info.kubeconfig))
    try:
        yield {"env": env, "pid": info.pid, "clusters": clusters, "name": name}
    finally:
        clusters.down(name, forget=True)
        if old is None:
            os.environ.pop("SREGYM_HOME", None)
        else:
            os.environ["SREGYM_HOME"] = old
        shutil.rmtree(home, ignore_errors=True)


def kubectl(cluster, *args: str, check: bool = True, input: str | None = None) -> subprocess.CompletedProcess:
    result = subprocess.run([KUBECTL, *args], env=cluster["env"], capture_output=True, text=True, timeout=60,
                            input=input)
    if check and result.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)} failed: {result.stderr}")
    return result


def wait_json(cluster, args: list[str], check, timeout: float = 40.0) -> dict:
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        result = kubectl(cluster, *args, "-o", "json", check=False)
        if result.returncode == 0:
            last = json.loads(result.stdout)
            if check(last):
                return last
        time.sleep(0.5)
    raise AssertionError(f"timed out; last: {json.dumps(last)[:2000]}")


def test_workload_faults_logs_exec_and_top(cluster):
    kubectl(cluster, "apply", "-f", "-", input=MANIFEST)
    kubectl(cluster, "rollout", "status", "deployment/web", "--timeout=60s")
    pods = wait_json(cluster, ["get", "pods", "-l", "app=web"],
                     lambda d: len(d["items"]) == 2 and all(p["status"].get("podIP") for p in d["items"]))
    assert {p["spec"]["nodeName"] for p in pods["items"]} <= {"node-1", "node-2"}
    exec_out = kubectl(cluster, "exec", "deploy/web", "--", "sh", "-c",
                       'echo $TOKEN; cat /srv/index.html; echo $KUBERNETES_SERVICE_HOST').stdout.split("\n")
    assert exec_out[0] == "abc123" and exec_out[1] == "hello from configmap"
    assert exec_out[2].startswith("127.")
    # through the cluster's DNS and service proxy, by service name, from inside a pod
    fetch = "import urllib.request; print(urllib.request.urlopen('http://web/index.html', timeout=5).read().decode())"
    assert kubectl(cluster, "exec", "deploy/web", "--", "python", "-c", fetch).stdout == "hello from configmap\n\n"

    bad = wait_json(cluster, ["get", "pod", "badimage"], lambda p: "ImagePullBackOff" in json.dumps(p["status"]))
    assert bad["status"]["phase"] == "Pending"
    logs = kubectl(cluster, "logs", "badimage", check=False)
    assert "is waiting to start: trying and failing to pull image" in logs.stderr

    hog = wait_json(cluster, ["get", "pod", "hog"], lambda p: p["status"].get("phase") == "Failed")
    terminated = hog["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (terminated["reason"], terminated["exitCode"]) == ("OOMKilled", 137)
    assert "OOMKilled" in kubectl(cluster, "get", "pod", "hog").stdout

    wait_json(cluster, ["get", "pod", "crash"], lambda p: p["status"]["containerStatuses"][0]["restartCount"] >= 1)
    table = kubectl(cluster, "get", "pod", "crash").stdout
    assert "CrashLoopBackOff" in table or "Error" in table
    previous = kubectl(cluster, "logs", "crash", "--previous").stdout
    assert previous.startswith("boom ")
    described = kubectl(cluster, "describe", "pod", "crash").stdout
    assert "Back-off restarting failed container app" in described

    missing = kubectl(cluster, "logs", "deploy/web", "--previous", check=False)
    assert 'previous terminated container "web" in pod' in missing.stderr

    deadline = time.monotonic() + 30
    top = ""
    while time.monotonic() < deadline:
        result = kubectl(cluster, "top", "pods", check=False)
        top = result.stdout
        if result.returncode == 0 and "web-" in top:
            break
        time.sleep(1)
    row = next(line for line in top.splitlines() if line.startswith("web-"))
    assert row.split()[2].endswith("Mi") and int(row.split()[2][:-2]) > 1


def test_no_process_survives_cluster_down(cluster):
    kubectl(cluster, "run", "sleeper", "--image=busybox", "--restart=Never", "--", "sleep", "300")
    wait_json(cluster, ["get", "pod", "sleeper"], lambda p: p["status"].get("phase") == "Running")
    daemon = psutil.Process(cluster["pid"])
    children = daemon.children(recursive=True)
    assert any("sleep" in " ".join(c.cmdline()) for c in children if c.is_running())
    cluster["clusters"].down(cluster["name"])
    assert not _survivors(children + [daemon])


def test_no_process_survives_a_killed_daemon(cluster):
    clusters = cluster["clusters"]
    info = clusters.up(cluster["name"], 1, owner_pid=os.getpid())
    kubectl(cluster, "run", "forker", "--image=busybox", "--", "sh", "-c", "sleep 301 & sleep 302")
    wait_json(cluster, ["get", "pod", "forker"], lambda p: p["status"].get("phase") == "Running")
    daemon = psutil.Process(info.pid)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        children = daemon.children(recursive=True)
        if sum(_argv(c)[:1] == ["sleep"] for c in children) == 2:  # both grandchildren are up
            break
        time.sleep(0.1)
    daemon.kill()  # no clean-up code runs in the daemon: the watchdog must do it
    assert not _survivors(children)


def _argv(proc: psutil.Process) -> list[str]:
    """A process's command line, empty once it has exited (a short-lived child of the daemon, such as a
    probe, can exit between the listing and the read: a landing check met it, 2026-11-30)."""
    try:
        return proc.cmdline()
    except (psutil.NoSuchProcess, psutil.ZombieProcess):
        return []


def _survivors(procs: list[psutil.Process], timeout: float = 10.0) -> list[psutil.Process]:
    """Processes still alive after ``timeout`` (zombies count as gone: init reaps them late here)."""
    deadline = time.monotonic() + timeout
    while True:
        alive = []
        for proc in procs:
            try:
                if proc.status() != psutil.STATUS_ZOMBIE:
                    alive.append(proc)
            except psutil.NoSuchProcess:
                continue
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.1)
