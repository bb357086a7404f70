"""Static checks of every Kubernetes fault primitive (the live round trip is in the slow tests)."""

from __future__ import annotations

import sregym_fault_k8s.plugin
from sregym_core.faultkit import TemplateFault, pointer_get

from sregym_core.testing.contracts import FaultContract


class TestK8sFaults(FaultContract):
    plugin = sregym_fault_k8s.plugin
    # recover is the targeted change an SRE makes from what the cluster shows
    recover_is_the_fix = {
        **{name: "recover deletes the object the fault added (kubectl delete of the named policy/quota/range/pods)"
           for name in ("network-policy-block", "quota-admission", "limitrange-too-small", "priority-preemption",
                        "selector-pollution")},
        **{name: "recover recreates the object as the app ships it (what an SRE re-applies from the manifests)"
           for name in ("missing-configmap", "missing-secret", "missing-service", "configmap-drift")},
        **{name: "recover patches back only the field the fault changed (a targeted kubectl patch)"
           for name in ("selector-mismatch", "selector-pollution", "service-port-mismatch", "wrong-target-port",
                        "pvc-claim-mismatch")},
        "taint-no-toleration": "recover removes the taint from the nodes and the stray toleration (kubectl taint key-)",
    }


def test_at_least_35_primitives():
    assert len(sregym_fault_k8s.plugin.sregym_faults()) >= 35


def test_pointer_get_and_restore_ops():
    obj = {"spec": {"template": {"spec": {"containers": [{"name": "a", "image": "x:1"}]}}}}
    assert pointer_get(obj, "/spec/template/spec/containers/0/image") == "x:1"
    assert pointer_get(obj, "/spec/template/spec/containers/1/image") == {"$missing": True}
    assert pointer_get(obj, "/spec/replicas") == {"$missing": True}


class FakeCtx:
    """Records the patches a template fault sends (the code around TemplateFault)."""

    def __init__(self, obj):
        self.obj, self.state, self.namespace, self.patches = obj, {}, "ns", []

    def kubectl(self, *args, input=None, check=True):
        import json

        if args[0] == "get":
            return json.dumps(self.obj)
        if args[0] == "patch":
            import jsonpatch

            ops = json.loads(args[args.index("-p") + 1])
            self.patches.append(ops)
            self.obj = jsonpatch.apply_patch(self.obj, ops)
        return ""


def test_template_fault_round_trip_restores_exact_fields():
    from sregym_core.types import AppSpec, ComponentSpec, Target

    component = ComponentSpec(name="geo", ports=(8083,))
    target = Target(app=AppSpec(name="a", components=(component,)), component=component, namespace="ns")
    obj = {"metadata": {"name": "geo"}, "spec": {"replicas": 1, "template": {"spec": {"containers": [
        {"name": "geo", "image": "hotel:1.0", "env": [{"name": "A", "value": "1"}]}]}}}}
    ctx = FakeCtx(obj)

    def mutate(ctx, target, params, live):
        return [{"op": "add", "path": "/spec/template/spec/containers/0/image", "value": "hotel:404"},
                {"op": "add", "path": "/spec/template/spec/nodeSelector", "value": {"disk": "nvme"}}]

    fault = TemplateFault(mutate, truth=None)
    fault.inject(ctx, target, {})
    assert ctx.obj["spec"]["template"]["spec"]["containers"][0]["image"] == "hotel:404"
    assert fault.is_present(ctx, target, {}) is True
    fault.recover(ctx, target, {})
    assert ctx.obj["spec"]["template"]["spec"]["containers"][0]["image"] == "hotel:1.0"
    assert "nodeSelector" not in ctx.obj["spec"]["template"]["spec"]
    assert fault.is_present(ctx, target, {}) is False


