"""Every node-level primitive on a real embedded cluster: inject, see the symptom through kubectl
or the service, ``is_present``, reference fix, not present, recovered; then ``recover``.

One 2-node cluster per module with a PostgreSQL StatefulSet on a PVC (tiny shared_buffers, so
reads reach the volume) and a Python HTTP Deployment behind a Service.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.apps]  # a 2-node cluster with PostgreSQL: the live lane
pytest.importorskip("sregym_cluster_embedded")  # the live tests need the embedded cluster

REPO = Path(__file__).resolve().parents[3]
KUBECTL = str(REPO / ".venv" / "bin" / "kubectl")
NS = "nf"

MANIFEST = f"""
apiVersion: v1
kind: Namespace
metadata: {{name: {NS}}}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {{name: pg-data, namespace: {NS}}}
spec:
  accessModes: [ReadWriteOnce]
  resources: {{requests: {{storage: 1Gi}}}}
---
apiVersion: v1
kind: Service
metadata: {{name: pg, namespace: {NS}}}
spec:
  selector: {{app: pg}}
  ports: [{{name: postgres, port: 5432, targetPort: 5432}}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {{name: pg, namespace: {NS}}}
spec:
  serviceName: pg
  replicas: 1
  selector: {{matchLabels: {{app: pg}}}}
  template:
    metadata: {{labels: {{app: pg}}}}
    spec:
      terminationGracePeriodSeconds: 3
      containers:
      - name: postgres
        image: postgres:15
        args: ["-c", "shared_buffers=128kB", "-c", "max_connections=20"]
        env:
        - {{name: POSTGRES_PASSWORD, value: pw}}
        - {{name: PGDATA, value: /var/lib/postgresql/data/pgdata}}
        ports: [{{containerPort: 5432}}]
        volumeMounts: [{{name: data, mountPath: /var/lib/postgresql/data}}]
      volumes:
      - name: data
        persistentVolumeClaim: {{claimName: pg-data}}
---
apiVersion: v1
kind: Service
metadata: {{name: web, namespace: {NS}}}
spec:
  selector: {{app: web}}
  ports: [{{name: http, port: 8080, targetPort: 8080}}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: web, namespace: {NS}}}
