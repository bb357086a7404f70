"""The PluginHost facade: every hook is called through a typed method, builtins fail loudly."""

from __future__ import annotations

import click
import pytest

from sregym_core import hookimpl
from sregym_core.errors import PluginError
from sregym_core.plugins import new_plugin_host
from sregym_core.types import FaultInstance, ProblemSpec
from sregym_core.testing import StateFault


class _Recorder:
    """A plugin implementing every lifecycle hook, recording what it receives."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []

    @hookimpl
    def sregym_before_inject(self, problem, instance):
        self.calls.append(("before_inject", problem.id, instance.id))

    @hookimpl
    def sregym_after_inject(self, problem, instance):
        self.calls.append(("after_inject", problem.id, instance.id))

    @hookimpl
    def sregym_before_recover(self, problem, instance):
        self.calls.append(("before_recover", problem.id, instance.id))

    @hookimpl
    def sregym_after_recover(self, problem, instance):
        self.calls.append(("after_recover", problem.id, instance.id))

    @hookimpl
    def sregym_run_started(self, results_dir, run_id):
        self.calls.append(("run_started", results_dir, run_id))

    @hookimpl
    def sregym_attempt_finished(self, record, results_dir):
        self.calls.append(("attempt_finished", record, results_dir))

    @hookimpl
    def sregym_run_finished(self, results_dir, records):
        self.calls.append(("run_finished", results_dir, tuple(records)))

    @hookimpl
    def sregym_register_commands(self, cli):
        cli.add_command(click.Command("hello-from-plugin", callback=lambda: None))


def test_lifecycle_methods_reach_every_implementation(plugin_host, register_plugin):
    recorder = _Recorder()
    register_plugin(recorder)
    instance = FaultInstance(id="f0", fault="noop", target="api")
    problem = ProblemSpec(id="p1", app="fake-app", faults=(instance,))
    plugin_host.before_inject(problem, instance)
    plugin_host.after_inject(problem, instance)
    plugin_host.before_recover(problem, instance)
    plugin_host.after_recover(problem, instance)
    assert plugin_host.run_started("/tmp/results", "run-1") == []
    assert plugin_host.attempt_finished("record-1", results_dir="/tmp/results") == []
    assert plugin_host.attempt_finished("record-2") == []  # a caller that records nowhere: results_dir None
    assert plugin_host.run_finished("/tmp/results", ["record-1"]) == []
    assert recorder.calls == [
        ("before_inject", "p1", "f0"), ("after_inject", "p1", "f0"),
        ("before_recover", "p1", "f0"), ("after_recover", "p1", "f0"),
        ("run_started", "/tmp/results", "run-1"), ("attempt_finished", "record-1", "/tmp/results"),
        ("attempt_finished", "record-2", None), ("run_finished", "/tmp/results", ("record-1",)),
    ]


def test_register_commands_adds_plugin_commands(plugin_host, register_plugin):
    register_plugin(_Recorder())
    group = click.Group("root")
    plugin_host.register_commands(group)
    assert "hello-from-plugin" in group.commands


def test_a_builtin_that_fails_to_import_is_an_error_naming_it():
    host = new_plugin_host(builtins=False, entry_points=False)
    with pytest.raises(PluginError) as info:
        host.load_builtins(("sregym_core.no_such_builtin",))
    assert "sregym_core.no_such_builtin" in str(info.value)


def test_every_builtin_command_is_registered():
    from sregym_core.cli import cli

    expected = {"plugins", "list-apps", "list-faults", "list-problems", "schema", "run", "validate", "deploy", "report"}
    assert expected <= set(cli.commands)


def test_is_compatible_explains_refusals(plugin_host, register_plugin, fake_app):
    from sregym_core.types import FaultSpec, TargetSelector

    fault = FaultSpec(name="db-only", summary="s", selector=TargetSelector(roles=("db:*",)),
                      capabilities={"root"}, impl=StateFault())
    api, db = fake_app.component("api"), fake_app.component("db")
    refused = plugin_host.is_compatible(fault, api, fake_app)
    assert not refused and refused.failed == "target" and "db:*" in refused.reason
    assert plugin_host.is_compatible(fault, db, fake_app)
    lacking = plugin_host.is_compatible(fault, db, fake_app, capabilities={"embedded"})
    assert not lacking and lacking.failed == "capabilities" and "root" in lacking.reason
    assert plugin_host.is_compatible(fault, db, fake_app, capabilities={"root"})


def test_a_compatibility_check_decides_first_and_says_why(plugin_host, register_plugin, fake_app):
    from sregym_core.types import FaultSpec, Incompatible, TargetSelector

    answers = {"frontend": Incompatible("frontend reads no Secret"), "api": False, "db": True}

    class Check:
        @hookimpl
        def sregym_check_compatibility(self, fault, component, app):
            return answers.get(component.name)

    register_plugin(Check())
    fault = FaultSpec(name="api-only", summary="s", selector=TargetSelector(roles=("service:grpc",)), impl=StateFault())
    frontend, api, db = (fake_app.component(n) for n in ("frontend", "api", "db"))
    refused = plugin_host.is_compatible(fault, frontend, fake_app)
    assert not refused and refused.failed == "target" and refused.reason == "frontend reads no Secret"
    assert plugin_host.is_compatible(fault, api, fake_app).reason == "refused by a plugin's compatibility check"
    assert plugin_host.is_compatible(fault, db, fake_app)  # True accepts although the selector does not match
    answers["db"] = "db is odd"  # a truthy string must not pass for an acceptance
    with pytest.raises(PluginError, match="returned a str for fault 'api-only' on 'fake-app/db'"):
        plugin_host.is_compatible(fault, db, fake_app)


def test_every_hookspec_documents_a_compiling_example_of_its_implementation():
    """Each hook's docstring shows an implementation (pluggy/pytest style): a code block that
    compiles and defines a function of the hook's name, decorated with ``@hookimpl``."""
    import ast
    import inspect
    import textwrap

    from sregym_core import hookspecs

    specs = [name for name, obj in vars(hookspecs).items() if name.startswith("sregym_") and inspect.isfunction(obj)]
    assert len(specs) >= 18
    for name in specs:
        doc = inspect.getdoc(getattr(hookspecs, name)) or ""
        assert "**Example:**" in doc, f"{name} has no example"
        block = doc.split(".. code-block:: python", 1)[1].split(".. versionadded::", 1)[0]
        tree = ast.parse(textwrap.dedent(block.strip("\n")))
        defs = [node for node in tree.body if isinstance(node, ast.FunctionDef)]
        assert [d.name for d in defs] == [name], f"{name}'s example defines {[d.name for d in defs]}"
        assert [ast.unparse(d) for d in defs[0].decorator_list] == ["hookimpl"], name
        params = [a.arg for a in defs[0].args.args]
        spec_params = list(inspect.signature(getattr(hookspecs, name)).parameters)
        # pluggy passes an implementation the arguments it names; ``host`` is the one a plugin may leave out
        assert params == [p for p in spec_params if p in params], f"{name}'s example signature"
        assert set(spec_params) - set(params) <= {"host"}, f"{name}'s example leaves out {spec_params}"


