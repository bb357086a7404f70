"""The admin fault endpoints (/sregym/nodes, /sregym/faults) on a real cluster process: admin only,
Status errors for bad input, a shim rule arming a running pod and disarming it without any pod
being able to read it, node stop/start, and the service proxy delay."""

from __future__ import annotations

import json
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import PINNED_KUBECTL

pytestmark = pytest.mark.slow


def reader_pod(name: str, reads: int, linger_s: int = 0, restart_policy: str = "Always") -> str:
    """A pod that reads /usr/lib/os-release ``reads`` times (0.1 s apart), printing ``ok`` or ``err <errno>``
    for each, then stays ``linger_s`` seconds."""
    script = (f"import time\nfor _ in range({reads}):\n"
              "    try:\n        open('/usr/lib/os-release', 'rb').read(); print('ok')\n"
              "    except OSError as e:\n        print('err', e.errno)\n    time.sleep(0.1)\n"
              f"time.sleep({linger_s})\n")
    return json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": name}},
                       "spec": {"terminationGracePeriodSeconds": 1, "restartPolicy": restart_policy,
                                "containers": [{"name": "reader", "image": "python",
                                                "command": ["python3", "-u", "-c"], "args": [script]}]}})


POD = reader_pod("reader", reads=3000)


@pytest.fixture(scope="module")
def handle(tmp_path_factory) -> Iterator[Any]:
    import os

    from sregym_cluster_embedded.plugin import EmbeddedCluster

    # restored however the module ends, a failed start included: later modules must not look here
    with pytest.MonkeyPatch.context() as env:
        env.setenv("SREGYM_HOME", str(tmp_path_factory.mktemp("home")))
        env.setenv("SREGYM_SYSCALL_SUPERVISOR", "1")  # the opt-in seccomp fsync supervisor, tested here
        cluster = EmbeddedCluster(name=f"nfadmin-{os.getpid()}", nodes=2, owned=True)
        cluster.up()
        try:
            yield cluster
        finally:
            cluster.down()


def kubectl(handle: Any, *args: str, input: str | None = None) -> str:
    out = subprocess.run([str(PINNED_KUBECTL), "--kubeconfig", str(handle.kubeconfig()), *args], input=input,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout


def status_of(call) -> tuple[int, dict]:
    try:
        call()
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())
    raise AssertionError("expected an API error")


def test_agent_identity_is_refused(handle: Any) -> None:
    from sregym_cluster_embedded import cluster as clusters

    config = yaml.safe_load(handle.kubeconfig(agent=True).read_text())
    ctx = ssl.create_default_context(cafile=str(clusters.cluster_dir(handle.name) / "pki" / "ca.crt"))
    req = urllib.request.Request(config["clusters"][0]["cluster"]["server"] + "/sregym/faults",
                                 headers={"Authorization": f"Bearer {config['users'][0]['user']['token']}"})
    code, body = status_of(lambda: urllib.request.urlopen(req, context=ctx, timeout=30))
    assert code == 403 and body["kind"] == "Status" and body["reason"] == "Forbidden"


def test_bad_requests_get_status_errors(handle: Any) -> None:
    code, body = status_of(lambda: handle.node_fault("x", calls=["read"]))
    assert code == 422 and "namespace" in body["message"]
    code, body = status_of(lambda: handle.node_fault("x", namespace="default", calls=["chmod"]))
    assert code == 422 and "calls" in body["message"]
    code, body = status_of(lambda: handle.node_fault("x", namespace="default", calls=["read"], errno="EWHAT"))
    assert code == 422 and "errno" in body["message"]
    code, body = status_of(lambda: handle.node_fault("Bad_Id", namespace="default", calls=["read"]))
    assert code == 422
    code, body = status_of(lambda: handle.node_fault("x", nodes=["node-9"], calls=["read"]))
    assert code == 404
    code, body = status_of(lambda: handle.disk_fill("x", namespace="default", claim="nope"))
    assert code == 404 and "nope" in body["message"]
    code, body = status_of(lambda: handle.network_fault("x", namespace="default", service="nope", delay_ms=5))
    assert code == 404
    code, body = status_of(lambda: handle.stop_node("node-9"))
    assert code == 404
    assert handle.fault_status("shim", "never") is None
    assert handle.clear_fault("shim", "never") is False


