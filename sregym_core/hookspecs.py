"""Every SREGym hook specification.

Plugins implement these with :data:`sregym_core.hookimpl`. Registration hooks return a list (or any
iterable) of records from :mod:`sregym_core.types`; the facade in :mod:`sregym_core.plugins` flattens
them and rejects duplicate names. Hooks are always called with keyword arguments.

Every registration hook (and ``sregym_register_commands``) may take one argument, ``host``: the
plugin host as a :class:`~sregym_core.catalog.Catalog`, for a plugin whose factories need other
plugins' records (bind it, e.g. with ``functools.partial``; do not read it inside the hook, whose
records the host is still collecting). An implementation that does not name ``host`` is called
without it. This replaces reaching for ``sregym_core.plugins.get_plugin_host()`` (deprecated).

.. versionchanged:: 0.3 registration hooks and ``sregym_register_commands`` take ``host``.

.. versionadded:: 0.1
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from collections.abc import Iterable

    import click

    from .catalog import Catalog
    from .types import (
        AgentSpec,
        AppSpec,
        ClusterProviderSpec,
        ComponentSpec,
        ExecutorSpec,
        FaultInstance,
        FaultSpec,
        Incompatible,
        LocalImage,
        NoiseSpec,
        ObservabilitySpec,
        OracleSpec,
        ProblemSpec,
        ToolSpec,
    )

_hookspec = pluggy.HookspecMarker("sregym")

# ------------------------------------------------------------------------------------------------
# registration
# ------------------------------------------------------------------------------------------------


@_hookspec
def sregym_apps(host: Catalog) -> Iterable[AppSpec]:
    """Register applications.

    :returns: :class:`~sregym_core.types.AppSpec` records.

    **Example:**

    .. code-block:: python

        @hookimpl
        def sregym_apps():
            return [AppSpec(name="hotel-reservation", namespace="hotel-reservation",
                            components=inventory(), deploy=HotelDeploy(), workload=workload_spec())]

    .. versionadded:: 0.1
    """


@_hookspec
def sregym_faults(host: Catalog) -> Iterable[FaultSpec]:
    """Register fault primitives.

    :returns: :class:`~sregym_core.types.FaultSpec` records; their selectors build the
        compatibility matrix.

    **Example:**

    .. code-block:: python

        @hookimpl
        def sregym_faults():
            return [FaultSpec(name="wrong-port", summary="the Service points at a port nobody listens on",
                              selector=TargetSelector(kinds=("Deployment",)), impl=WrongPort())]

    .. versionadded:: 0.1
    """


@_hookspec
def sregym_noise_sources(host: Catalog) -> Iterable[NoiseSpec]:
    """Register noise sources (transient disturbances that are not root causes).

    :returns: :class:`~sregym_core.types.NoiseSpec` records.

    **Example:**

    .. code-block:: python

        @hookimpl
        def sregym_noise_sources():
            return [NoiseSpec(name="pod-kill", summary="delete one unrelated pod", impl=PodKill(),
                              default_period=120.0, default_duration=1.0)]

    .. versionadded:: 0.1
    """


@_hookspec
def sregym_oracles(host: Catalog) -> Iterable[OracleSpec]:
    """Register mitigation-oracle building blocks and diagnosis judges.

    :param host: the plugin host, for a judge or oracle built on another plugin's (optional).
    :returns: :class:`~sregym_core.types.OracleSpec` records (``kind`` ``mitigation`` or ``judge``).

    **Example:**

    .. code-block:: python

        @hookimpl
        def sregym_oracles(host):
            return [OracleSpec(name="p99-under", kind="mitigation", factory=P99Under,
                               config_schema={"type": "object", "properties": {"ms": {"type": "number"}}}),
                    OracleSpec(name="gated", kind="judge", factory=functools.partial(GatedJudge, host=host))]

    .. versionadded:: 0.1
    .. versionchanged:: 0.3 ``host``.
    """


@_hookspec
def sregym_agents(host: Catalog) -> Iterable[AgentSpec]:
    """Register agents.

    :returns: :class:`~sregym_core.types.AgentSpec` records.

    **Example:**

    .. code-block:: python

        @hookimpl
        def sregym_agents():
            return [AgentSpec(name="my-agent", summary="my SRE agent", factory=MyAgent, needs={"kubectl"})]

    .. versionadded:: 0.1
    """


@_hookspec
def sregym_clusters(host: Catalog) -> Iterable[ClusterProviderSpec]:
    """Register cluster providers (the embedded cluster, any kubeconfig...).

    :returns: :class:`~sregym_core.types.ClusterProviderSpec` records.

    **Example:**

    .. code-block:: python

        @hookimpl
        def sregym_clusters():
            return [ClusterProviderSpec(name="kind", capabilities={"any"}, factory=KindProvider)]

    .. versionadded:: 0.1
    """


@_hookspec
def sregym_executors(host: Catalog) -> Iterable[ExecutorSpec]:
    """Register executors: other ways to run a plan's work items (``--executor NAME``), such as
    spreading them over the workers of a distributed engine. The built-in executor (``local``)
    runs ``--parallel N`` environments in one process.

    :returns: :class:`~sregym_core.types.ExecutorSpec` records.

    **Example:**

    .. code-block:: python

        @hookimpl
        def sregym_executors():
            return [ExecutorSpec(name="ray", summary="work items on Ray workers", run=run_on_ray)]

    .. versionadded:: 0.1
    """


@_hookspec
def sregym_problems(host: Catalog) -> Iterable[ProblemSpec]:
    """Register curated problems, usually loaded from YAML files the plugin ships.

    ``sregym_core.problems.load_problem_dir(path)`` parses a directory of problem files; a file
    that does not parse or validate comes back as a :class:`~sregym_core.types.BrokenProblem`
    naming its path. It disables that problem only: commands warn about it (the file, the JSON path
    of the error, a hint) and go on with the rest, ``sregym list-problems --all`` lists it as broken,
    and asking for its id is an error that says why. A hook that raises disables the plugin's problems
    the same way (``tests/test_problem_files.py``).

    :returns: :class:`~sregym_core.types.ProblemSpec` (and ``BrokenProblem``) records.

    **Example:**

    .. code-block:: python

        @hookimpl
        def sregym_problems():
            return load_problem_dir(Path(__file__).with_name("problems"))

    .. versionadded:: 0.1
    .. versionchanged:: 0.2
       a broken file disables its own problem, not ``run``/``validate``.
    """


@_hookspec
def sregym_local_images(host: Catalog) -> Iterable[LocalImage]:
    """Register local images: how the embedded cluster runs an image reference as a process.

    Apps also carry their own images in ``AppSpec.images``; this hook is for images that belong to
    no app (observability servers, helper images).

    :returns: :class:`~sregym_core.types.LocalImage` records.

    **Example:**

    .. code-block:: python

        @hookimpl
        def sregym_local_images():
            return [LocalImage(image="registry.example/echo:1.0", argv=("python3", "-m", "http.server", "8080"))]

    .. versionadded:: 0.1
    """


@_hookspec
def sregym_observability(host: Catalog) -> Iterable[ObservabilitySpec]:
    """Register observability stacks (metrics, alerts, logs, traces) the conductor can deploy.

    The conductor deploys the first one once per cluster, before any app, keeps it across problems,
    and hands its endpoints to the agent tools.

    :returns: :class:`~sregym_core.types.ObservabilitySpec` records.

    **Example:**

    .. code-block:: python

        @hookimpl
        def sregym_observability():
            return [ObservabilitySpec(name="my-stack", render=render_manifests,
                                      services={"prometheus": ("prometheus", 9090)})]

    .. versionadded:: 0.1
    """


@_hookspec
def sregym_agent_tools(host: Catalog) -> Iterable[ToolSpec]:
    """Register tools agents can call over MCP besides kubectl and submit.

    The observability plugin registers ``get_metrics``, ``get_alerts``, ``get_logs``,
    ``get_services``, ``get_operations``, ``get_traces`` and ``get_dependency_graph`` this way; the
    MCP server answers "not available" for any of those names no plugin provides. A record's
    ``upstream_call`` is the same tool answering in upstream SREGym's return shape; the per-family
    MCP mounts (``/prometheus/sse``, ``/loki/sse``, ``/jaeger/sse``) call it when it is given.

    :returns: :class:`~sregym_core.types.ToolSpec` records.

    **Example:**

    .. code-block:: python

        @hookimpl
        def sregym_agent_tools():
            return [ToolSpec(name="get_runbook", summary="the team's runbook for a service",
                             parameters={"type": "object", "properties": {"service": {"type": "string"}}},
                             call=get_runbook)]

    .. versionadded:: 0.1
    """


# ------------------------------------------------------------------------------------------------
# decisions
# ------------------------------------------------------------------------------------------------


@_hookspec(firstresult=True)
def sregym_check_compatibility(fault: FaultSpec, component: ComponentSpec, app: AppSpec) -> bool | Incompatible | None:
    """Override one cell of the compatibility matrix.

    Stops at first non-None result.

    For what a fault's selector cannot see in the component inventory: a pair the selector matches
    where the fault still cannot take effect. ``sregym list-faults`` does not list a refused pair as
    viable (``--all`` shows it with the reason), and a problem naming it fails validation instead
    of failing at injection. Implement it in the plugin that holds the knowledge (the fault pack
    that knows what its fault needs, or the app that knows its components), and return ``None`` for
    every pair you know nothing about.

    :param fault: the fault primitive.
    :param component: the candidate target.
    :param app: the app the component belongs to.
    :returns: ``True`` to accept (the selector is not consulted), ``False`` or an
        :class:`~sregym_core.types.Incompatible` saying why to refuse, ``None`` to defer to the
        fault's selector.

    **Example:**

    .. code-block:: python

        # sregym-fault-k8s: missing-secret deletes the Secret a component's pods read; its
        # selector (a service with env vars) cannot tell whether any env var comes from one
        @hookimpl
        def sregym_check_compatibility(fault, component, app):
            if fault.name != "missing-secret" or not fault.selector.matches(component):
                return None  # not ours, or the selector already refuses it and says why
            workload = manifest_workloads(app).get((component.kind, component.name))
            if workload is not None and secret_read_by(workload) is None:
                return Incompatible(f"{component.name} reads no Secret (no secretKeyRef or secretRef)")
            return None

    .. versionadded:: 0.1
    .. versionchanged:: 0.2 may return :class:`~sregym_core.types.Incompatible`.
    """


# ------------------------------------------------------------------------------------------------
# lifecycle
# ------------------------------------------------------------------------------------------------


@_hookspec
def sregym_before_inject(problem: ProblemSpec, instance: FaultInstance) -> None:
    """Called just before a fault instance is injected.

    :param problem: the running problem.
    :param instance: the fault instance about to be injected.

    **Example:**

    .. code-block:: python

        @hookimpl
        def sregym_before_inject(problem, instance):
            log.info("injecting", problem=problem.id, fault=instance.fault, target=instance.target)

    .. versionadded:: 0.1
    """


@_hookspec
def sregym_after_inject(problem: ProblemSpec, instance: FaultInstance) -> None:
    """Called after a fault instance was injected.

    :param problem: the running problem.
    :param instance: the injected fault instance.

    **Example:**

    .. code-block:: python

        @hookimpl
        def sregym_after_inject(problem, instance):
            injected_at[instance.id] = time.monotonic()

    .. versionadded:: 0.1
    """


@_hookspec
def sregym_before_recover(problem: ProblemSpec, instance: FaultInstance) -> None:
    """Called just before a fault instance is recovered.

    :param problem: the running problem.
    :param instance: the fault instance about to be recovered.

    **Example:**

    .. code-block:: python

        @hookimpl
        def sregym_before_recover(problem, instance):
            log.info("recovering", problem=problem.id, fault=instance.fault)

    .. versionadded:: 0.1
    """


@_hookspec
def sregym_after_recover(problem: ProblemSpec, instance: FaultInstance) -> None:
    """Called after a fault instance was recovered.

    :param problem: the running problem.
    :param instance: the recovered fault instance.

    **Example:**

    .. code-block:: python

        @hookimpl
        def sregym_after_recover(problem, instance):
            injected_at.pop(instance.id, None)

    .. versionadded:: 0.1
    """


@_hookspec
def sregym_run_started(results_dir: str, run_id: str) -> None:
    """Called once when a run starts (``sregym run``, ``sregym validate``, an executor such as
    ``--executor ray``), before its first attempt.

    The builtin results plugin (``results-writer``, :mod:`sregym_core.results.results_writer`)
    opens the run's files here: upstream SREGym's CSV layout is per run, under ``<MMDD_HHMM>/``
    of the time the run started. A plugin that writes records elsewhere opens its sink here too.

    :param results_dir: the directory the run records into (``--results``).
    :param run_id: the run's id, which every record of the run carries (``record.run_id``).

    **Example:**

    .. code-block:: python

        @hookimpl
        def sregym_run_started(results_dir, run_id):
            sinks[results_dir] = open(Path(results_dir) / f"{run_id}.ndjson", "a", encoding="utf-8")

    .. versionadded:: 0.3
    """


@_hookspec
def sregym_attempt_finished(record: Any, results_dir: str | None) -> None:
    """Called for every attempt record a run makes, deploy failures included
    (``record.deploy_failed``), and for every episode of an RL environment made with a results
    directory.

    This hook writes the results: the builtin ``results-writer`` plugin implements it
    (``tryfirst``, so every other implementation runs once the record is on disk) and appends the
    record, fsynced, to ``results.jsonl`` and ``results.csv`` under ``results_dir`` and to upstream
    SREGym's per-run CSV layout. Add a results sink by implementing it in a plugin of your own;
    replace the builtin's by blocking it (``SREGYM_DISABLE_PLUGINS=results-writer``; ``--resume``
    and ``sregym report`` read ``results.jsonl``). Implementations are called one by one: one that
    raises is logged and reported by the run, which goes on, and the others still get the record
    (the builtin writer failing, say on a record its schema refuses, stops the run).

    :param record: the :class:`~sregym_core.results.AttemptRecord`.
    :param results_dir: the run's results directory; ``None`` when the caller records nowhere.

    **Example:**

    .. code-block:: python

        @hookimpl
        def sregym_attempt_finished(record, results_dir):
            sinks[results_dir].write(json.dumps(record.to_dict()) + "\\n")

    .. versionadded:: 0.1
    .. versionchanged:: 0.3
       ``results_dir``; called for deploy failures and RL episodes too; the builtin results writer
       is its first implementation; an implementation that raises no longer stops the run.
    """


@_hookspec
def sregym_run_finished(results_dir: str, records: list[Any]) -> None:
    """Called once when a run finishes (after its last record; not when the run itself failed).

    The builtin ``results-writer`` closes the run's files here (``tryfirst``). An implementation
    that raises is logged and reported; the others are still called.

    :param results_dir: where the records were written.
    :param records: every attempt record of the run (not those ``--resume`` skipped).

    **Example:**

    .. code-block:: python

        @hookimpl
        def sregym_run_finished(results_dir, records):
            print(f"{sum(r.success for r in records)}/{len(records)} solved; see {results_dir}")

    .. versionadded:: 0.1
    .. versionchanged:: 0.3 an implementation that raises no longer stops the others.
    """


# ------------------------------------------------------------------------------------------------
# CLI
# ------------------------------------------------------------------------------------------------


@_hookspec
def sregym_register_commands(cli: click.Group, host: Catalog) -> None:
    """Add commands to the ``sregym`` command line.

    :param cli: the root click group; call ``cli.add_command(...)``.
    :param host: the plugin host (:class:`~sregym_core.catalog.Catalog`), for commands that read
        other plugins' records; take it only if you need it.

    **Example:**

    .. code-block:: python

        @hookimpl
        def sregym_register_commands(cli):
            cli.add_command(cluster_group)

    .. versionadded:: 0.1
    """
