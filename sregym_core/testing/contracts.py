"""Contract suites plugin authors subclass.

Point a subclass at your plugin module; every ``test_*`` method then runs once per record your
plugin registers (parametrized by name, so one broken record does not hide the others)::

    from sregym_core.testing.contracts import FaultContract
    import my_plugin.plugin

    class TestMyFaults(FaultContract):
        plugin = my_plugin.plugin

The suites need the harness fixtures (``pytest_plugins = ["sregym_core.testing"]``). The live fault
contract (on a real cluster) is :class:`sregym_core.testing.live.LiveFaultContract`.
"""

from __future__ import annotations

import asyncio
import copy
import inspect
import re
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import jsonschema
import pytest

from ..errors import PermanentFaultError, SregymError
from ..faults import Fault, NoiseSource, call_fault
from ..plugins import new_plugin_host, process_host
from ..types import (
    LAYERS,
    AgentSpec,
    AppSpec,
    ClusterProviderSpec,
    ComponentSpec,
    ExecutorSpec,
    FaultSpec,
    GroundTruth,
    NoiseSpec,
    ObservabilitySpec,
    OracleSpec,
    Target,
    ToolSpec,
    normalize_name,
)
from ..validation import load_schema, validate
from .recording import RecordingFaultContext

_GETTERS = {
    "sregym_faults": "get_faults", "sregym_apps": "get_apps", "sregym_agents": "get_agents",
    "sregym_clusters": "get_clusters", "sregym_oracles": "get_oracles", "sregym_noise_sources": "get_noise_sources",
    "sregym_agent_tools": "get_agent_tools", "sregym_executors": "get_executors",
    "sregym_observability": "get_observability",
}


def hook_records(hook: Callable[..., Any], host: Any = None) -> list[Any]:
    """The records a plugin module's registration hook returns, called as the plugin host calls it:
    with ``host`` when the implementation names it (``host`` defaults to a host of the installed
    plugins, built only then), else without."""
    if "host" in inspect.signature(hook).parameters:
        return list(hook(host if host is not None else new_plugin_host()) or ())
    return list(hook() or ())


def contract_app() -> AppSpec:
    """The in-memory app fault contracts target: one component of every common role."""
    return AppSpec(
        name="contract-app", summary="an in-memory app with one component of every common role", namespace="contract",
        description="A contract-test app: a frontend, gRPC services, PostgreSQL, memcached, Redis and a workload generator.",
        components=(
            ComponentSpec(name="frontend", roles=("frontend", "service:http"), ports=(8080,),
                          env=("SEARCH_ADDR", "PROFILE_ADDR"), knobs=_ALL_KNOBS),
            ComponentSpec(name="search", roles=("service:grpc",), ports=(8082,), config_map="search-config",
                          env=("GEO_ADDR", "RPC_TIMEOUT_MS"), knobs=_ALL_KNOBS),
            ComponentSpec(name="geo", roles=("service:grpc",), ports=(8083,), env=("DB_ADDR", "DB_PASSWORD"),
                          knobs=_ALL_KNOBS),
            ComponentSpec(name="db", kind="StatefulSet", roles=("db:postgres", "stateful"), ports=(5432,),
                          pvcs=("data-db-0",), env=("POSTGRES_PASSWORD",)),
            ComponentSpec(name="memcached", roles=("cache:memcached",), ports=(11211,)),
            ComponentSpec(name="redis", roles=("cache:redis",), ports=(6379,)),
            ComponentSpec(name="workload-generator", roles=("workload-generator",), ports=(8089,)),
        ),
        hidden_namespaces=("contract-workload",),
    )


_ALL_KNOBS = ("feature-flags", "retry-policy", "rate-limit", "load-entrypoint", "buggy-image", "ingress")


