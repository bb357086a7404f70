"""One embedded cluster for every end-to-end module (tests/e2e), every adversarial module that needs
a cluster (tests/adversarial), and the fault packs' live contracts: the ``shared_cluster`` fixture.

Bringing a cluster up and deploying Hotel Reservation is most of an end-to-end module's cost, so
the modules share the harness's session-scoped ``embedded_cluster`` (``sregym_core.testing.live``)
and the app deployed on it: the conductor reconciles the app to its baseline after every problem and
the live fault contracts reset it after every fault, which is exactly what a long benchmark run
relies on. The session checks that nothing keeps running.

``SREGYM_E2E_CLUSTER=<name>`` (with the SREGYM_HOME it runs under) reuses a running cluster instead,
for iterating on one test; it is left running.
"""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def shared_cluster(embedded_cluster):
    return embedded_cluster