def test_removed_element_counts_as_fixed_anywhere_in_its_list():
    from sregym_core.types import AppSpec, ComponentSpec, Target

    component = ComponentSpec(name="user", ports=(8086,))
    target = Target(app=AppSpec(name="a", components=(component,)), component=component, namespace="ns")
    env = [{"name": "A", "value": "1"}, {"name": "DB_PASSWORD", "value": "s"}, {"name": "C", "value": "3"}]
    obj = {"metadata": {"name": "user"}, "spec": {"template": {"spec": {"containers": [{"name": "user", "env": env}]}}}}
    ctx = FakeCtx(obj)

    def mutate(ctx, target, params, live):
        return [{"op": "remove", "path": "/spec/template/spec/containers/0/env/1"}]

    fault = TemplateFault(mutate, truth=None)
    fault.inject(ctx, target, {})
    assert fault.is_present(ctx, target, {}) is True
    fault.recover(ctx, target, {})
    assert ctx.obj["spec"]["template"]["spec"]["containers"][0]["env"] == env
    assert fault.is_present(ctx, target, {}) is False
    # an agent appending the variable at the end also fixes it
    ctx.obj["spec"]["template"]["spec"]["containers"][0]["env"] = [env[0], env[2], env[1]]
    assert fault.is_present(ctx, target, {}) is False


def test_injected_object_stays_present_when_the_api_server_defaults_fields_in():
    from sregym_core.types import AppSpec, ComponentSpec, Target

    component = ComponentSpec(name="user", ports=(8086,))
    target = Target(app=AppSpec(name="a", components=(component,)), component=component, namespace="ns")
    obj = {"metadata": {"name": "user"}, "spec": {"template": {"spec": {"containers": [{"name": "user"}]}}}}
    ctx = FakeCtx(obj)
    hook = {"name": "wait", "image": "busybox:1.36", "ports": [{"containerPort": 9100, "hostPort": 9100}]}

    def mutate(ctx, target, params, live):
        return [{"op": "add", "path": "/spec/template/spec/initContainers", "value": [hook]}]

    fault = TemplateFault(mutate, truth=None)
    fault.inject(ctx, target, {})
    # what the API server stores: the same container with defaults filled in
    stored = ctx.obj["spec"]["template"]["spec"]["initContainers"][0]
    stored.update(imagePullPolicy="IfNotPresent", terminationMessagePath="/dev/termination-log", resources={})
    stored["ports"][0]["protocol"] = "TCP"
    assert fault.is_present(ctx, target, {}) is True
    stored["image"] = "busybox:1.37"  # an agent changed what the fault set: no longer the injected value
    assert fault.is_present(ctx, target, {}) is False


