"""TrainTicket's healthy service level on the embedded cluster: a validation test (marker
``validation``), run by ``tools/validate-sample.sh``, never by the landing suite (docs/ci.md).

Over 90 s of the workload: at least 60 requests, a success rate of 0.99 or more, no wrong content,
every request kind seen succeeding.
"""

from __future__ import annotations

import json
import time

import pytest
from sregym_app_train_ticket.workload import ENDPOINTS, request_for
from sregym_appkit.testing import every_kind_served

from sregym_core.testing.slo import wait_for_service_level

pytestmark = [pytest.mark.slow, pytest.mark.validation]


@pytest.fixture(scope="module")
def tt(deployed_app):
    yield deployed_app("train-ticket")
    deployed_app.remove("train-ticket")


def test_workload_meets_the_service_level_on_every_kind(tt):
    live = tt.live(time.time(), request_for=request_for, frontend=("ts-ui-dashboard", 8080))

    def good():
        stats = live.stats(90)
        return stats if every_kind_served(stats, ENDPOINTS) else None

    assert wait_for_service_level(good, 150, 5, window_s=90), json.dumps(live.stats(90))[:1500]
