"""Problem files: load, validate, compose.

Two phases, so plugins can ship problem files without depending on each other:

1. :func:`parse_problem` validates a document against ``schemas/problem.schema.json`` and builds a
   :class:`~sregym_core.types.ProblemSpec` (no cross-references checked).
2. :func:`resolve_problem` checks it against the installed plugins (a
   :class:`~sregym_core.catalog.Catalog`, the plugin host) — the app and faults exist, each
   target is a component the fault's selector accepts, params satisfy the fault's schema (defaults
   filled in), triggers reference known instances — and derives missing ground truth.

Every error carries the JSON path of the offending value, and nothing is deployed before both pass.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
import yaml

from .errors import ConfigError, UsageError
from .faults import FaultContext
from .grant_rules import check_grant
from .types import (
    AgentGrant,
    AppSpec,
    BrokenProblem,
    ComponentSpec,
    FaultInstance,
    FaultSpec,
    GroundTruth,
    NoiseInstance,
    ProblemSpec,
    Target,
    Trigger,
)
from .validation import load_schema, validate

if TYPE_CHECKING:
    from .catalog import Catalog

DEFAULT_AGENT_TIMEOUT = 1800.0  # upstream SREGym's --agent-timeout default

DEFAULT_ORACLE: dict[str, Any] = {"all": ["baseline_preserved", "fault_invariant", "functional_slo", "workload_healthy"]}


def read_document(path: Path) -> Any:
    """Read a YAML or JSON file, turning parse errors into a :class:`ConfigError` with a line number."""
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from exc
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise ConfigError(f"{path} is not valid YAML{where}: {getattr(exc, 'problem', exc)}") from exc


def parse_problem(data: Any, *, source: Path | str | None = None) -> ProblemSpec:
    """Validate a problem document and build its record (phase 1)."""
    what = f"problem file {source}" if source else "problem"
    validate(data, load_schema("problem"), what=what,
             hints=("see `sregym schema problem` for the format",))
    if data.get("oracle") is not None:
        from .oracles.mitigation import validate_oracle_config

        try:
            validate_oracle_config(data["oracle"], source=str(source) if source else None)
        except ConfigError as exc:
            raise ConfigError(f"{what} is invalid",
                              errors=[("$." + path.replace("['", ".").replace("']", ""), why) for path, why in exc.errors],
                              hints=("see `sregym schema problem` ($defs.oracle) for the composition format",)) from exc
    faults = []
    for index, item in enumerate(data["faults"]):
        when = item.get("when", {})
        faults.append(FaultInstance(
            id=item.get("id", f"f{index}"),
            fault=item["fault"],
            target=item["target"],
            params=item.get("params", {}),
            when=Trigger(at=when.get("at", 0.0), after=when.get("after"), duration=when.get("duration")),
            role=item.get("role", "fault"),
        ))
    ids = [f.id for f in faults]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise ConfigError(f"{what} is invalid", errors=[("$.faults", f"duplicate fault instance id(s): {', '.join(duplicates)}")])
    for index, instance in enumerate(faults):
        if instance.when.after is not None and instance.when.after not in ids:
            raise ConfigError(f"{what} is invalid", errors=[(
                f"$.faults[{index}].when.after", f"no fault instance with id {instance.when.after!r} (ids: {', '.join(ids)})")])
        if instance.when.after == instance.id:
            raise ConfigError(f"{what} is invalid", errors=[(f"$.faults[{index}].when.after", "an instance cannot wait for itself")])
    noise = [
        NoiseInstance(noise=n["noise"], target=n.get("target"), params=n.get("params", {}),
                      period=n.get("period"), duration=n.get("duration"), seed=n.get("seed", 0))
        for n in data.get("noise", [])
    ]
    truth = tuple(GroundTruth.from_config(g) for g in data.get("ground_truth", []))
    from .symptoms import normalize as normalize_symptom

    try:
        symptom = normalize_symptom(data.get("symptom"))
    except ValueError as exc:
        raise ConfigError(f"{what} is invalid", errors=[("$.symptom", str(exc))],
                          hints=("see `sregym schema problem` ($.properties.symptom)",)) from exc
    return ProblemSpec(
        id=data["id"], app=data["app"], summary=data.get("summary", ""), faults=faults, noise=noise,
        oracle=data.get("oracle"), ground_truth=truth, tags=data.get("tags", []),
        layer=data.get("layer", "k8s"), failure_mode=data.get("failure_mode", "persistent"),
        difficulty=data.get("difficulty", "easy"), agent_timeout=data.get("agent_timeout", DEFAULT_AGENT_TIMEOUT),
        aliases=data.get("aliases", ()),
        stages=tuple(s for s in ("diagnosis", "mitigation") if s in data.get("stages", ("diagnosis", "mitigation"))),
        judge_threshold=data.get("judge_threshold", 0.7), symptom=symptom, source=Path(source) if source else None,
        agent_access=_agent_access(data.get("agent_access", []), what),
        agent_timeout_reason=data.get("agent_timeout_reason", ""),
    )


def _agent_access(items: list[dict], what: str) -> tuple[AgentGrant, ...]:
    grants = []
    for index, item in enumerate(items):
        grant = AgentGrant(resource=item["resource"], name=item["name"], verbs=item["verbs"],
                           may_change=item["may_change"], group=item.get("group", ""),
                           namespace=item.get("namespace"), standing=item.get("standing"))
        problem = check_grant(grant)
        if problem:
            raise ConfigError(f"{what} is invalid", errors=[(f"$.agent_access[{index}]", problem)],
                              hints=("see `sregym schema problem` ($.properties.agent_access)",))
        grants.append(grant)
    return tuple(grants)


def load_problem_file(path: Path | str) -> ProblemSpec:
    """Read and parse one problem file (phase 1)."""
    return parse_problem(read_document(Path(path)), source=path)


def load_problem_dir(directory: Path | str) -> list[ProblemSpec | BrokenProblem]:
    """Parse every ``*.yaml``/``*.yml`` file under ``directory`` (what plugins call in
    ``sregym_problems``). A file that does not parse or validate becomes a :class:`BrokenProblem`
    naming its path, so one bad file costs only itself."""
    directory = Path(directory)
    if not directory.is_dir():
        return []
    files = sorted([*directory.rglob("*.yaml"), *directory.rglob("*.yml")])
    out: list[ProblemSpec | BrokenProblem] = []
    for path in files:
        try:
            out.append(load_problem_file(path))
        except ConfigError as exc:
            out.append(BrokenProblem(source=path, error=broken_text(exc), id=_declared_id(path)))
    return out


def broken_text(exc: ConfigError) -> str:
    """A problem file's error as one warning's text: the message with its JSON paths and hints."""
    return exc.render().removeprefix("Error: ")


def broken_hint(broken: BrokenProblem) -> str:
    """What to do about a broken problem file: fix it, or disable the plugin that ships it."""
    plugin = f"SREGYM_DISABLE_PLUGINS={broken.plugin}" if broken.plugin else "SREGYM_DISABLE_PLUGINS"
    return (f"fix the file (`sregym schema problem` shows the format), or disable the plugin that ships it "
            f"with {plugin}")


def broken_warning(broken: BrokenProblem) -> str:
    """One warning for a skipped problem file: its id and path, the error (with JSON paths), a hint."""
    error = broken.error.replace("\n", "\n    ")
    return f"skipping broken problem {broken.id or '?'} ({broken.source}): {error}\n    hint: {broken_hint(broken)}"


def unresolvable(problems: Iterable[ProblemSpec], host: Catalog) -> list[BrokenProblem]:
    """The problems that parse but do not resolve against the installed plugins (an app or fault
    that is not installed, a target the fault cannot take, bad params), as broken entries: like a
    file that does not validate, each disables only itself."""
    broken = []
    for problem in problems:
        try:
            resolve_problem(problem, host)
        except ConfigError as exc:
            broken.append(BrokenProblem(source=problem.source or Path(problem.id), error=broken_text(exc),
                                        id=problem.id))
    return broken


def _declared_id(path: Path) -> str:
    """The id a problem file declares, when it reads as a mapping with a string id; else its stem
    (so ``sregym run --problem <id>`` of a broken file can say why it cannot run)."""
    try:
        data = read_document(path)
    except ConfigError:
        data = None
    declared = data.get("id") if isinstance(data, dict) else None
    return declared if isinstance(declared, str) and declared else path.stem


def missing_capabilities(problem: ProblemSpec, host: Catalog, capabilities: Iterable[str]) -> dict[str, frozenset[str]]:
    """fault name -> the cluster capabilities it needs and ``capabilities`` lacks (empty: runnable)."""
    faults = host.get_faults()
    have = frozenset(capabilities)
    missing: dict[str, frozenset[str]] = {}
    for instance in problem.faults:
        spec = faults.get(instance.fault)
        needs = spec.needs(have) if spec is not None else frozenset()
        if needs:
            missing[instance.fault] = needs
    return missing


def unavailable_mechanisms(problem: ProblemSpec, host: Catalog, probe: dict | None) -> dict[str, str]:
    """fault name -> why none of its mechanisms for the operation its parameters choose runs on a
    cluster whose mechanism probe is ``probe`` (None: not probed, nothing is refused)."""
    from . import mechanisms as mech

    if probe is None:
        return {}
    faults = host.get_faults()
    out: dict[str, str] = {}
    for instance in problem.faults:
        spec = faults.get(instance.fault)
        declared = getattr(spec, "mechanisms", None) or {}
        if not declared:
            continue
        ops = mech.operations(declared, instance.params)
        if not any(mech.choose({op: declared[op] for op in ops}, probe).values()):
            out[instance.fault] = mech.unavailable_reason({op: declared[op] for op in ops}, probe)
    return out


def resolve_problem(problem: ProblemSpec, host: Catalog, *, capabilities: Iterable[str] | None = None) -> ProblemSpec:
    """Check a parsed problem against the installed plugins (phase 2) and fill in derived parts."""
    what = f"problem {problem.id!r}" + (f" ({problem.source})" if problem.source else "")
    apps = host.get_apps()
    app = apps.get(problem.app)
    if app is None:
        raise ConfigError(f"{what} is invalid", errors=[("$.app", f"unknown app {problem.app!r}")],
                          hints=(f"installed apps: {', '.join(apps) or 'none'}",))
    faults = host.get_faults()
    resolved: list[FaultInstance] = []
    errors: list[tuple[str, str]] = []
    hints: set[str] = set()
    for index, instance in enumerate(problem.faults):
        spec = faults.get(instance.fault)
        if spec is None:
            errors.append((f"$.faults[{index}].fault", f"unknown fault {instance.fault!r}"))
            continue
        component = app.component(instance.target)
        if component is None:
            errors.append((f"$.faults[{index}].target",
                           f"app {app.name!r} has no component {instance.target!r} "
                           f"(components: {', '.join(c.name for c in app.components)})"))
            continue
        instrument = grading_instrument(app, component)
        if instrument:  # refused whatever the selector or a compatibility hook says
            errors.append((f"$.faults[{index}].target", f"{component.name!r} is {instrument}: never a fault target"))
            hints.add(_INSTRUMENT_HINT)
            continue
        verdict = host.is_compatible(spec, component, app, capabilities=capabilities)
        if verdict.failed == "target":
            errors.append((f"$.faults[{index}].target",
                           f"fault {spec.name!r} cannot target {component.name!r}: {verdict.reason}"))
            continue
        if verdict.failed == "capabilities":
            missing = ", ".join(sorted(spec.needs(frozenset(capabilities or ()))))
            errors.append((f"$.faults[{index}].fault", f"fault {spec.name!r} needs cluster capabilities {missing}"))
            continue
        try:
            params = validate(dict(instance.params), closed(spec.params_schema),
                              what=f"params of fault {spec.name!r}", fill_defaults=True)
        except ConfigError as exc:
            errors += [(f"$.faults[{index}].params" + path[1:], why) for path, why in exc.errors]
            hints.add(params_hint(spec.name, spec.params_schema))
            continue
        resolved.append(attrs.evolve(instance, params=params))
    if errors:
        raise ConfigError(f"{what} is invalid", errors=errors, hints=tuple(sorted(hints)))
    noise_sources = host.get_noise_sources()
    for index, noise in enumerate(problem.noise):
        source = noise_sources.get(noise.noise)
        if source is None:
            errors.append((f"$.noise[{index}].noise", f"unknown noise source {noise.noise!r}"))
            continue
        component = app.component(noise.target) if noise.target else None
        instrument = grading_instrument(app, component) if component is not None else ""
        if instrument and component is not None:
            errors.append((f"$.noise[{index}].target", f"{component.name!r} is {instrument}: never a noise target"))
            hints.add(_INSTRUMENT_HINT)
        elif noise.target and (component is None or not source.selector.matches(component)):
            errors.append((f"$.noise[{index}].target", f"noise {noise.noise!r} cannot act on {noise.target!r}"))
        if noise.target and noise.target in {f.target for f in problem.faults}:
            errors.append((f"$.noise[{index}].target", f"{noise.target!r} is a fault target: noise is never the cause"))
        try:
            validate(dict(noise.params), closed(source.params_schema), what=f"params of noise {noise.noise!r}")
        except ConfigError as exc:
            errors += [(f"$.noise[{index}].params" + path[1:], why) for path, why in exc.errors]
    if errors:
        raise ConfigError(f"{what} is invalid", errors=errors, hints=tuple(sorted(hints)))
    # ground truth not given in the file is derived at attempt time, from the injected state
    # (concrete values such as the original image are only known then)
    for index, instance in enumerate(resolved):
        if instance.role != "trigger":
            target = app.target(instance.target)
            # fails early if a fault's ground_truth is broken (with the empty state it has before injection;
            # the context has no cluster: ground_truth must only read ctx.state). A plugin's bug here
            # disables this problem (a ConfigError), never the listing or the run of the others.
            try:
                derive_ground_truth(faults[instance.fault], FaultContext.detached(app), target, instance)
            except ConfigError:
                raise
            except Exception as exc:  # noqa: BLE001 - any failure of plugin code, named with its fault
                errors.append((f"$.faults[{index}]", f"ground_truth of fault {instance.fault!r} failed before "
                                                     f"injection: {type(exc).__name__}: {exc}"))
    if errors:
        raise ConfigError(f"{what} is invalid", errors=errors, hints=(
            "ground_truth runs when the problem loads, before injection, with no cluster and an empty ctx.state: "
            "it must read only ctx.state, with defaults (a bug of the plugin that ships the fault)",))
    oracle = problem.oracle if problem.oracle is not None else DEFAULT_ORACLE
    return attrs.evolve(problem, faults=tuple(resolved), oracle=oracle)


_INSTRUMENT_HINT = ("the workload generator measures what users see and grades the attempt; aim the fault at "
                    "a component of the app itself (`sregym list-faults --app APP` lists the pairs)")


def grading_instrument(app: AppSpec, component: ComponentSpec) -> str:
    """Why ``component`` of ``app`` is one of the benchmark's grading instruments ("" when it is
    not): it has the ``workload-generator`` role or any ``workload`` role, or it is the workload
    generator the app declares. Such a component is never a fault's or noise's target: breaking
    it would break the measurement, not the app."""
    roles = [role for role in component.roles if role == "workload" or role.startswith(("workload-", "workload:"))]
    if roles:
        return f"a grading instrument (role {', '.join(roles)})"
    if app.workload is not None and component.name == app.workload.name:
        return "the app's workload generator (AppSpec.workload)"
    return ""


def closed(params_schema: Mapping[str, Any]) -> dict[str, Any]:
    """A params schema as problems are checked against it: one that names its properties but left
    ``additionalProperties`` unsaid (a plugin's oversight; the kit fails it) refuses other keys, so
    a misspelt param is an error, never ignored. A schema that opens itself on purpose (``true`` or
    a schema for the extra keys) is kept as it is."""
    schema = dict(params_schema)
    if schema.get("properties") and "additionalProperties" not in schema:
        schema["additionalProperties"] = False
    return schema


def params_hint(fault: str, params_schema: Mapping[str, Any]) -> str:
    """What to do about params a fault refused: the params it takes, and where its schema is."""
    known = sorted((params_schema.get("properties") or {}))
    takes = f"it takes {', '.join(known)}" if known else "it takes no params"
    return f"fault {fault!r}: {takes} (`sregym schema fault/{fault}` prints its params schema)"


def derive_ground_truth(spec: FaultSpec, ctx: FaultContext, target: Target, instance: FaultInstance) -> GroundTruth:
    """The ground truth of one fault instance, from its fault's ``ground_truth`` (reading ``ctx.state``)."""
    truth = spec.impl.ground_truth(ctx, target, dict(instance.params))
    if not isinstance(truth, GroundTruth):
        raise ConfigError(f"fault {spec.name!r} returned {type(truth).__name__} as ground truth, expected GroundTruth")
    return attrs.evolve(truth, user_visible=instance.role != "latent")


def compose_adhoc(host: Catalog, *, app: str, fault: str, target: str, params: Mapping[str, Any] | None = None,
                  capabilities: Iterable[str] | None = None) -> ProblemSpec:
    """Compose a problem on the fly from one viable (app, fault, target) pair."""
    spec = host.get_faults().get(fault)
    if spec is None:
        raise UsageError(f"unknown fault {fault!r}", hints=("`sregym list-faults` lists them",))
    problem = ProblemSpec(
        id=f"adhoc-{app}-{fault}-{target}", app=app, summary=f"{fault} on {target} (ad hoc)",
        faults=(FaultInstance(id="f0", fault=fault, target=target, params=dict(params or {})),),
        tags=("adhoc",), layer=spec.layer, failure_mode=spec.failure_mode,
    )
    return resolve_problem(problem, host, capabilities=capabilities)


def as_upstream(problem: ProblemSpec, upstream_id: str) -> ProblemSpec:
    """``problem`` as run by the upstream SREGym id ``upstream_id`` (one of its aliases): the id is
    recorded beside ours, and the agent gets upstream's time limit (1800 s) unless the problem
    says why its own ``agent_timeout`` must hold (``agent_timeout_reason``)."""
    timeout = problem.agent_timeout if problem.agent_timeout_reason else DEFAULT_AGENT_TIMEOUT
    return attrs.evolve(problem, upstream_id=upstream_id, agent_timeout=timeout)


def problem_to_dict(problem: ProblemSpec) -> dict[str, Any]:
    """A JSON-able view for ``--json`` listings."""
    return {
        "id": problem.id, "app": problem.app, "summary": problem.summary, "tags": list(problem.tags),
        "layer": problem.layer, "failure_mode": problem.failure_mode, "difficulty": problem.difficulty,
        "faults": [{"id": f.id, "fault": f.fault, "target": f.target, "params": dict(f.params),
                    "role": f.role, "when": attrs.asdict(f.when)} for f in problem.faults],
        "aliases": list(problem.aliases), "stages": list(problem.stages), "agent_timeout": problem.agent_timeout,
        **({"agent_timeout_reason": problem.agent_timeout_reason} if problem.agent_timeout_reason else {}),
        **({"upstream_id": problem.upstream_id} if problem.upstream_id else {}),
        "source": str(problem.source) if problem.source else None,
    }