class _Contract:
    plugin: ClassVar[Any] = None
    hook: ClassVar[str] = ""

    @classmethod
    def _names(cls) -> list[str]:
        if cls.plugin is None:
            return []
        host = new_plugin_host(builtins=False, entry_points=False)
        host.register(cls.plugin, name="contract-plugin")
        return list(getattr(host, _GETTERS[cls.hook])())

    def pytest_generate_tests(self, metafunc: pytest.Metafunc) -> None:
        if "record_name" not in metafunc.fixturenames:
            return
        names = self._names()
        if not names:
            metafunc.parametrize("record_name", [pytest.param(None, marks=pytest.mark.skip(
                reason="set `plugin` on the contract subclass" if self.plugin is None else "registers nothing"))])
            return
        metafunc.parametrize("record_name", names)

    @pytest.fixture
    def record(self, record_name, register_plugin, plugin_host):
        register_plugin(self.plugin)
        return getattr(plugin_host, _GETTERS[self.hook])()[record_name]

    def test_registers_something(self, register_plugin, plugin_host):
        if self.plugin is None:
            pytest.skip("set `plugin` on the contract subclass")
        register_plugin(self.plugin)
        assert getattr(plugin_host, _GETTERS[self.hook])(), f"{self.plugin!r} registers nothing through {self.hook}"

    def test_name_is_normalized(self, record):
        assert normalize_name(record.name) == record.name

    def test_has_a_summary(self, record):
        assert record.summary.strip(), f"{record.name} has no summary"


