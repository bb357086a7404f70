"""A problem's extra agent rights (agent_access): what may be granted, and what counts as a change
beyond the grant. The live proof (real RBAC, real kubectl as the agent) is in
faults/sregym-fault-cluster/tests/test_cluster_faults_live.py::test_agent_grant_is_confined."""

from __future__ import annotations

import copy

import attrs
import pytest

from sregym_core.conductor.grants import GrantGuard, check_grant, resolve, violations
from sregym_core.conductor.kube import ApiStatusError, Kube
from sregym_core.errors import ConfigError
from sregym_core.problems import parse_problem
from sregym_core.types import AgentGrant

DNS = AgentGrant(resource="configmaps", namespace="kube-system", name="coredns", verbs=("get", "patch", "update"),
                 may_change={"data.Corefile": "remove-lines"})
HOOK = AgentGrant(group="admissionregistration.k8s.io", resource="validatingwebhookconfigurations",
                  name="pod-admission-{namespace}", verbs=("get", "patch"),
                  may_change={"webhooks[*].clientConfig.caBundle": "any"})

COREFILE = """.:53 {
    template IN A hotel.svc.cluster.local {
        match "^geo[.]hotel[.]svc[.]cluster[.]local[.]$"
        rcode NXDOMAIN
        fallthrough
    }
    errors
    kubernetes cluster.local in-addr.arpa ip6.arpa
    forward . /etc/resolv.conf
}
"""


def _cm(text: str, rv: str = "1") -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "coredns", "namespace": "kube-system", "resourceVersion": rv},
            "data": {"Corefile": text}}


def _hook(ca: str = "T0xE", **changes) -> dict:
    hook = {"name": "pods.pod-admission.ops.internal", "failurePolicy": "Fail",
            "clientConfig": {"service": {"namespace": "hotel", "name": "pod-admission-webhook"}, "caBundle": ca},
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "hotel"}},
            "rules": [{"operations": ["CREATE"], "resources": ["pods"]}]}
    hook.update(changes)
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": "pod-admission-hotel", "resourceVersion": "7"}, "webhooks": [hook]}


@pytest.mark.parametrize("grant, why", [
    (AgentGrant(resource="secrets", namespace="kube-system", name="x", verbs=["get"], may_change={"data": "any"}),
     "cannot be granted"),
    (AgentGrant(group="rbac.authorization.k8s.io", resource="clusterroles", name="x", verbs=["patch"],
                may_change={"rules": "any"}), "cannot be granted"),
    (AgentGrant(resource="configmaps", name="coredns", verbs=["get"], may_change={"data": "any"}), "namespaced"),
    # status is what nodes and controllers report (issue 34): no subresource is ever grantable
    (AgentGrant(resource="pods/status", namespace="kube-system", name="x", verbs=["patch"],
                may_change={"status": "any"}), "cannot be granted"),
    (AgentGrant(group="apps", resource="daemonsets/status", namespace="kube-system", name="kube-proxy",
                verbs=["patch"], may_change={"status": "any"}), "cannot be granted"),
    (AgentGrant(resource="configmaps", namespace="sregym-system", name="x", verbs=["get"],
                may_change={"data": "any"}), "benchmark's own"),
    (AgentGrant(resource="configmaps", namespace="kube-system", name="coredns", verbs=["delete"],
                may_change={"data": "any"}), "cannot be granted"),
    (AgentGrant(resource="configmaps", namespace="kube-system", name="coredns", verbs=["list"],
                may_change={"data": "any"}), "no create, delete, list or watch"),
    (AgentGrant(resource="configmaps", namespace="kube-system", name="coredns", verbs=["patch"],
                may_change={"metadata.labels": "any"}), "metadata"),
    (AgentGrant(group="admissionregistration.k8s.io", resource="validatingwebhookconfigurations",
                namespace="kube-system", name="x", verbs=["patch"], may_change={"webhooks": "any"}), "cluster-scoped"),
])
def test_only_named_objects_of_a_few_kinds_with_read_and_write_verbs_can_be_granted(grant, why):
    assert why in (check_grant(grant) or "")


def test_the_problem_files_grants_pass():
    assert check_grant(DNS) is None and check_grant(HOOK) is None
    assert resolve(HOOK, "hotel").name == "pod-admission-hotel"


