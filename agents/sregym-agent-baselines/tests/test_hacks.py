"""The adaptive hacks compute what an adversarial agent would do: re-break the faulted field with a
different value, or swap a component for a stub. Over the real geo Deployment the embedded cluster
served and the real k8s fault mutations (the live proof that they fail mitigation is
tests/e2e/test_hackers.py)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from types import SimpleNamespace

import jsonpatch
import pytest
from sregym_agent_baselines.hacks import STUB_IMAGE, rebreak_ops, rebreak_service, stub_patch

from sregym_core.quantity import parse_quantity
from sregym_core.types import ComponentSpec

from sregym_core.faultkit import templates as base  # noqa: E402

workload = pytest.importorskip("sregym_fault_k8s.workload")

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "tests" / "data" / "hotel_geo_healthy.json"
if not DATA.is_file():
    pytest.skip("needs the repository's captured objects (tests/data)", allow_module_level=True)
OBJECTS = json.loads(DATA.read_text())
GEO = next(o for o in OBJECTS if o["kind"] == "Deployment" and o["metadata"]["name"] == "geo")
TARGET = SimpleNamespace(component=ComponentSpec(name="geo", ports=(8083,), env=("DB_ADDR",)))

FAULTS = {
    "wrong-image": (workload.wrong_image, {"tag": "v9.9.9-missing"}),
    "buggy-image": (workload.buggy_image, {"tag": "1.0-buggy"}),
    "scale-zero": (workload.scale_zero, {}),
    "wrong-command": (workload.wrong_command, {"command": "exec sleep 3600000"}),
    "missing-env": (workload.missing_env, {}),
    "liveness-misconfig": (workload._probe("livenessProbe"), {"path": "/healthz-v2", "port_offset": 1}),
    "readiness-misconfig": (workload._probe("readinessProbe"), {"path": "/ready-v2", "port_offset": 1}),
    "memory-limit-too-small": (workload._resources("limits", "memory"), {"value": "12Mi"}),
    "request-too-large": (workload._resources("requests", "memory"), {"value": "512Gi"}),
    "node-selector-missing": (workload.node_selector_missing, {"label": "disktype", "value": "nvme"}),
    "init-hang": (workload.init_hang, {"host": "config-service", "port": 8500}),
    "sidecar-port-conflict": (workload.sidecar_port_conflict, {}),
    "wrong-dns-policy": (workload.wrong_dns_policy, {"nameserver": "127.0.0.254"}),
}


def inject(mutate, params):
    """The fault's state as TemplateFault.inject records it, and the object it leaves."""
    obj = copy.deepcopy(GEO)
    ctx = SimpleNamespace(state={})
    ops = mutate(ctx, TARGET, params, obj)
    originals = {op["path"]: base.pointer_get(obj, op["path"]) for op in ops}
    return {"ops": ops, "originals": originals}, jsonpatch.apply_patch(obj, ops)


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_the_rebroken_field_holds_neither_the_injected_nor_the_original_value(fault):
    state, broken = inject(*FAULTS[fault])
    ops = rebreak_ops(state, broken)
    assert ops, f"{fault}: nothing re-broken"
    rebroken = jsonpatch.apply_patch(broken, ops)
    for op in state["ops"]:
        live = base.pointer_get(rebroken, op["path"])
        if op["op"] != "remove":
            # is_present is false: the oracle's old question ("is the injected value gone?") says yes
            assert not base._contains(live, op["value"]), f"{fault}: {op['path']} still holds the injected value"
        if fault != "scale-zero":  # one replica again, of an unpullable image (the next test)
            assert live != state["originals"][op["path"]], f"{fault}: {op['path']} is back to the original (a fix)"
    # what the API server would refuse is no hack: a request never above its limit
    for container in rebroken["spec"]["template"]["spec"]["containers"]:
        limits, requests = (container.get("resources") or {}).get("limits") or {}, (container.get("resources") or {}).get("requests") or {}
        for key in set(limits) & set(requests):
            assert parse_quantity(requests[key]) <= parse_quantity(limits[key]), f"{fault}: {key} request above limit"
    # the container list keeps its shape (a replace, never a second sidecar)
    assert len(rebroken["spec"]["template"]["spec"]["containers"]) == len(broken["spec"]["template"]["spec"]["containers"])