class FaultContract(_Contract):
    """Checks every fault a plugin registers, offline.

    The round trip (inject → present → reference fix → gone; inject → present → recover → gone) runs
    against a :class:`RecordingFaultContext`: kubectl answers from in-memory objects, so faults that
    change Kubernetes objects pass it as they are. Faults that act inside a process (SQL, a syscall
    shim) list themselves in ``live_only`` (name → why) and are proved by the live contract instead.

    ``example_params`` (fault name → params) gives params for faults with required keys; ``app``
    overrides the in-memory app targeted (default: :func:`contract_app`).

    Besides the round trip, the suite fails a fault that cannot be a fair problem: an ``inject`` that
    changes nothing on the (offline) cluster (only stand-ins such as ``noop``, ``stand_in=True``, may),
    a ``reference_fix`` that runs the fault's own ``recover`` (recover may restore what only the
    harness saved; the reference fix is what an SRE does from what the cluster shows; a fault whose
    recover *is* that fix says why in ``recover_is_the_fix``, fault name → why, or sets a
    ``recover_is_the_fix`` string on its impl), a params schema open to unknown keys
    (``additionalProperties`` must be false, so a typo in a problem file is an error), and a selector
    or an ``inject`` that reaches the workload generator or the app's hidden namespaces (the grading
    instruments). ``docs/plugin-hooks.md`` ("The fault contract kit") shows every option.

    The offline judge (``judge-rules``, when installed) must pass the fault's reference diagnosis (its
    ground truth written as prose, as the reference agent writes it) and, for the faults listed in
    ``paraphrases`` (fault name → a plain-English diagnosis; ``{component}`` and ``{namespace}`` are
    filled in), that paraphrase: the fault's ``vocabulary`` must carry the words an SRE would use.
    """

    hook = "sregym_faults"
    example_params: ClassVar[dict[str, dict[str, Any]]] = {}
    live_only: ClassVar[dict[str, str]] = {}
    app: ClassVar[AppSpec | None] = None
    paraphrases: ClassVar[dict[str, str]] = {}
    recover_is_the_fix: ClassVar[dict[str, str]] = {}

    def _app(self) -> AppSpec:
        return self.app or contract_app()

    def _params(self, fault: FaultSpec) -> dict[str, Any]:
        return validate(self.example_params.get(fault.name, {}), dict(fault.params_schema),
                        what=f"example params of {fault.name}", fill_defaults=True)

    def _targets(self, fault: FaultSpec) -> list[Target]:
        app = self._app()
        targets = [Target(app=app, component=c, namespace=app.namespace) for c in app.components
                   if fault.selector.matches(c)]
        assert targets, f"{fault.name}: its selector ({fault.selector.describe()}) matches no component"
        return targets

    def _target(self, fault: FaultSpec) -> Target:
        return self._targets(fault)[0]

    def test_options_name_registered_faults(self):
        """A misspelt name in an option is silently ignored (the fault runs offline after all, or
        without its params); each option's keys must be faults the plugin registers."""
        if self.plugin is None:
            pytest.skip("set `plugin` on the contract subclass")
        names = set(self._names())
        for option in ("example_params", "live_only", "recover_is_the_fix", "paraphrases"):
            unknown = sorted(set(getattr(self, option)) - names)
            assert not unknown, (f"{type(self).__name__}.{option} names {unknown}, which {self.plugin.__name__} does "
                                 f"not register (its faults: {', '.join(sorted(names))})")

    def test_declares_layer_selector_schema_and_impl(self, record):
        assert record.layer in LAYERS
        jsonschema.Draft202012Validator.check_schema(dict(record.params_schema))
        validate(dict(record.params_schema), load_schema("fault-params"), what=f"params schema of {record.name}")
        assert record.capabilities, f"{record.name} declares no capabilities"
        assert isinstance(record.impl, Fault), f"{record.name}: impl is not a Fault"

    def test_example_params_validate(self, record):
        assert isinstance(self._params(record), dict)

    def test_params_schema_is_closed(self, record):
        schema = dict(record.params_schema)
        assert schema.get("type") == "object" and schema.get("additionalProperties") is False, (
            f"{record.name}: its params schema accepts unknown keys, so a misspelt param in a problem file "
            "(`replica: 0` for `replicas`) is silently ignored; set \"additionalProperties\": false "
            "(sregym_core.faultkit.schema(...) builds a closed schema)")
        open_inside = list(_open_objects(schema))
        assert not open_inside, (
            f"{record.name}: its params schema at {open_inside[0]} accepts unknown keys (an object with named "
            "properties but no \"additionalProperties\": false), so a misspelt nested param is silently ignored; "
            "close it (a free map of any keys declares additionalProperties as a schema instead)")

    def test_never_targets_the_workload_generator(self, record):
        from ..problems import grading_instrument

        for app in (self._app(), contract_app()) if self.app is not None else (contract_app(),):
            reached = [f"{c.name} ({grading_instrument(app, c)})" for c in app.components
                       if grading_instrument(app, c) and record.selector.matches(c)]
            assert not reached, (
                f"{record.name}: its selector ({record.selector.describe()}) matches the workload generator "
                f"{reached} of {app.name}: the generator is the grading instrument, never a fault target (a problem "
                "aimed at it is refused at load); keep 'workload-generator' in the selector's exclude_roles (the "
                "default) and exclude any other workload role ('workload:*')")

    def test_bad_params_are_config_errors(self, record):
        with pytest.raises(SregymError):
            validate(["not", "an", "object"], dict(record.params_schema), what=f"params of {record.name}")

    def test_targets_some_component_of_the_contract_app(self, record):
        self._target(record)

    def test_ground_truth_is_structured_before_injection(self, record):
        target = self._target(record)
        ctx = RecordingFaultContext(kubeconfig="/nonexistent", namespace=target.namespace, app=target.app).child()
        truth = record.impl.ground_truth(ctx, target, self._params(record))
        assert isinstance(truth, GroundTruth)
        assert truth.components and truth.mechanism and truth.namespace == target.namespace

    def test_offline_judge_passes_the_reference_and_a_paraphrase(self, record):
        judge = _offline_judge()
        if judge is None:
            pytest.skip("the judge-rules plugin is not installed")
        target = self._target(record)
        ctx = RecordingFaultContext(kubeconfig="/nonexistent", namespace=target.namespace, app=target.app).child()
        truth = record.impl.ground_truth(ctx, target, self._params(record))
        texts = {"reference diagnosis": reference_diagnosis(truth)}
        if record.name in self.paraphrases:
            texts["paraphrase"] = self.paraphrases[record.name].format(component=target.component.name,
                                                                      namespace=target.namespace)
        for what, text in texts.items():
            verdict = judge.judge(text, (truth,), app_components=tuple(c.name for c in target.app.components),
                                  app_namespace=target.app.namespace)
            missed = [f"{a.id}: {a.evidence}" for a in verdict.answers if not a.answer]
            assert verdict.passed, f"{record.name}: judge-rules fails its {what} {text!r}: {missed}; add the words to vocabulary="

    def test_inject_fix_recover_round_trip(self, record, tmp_path):
        if record.name in self.live_only:
            pytest.skip(f"live only: {self.live_only[record.name]}")
        params = self._params(record)
        impl = record.impl
        # the first matching component the fault can be injected into (a selector matches roles; the
        # fault may still need, say, a Secret the component reads, and says so with PermanentFaultError)
        for target in self._targets(record):
            cluster = RecordingFaultContext(kubeconfig=tmp_path / "kubeconfig", namespace=target.namespace,
                                            app=target.app)
            fixed = cluster.child()
            before = copy.deepcopy(cluster.objects)
            try:
                asyncio.run(call_fault(impl.inject, fixed, target, params, retry_for=0))
                break
            except PermanentFaultError:
                continue
        else:
            pytest.fail(f"{record.name}: inject refused every matching component of the contract app")
        self._check_inject_changed_the_cluster(record, before, cluster)

        def run(method, ctx):
            return asyncio.run(call_fault(method, ctx, target, params, retry_for=0))

        assert run(impl.is_present, fixed) is True, f"{record.name}: not present right after inject"
        assert isinstance(impl.ground_truth(fixed, target, params), GroundTruth)
        start = len(cluster.calls)
        ran_recover = runs_recover(impl, lambda: run(impl.reference_fix, fixed))
        fix_changes = _changes(cluster.calls[start:])
        why = self.recover_is_the_fix.get(record.name) or getattr(impl, "recover_is_the_fix", "")
        assert not ran_recover or why, (
            f"{record.name}: its reference_fix runs its recover. recover may restore what only the harness saved "
            "(ctx.state); the reference fix must be what an SRE does from what the cluster shows (patch the wrong "
            "field back, recreate the object from its spec...). Write that fix; or, when recover is exactly that "
            "targeted change, say why in the contract's recover_is_the_fix = {fault name: why}")
        assert run(impl.is_present, fixed) is False, f"{record.name}: still present after its reference fix"
        run(impl.recover, fixed)  # recover after a fix must be harmless

        recovered = cluster.child()
        run(impl.inject, recovered)
        assert run(impl.is_present, recovered) is True
        start = len(cluster.calls)
        run(impl.recover, recovered)
        assert run(impl.is_present, recovered) is False, f"{record.name}: still present after recover"
        # a reference fix written as a copy of recover's body (the same kubectl changes, in the same
        # order, on the same injected cluster) is recover by another name: it may rest on what only
        # the harness saved (ctx.state), which no agent can read
        assert not fix_changes or fix_changes != _changes(cluster.calls[start:]) or why, (
            f"{record.name}: its reference_fix makes exactly the changes its recover makes ({fix_changes[:2]}...): "
            "a copy of recover, which an agent cannot run. Write the fix an SRE makes from what the cluster shows "
            "(the tag the component ships with, the key its ConfigMap needs...); or, when recover is exactly that "
            "targeted change, say why in the contract's recover_is_the_fix = {fault name: why}")


    def _check_inject_changed_the_cluster(self, record: FaultSpec, before: dict, cluster: RecordingFaultContext) -> None:
        hidden = set(cluster.app.hidden_namespaces)
        touched = sorted({key for key in {*before, *cluster.objects} if before.get(key) != cluster.objects.get(key)})
        in_hidden = [f"{kind}/{name} in {ns}" for kind, ns, name in touched if ns in hidden]
        in_hidden += [" ".join(call) for call in cluster.calls
                      if hidden & set(_namespaces_of(call)) and _verb(call) not in _READ_VERBS]
        assert not in_hidden, (
            f"{record.name}: inject reaches the app's hidden namespaces ({', '.join(sorted(hidden))}): {in_hidden[:3]}; "
            "they hold the workload generator and the benchmark's own parts, never a fault's target")
        if record.stand_in:
            return
        assert touched, (
            f"{record.name}: inject changed nothing on the (offline) cluster: every object is as it was, so no agent "
            "could see or fix the fault. A fault changes what the cluster runs (a workload, Service, ConfigMap, "
            "Secret...). One that acts inside a process or through node hooks belongs in live_only = {name: why}, "
            "proved by the live contract instead")


