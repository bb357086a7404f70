"""finalizer-deadlock is present while the guardian may not write ConfigMaps, whatever was done to the
symptoms (red-team round 9, finding 4: the finalizer removed by hand and the rotated ConfigMap created by
hand passed with the Role still read-only). Runs the real fault (inject, is_present, the reference fix,
recover) against a recording kubectl over the Social Network's rendered objects; the SubjectAccessReviews
the check sends are answered by the embedded API server's own RBAC authorizer over the same objects.
"""

from __future__ import annotations

import json
from typing import Any

import attrs
import pytest

from sregym_core.plugins import process_host
from sregym_core.testing.recording import RecordingFaultContext, recorded_fault

pytest.importorskip("sregym_app_social_network")
embedded_rbac = pytest.importorskip("sregym_cluster_embedded.apiserver.rbac")

from sregym_fault_cluster import finalizer  # noqa: E402

_RESOURCES = {"roles.rbac.authorization.k8s.io": "Role", "rolebindings.rbac.authorization.k8s.io": "RoleBinding",
              "clusterroles.rbac.authorization.k8s.io": "ClusterRole",
              "clusterrolebindings.rbac.authorization.k8s.io": "ClusterRoleBinding"}


class _Store:
    """The recording context's objects in the shape the embedded authorizer reads (``core.store``)."""

    def __init__(self, objects: dict[tuple[str, str, str], dict]) -> None:
        self.objects = objects

    def list(self, resource: str, namespace: str | None = None) -> list[dict]:
        kind, cluster = _RESOURCES[resource], resource.startswith("cluster")
        return [o for (k, ns, _), o in sorted(self.objects.items())
                if k == kind and (cluster or namespace is None or ns == namespace)]

    def get(self, resource: str, namespace: str | None, name: str) -> dict | None:
        return next((o for o in self.list(resource, namespace) if o["metadata"]["name"] == name), None)


@attrs.define
class AuthorizingContext(RecordingFaultContext):
    """A recording context that also answers ``kubectl create -f - -o json`` of a SubjectAccessReview, as the
    API server does: allowed when the stored Roles, ClusterRoles and their bindings grant the request."""

    def kubectl(self, *args: str, input: str | None = None, check: bool = True, timeout: float = 60.0) -> str:
        doc = json.loads(input) if input and input.lstrip().startswith("{") else {}
        if args[:1] == ("create",) and doc.get("kind") == "SubjectAccessReview":
            self.calls.append(args)
            spec = doc["spec"]
            user = embedded_rbac.UserInfo(name=spec["user"], groups=tuple(spec.get("groups") or ()))
            ra = spec["resourceAttributes"]
            request = embedded_rbac.Attributes(verb=ra["verb"], group=ra.get("group", ""), resource=ra["resource"],
                                               namespace=ra.get("namespace", ""), name=ra.get("name", ""))
            core: Any = type("Core", (), {"store": _Store(self.objects)})()
            allowed = embedded_rbac.Authorizer(core).allowed(user, request)
            return json.dumps({**doc, "status": {"allowed": allowed}})
        return super().kubectl(*args, input=input, check=check, timeout=timeout)


@pytest.fixture()
def setup():
    spec, target, ctx = recorded_fault(process_host(), "finalizer-deadlock", "social-network", "user-service",
                                       context=AuthorizingContext)
    name = finalizer.settings_name(target)
    # the guardian's first round, which inject waits for: the settings ConfigMap created and guarded
    _create(ctx, _settings(name, {"revision": "1", "log-format": "json"}, finalizers=[finalizer.FINALIZER]))
    spec.impl.inject(ctx, target, {"request_timeout": "5s"})
    # the rotation's delete as the API server keeps it: stamped, held by the finalizer the guardian cannot remove
    _create(ctx, {**_settings(name, {"revision": "1", "log-format": "json"}, finalizers=[finalizer.FINALIZER]),
                  "metadata": {"name": name, "deletionTimestamp": "2026-11-30T10:00:00Z",
                               "finalizers": [finalizer.FINALIZER], "labels": {finalizer.MANAGED_LABEL: "true"}}})
    return spec, target, ctx, name


def _settings(name: str, data: dict, finalizers: list[str] | None = None) -> dict:
    meta: dict = {"name": name, "labels": {finalizer.MANAGED_LABEL: "true"}}
    if finalizers:
        meta["finalizers"] = finalizers
    return {"apiVersion": "v1", "kind": "ConfigMap", "immutable": True, "data": data, "metadata": meta}


def _create(ctx, obj: dict) -> None:
    ctx.kubectl("delete", "configmap", obj["metadata"]["name"], "-n", ctx.namespace, "--ignore-not-found")
    ctx.kubectl("create", "-f", "-", "-n", ctx.namespace, input=json.dumps(obj))


def _hand_workaround(ctx, name: str) -> None:
    """Attack 4: the finalizer removed by hand (the API server then completes the deletion), and the rotated
    ConfigMap created by hand from the guardian's sources."""
    ctx.kubectl("patch", "configmap", name, "-n", ctx.namespace, "--type=json", "-p",
                json.dumps([{"op": "remove", "path": "/metadata/finalizers"}]))
    ctx.kubectl("delete", "configmap", name, "-n", ctx.namespace)
    sources = json.loads(ctx.kubectl("get", "configmap", finalizer.SOURCES, "-n", ctx.namespace, "-o", "json"))
    _create(ctx, _settings(name, json.loads(sources["data"][name])))


