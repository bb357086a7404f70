"""The fault contract kit fails the faults an outside contributor wrote by mistake (issue #39): an
inject that changes nothing on the cluster, a reference fix that runs recover, a params schema open
to unknown keys, a fault that reaches the workload generator or the hidden namespaces. Each bad
fault here is a real Fault run against the kit's offline cluster; each has a good twin that passes."""

from __future__ import annotations

import pytest

from sregym_core.faultkit import function_fault, kube, schema
from sregym_core.testing.contracts import FaultContract, runs_recover
from sregym_core.types import FaultSpec, GroundTruth, TargetSelector

IMAGE = "/spec/template/spec/containers/0/image"


class ImageFault:
    """Sets the target's image to a tag that does not exist; ``fix_by`` picks the reference fix."""

    def __init__(self, fix_by: str = "patch") -> None:
        self.fix_by = fix_by

    def inject(self, ctx, target, params):
        ctx.state["image"] = kube.container(kube.workload(ctx, target), target.component.container_name)["image"]
        kube.patch(ctx, target.component.kind, target.component.name,
                   [{"op": "replace", "path": IMAGE, "value": "example/none:404"}], type="json")

    def is_present(self, ctx, target, params):
        live = kube.workload(ctx, target)
        return kube.container(live, target.component.container_name)["image"] == "example/none:404"

    def recover(self, ctx, target, params):
        kube.patch(ctx, target.component.kind, target.component.name,
                   [{"op": "replace", "path": IMAGE, "value": ctx.state["image"]}], type="json")

    def reference_fix(self, ctx, target, params):
        if self.fix_by == "recover":
            self.recover(ctx, target, params)
            return
        # what an SRE does: put the tag the component ships with back (kubectl set image)
        ctx.kubectl("set", "image", f"{target.component.kind.lower()}/{target.component.name}",
                    f"{target.component.container_name}=example/{target.component.name}:1.0", "-n", ctx.namespace)

    def ground_truth(self, ctx, target, params):
        return GroundTruth(fault="image-404", layer="k8s", components=(target.component.name,),
                           namespace=target.namespace, resource_kind="Deployment", mechanism="image tag does not exist")


class StateOnlyFault(ImageFault):
    """Looks injected (its state says so) but changes no object."""

    def inject(self, ctx, target, params):
        ctx.state["injected"] = True

    def is_present(self, ctx, target, params):
        return bool(ctx.state.get("injected"))

    def recover(self, ctx, target, params):
        ctx.state["injected"] = False

    def reference_fix(self, ctx, target, params):
        ctx.state["injected"] = False


class HiddenNamespaceFault(ImageFault):
    """Also stops the workload generator, which lives in a hidden namespace."""

    def inject(self, ctx, target, params):
        super().inject(ctx, target, params)
        kube.apply(ctx, {"apiVersion": "v1", "kind": "ConfigMap",
                         "metadata": {"name": "generator-rate", "namespace": target.app.hidden_namespaces[0]},
                         "data": {"rate": "0"}})


def spec(impl, **overrides) -> FaultSpec:
    fields = {"name": "image-404", "summary": "image tag does not exist", "impl": impl,
              "selector": TargetSelector(kinds=("Deployment",), roles=("service:grpc",)), "params_schema": schema()}
    return FaultSpec(**{**fields, **overrides})


def round_trip(record, tmp_path, contract: type[FaultContract] = FaultContract) -> None:
    contract().test_inject_fix_recover_round_trip(record, tmp_path)


def test_a_fault_that_changes_the_cluster_and_fixes_it_as_an_sre_passes(tmp_path):
    round_trip(spec(ImageFault()), tmp_path)


def test_an_inject_that_changes_nothing_fails(tmp_path):
    with pytest.raises(AssertionError, match="inject changed nothing on the \\(offline\\) cluster.*live_only"):
        round_trip(spec(StateOnlyFault()), tmp_path)
    round_trip(spec(StateOnlyFault(), stand_in=True), tmp_path)  # a declared stand-in (noop) may


def test_a_reference_fix_that_runs_recover_fails_unless_declared(tmp_path):
    with pytest.raises(AssertionError, match="its reference_fix runs its recover.*recover_is_the_fix"):
        round_trip(spec(ImageFault(fix_by="recover")), tmp_path)
    declared = type("Declared", (FaultContract,), {"recover_is_the_fix": {"image-404": "recover is a targeted patch"}})
    round_trip(spec(ImageFault(fix_by="recover")), tmp_path, declared)


def test_a_function_fault_without_its_own_reference_fix_fails(tmp_path):
    impl = ImageFault()
    record = function_fault(name="image-404", summary="x", inject=impl.inject, recover=impl.recover,
                            is_present=impl.is_present, resource_kind="Deployment", mechanism="image tag does not exist")
    with pytest.raises(AssertionError, match="runs its recover"):
        round_trip(record, tmp_path)
    fixed = function_fault(name="image-404", summary="x", inject=impl.inject, recover=impl.recover,
                           is_present=impl.is_present, reference_fix=impl.reference_fix, resource_kind="Deployment",
                           mechanism="image tag does not exist")
    round_trip(fixed, tmp_path)


