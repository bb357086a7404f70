"""Typed records that SREGym plugins return from registration hooks.

Every record is frozen. Names are normalized to lowercase kebab-case; a name that is still not a valid
identifier after normalization raises :class:`~sregym_core.errors.PluginError`. Raw YAML or JSON
enters through ``from_config`` classmethods *after* jsonschema validation, never through ``__init__``.

.. versionadded:: 0.1
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, get_args, runtime_checkable

import attrs

from .errors import ConfigError, PluginError

if TYPE_CHECKING:
    from .faults import Fault, NoiseSource

_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]*$")

Layer = Literal["app", "config", "k8s", "storage", "datastore", "os", "hardware", "network", "control"]
FailureMode = Literal["persistent", "correlated", "concurrent", "metastable", "latent", "transient"]
#: What a cluster offers and a fault may need: ``any`` (every cluster), ``embedded`` (the embedded
#: cluster), ``real`` (a real Kubernetes), ``root`` (the benchmark runs as root), ``ld-preload`` (pods are
#: local processes a shim can be preloaded into), ``node-agent`` (node-level fault hooks), ``snapshot``,
#: ``multi-node`` (two nodes or more: faults that pin pods away from another node's callers or volumes).
Capability = Literal["any", "embedded", "real", "root", "ld-preload", "node-agent", "snapshot", "multi-node"]
#: What an agent is for: evaluated agents are graded; the others validate problems.
AgentRole = Literal["evaluated", "reference", "noop", "hacker"]
#: What a fault instance is in a problem (``trigger``s are not root causes; ``latent`` ones are not visible).
FaultRole = Literal["fault", "vulnerability", "trigger", "latent"]
OracleKind = Literal["mitigation", "judge"]

#: The layers a fault can live in (CATALOG.md).
LAYERS: tuple[str, ...] = get_args(Layer)
#: The failure modes a problem can exhibit.
FAILURE_MODES: tuple[str, ...] = get_args(FailureMode)
CAPABILITIES: tuple[str, ...] = get_args(Capability)
AGENT_ROLES: tuple[str, ...] = get_args(AgentRole)
FAULT_ROLES: tuple[str, ...] = get_args(FaultRole)


def normalize_name(value: str) -> str:
    """Lowercase, spaces and underscores to dashes; reject anything else odd."""
    if not isinstance(value, str):
        raise PluginError(f"a record name must be a string, got {type(value).__name__}")
    name = value.strip().lower().replace("_", "-").replace(" ", "-")
    if not _NAME.match(name):
        raise PluginError(
            f"invalid name {value!r}",
            hints=("names are lowercase letters, digits, '.', '-' and start with a letter or digit",),
        )
    return name


def _frozen_mapping(value: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return dict(value or {})


def _capabilities(value: Iterable[Capability]) -> frozenset[Capability]:
    return frozenset(value)


def _string_set(value: Iterable[str]) -> frozenset[str]:
    return frozenset(value)


def _tuple(value: Any) -> tuple:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    return tuple(value)


# --------------------------------------------------------------------------------------------------
# Applications
# --------------------------------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class ComponentSpec:
    """One deployable component of an application, as faults see it.

    Attributes:
        name: the component's name, equal to its workload's name (``geo``, ``mongodb-geo``...).
        kind: the workload kind (``Deployment``, ``StatefulSet``, ``DaemonSet``...).
        roles: role tags fault selectors match: ``frontend``, ``service:grpc``, ``service:http``,
            ``db:postgres``, ``cache:memcached``, ``cache:redis``, ``workload-generator``, ``stateful``.
        ports: container ports the component serves.
        pvcs: PersistentVolumeClaims it mounts.
        container: the main container's name (defaults to ``name``).
        config_map: the ConfigMap holding its configuration file, if any.
        env: names of environment variables it reads (faults may remove or shadow them).
        service: the Service that fronts it, if any (defaults to ``name`` when it has ports).
        labels: the pod labels that select it.
        knobs: what the component really lets a fault turn, so app-specific faults are offered only
            where they can take effect: ``feature-flags`` (it reads feature-flag env vars),
            ``retry-policy`` (RPC timeout/retry/backoff env vars), ``rate-limit`` (a rate-limit
            setting), ``load-entrypoint`` (user requests enter here: a load burst can be aimed at it), ``buggy-image`` (a
            published image variant with a real defect exists for it).
    """

    name: str = attrs.field(converter=normalize_name)
    kind: str = "Deployment"
    roles: tuple[str, ...] = attrs.field(default=(), converter=_tuple)
    ports: tuple[int, ...] = attrs.field(default=(), converter=_tuple)
    pvcs: tuple[str, ...] = attrs.field(default=(), converter=_tuple)
    container: str | None = None
    config_map: str | None = None
    env: tuple[str, ...] = attrs.field(default=(), converter=_tuple)
    service: str | None = None
    labels: Mapping[str, str] = attrs.field(factory=dict, converter=_frozen_mapping)
    knobs: tuple[str, ...] = attrs.field(default=(), converter=_tuple)

    @property
    def container_name(self) -> str:
        return self.container or self.name

    @property
    def service_name(self) -> str | None:
        if self.service:
            return self.service
        return self.name if self.ports else None

    def has_role(self, pattern: str) -> bool:
        """True when any role matches ``pattern`` (shell-style: ``db:*``)."""
        return any(fnmatch.fnmatchcase(role, pattern) for role in self.roles)

    @classmethod
    def from_config(cls, data: Mapping[str, Any]) -> ComponentSpec:
        return cls(**{k: v for k, v in data.items() if k in attrs.fields_dict(cls)})


@attrs.frozen(kw_only=True)
class LocalImage:
    """How the embedded cluster runs a container image as a local process.

    Attributes:
        image: an image reference pattern (``sregym/hotel-reservation:*``, ``postgres:*``).
        argv: the image's ENTRYPOINT; the pod's ``command`` replaces it and ``args`` replace ``cmd``.
        cmd: the image's default CMD.
        env: environment the image sets.
        workdir: the image's WORKDIR.
    """

    image: str
    argv: tuple[str, ...] = attrs.field(converter=_tuple)
    cmd: tuple[str, ...] = attrs.field(default=(), converter=_tuple)
    env: Mapping[str, str] = attrs.field(factory=dict, converter=_frozen_mapping)
    workdir: str | None = None
    summary: str = ""

    def matches(self, reference: str) -> bool:
        return fnmatch.fnmatchcase(reference, self.image)


@attrs.frozen(kw_only=True)
class WorkloadSpec:
    """Where an app's workload generator answers stats queries (the functional-SLO oracle)."""

    name: str
    namespace: str
    service: str
    port: int
    query_path: str = "/stats"
    control_path: str = "/control"
    #: the longest one recorded request (user task) may take, its client deadline included. Records are
    #: stamped when they finish, so the SLO window opens this much after the app settled: it then holds
    #: only requests sent after the mitigation was in place, never one that was already slow before it.
    max_request_s: float = 0.0


