"""End to end on the embedded cluster: deploy with the real kubectl, every pod Ready, the workload
succeeds, and traces span frontend → search → geo/rate → PostgreSQL/memcached.

Skipped (with the reason) when the embedded cluster is not installed or does not yet give pods
cluster DNS, which the app needs to find its peers by Service name.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
from hotel_testlib import OtlpReceiver
from sregym_app_hotel_reservation.deploy import Kubectl, deploy, undeploy, workload_stats

pytestmark = [pytest.mark.slow, pytest.mark.apps]  # its own cluster with Hotel: the live lane
cluster_mod = pytest.importorskip("sregym_cluster_embedded.cluster")

DNS_PROBE = """
apiVersion: v1
kind: Pod
metadata: {name: dns-probe, namespace: default}
spec:
  restartPolicy: Never
  containers:
  - name: probe
    image: sregym/hotel-reservation:1.0
    command: ["python3", "-c", "import socket; socket.getaddrinfo('kubernetes.default.svc.cluster.local', 443)"]
"""


OTLP_SINK = """
apiVersion: v1
kind: Service
metadata: {{name: otlp-sink, namespace: default}}
spec:
  ports: [{{name: otlp, port: 4318, targetPort: {port}}}]
---
apiVersion: v1
kind: Endpoints
metadata: {{name: otlp-sink, namespace: default}}
subsets:
- addresses: [{{ip: 127.0.0.2}}]
  ports: [{{name: otlp, port: {port}}}]
"""


@pytest.fixture(scope="module")
def cluster():
    home = Path(tempfile.mkdtemp(prefix="hotel-e2e-"))
    home.chmod(0o755)  # the postgres user must traverse it when the node agent runs as root
    old = os.environ.get("SREGYM_HOME")
    os.environ["SREGYM_HOME"] = str(home)
    name = f"hotel-e2e-{os.getpid() % 100000}"
    try:
        info = cluster_mod.up(name, 1, owner_pid=os.getpid())  # the start timeout CI sets for a loaded machine
        yield info
    finally:
        cluster_mod.down(name, forget=True)
        if old is None:
            os.environ.pop("SREGYM_HOME", None)
        else:
            os.environ["SREGYM_HOME"] = old
        shutil.rmtree(home, ignore_errors=True)


def pods_get_cluster_dns(k: Kubectl) -> bool:
    k.run("apply", "-f", "-", stdin=DNS_PROBE)
    deadline = time.monotonic() + 60
    phase = ""
    while time.monotonic() < deadline:
        phase = k.json("get", "pod", "dns-probe", "-n", "default").get("status", {}).get("phase", "")
        if phase in ("Succeeded", "Failed"):
            break
        time.sleep(0.5)
    k.run("delete", "pod", "dns-probe", "-n", "default", "--wait=false", check=False)
    return phase == "Succeeded"


def _ancestor_services(span, by_id):
    chain = [span]
    while chain[-1]["parent_id"] in by_id:
        chain.append(by_id[chain[-1]["parent_id"]])
    return [s["service"] for s in chain]


def test_kubectl_sees_the_inventory(cluster):
    """The manifests apply server-side (dry run) on the embedded API server with the real kubectl."""
    import yaml
    from sregym_app_hotel_reservation.manifests import render, render_yaml

    k = Kubectl(cluster.kubeconfig)
    k.run("apply", "-f", "-", stdin=yaml.safe_dump_all([d for d in render() if d["kind"] == "Namespace"]))
    out = subprocess.run([k.binary, "--kubeconfig", str(cluster.kubeconfig), "apply", "--dry-run=server",
                          "-f", "-"], input=render_yaml(), capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "deployment.apps/frontend" in out.stdout and "statefulset.apps/postgres-geo" in out.stdout


# Matrix-only since 2026-11-29: its span sink is a selector-less Service whose hand-written Endpoints
# point at a host listener (127.0.0.2), which the service proxy no longer forwards (issue #34, attack 4:
# Endpoints only reach pods of the Service's namespace). It needs a sink that runs as a pod; until then
# traces on the embedded cluster are proved through Jaeger by the Astronomy Shop and TrainTicket live
# modules (test_one_trace_crosses_the_queue..., test_one_booking_trace_spans_the_whole_path...).
@pytest.mark.matrix
def test_deploy_workload_and_traces_on_the_embedded_cluster(cluster):
    k = Kubectl(cluster.kubeconfig)
    if not pods_get_cluster_dns(k):
        pytest.skip("the embedded cluster does not give pods cluster DNS yet (dns-probe pod failed)")
    # Pods dialling 127.0.0.1 reach their own pod IP, so the receiver listens on another loopback address.
    # App pods may not connect to host listeners (the pod network boundary), so the sink is reached the
    # way a cluster reaches any outside service: a Service without selector and hand-written Endpoints,
    # forwarded by the service proxy.
    receiver = OtlpReceiver(host="127.0.0.2").start()
    k.run("apply", "-f", "-", stdin=OTLP_SINK.format(port=receiver.port))
    try:
        started = time.monotonic()
        result = deploy(cluster.kubeconfig, params={"otlp_endpoint": "http://otlp-sink.default.svc.cluster.local:4318",
                                                    "workload_rate": 5},
                        timeout=300)
        assert result["ready_s"] is not None
        # Behaviour, not a service level: the workload's requests get answers with the content the
        # seeded data dictates, and none contradicts it (the SLO bar is graded in validation runs).
        deadline = time.monotonic() + 300  # an outer bound against hangs
        while True:
            time.sleep(10)
            stats = workload_stats(k, window=60)
            good = (stats is not None and stats["content_errors"] == 0
                    and (stats["success_rate"] or 0) * stats["count"] >= 20)
            if good or time.monotonic() > deadline:
                break
        assert good, json.dumps(stats)
        spans = list(receiver.spans)
        by_id = {s["span_id"]: s for s in spans}
        chains: dict[tuple[str, str], list[list[str]]] = {}
        for s in spans:
            if s["attributes"].get("db.system"):
                chains.setdefault((s["service"], s["attributes"]["db.system"]), []).append(_ancestor_services(s, by_id))
        per_service = {svc: sum(1 for s in spans if s["service"] == svc) for svc in {s["service"] for s in spans}}
        for key in (("geo", "postgresql"), ("rate", "memcached"), ("rate", "postgresql")):
            assert key in chains, f"no {key} span among {len(spans)}: {per_service}"
            # The last batches may still be in flight; some complete chain must be there.
            complete = [c for c in chains[key] if c[0] == key[0] and "search" in c and c[-1] == "frontend"]
            assert complete, (chains[key][-3:], per_service)
        print(f"deploy-to-ready {result['ready_s']:.1f}s, workload ok after {time.monotonic() - started:.1f}s")
    finally:
        receiver.stop()
        undeploy(cluster.kubeconfig, wait=False)