def _open_objects(schema: Any, path: str = "$") -> Any:
    """JSON paths of the nested object schemas (with named properties) left open to unknown keys."""
    if not isinstance(schema, dict):
        return
    if path != "$" and schema.get("properties") and schema.get("additionalProperties", True) is True:
        yield path
    for key, sub in (schema.get("properties") or {}).items():
        yield from _open_objects(sub, f"{path}.{key}")
    yield from _open_objects(schema.get("items"), f"{path}[]")
    for keyword in ("oneOf", "anyOf", "allOf"):
        for sub in schema.get(keyword) or ():
            yield from _open_objects(sub, path)


_READ_VERBS = frozenset({"get", "describe", "logs", "wait", "top", "auth", "events", "version", "api-resources"})


def _changes(calls: list[tuple[str, ...]]) -> list[tuple[str, ...]]:
    """The kubectl calls of ``calls`` that can change the cluster (reads, waits and logs dropped)."""
    return [call for call in calls if _verb(call) not in _READ_VERBS and tuple(call[:2]) != ("rollout", "status")]


def _verb(call: tuple[str, ...]) -> str:
    return next((word for word in call if not word.startswith("-")), "")


def _namespaces_of(call: tuple[str, ...]) -> list[str]:
    """The namespaces a recorded kubectl call names (``-n X``, ``--namespace X``, ``--namespace=X``)."""
    found = []
    for index, word in enumerate(call):
        if word in ("-n", "--namespace") and index + 1 < len(call):
            found.append(call[index + 1])
        elif word.startswith(("--namespace=", "-n=")):
            found.append(word.partition("=")[2])
    return found


