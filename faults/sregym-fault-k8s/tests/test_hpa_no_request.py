"""hpa-no-request is present while the target container has no CPU request: moving the memory values
(what a different-broken-value agent does) is no fix, any CPU request is. Runs the real fault
against a recording kubectl (the app's rendered objects)."""

from __future__ import annotations

import json

import pytest

from sregym_core.plugins import process_host
from sregym_core.testing.recording import recorded_fault

pytest.importorskip("sregym_app_hotel_reservation")


@pytest.fixture()
def setup():
    spec, target, ctx = recorded_fault(process_host(), "hpa-no-request", "hotel-reservation", "geo")
    spec.impl.inject(ctx, target, {})
    return spec, target, ctx


def _patch_resources(ctx, resources: dict) -> None:
    ctx.kubectl("patch", "deployment", "geo", "-n", ctx.namespace, "--type=json", "-p", json.dumps(
        [{"op": "replace", "path": "/spec/template/spec/containers/0/resources", "value": resources}]))


def _resources(ctx) -> dict:
    obj = json.loads(ctx.kubectl("get", "deployment", "geo", "-n", ctx.namespace, "-o", "json"))
    return obj["spec"]["template"]["spec"]["containers"][0].get("resources") or {}


def test_injection_removes_the_cpu_request_and_makes_the_hpa(setup):
    spec, target, ctx = setup
    assert "cpu" not in (_resources(ctx).get("requests") or {})
    assert _has_hpa(ctx)
    assert spec.impl.is_present(ctx, target, {})


def test_other_memory_values_are_no_fix(setup):
    spec, target, ctx = setup
    _patch_resources(ctx, {"requests": {"memory": "80Mi"}, "limits": {"memory": "320Mi"}})
    assert spec.impl.is_present(ctx, target, {})


def test_any_cpu_request_is_the_fix(setup):
    spec, target, ctx = setup
    _patch_resources(ctx, {"requests": {"memory": "64Mi", "cpu": "100m"}, "limits": {"memory": "256Mi"}})
    assert not spec.impl.is_present(ctx, target, {})


def _has_hpa(ctx) -> bool:
    return ("HorizontalPodAutoscaler", ctx.namespace, "geo") in {(k[0], k[1], k[2]) for k in ctx.objects}


def test_the_reference_fix_puts_the_original_request_back_and_keeps_the_hpa(setup):
    spec, target, ctx = setup
    spec.impl.reference_fix(ctx, target, {})
    assert _resources(ctx)["requests"].get("cpu")
    assert not spec.impl.is_present(ctx, target, {})
    assert _has_hpa(ctx)


def test_recover_also_removes_the_hpa_the_injection_made(setup):
    spec, target, ctx = setup
    spec.impl.recover(ctx, target, {})
    assert _resources(ctx)["requests"].get("cpu")
    assert not spec.impl.is_present(ctx, target, {})
    assert not _has_hpa(ctx)