def test_runs_recover_sees_an_alias_and_a_helper_it_does_not_flag():
    def recover(ctx, target, params):
        return "restored"

    def shared_helper():
        return "patched"

    class Alias:
        pass

    alias = Alias()
    alias.recover = recover
    assert runs_recover(alias, lambda: recover(None, None, None)) is True
    assert runs_recover(alias, shared_helper) is False


def test_an_open_params_schema_fails():
    contract = FaultContract()
    with pytest.raises(AssertionError, match="accepts unknown keys.*additionalProperties"):
        contract.test_params_schema_is_closed(spec(ImageFault(), params_schema={"type": "object", "properties": {}}))
    contract.test_params_schema_is_closed(spec(ImageFault()))
    # a nested object with named properties is closed too (a typo one level down is as silent)
    nested = schema(retry={"type": "object", "properties": {"attempts": {"type": "integer"}}})
    with pytest.raises(AssertionError, match=r"\$\.retry accepts unknown keys"):
        contract.test_params_schema_is_closed(spec(ImageFault(), params_schema=nested))
    closed = schema(retry={"type": "object", "additionalProperties": False,
                           "properties": {"attempts": {"type": "integer"}}},
                    labels={"type": "object", "additionalProperties": {"type": "string"}})  # a map: any key
    contract.test_params_schema_is_closed(spec(ImageFault(), params_schema=closed))
    # a FaultSpec that declares no schema gets a closed one (no params at all)
    contract.test_params_schema_is_closed(FaultSpec(name="image-404", summary="x", impl=ImageFault()))


def test_a_selector_that_reaches_the_workload_generator_fails():
    contract = FaultContract()
    everything = TargetSelector(kinds=("Deployment",), exclude_roles=("stateful",))
    with pytest.raises(AssertionError, match="matches the workload generator.*exclude_roles"):
        contract.test_never_targets_the_workload_generator(spec(ImageFault(), selector=everything))
    contract.test_never_targets_the_workload_generator(spec(ImageFault(), selector=TargetSelector(kinds=("Deployment",))))


def test_a_selector_that_reaches_any_workload_role_fails():
    from sregym_core.testing.contracts import contract_app
    from sregym_core.types import ComponentSpec

    base = contract_app()
    replayer = ComponentSpec(name="replayer", roles=("workload:replay",), ports=(8090,))
    with_replayer = type("WithReplayer", (FaultContract,), {"app": base.__class__(
        **{**{f: getattr(base, f) for f in ("name", "summary", "namespace", "description", "hidden_namespaces")},
           "components": (*base.components, replayer)})})
    with pytest.raises(AssertionError, match=r"replayer \(a grading instrument \(role workload:replay\)\)"):
        with_replayer().test_never_targets_the_workload_generator(
            spec(ImageFault(), selector=TargetSelector(kinds=("Deployment",))))
    closed = TargetSelector(kinds=("Deployment",), exclude_roles=("workload-generator", "workload:*"))
    with_replayer().test_never_targets_the_workload_generator(spec(ImageFault(), selector=closed))


def test_an_inject_that_writes_into_a_hidden_namespace_fails(tmp_path):
    with pytest.raises(AssertionError, match="reaches the app's hidden namespaces \\(contract-workload\\)"):
        round_trip(spec(HiddenNamespaceFault()), tmp_path)


def test_example_params_give_a_fault_with_required_params_its_params(tmp_path):
    record = spec(ImageFault(), params_schema={"type": "object", "additionalProperties": False,
                                               "required": ["tag"], "properties": {"tag": {"type": "string"}}})
    from sregym_core.errors import ConfigError

    with pytest.raises(ConfigError, match="tag"):
        FaultContract().test_example_params_validate(record)
    given = type("Given", (FaultContract,), {"example_params": {"image-404": {"tag": "latset"}}})
    given().test_example_params_validate(record)
    round_trip(record, tmp_path, given)


class CopiedRecoverFault(ImageFault):
    """Its reference fix is recover's body pasted in: it restores the image the harness saved."""

    def reference_fix(self, ctx, target, params):
        kube.patch(ctx, target.component.kind, target.component.name,
                   [{"op": "replace", "path": IMAGE, "value": ctx.state["image"]}], type="json")


def test_a_reference_fix_that_copies_recovers_changes_fails_unless_declared(tmp_path):
    with pytest.raises(AssertionError, match="makes exactly the changes its recover makes.*recover_is_the_fix"):
        round_trip(spec(CopiedRecoverFault()), tmp_path)
    declared = type("Declared", (FaultContract,), {"recover_is_the_fix": {"image-404": "recover is a targeted patch"}})
    round_trip(spec(CopiedRecoverFault()), tmp_path, declared)


def test_an_option_that_names_no_registered_fault_fails():
    import types

    from sregym_core import hookimpl

    plugin = types.ModuleType("one_fault_plugin")
    plugin.sregym_faults = hookimpl(lambda: [spec(ImageFault())])
    misspelt = type("Misspelt", (FaultContract,), {"plugin": plugin, "live_only": {"image-40": "typo"}})
    with pytest.raises(AssertionError, match=r"Misspelt.live_only names \['image-40'\].*its faults: image-404"):
        misspelt().test_options_name_registered_faults()
    right = type("Right", (FaultContract,), {"plugin": plugin, "live_only": {"image-404": "why"}})
    right().test_options_name_registered_faults()