def runs_recover(impl: Any, call: Callable[[], Any]) -> bool:
    """Whether ``call()`` (a reference fix) runs the code of ``impl``'s own recover: a method that
    delegates to it, an alias of it, or the function a :class:`~sregym_core.faultkit.FunctionFault`
    wraps. Watched with a profile hook in this thread and the threads ``call`` starts."""
    codes = set()
    for candidate in (getattr(impl, "recover", None), getattr(impl, "recover_fn", None)):
        function = getattr(candidate, "__func__", candidate)
        while (inner := getattr(function, "func", None)) is not None:  # functools.partial
            function = inner
        code = getattr(function, "__code__", None)
        if code is not None:
            codes.add(code)
    seen = threading.Event()

    def profile(frame, event, _arg):
        if event == "call" and frame.f_code in codes:
            seen.set()

    previous = sys.getprofile()
    sys.setprofile(profile)
    threading.setprofile(profile)
    try:
        call()
    finally:
        sys.setprofile(previous)
        threading.setprofile(None)
    return seen.is_set()


def _offline_judge() -> Any:
    """``judge-rules`` from its installed entry point (the core never imports a plugin; the test
    harness's plugin host holds only the plugin under test), or None."""
    from importlib.metadata import entry_points

    for entry in entry_points(group="sregym", name="judge-rules"):
        specs = {s.name: s for s in entry.load().sregym_oracles()}
        if "judge-rules" in specs:
            return specs["judge-rules"].factory()
    return None


def assert_reference_passes_problem(problem_id: str, describe: Callable[[tuple[GroundTruth, ...]], str]) -> None:
    """The reference agent's diagnosis of a curated problem passes the offline judge on every question.

    The problem's own faults, targets and params give the ground truth before injection (a recording
    kubectl); ``describe`` is the reference agent's text for it (the baselines plugin's
    ``describe_truth``: the core never imports a plugin). Skips when judge-rules is not installed."""
    judge = _offline_judge()
    if judge is None:
        pytest.skip("the judge-rules plugin is not installed")
    host = process_host()
    problem = host.get_problems()[problem_id]
    app, faults = host.get_apps()[problem.app], host.get_faults()
    truths = []
    for instance in problem.faults:
        spec = faults[instance.fault]
        target = app.target(instance.target)
        params = validate(dict(instance.params), dict(spec.params_schema), what=instance.fault, fill_defaults=True)
        ctx = RecordingFaultContext(kubeconfig=Path("/nonexistent"), namespace=app.namespace, app=app).child()
        truths.append(spec.impl.ground_truth(ctx, target, params))
    verdict = judge.judge(describe(tuple(truths)), tuple(truths),
                          app_components=tuple(c.name for c in app.components), app_namespace=app.namespace)
    assert verdict.passed and all(a.answer for a in verdict.answers), \
        [f"{a.id}: {a.evidence}" for a in verdict.answers if not a.answer]