def test_a_problem_file_with_a_bad_grant_names_its_json_path():
    doc = {"id": "p", "app": "a", "faults": [{"fault": "f", "target": "t"}],
           "agent_access": [{"resource": "secrets", "namespace": "kube-system", "name": "x", "verbs": ["get"],
                             "may_change": {"data": "any"}}]}
    with pytest.raises(ConfigError) as info:
        parse_problem(doc)
    assert ("$.agent_access[0]", check_grant(AgentGrant(resource="secrets", namespace="kube-system", name="x",
                                                         verbs=["get"], may_change={"data": "any"}))) in info.value.errors
    doc["agent_access"][0].update(resource="configmaps", verbs=["escalate"])
    with pytest.raises(ConfigError):  # the schema refuses the verb
        parse_problem(doc)


def test_deleting_corefile_lines_is_within_the_grant_adding_any_is_not():
    fixed = "\n".join(line for line in COREFILE.splitlines() if "template" not in line and "match" not in line
                      and "rcode" not in line and "fallthrough" not in line)
    fixed = fixed.replace("    }\n    errors", "    errors", 1)
    assert violations(_cm(COREFILE), _cm(fixed, "2"), DNS) == []
    # commenting the template out is deleting its lines too
    commented = COREFILE.replace("    template", "    # template")
    assert violations(_cm(COREFILE), _cm(commented, "2"), DNS) == []
    redirected = COREFILE.replace("    errors", "    rewrite name frontend.hotel.svc.cluster.local stub.hotel.svc.cluster.local\n"
                                             "    errors")
    assert violations(_cm(COREFILE), _cm(redirected, "2"), DNS)
    # reordering is adding a line where there was none
    reordered = COREFILE.replace("    errors\n    kubernetes cluster.local in-addr.arpa ip6.arpa\n",
                                 "    kubernetes cluster.local in-addr.arpa ip6.arpa\n    errors\n")
    assert violations(_cm(COREFILE), _cm(reordered, "2"), DNS)
    other = _cm(COREFILE, "2")
    other["data"]["extra"] = "x"
    assert violations(_cm(COREFILE), other, DNS)  # a field outside the grant
    assert violations(_cm(COREFILE), None, DNS)  # deleted


def test_only_the_ca_bundle_of_the_webhook_may_change():
    hook = resolve(HOOK, "hotel")
    before = _hook()
    assert violations(before, _hook(ca="TkVX"), hook) == []
    last_applied = _hook(ca="TkVX")
    last_applied["metadata"].update(resourceVersion="9", annotations={
        "kubectl.kubernetes.io/last-applied-configuration": "{}"})
    assert violations(before, last_applied, hook) == []
    assert violations(before, _hook(failurePolicy="Ignore"), hook)
    assert violations(before, _hook(namespaceSelector={}), hook)  # would send every namespace's pods
    widened = _hook()
    widened["webhooks"][0]["rules"] = [{"operations": ["*"], "resources": ["*"]}]
    assert violations(before, widened, hook)
    elsewhere = _hook()
    elsewhere["webhooks"][0]["clientConfig"] = {"url": "https://127.0.0.1:9/steal", "caBundle": "TkVX"}
    assert violations(before, elsewhere, hook)
    two = _hook()
    two["webhooks"].append(copy.deepcopy(two["webhooks"][0]))
    assert violations(before, two, hook)


class _FakeKube:
    """The objects the guard reads and writes (the guard's own logic under test, not the API)."""

    # Kube's own answers to a missing object, over this transport
    find, delete, exists = Kube.find, Kube.delete, Kube.exists

    def __init__(self, objects: dict[str, dict]) -> None:
        self.objects = objects
        self.writes: list[tuple[str, str]] = []

    def get(self, path: str) -> dict:
        if path not in self.objects:
            raise ApiStatusError(404, "not found")
        return copy.deepcopy(self.objects[path])

    def request(self, method: str, path: str, body=None):
        self.writes.append((method, path))
        if method == "PUT":
            assert body["metadata"]["resourceVersion"] == self.objects[path]["metadata"]["resourceVersion"]
            self.objects[path] = copy.deepcopy(body)
        return body


def test_the_guard_undoes_and_records_a_change_beyond_the_grant_and_keeps_an_allowed_one():
    path = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/pod-admission-hotel"
    kube = _FakeKube({path: _hook()})
    guard = GrantGuard(kube, [HOOK], "hotel")
    guard.snapshot()
    kube.objects[path] = _hook(ca="TkVX")  # the fix
    assert guard.check() == [] and kube.writes == []
    kube.objects[path] = _hook(ca="TkVX", failurePolicy="Ignore")
    kube.objects[path]["metadata"]["resourceVersion"] = "8"
    recorded = guard.check()
    assert len(recorded) == 1 and "changed outside" in recorded[0]["violations"][0]
    assert kube.writes == [("PUT", path)]
    assert kube.objects[path]["webhooks"][0]["failurePolicy"] == "Fail"  # undone
    assert guard.check() == recorded  # nothing new once restored


