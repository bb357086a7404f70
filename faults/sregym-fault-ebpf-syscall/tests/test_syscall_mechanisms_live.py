"""syscall-fail on a live embedded cluster, through the fault pack as the conductor runs it (issue
36): a statically linked program in the target pod gets ``connect`` refused by the cgroup BPF
programs, and ``fsync`` and ``open`` failed by the node's seccomp supervisor (``open``'s path read
from the caller's memory), the same program in a pod beside it is untouched, nothing readable in
the target pod names the fault, and the fault's state (what the attempt's ``fault_mechanism`` is
read from) names the mechanism that ran, with the kernel's reason for each stronger one it passed
over.

The target's pods start under the supervisor's filter because a ``supervise`` record names them
first (for installed problems the node's plan does that itself); the pod beside it starts under a
filter that lets everything through, so from inside the two look alike. Skipped, with the probe's reason,
where the kernel refuses a mechanism. Outer timeouts only catch hangs."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
import types
from pathlib import Path
from typing import Any

import pytest
from sregym_fault_ebpf_syscall.syscalls import FAULTS

from sregym_core.conductor.attempt import Attempt
from sregym_core.faults import FaultContext
from sregym_core.mechanisms import STATE_KEY
from sregym_core.types import AppSpec, ComponentSpec, Target

pytestmark = pytest.mark.slow

NAMESPACE = "mechanisms"
SYSCALL_FAIL = next(f for f in FAULTS if f.name == "syscall-fail")
KUBECTL = str(Path(sys.executable).parent / "kubectl")
MECHLOOP_C = r"""
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>
int main(int argc, char **argv) {  /* mechloop IP PORT FILE: connect(), open() and fsync() every 0.1 s */
    struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons(atoi(argv[2]))};
    inet_pton(AF_INET, argv[1], &to.sin_addr);
    for (;;) {
        int s = socket(AF_INET, SOCK_STREAM, 0);
        if (connect(s, (struct sockaddr *)&to, sizeof to) == 0) printf("connect ok\n");
        else printf("connect err %d\n", errno);
        close(s);
        int table = open("/data/table", O_RDONLY | O_CREAT, 0644);
        if (table >= 0) { printf("open ok\n"); close(table); } else printf("open err %d\n", errno);
        int fd = open(argv[3], O_WRONLY | O_CREAT, 0644);
        if (write(fd, "x", 1) == 1 && fsync(fd) == 0) printf("fsync ok\n"); else printf("fsync err %d\n", errno);
        close(fd);
        fflush(stdout);
        usleep(100000);
    }
}
"""


def kubectl(cluster: Any, *args: str, input: str | None = None) -> str:
    out = subprocess.run([KUBECTL, "--kubeconfig", str(cluster.kubeconfig), *args], input=input, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout


def deployment(name: str, server_ip: str) -> str:
    return json.dumps({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}}, "spec": {
                     "terminationGracePeriodSeconds": 1,
                     "volumes": [{"name": "bin", "hostPath": {"path": "/sregym-mech", "type": "Directory"}},
                                 {"name": "data", "emptyDir": {}}],
                     "containers": [{"name": "loop", "image": "busybox",
                                     "command": ["/opt/static/mechloop", server_ip, "8080", "/data/journal"],
                                     "volumeMounts": [{"name": "bin", "mountPath": "/opt/static", "readOnly": True},
                                                      {"name": "data", "mountPath": "/data"}]}]}}}})


def last_lines(cluster: Any, name: str, kind: str, count: int = 4) -> list[str]:
    lines = kubectl(cluster, "logs", f"deployment/{name}", "-n", NAMESPACE, "--tail=40").splitlines()
    return [line for line in lines if line.startswith(kind)][-count:]


def wait_lines(cluster: Any, name: str, kind: str, want: str, timeout: float = 60.0) -> list[str]:
    """Until the last lines of ``kind`` are all ``want`` (the event); the last seen otherwise."""
    deadline = time.monotonic() + timeout
    while True:
        lines = last_lines(cluster, name, kind)
        if (len(lines) == 4 and all(line == f"{kind} {want}" for line in lines)) or time.monotonic() > deadline:
            return lines
        time.sleep(0.5)


@pytest.fixture(scope="module")
def cluster(embedded_cluster):
    from sregym_cluster_embedded import cluster as clusters
    from sregym_cluster_embedded.plugin import EmbeddedCluster

    with pytest.MonkeyPatch.context() as env:
        env.setenv("SREGYM_HOME", str(embedded_cluster.home))
        handle = EmbeddedCluster(name=embedded_cluster.name)
        mechanisms = handle.fault_mechanisms()
        directory = Path(clusters.cluster_dir(handle.name)) / "nodes" / "node-1" / "host" / "sregym-mech"
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "mechloop.c").write_text(MECHLOOP_C)
        if shutil.which("gcc") is None:
            pytest.skip("no C compiler for the static program")
        built = subprocess.run(["gcc", "-static", "-O2", "-o", str(directory / "mechloop"), str(directory / "mechloop.c")],
                               capture_output=True, text=True, timeout=120)
        if built.returncode != 0:
            pytest.skip(f"no static C library: {built.stderr[-200:]}")
        kubectl(embedded_cluster, "create", "namespace", NAMESPACE)
        try:
            # the target's pods start under a filter naming fsync and open (the plan does this for problems)
            if mechanisms["seccomp-supervisor"]["available"]:
                handle.supervise("mech-target", namespace=NAMESPACE, labels={"app": "mech-target"},
                                 calls=["fsync", "open"])
            server = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "mech-server", "namespace": NAMESPACE},
                      "spec": {"terminationGracePeriodSeconds": 1, "containers": [
                          {"name": "s", "image": "python", "command": ["python3", "-m", "http.server", "8080"]}]}}
            kubectl(embedded_cluster, "apply", "-f", "-", input=json.dumps(server))
            kubectl(embedded_cluster, "wait", "--for=condition=Ready", "pod/mech-server", "-n", NAMESPACE,
                    "--timeout=120s")
            ip = kubectl(embedded_cluster, "get", "pod", "mech-server", "-n", NAMESPACE,
                         "-o", "jsonpath={.status.podIP}").strip()
            for name in ("mech-target", "mech-other"):
                kubectl(embedded_cluster, "apply", "-f", "-", input=deployment(name, ip))
            for name in ("mech-target", "mech-other"):
                kubectl(embedded_cluster, "rollout", "status", f"deployment/{name}", "-n", NAMESPACE, "--timeout=120s")
            yield types.SimpleNamespace(live=embedded_cluster, handle=handle, mechanisms=mechanisms)
        finally:
            subprocess.run([KUBECTL, "--kubeconfig", str(embedded_cluster.kubeconfig), "delete", "namespace",
                            NAMESPACE, "--wait=false"], capture_output=True, timeout=60)
            if mechanisms["seccomp-supervisor"]["available"]:
                handle.clear_fault("supervise", "mech-target")


def _context(cluster: Any) -> tuple[FaultContext, Target]:
    app = AppSpec(name="mech", namespace=NAMESPACE, components=(ComponentSpec(name="mech-target"),))
    ctx = FaultContext(kubeconfig=cluster.live.kubeconfig, namespace=NAMESPACE, app=app, cluster=cluster.handle,
                       kubectl_path=KUBECTL)
    return ctx, Target(app=app, component=app.components[0], namespace=NAMESPACE)


def _params(**given: Any) -> dict:
    return {"errno": "", "rate": 1.0, "port": 0, **given}


def test_connect_by_cgroup_bpf_and_fsync_by_the_supervisor_reach_a_static_binary_and_are_recorded(cluster) -> None:
    live = cluster.live
    for name in ("mech-target", "mech-other"):  # before any fault: both work
        assert wait_lines(live, name, "connect", "ok") == ["connect ok"] * 4
        assert wait_lines(live, name, "fsync", "ok") == ["fsync ok"] * 4
    if cluster.mechanisms["seccomp-supervisor"]["available"]:
        # only the target started under the supervisor's filter, yet from inside both pods look alike
        seen = {name: [line for line in kubectl(live, "exec", f"deployment/{name}", "-n", NAMESPACE, "--",
                                                "cat", "/proc/1/status").splitlines() if line.startswith("Seccomp")]
                for name in ("mech-target", "mech-other")}
        assert seen["mech-target"] == seen["mech-other"] and "Seccomp:\t2" in seen["mech-target"], seen
    contexts = {}

    if not cluster.mechanisms["bpf-cgroup"]["available"]:
        pytest.skip(f"bpf-cgroup unavailable here: {cluster.mechanisms['bpf-cgroup']['reason']}")
    ctx, target = _context(cluster)
    params = _params(syscall="connect", port=8080)
    SYSCALL_FAIL.impl.inject(ctx, target, params)
    try:
        assert ctx.state[STATE_KEY] == "bpf-cgroup"
        assert wait_lines(live, "mech-target", "connect", "err 111") == ["connect err 111"] * 4
        assert last_lines(live, "mech-other", "connect") == ["connect ok"] * 4  # outside the target
        assert last_lines(live, "mech-target", "fsync") == ["fsync ok"] * 4  # another call
    finally:
        SYSCALL_FAIL.impl.recover(ctx, target, params)
    assert wait_lines(live, "mech-target", "connect", "ok") == ["connect ok"] * 4
    contexts["connect"] = ctx

    if not cluster.mechanisms["seccomp-supervisor"]["available"]:
        pytest.skip(f"seccomp-supervisor unavailable here: {cluster.mechanisms['seccomp-supervisor']['reason']}")
    ctx, target = _context(cluster)
    params = _params(syscall="fsync")
    SYSCALL_FAIL.impl.inject(ctx, target, params)
    try:
        assert ctx.state[STATE_KEY] == "seccomp-supervisor"
        for stronger in ("bpf-lsm", "bpf-fmod-ret"):  # the kernel's answer, where it refused them
            if not cluster.mechanisms[stronger]["available"]:
                assert ctx.state["passed_over"][stronger] == cluster.mechanisms[stronger]["reason"]
        assert wait_lines(live, "mech-target", "fsync", "err 5") == ["fsync err 5"] * 4
        assert last_lines(live, "mech-other", "fsync") == ["fsync ok"] * 4
        assert last_lines(live, "mech-target", "connect") == ["connect ok"] * 4
    finally:
        SYSCALL_FAIL.impl.recover(ctx, target, params)
    assert wait_lines(live, "mech-target", "fsync", "ok") == ["fsync ok"] * 4
    contexts["fsync"] = ctx

    # open(): the supervisor reads the path from the static program's memory and fails the call
    ctx, target = _context(cluster)
    params = _params(syscall="open", errno="EACCES")
    SYSCALL_FAIL.impl.inject(ctx, target, params)
    try:
        assert ctx.state[STATE_KEY] == "seccomp-supervisor"
        assert wait_lines(live, "mech-target", "open", "err 13") == ["open err 13"] * 4
        assert last_lines(live, "mech-other", "open") == ["open ok"] * 4
        assert last_lines(live, "mech-target", "connect") == ["connect ok"] * 4
        # nothing the pod can read names the fault: environment, mounts, its files (kubectl exec
        # processes are not under the container's filter, so they open files as usual)
        seen = kubectl(live, "exec", "deployment/mech-target", "-n", NAMESPACE, "--", "/bin/sh", "-c",
                       "env; cat /proc/self/mountinfo /proc/1/environ /proc/1/cmdline; "
                       f"grep -rl -e {ctx.state['hook_id']} -e EACCES -e seccomp /data /tmp /run /etc /var /root "
                       "2>/dev/null; true")
        for secret in (ctx.state["hook_id"], "EACCES", "seccomp", "errno=", "rate="):
            assert secret not in seen, secret
    finally:
        SYSCALL_FAIL.impl.recover(ctx, target, params)
    assert wait_lines(live, "mech-target", "open", "ok") == ["open ok"] * 4
    contexts["open"] = ctx

    # the attempt's result row reads the mechanisms from the faults' state
    attempt = types.SimpleNamespace(problem=types.SimpleNamespace(faults=[types.SimpleNamespace(id=k) for k in contexts]),
                                    contexts=contexts)
    assert Attempt.fault_mechanism(attempt) == "bpf-cgroup,seccomp-supervisor"
