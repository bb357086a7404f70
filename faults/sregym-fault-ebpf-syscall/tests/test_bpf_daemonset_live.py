"""syscall-fail ``connect`` through the privileged DaemonSet loader (``bpf-daemonset``), on an
embedded cluster reached as any cluster is: through the kubeconfig provider, whose handle has no
node hooks. A statically linked program in the target pod gets ``connect`` refused, the same
program in a pod beside it is untouched, the fault's state names the mechanism and why the node's
own (``bpf-cgroup``) was passed over, nothing in the target pod names the fault, and after recover
the loader's pods are gone and the target connects again (the programs went with its process).

The embedded node grants a privileged pod the host's capabilities only in the benchmark's hidden
namespaces (where the loader runs; no agent can create pods there), as a real node grants them to
any privileged pod; its pods run in their own cgroup v2 directories, which the loader finds by
pod UID. No app is deployed: a tiny server pod and two static clients on the session's cluster.
Outer timeouts only catch hangs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import types
from pathlib import Path
from typing import Any

import pytest
from sregym_fault_ebpf_syscall import daemonset
from sregym_fault_ebpf_syscall.syscalls import FAULTS

from sregym_core.faults import FaultContext
from sregym_core.mechanisms import STATE_KEY
from sregym_core.types import AppSpec, ComponentSpec, Target

pytestmark = [pytest.mark.slow, pytest.mark.skipif(os.geteuid() != 0, reason="BPF programs on cgroups need root")]
pytest.importorskip("sregym_cluster_embedded")
pytest.importorskip("sregym_cluster_kubeconfig")

NAMESPACE = "bpfds"
SYSCALL_FAIL = next(f for f in FAULTS if f.name == "syscall-fail")
BIN = Path(sys.executable).parent
CONNLOOP_C = r"""
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>
int main(int argc, char **argv) {  /* connloop IP PORT: connect() every 0.1 s */
    struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons(atoi(argv[2]))};
    inet_pton(AF_INET, argv[1], &to.sin_addr);
    for (;;) {
        int s = socket(AF_INET, SOCK_STREAM, 0);
        if (connect(s, (struct sockaddr *)&to, sizeof to) == 0) printf("connect ok\n");
        else printf("connect err %d\n", errno);
        close(s);
        fflush(stdout);
        usleep(100000);
    }
}
"""


def kubectl(kubeconfig: Path, *args: str, input: str | None = None, check: bool = True) -> str:
    out = subprocess.run([str(BIN / "kubectl"), "--kubeconfig", str(kubeconfig), *args], input=input,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 or not check, out.stderr
    return out.stdout


def client(name: str, server_ip: str) -> str:
    return json.dumps({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}}, "spec": {
                     "terminationGracePeriodSeconds": 1,
                     "volumes": [{"name": "bin", "hostPath": {"path": "/sregym-bpfds", "type": "Directory"}}],
                     "containers": [{"name": "loop", "image": "busybox",
                                     "command": ["/opt/static/connloop", server_ip, "8080"],
                                     "volumeMounts": [{"name": "bin", "mountPath": "/opt/static",
                                                       "readOnly": True}]}]}}}})


def last_lines(kubeconfig: Path, name: str, count: int = 4) -> list[str]:
    lines = kubectl(kubeconfig, "logs", f"deployment/{name}", "-n", NAMESPACE, "--tail=20").splitlines()
    return [line for line in lines if line.startswith("connect")][-count:]


def wait_lines(kubeconfig: Path, name: str, want: str, timeout: float = 60.0) -> list[str]:
    """Until the last four connect lines are all ``want`` (the event); the last seen otherwise."""
    deadline = time.monotonic() + timeout
    while True:
        lines = last_lines(kubeconfig, name)
        if (len(lines) == 4 and set(lines) == {want}) or time.monotonic() > deadline:
            return lines
        time.sleep(0.5)


@pytest.fixture(scope="module")
def cluster(embedded_cluster) -> Any:
    from sregym_cluster_embedded import cluster as clusters
    from sregym_cluster_kubeconfig.provider import KubeconfigCluster

    if shutil.which("gcc") is None:
        pytest.skip("no C compiler for the static program")
    kubeconfig = embedded_cluster.kubeconfig
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SREGYM_HOME", str(embedded_cluster.home))
        directory = Path(clusters.cluster_dir(embedded_cluster.name)) / "nodes" / "node-1" / "host" / "sregym-bpfds"
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "connloop.c").write_text(CONNLOOP_C)
    built = subprocess.run(["gcc", "-static", "-O2", "-o", str(directory / "connloop"), str(directory / "connloop.c")],
                           capture_output=True, text=True, timeout=120)
    if built.returncode != 0:
        pytest.skip(f"no static C library: {built.stderr[-200:]}")
    kubectl(kubeconfig, "create", "namespace", NAMESPACE)
    try:
        server = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "server", "namespace": NAMESPACE},
                  "spec": {"terminationGracePeriodSeconds": 1, "containers": [
                      {"name": "s", "image": "python", "command": ["python3", "-m", "http.server", "8080"]}]}}
        kubectl(kubeconfig, "apply", "-f", "-", input=json.dumps(server))
        kubectl(kubeconfig, "wait", "--for=condition=Ready", "pod/server", "-n", NAMESPACE, "--timeout=120s")
        ip = kubectl(kubeconfig, "get", "pod", "server", "-n", NAMESPACE, "-o", "jsonpath={.status.podIP}").strip()
        for name in ("ds-target", "ds-other"):
            kubectl(kubeconfig, "apply", "-f", "-", input=client(name, ip))
        for name in ("ds-target", "ds-other"):
            kubectl(kubeconfig, "rollout", "status", f"deployment/{name}", "-n", NAMESPACE, "--timeout=120s")
        yield types.SimpleNamespace(kubeconfig=kubeconfig, handle=KubeconfigCluster(name="bpfds", kubeconfig=kubeconfig))
    finally:
        kubectl(kubeconfig, "delete", "namespace", NAMESPACE, "--wait=false", check=False)


def test_connect_refused_by_the_daemonset_loader_on_a_cluster_without_node_hooks(cluster) -> None:
    kubeconfig, handle = cluster.kubeconfig, cluster.handle
    assert not hasattr(handle, "node_fault")  # a kubeconfig handle: no node hooks
    probe = handle.fault_mechanisms()
    assert probe["bpf-daemonset"]["available"], probe["bpf-daemonset"]
    for name in ("ds-target", "ds-other"):
        assert wait_lines(kubeconfig, name, "connect ok") == ["connect ok"] * 4
    app = AppSpec(name="bpfds", namespace=NAMESPACE, components=(ComponentSpec(name="ds-target"),))
    ctx = FaultContext(kubeconfig=kubeconfig, namespace=NAMESPACE, app=app, cluster=handle,
                       kubectl_path=str(BIN / "kubectl"))
    target = Target(app=app, component=app.components[0], namespace=NAMESPACE)
    params = {"syscall": "connect", "errno": "", "rate": 1.0, "port": 8080}
    SYSCALL_FAIL.impl.inject(ctx, target, params)
    loader = ctx.state["daemonset"]["daemonset"]
    try:
        assert ctx.state[STATE_KEY] == "bpf-daemonset"
        assert ctx.state["passed_over"] == {"bpf-cgroup": probe["bpf-cgroup"]["reason"]}
        assert wait_lines(kubeconfig, "ds-target", "connect err 111") == ["connect err 111"] * 4
        assert last_lines(kubeconfig, "ds-other") == ["connect ok"] * 4  # the pod beside it
        assert SYSCALL_FAIL.impl.is_present(ctx, target, params)
        # nothing the target pod can read names the fault (the rule is in the hidden namespace)
        seen = kubectl(kubeconfig, "exec", "deployment/ds-target", "-n", NAMESPACE, "--", "/bin/sh", "-c",
                       "env; cat /proc/self/mountinfo /proc/1/environ; true")
        for secret in (loader, daemonset.NAMESPACE, "ECONNREFUSED", "errno"):
            assert secret not in seen, secret
    finally:
        SYSCALL_FAIL.impl.recover(ctx, target, params)
    # the loader is gone (its exit detached the programs: nothing was pinned), the target connects
    assert kubectl(kubeconfig, "get", "pods,daemonsets,configmaps", "-n", daemonset.NAMESPACE,
                   "-l", f"{daemonset.FAULT_LABEL}={loader}", "-o", "name") == ""
    assert wait_lines(kubeconfig, "ds-target", "connect ok") == ["connect ok"] * 4
    assert not SYSCALL_FAIL.impl.is_present(ctx, target, params)