def test_the_guard_publishes_the_grants_for_admission_while_it_watches():
    """A cluster that checks grants at admission (the embedded API server) refuses a write beyond them
    before it is stored; the guard leaves them where it reads them and takes them away at the end."""
    import asyncio

    from sregym_core.grant_rules import GRANTS_CONFIGMAP, grants_from_configmap

    path = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/pod-admission-hotel"
    kube = _FakeKube({path: _hook()})
    published = {}

    def request(method, path_, body=None):
        kube.writes.append((method, path_))
        if method == "POST" and path_.endswith("/configmaps"):
            published["cm"] = body
        return body

    kube.request = request
    guard = GrantGuard(kube, [HOOK], "hotel")

    async def run():
        await guard.start()
        assert grants_from_configmap(published["cm"]) == guard.grants
        await guard.stop()

    asyncio.run(run())
    ns, name = GRANTS_CONFIGMAP
    assert ("POST", f"/api/v1/namespaces/{ns}/configmaps") in kube.writes
    assert kube.writes[-1] == ("DELETE", f"/api/v1/namespaces/{ns}/configmaps/{name}")


# --------------------------------------------------------------------------- the same rights in every attempt


def _rights(granted: list[AgentGrant], held: list[AgentGrant]) -> set:
    """What RBAC shows the agent (``kubectl auth can-i --list``): objects and verbs, not which are held."""
    return {(g.group, g.resource, g.namespace, g.name, g.verbs) for g in [*granted, *held]}


def test_every_attempt_holds_the_same_rights_whatever_its_fault():
    """Issue 34: the grant named the fault's layer (``can-i --list`` showed coredns only for a DNS fault)."""
    from sregym_core.grant_rules import uniform_grants
    from sregym_core.plugins import new_plugin_host

    problems = list(new_plugin_host().get_problems().values())
    known = [g for p in problems for g in p.agent_access]
    assert {g.name for g in known} >= {"coredns", "kube-proxy"}  # the catalogue grants cluster objects
    by_app: dict[str, set] = {}
    for problem in problems:
        granted, held = uniform_grants(problem.agent_access, known, "hotel")
        by_app.setdefault(problem.app, set()).add(frozenset(_rights(granted, held)))
        # the problem's own writable objects keep their own limits; no object is both granted and held
        own = {(g.resource, g.name.replace("{namespace}", "hotel")): g for g in problem.agent_access
               if {"patch", "update"} & set(g.verbs)}
        assert {(g.resource, g.name) for g in granted} == set(own)
        assert all(g.may_change == own[(g.resource, g.name)].may_change for g in granted)
        assert not {(g.resource, g.name) for g in granted} & {(g.resource, g.name) for g in held}
    assert all(len(kinds) == 1 for kinds in by_app.values()), {a: len(k) for a, k in by_app.items()}


def test_held_objects_take_the_widest_limits_and_a_read_only_own_grant_is_held():
    from sregym_core.grant_rules import uniform_grants

    read_only = AgentGrant(resource="configmaps", namespace="kube-system", name="kubelet-config", verbs=("get",),
                           may_change={"data.kubelet": "remove-lines"})
    writable = AgentGrant(resource="configmaps", namespace="kube-system", name="kubelet-config",
                          verbs=("get", "patch", "update"), may_change={"data.kubelet": "any"})
    granted, held = uniform_grants([read_only], [DNS, HOOK, writable], "hotel")
    assert granted == []
    by_name = {g.name: g for g in held}
    assert set(by_name) == {"coredns", "pod-admission-hotel", "kubelet-config"}
    assert by_name["kubelet-config"].verbs == ("get", "patch", "update")
    assert by_name["kubelet-config"].may_change == {"data.kubelet": "any"}  # as where it is the fault
    assert by_name["pod-admission-hotel"].verbs == ("get", "patch")
    granted, held = uniform_grants([DNS], [DNS, HOOK], "hotel")
    assert granted == [DNS] and [g.name for g in held] == ["pod-admission-hotel"]


