"""An honest matrix: app-specific faults are listed only where the app declares the knob they turn."""

from __future__ import annotations

import pytest
import sregym_fault_app.plugin
import sregym_fault_k8s.plugin

from sregym_core import hookimpl
from sregym_core.compat import build_matrix
from sregym_core.types import AppSpec, ComponentSpec, TargetSelector

APP_SPECIFIC = {"feature-flag-bug": "feature-flags", "retry-storm": "retry-policy", "rate-limit-collapse": "rate-limit",
                "load-burst": "load-entrypoint", "buggy-image": "buggy-image"}


def _viable(host, app_name: str) -> dict[str, set[str]]:
    matrix = build_matrix(host, app=app_name)
    out: dict[str, set[str]] = {name: set() for name in APP_SPECIFIC}
    for cell in matrix.viable():
        if cell.fault in out:
            out[cell.fault].add(cell.component)
    return out


def _register(register_plugin, *apps: AppSpec) -> None:
    class Apps:
        @hookimpl
        def sregym_apps(self):
            return list(apps)

    register_plugin(sregym_fault_app.plugin, name="fault-app")
    register_plugin(sregym_fault_k8s.plugin, name="fault-k8s")
    register_plugin(Apps())


def test_a_minimal_app_without_knobs_gets_no_app_specific_fault(plugin_host, register_plugin):
    minimal = AppSpec(name="minimal", namespace="minimal", components=(
        ComponentSpec(name="web", roles=("frontend", "service:http"), ports=(8080,), env=("API_ADDR", "LOG_LEVEL")),
        ComponentSpec(name="api", roles=("service:grpc",), ports=(9000,), env=("DB_ADDR",), config_map="api-config"),
    ))
    _register(register_plugin, minimal)
    assert _viable(plugin_host, "minimal") == {name: set() for name in APP_SPECIFIC}
    # generic faults still apply: the matrix is filtered, not emptied
    assert build_matrix(plugin_host, app="minimal").total > 20


def test_a_declared_knob_makes_its_fault_viable(plugin_host, register_plugin):
    app = AppSpec(name="flagged", namespace="flagged", components=(
        ComponentSpec(name="web", roles=("frontend", "service:http"), ports=(8080,), knobs=("load-entrypoint",)),
        ComponentSpec(name="api", roles=("service:grpc",), ports=(9000,), knobs=("feature-flags", "rate-limit")),
    ))
    _register(register_plugin, app)
    viable = _viable(plugin_host, "flagged")
    assert viable["feature-flag-bug"] == {"api"} and viable["rate-limit-collapse"] == {"api"}
    assert viable["load-burst"] == {"web"} and viable["retry-storm"] == set() and viable["buggy-image"] == set()


def test_hotel_reservation_lists_each_app_specific_fault_where_its_knob_is(plugin_host, register_plugin):
    hotel = pytest.importorskip("sregym_app_hotel_reservation.app")
    _register(register_plugin, hotel.app_spec())
    viable = _viable(plugin_host, "hotel-reservation")
    assert viable["feature-flag-bug"] == {"recommendation"}  # the only FEATURE_ flag it reads
    assert viable["buggy-image"] == {"reservation"}  # the only service the 1.0-buggy build breaks
    assert viable["load-burst"] == {"frontend"}
    assert viable["retry-storm"] == {s for s, peers in hotel.PEERS.items() if peers}  # RPC clients only
    assert viable["rate-limit-collapse"] == set(hotel.SERVICES) - {"frontend"}  # gRPC servers only


def test_every_fault_requiring_a_knob_names_a_known_one():
    from sregym_core.testing.contracts import _ALL_KNOBS

    for plugin in (sregym_fault_app.plugin, sregym_fault_k8s.plugin):
        for fault in plugin.sregym_faults():
            for need in fault.selector.requires:
                if need.startswith("knob:"):
                    assert need[5:] in _ALL_KNOBS, (fault.name, need)
    assert TargetSelector(requires=("knob:feature-flags",)).describe() == "with knob:feature-flags"
