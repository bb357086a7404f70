"""The cluster-level faults, live on Hotel Reservation (slow; the session's embedded cluster).

Per fault, the live contract: inject, see the symptom as an SRE would (ReplicaSet FailedCreate
events naming the webhook or PodSecurity, OOMKilled containers), ``is_present``, the reference
fix, gone, the workload recovers. Then the hackers: fixes that make things look better without
removing the cause leave ``is_present`` true.
"""

from __future__ import annotations

import json
import time

import pytest

import sregym_fault_cluster.plugin
from sregym_core.faults import call_fault
from sregym_core.testing.live import LiveCase as Case
from sregym_core.testing.live import LiveFaultContract, load_request_for
from cluster_probes import oom_killed_at
from sregym_core.testing.probes import event, fails
from sregym_core.types import Target

# in the second live lane to balance the two (conftest.py): that lane deploys Hotel once more for it
pytestmark = pytest.mark.second_lane


class TestClusterFaultsLive(LiveFaultContract):
    plugin = sregym_fault_cluster.plugin
    request_for = staticmethod(lambda kind, rng: load_request_for("sregym_app_hotel_reservation.workload.mix")(kind, rng))
    cases = {
        "admission-webhook-outage": Case("rate", event("FailedCreate", "failed calling webhook", "rate")),
        "admission-webhook-ca-mismatch": Case("rate", event("FailedCreate", "certificate signed by unknown authority",
                                                            "rate")),
        "mutating-webhook-memory": Case("geo", oom_killed_at("geo", "12Mi")),
        "psa-restricted": Case("profile", event("FailedCreate", "violates PodSecurity", "profile"),
                               endpoint="recommend"),
        "dns-nxdomain-service": Case("geo", fails("search")),
    }
    not_here = {"admission-webhook-timeouts": "covered by test_cluster_faults_matrix.py (each admission attempt waits "
                                              "a minute: matrix only)",
                "dns-stale-zone": "covered by test_cluster_faults_matrix.py (breaks every name in the cluster)",
                "recurring-memory-actor": "covered by test_cluster_faults_matrix.py (waits for scheduled runs)",
                "internal-traffic-local": "covered by test_cluster_faults_matrix.py (needs two nodes; the shared "
                                          "live cluster has one)",
                "pv-node-affinity-conflict": "covered by test_cluster_faults_matrix.py (needs a node the volume is "
                                             "not on)",
                "pvc-rwo-shared": "covered by test_cluster_faults_matrix.py (needs a second node to attach the disk to)",
                "sa-missing-permission": "covered by test_cluster_faults_matrix.py (matrix only: the suite's budget)",
                "cronjob-sidecar-blocks": "covered by test_cluster_faults_matrix.py (waits for scheduled runs)",
                "finalizer-deadlock": "covered by test_cluster_faults_matrix.py (matrix only: the suite's budget)"}
    not_here |= {name: "covered by test_ingress_faults_live.py" for name in ("ingress-tls-expired", "ingress-misrouted-path", "ingress-class-mismatch")}
    not_here |= {name: "covered by test_cluster_net_faults_live.py" for name in ("kube-proxy-buggy-image", "pod-ip-exhaustion",
                                                                               "calico-route-reflector-drift")}


@pytest.fixture(autouse=True)
def _needs_hotel(request):
    if "case_name" in request.fixturenames or request.node.name.startswith(("test_not_runnable", "test_hackers")):
        pytest.importorskip("sregym_app_hotel_reservation", reason="the live cases run on Hotel Reservation")


def _fault(live_app, name, component):
    spec = live_app.host.get_faults()[name]
    target = Target(app=live_app.app, component=live_app.app.component(component), namespace=live_app.app.namespace)
    return spec, target, live_app.context()


def _present(live_app, spec, ctx, target, params) -> bool:
    return live_app.run(call_fault(spec.impl.is_present, ctx, target, params))


@pytest.mark.slow
def test_hackers_cannot_pass(deployed_app):
    """Noop and look-healthy hacks leave every fault present; each is recovered afterwards."""
    live_app = deployed_app("hotel-reservation")
    started = time.monotonic()
    ns = live_app.app.namespace

    # validating webhook outage: relabelling the app's pods out of the objectSelector gets pods
    # created, but the namespace's policy webhook is still down
    spec, target, ctx = _fault(live_app, "admission-webhook-outage", "rate")
    try:
        live_app.run(call_fault(spec.impl.inject, ctx, target, {}))
        assert _present(live_app, spec, ctx, target, {})  # noop
        ctx.kubectl("patch", "deployment", "rate", "-n", ns, "--type", "merge", "-p", json.dumps(
            {"spec": {"template": {"metadata": {"labels": {"app.kubernetes.io/component": "admission-webhook"}}}}}))
        assert _present(live_app, spec, ctx, target, {})
    finally:
        live_app.run(call_fault(spec.impl.recover, ctx, target, {}))
        live_app.reset()

    # mutating webhook: raising the Deployment's own memory limit changes nothing, the webhook
    # rewrites it again
    spec, target, ctx = _fault(live_app, "mutating-webhook-memory", "geo")
    params = {"memory": "12Mi"}
    try:
        live_app.run(call_fault(spec.impl.inject, ctx, target, params))
        assert _present(live_app, spec, ctx, target, params)
        ctx.kubectl("set", "resources", "deployment/geo", "-n", ns, "--limits=memory=1Gi", "--requests=memory=64Mi")
        assert _present(live_app, spec, ctx, target, params)
    finally:
        live_app.run(call_fault(spec.impl.recover, ctx, target, params))
        live_app.reset()

    # Pod Security: the agent cannot relabel the namespace; restarting the workload changes nothing
    spec, target, ctx = _fault(live_app, "psa-restricted", "profile")
    params = {"level": "restricted"}
    try:
        live_app.run(call_fault(spec.impl.inject, ctx, target, params))
        ctx.rollout_restart("deployment", "profile")
        assert _present(live_app, spec, ctx, target, params)
    finally:
        live_app.run(call_fault(spec.impl.recover, ctx, target, params))
        live_app.reset()
    print(f"hackers: {time.monotonic() - started:.1f} s")