def test_a_held_object_may_be_written_but_a_change_that_stands_fails_and_is_undone_at_the_end():
    """A write within the widest limits is not refused (refusing it would tell the agent the object is not
    the fault's); it fails the mitigation while it stands, and the guard puts it back when the attempt ends."""
    path = "/api/v1/namespaces/kube-system/configmaps/coredns"
    kube = _FakeKube({path: _cm(COREFILE)})
    guard = GrantGuard(kube, [], "hotel", held=[DNS])
    guard.snapshot()
    assert guard.held_changes() == []
    kube.objects[path] = _cm(COREFILE.replace("        rcode NXDOMAIN\n", ""), rv="2")  # within remove-lines
    assert guard.check() == [] and kube.writes == []  # not undone at once, not a violation of the grant
    changed = guard.held_changes()
    assert len(changed) == 1 and "does not involve it" in changed[0]["violations"][0]
    guard.restore_held()
    assert kube.objects[path]["data"]["Corefile"] == COREFILE and guard.held_changes() == []
    kube.objects[path] = _cm(COREFILE + "rewrite name a b\n", rv="3")  # beyond the limits: undone at once
    assert guard.check() and kube.objects[path]["data"]["Corefile"] == COREFILE


# --------------------------------------------------------------------------- objects that stand in every attempt

STANDING_HOOK = AgentGrant(group="admissionregistration.k8s.io", resource="validatingwebhookconfigurations",
                           name="pod-admission-{namespace}", verbs=("get", "patch"),
                           may_change={"webhooks[*].clientConfig.caBundle": "any"},
                           standing={"apiVersion": "admissionregistration.k8s.io/v1",
                                     "kind": "ValidatingWebhookConfiguration", "webhooks": []})


@pytest.mark.parametrize("standing, why", [
    ({"kind": "ValidatingWebhookConfiguration"}, "needs apiVersion"),
    ({"apiVersion": "v1", "kind": "ConfigMap"}, "not of the grant's group"),
    ({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
      "metadata": {"name": "other"}}, "gives no metadata"),
    (["not", "a", "mapping"], "healthy form"),
])
def test_a_standing_form_must_be_an_object_of_the_grants_kind_without_a_name_of_its_own(standing, why):
    assert why in (check_grant(attrs.evolve(STANDING_HOOK, standing=standing)) or "")
    assert check_grant(STANDING_HOOK) is None


def test_every_attempt_carries_the_standing_form_of_an_object_whatever_problem_gives_it():
    from sregym_core.grant_rules import uniform_grants

    plain = attrs.evolve(STANDING_HOOK, standing=None)
    granted, held = uniform_grants([DNS], [plain, STANDING_HOOK], "hotel")
    assert [g.name for g in held] == ["pod-admission-hotel"] and held[0].standing == STANDING_HOOK.standing
    granted, held = uniform_grants([plain], [STANDING_HOOK], "hotel")
    assert granted[0].standing == STANDING_HOOK.standing


class _ServerKube:
    """A unit stand-in for the API server's create/delete answers (the live proof is
    tests/adversarial/test_cluster_integrity.py::test_every_granted_object_exists_whatever_the_fault...)."""

    find, delete, exists = Kube.find, Kube.delete, Kube.exists  # Kube's own, over this transport

    def __init__(self, existing: set[str], served: set[str]) -> None:
        self.objects, self.served, self.calls = set(existing), served, []

    def request(self, method: str, path: str, body=None):
        self.calls.append((method, path))
        if method == "POST":
            if path not in self.served:
                raise ApiStatusError(404, "the server could not find the requested resource")
            name = f"{path}/{body['metadata']['name']}"
            if name in self.objects:
                raise ApiStatusError(409, "already exists")
            self.objects.add(name)
            return body
        if path not in self.objects:
            raise ApiStatusError(404, "not found")
        self.objects.discard(path)


def test_standing_objects_are_created_where_missing_and_only_those_are_removed():
    from sregym_core.conductor.standing import stand_up, standing_body, take_down

    hooks = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"
    peer = AgentGrant(group="crd.projectcalico.org", resource="bgppeers", name="peer", verbs=("get",),
                      may_change={"spec.peerSelector": "any"},
                      standing={"apiVersion": "crd.projectcalico.org/v1", "kind": "BGPPeer", "spec": {}})
    dropin = AgentGrant(resource="configmaps", namespace="kube-system", name="kubelet-config-node-1", verbs=("get",),
                        may_change={"data.kubelet": "any"}, standing={"apiVersion": "v1", "kind": "ConfigMap"})
    existing = "/api/v1/namespaces/kube-system/configmaps/kubelet-config-node-1"
    kube = _ServerKube({existing}, served={hooks, "/api/v1/namespaces/kube-system/configmaps"})  # no Calico here
    created = stand_up(kube, [STANDING_HOOK, peer, dropin, DNS], "hotel")
    assert created == [f"{hooks}/pod-admission-hotel"]
    assert standing_body(dropin)["metadata"] == {"name": "kubelet-config-node-1", "namespace": "kube-system"}
    take_down(kube, created)
    assert kube.objects == {existing}  # the one it found stays
    take_down(kube, created)  # gone already: fine