def test_a_key_the_injection_removed_counts_as_fixed_once_it_is_back():
    from sregym_core.types import AppSpec, ComponentSpec, Target

    component = ComponentSpec(name="geo", ports=(8083,))
    target = Target(app=AppSpec(name="a", components=(component,)), component=component, namespace="ns")
    resources = {"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"memory": "256Mi"}}
    obj = {"metadata": {"name": "geo"}, "spec": {"template": {"spec": {"containers": [
        {"name": "geo", "resources": resources}]}}}}
    ctx = FakeCtx(obj)

    def mutate(ctx, target, params, live):
        return [{"op": "add", "path": "/spec/template/spec/containers/0/resources",
                 "value": {"requests": {"memory": "64Mi"}, "limits": {"memory": "256Mi"}}}]

    fault = TemplateFault(mutate, truth=None)
    fault.inject(ctx, target, {})
    assert fault.is_present(ctx, target, {}) is True
    ctx.obj["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "100m"
    assert fault.is_present(ctx, target, {}) is False


def test_a_container_inserted_at_the_front_is_removed_again_on_restore():
    from sregym_core.types import AppSpec, ComponentSpec, Target

    component = ComponentSpec(name="geo", ports=(8083,))
    target = Target(app=AppSpec(name="a", components=(component,)), component=component, namespace="ns")
    app = {"name": "geo", "image": "hotel:1.0", "ports": [{"containerPort": 8083}]}
    obj = {"metadata": {"name": "geo"}, "spec": {"template": {"spec": {"containers": [dict(app)]}}}}
    ctx = FakeCtx(obj)
    sidecar = {"name": "proxy", "image": "python:3.11", "command": ["python", "-m", "http.server", "8083"]}

    def mutate(ctx, target, params, live):
        return [{"op": "add", "path": "/spec/template/spec/containers/0", "value": sidecar}]

    fault = TemplateFault(mutate, truth=None)
    fault.inject(ctx, target, {})
    ctx.obj["spec"]["template"]["spec"]["containers"][0]["resources"] = {}  # API defaults
    assert fault.is_present(ctx, target, {}) is True
    fault.recover(ctx, target, {})
    assert ctx.obj["spec"]["template"]["spec"]["containers"] == [app]
    assert fault.is_present(ctx, target, {}) is False


def test_restoring_twice_keeps_the_original_container():
    from sregym_core.types import AppSpec, ComponentSpec, Target

    component = ComponentSpec(name="geo", ports=(8083,))
    target = Target(app=AppSpec(name="a", components=(component,)), component=component, namespace="ns")
    app = {"name": "geo", "image": "hotel:1.0"}
    ctx = FakeCtx({"metadata": {"name": "geo"}, "spec": {"template": {"spec": {"containers": [dict(app)]}}}})
    sidecar = {"name": "proxy", "image": "python:3.11"}
    fault = TemplateFault(lambda c, t, p, live: [{"op": "add", "path": "/spec/template/spec/containers/0",
                                                  "value": sidecar}], truth=None)
    fault.inject(ctx, target, {})
    fault.recover(ctx, target, {})  # the reference fix
    fault.recover(ctx, target, {})  # then recover: must not remove the app's own container
    assert ctx.obj["spec"]["template"]["spec"]["containers"] == [app]


def test_a_broken_probe_or_limit_deleted_instead_of_repaired_stays_present():
    """Red-team round 12, finding 1: deleting the broken readiness or liveness probe, or the tiny memory limit, passed
    every oracle. The workload then runs without the check or the bound it shipped with: the real primitives'
    mutations, a probe or a limit deleted is still the fault; a repaired one, or another check of the same endpoint, is not."""
    import copy

    from sregym_fault_k8s.workload import _probe, _resources

    from sregym_core.types import AppSpec, ComponentSpec, Target

    component = ComponentSpec(name="profile", ports=(8081,))
    target = Target(app=AppSpec(name="a", components=(component,)), component=component, namespace="ns")
    shipped = {"name": "profile", "livenessProbe": {"httpGet": {"path": "/health", "port": 8081}, "periodSeconds": 5},
               "resources": {"requests": {"memory": "64Mi"}, "limits": {"memory": "256Mi"}}}
    container = "/spec/template/spec/containers/0"

    def deployed():
        return {"metadata": {"name": "profile"}, "spec": {"template": {"spec": {"containers": [copy.deepcopy(shipped)]}}}}

    probe = TemplateFault(_probe("livenessProbe"), truth=None)
    ctx = FakeCtx(deployed())
    probe.inject(ctx, target, {"path": "/wrong"})
    ctx.kubectl("patch", "-p", f'[{{"op": "remove", "path": "{container}/livenessProbe"}}]')
    assert probe.is_present(ctx, target, {}) is True
    ctx.kubectl("patch", "-p", f'[{{"op": "add", "path": "{container}/livenessProbe", '
                               f'"value": {{"tcpSocket": {{"port": 8081}}}}}}]')
    # a port check in place of the shipped HTTP check asks less of the app (red-team round 15, finding 5): still weaker
    assert probe.is_present(ctx, target, {}) is True
    ctx.kubectl("patch", "-p", f'[{{"op": "replace", "path": "{container}/livenessProbe", '
                               f'"value": {{"httpGet": {{"path": "/healthz", "port": 8081}}, "periodSeconds": 5}}}}]')
    assert probe.is_present(ctx, target, {}) is False  # another HTTP check of the app's own port is a repair

    limit = TemplateFault(_resources("limits", "memory"), truth=None)
    ctx = FakeCtx(deployed())
    limit.inject(ctx, target, {"value": "12Mi"})
    assert limit.is_present(ctx, target, {}) is True
    ctx.kubectl("patch", "-p", f'[{{"op": "remove", "path": "{container}/resources/limits"}}]')
    assert limit.is_present(ctx, target, {}) is True
    ctx.kubectl("patch", "-p", f'[{{"op": "add", "path": "{container}/resources/limits", '
                               f'"value": {{"memory": "512Mi"}}}}]')
    assert limit.is_present(ctx, target, {}) is False  # a limit raised, not removed, is a repair
