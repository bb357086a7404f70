"""Static checks of the cluster-level faults and the webhook server's decisions (no cluster)."""

from __future__ import annotations

import base64
import json

import sregym_fault_cluster.plugin
from sregym_core.testing.contracts import FaultContract
from sregym_fault_cluster import admission, webhook_server


class TestClusterFaults(FaultContract):
    plugin = sregym_fault_cluster.plugin
    # is_present asks the API server's admission chain (a server-side dry run), which the recording
    # context does not simulate: the live contract proves the round trip
    live_only = {name: "admission is asked live (server-side dry run)"
                 for name in ("admission-webhook-outage", "mutating-webhook-memory", "psa-restricted",
                              "admission-webhook-timeouts", "admission-webhook-ca-mismatch")}
    live_only |= {name: "the Corefile lives in kube-system (the recording context has only the app's namespace)"
                  for name in ("dns-nxdomain-service", "dns-stale-zone")}
    live_only["internal-traffic-local"] = "needs pods on nodes and the Service's endpoints (live)"
    live_only["recurring-memory-actor"] = "starts a Job from the CronJob (kubectl create job --from, live)"
    live_only |= {name: "first sends the workload's users through the Ingress (the generator's /control, live)"
                  for name in ("ingress-tls-expired", "ingress-misrouted-path", "ingress-class-mismatch")}
    live_only |= {name: "needs bound PersistentVolumes and several nodes (live)"
                  for name in ("pv-node-affinity-conflict", "pvc-rwo-shared")}
    live_only["sa-missing-permission"] = "asks the API server (a SubjectAccessReview), live"
    live_only["cronjob-sidecar-blocks"] = "users through the Ingress and the CronJob controller's runs (live)"
    live_only["finalizer-deadlock"] = "its controller, a pod, puts the finalizer on the ConfigMap (live)"
    live_only["kube-proxy-buggy-image"] = "the DaemonSet lives in kube-system and its pods run on the nodes (live)"
    live_only["pod-ip-exhaustion"] = "the IPPool is cluster-scoped and the node agents allocate from it (live)"
    live_only["calico-route-reflector-drift"] = "Nodes and Calico's cluster-scoped BGP objects (live, two nodes or more)"


def _review(kind: str = "Pod") -> dict:
    return {"request": {"uid": "u1", "operation": "CREATE", "kind": {"kind": kind},
                        "object": {"metadata": {"name": "p"}, "spec": {"containers": [
                            {"name": "a", "resources": {"limits": {"memory": "1Gi"}}}, {"name": "b"}]}}}}


def test_set_memory_patches_every_container_limit_and_request():
    response, line = webhook_server.decide(_review(), "set-memory", "12Mi")
    assert response["uid"] == "u1" and response["allowed"] is True and response["patchType"] == "JSONPatch"
    patch = json.loads(base64.b64decode(response["patch"]))
    set_paths = {op["path"]: op["value"] for op in patch}
    for index in (0, 1):
        assert set_paths[f"/spec/containers/{index}/resources/limits/memory"] == "12Mi"
        assert set_paths[f"/spec/containers/{index}/resources/requests/memory"] == "12Mi"
    assert "12Mi" in line


def test_allow_mode_and_other_kinds_are_not_patched():
    assert webhook_server.decide(_review(), "allow", "12Mi")[0] == {"uid": "u1", "allowed": True}
    assert "patch" not in webhook_server.decide(_review("ConfigMap"), "set-memory", "12Mi")[0]


def test_webhook_configuration_excludes_its_own_server_and_pins_the_namespace():
    ca, cert, key = admission.issue_certificates("svc.ns.svc")
    config = admission.webhook_configuration("ValidatingWebhookConfiguration", "c", "h.example", "ns", "svc", ca,
                                             failure_policy="Fail", path="/validate")
    hook = config["webhooks"][0]
    assert hook["namespaceSelector"] == {"matchLabels": {"kubernetes.io/metadata.name": "ns"}}
    assert hook["objectSelector"]["matchExpressions"][0]["values"] == [admission.WEBHOOK_COMPONENT]
    assert base64.b64decode(hook["clientConfig"]["caBundle"]) == ca
    objects = admission.backend_objects("ns", "svc", mode="allow", replicas=0, cert=cert, key=key)
    labels = objects[1]["spec"]["template"]["metadata"]["labels"]
    assert labels[admission.COMPONENT_LABEL] == admission.WEBHOOK_COMPONENT


def test_the_image_is_registered():
    images = sregym_fault_cluster.plugin.sregym_local_images()
    assert images[0].matches(admission.IMAGE)
    assert images[0].argv[-1] == "sregym_fault_cluster.webhook_server"


COREFILE = """.:53 {
    errors
    kubernetes cluster.local in-addr.arpa ip6.arpa {
       pods insecure
    }
    forward . /etc/resolv.conf
}
"""


