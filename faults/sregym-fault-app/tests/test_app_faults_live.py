"""Every application-configuration primitive, live on Hotel Reservation (slow; the session's cluster)."""

from __future__ import annotations

import pytest

import sregym_fault_app.plugin
from sregym_core.testing.live import LiveCase as Case
from sregym_core.testing.live import LiveFaultContract, load_request_for, rollout
from sregym_core.testing.probes import all_of, any_of, crashing, event, fails, healthy_ms, log_line, metric_above, slower, \
    under_burst


class TestAppFaultsLive(LiveFaultContract):
    plugin = sregym_fault_app.plugin
    request_for = staticmethod(lambda kind, rng: load_request_for("sregym_app_hotel_reservation.workload.mix")(kind, rng))
    cases = {
        # four source ports for geo's database connections (each readiness check opens one, and each
        # closed one waits in TIME_WAIT): searches fail, and geo's log has the kernel's EADDRNOTAVAIL
        "ephemeral-ports": Case("geo", all_of(fails("search"), log_line("geo", "Cannot assign requested address"))),
        # 24 descriptors hold for a trickle of requests; a burst of concurrent connections exhausts them
        "fd-limit": Case("frontend", any_of(crashing("frontend"), log_line("frontend", "too many open files"),
                                            under_burst("search", 60, 30))),
        "capacity-constraint": Case("search", event("FailedCreate", "exceeded quota"), provoke=rollout("search")),
        "feature-flag-bug": Case("recommendation", fails("recommend"), endpoint="recommend"),
        "retry-storm": Case("search", any_of(metric_above("search", "hotel_rpc_client_retries_total", 0),
                                             under_burst("search", 60, 20))),
        "rate-limit-collapse": Case("geo", under_burst("search", 80, 20)),
        "load-burst": Case("frontend", slower("search", 2.0, healthy_ms), {"seconds": 40, "workers": 8}),
        # long enough to outlast a slow symptom wait on a loaded machine (the hog then exits by itself)
        "cpu-pressure": Case("search", slower("search", 2.0, healthy_ms), {"seconds": 150, "workers": 2}),
    }


@pytest.fixture(autouse=True)
def _needs_hotel(request):
    if "case_name" in request.fixturenames or request.node.name.startswith("test_not_runnable"):
        pytest.importorskip("sregym_app_hotel_reservation", reason="the live cases run on Hotel Reservation")