@attrs.frozen(kw_only=True)
class DeployContext:
    """What an app's own :class:`Deploy` receives.

    Attributes:
        app: the app being deployed.
        kubeconfig: the admin kubeconfig of the cluster.
        kubectl_path: the kubectl binary to use.
        params: the manifest parameters (the app's defaults, plus what the run sets, such as
            ``otlp_endpoint`` when an observability stack is deployed).
        timeout: seconds the deploy may take (the app's ``deploy_timeout``).
    """

    app: AppSpec
    kubeconfig: Path
    kubectl_path: str = "kubectl"
    params: Mapping[str, Any] = attrs.field(factory=dict, converter=_frozen_mapping)
    timeout: float = 180.0


@runtime_checkable
class Deploy(Protocol):
    """An app's own deploy step: apply its objects and return once they exist (blocking or async).

    The conductor then waits for every pod to be Ready and the workload generator to be healthy.
    """

    def __call__(self, ctx: DeployContext) -> Any: ...


@attrs.frozen(kw_only=True)
class AppSpec:
    """An application SREGym can deploy.

    Attributes:
        name: the app's name (``hotel-reservation``).
        display_name: how the agent surface names it (``/get_app`` ``app_name``, upstream's
            display name such as ``Hotel Reservation``); the name when empty.
        summary: one line for listings.
        namespace: the namespace its services live in.
        description: what the agent is told about the app: one paragraph on what it is and does,
            as upstream's are; never its configuration knobs, metric names or other hints.
        manifests: YAML files (or directories of them) applied in order.
        components: the component inventory faults are matched against.
        workload: the workload generator's stats endpoint, if it has one.
        images: local images the embedded cluster needs to run it.
        hidden_namespaces: namespaces the agent must not see (the workload generator's).
        problems_dir: where the app's curated problem files live.
        params: default manifest parameters.
        deploy: an optional :class:`Deploy` replacing the default ``kubectl apply`` of ``manifests``.
        deploy_timeout: seconds to wait for every pod to be Ready.
        render: optional ``render(params) -> str``, the objects ``deploy`` applies as YAML, made offline
            (no cluster): the judge's calibration previews each fault's injection on them, so the
            ground truth it grades against carries the values a run's would.
    """

    name: str = attrs.field(converter=normalize_name)
    summary: str = ""
    namespace: str = ""
    description: str = ""
    display_name: str = ""
    manifests: tuple[Path, ...] = attrs.field(default=(), converter=lambda v: tuple(Path(p) for p in _tuple(v)))
    components: tuple[ComponentSpec, ...] = attrs.field(default=(), converter=_tuple)
    workload: WorkloadSpec | None = None
    images: tuple[LocalImage, ...] = attrs.field(default=(), converter=_tuple)
    hidden_namespaces: tuple[str, ...] = attrs.field(default=(), converter=_tuple)
    problems_dir: Path | None = None
    params: Mapping[str, Any] = attrs.field(factory=dict, converter=_frozen_mapping)
    deploy: Deploy | None = attrs.field(default=None, eq=False, hash=False)
    deploy_timeout: float = 180.0
    render: Callable[[Mapping[str, Any]], str] | None = attrs.field(default=None, eq=False, hash=False)

    def component(self, name: str) -> ComponentSpec | None:
        wanted = name.lower()
        return next((c for c in self.components if c.name == wanted), None)

    def target(self, name: str) -> Target:
        """The fault target for component ``name`` (a problem's validation made sure it exists)."""
        component = self.component(name)
        if component is None:
            raise ConfigError(f"app {self.name!r} has no component {name!r}",
                              hints=(f"components: {', '.join(c.name for c in self.components)}",))
        return Target(app=self, component=component, namespace=self.namespace)

    @property
    def all_namespaces(self) -> tuple[str, ...]:
        """Every namespace the app deploys into: its own, then the hidden ones (no repeats)."""
        return tuple(dict.fromkeys([self.namespace, *self.hidden_namespaces]))