def test_registration_hooks_hand_the_host_to_plugins_that_name_it(plugin_host, register_plugin):
    """A plugin whose factory needs another plugin's records takes ``host`` in its registration
    hook and binds it; one that does not name it is called as before."""
    import functools

    from sregym_core.catalog import Catalog
    from sregym_core.types import OracleSpec

    seen = []

    def gated(host, **options):
        return host.get_oracles()["plain"].factory(**options)

    class Gate:
        @hookimpl
        def sregym_oracles(self, host):
            seen.append(host)
            return [OracleSpec(name="gated", kind="judge", factory=functools.partial(gated, host))]

    class Plain:
        @hookimpl
        def sregym_oracles(self):
            return [OracleSpec(name="plain", kind="judge", factory=lambda **options: ("plain", options))]

    register_plugin(Gate())
    register_plugin(Plain())
    oracles = plugin_host.get_oracles()
    assert seen == [plugin_host] and isinstance(plugin_host, Catalog)
    assert oracles["gated"].factory(threshold=0.5) == ("plain", {"threshold": 0.5})


def test_commands_receive_the_host_too(plugin_host, register_plugin):
    got = []

    class Commands:
        @hookimpl
        def sregym_register_commands(self, cli, host):
            got.append(host)

    register_plugin(Commands())
    plugin_host.register_commands(click.Group("root"))
    assert got == [plugin_host]


def test_the_process_wide_host_is_deprecated_for_plugins(plugin_host):
    """``get_plugin_host()`` still answers (the harness installed ``plugin_host``) but warns; the
    entry points' own accessor does not."""
    import warnings

    from sregym_core.plugins import get_plugin_host, process_host

    with pytest.warns(DeprecationWarning, match="`host` argument of your registration hook"):
        assert get_plugin_host() is plugin_host
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert process_host() is plugin_host


def test_the_contract_kit_calls_a_plugins_hook_as_the_host_does(plugin_host):
    """The kit's direct hook calls pass ``host`` to an implementation that names it, so a plugin
    written against the hook reference passes its own contract suite."""
    from sregym_core.testing.contracts import hook_records

    def with_host(host):
        return [("got", host)]

    def without():
        return ["plain"]

    assert hook_records(with_host, plugin_host) == [("got", plugin_host)]
    assert hook_records(without, plugin_host) == ["plain"]
    assert hook_records(lambda: None) == []
