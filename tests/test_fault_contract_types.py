"""The typed fault contract: FaultSpec refuses a non-Fault impl, vocabularies are checked, and
FaultContext.child keeps the subclass (a recording context stays recording)."""

from __future__ import annotations

import pytest

from sregym_core.errors import PluginError
from sregym_core.faults import Fault, FaultContext, NoiseSource
from sregym_core.testing import RecordingFaultContext, StateFault
from sregym_core.types import Deploy, DeployContext, FaultSpec, NoiseSpec


class HalfFault:
    def inject(self, ctx, target, params): ...

    def recover(self, ctx, target, params): ...


def test_an_impl_missing_methods_is_a_plugin_error_naming_them():
    with pytest.raises(PluginError) as info:
        FaultSpec(name="half", summary="x", impl=HalfFault())
    assert "is_present" in str(info.value) and "reference_fix" in str(info.value) and "ground_truth" in str(info.value)


def test_noise_specs_need_a_noise_source():
    with pytest.raises(PluginError):
        NoiseSpec(name="loud", summary="x", impl=StateFault())

    class Blip:
        def inject(self, ctx, target, params): ...
        def is_active(self, ctx, target, params): return False
        def revert(self, ctx, target, params): ...
        def describe(self, ctx, target, params): return "a blip"

    assert isinstance(NoiseSpec(name="blip", summary="x", impl=Blip()).impl, NoiseSource)


@pytest.mark.parametrize("field, value", [("layer", "kernel"), ("failure_mode", "sometimes"),
                                          ("capabilities", {"quantum"})])
def test_vocabularies_are_checked(field, value):
    with pytest.raises(PluginError) as info:
        FaultSpec(name="odd", summary="x", impl=StateFault(), **{field: value})
    assert repr(next(iter(value)) if isinstance(value, set) else value) in str(info.value) and info.value.hints


def test_child_keeps_the_subclass_and_starts_fresh(fake_app, tmp_path):
    parent = RecordingFaultContext(kubeconfig=tmp_path / "k", namespace="fake", app=fake_app)
    parent.state["x"] = 1
    child = parent.child()
    assert type(child) is RecordingFaultContext and child.state == {}
    child.kubectl("get", "deployment", "api", "-o", "json")
    assert parent.calls == child.calls == [("get", "deployment", "api", "-o", "json")]
    plain = FaultContext(kubeconfig=tmp_path / "k", namespace="fake", app=fake_app, api="client").child()
    assert type(plain) is FaultContext and plain.api == "client" and plain.state == {}


def test_a_detached_context_refuses_the_cluster(fake_app):
    from sregym_core.errors import FaultError

    with pytest.raises(FaultError, match="no cluster"):
        FaultContext.detached(fake_app).kubectl("get", "pods")


def test_deploy_is_a_protocol_over_a_context(fake_app, tmp_path):
    seen = []

    def deploy(ctx: DeployContext) -> None:
        seen.append((ctx.app.name, ctx.params["replicas"], ctx.timeout))

    assert isinstance(deploy, Deploy)
    deploy(DeployContext(app=fake_app, kubeconfig=tmp_path / "k", params={"replicas": 2}, timeout=30.0))
    assert seen == [("fake-app", 2, 30.0)]
    assert isinstance(StateFault(), Fault)


def test_the_api_client_is_the_engines_made_on_first_use(fake_app, tmp_path):
    """The contract makes no Kubernetes client: the engine hands one (or a maker, called once, on
    first use); a context without one says so."""
    from sregym_core.errors import FaultError

    made = []
    ctx = FaultContext(kubeconfig=tmp_path / "k", namespace="fake", app=fake_app,
                       api=lambda: made.append("client") or "client")
    assert made == []
    assert ctx.api == "client" and ctx.api == "client" and made == ["client"]
    with pytest.raises(FaultError, match="no Kubernetes API client") as info:
        FaultContext(kubeconfig=tmp_path / "k", namespace="fake", app=fake_app).api
    assert any("FaultContext.api" in hint for hint in info.value.hints)