# --------------------------------------------------------------------------------------------------
# Faults and noise
# --------------------------------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class TargetSelector:
    """Which components a fault can target.

    A component matches when its kind is in ``kinds`` (or ``kinds`` is empty), at least one of its
    roles matches one of ``roles`` (or ``roles`` is empty), none matches ``exclude_roles``, and it
    has every attribute in ``requires`` (``ports``, ``pvcs``, ``config_map``, ``env``, ``service``).
    ``env:<glob>`` in ``requires`` asks for an env var whose name matches the glob (``env:*_ADDR``);
    ``knob:<name>`` asks for a knob the component declares (``knob:feature-flags``).
    """

    kinds: tuple[str, ...] = attrs.field(default=(), converter=_tuple)
    roles: tuple[str, ...] = attrs.field(default=(), converter=_tuple)
    exclude_roles: tuple[str, ...] = attrs.field(default=("workload-generator",), converter=_tuple)
    requires: tuple[str, ...] = attrs.field(default=(), converter=_tuple)

    def matches(self, component: ComponentSpec) -> bool:
        if self.kinds and component.kind not in self.kinds:
            return False
        if self.roles and not any(component.has_role(pattern) for pattern in self.roles):
            return False
        if any(component.has_role(pattern) for pattern in self.exclude_roles):
            return False
        for attribute in self.requires:
            if attribute.startswith("env:"):
                if not fnmatch.filter(component.env, attribute[4:]):
                    return False
                continue
            if attribute.startswith("knob:"):
                if attribute[5:] not in component.knobs:
                    return False
                continue
            value = component.service_name if attribute == "service" else getattr(component, attribute, None)
            if not value:
                return False
        return True

    def describe(self) -> str:
        parts = []
        if self.kinds:
            parts.append("kind in " + "/".join(self.kinds))
        if self.roles:
            parts.append("role " + "|".join(self.roles))
        if self.requires:
            parts.append("with " + ", ".join(self.requires))
        return "; ".join(parts) or "any workload"


