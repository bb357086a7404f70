"""The contract kit's offline kubectl behaves like kubectl for the verbs faults use, or refuses
loudly: ``set env`` / ``set image`` change the pod template as kubectl does, each ConfigMap keeps the
keys the app's manifests give it, a missing object is NotFound, ``delete -l`` deletes (a workload's pod
comes back), selectors and ``rollout restart`` read as kubectl's, and a verb, output format or
selector it does not model is an error, never a silent no-op. So
configuration faults pass the offline round trip instead of being ``live_only`` (issue #39)."""

from __future__ import annotations

import json

import pytest

from sregym_core.errors import FaultError
from sregym_core.faultkit import function_fault, kube, schema
from sregym_core.testing.contracts import FaultContract, contract_app
from sregym_core.testing.recording import RecordingFaultContext
from sregym_core.types import AppSpec, ComponentSpec, TargetSelector

MANIFEST = """apiVersion: v1
kind: ConfigMap
metadata: {name: search-config, namespace: shop}
data:
  search.json: '{"timeout_ms": 800, "geo": "geo:8083"}'
---
apiVersion: v1
kind: ConfigMap
metadata: {name: flags, namespace: shop}
data:
  flags.json: '{"adFailure": "off"}'
  rollout.txt: canary
---
apiVersion: v1
kind: ConfigMap
metadata: {name: generator, namespace: shop-workload}
data: {rate: "5"}
"""


def _cluster(tmp_path, app=None) -> RecordingFaultContext:
    app = app or contract_app()
    return RecordingFaultContext(kubeconfig=tmp_path / "kubeconfig", namespace=app.namespace, app=app)


def _env(ctx, name="search", container=0) -> list[dict]:
    obj = ctx.objects[("Deployment", ctx.namespace, name)]
    return obj["spec"]["template"]["spec"]["containers"][container].get("env", [])


def _shop(tmp_path) -> AppSpec:
    (tmp_path / "manifests").mkdir()
    (tmp_path / "manifests" / "10-config.yaml").write_text(MANIFEST)
    return AppSpec(name="shop", namespace="shop", hidden_namespaces=("shop-workload",),
                   manifests=(tmp_path / "manifests",), components=(
                       ComponentSpec(name="search", roles=("service:grpc",), ports=(8082,), config_map="search-config",
                                     env=("RPC_TIMEOUT_MS",)),
                       ComponentSpec(name="geo", roles=("service:grpc",), ports=(8083,), config_map="geo-config")))


def test_set_env_sets_replaces_and_removes_variables(tmp_path):
    ctx = _cluster(tmp_path)
    ctx.kubectl("set", "env", "deployment/search", "RPC_TIMEOUT_MS=5", "NEW_FLAG=on", "-n", "contract")
    assert {e["name"]: e.get("value") for e in _env(ctx)} == {"GEO_ADDR": "geo:8083", "RPC_TIMEOUT_MS": "5",
                                                              "NEW_FLAG": "on"}
    ctx.kubectl("set", "env", "deployment", "search", "NEW_FLAG-", "-e", "GEO_ADDR=geo:9999")
    assert {e["name"]: e.get("value") for e in _env(ctx)} == {"GEO_ADDR": "geo:9999", "RPC_TIMEOUT_MS": "5"}
    listing = ctx.kubectl("set", "env", "deploy/search", "--list")
    assert "# Deployment search, container search\nGEO_ADDR=geo:9999\nRPC_TIMEOUT_MS=5\n" == listing


def test_set_env_replaces_a_secret_reference_and_honours_the_container_filter(tmp_path):
    ctx = _cluster(tmp_path)
    ctx.kubectl("set", "env", "deployment/geo", "DB_PASSWORD=plain")
    assert {"name": "DB_PASSWORD", "value": "plain"} in _env(ctx, "geo")
    ctx.kubectl("set", "env", "deployment/geo", "-c", "sidecar-*", "DB_ADDR=nowhere:1")
    assert {"name": "DB_ADDR", "value": "nowhere:1"} not in _env(ctx, "geo")


def test_set_image_changes_the_named_container(tmp_path):
    ctx = _cluster(tmp_path)
    ctx.kubectl("set", "image", "deployment/frontend", "frontend=example/frontend:2.0")
    obj = json.loads(ctx.kubectl("get", "deployment", "frontend", "-o", "json"))
    assert obj["spec"]["template"]["spec"]["containers"][0]["image"] == "example/frontend:2.0"