def test_shim_rule_arms_and_disarms_a_running_pod(handle: Any) -> None:
    kubectl(handle, "apply", "-f", "-", input=POD)
    kubectl(handle, "wait", "--for=condition=Ready", "pod/reader", "--timeout=60s")
    try:
        record = handle.node_fault("eio", namespace="default", labels={"app": "reader"}, calls=["read"],
                                   errno="EIO", paths=["/usr/lib/os-release"])
        assert record["active"] and sum(len(v) for v in record["targets"].values()) == 1
        time.sleep(1.5)
        tail = kubectl(handle, "logs", "reader", "--tail=3").split()
        assert tail[-2:] == ["err", "5"]
        assert handle.faults()["shim"]["eio"]["active"]
        assert handle.clear_fault("shim", "eio")
        time.sleep(1.5)
        assert kubectl(handle, "logs", "reader", "--tail=1").strip() == "ok"
    finally:
        kubectl(handle, "delete", "pod", "reader", "--wait=false")


FIRST_READ_POD = reader_pod("first-read", reads=1, linger_s=60, restart_policy="Never")


def test_a_pod_started_under_a_rule_fails_from_its_first_read(handle: Any) -> None:
    # the replacement of a pod on a broken disk must not get a clean first read before the rules
    # catch up with its new IP
    record = handle.node_fault("first", namespace="default", labels={"app": "first-read"}, calls=["read"],
                               errno="EIO", paths=["/usr/lib/os-release"])
    assert not record["active"]  # no pod yet
    try:
        kubectl(handle, "apply", "-f", "-", input=FIRST_READ_POD)
        kubectl(handle, "wait", "--for=condition=Ready", "pod/first-read", "--timeout=60s")
        deadline = time.monotonic() + 30
        while not (first := kubectl(handle, "logs", "first-read").split()) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert first == ["err", "5"]
        assert handle.faults()["shim"]["first"]["active"]
    finally:
        handle.clear_fault("shim", "first")
        kubectl(handle, "delete", "pod", "first-read", "--wait=false")


def test_stop_and_start_a_node_agent(handle: Any) -> None:
    assert handle.node_agents()["node-2"]["agent"] == "running"
    assert handle.stop_node("node-2")["agent"] == "stopped"
    assert handle.faults()["nodes"]["node-2"]["agent"] == "stopped"
    assert handle.start_node("node-2")["agent"] == "running"
    assert "node-2" in kubectl(handle, "get", "nodes")


def test_network_delay_on_a_service(handle: Any) -> None:
    manifest = """
apiVersion: v1
kind: Pod
metadata: {name: web, labels: {app: web}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: web, image: python, command: ["python3", "-m", "http.server", "8080"], ports: [{containerPort: 8080}],
     readinessProbe: {tcpSocket: {port: 8080}, periodSeconds: 1}}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{port: 8080, targetPort: 8080}]
"""
    kubectl(handle, "apply", "-f", "-", input=manifest)
    try:
        kubectl(handle, "wait", "--for=condition=Ready", "pod/web", "--timeout=60s")
        ip = kubectl(handle, "get", "svc", "web", "-o", "jsonpath={.spec.clusterIP}")

        def seconds() -> float:
            started = time.monotonic()
            for _ in range(50):
                try:
                    with urllib.request.urlopen(f"http://{ip}:8080/", timeout=10) as resp:
                        resp.read()
                    break
                except OSError:
                    time.sleep(0.2)  # endpoints may lag the pod's readiness by a moment
                    started = time.monotonic()
            return time.monotonic() - started

        assert seconds() < 0.3
        record = handle.network_fault("slow", namespace="default", service="web", delay_ms=400)
        assert record["active"] and record["targets"] == ["default/web"]
        assert seconds() >= 0.38
        handle.clear_fault("network", "slow")
        assert seconds() < 0.3
    finally:
        kubectl(handle, "delete", "pod,svc", "web", "--wait=false")


