"""Pods are a boundary: what an agent can do from ``kubectl exec`` into a pod, or by creating pods.

Adversarial: every test tries what an evaluated agent would (read the host's secrets, the
checkout, the cluster's state and kubeconfigs; see and signal host processes; write on the host;
escape the root; create privileged pods) and asserts the safe outcome. One cluster for the module.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import PINNED_KUBECTL, REPO

pytestmark = [pytest.mark.slow, pytest.mark.needs_root,
              pytest.mark.skipif(os.geteuid() != 0, reason="pod isolation needs root (see test_isolation_units)")]

NS = "boundary"


class Cluster:
    def __init__(self, info, home: Path) -> None:
        self.info = info
        self.home = home

    def kubectl(self, *args: str, check: bool = True, input: str | None = None,
                kubeconfig: Path | None = None) -> subprocess.CompletedProcess[str]:
        kubeconfig = kubeconfig or self.info.kubeconfig
        proc = subprocess.run([str(PINNED_KUBECTL), f"--kubeconfig={kubeconfig}",
                               f"--cache-dir={self.home / 'kube-cache'}", *args],
                              capture_output=True, text=True, timeout=90, input=input,
                              env={"HOME": str(self.home), "PATH": os.environ.get("PATH", "")})
        if check:
            assert proc.returncode == 0, proc.stderr
        return proc

    def sh(self, pod: str, script: str, check: bool = False) -> subprocess.CompletedProcess[str]:
        return self.kubectl("exec", "-n", NS, pod, "--", "sh", "-c", script, check=check)

    def run_pod(self, name: str, image: str = "busybox", security: dict | None = None,
                pod_security: dict | None = None, wait: bool = True) -> None:
        container = {"name": "c", "image": image, "command": ["sleep", "3600"]}
        if security:
            container["securityContext"] = security
        spec = {"containers": [container], "terminationGracePeriodSeconds": 0}
        if pod_security:
            spec["securityContext"] = pod_security
        manifest = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS}, "spec": spec}
        self.kubectl("apply", "-f", "-", input=json.dumps(manifest))
        if wait:
            self.kubectl("wait", "-n", NS, "--for=condition=Ready", f"pod/{name}", "--timeout=60s")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    home = tmp_path_factory.mktemp("boundary")
    from sregym_cluster_embedded import cluster as clusters

    # restored however the module ends, a failed start included: later modules must not look here
    with pytest.MonkeyPatch.context() as env:
        env.setenv("SREGYM_HOME", str(home / "sregym"))
        info = clusters.up("boundary", 1)
        c = Cluster(info, home)
        try:
            c.kubectl("create", "namespace", NS)
            c.run_pod("app")
            c.run_pod("rootpod", security={"runAsUser": 0})
            yield c
        finally:
            clusters.down("boundary")


def test_status_reports_isolation(cluster: Cluster) -> None:
    from sregym_cluster_embedded import cluster as clusters

    assert clusters.status("boundary").isolation_warning is None


@pytest.mark.parametrize("pod", ["app", "rootpod"])
def test_host_secrets_are_not_readable(cluster: Cluster, pod: str) -> None:
    shadow = cluster.sh(pod, "cat /etc/shadow /etc/gshadow")
    host_hashes = [line.split(":")[1] for line in Path("/etc/shadow").read_text().splitlines()
                   if line.count(":") > 2 and line.split(":")[1].startswith("$")]
    assert "root:*:" in shadow.stdout  # a harmless, locked account file
    assert not any(h in shadow.stdout for h in host_hashes)
    assert "$" not in shadow.stdout


@pytest.mark.parametrize("pod", ["app", "rootpod"])
def test_checkout_state_and_kubeconfigs_are_invisible(cluster: Cluster, pod: str) -> None:
    state = cluster.info.state_dir
    paths = [state, cluster.info.kubeconfig, state / "pki", REPO / "tests", REPO / "sregym_core",
             REPO / "apps", Path(__file__).parent, cluster.home, Path("/root/.bash_history")]
    script = "; ".join(f"test -e '{p}' && echo 'visible {p}'" for p in paths) + "; true"
    result = cluster.sh(pod, script)
    assert result.returncode == 0, result.stderr
    assert "visible" not in result.stdout
    # nothing of the admin credentials anywhere it can read
    token = cluster.info.kubeconfig.read_text().split("token:")[-1].split()[0]
    found = cluster.sh(pod, f"grep -rls '{token[:24]}' /etc /root /tmp /run /var /home 2>/dev/null | head -3")
    assert found.returncode == 0, found.stderr  # the search ran (a failed exec would print nothing too)
    assert found.stdout.strip() == ""


def test_processes_are_the_pods_only(cluster: Cluster) -> None:
    pids = cluster.sh("app", "ls /proc | grep '^[0-9]*$'").stdout.split()
    assert pids and len(pids) < 8, pids
    cmdlines = cluster.sh("app", "cat /proc/[0-9]*/cmdline | tr '\\0' ' '").stdout
    assert "sregym_cluster_embedded" not in cmdlines and "pytest" not in cmdlines
    ps = cluster.sh("app", "ps -e -o pid,comm").stdout
    assert "python" not in ps and "pytest" not in ps


@pytest.mark.parametrize("pod", ["app", "rootpod"])
def test_cannot_signal_a_host_process(cluster: Cluster, pod: str) -> None:
    victim = subprocess.Popen(["sleep", "300"])
    try:
        result = cluster.sh(pod, f"kill -9 {victim.pid}; echo done")
        assert "done" in result.stdout
        # every process it may signal: the pod's own (the main one dies, and with it the container)
        cluster.sh(pod, "kill -9 -1")
        time.sleep(0.3)
        assert victim.poll() is None, "a pod killed a host process"
    finally:
        victim.kill()
        victim.wait()
    cluster.kubectl("get", "pods", "-n", NS)  # the cluster still answers
    cluster.kubectl("wait", "-n", NS, "--for=condition=Ready", f"pod/{pod}", "--timeout=60s")


def test_identity_and_capabilities(cluster: Cluster) -> None:
    from sregym_cluster_embedded.node.isolation import NODE_DEFAULT, RUNTIME_DEFAULT, _mask

    ids = cluster.sh("app", "id -u; id -g").stdout.split()
    assert ids == ["65534", "65534"]
    status = cluster.sh("app", "grep -E '^(CapEff|CapBnd|NoNewPrivs)' /proc/self/status").stdout
    fields = dict(line.split(":") for line in status.splitlines())
    assert int(fields["CapEff"], 16) == 0
    assert int(fields["CapBnd"], 16) & ~_mask(RUNTIME_DEFAULT) == 0
    assert fields["NoNewPrivs"].strip() == "1"
    root = cluster.sh("rootpod", "id -u; grep -E '^(CapEff|NoNewPrivs)' /proc/self/status").stdout.split()
    assert root[0] == "0"
    assert int(root[2], 16) == _mask(NODE_DEFAULT) and root[4] == "1"


def test_root_in_a_pod_cannot_write_or_mount_the_host(cluster: Cluster, tmp_path: Path) -> None:
    marker = f"sregym-boundary-{os.getpid()}"
    script = (f"touch /usr/{marker}; touch /etc/{marker}; touch /{marker}; mkdir -p /tmp/m; "
              "mount -t tmpfs x /tmp/m && echo MOUNTED; mknod /tmp/disk b 254 0 && echo MKNOD; "
              "echo 1 > /proc/sys/kernel/domainname && echo SYSCTL; echo end")
    result = cluster.sh("rootpod", script)
    assert "end" in result.stdout
    assert "MOUNTED" not in result.stdout and "MKNOD" not in result.stdout and "SYSCTL" not in result.stdout
    for place in ("/usr", "/etc", "/"):
        assert not (Path(place) / marker).exists()


def test_chroot_escape_stays_in_the_container(cluster: Cluster) -> None:
    # the classic escape: chroot into a subdirectory, climb above it, chroot there (CAP_SYS_CHROOT
    # is in the default set); with pivot_root there is nothing of the host above the container's root
    escape = ("import os\nos.makedirs('/tmp/x', exist_ok=True)\nfd = os.open('/', os.O_RDONLY)\nos.chroot('/tmp/x')\n"
              "os.fchdir(fd)\nfor _ in range(64): os.chdir('..')\nos.chroot('.')\n"
              f"print('ESCAPED' if os.path.exists('{cluster.info.state_dir}') else 'contained')\n")
    result = cluster.kubectl("exec", "-n", NS, "rootpod", "--", "/usr/bin/python3", "-c", escape, check=False)
    if result.returncode != 0 and "not found" in result.stderr:
        pytest.skip("no /usr/bin/python3 on this host")
    assert "contained" in result.stdout, result.stdout + result.stderr


def test_run_as_non_root_refuses_a_root_container(cluster: Cluster) -> None:
    cluster.run_pod("nonroot", security={"runAsUser": 0, "runAsNonRoot": True}, wait=False)
    deadline = time.monotonic() + 30
    reason = message = ""
    while time.monotonic() < deadline:
        pod = json.loads(cluster.kubectl("get", "pod", "-n", NS, "nonroot", "-o", "json").stdout)
        waiting = ((pod.get("status", {}).get("containerStatuses") or [{}])[0].get("state") or {}).get("waiting") or {}
        reason, message = waiting.get("reason", ""), waiting.get("message", "")
        if reason == "CreateContainerConfigError":
            break
        time.sleep(0.5)
    assert reason == "CreateContainerConfigError"
    assert "runAsNonRoot and image will run as root" in message


def _waiting(cluster: Cluster, name: str, container: str = "c") -> tuple[str, str, str]:
    pod = json.loads(cluster.kubectl("get", "pod", "-n", NS, name, "-o", "json").stdout)
    status = next((s for s in pod.get("status", {}).get("containerStatuses") or [] if s.get("name") == container), {})
    waiting = (status.get("state") or {}).get("waiting") or {}
    return waiting.get("reason", ""), waiting.get("message", ""), next(iter(status.get("state") or {}), "")


def test_a_subpath_through_a_symlink_to_the_host_does_not_start(cluster: Cluster) -> None:
    """Red-team round 22, finding 1 (CVE-2017-1002101's shape): an init container, root, puts symlinks to ``/`` and to
    the cluster's state directory into the pod's emptyDir; the main container mounts them by ``subPath``. It must not
    start (the kubelet's CreateContainerConfigError), while a subPath naming a real directory of the volume does, and
    nothing of the host is reachable from it."""
    state = str(cluster.info.state_dir)
    def pod(name: str, links: str, sub: str) -> dict:
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS}, "spec": {
            "terminationGracePeriodSeconds": 0, "volumes": [{"name": "e", "emptyDir": {}}],
            "initContainers": [{"name": "links", "image": "busybox", "command": ["sh", "-c", links],
                                "securityContext": {"runAsUser": 0}, "volumeMounts": [{"name": "e", "mountPath": "/e"}]}],
            "containers": [{"name": "c", "image": "busybox", "command": ["sleep", "3600"],
                            "securityContext": {"runAsUser": 0},
                            "volumeMounts": [{"name": "e", "mountPath": "/x", "subPath": sub}]}]}}

    escape = pod("subpath-escape", f"ln -s / /e/root; ln -s {state} /e/home; mkdir -p /e/inside", "root")
    home = pod("subpath-home", f"ln -s {state} /e/home", "home")
    inside = pod("subpath-inside", "mkdir -p /e/inside/deeper; echo ok > /e/inside/deeper/f; ln -s inside /e/alias",
                 "alias/deeper")
    for manifest in (escape, home, inside):
        cluster.kubectl("apply", "-f", "-", input=json.dumps(manifest))
    cluster.kubectl("wait", "-n", NS, "--for=condition=Ready", "pod/subpath-inside", "--timeout=60s")
    assert cluster.kubectl("exec", "-n", NS, "subpath-inside", "--", "cat", "/x/f").stdout.strip() == "ok"
    for name in ("subpath-escape", "subpath-home"):
        deadline = time.monotonic() + 30
        reason = message = state_name = ""
        while time.monotonic() < deadline:
            reason, message, state_name = _waiting(cluster, name)
            if reason == "CreateContainerConfigError":
                break
            time.sleep(0.5)
        assert reason == "CreateContainerConfigError" and 'failed to prepare subPath for volumeMount "e"' in message, \
            (name, reason, message, state_name)
        time.sleep(2)  # retried with back-off: still not running
        assert _waiting(cluster, name)[2] == "waiting"


def test_run_as_user_is_honoured(cluster: Cluster) -> None:
    cluster.run_pod("custom", pod_security={"runAsUser": 1234, "runAsGroup": 2345, "supplementalGroups": [3456]})
    assert cluster.sh("custom", "id -u; id -g; id -G").stdout.split() == ["1234", "2345", "2345", "3456"]


def test_stopping_a_pod_stops_everything_in_it(cluster: Cluster) -> None:
    cluster.run_pod("bg")
    cluster.sh("bg", "nohup sleep 1234 >/dev/null 2>&1 &")
    cluster.kubectl("delete", "pod", "-n", NS, "bg", "--wait=true", "--timeout=60s")
    time.sleep(0.5)
    leftovers = subprocess.run(["pgrep", "-f", "sleep 1234"], capture_output=True, text=True).stdout.split()
    assert not leftovers


# ---------------------------------------------------------------- Pod Security admission

PSA_NS = "boundary-psa"


@pytest.fixture(scope="module")
def psa_namespace(cluster: Cluster) -> str:
    cluster.kubectl("create", "namespace", PSA_NS)
    cluster.kubectl("label", "namespace", PSA_NS, "pod-security.kubernetes.io/enforce=baseline",
                    "pod-security.kubernetes.io/warn=restricted")
    return PSA_NS


def _pod(name: str, spec_extra: dict | None = None, security: dict | None = None,
         volumes: list | None = None) -> str:
    container = {"name": "c", "image": "busybox", "command": ["sleep", "3600"]}
    if security:
        container["securityContext"] = security
    spec = {"containers": [container], **(spec_extra or {})}
    if volumes:
        spec["volumes"] = volumes
        container["volumeMounts"] = [{"name": volumes[0]["name"], "mountPath": "/host"}]
    return json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": PSA_NS},
                       "spec": spec})


@pytest.mark.parametrize(("name", "manifest", "violation"), [
    ("priv", _pod("priv", security={"privileged": True}),
     'privileged (container "c" must not set securityContext.privileged=true)'),
    ("hostpid", _pod("hostpid", {"hostPID": True, "hostNetwork": True}),
     "host namespaces (hostNetwork=true, hostPID=true)"),
    ("hostpath", _pod("hostpath", volumes=[{"name": "root", "hostPath": {"path": "/"}}]),
     'hostPath volumes (volume "root")'),
    ("caps", _pod("caps", security={"capabilities": {"add": ["SYS_ADMIN"]}}),
     'non-default capabilities (container "c" must not include "SYS_ADMIN" in securityContext.capabilities.add)'),
])
def test_baseline_refuses_host_access(cluster: Cluster, psa_namespace: str, name: str, manifest: str,
                                      violation: str) -> None:
    result = cluster.kubectl("apply", "-f", "-", input=manifest, check=False)
    assert result.returncode != 0
    assert (f'Error from server (Forbidden): error when creating "STDIN": pods "{name}" is forbidden: '
            f'violates PodSecurity "baseline:latest": {violation}') in result.stderr
    assert cluster.kubectl("get", "pod", "-n", PSA_NS, name, check=False).returncode != 0


def test_compliant_pods_are_admitted_with_warnings_for_the_warn_level(cluster: Cluster, psa_namespace: str) -> None:
    result = cluster.kubectl("apply", "-f", "-", input=_pod("fine"))
    assert 'Warning: would violate PodSecurity "restricted:latest": allowPrivilegeEscalation != false' in result.stderr
    assert "runAsNonRoot != true" in result.stderr


def test_a_controller_cannot_create_what_a_user_cannot(cluster: Cluster, psa_namespace: str) -> None:
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "sneaky", "namespace": PSA_NS},
                  "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "sneaky"}},
                           "template": {"metadata": {"labels": {"app": "sneaky"}},
                                        "spec": {"hostPID": True, "containers": [
                                            {"name": "c", "image": "busybox", "command": ["sleep", "3600"]}]}}}}
    created = cluster.kubectl("apply", "-f", "-", input=json.dumps(deployment))
    # enforce applies to pods; the template only gets the warning (as in Kubernetes)
    assert 'Warning: would violate PodSecurity "restricted:latest"' in created.stderr
    deadline = time.monotonic() + 30
    messages: list[str] = []
    while time.monotonic() < deadline:
        events = json.loads(cluster.kubectl("get", "events", "-n", PSA_NS, "-o", "json").stdout)["items"]
        messages = [e["message"] for e in events if e.get("reason") == "FailedCreate"]
        if messages:
            break
        time.sleep(0.5)
    assert any('violates PodSecurity "baseline:latest": host namespaces (hostPID=true)' in m for m in messages)
    pods = json.loads(cluster.kubectl("get", "pods", "-n", PSA_NS, "-l", "app=sneaky", "-o", "json").stdout)
    assert pods["items"] == []


def test_relabelling_warns_about_existing_pods(cluster: Cluster) -> None:
    result = cluster.kubectl("label", "namespace", NS, "pod-security.kubernetes.io/enforce=restricted")
    try:
        assert f'existing pods in namespace "{NS}" violate the new PodSecurity enforce level "restricted:latest"' \
            in result.stderr
    finally:
        cluster.kubectl("label", "namespace", NS, "pod-security.kubernetes.io/enforce-")


# ---------------------------------------------------------------- reachability of hidden namespaces

HIDDEN_NS = "boundary-hidden"
PROBE = """
import os, socket, sys
for target in sys.argv[1:]:
    host, port = target.rsplit(":", 1)
    s = socket.socket()
    s.settimeout(3)
    try:
        s.connect((host, int(port)))
        print(target, "open")
    except OSError as exc:
        print(target, "refused", exc.errno)
"""


def _server(cluster: Cluster, namespace: str, name: str) -> str:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace,
                                                           "labels": {"app": name}},
           "spec": {"terminationGracePeriodSeconds": 0, "containers": [
               {"name": "c", "image": "python:3.11", "command": ["python", "-m", "http.server", "8080"],
                "readinessProbe": {"tcpSocket": {"port": 8080}, "periodSeconds": 1}}]}}
    cluster.kubectl("apply", "-f", "-", input=json.dumps(pod))
    cluster.kubectl("wait", "-n", namespace, "--for=condition=Ready", f"pod/{name}", "--timeout=60s")
    return json.loads(cluster.kubectl("get", "pod", "-n", namespace, name, "-o", "json").stdout)["status"]["podIP"]


@pytest.fixture(scope="module")
def hidden(cluster: Cluster) -> dict:
    cluster.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": HIDDEN_NS, "labels": {"sregym.io/hidden": "true"}}}))
    secret_ip = _server(cluster, HIDDEN_NS, "secret")
    cluster.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "secret", "namespace": HIDDEN_NS, "annotations": {"sregym.io/app-reachable-ports": "81"}},
        "spec": {"selector": {"app": "secret"}, "ports": [{"name": "admin", "port": 80, "targetPort": 8080},
                                                          {"name": "ingest", "port": 81, "targetPort": 8080}]}}))
    service_ip = json.loads(cluster.kubectl("get", "svc", "-n", HIDDEN_NS, "secret", "-o", "json").stdout)["spec"]["clusterIP"]
    web_ip = _server(cluster, NS, "web")
    time.sleep(1.0)  # the reachability table follows the pods' IPs
    return {"secret": secret_ip, "service": service_ip, "web": web_ip}


def _probe(cluster: Cluster, namespace: str, pod: str, *targets: str) -> dict[str, str]:
    # without the bind shim, as a static binary would connect; the interpreter is in every image here
    result = cluster.kubectl("exec", "-n", namespace, pod, "--", "env", "-u", "LD_PRELOAD", sys.executable, "-c",
                             PROBE, *targets, check=False)
    return {line.split()[0]: line.split()[1] for line in result.stdout.splitlines() if line.strip()}


def test_app_pods_cannot_call_the_hidden_namespaces(cluster: Cluster, hidden: dict) -> None:
    api_port = cluster.info.api_port
    seen = _probe(cluster, NS, "web", f"{hidden['secret']}:8080", f"{hidden['service']}:80",
                  f"{hidden['service']}:81", f"127.0.0.1:{api_port}", f"{hidden['web']}:8080", "10.1.2.3:80")
    assert seen[f"{hidden['secret']}:8080"] == "refused"  # the hidden pod, directly
    assert seen[f"{hidden['service']}:80"] == "refused"  # its Service
    assert seen[f"{hidden['service']}:81"] == "open"  # the port it declares reachable (trace ingestion)
    assert seen[f"127.0.0.1:{api_port}"] == "refused"  # the host's own listeners (API server, conductor)
    assert seen["10.1.2.3:80"] == "refused"  # and nothing outside the machine
    assert seen[f"{hidden['web']}:8080"] == "open"  # its own pod IP: the app still works


def test_hidden_pods_still_call_the_app(cluster: Cluster, hidden: dict) -> None:
    seen = _probe(cluster, HIDDEN_NS, "secret", f"{hidden['web']}:8080", f"{hidden['secret']}:8080")
    assert seen == {f"{hidden['web']}:8080": "open", f"{hidden['secret']}:8080": "open"}


def test_exec_shells_are_held_to_the_same_rules(cluster: Cluster, hidden: dict) -> None:
    # a shell the agent starts in an app pod, not only the pod's own processes
    seen = _probe(cluster, NS, "app", f"{hidden['secret']}:8080", f"{hidden['web']}:8080")
    assert seen == {f"{hidden['secret']}:8080": "refused", f"{hidden['web']}:8080": "open"}


# ---------------------------------------------------------------- apps isolated from each other

def _app_namespace(cluster: Cluster, name: str, app: str) -> None:
    """A namespace labelled with its app, as the conductor labels every app's at deploy."""
    from sregym_core.clusters import APP_GROUP_LABEL

    cluster.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": {APP_GROUP_LABEL: app}}}))


def _db_service(cluster: Cluster, namespace: str) -> str:
    cluster.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "db", "namespace": namespace},
        "spec": {"selector": {"app": "db"}, "ports": [{"port": 5432, "targetPort": 8080}]}}))
    return json.loads(cluster.kubectl("get", "svc", "-n", namespace, "db", "-o", "json").stdout)["spec"]["clusterIP"]