@pytest.mark.parametrize("args, what", [
    (("set", "env", "deployment/search", "--from=configmap/search-config"), "set env --from"),
    (("set", "resources", "deployment/search", "--limits=cpu=1"), "set resources"),
    (("edit", "deployment/search"), "edit deployment/search"),
    (("cordon", "node-1"), "cordon node-1"),
    (("create", "configmap", "extra", "--from-literal=a=b"), "create configmap"),
])
def test_what_it_does_not_model_is_refused_loudly(tmp_path, args, what):
    with pytest.raises(FaultError, match=f"does not model `kubectl {what}") as info:
        _cluster(tmp_path).kubectl(*args)
    assert "live_only" in info.value.render()


def test_each_configmap_keeps_its_own_keys(tmp_path):
    ctx = _cluster(tmp_path, _shop(tmp_path))
    shipped = ctx.objects[("ConfigMap", "shop", "search-config")]["data"]
    assert shipped == {"search.json": '{"timeout_ms": 800, "geo": "geo:8083"}'}
    assert set(ctx.objects[("ConfigMap", "shop", "flags")]["data"]) == {"flags.json", "rollout.txt"}
    # a ConfigMap the manifests do not ship gets a file of its own component's settings
    assert set(ctx.objects[("ConfigMap", "shop", "geo-config")]["data"]) == {"geo.yaml"}
    # only the app's namespace is seeded: the hidden namespaces are not the faults' to read
    assert not [key for key in ctx.objects if key[1] == "shop-workload"]
    generated = _cluster(tmp_path)  # the contract app: no manifests, one distinct file per ConfigMap
    assert set(generated.objects[("ConfigMap", "contract", "search-config")]["data"]) == {"search.yaml"}


def _timeout_fault():
    """A configuration fault as an outside contributor writes it: a tiny RPC timeout through
    ``kubectl set env``, and the config file's timeout lowered in the component's own ConfigMap."""

    def config(ctx, target):
        return json.loads(kube.get(ctx, "configmap", target.component.config_map)["data"]["search.json"])

    def write(ctx, target, settings):
        kube.patch(ctx, "configmap", target.component.config_map, {"data": {"search.json": json.dumps(settings)}})

    def inject(ctx, target, params):
        ctx.state["config"] = config(ctx, target)
        ctx.kubectl("set", "env", f"deployment/{target.component.name}", "RPC_TIMEOUT_MS=1", "-n", ctx.namespace)
        write(ctx, target, {**config(ctx, target), "timeout_ms": 1})

    def recover(ctx, target, params):  # the harness puts back exactly what it saved
        ctx.kubectl("set", "env", f"deployment/{target.component.name}", "RPC_TIMEOUT_MS-", "-n", ctx.namespace)
        write(ctx, target, ctx.state["config"])

    def present(ctx, target, params):
        env = {e["name"]: e.get("value") for e in kube.container(kube.workload(ctx, target), "search").get("env", [])}
        return env.get("RPC_TIMEOUT_MS") == "1" or config(ctx, target)["timeout_ms"] == 1

    def fix(ctx, target, params):  # what an SRE does: the documented defaults back
        ctx.kubectl("set", "env", f"deployment/{target.component.name}", "RPC_TIMEOUT_MS=800", "-n", ctx.namespace)
        write(ctx, target, {**config(ctx, target), "timeout_ms": 800})

    return function_fault(name="tiny-timeout", summary="RPC timeout set to 1 ms", inject=inject, is_present=present,
                          recover=recover, reference_fix=fix, resource_kind="Deployment",
                          mechanism="RPC timeout lowered to 1 ms", params_schema=schema(),
                          selector=TargetSelector(kinds=("Deployment",), requires=("config_map",)))


def test_a_configuration_fault_passes_the_offline_round_trip(tmp_path):
    app = _shop(tmp_path)
    contract = type("ShopContract", (FaultContract,), {"app": app})()
    contract.test_inject_fix_recover_round_trip(_timeout_fault(), tmp_path)


# ------------------------------------------------------------------ the silent no-ops that are gone


def test_label_annotate_and_scale_of_a_missing_object_are_not_found(tmp_path):
    ctx = _cluster(tmp_path)
    for args in (("label", "deployment", "nowhere", "tier=x"), ("annotate", "deployment/nowhere", "a=b"),
                 ("scale", "deployment/nowhere", "--replicas=0")):
        with pytest.raises(FaultError, match='deployments "nowhere" not found'):
            ctx.kubectl(*args)
    with pytest.raises(FaultError, match="--replicas"):
        ctx.kubectl("scale", "deployment/search")


