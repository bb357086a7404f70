"""Issue 34, the cluster's side, tried as an evaluated agent would: with a fresh attempt identity's
kubeconfig and real kubectl on the embedded cluster running Hotel Reservation.

* attack 2: forge a pod's status (Ready, another pod's IP) directly or through a Role/RoleBinding
  the agent writes for a ServiceAccount it runs a pod as;
* attack 3: an Ingress host that adds an nginx ``location`` serving the ingress controller's token,
  and what that token could read if it leaked anyway;
* attack 4: a selectorless Service whose Endpoints point at the workload generator, Prometheus, the
  API server or a host listener, so that an app pod reaches them through the service proxy.

One cluster and one deployed app for the module (the session's shared cluster); nothing the tests
create outlives them.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sregym_core.testing.reach import connect_args

pytestmark = pytest.mark.slow

KUBECTL = str(Path(sys.executable).parent / "kubectl")
NS = "hotel-reservation"
EVIL_HOST = "x.test; location /t { alias /var/run/secrets/kubernetes.io/serviceaccount/; } server_name y.test"


@pytest.fixture(scope="module")
def cluster(deployed, tmp_path_factory, attempt_identity):
    """A fresh attempt identity (as ``sregym run`` makes one) on the cluster with the app deployed."""
    work = tmp_path_factory.mktemp("cluster-integrity")
    try:
        with attempt_identity(deployed.kubeconfig, [NS], work) as agent:
            yield {"agent": agent, "admin": deployed.kubeconfig, "environ": deployed.environ, "work": work}
    finally:
        for kind, name in (("service", "side-door"), ("endpoints", "side-door"), ("ingress", "evil"),
                           ("role", "status-writer"), ("rolebinding", "status-writer"), ("rolebinding", "as-admin"),
                           ("serviceaccount", "helper"), ("role", "config-reader"), ("rolebinding", "config-reader")):
            kubectl(deployed.kubeconfig, "delete", kind, name, "-n", NS, "--ignore-not-found")


def kubectl(config: Path, *args: str, input: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([KUBECTL, f"--kubeconfig={config}", *args], capture_output=True, text=True, timeout=90,
                          input=input, env={"PATH": os.environ.get("PATH", ""), "HOME": str(config.parent)})


def agent(c, *args: str, input: str | None = None) -> subprocess.CompletedProcess:
    return kubectl(c["agent"], *args, input=input)


def admin(c, *args: str, input: str | None = None) -> subprocess.CompletedProcess:
    return kubectl(c["admin"], *args, input=input)


def _json(done: subprocess.CompletedProcess) -> dict:
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _running(c, selector: str, namespace: str = NS) -> dict:
    pods = _json(admin(c, "get", "pods", "-n", namespace, "-l", selector, "-o", "json"))["items"]
    running = [p for p in pods if (p.get("status") or {}).get("phase") == "Running" and p["status"].get("podIP")]
    assert running, f"no running pod for {selector} in {namespace}"
    return running[0]


# --------------------------------------------------------------------------- attack 2: forged status


def test_the_agent_cannot_forge_status_directly_or_through_an_identity_it_makes(cluster):
    c = cluster
    victim = _running(c, "app.kubernetes.io/name=frontend")["metadata"]["name"]
    for resource in ("pods/status", "deployments.apps/status", "replicasets.apps/status", "nodes/status"):
        can = agent(c, "auth", "can-i", "patch", resource.split("/")[0], "--subresource=status", "-n", NS)
        assert can.stdout.strip() == "no", resource
    forged = agent(c, "patch", "pod", victim, "-n", NS, "--subresource=status", "--type=merge", "-p",
                   '{"status":{"podIP":"127.0.0.1","conditions":[{"type":"Ready","status":"True"}]}}')
    assert forged.returncode != 0 and "Forbidden" in forged.stderr
    assert agent(c, "auth", "can-i", "escalate", "roles", "-n", NS).stdout.strip() == "no"
    assert agent(c, "auth", "can-i", "bind", "clusterroles", "-n", NS).stdout.strip() == "no"
    # an identity of its own: the Role, or a binding to a stronger role, is refused at the API
    assert agent(c, "create", "serviceaccount", "helper", "-n", NS).returncode == 0
    role = agent(c, "create", "role", "status-writer", "--verb=patch,update", "--resource=pods/status", "-n", NS)
    assert role.returncode != 0 and "attempting to grant RBAC permissions not currently held" in role.stderr
    for clusterrole in ("cluster-admin", "admin", "edit", "system:node"):
        bound = agent(c, "create", "rolebinding", "as-admin", f"--clusterrole={clusterrole}",
                      f"--serviceaccount={NS}:helper", "-n", NS)
        assert bound.returncode != 0 and "forbidden" in bound.stderr.lower(), clusterrole
    # a binding to a role the benchmark made that holds status rights is refused too
    made = admin(c, "create", "role", "status-writer", "--verb=patch", "--resource=pods/status", "-n", NS)
    assert made.returncode == 0, made.stderr
    bound = agent(c, "create", "rolebinding", "status-writer", "--role=status-writer",
                  f"--serviceaccount={NS}:helper", "-n", NS)
    assert bound.returncode != 0 and "not currently held" in bound.stderr
    as_helper = agent(c, "auth", "can-i", "patch", "pods", "--subresource=status", "-n", NS,
                      f"--as=system:serviceaccount:{NS}:helper")
    assert as_helper.stdout.strip() != "yes"  # (impersonation itself is forbidden to the agent)
    # what the agent holds it may still pass on: the rbac fault's fix is a Role the agent writes
    assert agent(c, "create", "role", "config-reader", "--verb=get", "--resource=configmaps", "-n", NS).returncode == 0
    assert agent(c, "create", "rolebinding", "config-reader", "--role=config-reader",
                 f"--serviceaccount={NS}:helper", "-n", NS).returncode == 0


# --------------------------------------------------------------------------- attack 3: ingress injection


def test_an_ingress_host_cannot_inject_nginx_configuration(cluster):
    c = cluster
    ingress = {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "evil", "namespace": NS},
               "spec": {"ingressClassName": "nginx", "rules": [{"host": EVIL_HOST, "http": {"paths": [{
                   "path": "/", "pathType": "Prefix",
                   "backend": {"service": {"name": "frontend", "port": {"number": 5000}}}}]}}]}}
    created = agent(c, "apply", "-f", "-", input=json.dumps(ingress))
    assert created.returncode != 0 and 'The Ingress "evil" is invalid' in created.stderr
    assert "spec.rules[0].host" in created.stderr
    app_ingress = _json(agent(c, "get", "ingress", "-n", NS, "-o", "json"))["items"][0]["metadata"]["name"]
    patched = agent(c, "patch", "ingress", app_ingress, "-n", NS, "--type=json", "-p",
                    json.dumps([{"op": "replace", "path": "/spec/rules/0/host", "value": EVIL_HOST}]))
    assert patched.returncode != 0 and "spec.rules[0].host" in patched.stderr
    path = agent(c, "patch", "ingress", app_ingress, "-n", NS, "--type=json", "-p",
                 json.dumps([{"op": "replace", "path": "/spec/rules/0/http/paths/0/path", "value": "/a/../b"}]))
    assert path.returncode != 0 and "spec.rules[0].http.paths[0].path" in path.stderr


def test_the_ingress_controllers_token_reads_only_what_it_serves(cluster):
    """Were the controller's token stolen anyway, it opens no Secret but the TLS ones Ingresses name."""
    c = cluster
    token = admin(c, "create", "token", "ingress-nginx", "-n", "ingress-nginx", "--duration=10m")
    assert token.returncode == 0, token.stderr
    config = c["work"] / "ingress.kubeconfig"
    server = _json(admin(c, "config", "view", "--raw", "--minify", "-o", "json"))["clusters"][0]["cluster"]
    config.write_text(json.dumps({"apiVersion": "v1", "kind": "Config", "current-context": "c",
                                  "clusters": [{"name": "c", "cluster": server}],
                                  "users": [{"name": "u", "user": {"token": token.stdout.strip()}}],
                                  "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}))
    tls = _json(admin(c, "get", "ingress", "-n", NS, "-o", "json"))["items"][0]["spec"]["tls"][0]["secretName"]

    def can(*args: str) -> str:
        return kubectl(config, "auth", "can-i", *args).stdout.strip()

    assert can("list", "secrets", "-A") == "no"
    for namespace in ("sregym-system", "hotel-workload", "observability", "kube-system", NS):
        assert can("list", "secrets", "-n", namespace) == "no", namespace
    for resource in ("configmaps", "pods", "namespaces"):
        assert can("list", resource, "-A") == "no", resource
    assert kubectl(config, "get", "secret", tls, "-n", NS).returncode == 0  # the one it serves
    # ...and it still serves the app's own certificate, not its fallback
    assert _served_certificate_issuer(c) != "Kubernetes Ingress Controller Fake Certificate"


def _served_certificate_issuer(c) -> str:
    import ssl

    from cryptography import x509
    from cryptography.x509.oid import NameOID

    ingress = _json(admin(c, "get", "ingress", "-n", NS, "-o", "json"))["items"][0]
    host = ingress["spec"]["rules"][0]["host"]
    svc = _json(admin(c, "get", "svc", "ingress-nginx-controller", "-n", "ingress-nginx", "-o", "json"))
    address = svc["spec"]["clusterIP"]
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    deadline = time.monotonic() + 60  # the controller polls once a second; a hang-only bound
    while True:
        try:
            with socket.create_connection((address, 443), timeout=5) as raw, \
                    context.wrap_socket(raw, server_hostname=host) as tls:
                cert = x509.load_der_x509_certificate(tls.getpeercert(binary_form=True))
            name = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
            issuer = name[0].value if name else ""
            if issuer != "Kubernetes Ingress Controller Fake Certificate" or time.monotonic() > deadline:
                return str(issuer)
        except OSError:
            if time.monotonic() > deadline:
                raise
        time.sleep(1)


# --------------------------------------------------------------------------- attack 4: endpoints




def _hidden_targets(c) -> dict[str, tuple[str, int]]:
    """(ip, port) of what an app pod must never reach: the generator's pod, Prometheus' pod, the API
    server, and a listener on the host's 127.0.0.1 (as the agent API is)."""
    gen = _running(c, "app.kubernetes.io/name=workload-generator", "hotel-workload")
    gen_port = gen["spec"]["containers"][0].get("ports", [{}])[0].get("containerPort", 8089)
    prom = _running(c, "app=prometheus", "observability")
    api = _json(admin(c, "get", "endpoints", "kubernetes", "-n", "default", "-o", "json"))["subsets"][0]
    return {"generator": (gen["status"]["podIP"], int(gen_port)), "prometheus": (prom["status"]["podIP"], 9090),
            "apiserver": (api["addresses"][0]["ip"], int(api["ports"][0]["port"]))}


def _endpoints(ip: str, port: int) -> str:
    return json.dumps({"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "side-door", "namespace": NS},
                       "subsets": [{"addresses": [{"ip": ip}], "ports": [{"port": port}]}]})


def test_endpoints_cannot_lead_into_the_hidden_namespaces_or_the_host(cluster):
    c = cluster
    host_listener = socket.socket()
    host_listener.bind(("127.0.0.1", 0))
    host_listener.listen(8)
    targets = {**_hidden_targets(c), "host": host_listener.getsockname()}
    try:
        service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "side-door", "namespace": NS},
                   "spec": {"ports": [{"port": 8080, "targetPort": 8080}]}}
        assert agent(c, "apply", "-f", "-", input=json.dumps(service)).returncode == 0
        for what, (ip, port) in targets.items():
            written = agent(c, "apply", "-f", "-", input=_endpoints(ip, port))
            assert written.returncode != 0, what
            assert "subsets[0].addresses[0].ip" in written.stderr and "Invalid" in written.stderr, what
        # defence in depth: Endpoints the API let through (here: written by the admin) are not forwarded
        ip = _json(admin(c, "get", "svc", "side-door", "-n", NS, "-o", "json"))["spec"]["clusterIP"]
        frontend = _running(c, "app.kubernetes.io/name=frontend")["metadata"]["name"]
        for what, (target_ip, port) in targets.items():
            assert admin(c, "apply", "-f", "-", input=_endpoints(target_ip, port)).returncode == 0
            time.sleep(0.5)  # the proxy applies an Endpoints change within milliseconds
            probe = agent(c, "exec", "-n", NS, frontend, "--", *connect_args(sys.executable, f"{ip}:8080", get="/stats"))
            assert probe.returncode == 0, probe.stderr
            assert "refused" in probe.stdout, (what, probe.stdout)
        # the positive control: from the host (outside the pods' cgroup) each target does answer
        for what, (target_ip, port) in targets.items():
            with socket.create_connection((target_ip, port), timeout=5):
                pass
    finally:
        host_listener.close()


# --------------------------------------------------------------------------- the grant names no layer


def test_every_attempt_holds_the_same_cluster_rights_whatever_its_fault(cluster):
    """Round 7's third finding: ``kubectl auth can-i --list`` named the fault's layer (coredns rights only
    under a DNS fault). Two attempt identities made as ``sregym run`` makes them, one for a DNS fault and
    one for a database fault, list the same rights; the database attempt's write to CoreDNS is accepted
    (a refusal would tell it CoreDNS is not the fault), fails the mitigation while it stands and is undone."""
    from sregym_core.conductor.agent_access import grant_agent_access, revoke_agent_access
    from sregym_core.conductor.grants import GrantGuard, grant_extra, revoke_grants
    from sregym_core.conductor.kube import Kube
    from sregym_core.grant_rules import uniform_grants
    from sregym_core.plugins import new_plugin_host

    c = cluster
    problems = new_plugin_host().get_problems()
    known = [g for p in problems.values() for g in p.agent_access]
    kube = Kube(c["admin"], kubectl=KUBECTL)
    accounts = {"hotel-dns-nxdomain-geo": "agent-rights-dns", "hotel-db-revoke-geo": "agent-rights-db"}
    listings, guard = {}, None
    try:
        for problem_id, account in accounts.items():
            config = grant_agent_access(kube, [NS], c["work"] / f"{account}.kubeconfig", account=account,
                                        expiration_seconds=600)
            granted, held = uniform_grants(problems[problem_id].agent_access, known, NS)
            grant_extra(kube, account, granted, NS, held=held)
            listings[problem_id] = [sorted(kubectl(config, "auth", "can-i", "--list", *scope).stdout.splitlines())
                                    for scope in (("-n", "kube-system"), ())]
            if problem_id == "hotel-db-revoke-geo":
                guard = GrantGuard(kube, granted, NS, held=held)
                guard.snapshot()
                guard.publish(True)  # as during an attempt: the embedded API server admits by the grants
                db_agent = config
        dns_rights, db_rights = listings.values()
        assert dns_rights == db_rights
        assert any("coredns" in line and "patch" in line for line in db_rights[0]), db_rights[0]
        # the database attempt writes CoreDNS within what a DNS attempt may: accepted, then held against it
        corefile = _json(admin(c, "get", "configmap", "coredns", "-n", "kube-system", "-o", "json"))["data"]["Corefile"]
        fewer = "\n".join(line for line in corefile.splitlines() if "errors" not in line.split()) + "\n"
        assert fewer != corefile
        written = kubectl(db_agent, "patch", "configmap", "coredns", "-n", "kube-system", "--type=merge",
                          "-p", json.dumps({"data": {"Corefile": fewer}}))
        assert written.returncode == 0, written.stderr
        assert guard.check() == []
        held_change = guard.held_changes()
        assert held_change and held_change[0]["object"] == "configmaps/coredns"
        guard.restore_held()
        assert _json(admin(c, "get", "configmap", "coredns", "-n", "kube-system", "-o", "json"))["data"][
            "Corefile"] == corefile
        assert guard.held_changes() == []
    finally:
        if guard is not None:
            guard.publish(False)
        for account in accounts.values():
            revoke_grants(kube, account)
            revoke_agent_access(kube, [NS], account)


# --------------------------------------------------------------------------- a granted object's existence


def _granted_objects_as_the_agent_reads_them(config: Path, grants) -> dict[str, str]:
    """Each granted object's name -> "found" or kubectl's refusal, read with the agent's kubeconfig."""
    seen = {}
    for grant in grants:
        resource = f"{grant.resource}.{grant.group}" if grant.group else grant.resource
        scope = ("-n", grant.namespace) if grant.namespace else ()
        done = kubectl(config, "get", resource, grant.name, *scope, "-o", "name")
        seen[grant.name] = "found" if done.returncode == 0 else done.stderr.strip()
    return seen


def test_every_granted_object_exists_whatever_the_fault_and_a_fault_changes_it_in_place(cluster):
    """Round 8's second finding: the listing was the same everywhere, but the webhook configuration and the
    BGP peer it names existed only under their own faults, so one ``get`` named the fault. As an attempt
    does, every granted object with a standing form is created before injection: the agent finds every
    name it holds rights on, on a database problem as on the webhook's. The webhook fault then changes
    the standing configuration in place, its recover puts the standing form back, and the attempt's end
    removes only what it created."""
    import asyncio

    from sregym_core.conductor.agent_access import grant_agent_access, revoke_agent_access
    from sregym_core.conductor.grants import grant_extra, revoke_grants
    from sregym_core.conductor.kube import Kube
    from sregym_core.conductor.standing import stand_up, take_down
    from sregym_core.faults import FaultContext, call_fault
    from sregym_core.grant_rules import uniform_grants
    from sregym_core.plugins import new_plugin_host
    from sregym_core.types import Target

    c = cluster
    host = new_plugin_host()
    problems = host.get_problems()
    known = [g for p in problems.values() for g in p.agent_access]
    kube = Kube(c["admin"], kubectl=KUBECTL)
    hook = f"pod-admission-{NS}"
    hook_path = f"/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/{hook}"
    seen: dict[str, dict[str, str]] = {}
    created_all: list[str] = []
    grants_account = "agent-standing"
    config = grant_agent_access(kube, [NS], c["work"] / f"{grants_account}.kubeconfig", account=grants_account,
                                expiration_seconds=600)
    try:
        for problem_id in ("hotel-db-revoke-geo", "hotel-admission-webhook-ca-mismatch-rate"):
            granted, held = uniform_grants(problems[problem_id].agent_access, known, NS)
            grant_extra(kube, grants_account, granted, NS, held=held)
            created = stand_up(kube, [*granted, *held], NS)
            created_all += created
            seen[problem_id] = _granted_objects_as_the_agent_reads_them(config, [*granted, *held])
            revoke_grants(kube, grants_account)
        db, webhook = seen.values()
        assert db == webhook, seen  # found or not alike (the session's one-node cluster has no node-2 drop-in)
        assert db[hook] == db["peer-with-route-reflectors"] == db["kubelet-config-node-1"] == "found", db
        assert kube.get(hook_path).get("webhooks") in (None, [])  # the standing form: no webhook

        spec = host.get_faults()["admission-webhook-ca-mismatch"]
        app = host.get_apps()["hotel-reservation"]
        target = Target(app=app, component=app.component("rate"), namespace=NS)
        ctx = FaultContext(kubeconfig=c["admin"], namespace=NS, app=app, cluster=None, kubectl_path=KUBECTL)
        asyncio.run(call_fault(spec.impl.inject, ctx, target, {}))
        try:
            changed = kube.get(hook_path)
            assert len(changed["webhooks"]) == 1 and changed["metadata"]["name"] == hook
        finally:
            asyncio.run(call_fault(spec.impl.recover, ctx, target, {}))
        assert kube.get(hook_path).get("webhooks") in (None, [])  # put back, not deleted
        take_down(kube, created_all)
        assert not kube.exists(hook_path)  # this attempt made it: gone
        # the node's own drop-in was not the attempt's to remove
        assert kube.exists("/api/v1/namespaces/kube-system/configmaps/kubelet-config-node-1")
        # rate admits pods again: its ReplicaSet brings it back (the module's other tests share the app)
        rolled = admin(c, "rollout", "status", "deployment/rate", "-n", NS, "--timeout=180s")
        assert rolled.returncode == 0, rolled.stderr
    finally:
        take_down(kube, created_all)
        revoke_grants(kube, grants_account)
        revoke_agent_access(kube, [NS], grants_account)


def test_what_a_dead_attempt_left_in_the_granted_objects_is_put_back_by_the_next_one(cluster):
    """Round 8: a conductor that died mid-attempt left a granted object changed (the next attempt's guard
    compares with its own snapshot, so it neither flagged nor restored it). The journal an attempt writes
    before injecting is read by the next one: the Corefile the dead attempt's fault changed is put back,
    the standing object it created is removed. Round 9: a write that lands after a normal end (a body held
    back past the revocation) is put back by the next attempt; a change long after is left alone."""
    from sregym_core.conductor import journal
    from sregym_core.conductor.kube import Kube
    from sregym_core.conductor.standing import stand_up
    from sregym_core.grant_rules import uniform_grants
    from sregym_core.plugins import new_plugin_host

    c = cluster
    problems = new_plugin_host().get_problems()
    known = [g for p in problems.values() for g in p.agent_access]
    granted, held = uniform_grants(problems["hotel-dns-nxdomain-geo"].agent_access, known, NS)
    every = [*granted, *held]
    kube = Kube(c["admin"], kubectl=KUBECTL)
    dns = "/api/v1/namespaces/kube-system/configmaps/coredns"
    hook = f"/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/pod-admission-{NS}"
    corefile = kube.get(dns)["data"]["Corefile"]
    journal_path = f"/api/v1/namespaces/{journal.JOURNAL[0]}/configmaps/{journal.JOURNAL[1]}"
    try:
        # the attempt that dies: journal, standing objects, its fault's change, and then nothing
        recorded = journal.open_journal(kube, every, NS, "dead-attempt")
        assert dns in recorded
        created = stand_up(kube, every, NS)
        assert hook in created
        journal.note_created(kube, recorded, created, "dead-attempt")
        # (a comment: the shared cluster's DNS must keep answering while this test runs)
        broken = corefile + "# left by the attempt that died\n"
        current = kube.get(dns)
        kube.request("PUT", dns, {**current, "data": {**current["data"], "Corefile": broken}})
        # the agent cannot read the journal (the benchmark's namespace is hidden)
        assert agent(c, "get", "configmap", journal.JOURNAL[1], "-n", journal.JOURNAL[0]).returncode != 0

        # the next attempt finds the journal and mends before it writes its own
        journal.open_journal(kube, every, NS, "next-attempt")
        assert kube.get(dns)["data"]["Corefile"] == corefile
        assert not kube.exists(hook)
        assert kube.get(journal_path)["data"]["attempt"] == "next-attempt"
        journal.seal(kube, every, NS, "next-attempt")  # it ended normally

        # a write of its identity that lands after its end (a held-back body) is put back by the attempt after it
        current = kube.get(dns)
        kube.request("PUT", dns, {**current, "data": {**current["data"], "Corefile": corefile + "# late\n"}})
        journal.open_journal(kube, every, NS, "third-attempt")
        assert kube.get(dns)["data"]["Corefile"] == corefile
        journal.seal(kube, every, NS, "third-attempt")

        # a change long after the last attempt (an operator's) is nobody's to undo
        sealed = kube.get(journal_path)
        sealed["data"]["sealed_at"] = repr(time.time() - journal.LATE_WRITE_WINDOW_S - 60)
        kube.request("PUT", journal_path, sealed)
        current = kube.get(dns)
        kube.request("PUT", dns, {**current, "data": {**current["data"], "Corefile": corefile + "\n"}})
        journal.open_journal(kube, every, NS, "after-the-operator")
        assert kube.get(dns)["data"]["Corefile"] == corefile + "\n"
    finally:
        journal.close(kube)
        current = kube.get(dns)
        if current["data"]["Corefile"] != corefile:
            kube.request("PUT", dns, {**current, "data": {**current["data"], "Corefile": corefile}})
        if kube.exists(hook):
            kube.request("DELETE", hook)
