"""A write beyond a problem's grant is refused before it is stored (issue #34, round 3: a DaemonSet
template that gained a command rolled pods running it before the engine's guard put it back).
Driven with real kubectl as the agent, against the grants the engine publishes."""

from __future__ import annotations

import json

from sregym_core.grant_rules import GRANTS_CONFIGMAP, grants_configmap
from sregym_core.types import AgentGrant


def _daemonset(namespace: str) -> dict:
    return {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "kube-proxy", "namespace": namespace},
            "spec": {"selector": {"matchLabels": {"k8s-app": "kube-proxy"}},
                     "template": {"metadata": {"labels": {"k8s-app": "kube-proxy"}},
                                  "spec": {"containers": [{"name": "kube-proxy", "image": "kube-proxy:v1.37.0",
                                                           "command": ["/usr/local/bin/kube-proxy"]}]}}}}


def test_a_patch_beyond_the_grant_is_refused_and_one_within_it_is_stored(kubectl, api_server, namespace):
    kubectl("apply", "-f", "-", input=json.dumps(_daemonset(namespace)))
    kubectl("create", "role", "patch-proxy", "--verb=get,patch,update", "--resource=daemonsets.apps",
            "--resource-name=kube-proxy", "-n", namespace)
    kubectl("create", "rolebinding", "patch-proxy", "--role=patch-proxy", "--group=sregym:agents", "-n", namespace)
    agent = kubectl.as_agent(api_server.agent_kubeconfig)
    grant = AgentGrant(resource="daemonsets", group="apps", namespace=namespace, name="kube-proxy",
                       verbs=("get", "patch", "update"),
                       may_change={"spec.template.spec.containers[*].image": "any"})
    ns, _name = GRANTS_CONFIGMAP
    kubectl("create", "namespace", ns, check=False)
    kubectl("apply", "-f", "-", input=json.dumps(grants_configmap([grant])))

    command = [{"op": "replace", "path": "/spec/template/spec/containers/0/command", "value": ["sh", "-c", "id"]},
               {"op": "replace", "path": "/spec/template/spec/containers/0/image", "value": "postgres:15"}]
    refused = agent("patch", "daemonset", "kube-proxy", "-n", namespace, "--type=json", "-p", json.dumps(command),
                    check=False)
    assert refused.returncode == 1 and "Forbidden" in refused.stderr and "may change only" in refused.stderr, refused
    stored = json.loads(kubectl("get", "daemonset", "kube-proxy", "-n", namespace, "-o", "json").stdout)
    assert stored["spec"]["template"]["spec"]["containers"][0]["command"] == ["/usr/local/bin/kube-proxy"]
    assert stored["metadata"]["generation"] == 1  # nothing was stored, so nothing rolled
    # a whole-object update beyond the grant: refused as well
    changed = json.loads(json.dumps(stored))
    changed["spec"]["template"]["spec"]["hostNetwork"] = True
    assert agent("replace", "-f", "-", input=json.dumps(changed), check=False).returncode == 1
    # within the grant: stored
    agent("set", "image", "daemonset/kube-proxy", "kube-proxy=kube-proxy:v1.37.1", "-n", namespace)
    image = kubectl("get", "daemonset", "kube-proxy", "-n", namespace, "-o",
                    "jsonpath={.spec.template.spec.containers[0].image}").stdout
    assert image == "kube-proxy:v1.37.1"
    # the cluster's own writers are not checked, and without published grants neither is the agent
    kubectl("patch", "daemonset", "kube-proxy", "-n", namespace, "--type=json", "-p", json.dumps(command[:1]))
    kubectl("delete", "configmap", GRANTS_CONFIGMAP[1], "-n", ns)
    assert agent("patch", "daemonset", "kube-proxy", "-n", namespace, "--type=json", "-p",
                 json.dumps(command[1:]), check=False).returncode == 0