#: what `kubectl exec` can reach in a pod: its env, every /proc entry of its processes it may
#: open, its mounts, and every readable file outside the image's system directories
SEARCH = r"""
import os, sys
markers = sys.stdin.read().split("\n")
found = []
def check(where, data):
    text = data.decode(errors="replace") if isinstance(data, bytes) else data
    for marker in markers:
        if marker in text:
            found.append(f"{where}: {marker}")
def read(path, limit=1 << 20):
    try:
        with open(path, "rb") as f:
            return f.read(limit)
    except OSError:
        return b""
check("env", repr(dict(os.environ)))
check("/proc/self/environ", read("/proc/self/environ"))
check("/proc/self/mountinfo", read("/proc/self/mountinfo"))
for pid in filter(str.isdigit, os.listdir("/proc")):
    if int(pid) == os.getpid():
        continue
    for name in ("environ", "maps", "mountinfo", "cmdline"):
        check(f"/proc/{pid}/{name}", read(f"/proc/{pid}/{name}"))
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        fds = []
    for fd in fds:
        try:
            check(f"/proc/{pid}/fd/{fd} link", os.readlink(f"/proc/{pid}/fd/{fd}"))
        except OSError:
            pass
        check(f"/proc/{pid}/fd/{fd}", read(f"/proc/{pid}/fd/{fd}", 65536) if fd not in ("0", "1", "2") else b"")
skip = {"/proc", "/sys", "/usr", "/lib", "/lib64", "/lib32", "/libx32", "/bin", "/sbin", "/dev"}
for root, dirs, files in os.walk("/"):
    dirs[:] = [d for d in dirs if os.path.join(root, d) not in skip]
    for name in files:
        path = os.path.join(root, name)
        if os.path.isfile(path):
            check(path, read(path))
print("\n".join(found) or "nothing")
"""


def test_no_fault_parameter_is_readable_from_the_pods(handle: Any) -> None:
    # issue 34: the rules (target, syscall, errno, rate) were in a world-readable file mounted into
    # every pod and named by an env var; now each pod's main processes hold only their own rules, in
    # a channel nothing in the pod can list, open or read
    kubectl(handle, "apply", "-f", "-", input=reader_pod("secret", reads=3000))
    kubectl(handle, "wait", "--for=condition=Ready", "pod/secret", "--timeout=60s")
    try:
        handle.node_fault("hidden", namespace="default", labels={"app": "secret"}, calls=["read"],
                          errno="EIO", rate=0.37, paths=["/usr/lib/os-release"])
        deadline = time.monotonic() + 30
        while "err" not in kubectl(handle, "logs", "secret", "--tail=40") and time.monotonic() < deadline:
            time.sleep(0.3)
        assert "err 5" in kubectl(handle, "logs", "secret", "--tail=40")  # the fault is on
        markers = ["calls=read", "rate=0.37", "errno=5 ", "prefix=/usr/lib/os-release",
                   "SREGYM_FAULT"]
        out = kubectl(handle, "exec", "-i", "secret", "--", "python3", "-c", SEARCH, input="\n".join(markers))
        assert out.strip() == "nothing", out
        # a debug container (the agent's own command in the pod) holds no channel to read either
        dump = ("import os\nfor fd in os.listdir('/proc/self/fd'):\n"
                "    try: print(open(f'/proc/self/fd/{fd}', 'rb').read(65536))\n    except OSError: pass\n"
                "print('done')")
        kubectl(handle, "debug", "secret", "--image=python", "--container=dbg", "--", "python3", "-c", dump)
        deadline = time.monotonic() + 60
        logs = ""
        while "done" not in logs and time.monotonic() < deadline:
            time.sleep(0.5)
            logs = subprocess.run([str(PINNED_KUBECTL), "--kubeconfig", str(handle.kubeconfig()), "logs", "secret",
                                   "-c", "dbg"], capture_output=True, text=True, timeout=60).stdout
        assert "done" in logs and "calls=" not in logs and "0.37" not in logs, logs
    finally:
        handle.clear_fault("shim", "hidden")
        kubectl(handle, "delete", "pod", "secret", "--wait=false")


CONNLOOP_C = r"""
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>
int main(int argc, char **argv) {  /* connloop IP PORT [COUNT]: one connect() every 0.1 s */
    struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons(atoi(argv[2]))};
    inet_pton(AF_INET, argv[1], &to.sin_addr);
    for (int i = 0; argc < 4 || i < atoi(argv[3]); i++) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        if (connect(fd, (struct sockaddr *)&to, sizeof to) == 0) printf("ok\n"); else printf("err %d\n", errno);
        fflush(stdout);
        close(fd);
        usleep(100000);
    }
    return 0;
}
"""


