"""The compatibility matrix."""

from __future__ import annotations

from sregym_core import hookimpl
from sregym_core.compat import STAND_IN_REASON, build_matrix, render_markdown
from sregym_core.types import FaultSpec, Incompatible, TargetSelector
from sregym_core.testing import StateFault


def _faults():
    return [
        FaultSpec(name="any-workload", summary="x", impl=StateFault()),
        FaultSpec(name="db-only", summary="x", layer="datastore", selector=TargetSelector(roles=("db:*",)),
                  impl=StateFault()),
        FaultSpec(name="pvc-only", summary="x", layer="storage", selector=TargetSelector(requires=("pvcs",)),
                  impl=StateFault(), capabilities={"root"}),
    ]


def _register(register_plugin, app, faults, check=None) -> None:
    """A plugin shipping ``app`` and ``faults``, and a compatibility check when ``check`` is given."""
    class Shipping:
        @hookimpl
        def sregym_apps(self):
            return [app]

        @hookimpl
        def sregym_faults(self):
            return faults

    class Checking(Shipping):
        @hookimpl
        def sregym_check_compatibility(self, fault, component, app):
            return check(fault, component, app)

    register_plugin(Checking() if check else Shipping())


def test_matrix_counts(plugin_host, register_plugin, fake_app):
    _register(register_plugin, fake_app, _faults())
    matrix = build_matrix(plugin_host)
    assert matrix.counts_by_fault() == {"any-workload": 3, "db-only": 1, "pvc-only": 1}
    assert matrix.counts_by_layer() == {"datastore": 1, "k8s": 3, "storage": 1}
    assert matrix.total == 5
    filtered = build_matrix(plugin_host, capabilities=frozenset({"any"}))
    assert filtered.total == 4
    reason = next(c.reason for c in filtered.cells if c.fault == "pvc-only" and c.component == "db")
    assert "cluster lacks root" in reason
    markdown = render_markdown(matrix)
    assert "| db-only | datastore |" in markdown and "**5**" in markdown


def test_check_compatibility_hook_overrides(plugin_host, register_plugin, fake_app):
    _register(register_plugin, fake_app, _faults()[:1],
              lambda fault, component, app: False if component.name == "frontend" else None)
    assert build_matrix(plugin_host).total == 2


def test_a_refusal_with_a_reason_shows_in_the_matrix(plugin_host, register_plugin, fake_app):
    _register(register_plugin, fake_app, _faults()[:1],
              lambda fault, component, app: Incompatible(f"{component.name} has no such thing")
              if component.name == "api" else None)
    cells = {c.component: c for c in build_matrix(plugin_host).cells}
    assert not cells["api"].viable and cells["api"].reason == "api has no such thing"
    assert cells["frontend"].viable and cells["db"].viable


def test_a_test_stand_in_is_never_a_viable_pair(plugin_host, register_plugin, fake_app):
    _register(register_plugin, fake_app, [*_faults()[:2], FaultSpec(name="nothing", summary="x", impl=StateFault(),
                                                                      stand_in=True,
                                                                      selector=TargetSelector(roles=("service:*",)))])
    matrix = build_matrix(plugin_host)
    assert matrix.stand_ins == {"nothing"} and matrix.counts_by_fault()["nothing"] == 0
    reasons = {c.component: c.reason for c in matrix.cells if c.fault == "nothing"}
    # where the selector matches the reason is the stand-in; elsewhere the selector's own reason stays
    assert reasons == {"frontend": STAND_IN_REASON, "api": STAND_IN_REASON, "db": "needs role service:*"}
    assert matrix.total == 4
    markdown = render_markdown(matrix)
    assert "| nothing |" not in markdown and "| db-only | datastore |" in markdown
    # a stand-in still resolves: run and problem files accept it where its selector matches
    assert plugin_host.is_compatible(plugin_host.get_faults()["nothing"], fake_app.component("api"), fake_app)


def test_selector_env_glob_requires_a_matching_env_var():
    from sregym_core.types import ComponentSpec

    selector = TargetSelector(requires=("env:*_ADDR",))
    caller = ComponentSpec(name="web", kind="Deployment", env=("LOG_LEVEL", "DB_ADDR"))
    leaf = ComponentSpec(name="db", kind="StatefulSet", env=("POSTGRES_USER",))
    assert selector.matches(caller)
    assert not selector.matches(leaf)
    assert not selector.matches(ComponentSpec(name="bare", kind="Deployment"))
