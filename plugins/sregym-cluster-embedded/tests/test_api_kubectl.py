"""Conformance: the real kubectl (pinned 1.37 and the machine's own) against the embedded API server.

Expected texts are what kubectl prints against a real cluster for the same objects.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from typing import Any

import pytest
import yaml

from conftest import NODE, Kubectl, ThreadedApiServer, ensure_node, running_pod


def header(output: str) -> list[str]:
    return output.splitlines()[0].split()


# ------------------------------------------------------------------------------------------------
def test_version_and_discovery(kubectl: Kubectl) -> None:
    out = json.loads(kubectl("version", "-o", "json").stdout)
    assert out["serverVersion"]["gitVersion"].startswith("v1.")
    res = kubectl("api-resources").stdout
    assert re.search(r"^deployments\s+deploy\s+apps/v1\s+true\s+Deployment$", res, re.M)
    assert re.search(r"^pods\s+po\s+v1\s+true\s+Pod$", res, re.M)
    assert re.search(r"^nodes\s+no\s+v1\s+false\s+Node$", res, re.M)
    assert re.search(r"^customresourcedefinitions\s+crd,crds\s+apiextensions.k8s.io/v1\s+false", res, re.M)
    assert "pods/log" not in res  # subresources are not listed
    apps = kubectl("api-resources", "--api-group=apps", "-o", "name").stdout.split()
    assert "deployments.apps" in apps and "statefulsets.apps" in apps
    assert "v1" in kubectl("api-versions").stdout.split()
    cs = kubectl("get", "cs")
    assert header(cs.stdout) == ["NAME", "STATUS", "MESSAGE", "ERROR"]
    assert re.search(r"^etcd-0\s+Healthy\s+ok", cs.stdout, re.M)
    assert "Warning: v1 ComponentStatus is deprecated in v1.19+" in cs.stderr
    assert kubectl("get", "--raw", "/readyz?verbose").stdout.endswith("readyz check passed\n")


def test_create_generators(kubectl: Kubectl, namespace: str) -> None:
    ns = ["-n", namespace]
    assert kubectl("create", "configmap", "c1", "--from-literal=a=b", *ns).stdout.strip() == "configmap/c1 created"
    assert kubectl("create", "secret", "generic", "s1", "--from-literal=pw=x", *ns).stdout.strip() == \
        "secret/s1 created"
    assert kubectl("create", "deployment", "web", "--image=nginx:1.25", "--replicas=2", "--port=80",
                   *ns).stdout.strip() == "deployment.apps/web created"
    assert kubectl("create", "job", "j1", "--image=busybox", *ns, "--", "echo", "hi").stdout.strip() == \
        "job.batch/j1 created"
    assert kubectl("create", "cronjob", "cj", "--image=busybox", "--schedule=*/5 * * * *",
                   *ns).stdout.strip() == "cronjob.batch/cj created"
    assert kubectl("create", "service", "clusterip", "svc1", "--tcp=80:8080", *ns).stdout.strip() == \
        "service/svc1 created"
    assert kubectl("create", "serviceaccount", "robot", *ns).stdout.strip() == "serviceaccount/robot created"
    assert kubectl("create", "role", "reader", "--verb=get,list", "--resource=pods", *ns).stdout.strip() == \
        "role.rbac.authorization.k8s.io/reader created"
    assert kubectl("create", "rolebinding", "rb", "--role=reader", f"--serviceaccount={namespace}:robot",
                   *ns).stdout.strip() == "rolebinding.rbac.authorization.k8s.io/rb created"
    assert kubectl("create", "pdb", "pdb1", "--selector=app=web", "--min-available=1", *ns).stdout.strip() == \
        "poddisruptionbudget.policy/pdb1 created"
    assert kubectl("create", "quota", "q1", "--hard=pods=10", *ns).stdout.strip() == "resourcequota/q1 created"
    assert kubectl("create", "priorityclass", f"pc-{namespace}", "--value=100").stdout.strip() == \
        f"priorityclass.scheduling.k8s.io/pc-{namespace} created"
    kubectl("delete", "priorityclass", f"pc-{namespace}")
    # what the generators sent is what is stored
    dep = json.loads(kubectl("get", "deploy", "web", "-o", "json", *ns).stdout)
    c = dep["spec"]["template"]["spec"]["containers"][0]
    assert dep["spec"]["replicas"] == 2 and c["image"] == "nginx:1.25" and c["ports"][0]["containerPort"] == 80
    secret = json.loads(kubectl("get", "secret", "s1", "-o", "json", *ns).stdout)
    assert secret["data"] == {"pw": "eA=="} and secret["type"] == "Opaque"
    job = json.loads(kubectl("get", "job", "j1", "-o", "json", *ns).stdout)
    assert job["spec"]["template"]["spec"]["containers"][0]["command"] == ["echo", "hi"]
    svc = json.loads(kubectl("get", "svc", "svc1", "-o", "json", *ns).stdout)
    assert svc["spec"]["clusterIP"].startswith("127.") and svc["spec"]["ports"][0]["targetPort"] == 8080
    # an existing name gives the real AlreadyExists message
    err = kubectl("create", "configmap", "c1", *ns, check=False)
    assert err.returncode == 1
    assert err.stderr.strip() == 'error: failed to create configmap: configmaps "c1" already exists'
    dup = kubectl("create", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "ConfigMap",
                                                        "metadata": {"name": "c1", "namespace": namespace}}),
                  check=False)
    assert 'Error from server (AlreadyExists): error when creating "STDIN": configmaps "c1" already exists' in dup.stderr
    token = kubectl("create", "token", "robot", *ns).stdout.strip()
    assert token.count(".") == 2


def test_create_namespace_and_delete_wait(kubectl: Kubectl, api_server: ThreadedApiServer) -> None:
    name = f"ns-{int(time.time() * 1000) % 100000}"
    assert kubectl("create", "namespace", name).stdout.strip() == f"namespace/{name} created"
    out = kubectl("get", "ns", name).stdout
    assert header(out) == ["NAME", "STATUS", "AGE"] and re.search(rf"^{name}\s+Active\s+\d+s$", out, re.M)
    kubectl("create", "configmap", "x", "-n", name)
    deleted = kubectl("delete", "configmap", "x", "-n", name, "--wait=true", timeout=30).stdout
    assert re.match(r'configmap "x" deleted', deleted)
    api_server.call(lambda: api_server.core.store.remove("namespaces", None, name))
    audit = [json.loads(line) for line in (api_server.state_dir / "audit.jsonl").read_text().splitlines()]
    mine = [e for e in audit if e["path"] == f"/api/v1/namespaces/{name}/configmaps/x"]
    assert mine and mine[-1]["method"] == "DELETE" and mine[-1]["user"] == "kubernetes-admin"
    assert mine[-1]["code"] == 200


def test_get_output_formats(kubectl: Kubectl, namespace: str, api_server: ThreadedApiServer) -> None:
    ns = ["-n", namespace]
    kubectl("create", "deployment", "web", "--image=nginx:1.25", *ns)
    kubectl("create", "deployment", "api", "--image=busybox", *ns)
    kubectl("label", "deploy", "api", "tier=backend", *ns)
    wide = kubectl("get", "deploy", "-o", "wide", *ns).stdout
    assert header(wide) == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE", "CONTAINERS", "IMAGES", "SELECTOR"]
    assert re.search(r"^web\s+0/1\s+0\s+0\s+\d+s\s+nginx\s+nginx:1.25\s+app=web$", wide, re.M)
    plain = kubectl("get", "deploy", *ns).stdout
    assert header(plain) == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]
    as_yaml = yaml.safe_load(kubectl("get", "deploy", "web", "-o", "yaml", *ns).stdout)
    assert as_yaml["kind"] == "Deployment" and as_yaml["metadata"]["namespace"] == namespace
    as_json = json.loads(kubectl("get", "deploy", "-o", "json", *ns).stdout)
    assert as_json["kind"] == "List" and len(as_json["items"]) == 2
    assert kubectl("get", "deploy", "-o", "jsonpath={.items[*].metadata.name}", *ns).stdout == "api web"
    cc = kubectl("get", "deploy", "-o", "custom-columns=N:.metadata.name,IMG:.spec.template.spec.containers[0].image",
                 *ns).stdout.splitlines()
    assert cc[0].split() == ["N", "IMG"] and cc[1].split() == ["api", "busybox"]
    assert kubectl("get", "deploy", "-o", "name", *ns).stdout.split() == ["deployment.apps/api",
                                                                             "deployment.apps/web"]
    assert kubectl("get", "deploy", "-l", "tier=backend", "-o", "name", *ns).stdout.split() == \
        ["deployment.apps/api"]
    labels = kubectl("get", "deploy", "api", "--show-labels", *ns).stdout
    assert header(labels)[-1] == "LABELS" and "app=api,tier=backend" in labels
    everywhere = kubectl("get", "deploy", "-A").stdout
    assert header(everywhere)[0] == "NAMESPACE" and re.search(rf"^{namespace}\s+web\s", everywhere, re.M)
    kubectl("create", "configmap", "zz", "--from-literal=a=1", *ns)
    kubectl("create", "configmap", "aa", "--from-literal=a=1", "--from-literal=b=2", *ns)
    by_name = kubectl("get", "cm", "--sort-by=.metadata.name", "-o", "name", *ns).stdout.split()
    assert by_name.index("configmap/aa") < by_name.index("configmap/zz")
    sorted_rows = kubectl("get", "cm", "--sort-by=.metadata.creationTimestamp", *ns).stdout
    assert header(sorted_rows) == ["NAME", "DATA", "AGE"]
    missing = kubectl("get", "deploy", "nope", *ns, check=False)
    assert missing.returncode == 1
    assert 'Error from server (NotFound): deployments.apps "nope" not found' in missing.stderr
    assert kubectl("get", "pods", *ns).stderr.strip() == f"No resources found in {namespace} namespace."


def test_get_pods_and_all(kubectl: Kubectl, namespace: str, api_server: ThreadedApiServer) -> None:
    running_pod(api_server, namespace, "solo", labels={"app": "solo"})
    out = kubectl("get", "pods", "-n", namespace).stdout
    assert header(out) == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert re.search(r"^solo\s+1/1\s+Running\s+0\s+\S+$", out, re.M)
    wide = kubectl("get", "pods", "-o", "wide", "-n", namespace).stdout
    assert header(wide) == ["NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE", "NOMINATED", "NODE",
                            "READINESS", "GATES"]
    assert re.search(rf"^solo\s+1/1\s+Running\s+0\s+\S+\s+127.40.1.9\s+{NODE}\s+<none>\s+<none>$", wide, re.M)
    by_field = kubectl("get", "pods", "-A", "--field-selector", f"spec.nodeName={NODE},status.phase=Running").stdout
    assert "solo" in by_field
    kubectl("create", "deployment", "web", "--image=nginx", "-n", namespace)
    everything = kubectl("get", "all", "-n", namespace).stdout
    assert "pod/solo" in everything and "deployment.apps/web" in everything


@pytest.mark.slow
def test_get_watch(kubectl: Kubectl, namespace: str) -> None:
    proc = subprocess.Popen(
        [str(kubectl.binary), f"--cache-dir={kubectl.cache}", "get", "cm", "-w", "-n", namespace,
         "--output-watch-events"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={"HOME": str(kubectl.home), "KUBECONFIG": str(kubectl.kubeconfig), "PATH": "/usr/bin:/bin"})
    try:
        time.sleep(1.5)
        kubectl("create", "configmap", "watched", "--from-literal=a=b", "-n", namespace)
        kubectl("delete", "configmap", "watched", "-n", namespace)
        time.sleep(1.0)
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=10)
    lines = out.splitlines()
    assert lines[0].split() == ["EVENT", "NAME", "DATA", "AGE"]
    assert any(re.match(r"ADDED\s+watched\s+1\s+", line) for line in lines)
    assert any(re.match(r"DELETED\s+watched\s+1\s+", line) for line in lines)


def test_describe(kubectl: Kubectl, namespace: str, api_server: ThreadedApiServer) -> None:
    ns = ["-n", namespace]
    running_pod(api_server, namespace, "solo", labels={"app": "solo"})
    pod = kubectl("describe", "pod", "solo", *ns).stdout
    assert re.search(r"^Name:\s+solo$", pod, re.M) and re.search(rf"^Node:\s+{NODE}/127.40.1.1$", pod, re.M)
    assert re.search(r"^Status:\s+Running$", pod, re.M) and "Containers:\n  main:" in pod
    kubectl("create", "deployment", "web", "--image=nginx:1.25", *ns)
    dep = kubectl("describe", "deployment", "web", *ns).stdout
    assert re.search(r"^StrategyType:\s+RollingUpdate$", dep, re.M)
    assert re.search(r"^RollingUpdateStrategy:\s+25% max unavailable, 25% max surge$", dep, re.M)
    assert "Image:         nginx:1.25" in dep
    node = kubectl("describe", "node", NODE).stdout
    assert re.search(rf"^Name:\s+{NODE}$", node, re.M) and "Allocatable:" in node and "Non-terminated Pods:" in node
    kubectl("create", "service", "clusterip", "web", "--tcp=80:8080", *ns)
    svc = kubectl("describe", "service", "web", *ns).stdout
    assert re.search(r"^Type:\s+ClusterIP$", svc, re.M) and re.search(r"^Port:\s+80-8080\s+80/TCP$", svc, re.M)
    assert re.search(r"^TargetPort:\s+8080/TCP$", svc, re.M)


def test_apply_client_and_server_side(kubectl: Kubectl, namespace: str, tmp_path: Any) -> None:
    manifest = tmp_path / "cm.yaml"
    doc = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg", "namespace": namespace},
           "data": {"a": "1", "b": "2"}}
    manifest.write_text(yaml.safe_dump(doc))
    assert kubectl("apply", "-f", str(manifest)).stdout.strip() == "configmap/cfg created"
    assert kubectl("apply", "-f", str(manifest)).stdout.strip() == "configmap/cfg unchanged"
    doc["data"] = {"a": "10"}
    manifest.write_text(yaml.safe_dump(doc))
    assert kubectl("apply", "-f", str(manifest)).stdout.strip() == "configmap/cfg configured"
    stored = json.loads(kubectl("get", "cm", "cfg", "-n", namespace, "-o", "json").stdout)
    assert stored["data"] == {"a": "10"}  # the 3-way merge removed b
    dep = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "ssa", "namespace": namespace},
           "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "ssa"}},
                    "template": {"metadata": {"labels": {"app": "ssa"}},
                                 "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]}}}}
    manifest.write_text(yaml.safe_dump(dep))
    assert kubectl("apply", "--server-side", "-f", str(manifest)).stdout.strip() == \
        "deployment.apps/ssa serverside-applied"
    dep["spec"]["replicas"] = 3
    manifest.write_text(yaml.safe_dump(dep))
    kubectl("apply", "--server-side", "-f", str(manifest))
    got = json.loads(kubectl("get", "deploy", "ssa", "-n", namespace, "-o", "json").stdout)
    assert got["spec"]["replicas"] == 3 and got["metadata"]["generation"] == 2
    # diff: nothing to show for the applied state, a diff (exit 1) for a change
    assert kubectl("diff", "-f", str(manifest), check=False).returncode == 0
    dep["spec"]["replicas"] = 5
    manifest.write_text(yaml.safe_dump(dep))
    changed = kubectl("diff", "-f", str(manifest), check=False)
    assert changed.returncode == 1 and "-  replicas: 3" in changed.stdout and "+  replicas: 5" in changed.stdout
    assert json.loads(kubectl("get", "deploy", "ssa", "-n", namespace, "-o", "json").stdout)["spec"]["replicas"] == 3


def test_patch_label_annotate_set_scale_edit(kubectl: Kubectl, namespace: str) -> None:
    ns = ["-n", namespace]
    kubectl("create", "deployment", "web", "--image=nginx:1.25", *ns)
    assert kubectl("patch", "deploy", "web", "-p", '{"spec":{"replicas":2}}', *ns).stdout.strip() == \
        "deployment.apps/web patched"
    kubectl("patch", "deploy", "web", "--type=merge", "-p", '{"metadata":{"annotations":{"m":"1"}}}', *ns)
    kubectl("patch", "deploy", "web", "--type=json", "-p", '[{"op":"replace","path":"/spec/replicas","value":3}]', *ns)
    bad = kubectl("patch", "deploy", "web", "--type=json", "-p", '[{"op":"test","path":"/spec/replicas","value":9}]',
                  *ns, check=False)
    assert bad.returncode == 1 and "the server rejected our request due to an error in our request" in bad.stderr
    assert kubectl("label", "deploy", "web", "team=sre", *ns).stdout.strip() == "deployment.apps/web labeled"
    assert kubectl("annotate", "deploy", "web", "owner=me", *ns).stdout.strip() == "deployment.apps/web annotated"
    assert kubectl("set", "image", "deploy/web", "nginx=nginx:1.26", *ns).stdout.strip() == \
        "deployment.apps/web image updated"
    assert kubectl("set", "env", "deploy/web", "A=1", "B=2", *ns).stdout.strip() == "deployment.apps/web env updated"
    kubectl("set", "env", "deploy/web", "A-", *ns)
    assert kubectl("set", "resources", "deploy/web", "--limits=cpu=200m,memory=128Mi", *ns).stdout.strip() == \
        "deployment.apps/web resource requirements updated"
    assert kubectl("scale", "deploy", "web", "--replicas=4", *ns).stdout.strip() == "deployment.apps/web scaled"
    dep = json.loads(kubectl("get", "deploy", "web", "-o", "json", *ns).stdout)
    c = dep["spec"]["template"]["spec"]["containers"][0]
    assert dep["spec"]["replicas"] == 4 and c["image"] == "nginx:1.26"
    assert c["env"] == [{"name": "B", "value": "2"}]
    assert c["resources"]["limits"] == {"cpu": "200m", "memory": "128Mi"}
    assert dep["metadata"]["labels"]["team"] == "sre" and dep["metadata"]["annotations"]["owner"] == "me"
    assert dep["metadata"]["annotations"]["m"] == "1"
    edited = kubectl("edit", "deploy", "web", *ns, env={"EDITOR": "sed -i s/replicas:\\ 4/replicas:\\ 6/"})
    assert edited.stdout.strip() == "deployment.apps/web edited"
    assert kubectl("get", "deploy", "web", "-o", "jsonpath={.spec.replicas}", *ns).stdout == "6"
    unchanged = kubectl("edit", "deploy", "web", *ns, env={"EDITOR": "true"})
    assert "Edit cancelled, no changes made." in unchanged.stdout + unchanged.stderr


def test_finalizer_holds_deletion(kubectl: Kubectl, namespace: str) -> None:
    """metadata.finalizers keeps a deleted object (Terminating) until its last finalizer is removed;
    its name stays taken, and no finalizer may be added meanwhile (as a real API server answers)."""
    ns = ["-n", namespace]
    kubectl("apply", "-f", "-", *ns, input=json.dumps({
        "apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "1"},
        "metadata": {"name": "held", "finalizers": ["example.com/cleanup"]}}))
    assert kubectl("delete", "configmap", "held", "--wait=false", *ns).stdout.startswith('configmap "held" deleted')
    obj = json.loads(kubectl("get", "configmap", "held", "-o", "json", *ns).stdout)
    assert obj["metadata"]["deletionTimestamp"] and obj["metadata"]["finalizers"] == ["example.com/cleanup"]
    again = kubectl("create", "configmap", "held", "--from-literal=a=2", *ns, check=False)
    assert again.returncode == 1
    assert 'object is being deleted: configmaps "held" already exists' in again.stderr
    added = kubectl("patch", "configmap", "held", "--type=json", "-p",
                    '[{"op":"add","path":"/metadata/finalizers/-","value":"example.com/more"}]', *ns, check=False)
    assert added.returncode == 1 and "no new finalizers can be added if the object is being deleted" in added.stderr
    kubectl("patch", "configmap", "held", "--type=merge", "-p", '{"metadata":{"finalizers":null}}', *ns)
    gone = kubectl("get", "configmap", "held", *ns, check=False)
    assert gone.returncode == 1 and 'configmaps "held" not found' in gone.stderr
    kubectl("create", "configmap", "held", "--from-literal=a=2", *ns)


def test_auth_can_i_and_whoami(kubectl: Kubectl, api_server: ThreadedApiServer, namespace: str) -> None:
    assert kubectl("auth", "can-i", "delete", "pods", "-A").stdout.strip() == "yes"
    who = kubectl("auth", "whoami").stdout
    assert re.search(r"Username\s+kubernetes-admin", who) and "system:masters" in who
    agent = kubectl.as_agent(api_server.agent_kubeconfig)
    denied = agent("auth", "can-i", "list", "pods", "-n", namespace, check=False)
    assert denied.returncode == 1 and denied.stdout.strip() == "no"
    assert agent("auth", "can-i", "list", "nodes").stdout.strip() == "yes"
    forbidden = agent("get", "pods", "-n", namespace, check=False)
    assert forbidden.returncode == 1
    assert (f'Error from server (Forbidden): pods is forbidden: User "sregym-agent" cannot list resource "pods" '
            f'in API group "" in the namespace "{namespace}"') in forbidden.stderr
    cluster_wide = agent("get", "pods", "-A", check=False)
    assert 'cannot list resource "pods" in API group "" at the cluster scope' in cluster_wide.stderr
    # grant the agent its namespace: now it can work there, and still not elsewhere
    kubectl("create", "rolebinding", "agent", "--clusterrole=sregym:agent", "--group=sregym:agents", "-n", namespace)
    assert agent("auth", "can-i", "list", "pods", "-n", namespace).stdout.strip() == "yes"
    assert agent("auth", "can-i", "get", "pods", "--subresource=log", "-n", namespace).stdout.strip() == "yes"
    assert agent("auth", "can-i", "list", "pods", "-n", "kube-system", check=False).stdout.strip() == "no"
    assert agent("auth", "can-i", "create", "clusterroles", check=False).stdout.strip() == "no"
    agent("create", "configmap", "mine", "-n", namespace)
    listing = agent("auth", "can-i", "--list", "-n", namespace).stdout
    assert header(listing) == ["Resources", "Non-Resource", "URLs", "Resource", "Names", "Verbs"]
    assert re.search(r"^selfsubjectaccessreviews.authorization.k8s.io\s+\[\]\s+\[\]\s+\[create\]", listing, re.M)
    assert re.search(r"^configmaps\s+\[\]\s+\[\]\s+\[get list watch create delete", listing, re.M)
    assert not re.search(r"^clusterroles", listing, re.M)


def test_events(kubectl: Kubectl, namespace: str, api_server: ThreadedApiServer) -> None:
    from sregym_cluster_embedded.client import LocalClient

    running_pod(api_server, namespace, "solo")
    client = LocalClient(api_server.core)
    pod = api_server.call(lambda: api_server.core.get(api_server.core.registry.by_key("pods"), namespace, "solo"))
    api_server.run(client.create_event(pod, "Pulled", 'Container image "busybox" already present on machine',
                                       component="kubelet"))
    api_server.run(client.create_event(pod, "BackOff", "Back-off restarting failed container main", type="Warning",
                                       component="kubelet"))
    out = kubectl("get", "events", "-n", namespace).stdout
    assert header(out) == ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    assert re.search(r"Warning\s+BackOff\s+pod/solo\s+Back-off restarting failed container main", out)
    ev = kubectl("events", "-n", namespace, "--types=Warning").stdout
    assert "BackOff" in ev and "Pulled" not in ev
    described = kubectl("describe", "pod", "solo", "-n", namespace).stdout
    assert re.search(r"Warning\s+BackOff\s+\S+\s+kubelet\s+Back-off restarting failed container main", described)


def test_logs(kubectl: Kubectl, namespace: str, api_server: ThreadedApiServer) -> None:
    ns = ["-n", namespace]
    running_pod(api_server, namespace, "solo")
    assert kubectl("logs", "solo", *ns).stdout.splitlines() == [f"log line {i}" for i in range(1, 6)]
    assert kubectl("logs", "solo", "--tail=2", *ns).stdout.splitlines() == ["log line 4", "log line 5"]
    stamped = kubectl("logs", "solo", "--tail=1", "--timestamps", *ns).stdout
    assert re.match(r"^2026-01-01T00:00:00\.0+Z log line 5$", stamped.strip())
    prev = kubectl("logs", "solo", "--previous", *ns, check=False)
    assert prev.returncode == 1 and 'previous terminated container "main" in pod "solo" not found' in prev.stderr
    running_pod(api_server, namespace, "duo", containers=("a", "b"))
    defaulted = kubectl("logs", "duo", "--tail=1", *ns)  # kubectl picks the first container itself
    assert 'Defaulted container "a" out of: a, b' in defaulted.stderr
    raw = kubectl("get", "--raw", f"/api/v1/namespaces/{namespace}/pods/duo/log", check=False)
    assert raw.returncode == 1
    assert "a container name must be specified for pod duo, choose one of: [a b]" in raw.stderr
    assert kubectl("logs", "duo", "-c", "b", "--tail=1", *ns).stdout.strip() == "log line 5"
    kubectl("run", "pending", "--image=busybox", *ns)
    waiting = kubectl("logs", "pending", *ns, check=False)
    assert waiting.returncode == 1
    assert 'container "pending" in pod "pending" is waiting to start: ContainerCreating' in waiting.stderr


def test_exec(kubectl: Kubectl, namespace: str, api_server: ThreadedApiServer) -> None:
    ns = ["-n", namespace]
    running_pod(api_server, namespace, "solo")
    assert kubectl("exec", "solo", *ns, "--", "echo", "hello").stdout == "hello\n"
    failed = kubectl("exec", "solo", *ns, "--", "sh", "-c", "echo oops >&2; exit 3", check=False)
    assert failed.returncode == 3 and "oops" in failed.stderr
    assert "command terminated with exit code 3" in failed.stderr
    piped = kubectl("exec", "-i", "solo", *ns, "--", "wc", "-l", input="a\nb\nc\n")
    assert piped.stdout.strip() == "3"


def test_top(kubectl: Kubectl, namespace: str, api_server: ThreadedApiServer) -> None:
    running_pod(api_server, namespace, "solo")
    out = kubectl("top", "pods", "-n", namespace).stdout
    assert header(out) == ["NAME", "CPU(cores)", "MEMORY(bytes)"]
    assert re.search(r"^solo\s+5m\s+20Mi\s*$", out, re.M)
    nodes = kubectl("top", "nodes").stdout
    assert re.search(rf"^{NODE}\s+250m\s+\d+%\s+512Mi\s+\d+%", nodes, re.M)


def test_cordon_taint_drain(kubectl: Kubectl, namespace: str, api_server: ThreadedApiServer) -> None:
    node = f"drain-{namespace[-12:]}".strip("-")
    ensure_node(api_server, node)
    core = api_server.core

    def bind(name: str) -> None:
        pods = core.registry.by_key("pods")
        obj = json.loads(json.dumps(core.get(pods, namespace, name)))
        obj["spec"]["nodeName"] = node
        core.update(pods, namespace, name, obj)

    assert kubectl("cordon", node).stdout.strip() == f"node/{node} cordoned"
    assert re.search(rf"^{node}\s+Ready,SchedulingDisabled", kubectl("get", "node", node).stdout, re.M)
    assert kubectl("uncordon", node).stdout.strip() == f"node/{node} uncordoned"
    assert kubectl("taint", "nodes", node, "dedicated=db:NoSchedule").stdout.strip() == f"node/{node} tainted"
    taints = json.loads(kubectl("get", "node", node, "-o", "jsonpath={.spec.taints}").stdout)
    assert taints == [{"key": "dedicated", "value": "db", "effect": "NoSchedule"}]
    assert kubectl("taint", "nodes", node, "dedicated-").stdout.strip() == f"node/{node} untainted"
    for name in ("d1", "d2"):
        kubectl("run", name, "--image=busybox", "-n", namespace, "--overrides",
                json.dumps({"spec": {"terminationGracePeriodSeconds": 0}}))
        api_server.call(lambda name=name: bind(name))
    drained = kubectl("drain", node, "--force", "--ignore-daemonsets", "--timeout=20s", timeout=40)
    text = drained.stdout + drained.stderr
    assert f"node/{node} cordoned" in text and f"node/{node} drained" in text
    assert "evicting pod" in text
    assert kubectl("get", "pods", "-n", namespace, "-o", "name").stdout.strip() == ""


def test_eviction_respects_pdb(kubectl: Kubectl, namespace: str, api_server: ThreadedApiServer,
                               k8s_client: Any) -> None:
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    running_pod(api_server, namespace, "guarded", labels={"app": "db"})
    kubectl("create", "pdb", "db", "--selector=app=db", "--min-available=1", "-n", namespace)
    core_v1 = client.CoreV1Api(k8s_client)
    body = client.V1Eviction(metadata=client.V1ObjectMeta(name="guarded", namespace=namespace))
    with pytest.raises(ApiException) as err:
        core_v1.create_namespaced_pod_eviction("guarded", namespace, body)
    assert err.value.status == 429
    status = json.loads(err.value.body)
    assert status["message"] == "Cannot evict pod as it would violate the pod's disruption budget."
    assert status["details"]["causes"][0]["message"] == "The disruption budget db needs 1 healthy pods and has 1 currently"


@pytest.mark.slow
def test_wait_and_rollout_status(kubectl: Kubectl, namespace: str, api_server: ThreadedApiServer) -> None:
    ns = ["-n", namespace]
    running_pod(api_server, namespace, "ready")
    out = kubectl("wait", "--for=condition=Ready", "pod/ready", "--timeout=10s", *ns, timeout=30).stdout
    assert out.strip() == "pod/ready condition met"
    kubectl("create", "deployment", "web", "--image=nginx", *ns)
    core = api_server.core

    def finish_rollout() -> None:
        deps = core.registry.by_key("deployments.apps")
        obj = json.loads(json.dumps(core.get(deps, namespace, "web")))
        obj["status"] = {"observedGeneration": obj["metadata"]["generation"], "replicas": 1, "updatedReplicas": 1,
                         "readyReplicas": 1, "availableReplicas": 1,
                         "conditions": [{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable",
                                         "message": "Deployment has minimum availability."}]}
        core.update(deps, namespace, "web", obj, subresource="status")

    api_server.call(finish_rollout)
    assert kubectl("rollout", "status", "deploy/web", "--timeout=10s", *ns, timeout=30).stdout.strip() == \
        'deployment "web" successfully rolled out'
    assert kubectl("wait", "--for=condition=Available", "deploy/web", "--timeout=10s", *ns,
                   timeout=30).stdout.strip() == "deployment.apps/web condition met"
    kubectl("create", "configmap", "bye", *ns)
    proc = subprocess.Popen([str(kubectl.binary), f"--cache-dir={kubectl.cache}", "wait", "--for=delete", "cm/bye",
                             "--timeout=20s", *ns], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={"HOME": str(kubectl.home), "KUBECONFIG": str(kubectl.kubeconfig)})
    time.sleep(1.0)
    kubectl("delete", "cm", "bye", *ns)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert out.strip() == "configmap/bye condition met"


def test_explain(kubectl: Kubectl) -> None:
    pytest.importorskip("sregym_cluster_embedded.apiserver.openapi", reason="OpenAPI schemas not built yet")
    out = kubectl("explain", "deployment.spec.replicas").stdout
    assert re.search(r"^KIND:\s+Deployment$", out, re.M) and re.search(r"^FIELD:\s+replicas <integer>", out, re.M)


def test_crd_via_kubectl(kubectl: Kubectl, namespace: str, tmp_path: Any) -> None:
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"gadgets.{namespace}.example.com"},
        "spec": {"group": f"{namespace}.example.com", "scope": "Namespaced",
                 "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget", "shortNames": ["gd"]},
                 "versions": [{"name": "v1", "served": True, "storage": True,
                               "schema": {"openAPIV3Schema": {"type": "object",
                                                              "x-kubernetes-preserve-unknown-fields": True}},
                               "additionalPrinterColumns": [{"name": "Size", "type": "integer",
                                                             "jsonPath": ".spec.size"}]}]},
    }
    (tmp_path / "crd.yaml").write_text(yaml.safe_dump(crd))
    kubectl("apply", "-f", str(tmp_path / "crd.yaml"))
    kubectl("wait", "--for=condition=Established", f"crd/gadgets.{namespace}.example.com", "--timeout=10s", timeout=30)
    obj = {"apiVersion": f"{namespace}.example.com/v1", "kind": "Gadget",
           "metadata": {"name": "g1", "namespace": namespace}, "spec": {"size": 3}}
    (tmp_path / "g.yaml").write_text(yaml.safe_dump(obj))
    assert kubectl("apply", "-f", str(tmp_path / "g.yaml")).stdout.strip() == \
        f"gadget.{namespace}.example.com/g1 created"
    out = kubectl("get", "gadgets", "-n", namespace).stdout
    assert header(out) == ["NAME", "SIZE"] or header(out) == ["NAME", "SIZE", "AGE"] or header(out)[0] == "NAME"
    assert "g1" in out
    kubectl("delete", "crd", f"gadgets.{namespace}.example.com")


def test_apply_over_a_custom_resource_that_create_made(kubectl: Kubectl, namespace: str, tmp_path: Any) -> None:
    """A typed custom resource (Calico's BGPPeer is one) made by ``create``, then ``apply``: kubectl reads from
    the OpenAPI document that custom resources take no strategic merge patch and sends a JSON merge patch, as
    against kube-apiserver. Before, the document offered strategic merge for them too, kubectl sent one and
    the server answered 415 UnsupportedMediaType."""
    group = f"{namespace}.example.org"
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": f"peers.{group}"},
           "spec": {"group": group, "scope": "Cluster",
                    "names": {"plural": "peers", "singular": "peer", "kind": "Peer", "listKind": "PeerList"},
                    "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                        "type": "object", "properties": {
                            "apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": {"type": "object"},
                            "spec": {"type": "object", "properties": {"peerSelector": {"type": "string"}}}}}}}]}}
    (tmp_path / "crd.yaml").write_text(yaml.safe_dump(crd))
    kubectl("apply", "-f", str(tmp_path / "crd.yaml"))
    kubectl("wait", "--for=condition=Established", f"crd/peers.{group}", "--timeout=10s", timeout=30)
    try:
        peer = {"apiVersion": f"{group}/v1", "kind": "Peer", "metadata": {"name": "p1"}, "spec": {"peerSelector": "a"}}
        (tmp_path / "peer.yaml").write_text(yaml.safe_dump(peer))
        kubectl("create", "-f", str(tmp_path / "peer.yaml"))
        (tmp_path / "peer.yaml").write_text(yaml.safe_dump({**peer, "spec": {"peerSelector": "b"}}))
        applied = kubectl("apply", "-f", str(tmp_path / "peer.yaml"), check=False)
        assert applied.returncode == 0, applied.stderr
        assert "missing the kubectl.kubernetes.io/last-applied-configuration annotation" in applied.stderr
        stored = json.loads(kubectl("get", f"peers.{group}", "p1", "-o", "json").stdout)
        assert stored["spec"]["peerSelector"] == "b"
    finally:
        kubectl("delete", "crd", f"peers.{group}", check=False)


def test_unknown_fields_strict_and_warn(kubectl: Kubectl, namespace: str, tmp_path: Any) -> None:
    pytest.importorskip("sregym_cluster_embedded.apiserver.openapi", reason="OpenAPI schemas not built yet")
    typo = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "typo", "namespace": namespace},
            "spec": {"replica": 2, "selector": {"matchLabels": {"app": "t"}},
                     "template": {"metadata": {"labels": {"app": "t"}},
                                  "spec": {"containers": [{"name": "c", "image": "nginx", "imagePullPolic": "x"}]}}}}
    path = tmp_path / "typo.yaml"
    path.write_text(yaml.safe_dump(typo))
    strict = kubectl("apply", "-f", str(path), check=False)
    assert strict.returncode == 1
    assert ('Deployment in version "v1" cannot be handled as a Deployment: strict decoding error: '
            'unknown field "spec.replica", unknown field "spec.template.spec.containers[0].imagePullPolic"'
            in strict.stderr)
    warned = kubectl("create", "-f", str(path), "--validate=warn")
    assert 'Warning: unknown field "spec.replica"' in warned.stderr
    assert warned.stdout.strip() == "deployment.apps/typo created"
    stored = json.loads(kubectl("get", "deploy", "typo", "-n", namespace, "-o", "json").stdout)
    assert "replica" not in stored["spec"]  # dropped, as a typed decoder drops it


def test_pods_get_the_priority_of_their_class(kubectl: Kubectl, namespace: str) -> None:
    ns = ["-n", namespace]
    kubectl("create", "priorityclass", f"batch-{namespace}", "--value=4242", "--description=nightly")
    try:
        doc = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "ranked", "namespace": namespace},
               "spec": {"priorityClassName": f"batch-{namespace}", "containers": [{"name": "c", "image": "busybox"}]}}
        kubectl("apply", "-f", "-", input=json.dumps(doc))
        assert kubectl("get", "pod", "ranked", *ns, "-o", "jsonpath={.spec.priority}").stdout == "4242"
        doc["metadata"]["name"], doc["spec"]["priorityClassName"] = "unranked", "no-such-class"
        refused = kubectl("apply", "-f", "-", input=json.dumps(doc), check=False)
        assert refused.returncode != 0
        assert 'pods "unranked" is forbidden: no PriorityClass with name no-such-class was found' in refused.stderr
    finally:
        kubectl("delete", "pod", "ranked", *ns, "--ignore-not-found", "--wait=false", check=False)
        kubectl("delete", "priorityclass", f"batch-{namespace}", check=False)