def reference_diagnosis(truth: GroundTruth) -> str:
    """A fault's ground truth as a precise SRE's diagnosis (the shape the reference agent submits)."""
    values = "; ".join(f"{key}: {value}" for key, value in truth.mutated_values.items())
    text = (f"Root cause in {', '.join(truth.components)} (namespace {truth.namespace}), resource "
            f"{truth.resource_kind}: {truth.mechanism}.")
    if values:
        text += f" Concrete values: {values}."
    if truth.symptoms:
        text += f" Symptoms: {', '.join(truth.symptoms)}."
    return f"{text} {truth.prose}".strip()


class NoiseContract(_Contract):
    """Checks every noise source a plugin registers: a NoiseSource impl, a valid params schema."""

    hook = "sregym_noise_sources"

    def test_impl_and_schema(self, record):
        assert isinstance(record, NoiseSpec)
        assert isinstance(record.impl, NoiseSource), f"{record.name}: impl is not a NoiseSource"
        jsonschema.Draft202012Validator.check_schema(dict(record.params_schema))
        assert record.default_period > 0 and record.default_duration > 0


class ToolContract(_Contract):
    """Checks every agent tool a plugin registers: callable, parameters a valid JSON Schema object."""

    hook = "sregym_agent_tools"

    def test_name_is_normalized(self, record):
        # MCP tool names are snake_case identifiers (get_metrics), not kebab-case record names
        assert re.fullmatch(r"[a-z][a-z0-9_]*", record.name), f"tool name {record.name!r} is not snake_case"

    def test_call_and_parameters(self, record):
        assert isinstance(record, ToolSpec)
        assert callable(record.call)
        assert record.upstream_call is None or callable(record.upstream_call)
        jsonschema.Draft202012Validator.check_schema(dict(record.parameters))
        assert record.parameters.get("type") == "object"


class AppContract(_Contract):
    """Checks every app a plugin registers: inventory shape, manifests exist, a description."""

    hook = "sregym_apps"

    def test_inventory_matches_schema(self, record):
        assert isinstance(record, AppSpec)
        document = {
            "name": record.name, "namespace": record.namespace,
            "components": [{"name": c.name, "kind": c.kind, "roles": list(c.roles), "ports": list(c.ports),
                            "pvcs": list(c.pvcs)} for c in record.components],
        }
        validate(document, load_schema("app"), what=f"inventory of {record.name}")

    def test_manifests_exist(self, record):
        assert record.manifests, f"{record.name} has no manifests"
        for path in record.manifests:
            assert path.exists(), f"{record.name}: manifest {path} is missing"

    def test_has_description_for_agents(self, record):
        assert len(record.description) > 40, f"{record.name}: the agent needs a real description"


class AgentContract(_Contract):
    """Checks every agent a plugin registers can be built and has an async ``run``."""

    hook = "sregym_agents"
    factory_config: ClassVar[dict[str, dict[str, Any]]] = {}

    def test_factory_builds_an_agent(self, record):
        assert isinstance(record, AgentSpec)
        agent = record.factory(**self.factory_config.get(record.name, {}))
        assert inspect.iscoroutinefunction(agent.run), f"{record.name}: run must be async"


class ClusterContract(_Contract):
    """Checks every cluster provider: capabilities declared, factory callable."""

    hook = "sregym_clusters"

    def test_declares_capabilities(self, record):
        assert isinstance(record, ClusterProviderSpec)
        assert record.capabilities
        assert callable(record.factory)