def test_delete_by_selector_and_a_missing_name_behave_like_kubectl(tmp_path):
    ctx = _cluster(tmp_path)
    ctx.kubectl("set", "env", "deployment/search", "RPC_TIMEOUT_MS=5")
    ctx.kubectl("delete", "pods", "-l", "app=search", "-n", "contract")
    assert ("Pod", "contract", "search-0") not in ctx.objects and ("Pod", "contract", "geo-0") in ctx.objects
    # its Deployment brings a new pod back, from the template as it is now
    respawned = ctx.objects[("Pod", "contract", "search-1")]
    assert {"name": "RPC_TIMEOUT_MS", "value": "5"} in respawned["spec"]["containers"][0]["env"]
    ctx.kubectl("delete", "pod", "db-0")
    assert ("Pod", "contract", "db-0") in ctx.objects  # a StatefulSet's pod keeps its name
    with pytest.raises(FaultError, match='configmaps "nowhere" not found'):
        ctx.kubectl("delete", "configmap", "nowhere")
    assert ctx.kubectl("delete", "configmap", "nowhere", check=False) == ""  # unchecked, as FaultContext.kubectl
    ctx.kubectl("delete", "configmap", "nowhere", "--ignore-not-found")
    ctx.kubectl("delete", "configmap/search-config", "--ignore-not-found=true")
    assert ("ConfigMap", "contract", "search-config") not in ctx.objects
    with pytest.raises(FaultError, match="does not model `kubectl delete pods` \\(without a name"):
        ctx.kubectl("delete", "pods")


def test_selectors_read_like_kubectl_or_are_refused(tmp_path):
    ctx = _cluster(tmp_path)

    def names(selector):
        return [o["metadata"]["name"] for o in json.loads(ctx.kubectl("get", "pods", "-l", selector))["items"]]

    assert names("app=geo") == names("app==geo") == ["geo-0"]
    assert "geo-0" not in names("app!=geo") and "search-0" in names("app!=geo")
    assert len(names("app")) == len(names("")) and names("!app") == []
    assert names("app=geo,app!=geo") == []
    with pytest.raises(FaultError, match="does not model `kubectl get -l 'app in \\(geo\\)'"):
        names("app in (geo)")


@pytest.mark.parametrize("output", ["jsonpath={.spec.replicas}", "wide", "custom-columns=N:.metadata.name",
                                    "go-template={{.kind}}"])
def test_an_output_format_it_cannot_print_is_refused(tmp_path, output):
    with pytest.raises(FaultError, match=f"does not model `kubectl get -o {output.split('=')[0]}"):
        _cluster(tmp_path).kubectl("get", "deployment", "geo", "-o", output)


def test_rollout_restart_stamps_the_template_and_undo_is_refused(tmp_path):
    ctx = _cluster(tmp_path)
    ctx.kubectl("rollout", "restart", "deployment/geo")
    template = ctx.objects[("Deployment", "contract", "geo")]["spec"]["template"]
    assert "kubectl.kubernetes.io/restartedAt" in template["metadata"]["annotations"]
    ctx.kubectl("rollout", "status", "deployment/geo")  # a wait: recorded, no effect
    with pytest.raises(FaultError, match="does not model `kubectl rollout undo`") as info:
        ctx.kubectl("rollout", "undo", "deployment/geo")
    assert "live_only" in info.value.render()


def test_a_patch_without_a_body_is_a_clear_error(tmp_path):
    with pytest.raises(FaultError, match="does not model `kubectl patch deployment geo` \\(without a body"):
        _cluster(tmp_path).kubectl("patch", "deployment", "geo", "--type", "merge")