@attrs.frozen(kw_only=True)
class GroundTruth:
    """The structured truth about one injected fault, which the diagnosis judge receives.

    Attributes:
        fault: the fault primitive's name.
        layer: one of :data:`LAYERS`.
        components: the faulty component(s).
        namespace: where they live.
        resource_kind: the kind of thing that is broken (``Deployment``, ``Service``, ``ConfigMap``,
            ``PostgreSQL role``...).
        mechanism: what was done, in one phrase.
        mutated_values: concrete values, e.g. ``{"image": {"before": "x:1", "after": "x:404"}}``.
        prose: a paragraph the judge and the reference agent read.
        symptoms: what an SRE observes.
        keywords: synonyms of the mechanism that a correct diagnosis may use.
        user_visible: False for a latent fault in a concurrent-independent problem.
        vocabulary: phrases that assert this fault's mechanism in ordinary SRE English (synonyms and
            paraphrases, pattern syntax of the judge-rules lexicon); brought by the fault's own spec.
        identified_by: keys of ``mutated_values`` whose value identifies the fault among its siblings (a
            flag fault's ``flag``): a diagnosis must name that value for its mechanism to count.
    """

    fault: str
    layer: str
    components: tuple[str, ...] = attrs.field(converter=_tuple)
    namespace: str
    resource_kind: str
    mechanism: str
    mutated_values: Mapping[str, Any] = attrs.field(factory=dict, converter=_frozen_mapping)
    prose: str = ""
    symptoms: tuple[str, ...] = attrs.field(default=(), converter=_tuple)
    keywords: tuple[str, ...] = attrs.field(default=(), converter=_tuple)
    user_visible: bool = True
    vocabulary: tuple[str, ...] = attrs.field(default=(), converter=_tuple)
    identified_by: tuple[str, ...] = attrs.field(default=(), converter=_tuple)

    def to_dict(self) -> dict[str, Any]:
        return attrs.asdict(self, recurse=True, value_serializer=_jsonable)

    @classmethod
    def from_config(cls, data: Mapping[str, Any]) -> GroundTruth:
        return cls(**{k: v for k, v in data.items() if k in attrs.fields_dict(cls)})


def _jsonable(_inst: Any, _field: Any, value: Any) -> Any:
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, Path):
        return str(value)
    return value


@attrs.frozen(kw_only=True)
class Target:
    """A concrete fault target: one component of one deployed app."""

    app: AppSpec
    component: ComponentSpec
    namespace: str

    @property
    def name(self) -> str:
        return self.component.name


