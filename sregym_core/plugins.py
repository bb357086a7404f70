"""The plugin manager and its typed facade.

Builtins are registered first, from :data:`DEFAULT_PLUGINS`, then every module of the ``sregym``
entry-point group. Environment controls:

* ``SREGYM_LOAD_PLUGINS`` — comma-separated allow-list of distributions or entry-point names; set but
  empty means *no* external plugins.
* ``SREGYM_DISABLE_PLUGINS`` — comma-separated block-list (entry-point or distribution names, or
  the name of a builtin such as ``results-writer``, as pytest's ``-p no:junitxml`` blocks one of its
  own; :meth:`PluginHost.block` does the same in code).
* ``SREGYM_TRACE_PLUGINS=1`` — log every hook call at debug level.

The lifecycle notifications (``sregym_run_started``, ``sregym_attempt_finished``,
``sregym_run_finished``) are called implementation by implementation: one that raises is logged and
kept as a :class:`HookFailure` (returned to the caller, which reports it) while the others are still
called, so a broken third-party results sink cannot cost the builtin's records. A builtin that
raises there stops the run (the builtin results writer refusing a record, a full disk).

A builtin that fails to import is a :class:`~sregym_core.errors.PluginError`; an external plugin
whose import fails is a :class:`~sregym_core.errors.PluginImportError` naming its entry point, its
distribution and the exception (uninstall it, or skip it with ``SREGYM_DISABLE_PLUGINS``: a
blocked or not-allowed plugin is never imported). A plugin that fails validation (unknown hook, bad record, a name another plugin also registers) is a
:class:`~sregym_core.errors.PluginError` naming every provider.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import warnings
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

import attrs
import pluggy
import structlog

from . import hookspecs
from .catalog import Verdict
from .errors import PluginError, PluginImportError, SregymError
from .types import (
    AgentSpec,
    AppSpec,
    BrokenProblem,
    ClusterProviderSpec,
    ExecutorSpec,
    ComponentSpec,
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

log = structlog.get_logger()

ENTRY_POINT_GROUP = "sregym"

#: Builtin plugin modules, registered in code before entry points (so entry points run first). A
#: builtin's plugin name is its module's last part with ``-`` for ``_`` (:func:`builtin_name`).
#: ``results_writer`` is engine code (it writes a run's records from the lifecycle hooks, as pytest's
#: junitxml is a plugin on pytest's); it is named here, not imported, so the host stays below the
#: engine, and it needs no dependency of the ``[run]`` extra.
DEFAULT_PLUGINS: tuple[str, ...] = ("sregym_core.oracles.builtin", "sregym_core.results.results_writer")

R = TypeVar("R")

_REPORT_TO = "Please report this issue to the plugin author(s)."


@attrs.frozen(kw_only=True)
class PluginInfo:
    """What ``sregym plugins`` shows about one plugin."""

    name: str
    distribution: str
    version: str
    status: str  # loaded | blocked | builtin
    hooks: tuple[str, ...] = ()


@attrs.frozen(kw_only=True)
class HookFailure:
    """A plugin whose lifecycle hook raised: logged and reported; the other plugins were still called."""

    plugin: str
    provider: str
    hook: str
    error: str

    def describe(self) -> str:
        return f"plugin '{self.plugin}' ({self.provider}) failed in {self.hook}: {self.error}"


def builtin_name(module_name: str) -> str:
    """The plugin name of a builtin module: ``sregym_core.results.results_writer`` -> ``results-writer``."""
    return module_name.rsplit(".", 1)[-1].replace("_", "-")


@attrs.define
class PluginHost:
    """Typed facade around the pluggy manager: flattens registration hooks, rejects duplicates."""

    pm: pluggy.PluginManager
    _infos: dict[str, PluginInfo] = attrs.Factory(dict)
    _dists: dict[str, tuple[str, str]] = attrs.Factory(dict)
    _cache: dict[str, Any] = attrs.Factory(dict)
    #: every lifecycle hook failure of a plugin, in order (each also logged and returned to the caller)
    hook_failures: list[HookFailure] = attrs.Factory(list)

    # -------------------------------------------------------------------------------- loading

    def register(self, plugin: object, name: str | None = None, *, distribution: str | None = None,
                 version: str = "", builtin: bool = False) -> str:
        """Register ``plugin`` (a module or object with hookimpls) and return its canonical name."""
        try:
            registered = self.pm.register(plugin, name=name)
        except pluggy.PluginValidationError as exc:
            raise PluginError(f"plugin {name or plugin!r} is invalid: {exc}", hints=(_REPORT_TO,)) from exc
        if registered is None:
            return name or ""
        dist = distribution or ("sregym-core" if builtin else registered)
        self._dists[registered] = (dist, version)
        self._infos[registered] = PluginInfo(
            name=registered, distribution=dist, version=version,
            status="builtin" if builtin else "loaded", hooks=self._hooks_of(plugin),
        )
        self._cache.clear()
        return registered

    def unregister(self, name: str) -> None:
        plugin = self.pm.get_plugin(name)
        if plugin is not None:
            self.pm.unregister(plugin)
        self._infos.pop(name, None)
        self._dists.pop(name, None)
        self._cache.clear()

    def block(self, name: str) -> None:
        """Block the plugin ``name`` (builtin or not): unregistered if it is, never registered later.
        What ``SREGYM_DISABLE_PLUGINS=name`` does, in code (pytest's ``-p no:name``)."""
        info = self._infos.get(name)
        self.unregister(name)
        self.pm.set_blocked(name)
        self._infos[name] = PluginInfo(name=name, distribution=info.distribution if info else name,
                                       version=info.version if info else "", status="blocked")

    def load_builtins(self, modules: Iterable[str] = DEFAULT_PLUGINS) -> None:
        from . import __version__

        block = _env_list("SREGYM_DISABLE_PLUGINS") or set()
        for module_name in modules:
            name = builtin_name(module_name)
            if name in block:  # e.g. results-writer, for a run whose records another plugin writes
                self.pm.set_blocked(name)
                self._infos[name] = PluginInfo(name=name, distribution="sregym-core", version=__version__,
                                               status="blocked")
                continue
            try:
                module = importlib.import_module(module_name)
            except Exception as exc:  # a broken builtin is a broken install, never a missing feature
                raise PluginError(f"builtin plugin {module_name} failed to import: {type(exc).__name__}: {exc}",
                                  hints=("reinstall sregym-core; run with --debug for the traceback",)) from exc
            self.register(module, name=name, version=__version__, builtin=True)

    def load_entry_points(self, group: str = ENTRY_POINT_GROUP) -> None:
        allow = _env_list("SREGYM_LOAD_PLUGINS")
        block = _env_list("SREGYM_DISABLE_PLUGINS") or set()
        for ep in sorted(importlib.metadata.entry_points(group=group), key=lambda e: e.name):
            dist = ep.dist.name if ep.dist else "?"
            version = ep.dist.version if ep.dist else ""
            if allow is not None and ep.name not in allow and dist not in allow:
                continue
            if ep.name in block or dist in block:
                self.pm.set_blocked(ep.name)
                self._infos[ep.name] = PluginInfo(name=ep.name, distribution=dist, version=version, status="blocked")
                continue
            if self.pm.get_plugin(ep.name) is not None or self.pm.is_blocked(ep.name):
                continue
            try:
                plugin = ep.load()
            except Exception as exc:  # a broken install is an error naming it, never a missing feature
                raise PluginImportError(ep.name, dist, exc) from exc
            self.register(plugin, name=ep.name, distribution=dist, version=version)
        try:
            self.pm.check_pending()
        except pluggy.PluginValidationError as exc:
            raise PluginError(f"a plugin implements an unknown hook: {exc}", hints=(_REPORT_TO,)) from exc
        if os.environ.get("SREGYM_TRACE_PLUGINS") == "1":
            self.pm.trace.root.setwriter(lambda text: log.debug("hook_trace", text=text.rstrip()))
            self.pm.enable_tracing()

    # -------------------------------------------------------------------------------- facade

    def plugin_infos(self) -> list[PluginInfo]:
        infos = dict(self._infos)
        for name, plugin in self.pm.list_name_plugin():
            if name not in infos and plugin is not None:
                infos[name] = PluginInfo(name=name, distribution=name, version="", status="loaded",
                                         hooks=self._hooks_of(plugin))
        return sorted(infos.values(), key=lambda i: (i.status != "builtin", i.name))

    def get_apps(self) -> dict[str, AppSpec]:
        return self._collect("sregym_apps", AppSpec)

    def get_faults(self) -> dict[str, FaultSpec]:
        return self._collect("sregym_faults", FaultSpec)

    def get_noise_sources(self) -> dict[str, NoiseSpec]:
        return self._collect("sregym_noise_sources", NoiseSpec)

    def get_oracles(self) -> dict[str, OracleSpec]:
        return self._collect("sregym_oracles", OracleSpec)

    def get_agents(self) -> dict[str, AgentSpec]:
        return self._collect("sregym_agents", AgentSpec)

    def get_clusters(self) -> dict[str, ClusterProviderSpec]:
        return self._collect("sregym_clusters", ClusterProviderSpec)

    def get_executors(self) -> dict[str, ExecutorSpec]:
        return self._collect("sregym_executors", ExecutorSpec)

    def get_problems(self) -> dict[str, ProblemSpec]:
        return self._collect("sregym_problems", ProblemSpec, key=lambda p: p.id)

    def broken_problems(self) -> list[BrokenProblem]:
        """Problem files plugins ship that failed to parse or validate (reported, never run)."""
        self.get_problems()
        return list(self._cache.get("broken:sregym_problems", []))

    def get_observability(self) -> dict[str, ObservabilitySpec]:
        return self._collect("sregym_observability", ObservabilitySpec)

    def get_agent_tools(self) -> dict[str, ToolSpec]:
        return self._collect("sregym_agent_tools", ToolSpec)

    def get_local_images(self) -> list[LocalImage]:
        """Every local image: from apps first, then from ``sregym_local_images``."""
        return [image for _owner, image in self.get_local_image_owners()]

    def get_local_image_owners(self) -> list[tuple[str, LocalImage]]:
        """Every local image with who declared it (``app 'x'`` or ``plugin 'p' (distribution)``),
        so an image that turns out broken can be reported by its owner."""
        images: list[tuple[str, LocalImage]] = [(f"app '{app.name}'", img) for app in self.get_apps().values()
                                                for img in app.images]
        for provider, records in self._call_each("sregym_local_images"):
            owner = f"plugin '{provider}' ({self.provider_of(provider)})"
            for record in records:
                if not isinstance(record, LocalImage):
                    raise PluginError(f"{owner} returned {type(record).__name__} from sregym_local_images, "
                                      "expected LocalImage", hints=(_REPORT_TO,))
                images.append((owner, record))
        return images

    # -------------------------------------------------------------------------------- decisions

    def is_compatible(self, fault: FaultSpec, component: ComponentSpec, app: AppSpec, *,
                      capabilities: Iterable[str] | None = None) -> Verdict:
        """Can ``fault`` take effect on ``component`` of ``app`` (on a cluster with ``capabilities``)?

        A plugin's ``sregym_check_compatibility`` decides first (an :class:`Incompatible` answer
        gives the reason); otherwise the fault's selector does. Cluster capabilities are checked last
        (``None`` means "any cluster").
        """
        decided = self.pm.hook.sregym_check_compatibility(fault=fault, component=component, app=app)
        if decided is None:
            fits, reason = fault.selector.matches(component), f"needs {fault.selector.describe()}"
        elif isinstance(decided, Incompatible):
            fits, reason = False, decided.reason
        elif isinstance(decided, bool):
            fits, reason = decided, "refused by a plugin's compatibility check"
        else:
            raise PluginError(f"sregym_check_compatibility returned a {type(decided).__name__} for fault "
                              f"'{fault.name}' on '{app.name}/{component.name}', expected True, False, "
                              "Incompatible or None", hints=(_REPORT_TO,))
        if not fits:
            return Verdict(ok=False, reason=reason, failed="target")
        if capabilities is not None:
            missing = fault.needs(frozenset(capabilities))
            if missing:
                return Verdict(ok=False, reason="cluster lacks " + ", ".join(sorted(missing)), failed="capabilities")
        return Verdict(ok=True)

    # -------------------------------------------------------------------------------- lifecycle

    def before_inject(self, problem: ProblemSpec, instance: FaultInstance) -> None:
        self.pm.hook.sregym_before_inject(problem=problem, instance=instance)

    def after_inject(self, problem: ProblemSpec, instance: FaultInstance) -> None:
        self.pm.hook.sregym_after_inject(problem=problem, instance=instance)

    def before_recover(self, problem: ProblemSpec, instance: FaultInstance) -> None:
        self.pm.hook.sregym_before_recover(problem=problem, instance=instance)

    def after_recover(self, problem: ProblemSpec, instance: FaultInstance) -> None:
        self.pm.hook.sregym_after_recover(problem=problem, instance=instance)

    def run_started(self, results_dir: str, run_id: str) -> list[HookFailure]:
        """A run recording into ``results_dir`` starts; returns the plugins that failed (reported)."""
        return self._notify("sregym_run_started", results_dir=results_dir, run_id=run_id)

    def attempt_finished(self, record: Any, results_dir: str | None = None) -> list[HookFailure]:
        """Hand one attempt record to every plugin: the builtin results writer appends it to
        ``results_dir`` first. Returns the plugins that failed (logged; the caller reports them)."""
        return self._notify("sregym_attempt_finished", record=record, results_dir=results_dir)

    def run_finished(self, results_dir: str, records: list[Any]) -> list[HookFailure]:
        return self._notify("sregym_run_finished", results_dir=results_dir, records=records)

    def register_commands(self, cli: Any) -> None:
        """Let every plugin add commands to the root click group (``host`` is this host)."""
        self.pm.hook.sregym_register_commands(cli=cli, host=self)

    def provider_of(self, plugin_name: str) -> str:
        dist, version = self._dists.get(plugin_name, (plugin_name, ""))
        return f"{dist} {version}".strip()

    # -------------------------------------------------------------------------------- internals

    def _notify(self, hook_name: str, **kwargs: Any) -> list[HookFailure]:
        """Call every implementation of a lifecycle notification in pluggy's order (``tryfirst``
        first, then the latest registered first), each on its own: a plugin that raises is logged and
        returned as a :class:`HookFailure` and the next one is still called. A builtin that raises
        (the results writer refusing a record, a full disk) stops the caller, as before."""
        hook = getattr(self.pm.hook, hook_name)
        failures: list[HookFailure] = []
        trace = os.environ.get("SREGYM_TRACE_PLUGINS") == "1"  # pluggy's tracing sees no call made this way
        for impl in reversed(hook.get_hookimpls()):
            if trace:
                log.debug("hook_trace", text=f"{hook_name} [{impl.plugin_name}] {sorted(kwargs)}")
            if impl.hookwrapper or impl.wrapper:
                raise PluginError(f"plugin '{impl.plugin_name}' ({self.provider_of(impl.plugin_name)}) wraps "
                                  f"{hook_name}, a notification called one implementation at a time",
                                  hints=("implement it as a plain @hookimpl (tryfirst/trylast order it)", _REPORT_TO))
            try:
                impl.function(*[kwargs[name] for name in impl.argnames])
            except Exception as exc:
                info = self._infos.get(impl.plugin_name)
                if info is not None and info.status == "builtin":
                    raise
                failure = HookFailure(plugin=impl.plugin_name, provider=self.provider_of(impl.plugin_name),
                                      hook=hook_name, error=f"{type(exc).__name__}: {exc}")
                log.warning("plugin_hook_failed", plugin=failure.plugin, provider=failure.provider, hook=hook_name,
                            error=failure.error, exc_info=exc)
                self.hook_failures.append(failure)
                failures.append(failure)
        return failures

    def _call_each(self, hook_name: str, *, on_error: Callable[[str, Exception], Any] | None = None,
                   ) -> list[tuple[str, list[Any]]]:
        """Every implementation's records, in registration order. A plugin that fails is a
        PluginError, unless ``on_error(plugin, exc)`` turns its failure into a record."""
        hook = getattr(self.pm.hook, hook_name)
        results = []
        for impl in reversed(hook.get_hookimpls()):  # registration order: builtins first
            try:
                # the one argument of a registration hook: this host, for factories that need other
                # plugins' records (an implementation that does not name it is called without it)
                given = {"host": self}
                returned = impl.function(*[given[name] for name in impl.argnames])
            except Exception as exc:
                if on_error is not None:
                    results.append((impl.plugin_name, [on_error(impl.plugin_name, exc)]))
                    continue
                if isinstance(exc, PluginError):
                    raise
                raise PluginError(
                    f"plugin '{impl.plugin_name}' ({self.provider_of(impl.plugin_name)}) failed in {hook_name}: "
                    f"{type(exc).__name__}: {exc}",
                    hints=(_REPORT_TO,),
                ) from exc
            if returned is None:
                continue
            results.append((impl.plugin_name, list(returned)))
        return results

    def _collect(self, hook_name: str, record_type: type[R], key: Callable[[Any], str] | None = None) -> dict[str, R]:
        if hook_name in self._cache:
            return self._cache[hook_name]
        key = key or (lambda record: record.name)
        found: dict[str, R] = {}
        providers: dict[str, list[str]] = {}
        broken: list[BrokenProblem] = []
        # a plugin's problems are data: one that fails to load them disables its problems, not the CLI
        on_error = self._broken_problems_of if hook_name == "sregym_problems" else None
        for plugin_name, records in self._call_each(hook_name, on_error=on_error):
            for record in records:
                if isinstance(record, BrokenProblem):
                    broken.append(attrs.evolve(record, plugin=record.plugin or plugin_name))
                    continue
                if not isinstance(record, record_type):
                    raise PluginError(
                        f"plugin '{plugin_name}' ({self.provider_of(plugin_name)}) returned a "
                        f"{type(record).__name__} from {hook_name}, expected {record_type.__name__}",
                        hints=(_REPORT_TO,),
                    )
                name = key(record)
                providers.setdefault(name, []).append(plugin_name)
                found.setdefault(name, record)
        clashes = {name: who for name, who in providers.items() if len(who) > 1}
        if clashes:
            lines = [
                f"{record_type.__name__} '{name}' is registered by "
                + " and ".join(f"'{p}' ({self.provider_of(p)})" for p in who)
                for name, who in sorted(clashes.items())
            ]
            raise PluginError(
                "duplicate names: " + "; ".join(lines),
                hints=("uninstall one of the distributions or disable one with SREGYM_DISABLE_PLUGINS", _REPORT_TO),
            )
        result = dict(sorted(found.items()))
        self._cache[hook_name] = result
        self._cache[f"broken:{hook_name}"] = broken
        return result

    def _broken_problems_of(self, plugin_name: str, exc: Exception) -> BrokenProblem:
        """A plugin whose ``sregym_problems`` raised, as one broken entry naming it."""
        text = exc.render().removeprefix("Error: ") if isinstance(exc, SregymError) else f"{type(exc).__name__}: {exc}"
        return BrokenProblem(source=Path(f"<plugin {plugin_name} ({self.provider_of(plugin_name)})>"),
                             error=f"its sregym_problems hook failed: {text}", plugin=plugin_name)

    @staticmethod
    def _hooks_of(plugin: object) -> tuple[str, ...]:
        return tuple(sorted(n for n in dir(plugin) if n.startswith("sregym_") and callable(getattr(plugin, n, None))))


def _env_list(name: str) -> set[str] | None:
    raw = os.environ.get(name)
    if raw is None:
        return None
    return {item.strip() for item in raw.split(",") if item.strip()}


def new_plugin_host(*, builtins: bool = True, entry_points: bool = True) -> PluginHost:
    """Create a fresh host (tests use this through fixtures; the CLI through the cache)."""
    pm = pluggy.PluginManager("sregym")
    pm.add_hookspecs(hookspecs)
    host = PluginHost(pm=pm)
    if builtins:
        host.load_builtins()
    if entry_points:
        host.load_entry_points()
    return host


_HOST: PluginHost | None = None


def process_host() -> PluginHost:
    """This process's host: the one :func:`set_plugin_host` installed, else one of the installed
    plugins, created (entry points loaded) on first use.

    For the code that starts a process (the ``sregym`` CLI, a test harness, a script). Plugin code
    never needs it: registration hooks receive the host as their ``host`` argument
    (:mod:`sregym_core.catalog`)."""
    global _HOST
    if _HOST is None:
        _HOST = new_plugin_host()
    return _HOST


def get_plugin_host() -> PluginHost:
    """The process-wide plugin host.

    .. deprecated:: 0.3
       Plugins receive the host as the ``host`` argument of their registration hook (bind it into
       the factories that need it); a process's own entry point uses :func:`process_host`. Removed
       in 0.4.
    """
    warnings.warn("sregym_core.plugins.get_plugin_host() is deprecated and goes away in sregym-core 0.4: "
                  "take the host as the `host` argument of your registration hook (sregym_core.catalog), "
                  "or call process_host() where a process starts", DeprecationWarning, stacklevel=2)
    return process_host()


def set_plugin_host(host: PluginHost | None) -> PluginHost | None:
    """Replace the process-wide host (the test harness uses this); returns the previous one."""
    global _HOST
    previous, _HOST = _HOST, host
    return previous