def _bind_guardian(ctx, role: str, resources: list[str], verbs: list[str]) -> dict:
    """A ClusterRole granting ``verbs`` on ``resources``, bound to the guardian's account in the namespace (the Role
    stays as it is); the ClusterRole is returned to be changed and applied again."""
    cluster_role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": role},
                    "rules": [{"apiGroups": [""], "resources": resources, "verbs": verbs}]}
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": f"guardian-{role}"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
               "subjects": [{"kind": "ServiceAccount", "name": finalizer.NAME, "namespace": ctx.namespace}]}
    for obj in (cluster_role, binding):
        ctx.kubectl("apply", "-f", "-", "-n", ctx.namespace, input=json.dumps(obj))
    return cluster_role


def _role_verbs(ctx) -> list[str]:
    role = json.loads(ctx.kubectl("get", "role", finalizer.NAME, "-n", ctx.namespace, "-o", "json"))
    return role["rules"][0]["verbs"]


def test_the_injected_rotation_is_stuck_and_the_guardian_may_not_write(setup):
    spec, target, ctx, name = setup
    assert _role_verbs(ctx) == ["get", "list", "watch"]
    assert not finalizer.guardian_can_rotate(ctx)
    assert spec.impl.is_present(ctx, target, {})


def test_the_hand_workaround_clears_the_symptoms_but_not_the_fault(setup):
    spec, target, ctx, name = setup
    _hand_workaround(ctx, name)
    # what the old invariant asked: no stuck deletion, the rotated key live: all clear
    assert not finalizer._stuck(ctx) and finalizer._rotated(ctx) and finalizer._needs_rotated(ctx, target)
    # the Role is still read-only: the next rotation deadlocks again
    assert spec.impl.is_present(ctx, target, {})


def test_rolling_the_component_back_or_deleting_the_guardian_is_no_fix(setup):
    spec, target, ctx, name = setup
    _hand_workaround(ctx, name)
    ctx.kubectl("scale", "deployment", finalizer.NAME, "-n", ctx.namespace, "--replicas=0")
    assert spec.impl.is_present(ctx, target, {})
    ctx.kubectl("delete", "deployment", finalizer.NAME, "-n", ctx.namespace)
    assert spec.impl.is_present(ctx, target, {})  # its sources still name the ConfigMap it should guard


def test_the_reference_fix_clears_it(setup):
    spec, target, ctx, name = setup
    # the reference fix restores the verbs and waits for the guardian's round (the recording has no controller:
    # the round is done here as the guardian would do it once it may write)
    ctx.kubectl("apply", "-f", "-", "-n", ctx.namespace, input=json.dumps(finalizer._role(ctx, finalizer.ALL_VERBS)))
    assert finalizer.guardian_can_rotate(ctx)
    assert spec.impl.is_present(ctx, target, {})  # the rotation itself is still stuck until the guardian's round
    _hand_workaround(ctx, name)
    spec.impl.reference_fix(ctx, target, {})
    assert not spec.impl.is_present(ctx, target, {})


def test_any_grant_that_lets_the_guardian_write_counts(setup):
    spec, target, ctx, name = setup
    _hand_workaround(ctx, name)
    # a ClusterRole bound in the namespace instead of the Role restored (the Role stays read-only)
    writer = _bind_guardian(ctx, "cm-writer", ["configmaps"], ["get", "create", "update"])
    assert spec.impl.is_present(ctx, target, {})  # no patch: the guardian still cannot remove its finalizer
    writer["rules"][0]["verbs"].append("patch")
    ctx.kubectl("apply", "-f", "-", "-n", ctx.namespace, input=json.dumps(writer))
    assert _role_verbs(ctx) == ["get", "list", "watch"]
    assert not spec.impl.is_present(ctx, target, {})


def test_after_recover_it_is_absent(setup):
    spec, target, ctx, name = setup
    spec.impl.recover(ctx, target, {})
    assert not spec.impl.is_present(ctx, target, {})


def test_a_grant_beyond_what_a_rotation_needs_is_no_fix(setup):
    """Red-team round 10, 5b: the guardian's account bound to the agent's own ClusterRole made it work again, with
    the rights to read Secrets, grant roles and start pods on top. Over-granting the controller is a new incident."""
    spec, target, ctx, name = setup
    _hand_workaround(ctx, name)
    broad = _bind_guardian(ctx, "agent-like", ["configmaps", "secrets", "pods"], ["*"])
    assert all(finalizer.may(ctx, finalizer.NAME, verb) for verb in finalizer.ROTATION_VERBS)
    assert finalizer.may(ctx, finalizer.NAME, "get", "secrets")
    assert not finalizer.guardian_can_rotate(ctx) and spec.impl.is_present(ctx, target, {})
    # the same binding narrowed to ConfigMaps is the fix
    broad["rules"][0]["resources"] = ["configmaps"]
    ctx.kubectl("apply", "-f", "-", "-n", ctx.namespace, input=json.dumps(broad))
    assert finalizer.guardian_can_rotate(ctx) and not spec.impl.is_present(ctx, target, {})