@attrs.frozen(kw_only=True)
class FaultSpec:
    """A fault primitive: its identity and description, and ``impl``, the :class:`~sregym_core.faults.Fault`
    that does the work (``inject``, ``is_present``, ``recover``, ``reference_fix``, ``ground_truth``,
    all taking ``(ctx, target, params)``; see :mod:`sregym_core.faults`).

    Attributes:
        name, summary, layer: identity; ``layer`` is one of :data:`LAYERS`.
        selector: which components it can target.
        params_schema: JSON Schema of its parameters (defaults filled from ``default`` keywords).
        impl: the fault's behaviour.
        capabilities: cluster capabilities it needs (see :data:`Capability`); ``any`` means it runs
            everywhere.
        failure_mode: the mode it exhibits alone (one of :data:`FAILURE_MODES`).
        symptoms: what an SRE sees, for docs and ground truth.
        recreates: ``Kind/name`` patterns of objects a correct fix must recreate (so the
            baseline-preserved oracle accepts their new uid); ``{component}``, ``{service}`` and
            ``{config_map}`` are filled from the target.
        stand_in: a test stand-in that changes nothing (the ``noop`` fault): ``run`` and problem
            files accept it wherever its selector matches, but ``sregym list-faults`` never counts it
            as a viable pair (``--all`` shows each pair with the reason).
        mechanisms: the real machinery that can run it, per operation, strongest first (names from
            :data:`sregym_core.mechanisms.MECHANISMS`), e.g. ``{"fsync": ("bpf-lsm",
            "seccomp-supervisor")}``. Empty: the fault acts through the Kubernetes API or the
            cluster hooks alone and runs wherever its capabilities are met. A fault with mechanisms
            is offered only on clusters that probe one of them available.

    .. versionchanged:: 0.2 ``stand_in``.
    .. versionchanged:: 0.3 ``mechanisms``.
    """

    name: str = attrs.field(converter=normalize_name)
    summary: str = ""
    layer: Layer = attrs.field(default="k8s", validator=lambda inst, _a, v: _check_vocabulary(inst, "layer", v, LAYERS))
    selector: TargetSelector = attrs.Factory(TargetSelector)
    params_schema: Mapping[str, Any] = attrs.field(factory=lambda: {"type": "object", "additionalProperties": False},
                                                   converter=_frozen_mapping)
    impl: Fault = attrs.field(eq=False, hash=False, validator=lambda inst, _a, v: _check_impl(inst, v, "Fault"))
    capabilities: frozenset[Capability] = attrs.field(
        default=frozenset({"any"}), converter=_capabilities, validator=lambda inst, _a, v: _check_capabilities(inst, v))
    failure_mode: FailureMode = attrs.field(
        default="persistent", validator=lambda inst, _a, v: _check_vocabulary(inst, "failure mode", v, FAILURE_MODES))
    symptoms: tuple[str, ...] = attrs.field(default=(), converter=_tuple)
    recreates: tuple[str, ...] = attrs.field(default=(), converter=_tuple)
    stand_in: bool = False
    mechanisms: Mapping[str, tuple[str, ...]] = attrs.field(
        factory=dict, converter=lambda v: {str(k): _tuple(m) for k, m in (v or {}).items()},
        validator=lambda inst, _a, v: _check_mechanisms(inst, v))

    def needs(self, capabilities: frozenset[str] | set[str]) -> frozenset[str]:
        """The capabilities this fault needs that ``capabilities`` lacks."""
        return frozenset(c for c in self.capabilities if c != "any" and c not in capabilities)


@attrs.frozen
class Incompatible:
    """A ``sregym_check_compatibility`` answer that refuses a (fault, component) pair and says why.

    It is falsy, like the plain ``False`` it stands for; ``sregym list-faults --all`` shows ``reason``
    beside the refused pair and problem validation quotes it.

    Attributes:
        reason: why the fault cannot take effect on the component, in the app's terms
            (``frontend reads no Secret``).

    .. versionadded:: 0.2
    """

    reason: str

    def __bool__(self) -> bool:
        return False


def _check_mechanisms(record: Any, declared: Mapping[str, tuple[str, ...]]) -> None:
    from .mechanisms import check

    try:
        for names in declared.values():
            check(names, f"{type(record).__name__} {record.name!r}")
    except ValueError as exc:
        raise PluginError(str(exc)) from None