def _static_program(handle: Any, name: str, source_code: str) -> None:
    """Build a static program into node-1's hostPath directory /sregym-static (pods mount it)."""
    from sregym_cluster_embedded import cluster as clusters

    directory = Path(clusters.cluster_dir(handle.name)) / "nodes" / "node-1" / "host" / "sregym-static"
    directory.mkdir(parents=True, exist_ok=True)
    source = directory / f"{name}.c"
    source.write_text(source_code)
    built = subprocess.run(["gcc", "-static", "-O2", "-o", str(directory / name), str(source)],
                           capture_output=True, text=True, timeout=120)
    if built.returncode != 0:
        pytest.skip(f"no static C library to build a static program: {built.stderr[-200:]}")
    (directory / name).chmod(0o755)


def _client_pod(name: str, server_ip: str) -> str:
    return json.dumps({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": name}},
        "spec": {"nodeName": "node-1", "terminationGracePeriodSeconds": 1,
                 "volumes": [{"name": "bin", "hostPath": {"path": "/sregym-static", "type": "Directory"}}],
                 "containers": [{"name": "c", "image": "busybox", "command": ["/opt/static/connloop", server_ip, "8080"],
                                 "volumeMounts": [{"name": "bin", "mountPath": "/opt/static", "readOnly": True}]}]}})


def _wait_log(handle: Any, pod: str, want: str, timeout: float = 30.0) -> list[str]:
    deadline = time.monotonic() + timeout
    while True:
        tail = kubectl(handle, "logs", pod, "--tail=5").splitlines()
        if tail and tail[-1] == want or time.monotonic() > deadline:
            return tail
        time.sleep(0.3)


def test_connect_fault_is_a_cgroup_bpf_program_a_static_binary_meets(handle: Any) -> None:
    # issue 36: connect() of the target pod's processes fails in the kernel (cgroup/connect4 with
    # bpf_set_retval keyed on the pod's cgroup), so a statically linked client meets it, a pod
    # beside it does not, and clearing the fault detaches the programs
    mechanisms = handle.faults()["mechanisms"]["bpf-cgroup"]
    if not mechanisms["available"]:
        pytest.skip(f"cgroup BPF faults are unavailable here: {mechanisms['reason']}")
    _static_program(handle, "connloop", CONNLOOP_C)
    server = json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "conn-server"},
                         "spec": {"nodeName": "node-2", "terminationGracePeriodSeconds": 1,
                                  "containers": [{"name": "s", "image": "python",
                                                  "command": ["python3", "-m", "http.server", "8080"]}]}})
    kubectl(handle, "apply", "-f", "-", input=server)
    kubectl(handle, "wait", "--for=condition=Ready", "pod/conn-server", "--timeout=60s")
    ip = kubectl(handle, "get", "pod", "conn-server", "-o", "jsonpath={.status.podIP}").strip()
    for name in ("static-target", "static-other"):
        kubectl(handle, "apply", "-f", "-", input=_client_pod(name, ip))
    try:
        for name in ("static-target", "static-other"):
            kubectl(handle, "wait", "--for=condition=Ready", f"pod/{name}", "--timeout=60s")
            assert _wait_log(handle, name, "ok")[-1] == "ok"  # the server answers both before the fault
        record = handle.node_fault("conn", namespace="default", labels={"app": "static-target"}, calls=["connect"],
                                   errno="ECONNREFUSED", rate=1.0, port=8080)
        assert record["mechanism"] == "bpf-cgroup" and record["active"], record
        assert _wait_log(handle, "static-target", "err 111")[-1] == "err 111"
        assert kubectl(handle, "logs", "static-other", "--tail=5").split() == ["ok"] * 5
        # a process started in the pod later (kubectl exec) runs in its cgroup too
        out = kubectl(handle, "exec", "static-target", "--", "/opt/static/connloop", ip, "8080", "2")
        assert out.split() == ["err", "111", "err", "111"]
        assert handle.clear_fault("shim", "conn")
        assert _wait_log(handle, "static-target", "ok")[-1] == "ok"
        # socket() the same way (cgroup/sock_create): connloop's connect() then gets EBADF (9)
        record = handle.node_fault("sock", namespace="default", labels={"app": "static-target"}, calls=["socket"],
                                   errno="EMFILE", rate=1.0)
        assert record["mechanism"] == "bpf-cgroup" and record["active"], record
        assert _wait_log(handle, "static-target", "err 9")[-1] == "err 9"
        assert handle.clear_fault("shim", "sock")
        assert _wait_log(handle, "static-target", "ok")[-1] == "ok"
    finally:
        handle.clear_fault("shim", "conn")
        handle.clear_fault("shim", "sock")
        kubectl(handle, "delete", "pod", "conn-server", "static-target", "static-other", "--wait=false")