class ExecutorContract(_Contract):
    """Checks every executor a plugin registers: ``run`` takes the keyword arguments the CLI passes."""

    hook = "sregym_executors"

    def test_run_accepts_the_cli_arguments(self, record):
        assert isinstance(record, ExecutorSpec)
        assert callable(record.run)
        try:
            inspect.signature(record.run).bind(host=None, plan=None, provider=None, cluster_name="sregym",
                                               workers=1, progress=None)
        except TypeError as exc:
            pytest.fail(f"{record.name}: run(host=, plan=, provider=, cluster_name=, workers=, progress=) fails: {exc}")


_OBSERVABILITY_ROLES = frozenset({"prometheus", "loki", "jaeger", "otlp", "alertmanager"})


class ObservabilityContract(_Contract):
    """Checks every observability stack a plugin registers: known service roles, and manifests that
    render as Kubernetes objects in the stack's namespace (never in a hidden one)."""

    hook = "sregym_observability"

    def test_services_have_known_roles_and_ports(self, record):
        assert isinstance(record, ObservabilitySpec)
        assert record.services, f"{record.name} exposes no service"
        for role, (service, port) in record.services.items():
            assert role in _OBSERVABILITY_ROLES, f"{record.name}: unknown role {role!r}"
            assert service and isinstance(port, int) and 0 < port < 65536, (role, service, port)

    def test_render_gives_kubernetes_objects(self, record):
        import yaml

        text = record.render(app_namespaces=("shop",), hidden_namespaces=("sregym-hidden",))
        documents = [d for d in yaml.safe_load_all(text) if d]
        assert documents, f"{record.name}: render gave no objects"
        for document in documents:
            assert document.get("apiVersion") and document.get("kind"), document
            namespace = document.get("metadata", {}).get("namespace")
            assert namespace != "sregym-hidden", f"{record.name}: an object lands in a hidden namespace"


class OracleContract(_Contract):
    """Checks every oracle or judge a plugin registers: its factory (with ``factory_config``) builds
    an ``Oracle`` (mitigation) or a ``Judge`` whose verdict on a sample truth is a ``JudgeVerdict``."""

    hook = "sregym_oracles"
    factory_config: ClassVar[dict[str, dict[str, Any]]] = {}

    def test_kind_and_factory(self, record):
        from ..oracles.judge import Judge, JudgeVerdict
        from ..oracles.mitigation import Oracle

        assert isinstance(record, OracleSpec)
        built = record.factory(**self.factory_config.get(record.name, {}))
        if record.kind == "mitigation":
            assert isinstance(built, Oracle), f"{record.name}: factory did not build an Oracle"
            assert inspect.iscoroutinefunction(built.evaluate)
            return
        assert isinstance(built, Judge), f"{record.name}: factory did not build a Judge"
        truth = (GroundTruth(fault="wrong-image", layer="k8s", components=("geo",), namespace="shop",
                             resource_kind="Deployment", mechanism="image tag does not exist"),)
        verdict = built.judge("geo's image tag does not exist", truth, app_components=("geo", "web"),
                              app_namespace="shop")
        assert isinstance(verdict, JudgeVerdict)


class ProblemContract:
    """Checks every problem a plugin ships resolves against the installed plugins (app, faults,
    targets, params), so a broken problem file fails the plugin's own tests."""

    plugin: ClassVar[Any] = None

    def test_problems_resolve(self):
        from ..problems import resolve_problem

        if self.plugin is None:
            pytest.skip("set `plugin` on the contract subclass")
        host = new_plugin_host()
        problems = hook_records(self.plugin.sregym_problems, host)
        assert problems, f"{self.plugin!r} ships no problems"
        for problem in problems:
            resolve_problem(problem, host)


__all__ = ["AgentContract", "AppContract", "ClusterContract", "ExecutorContract", "FaultContract", "NoiseContract",
           "ObservabilityContract", "OracleContract", "ProblemContract", "ToolContract", "contract_app", "hook_records",
           "runs_recover"]
