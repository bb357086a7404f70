"""Identity-dependent admission, driven with real kubectl as a namespace admin who is not a cluster
admin: RBAC escalation prevention (a Role or binding grants at most what the writer holds) and
Endpoints/EndpointSlices that may only name the namespace's own pods."""

from __future__ import annotations

import json

from conftest import running_pod

from sregym_cluster_embedded.apiserver.escalation import not_held


def _agent(kubectl, api_server, namespace):
    kubectl("create", "rolebinding", "agent", "--clusterrole=sregym:agent", "--group=sregym:agents", "-n", namespace)
    return kubectl.as_agent(api_server.agent_kubeconfig)


def _apply(agent, obj: dict, check: bool = False):
    return agent("apply", "-f", "-", input=json.dumps(obj), check=check)


def _role(namespace: str, name: str, resources: list[str], verbs: list[str]) -> dict:
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": name, "namespace": namespace},
            "rules": [{"apiGroups": [""], "resources": resources, "verbs": verbs}]}


def test_a_role_grants_only_what_its_writer_holds(kubectl, api_server, namespace):
    agent = _agent(kubectl, api_server, namespace)
    refused = _apply(agent, _role(namespace, "status-writer", ["pods/status"], ["update", "patch"]))
    assert refused.returncode == 1
    assert "is attempting to grant RBAC permissions not currently held" in refused.stderr
    assert 'Resources:["pods/status"]' in refused.stderr
    # a wildcard is more than any finite set of rights the agent holds
    assert _apply(agent, _role(namespace, "everything", ["*"], ["*"])).returncode == 1
    # what it holds it may pass on, and adding a held right to a role later is fine too
    _apply(agent, _role(namespace, "reader", ["configmaps"], ["get"]), check=True)
    agent("patch", "role", "reader", "-n", namespace, "--type=json", "-p",
          '[{"op":"add","path":"/rules/-","value":{"apiGroups":[""],"resources":["pods"],"verbs":["list"]}}]')
    # ...but a patch that adds an unheld right is judged on its result
    patched = agent("patch", "role", "reader", "-n", namespace, "--type=json", "-p",
                    '[{"op":"add","path":"/rules/-","value":{"apiGroups":[""],"resources":["nodes/status"],'
                    '"verbs":["update"]}}]', check=False)
    assert patched.returncode == 1 and "not currently held" in patched.stderr
    assert agent("auth", "can-i", "escalate", "roles", "-n", namespace, check=False).stdout.strip() == "no"


def test_a_binding_grants_only_what_its_writer_holds(kubectl, api_server, namespace):
    agent = _agent(kubectl, api_server, namespace)
    kubectl("create", "serviceaccount", "helper", "-n", namespace)
    to_admin = agent("create", "rolebinding", "mine", "--clusterrole=cluster-admin",
                     f"--serviceaccount={namespace}:helper", "-n", namespace, check=False)
    assert to_admin.returncode == 1 and "not currently held" in to_admin.stderr
    missing = agent("create", "rolebinding", "later", "--clusterrole=does-not-exist",
                    f"--serviceaccount={namespace}:helper", "-n", namespace, check=False)
    assert missing.returncode == 1 and "not found" in missing.stderr
    # the admin's Role with a right the agent lacks: binding it is refused, adding a subject too
    kubectl("create", "role", "status-writer", "--verb=update", "--resource=pods/status", "-n", namespace)
    assert agent("create", "rolebinding", "sw", "--role=status-writer", f"--serviceaccount={namespace}:helper",
                 "-n", namespace, check=False).returncode == 1
    kubectl("create", "rolebinding", "sw", "--role=status-writer", "--user=someone", "-n", namespace)
    added = agent("patch", "rolebinding", "sw", "-n", namespace, "--type=json", "-p",
                  f'[{{"op":"add","path":"/subjects/-","value":{{"kind":"ServiceAccount","name":"helper",'
                  f'"namespace":"{namespace}"}}}}]', check=False)
    assert added.returncode == 1 and "not currently held" in added.stderr
    # binding a role whose rights the agent holds works (the rbac fault's fix path)
    agent("create", "rolebinding", "ok", "--clusterrole=view", f"--serviceaccount={namespace}:helper",
          "-n", namespace)


def test_endpoints_may_only_name_the_namespaces_pods(kubectl, api_server, namespace):
    agent = _agent(kubectl, api_server, namespace)
    running_pod(api_server, namespace, "web")
    pod_ip = json.loads(kubectl("get", "pod", "web", "-n", namespace, "-o", "json").stdout)["status"]["podIP"]

    def endpoints(ip: str) -> dict:
        return {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "side", "namespace": namespace},
                "subsets": [{"addresses": [{"ip": ip}], "ports": [{"port": 8080}]}]}

    for target in ("127.0.0.1", "127.43.0.10", "127.40.1.1", "10.0.0.1"):
        refused = _apply(agent, endpoints(target))
        assert refused.returncode == 1 and "Invalid" in refused.stderr, target
        assert "subsets[0].addresses[0].ip" in refused.stderr and target in refused.stderr
    _apply(agent, endpoints(pod_ip), check=True)
    # a patch that adds another address is judged on the result
    patched = agent("patch", "endpoints", "side", "-n", namespace, "--type=json", "-p",
                    '[{"op":"add","path":"/subsets/0/notReadyAddresses","value":[{"ip":"127.0.0.1"}]}]',
                    check=False)
    assert patched.returncode == 1 and "subsets[0].notReadyAddresses[0].ip" in patched.stderr
    slice_ = {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "addressType": "IPv4",
              "metadata": {"name": "side-x", "namespace": namespace,
                           "labels": {"kubernetes.io/service-name": "side"}},
              "endpoints": [{"addresses": ["127.0.0.1"]}], "ports": [{"port": 8080}]}
    kubectl("create", "rolebinding", "slices", "--clusterrole=edit", "--group=sregym:agents", "-n", namespace)
    refused = _apply(agent, slice_)
    assert refused.returncode == 1 and "endpoints[0].addresses[0]" in refused.stderr
    # the cluster's own controllers and the benchmark (system:masters) are not held to this
    kubectl("apply", "-f", "-", input=json.dumps(endpoints("127.0.0.1")))


def test_not_held_breaks_rules_into_single_grants():
    owner = [{"apiGroups": [""], "resources": ["pods", "pods/*"], "verbs": ["get"]},
             {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["*"], "resourceNames": ["web"]},
             {"nonResourceURLs": ["/healthz/*"], "verbs": ["get"]}]
    assert not_held(owner, [{"apiGroups": [""], "resources": ["pods", "pods/log"], "verbs": ["get"]}]) == []
    assert not_held(owner, [{"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["patch"],
                             "resourceNames": ["web"]}]) == []
    # no names asked for: every deployment, more than the one held
    assert not_held(owner, [{"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["patch"]}])
    assert not_held(owner, [{"nonResourceURLs": ["/healthz/ping"], "verbs": ["get"]}]) == []
    assert not_held(owner, [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}])
    assert not_held(owner, [{"apiGroups": ["*"], "resources": ["pods"], "verbs": ["get"]}])