FSYNCLOOP_C = r"""
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
int main(int argc, char **argv) {  /* fsyncloop FILE: write and fsync FILE every 0.1 s */
    for (;;) {
        int fd = open(argv[1], O_WRONLY | O_CREAT, 0644);
        if (write(fd, "x", 1) == 1 && fsync(fd) == 0) printf("ok\n"); else printf("err %d\n", errno);
        fflush(stdout);
        close(fd);
        usleep(100000);
    }
}
"""


def test_fsync_fault_is_decided_by_the_seccomp_supervisor(handle: Any) -> None:
    # issue 36: fsync() of the target's processes fails with the kernel's own error, decided by the
    # node agent's supervisor (the container started under a dormant seccomp filter), so a static
    # binary meets it, only on the given path, and nothing in the pod names the rule
    mechanism = handle.faults()["mechanisms"]["seccomp-supervisor"]
    if not mechanism["available"]:
        pytest.skip(f"the seccomp supervisor is unavailable here: {mechanism['reason']}")
    _static_program(handle, "fsyncloop", FSYNCLOOP_C)

    def pod(name: str) -> str:
        return json.dumps({
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": name}},
            "spec": {"nodeName": "node-1", "terminationGracePeriodSeconds": 1,
                     "volumes": [{"name": "bin", "hostPath": {"path": "/sregym-static", "type": "Directory"}},
                                 {"name": "data", "emptyDir": {}}],
                     "containers": [{"name": "c", "image": "busybox",
                                     "command": ["/opt/static/fsyncloop", "/data/journal"],
                                     "volumeMounts": [{"name": "bin", "mountPath": "/opt/static", "readOnly": True},
                                                      {"name": "data", "mountPath": "/data"}]}]}})
    for name in ("fsync-target", "fsync-other"):
        kubectl(handle, "apply", "-f", "-", input=pod(name))
    try:
        for name in ("fsync-target", "fsync-other"):
            kubectl(handle, "wait", "--for=condition=Ready", f"pod/{name}", "--timeout=60s")
            assert _wait_log(handle, name, "ok")[-1] == "ok"  # dormant: fsync works
        record = handle.node_fault("fsyncfail", namespace="default", labels={"app": "fsync-target"},
                                   calls=["fsync"], errno="EIO", rate=1.0, paths=["/data"])
        assert record["mechanism"] == "seccomp-supervisor" and record["active"], record
        assert _wait_log(handle, "fsync-target", "err 5")[-1] == "err 5"
        assert kubectl(handle, "logs", "fsync-other", "--tail=5").split() == ["ok"] * 5
        markers = ["calls=fsync", "fsyncfail", "prefix=/data", "SREGYM_FAULT"]
        out = kubectl(handle, "exec", "-i", "fsync-target", "--", "python3", "-c", SEARCH, input="\n".join(markers))
        assert out.strip() == "nothing", out
        handle.node_fault("fsyncfail", namespace="default", labels={"app": "fsync-target"},
                          calls=["fsync"], errno="EIO", rate=1.0, paths=["/elsewhere"])
        assert _wait_log(handle, "fsync-target", "ok")[-1] == "ok"  # another path: untouched
        assert handle.clear_fault("shim", "fsyncfail")
    finally:
        handle.clear_fault("shim", "fsyncfail")
        kubectl(handle, "delete", "pod", "fsync-target", "fsync-other", "--wait=false")
