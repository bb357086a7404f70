"""The plugin contract suites: the AppSpec, the six faults and every shipped problem."""

from __future__ import annotations

import sregym_app_fleetcast.plugin
from sregym_app_fleetcast.app import app_spec

from sregym_core.testing.contracts import AppContract, FaultContract, ProblemContract

#: every fault is present only once the operator (or the kubelet) has acted on the change: the
#: offline recording cluster holds no custom resource and runs no operator
_LIVE = ("is present once the operator has acted (the DatastoreCluster's status, the pods); proved live in "
         "tests/test_fleetcast_live.py (TestFleetCastLiveFaults), its predicates offline in test_fleetcast_units.py")


class TestFleetCastApp(AppContract):
    plugin = sregym_app_fleetcast.plugin


class TestFleetCastFaults(FaultContract):
    plugin = sregym_app_fleetcast.plugin
    app = app_spec()
    live_only = {name: _LIVE for name in (
        "datastore-replicas-overload", "datastore-missing-storage-class", "datastore-invalid-toleration",
        "datastore-invalid-run-as-user", "datastore-invalid-update-strategy", "operator-image-typo")}


class TestFleetCastProblems(ProblemContract):
    plugin = sregym_app_fleetcast.plugin