def test_a_strategic_patch_merges_lists_by_their_keys_as_kubectl_does(tmp_path):
    ctx = _cluster(tmp_path)
    # kubectl patch's default type is strategic: a container is merged by name, env by name
    ctx.kubectl("patch", "deployment", "search", "-p", json.dumps({"spec": {"template": {"spec": {"containers": [
        {"name": "search", "image": "example/search:bad", "env": [{"name": "RPC_TIMEOUT_MS", "value": "1"}]}]}}}}))
    container = ctx.objects[("Deployment", "contract", "search")]["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == "example/search:bad" and container["ports"] == [{"containerPort": 8082,
                                                                                  "protocol": "TCP"}]
    assert {e["name"]: e["value"] for e in container["env"]} == {"GEO_ADDR": "geo:8083", "RPC_TIMEOUT_MS": "1"}
    # $patch: delete removes one item by its key; a list without a merge key is replaced
    ctx.kubectl("patch", "deployment/search", "--type=strategic", "-p", json.dumps({"spec": {"template": {"spec": {
        "containers": [{"name": "search", "env": [{"name": "GEO_ADDR", "$patch": "delete"}], "args": ["--fast"]}],
        "tolerations": [{"key": "a", "operator": "Exists"}]}}}}))
    spec = ctx.objects[("Deployment", "contract", "search")]["spec"]["template"]["spec"]
    assert [e["name"] for e in spec["containers"][0]["env"]] == ["RPC_TIMEOUT_MS"]
    assert spec["containers"][0]["args"] == ["--fast"] and spec["tolerations"] == [{"key": "a", "operator": "Exists"}]
    # a merge patch still replaces the list, as kubectl's --type merge does
    ctx.kubectl("patch", "deployment", "search", "--type", "merge", "-p", json.dumps(
        {"spec": {"template": {"spec": {"containers": [{"name": "search", "image": "x"}]}}}}))
    assert ctx.objects[("Deployment", "contract", "search")]["spec"]["template"]["spec"]["containers"] == [
        {"name": "search", "image": "x"}]
    with pytest.raises(FaultError, match=r"does not model `kubectl patch deployment search` \(the directive \$retainKeys"):
        ctx.kubectl("patch", "deployment", "search", "-p", json.dumps({"spec": {"$retainKeys": ["replicas"]}}))


def test_create_of_an_existing_object_and_replace_of_a_missing_one_fail_as_kubectl_does(tmp_path):
    ctx = _cluster(tmp_path)
    quota = {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q", "namespace": "contract"},
             "spec": {"hard": {"pods": "0"}}}
    ctx.kubectl("create", "-f", "-", input=json.dumps(quota))
    with pytest.raises(FaultError, match='resourcequotas "q" already exists'):
        ctx.kubectl("create", "-f", "-", input=json.dumps(quota))
    ctx.kubectl("apply", "-f", "-", input=json.dumps(quota))  # apply takes an existing object
    with pytest.raises(FaultError, match='resourcequotas "other" not found'):
        ctx.kubectl("replace", "-f", "-", input=json.dumps({**quota, "metadata": {"name": "other"}}))


def test_a_server_side_dry_run_is_refused_and_stores_nothing(tmp_path):
    # a dry run answers with what admission would store; the offline kubectl runs no admission, so
    # it refuses (the fault is then live only) instead of storing the probe or failing on generateName
    ctx = _cluster(tmp_path)
    before = dict(ctx.objects)
    probe = {"apiVersion": "v1", "kind": "Pod", "metadata": {"generateName": "geo-check-", "namespace": "contract"},
             "spec": {"containers": [{"name": "geo", "image": "example/geo"}]}}
    with pytest.raises(FaultError, match=r"does not model `kubectl create --dry-run` \(it runs no admission"):
        ctx.kubectl("create", "--dry-run=server", "-o", "json", "-f", "-", input=json.dumps(probe))
    assert ctx.objects == before


def test_annotate_from_stdin_changes_the_objects_the_documents_name(tmp_path):
    # kube.apply leaves no last-applied annotation: ``annotate -f - KEY-`` on what it applied (issue #34)
    ctx = _cluster(tmp_path)
    policy = {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
              "metadata": {"name": "deny", "namespace": ctx.namespace,
                           "annotations": {kube.LAST_APPLIED: "{}", "keep": "me"}},
              "spec": {"podSelector": {}}}
    ctx.kubectl("apply", "-f", "-", input=json.dumps(policy))
    kube.strip_last_applied(ctx, json.dumps(policy))
    assert ctx.objects[("NetworkPolicy", ctx.namespace, "deny")]["metadata"]["annotations"] == {"keep": "me"}
    assert ctx.calls[-1] == ("annotate", "-f", "-", f"{kube.LAST_APPLIED}-")
    gone = {**policy, "metadata": {"name": "gone", "namespace": ctx.namespace}}
    with pytest.raises(FaultError, match='"gone" not found'):
        kube.strip_last_applied(ctx, json.dumps(gone))
