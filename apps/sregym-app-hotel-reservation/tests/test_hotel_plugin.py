"""The plugin registers an AppSpec whose inventory matches the manifests."""

from __future__ import annotations

import sregym_app_hotel_reservation.plugin
from sregym_app_hotel_reservation.app import app_spec
from sregym_app_hotel_reservation.manifests import render
from sregym_appkit.testing import assert_inventory_matches

from sregym_core.testing.contracts import AppContract


class TestHotelApp(AppContract):
    plugin = sregym_app_hotel_reservation.plugin


def test_inventory_matches_the_manifests():
    app = app_spec()
    docs = {(d["kind"], d["metadata"]["name"]): d for d in render()}
    assert_inventory_matches(app, docs.values())
    roles = {r for c in app.components for r in c.roles}
    assert {"frontend", "service:grpc", "db:postgres", "cache:memcached", "stateful"} <= roles


def test_images_and_workload():
    app = app_spec()
    # The node's catalog lets the last matching entry win: the buggy variant must come last.
    def resolve(ref):
        return [i for i in app.images if i.matches(ref)][-1]

    assert resolve("sregym/hotel-reservation:1.0-buggy").env["HOTEL_BUILD_VARIANT"] == "buggy"
    assert resolve("sregym/hotel-reservation:1.0").env["HOTEL_BUILD_VARIANT"] == "stable"
    # only published tags exist: a wrong tag must fail to pull, as on a real registry
    for missing in ("v9.9.9-missing", "2.1.0", "1.4.0-rc1", "2.0-buggy"):
        assert not [i for i in app.images if i.matches(f"sregym/hotel-reservation:{missing}")], missing
    assert all(i.argv[1:] == ("-m", "sregym_app_hotel_reservation.serve") for i in app.images)
    assert app.workload is not None and app.workload.namespace in app.hidden_namespaces
    assert app.problems_dir is not None and app.problems_dir.is_dir()
    assert app.display_name == "Hotel Reservation" and "book" in app.description  # what it is, not how it is wired