spec:
  replicas: 1
  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata: {{labels: {{app: web}}}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: web
        image: python
        command: ["python3", "-m", "http.server", "8080"]
        ports: [{{containerPort: 8080}}]
        readinessProbe:
          tcpSocket: {{port: 8080}}
          periodSeconds: 1
"""


class Cluster:
    def __init__(self, handle: Any) -> None:
        self.handle = handle
        self.kubeconfig = handle.kubeconfig()

    def kubectl(self, *args: str, check: bool = True, input: str | None = None, timeout: float = 120) -> str:
        proc = subprocess.run([KUBECTL, "--kubeconfig", str(self.kubeconfig), *args], input=input,
                              capture_output=True, text=True, timeout=timeout)
        if check and proc.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)}: {proc.stderr}")
        return proc.stdout + proc.stderr

    def pod_uid(self) -> str:
        return self.kubectl("get", "pod", "pg-0", "-n", NS, "-o", "jsonpath={.metadata.uid}", check=False).strip()

    def wait_restarted(self, old_uid: str, timeout: float = 120) -> None:
        """A disk fault's inject returns once it deleted the pods (the rule is on the node first):
        wait for the new pg-0, then for its PostgreSQL."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            uid = self.pod_uid()
            if uid and uid != old_uid and "Running" in self.kubectl(
                    "get", "pod", "pg-0", "-n", NS, "-o", "jsonpath={.status.phase}", check=False):
                self.wait_sql(timeout=max(1.0, deadline - time.monotonic()))
                return
            time.sleep(0.5)
        raise AssertionError(f"pg-0 was not replaced (uid still {old_uid})")

    def sql(self, statement: str) -> str:
        return self.kubectl("exec", "pg-0", "-n", NS, "--", "psql", "-U", "postgres", "-At", "-c", statement,
                            check=False)

    def wait_sql(self, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            # the entrypoint's init-time server on a fresh volume answers on the socket too, then
            # stops; only the final server listens on TCP (listen_addresses is empty before it)
            if self.sql("select current_setting('listen_addresses') <> ''").strip() == "t":
                return
            time.sleep(1)
        raise AssertionError("postgres did not come up: " + self.kubectl("logs", "pg-0", "-n", NS, check=False))

    def seed_table(self, rows: int = 50_000) -> None:
        out = self.sql(f"drop table if exists t; create table t(id int, pad text); "
                       f"insert into t select g, repeat('x', 200) from generate_series(1, {rows}) g; checkpoint")
        assert "CHECKPOINT" in out, out

    def pods(self, app: str) -> list[dict]:
        items = json.loads(self.kubectl("get", "pods", "-n", NS, "-l", f"app={app}", "-o", "json"))["items"]
        return [p for p in items if not p["metadata"].get("deletionTimestamp")]

    def web_url(self) -> str:
        ip = self.kubectl("get", "svc", "web", "-n", NS, "-o", "jsonpath={.spec.clusterIP}").strip()
        return f"http://{ip}:8080/"


def request_seconds(url: str, timeout: float = 20.0) -> float:
    started = time.monotonic()
    with urllib.request.urlopen(url, timeout=timeout) as resp:
        resp.read()
    return time.monotonic() - started


def _elapsed_even_if_lost(url: str, timeout: float = 8.0) -> float:
    """A request's duration; one that loss stalls past ``timeout`` counts as that slow (TCP's
    back-off after repeated losses can exceed any sensible wait)."""
    started = time.monotonic()
    try:
        request_seconds(url, timeout=timeout)
    except OSError:
        pass
    return time.monotonic() - started


def wait_until(check, timeout: float, what: str, interval: float = 0.5) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(interval)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Iterator[Cluster]:
    from sregym_cluster_embedded.plugin import EmbeddedCluster

    # restored however the module ends, a failed start included: later modules must not look here
    with pytest.MonkeyPatch.context() as env:
        env.setenv("SREGYM_HOME", str(tmp_path_factory.mktemp("home")))
        # node-not-ready waits out the grace period: half the default 40 s (still two missed renewals)
        env.setenv("SREGYM_NODE_MONITOR_GRACE_PERIOD", "20")
        handle = EmbeddedCluster(name=f"nodefaults-{os.getpid()}", nodes=2, owned=True)
        handle.up()
        try:
            c = Cluster(handle)
            # pg starts under the seccomp supervisor's filter for fsync, as the node's plan does for
            # an installed problem's target (syscall-fail has no shim fallback: issue 36)
            if handle.fault_mechanisms()["seccomp-supervisor"]["available"]:
                handle.supervise("pg-fsync", namespace=NS, labels={"app": "pg"}, calls=["fsync"])
            c.kubectl("apply", "-f", "-", input=MANIFEST)
            c.kubectl("rollout", "status", "deployment/web", "-n", NS, "--timeout=120s")
            c.wait_sql()
            yield c
        finally:
            handle.down()


def fault_setup(c: Cluster, fault_name: str, component: str) -> tuple[Any, Any, Any]:
    from sregym_core.faults import FaultContext
    from sregym_core.plugins import process_host
    from sregym_core.types import AppSpec, ComponentSpec, Target

    components = (
        ComponentSpec(name="pg", kind="StatefulSet", roles=("db:postgres", "stateful"), ports=(5432,),
                      pvcs=("pg-data",), container="postgres", service="pg"),
        ComponentSpec(name="web", kind="Deployment", roles=("service:http",), ports=(8080,), service="web"),
    )
    app = AppSpec(name="nodefaults-test", namespace=NS, components=components)
    faults = process_host().get_faults()
    fault = faults[fault_name]
    ctx = FaultContext(kubeconfig=c.kubeconfig, namespace=NS, app=app, cluster=c.handle, kubectl_path=KUBECTL)
    target = Target(app=app, component=next(x for x in components if x.name == component), namespace=NS)
    assert fault.selector.matches(target.component)
    return fault, ctx, target


def params_of(fault: Any, **given: Any) -> dict:
    from sregym_core.validation import validate

    return validate(given, dict(fault.params_schema), what=fault.name, fill_defaults=True)


def test_latent_sector_error(cluster: Cluster) -> None:
    fault, ctx, target = fault_setup(cluster, "latent-sector-error", "pg")
    cluster.seed_table()
    params = params_of(fault, rate=0.05)
    old_uid = cluster.pod_uid()
    fault.impl.inject(ctx, target, params)
    try:
        cluster.wait_restarted(old_uid)
        outputs = [cluster.sql("select count(*), sum(length(pad)) from t") for _ in range(6)]
        assert any("Input/output error" in o for o in outputs), outputs
        logs = cluster.kubectl("logs", "pg-0", "-n", NS)
        assert "could not read" in logs and "Input/output error" in logs
        assert fault.impl.is_present(ctx, target, params)
        truth = fault.impl.ground_truth(ctx, target, params)
        assert truth.mutated_values["volumes"] and truth.layer == "hardware"
        fault.impl.reference_fix(ctx, target, params)
        assert not fault.impl.is_present(ctx, target, params)
        cluster.wait_sql()
        cluster.seed_table(5_000)
        assert all(cluster.sql("select count(*) from t").strip() == "5000" for _ in range(5))
    finally:
        fault.impl.recover(ctx, target, params)


def test_disk_bad_blocks(cluster: Cluster) -> None:
    fault, ctx, target = fault_setup(cluster, "disk-bad-blocks", "pg")
    # the FUSE layer (any binary meets it); no shim fallback (issue 36)
    fuse = cluster.handle.faults()["mechanisms"]["fuse-badblocks"]
    if not fuse["available"]:
        pytest.skip(f"fuse-badblocks unavailable here: {fuse.get('reason')}")
    cluster.seed_table()
    params = params_of(fault, fraction=0.05)
    old_uid = cluster.pod_uid()
    fault.impl.inject(ctx, target, params)
    try:
        assert ctx.state["table"] == "t" and ctx.state["bad_blocks"]
        assert ctx.state["fault_mechanism"] == "fuse-badblocks", ctx.state
        cluster.wait_restarted(old_uid)
        first = cluster.sql("select count(*) from t")
        assert "Input/output error" in first and "could not read block" in first, first
        block = int(first.split("could not read block ")[1].split()[0])
        assert block in ctx.state["bad_blocks"]
        assert cluster.sql("select count(*) from t") == first  # deterministic: same block every time
        assert cluster.sql("select 1").strip() == "1"  # the rest of the volume reads fine
        assert fault.impl.is_present(ctx, target, params)
        fault.impl.reference_fix(ctx, target, params)
        assert not fault.impl.is_present(ctx, target, params)
        cluster.wait_sql()
        cluster.seed_table(5_000)
        assert cluster.sql("select count(*) from t").strip() == "5000"
    finally:
        fault.impl.recover(ctx, target, params)


def test_syscall_fail_fsync(cluster: Cluster) -> None:
    fault, ctx, target = fault_setup(cluster, "syscall-fail", "pg")
    cluster.wait_sql()
    params = params_of(fault, syscall="fsync")
    fault.impl.inject(ctx, target, params)
    try:
        cluster.sql("create table if not exists f(x int); insert into f values (1); checkpoint")
        wait_until(lambda: "could not fsync" in cluster.kubectl("logs", "pg-0", "-n", NS, check=False)
                   or "could not fsync" in cluster.kubectl("logs", "pg-0", "-n", NS, "--previous", check=False),
                   60, "a fsync PANIC in the postgres logs")
        assert fault.impl.is_present(ctx, target, params)
        fault.impl.reference_fix(ctx, target, params)
        assert not fault.impl.is_present(ctx, target, params)
        cluster.wait_sql()
        assert "CHECKPOINT" in cluster.sql("checkpoint")
    finally:
        fault.impl.recover(ctx, target, params)


def test_disk_full(cluster: Cluster) -> None:
    fault, ctx, target = fault_setup(cluster, "disk-full", "pg")
    cluster.wait_sql()
    params = params_of(fault, fill_mb=16)
    fault.impl.inject(ctx, target, params)
    try:
        time.sleep(1.5)  # the rules are re-rendered every half second
        out = cluster.sql("create table if not exists big(pad text); "
                          "insert into big select repeat('y', 500) from generate_series(1, 20000); checkpoint")
        assert "No space left on device" in out, out
        assert "backup.tar.partial" in cluster.kubectl("exec", "pg-0", "-n", NS, "--", "ls",
                                                       "/var/lib/postgresql/data", check=False)
        assert fault.impl.is_present(ctx, target, params)
        fault.impl.reference_fix(ctx, target, params)
        assert not fault.impl.is_present(ctx, target, params)
        cluster.wait_sql()
        assert "INSERT" in cluster.sql("create table if not exists small(x int); insert into small values (1)")
    finally:
        fault.impl.recover(ctx, target, params)


def test_network_delay(cluster: Cluster) -> None:
    fault, ctx, target = fault_setup(cluster, "network-delay", "web")
    url = cluster.web_url()
    assert request_seconds(url) < 0.3
    params = params_of(fault, delay_ms=500, jitter_ms=0)
    fault.impl.inject(ctx, target, params)
    node = ctx.state["node"]
    try:
        assert request_seconds(url) >= 0.45
        assert fault.impl.is_present(ctx, target, params)
        # a restart that happens to land the pod on another node: fast again, but the bad node is
        # still open to it, so the fault is not mitigated
        cluster.kubectl("cordon", node)
        old = {p["metadata"]["name"] for p in cluster.pods("web")}
        cluster.kubectl("delete", "pods", "-n", NS, *old, "--wait=false")
        def moved() -> bool:
            pods = cluster.pods("web")
            return bool(pods) and all(p["metadata"]["name"] not in old and p["spec"].get("nodeName") != node
                                      and any(c["type"] == "Ready" and c["status"] == "True"
                                              for c in p["status"].get("conditions") or []) for p in pods)
        wait_until(moved, 60, "web ready on the other node only")
        cluster.kubectl("uncordon", node)
        assert request_seconds(url) < 0.3
        assert fault.impl.is_present(ctx, target, params)
        fault.impl.reference_fix(ctx, target, params)
        assert not fault.impl.is_present(ctx, target, params)
        wait_until(lambda: request_seconds(url) < 0.3, 30, "fast responses again")
    finally:
        fault.impl.recover(ctx, target, params)


def test_network_loss(cluster: Cluster) -> None:
    fault, ctx, target = fault_setup(cluster, "network-loss", "web")
    url = cluster.web_url()
    params = params_of(fault, loss_pct=60)
    fault.impl.inject(ctx, target, params)
    try:
        times = [_elapsed_even_if_lost(url) for _ in range(8)]
        assert max(times) >= 0.19, times  # a lost segment costs at least one 200 ms time-out
        assert fault.impl.is_present(ctx, target, params)
        fault.impl.reference_fix(ctx, target, params)
        assert not fault.impl.is_present(ctx, target, params)
        wait_until(lambda: max(request_seconds(url) for _ in range(5)) < 0.15, 30, "no more losses")
    finally:
        fault.impl.recover(ctx, target, params)


def test_cpu_noisy_neighbor(cluster: Cluster) -> None:
    fault, ctx, target = fault_setup(cluster, "cpu-noisy-neighbor", "web")
    params = params_of(fault, workers=1)
    fault.impl.inject(ctx, target, params)
    try:
        node = cluster.pods("web")[0]["spec"]["nodeName"]
        name = ctx.state["deployment"]

        def neighbour_runs() -> bool:
            pods = cluster.pods(name)
            return bool(pods) and pods[0]["spec"]["nodeName"] == node and pods[0]["status"].get("phase") == "Running"

        wait_until(neighbour_runs, 60, "the neighbour pod on the target's node")
        assert fault.impl.is_present(ctx, target, params)
        truth = fault.impl.ground_truth(ctx, target, params)
        assert truth.mutated_values["node"] == node
        fault.impl.reference_fix(ctx, target, params)
        assert not fault.impl.is_present(ctx, target, params)
        wait_until(lambda: not cluster.pods(name), 30, "the neighbour gone")
    finally:
        fault.impl.recover(ctx, target, params)


def test_node_not_ready(cluster: Cluster) -> None:
    fault, ctx, target = fault_setup(cluster, "node-not-ready", "web")
    url = cluster.web_url()
    pg_node = cluster.pods("pg")[0]["spec"]["nodeName"]
    if cluster.pods("web")[0]["spec"]["nodeName"] == pg_node:
        from sregym_core.errors import PermanentFaultError

        # a node with volume-pinned pods is refused: nothing could bring them back
        with pytest.raises(PermanentFaultError, match="node-local volumes"):
            fault.impl.inject(ctx, target, params_of(fault))
        cluster.kubectl("cordon", pg_node)
        cluster.kubectl("delete", "pods", "-n", NS, "-l", "app=web")
        wait_until(lambda: any(p["spec"].get("nodeName") != pg_node and p["status"].get("phase") == "Running"
                               for p in cluster.pods("web")), 90, "web on the other node")
        cluster.kubectl("rollout", "status", "deployment/web", "-n", NS, "--timeout=120s")
        cluster.kubectl("uncordon", pg_node)
    params = params_of(fault)
    fault.impl.inject(ctx, target, params)
    node = ctx.state["node"]
    try:
        assert fault.impl.is_present(ctx, target, params)

        def not_ready() -> bool:
            line = next(ln for ln in cluster.kubectl("get", "nodes").splitlines() if ln.startswith(node))
            return "NotReady" in line

        wait_until(not_ready, 90, f"{node} NotReady")
        assert fault.impl.is_present(ctx, target, params)
        fault.impl.reference_fix(ctx, target, params)
        assert not fault.impl.is_present(ctx, target, params)
        assert "SchedulingDisabled" in cluster.kubectl("get", "node", node)
        assert any(p["spec"]["nodeName"] != node for p in cluster.pods("web"))
        wait_until(lambda: request_seconds(url) < 1, 30, "the service answering from the other node")
    finally:
        fault.impl.recover(ctx, target, params)
    wait_until(lambda: "NotReady" not in cluster.kubectl("get", "node", node), 60, f"{node} Ready again")
    assert "SchedulingDisabled" not in cluster.kubectl("get", "node", node)