def _check_vocabulary(record: Any, what: str, value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise PluginError(f"{type(record).__name__} {record.name!r} has unknown {what} {value!r}",
                          hints=(f"use one of {', '.join(allowed)}",))


def _check_capabilities(record: Any, capabilities: frozenset[str]) -> None:
    for capability in capabilities:
        _check_vocabulary(record, "capability", capability, CAPABILITIES)


def _check_impl(record: Any, impl: Any, protocol_name: str) -> None:
    from . import faults

    protocol = getattr(faults, protocol_name)
    if not isinstance(impl, protocol):
        wanted = [name for name, value in vars(protocol).items() if callable(value) and not name.startswith("_")]
        missing = sorted(m for m in wanted if not callable(getattr(impl, m, None)))
        raise PluginError(f"{type(record).__name__} {record.name!r}: impl {type(impl).__name__} is not a {protocol_name}"
                          + (f" (missing {', '.join(missing)})" if missing else ""),
                          hints=(f"see sregym_core.faults.{protocol_name}; sregym_core.faultkit has helpers",))


@attrs.frozen(kw_only=True)
class NoiseSpec:
    """A noise source: a transient disturbance that is not a root cause.

    ``impl`` is a :class:`~sregym_core.faults.NoiseSource` (``inject``, ``is_active``, ``revert``,
    ``describe``, all taking ``(ctx, target, params)``).
    """

    name: str = attrs.field(converter=normalize_name)
    summary: str = ""
    selector: TargetSelector = attrs.Factory(TargetSelector)
    impl: NoiseSource = attrs.field(eq=False, hash=False, validator=lambda inst, _a, v: _check_impl(inst, v, "NoiseSource"))
    params_schema: Mapping[str, Any] = attrs.field(factory=lambda: {"type": "object"}, converter=_frozen_mapping)
    default_period: float = 60.0
    default_duration: float = 10.0
    capabilities: frozenset[str] = attrs.field(default=frozenset({"any"}), converter=_string_set)


# --------------------------------------------------------------------------------------------------
# Oracles, agents, clusters
# --------------------------------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class OracleSpec:
    """A named mitigation-oracle building block or diagnosis judge.

    ``factory(**config)`` returns the oracle (kind ``mitigation``) or judge (kind ``judge``).
    """

    name: str = attrs.field(converter=normalize_name)
    summary: str = ""
    kind: OracleKind = attrs.field(default="mitigation", validator=attrs.validators.in_(get_args(OracleKind)))
    factory: Callable[..., Any] = attrs.field(eq=False, hash=False)
    config_schema: Mapping[str, Any] = attrs.field(factory=lambda: {"type": "object"}, converter=_frozen_mapping)


@attrs.frozen(kw_only=True)
class AgentSpec:
    """An agent SREGym can run.

    ``factory(**config)`` returns an object with ``async run(task) -> AgentOutcome``
    (see :mod:`sregym_core.agents`). ``needs`` says what the agent uses: ``mcp``, ``http-api``,
    ``kubeconfig``, ``llm``, and ``ground-truth`` for validation agents (reference and hackers), which
    alone are handed the problem's ground truth and fault handles.
    """

    name: str = attrs.field(converter=normalize_name)
    summary: str = ""
    needs: frozenset[str] = attrs.field(default=frozenset(), converter=_string_set)
    factory: Callable[..., Any] = attrs.field(eq=False, hash=False)
    config_schema: Mapping[str, Any] = attrs.field(factory=lambda: {"type": "object"}, converter=_frozen_mapping)
    role: AgentRole = attrs.field(default="evaluated", validator=attrs.validators.in_(AGENT_ROLES))


@attrs.frozen(kw_only=True)
class ClusterProviderSpec:
    """A kind of cluster SREGym can run problems on.

    ``factory(name=..., **options)`` returns a cluster handle with ``up()``, ``down()``,
    ``kubeconfig(agent=False) -> Path``, ``snapshot()``/``restore()`` where supported, and
    ``capabilities``.
    """

    name: str = attrs.field(converter=normalize_name)
    summary: str = ""
    capabilities: frozenset[str] = attrs.field(default=frozenset({"any"}), converter=_string_set)
    factory: Callable[..., Any] = attrs.field(eq=False, hash=False)
    default: bool = False


@attrs.frozen(kw_only=True)
class ExecutorSpec:
    """A way to run a plan's work items (``sregym run/validate --executor NAME``).

    ``run(host=, plan=, provider=, cluster_name=, workers=, progress=)`` runs every
    (problem, agent, attempt) of ``plan`` (a :class:`sregym_core.conductor.runner.RunPlan`) on
    ``workers`` environments of its own, records them in ``plan.results_dir`` exactly as the
    built-in executor does (``--resume`` included), and returns the records of this run.
    """

    name: str = attrs.field(converter=normalize_name)
    summary: str = ""
    run: Callable[..., Any] = attrs.field(eq=False, hash=False)


@attrs.frozen(kw_only=True)
class ToolSpec:
    """An observability tool agents can call over MCP (``get_metrics``, ``get_logs``...).

    ``call(endpoints, **arguments) -> str`` returns compact text for an LLM; ``endpoints`` is the
    cluster's :class:`ObservabilityEndpoints`. ``parameters`` is a JSON Schema of the arguments.
    ``upstream_call``, when given, is the same tool answering in upstream SREGym's return shape: the
    per-family MCP mounts (``/prometheus/sse``...) use it; the project's own endpoints use ``call``.
    """

    name: str
    summary: str = ""
    parameters: Mapping[str, Any] = attrs.field(factory=lambda: {"type": "object", "properties": {}}, converter=_frozen_mapping)
    call: Callable[..., Any] = attrs.field(eq=False, hash=False)
    upstream_call: Callable[..., Any] | None = attrs.field(default=None, eq=False, hash=False)


@attrs.frozen(kw_only=True)
class ObservabilityEndpoints:
    """Where a cluster's observability APIs answer (Prometheus HTTP API, Loki API, Jaeger query API)."""

    prometheus_url: str | None = None
    loki_url: str | None = None
    jaeger_url: str | None = None
    alertmanager_url: str | None = None
    headers: Mapping[str, str] = attrs.field(factory=dict, converter=_frozen_mapping)


@attrs.frozen(kw_only=True)
class ObservabilitySpec:
    """An observability stack the conductor deploys once per cluster, before any app.

    Attributes:
        name, summary: identity.
        namespace: where the stack runs (hidden from agents).
        render: ``render(app_namespaces=..., hidden_namespaces=...) -> str``, the stack's manifests
            as YAML (alerts watch the app namespaces; hidden ones are never collected or shown).
        services: role (``prometheus``, ``loki``, ``jaeger``, ``otlp``) → (Service name, port).
        otlp_endpoint: what apps set as ``OTEL_EXPORTER_OTLP_ENDPOINT``.
        deploy_timeout: seconds to wait for the stack's pods.
    """

    name: str = attrs.field(converter=normalize_name)
    summary: str = ""
    namespace: str = "observability"
    render: Callable[..., str] = attrs.field(eq=False, hash=False)
    services: Mapping[str, tuple[str, int]] = attrs.field(factory=dict, converter=_frozen_mapping)
    otlp_endpoint: str = ""
    deploy_timeout: float = 180.0


# --------------------------------------------------------------------------------------------------
# Problems
# --------------------------------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class Trigger:
    """When a fault instance is injected: ``at`` seconds after the start, or ``after`` another
    instance (by id) has been injected for ``at`` seconds; ``duration`` makes it transient."""

    at: float = 0.0
    after: str | None = None
    duration: float | None = None


@attrs.frozen(kw_only=True)
class FaultInstance:
    """One use of a fault primitive in a problem."""

    id: str
    fault: str
    target: str
    params: Mapping[str, Any] = attrs.field(factory=dict, converter=_frozen_mapping)
    when: Trigger = attrs.Factory(Trigger)
    role: FaultRole = "fault"


@attrs.frozen(kw_only=True)
class NoiseInstance:
    """One noise source scheduled in a problem."""

    noise: str
    target: str | None = None
    params: Mapping[str, Any] = attrs.field(factory=dict, converter=_frozen_mapping)
    period: float | None = None
    duration: float | None = None
    seed: int = 0


@attrs.frozen(kw_only=True)
class AgentGrant:
    """Extra rights a problem gives the attempt's agent on one named object outside the app's
    namespace (see :mod:`sregym_core.conductor.grants`): ``verbs`` on ``resource``/``name`` only, and
    the object may change only in the ``may_change`` fields (path -> ``any`` or ``remove-lines``).

    ``standing`` is the object's healthy form (its ``apiVersion``, ``kind`` and content; the name and
    namespace come from the grant) for an object that exists only while some fault has made it: every
    attempt creates it where it is missing before the fault is injected and removes what it created
    when it ends, so that the existence of a granted object names no fault
    (:mod:`sregym_core.conductor.standing`).

    .. versionadded:: 0.3 ``standing``
    """

    resource: str
    name: str
    verbs: tuple[str, ...] = attrs.field(converter=_tuple)
    may_change: Mapping[str, str] = attrs.field(converter=_frozen_mapping)
    group: str = ""
    namespace: str | None = None
    standing: Mapping[str, Any] | None = attrs.field(default=None, eq=False)


@attrs.frozen(kw_only=True)
class BrokenProblem:
    """A problem file a plugin ships that does not parse or validate. It disables that problem only:
    commands warn about it (its path, the JSON path of the error, a hint) and go on with the rest;
    ``list-problems --all`` lists it as broken; asking for its id gives its error.

    Attributes:
        source: the file (or, when a plugin's ``sregym_problems`` itself failed, the plugin).
        error: what is wrong, with the JSON path of the offending value where there is one.
        id: the id the file declares, when it could be read (else the file's stem).
        plugin: the plugin that ships it (filled in by the plugin host).

    .. versionchanged:: 0.2
       ``id`` and ``plugin``; a broken file no longer stops ``run`` and ``validate``.
    """

    source: Path
    error: str
    id: str = ""
    plugin: str = ""


@attrs.frozen(kw_only=True)
class ProblemSpec:
    """A runnable problem: an app, fault instances, noise, oracle composition and ground truth.

    Attributes:
        id: unique problem id (``hotel-wrong-image-geo``).
        app: the app's name.
        summary: one line for listings.
        faults: the fault instances, with their triggers.
        noise: noise instances.
        oracle: the mitigation-oracle composition (see ``oracles.mitigation.build_oracle``).
        ground_truth: one record per user-relevant fault.
        tags: free tags; ``lite`` puts it in the lite suite.
        layer, failure_mode, difficulty: classification.
        agent_timeout: seconds the agent gets in total (upstream's default, 1800).
        agent_timeout_reason: why ``agent_timeout`` must hold also when the problem is run by an
            upstream id (otherwise such a run gets upstream's 1800 s, as upstream would give it).
        aliases: other ids naming this problem (upstream SREGym ids with the same mechanism).
        upstream_id: the upstream SREGym id this problem was selected by (``--problem <upstream
            id>``, ``--suite sregym-lite``), recorded beside ``id``; empty when run by our id.
        stages: the graded stages, in order (``diagnosis``, ``mitigation`` or both).
        judge_threshold: composite score needed to pass diagnosis.
        agent_access: extra rights on named cluster objects the agent's fix needs (webhook
            configurations, the DNS ConfigMap), granted per attempt and guarded.
        symptom: the user-visible symptom(s) injection must cause (``slo-drop``,
            ``pods-not-ready``, ``alert-firing <name>``, ``error-logs``) or ``("latent",)``; see
            :mod:`sregym_core.symptoms`. Validation observes it before any agent acts.
        source: the file it came from, if any.
    """

    id: str = attrs.field(converter=normalize_name)
    app: str
    summary: str = ""
    faults: tuple[FaultInstance, ...] = attrs.field(converter=_tuple)
    noise: tuple[NoiseInstance, ...] = attrs.field(default=(), converter=_tuple)
    oracle: Mapping[str, Any] | None = None
    ground_truth: tuple[GroundTruth, ...] = attrs.field(default=(), converter=_tuple)
    tags: tuple[str, ...] = attrs.field(default=(), converter=_tuple)
    layer: str = "k8s"
    failure_mode: str = "persistent"
    difficulty: str = "easy"
    agent_timeout: float = 1800.0
    judge_threshold: float = 0.7
    symptom: tuple[str, ...] = attrs.field(default=(), converter=_tuple)
    source: Path | None = None
    aliases: tuple[str, ...] = attrs.field(default=(), converter=_tuple)
    stages: tuple[str, ...] = attrs.field(default=("diagnosis", "mitigation"), converter=_tuple)
    agent_access: tuple[AgentGrant, ...] = attrs.field(default=(), converter=_tuple)
    agent_timeout_reason: str = ""
    upstream_id: str = ""

    @property
    def suites(self) -> tuple[str, ...]:
        return tuple(t for t in self.tags if t in ("lite", "full")) or ("full",)