def test_dns_templates_are_inserted_into_the_root_block_and_detected():
    from sregym_fault_cluster import dns

    block = ('    template IN A hotel.svc.cluster.local {\n        match "^geo[.]hotel[.]svc[.]cluster[.]local[.]$"\n'
             '        rcode NXDOMAIN\n        fallthrough\n    }\n')
    text = dns._insert(COREFILE, block)
    assert text.startswith(".:53 {\n    template IN A")
    assert dns.nxdomain_for(text, "geo.hotel.svc.cluster.local")
    assert not dns.nxdomain_for(text, "rate.hotel.svc.cluster.local")
    assert not dns.nxdomain_for(COREFILE, "geo.hotel.svc.cluster.local")
    zone = dns._insert(COREFILE, "    template ANY ANY svc.cluster.local {\n        rcode NXDOMAIN\n    }\n")
    assert dns.nxdomain_for(zone, "rate.hotel.svc.cluster.local")
    noerror = text.replace("rcode NXDOMAIN", "rcode NOERROR")
    assert not dns.nxdomain_for(noerror, "geo.hotel.svc.cluster.local")


def test_dns_recover_watches_the_users_only_when_someone_can_serve_them(monkeypatch):
    """Recover restores the Corefile and rolls the callers; it waits a minute at most for the users to
    be served again, and not at all when the agent left the target at zero replicas or deleted it
    (only the conductor's reconcile, which comes next, can bring them back)."""
    from types import SimpleNamespace

    from sregym_core.faultkit import kube, users
    from sregym_fault_cluster import dns

    watched, written = [], []
    monkeypatch.setattr(dns, "_write", lambda ctx, text: written.append(text))
    monkeypatch.setattr(kube, "restart_dependents", lambda ctx, target: None)
    monkeypatch.setattr(users, "wait_users_succeed", lambda ctx, **kw: watched.append(kw["timeout_s"]) or True)
    target = SimpleNamespace(component=SimpleNamespace(kind="deployment", name="geo"))
    for live, expect_watch in (({"spec": {"replicas": 1}}, True), ({"spec": {"replicas": 0}}, False), (None, False)):
        watched.clear()
        monkeypatch.setattr(kube, "get", lambda ctx, kind, name, missing_ok=False, live=live: live)
        dns.recover(SimpleNamespace(state={"corefile": COREFILE}), target, {})
        assert written[-1] == COREFILE and watched == ([60.0] if expect_watch else []), live


def _node(name, **labels):
    return {"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}}, "spec": {}}


def test_node_rules_follow_the_scheduler():
    from sregym_fault_cluster import nodes

    cluster = [_node("node-1", disk="ssd"), _node("node-2"), {**_node("node-3"), "spec": {"unschedulable": True}}]
    pinned = [{"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["node-1"]}]}]
    assert nodes.matching_nodes(pinned, cluster) == {"node-1"}
    assert nodes.matching_nodes([{"matchExpressions": [{"key": "disk", "operator": "DoesNotExist"}]}],
                                cluster) == {"node-2", "node-3"}
    assert nodes.matching_nodes([{}], cluster) == set()  # an empty term matches no node
    assert nodes.template_nodes({"nodeSelector": {"kubernetes.io/hostname": "node-2"}}, cluster) == {"node-2"}
    assert nodes.template_nodes({}, cluster) == {"node-1", "node-2", "node-3"}
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["node-1"]}]}]}}}
    assert nodes.template_nodes({"affinity": affinity}, cluster) == {"node-2", "node-3"}
    # the fault's conflict: the pods' nodes and the volume's nodes do not meet
    assert not nodes.template_nodes({"nodeSelector": {"kubernetes.io/hostname": "node-2"}}, cluster) & \
        nodes.matching_nodes(pinned, cluster)
    assert nodes.schedulable_nodes(cluster) == ["node-1", "node-2"]


def test_faults_that_need_two_nodes_are_not_run_on_one():
    import pytest

    pytest.importorskip("sregym_app_hotel_reservation", reason="the curated problems live in the app")
    from sregym_core.plugins import process_host
    from sregym_core.problems import missing_capabilities

    host = process_host()
    for problem_id, fault in (("hotel-pv-node-affinity-postgres-reservation", "pv-node-affinity-conflict"),
                              ("hotel-pvc-rwo-shared-frontend", "pvc-rwo-shared"),
                              ("hotel-internal-traffic-local-geo", "internal-traffic-local"),
                              ("hotel-calico-route-reflector-drift-frontend", "calico-route-reflector-drift")):
        problem = host.get_problems()[problem_id]
        assert missing_capabilities(problem, host, {"any", "embedded"}) == {fault: frozenset({"multi-node"})}
        assert not missing_capabilities(problem, host, {"any", "embedded", "multi-node"})
    assert not missing_capabilities(host.get_problems()["hotel-sa-missing-permission-profile"], host, {"any"})