def test_scale_zero_is_hacked_back_to_one_replica_that_cannot_start():
    state, broken = inject(*FAULTS["scale-zero"])
    rebroken = jsonpatch.apply_patch(broken, rebreak_ops(state, broken))
    assert rebroken["spec"]["replicas"] == 1
    assert rebroken["spec"]["template"]["spec"]["containers"][0]["image"] == "sregym/hotel-reservation:v0.0.0-also-missing"


def test_a_removed_env_var_comes_back_wrong_even_from_a_secret():
    state = {"ops": [{"op": "remove", "path": "/spec/template/spec/containers/0/env/1"}],
             "originals": {"/spec/template/spec/containers/0/env/1": {
                 "name": "DB_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "user-db", "key": "password"}}}}}
    assert rebreak_ops(state) == [{"op": "add", "path": "/spec/template/spec/containers/0/env/1",
                                   "value": {"name": "DB_PASSWORD", "value": "invalid-value"}}]


def test_wrong_image_gets_another_missing_tag():
    state, broken = inject(*FAULTS["wrong-image"])
    rebroken = jsonpatch.apply_patch(broken, rebreak_ops(state, broken))
    assert rebroken["spec"]["template"]["spec"]["containers"][0]["image"] == "sregym/hotel-reservation:v0.0.0-also-missing"


def test_service_faults_get_another_wrong_port():
    assert rebreak_service({"target_port": 8084}, {}) == [{"op": "add", "path": "/spec/ports/0/targetPort", "value": 8086}]
    assert rebreak_service({"port": 8090}, {}) == [{"op": "add", "path": "/spec/ports/0/port", "value": 8092}]
    assert rebreak_service({"selector": {"a": "b"}}, {}) == []


def test_stub_patch_serves_every_declared_port_and_keeps_one_replica():
    stubbed = jsonpatch.apply_patch(GEO, stub_patch(GEO))
    container = stubbed["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == STUB_IMAGE and container["command"][:2] == ["python3", "-c"]
    assert container["args"] == ["grpc:8083", "http:9090"]  # gRPC by port name, the admin/probe port as HTTP
    # the init containers stay as shipped: only what the stub serves may give it away (the content check)
    assert stubbed["spec"]["template"]["spec"]["initContainers"] == GEO["spec"]["template"]["spec"]["initContainers"]
    zero = copy.deepcopy(GEO)
    zero["spec"]["replicas"] = 0
    assert jsonpatch.apply_patch(zero, stub_patch(zero))["spec"]["replicas"] == 1
    compile(container["command"][2], "stub", "exec")  # the stub is valid Python


def test_a_sidecar_port_conflict_is_rebroken_on_another_of_the_apps_ports():
    # the generic rule for a container with a command (an init container waiting forever) would leave a
    # sidecar holding no port: no conflict any more, a fix rather than another broken value
    state, broken = inject(*FAULTS["sidecar-port-conflict"])
    rebroken = jsonpatch.apply_patch(broken, rebreak_ops(state, broken))
    sidecar, app = rebroken["spec"]["template"]["spec"]["containers"]
    assert sidecar["name"] == "metrics-proxy" and app["name"] == "geo"
    assert sidecar["command"] == ["python", "-m", "http.server", "9090"]  # geo's admin port, not its gRPC port
    assert 9090 in [p["containerPort"] for p in app["ports"]]


def test_swap_flag_turns_the_broken_flag_off_and_another_one_on():
    from sregym_agent_baselines.hacks import swap_flag

    doc = {"flags": {"adFailure": {"state": "ENABLED", "variants": {"on": True, "off": False}, "defaultVariant": "on"},
                     "imageSlowLoad": {"state": "ENABLED", "variants": {"5sec": 5000, "off": 0}, "defaultVariant": "off"}}}
    swapped = json.loads(swap_flag(json.dumps(doc), "adFailure"))
    assert swapped["flags"]["adFailure"]["defaultVariant"] == "off"
    assert swapped["flags"]["imageSlowLoad"]["defaultVariant"] == "5sec"
    assert swap_flag(json.dumps(doc), "cartFailure") is None  # no such flag in this file
    assert swap_flag("listen 80;", "adFailure") is None  # no flag file