def _outcomes(cluster: Cluster, namespace: str, pod: str, expected: dict[str, str]) -> dict[str, str]:
    """Each target's outcome ("open", "refused <errno>") from a process in the pod (no bind shim),
    asked again until it is the expected one (the table follows the pods' IPs) or 30 s have passed."""
    deadline = time.monotonic() + 30
    while True:
        result = cluster.kubectl("exec", "-n", namespace, pod, "--", "env", "-u", "LD_PRELOAD", sys.executable,
                                 "-c", PROBE, *expected, check=False)
        seen = {line.split()[0]: " ".join(line.split()[1:]) for line in result.stdout.splitlines() if line.strip()}
        if seen == expected or time.monotonic() > deadline:
            return seen
        time.sleep(0.5)


def test_an_apps_pod_cannot_reach_another_apps_pods_or_services(cluster: Cluster) -> None:
    """Red-team round 5, attack 1: from a pod of one app, another app's database (by pod IP, Service
    IP and Service name) is refused by the kernel (EPERM), while the app's own database answers on
    the same ways; a pod of no app's namespace (as the ingress controller's) still reaches both."""
    shop, hotel = "boundary-shop", "boundary-hotel"
    _app_namespace(cluster, shop, "shop")
    _app_namespace(cluster, hotel, "hotel")
    hotel_db, shop_db = _server(cluster, hotel, "db"), _server(cluster, shop, "db")
    hotel_svc, shop_svc = _db_service(cluster, hotel), _db_service(cluster, shop)
    _server(cluster, shop, "client")  # the agent's pod in the app it was handed
    refused, open_ = f"refused {errno.EPERM}", "open"
    from_shop = {f"{hotel_db}:8080": refused, f"{hotel_svc}:5432": refused, f"db.{hotel}:5432": refused,
                 f"{shop_db}:8080": open_, f"{shop_svc}:5432": open_, "db:5432": open_}
    assert _outcomes(cluster, shop, "client", from_shop) == from_shop
    from_no_app = {f"{hotel_db}:8080": open_, f"{hotel_svc}:5432": open_, f"{shop_svc}:5432": open_}
    assert _outcomes(cluster, NS, "app", from_no_app) == from_no_app
