"""Pods are a boundary on the deployed Hotel Reservation, tried as the evaluated agent would: with
the agent's own kubeconfig, ``kubectl exec`` into the app's pods and pods it creates itself.

Shares the e2e cluster and the deployed app with the other modules (conftest.py); leaves nothing
behind in the app's namespace.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sregym_core.testing.reach import connect_args, reach

pytestmark = [pytest.mark.slow, pytest.mark.needs_root,
              pytest.mark.skipif(os.geteuid() != 0, reason="pod isolation needs root")]

BIN = Path(sys.executable).parent
SREGYM, KUBECTL = str(BIN / "sregym"), str(BIN / "kubectl")
REPO = Path(__file__).resolve().parents[2]
NS = "hotel-reservation"

try:
    import sregym_app_hotel_reservation  # noqa: F401
    import sregym_cluster_embedded  # noqa: F401
except ImportError:
    pytest.skip("needs the embedded cluster and hotel-reservation", allow_module_level=True)


@pytest.fixture(scope="module")
def env(shared_cluster):
    deploy = subprocess.run([SREGYM, "deploy", "hotel-reservation", "--cluster", shared_cluster.name, "--workdir",
                             str(shared_cluster.workdir)], env=shared_cluster.environ, capture_output=True, text=True,
                            timeout=600)
    assert deploy.returncode == 0, deploy.stderr[-3000:]
    agent = shared_cluster.workdir / "agent" / "hotel-reservation.kubeconfig"
    return {"environ": shared_cluster.environ, "home": shared_cluster.home, "admin": shared_cluster.kubeconfig,
            "agent": agent}


def kubectl(env, *args: str, admin: bool = False, input: str | None = None) -> subprocess.CompletedProcess:
    config = env["admin"] if admin else env["agent"]
    return subprocess.run([KUBECTL, f"--kubeconfig={config}", *args], env={**env["environ"], "KUBECONFIG": str(config)},
                          capture_output=True, text=True, timeout=90, input=input)


def frontend_pod(env) -> str:
    pods = json.loads(kubectl(env, "get", "pods", "-n", NS, "-l", "app.kubernetes.io/name=frontend", "-o", "json").stdout)["items"]
    running = [p["metadata"]["name"] for p in pods if p.get("status", {}).get("phase") == "Running"]
    assert running, "no running frontend pod"
    return running[0]


def test_the_app_namespace_enforces_baseline_and_the_agent_cannot_relabel_it(env) -> None:
    meta = json.loads(kubectl(env, "get", "namespace", NS, "-o", "json", admin=True).stdout)["metadata"]
    assert meta["labels"]["pod-security.kubernetes.io/enforce"] == "baseline"
    # host ports stay admissible (the host-port-conflict fault needs one): the standard's "known list"
    assert meta["annotations"]["pod-security.sregym.io/allowed-host-ports"] == "*"
    relabel = kubectl(env, "label", "namespace", NS, "pod-security.kubernetes.io/enforce=privileged", "--overwrite")
    assert relabel.returncode != 0 and "Forbidden" in relabel.stderr


@pytest.mark.parametrize("spec", [
    {"hostPID": True}, {"hostNetwork": True},
    {"volumes": [{"name": "root", "hostPath": {"path": "/"}}]},
    {"securityContext": {"runAsUser": 0}, "containers_security": {"privileged": True}},
], ids=["hostPID", "hostNetwork", "hostPath", "privileged"])
def test_the_agent_cannot_create_a_pod_that_reaches_the_host(env, spec) -> None:
    spec = dict(spec)
    container = {"name": "c", "image": "busybox", "command": ["sleep", "60"]}
    if "containers_security" in spec:
        container["securityContext"] = spec.pop("containers_security")
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "escape", "namespace": NS},
           "spec": {"containers": [container], **spec}}
    result = kubectl(env, "apply", "-f", "-", input=json.dumps(pod))
    assert result.returncode != 0
    assert 'Error from server (Forbidden)' in result.stderr and 'violates PodSecurity "baseline:latest"' in result.stderr
    assert kubectl(env, "get", "pod", "-n", NS, "escape").returncode != 0


def test_exec_into_an_app_pod_reaches_nothing_of_the_host(env) -> None:
    pod = frontend_pod(env)

    def sh(script: str) -> subprocess.CompletedProcess:
        return kubectl(env, "exec", "-n", NS, pod, "--", "sh", "-c", script)

    assert sh("id -u").stdout.strip() != "0"
    shadow = sh("cat /etc/shadow").stdout
    assert "root:*:" in shadow and "$" not in shadow
    import sregym_app_hotel_reservation as hotel
    package = Path(hotel.__file__).resolve().parent
    hidden = [env["home"], env["admin"], env["agent"], REPO / "tests", REPO / "faults", REPO / "agents", package / "problems",
              package.parent.parent / "tests"]
    script = "; ".join(f"ls '{p}' >/dev/null 2>&1 && test -n \"$(ls -A '{p}' 2>/dev/null)\" && echo 'visible {p}'"
                       for p in hidden) + "; true"
    assert "visible" not in sh(script).stdout
    # the image's own code is there (it runs), the problems beside it are not
    assert sh(f"test -f '{package}/serve.py' && echo code").stdout.strip() == "code"
    procs = sh("ls /proc | grep -c '^[0-9]'").stdout.strip()
    assert procs.isdigit() and int(procs) < 10
    victim = subprocess.Popen(["sleep", "120"])
    try:
        sh(f"kill -9 {victim.pid}")
        time.sleep(0.3)
        assert victim.poll() is None
    finally:
        victim.kill()
        victim.wait()




def _service(env, namespace: str, name: str) -> dict:
    return json.loads(kubectl(env, "get", "svc", "-n", namespace, name, "-o", "json", admin=True).stdout)


def test_app_pods_cannot_reach_the_workload_generator_or_observability_admin(env) -> None:
    import urllib.request

    pod = frontend_pod(env)
    generator = _service(env, "hotel-workload", "workload-generator")
    gen_target = f"{generator['spec']['clusterIP']}:{generator['spec']['ports'][0]['port']}"
    gen_pods = json.loads(kubectl(env, "get", "pods", "-n", "hotel-workload", "-o", "json", admin=True).stdout)["items"]
    gen_pod = f"{gen_pods[0]['status']['podIP']}:{generator['spec']['ports'][0]['targetPort']}"
    prometheus = _service(env, "observability", "prometheus")
    prom_target = f"{prometheus['spec']['clusterIP']}:9090"
    jaeger = _service(env, "observability", "jaeger")["spec"]["clusterIP"]
    result = kubectl(env, "exec", "-n", NS, pod, "--", *connect_args(sys.executable, gen_target, gen_pod, prom_target,
                     f"{jaeger}:16686", f"{jaeger}:4318", "search:8082"))
    seen = reach(result.stdout)
    assert seen[gen_target] == "refused" and seen[gen_pod] == "refused"  # the oracle's source of truth
    assert seen[prom_target] == "refused" and seen[f"{jaeger}:16686"] == "refused"  # admin and query APIs
    assert seen[f"{jaeger}:4318"] == "open"  # trace ingestion, which the app needs
    assert seen["search:8082"] == "open"  # the app's own services
    # the hidden side still calls the app: the generator's requests succeed, Prometheus scrapes
    with urllib.request.urlopen(f"http://{gen_target}/stats?window=60", timeout=20) as response:
        stats = json.load(response)
    assert stats["count"] > 0 and stats["success"] > 0  # (the rate is the oracles' business, and load-bound)
    deadline = time.monotonic() + 60
    while True:
        query = urllib.request.quote('up{namespace="hotel-reservation"} == 1')
        with urllib.request.urlopen(f"http://{prom_target}/api/v1/query?query={query}", timeout=20) as response:
            scraped = json.load(response)["data"]["result"]
        if scraped or time.monotonic() > deadline:
            break
        time.sleep(3)
    assert scraped, "Prometheus no longer scrapes the app's pods"
