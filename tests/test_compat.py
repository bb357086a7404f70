"""The compatibility matrix."""

from __future__ import annotations

from sregym_core import hookimpl
from sregym_core.compat import build_matrix, render_markdown
from sregym_core.types import FaultSpec, TargetSelector
from sregym_core.testing import StateFault


def _faults():
    return [
        FaultSpec(name="any-workload", summary="x", impl=StateFault()),
        FaultSpec(name="db-only", summary="x", layer="datastore", selector=TargetSelector(roles=("db:*",)),
                  impl=StateFault()),
        FaultSpec(name="pvc-only", summary="x", layer="storage", selector=TargetSelector(requires=("pvcs",)),
                  impl=StateFault(), capabilities={"root"}),
    ]


def test_matrix_counts(plugin_host, register_plugin, fake_app):
    class P:
        @hookimpl
        def sregym_apps(self):
            return [fake_app]

        @hookimpl
        def sregym_faults(self):
            return _faults()

    register_plugin(P())
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
    class P:
        @hookimpl
        def sregym_apps(self):
            return [fake_app]

        @hookimpl
        def sregym_faults(self):
            return _faults()[:1]

        @hookimpl
        def sregym_check_compatibility(self, fault, component, app):
            return False if component.name == "frontend" else None

    register_plugin(P())
    assert build_matrix(plugin_host).total == 2


def test_selector_env_glob_requires_a_matching_env_var():
    from sregym_core.types import ComponentSpec

    selector = TargetSelector(requires=("env:*_ADDR",))
    caller = ComponentSpec(name="web", kind="Deployment", env=("LOG_LEVEL", "DB_ADDR"))
    leaf = ComponentSpec(name="db", kind="StatefulSet", env=("POSTGRES_USER",))
    assert selector.matches(caller)
    assert not selector.matches(leaf)
    assert not selector.matches(ComponentSpec(name="bare", kind="Deployment"))