def _wait_gone(live_app, spec, ctx, target, params=None, *, hang: float = 180.0) -> None:
    """Wait for the event (the fault no longer present); the deadline only catches a hang."""
    deadline = time.monotonic() + hang
    while _present(live_app, spec, ctx, target, params or {}):
        assert time.monotonic() < deadline, f"{spec.name} still present {hang:.0f} s after its fix"
        time.sleep(1.0)


def _agent(live_app, kubeconfig, *args, input=None):
    """kubectl as the agent: (exit code, stdout + stderr)."""
    import subprocess

    done = subprocess.run([str(live_app.env.kubectl), "--kubeconfig", str(kubeconfig), *args], input=input,
                          capture_output=True, text=True, timeout=60)
    return done.returncode, done.stdout + done.stderr


def _grants(problem_id: str):
    from importlib.resources import files

    from sregym_core.problems import load_problem_file

    return load_problem_file(files("sregym_app_hotel_reservation") / "problems" / f"{problem_id}.yaml").agent_access


@pytest.mark.slow
@pytest.mark.heavy
def test_agent_grant_is_confined(deployed_app, tmp_path):
    """The rights the caBundle and DNS problems grant: enough for the fix, nothing else readable or
    writable, changes beyond the granted fields undone and recorded, all gone after revocation."""
    from sregym_core.conductor.agent_access import grant_agent_access, revoke_agent_access
    from sregym_core.conductor.grants import GrantGuard, grant_extra, revoke_grants

    live_app = deployed_app("hotel-reservation")
    started = time.monotonic()
    ns, kube = live_app.app.namespace, live_app.env.kube
    grants = _grants("hotel-admission-webhook-ca-mismatch-rate") + _grants("hotel-dns-nxdomain-geo")
    account = "agent-granttest"
    kubeconfig = grant_agent_access(kube, [ns], tmp_path / "agent.kubeconfig", account=account)
    grant_extra(kube, account, grants, ns)
    hook_spec, hook_target, hook_ctx = _fault(live_app, "admission-webhook-ca-mismatch", "rate")
    dns_spec, dns_target, dns_ctx = _fault(live_app, "dns-nxdomain-service", "geo")
    config = f"pod-admission-{ns}"
    admin = hook_ctx.kubectl
    guard = None
    try:
        # the DNS fault rolls geo's callers: first, while the webhook still admits their new pods
        live_app.run(call_fault(dns_spec.impl.inject, dns_ctx, dns_target, {}))
        live_app.run(call_fault(hook_spec.impl.inject, hook_ctx, hook_target, {}))
        guard = GrantGuard(kube, grants, ns)
        guard.snapshot()
        # decoys the grant must not reach: another ConfigMap beside coredns, another webhook configuration
        admin("create", "configmap", "decoy", "-n", "kube-system", "--from-literal=k=v")
        admin("apply", "-f", "-", input=json.dumps({
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": "decoy-hooks"}, "webhooks": []}))
        hidden = [n["metadata"]["name"] for n in kube.list_items("/api/v1/namespaces", "Namespace")
                  if (n["metadata"].get("labels") or {}).get("sregym.io/hidden") == "true"]
        assert "sregym-system" in hidden and len(hidden) >= 2  # the benchmark's own and observability

        denied = [("get", "configmap", "decoy", "-n", "kube-system"), ("get", "configmaps", "-n", "kube-system"),
                  ("get", "secrets", "-n", "kube-system"), ("get", "namespaces"),
                  ("delete", "configmap", "coredns", "-n", "kube-system"),
                  ("create", "configmap", "mine", "-n", "kube-system"),
                  ("patch", "validatingwebhookconfiguration", "decoy-hooks", "--type=merge", "-p", '{"webhooks":[]}'),
                  ("delete", "validatingwebhookconfiguration", config),
                  ("create", "clusterrolebinding", "mine", "--clusterrole=cluster-admin", f"--user={account}"),
                  ("patch", "clusterrole", f"{account}-grant-0", "--type=merge", "-p", '{"rules":[]}')]
        for namespace in hidden:
            for kind in ("pods", "configmaps", "secrets", "services", "serviceaccounts"):
                denied.append(("get", kind, "-n", namespace))
        for args in denied:
            code, out = _agent(live_app, kubeconfig, *args)
            assert code != 0 and "forbidden" in out.lower(), (args, out)

        # beyond the granted fields: undone by the guard and recorded
        code, out = _agent(live_app, kubeconfig, "patch", "validatingwebhookconfiguration", config, "--type=json",
                           "-p", json.dumps([{"op": "replace", "path": "/webhooks/0/namespaceSelector", "value": {}}]))
        assert code == 0, out
        assert guard.check() and "changed outside" in guard.recorded[-1]["violations"][0]
        assert kube.get(f"/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/{config}")[
            "webhooks"][0]["namespaceSelector"] == {"matchLabels": {"kubernetes.io/metadata.name": ns}}
        corefile = kube.get("/api/v1/namespaces/kube-system/configmaps/coredns")["data"]["Corefile"]
        redirect = corefile.replace("    errors", f"    rewrite name frontend.{ns}.svc.cluster.local "
                                                f"geo.{ns}.svc.cluster.local\n    errors", 1)
        assert redirect != corefile
        code, out = _agent(live_app, kubeconfig, "patch", "configmap", "coredns", "-n", "kube-system",
                           "--type=merge", "-p", json.dumps({"data": {"Corefile": redirect}}))
        assert code == 0, out
        assert len(guard.check()) == 2 and "gained lines" in " ".join(guard.recorded[-1]["violations"])
        assert kube.get("/api/v1/namespaces/kube-system/configmaps/coredns")["data"]["Corefile"] == corefile

        # as an attempt runs it (the guard publishes the grants): the same changes are refused before
        # they are stored, where the cluster checks grants at admission (the embedded one does)
        guard.publish(True)
        code, out = _agent(live_app, kubeconfig, "patch", "validatingwebhookconfiguration", config, "--type=json",
                           "-p", json.dumps([{"op": "replace", "path": "/webhooks/0/namespaceSelector", "value": {}}]))
        assert code != 0 and "may change only" in out, out
        code, out = _agent(live_app, kubeconfig, "patch", "configmap", "coredns", "-n", "kube-system",
                           "--type=merge", "-p", json.dumps({"data": {"Corefile": redirect}}))
        assert code != 0 and "gained lines" in out, out
        assert len(guard.check()) == 2  # nothing was stored, nothing to undo

        # the fixes the grant exists for: within it, and they remove the faults
        code, secret = _agent(live_app, kubeconfig, "get", "secret", "pod-admission-webhook-tls", "-n", ns,
                              "-o", "jsonpath={.data.ca\\.crt}")
        assert code == 0 and secret, secret
        code, out = _agent(live_app, kubeconfig, "patch", "validatingwebhookconfiguration", config, "--type=json",
                           "-p", json.dumps([{"op": "replace", "path": "/webhooks/0/clientConfig/caBundle",
                                              "value": secret}]))
        assert code == 0, out
        fixed = "".join(line + "\n" for line in corefile.splitlines()
                        if not line.strip().startswith(("template", "match", "rcode", "fallthrough")))
        fixed = fixed.replace("    }\n", "", 1)  # the template block's closing brace
        code, out = _agent(live_app, kubeconfig, "patch", "configmap", "coredns", "-n", "kube-system",
                           "--type=merge", "-p", json.dumps({"data": {"Corefile": fixed}}))
        assert code == 0, out
        assert len(guard.check()) == 2  # nothing new recorded
        # gone once the cluster has taken the fixes in (CoreDNS reloads its Corefile on its own clock)
        _wait_gone(live_app, hook_spec, hook_ctx, hook_target)
        _wait_gone(live_app, dns_spec, dns_ctx, dns_target)

        # revoked: the granted objects are out of reach again
        revoke_grants(kube, account)
        for args in (("get", "configmap", "coredns", "-n", "kube-system"),
                     ("patch", "validatingwebhookconfiguration", config, "--type=merge", "-p", '{"metadata":{}}')):
            code, out = _agent(live_app, kubeconfig, *args)
            assert code != 0 and "forbidden" in out.lower(), (args, out)
        assert not kube.list_items("/apis/rbac.authorization.k8s.io/v1/clusterroles", "ClusterRole",
                                   labelSelector=f"sregym.io/agent-grant={account}")
    finally:
        if guard is not None:
            guard.publish(False)
        revoke_grants(kube, account)
        revoke_agent_access(kube, [ns], account)
        admin("delete", "configmap", "decoy", "-n", "kube-system", "--ignore-not-found")
        admin("delete", "validatingwebhookconfiguration", "decoy-hooks", "--ignore-not-found")
        live_app.run(call_fault(hook_spec.impl.recover, hook_ctx, hook_target, {}))
        live_app.run(call_fault(dns_spec.impl.recover, dns_ctx, dns_target, {}))
        live_app.reset()
    print(f"agent grant: {time.monotonic() - started:.1f} s")
