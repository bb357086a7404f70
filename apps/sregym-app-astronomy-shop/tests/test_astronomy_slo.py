"""Astronomy Shop's healthy service level on the embedded cluster: a validation test (marker
``validation``), run by ``tools/validate-sample.sh``, never by the landing suite (docs/ci.md).

The load generator's workload over a minute: at least 60 requests, a success rate of 0.99 or more,
no wrong content, every request kind seen succeeding.
"""

from __future__ import annotations

import json
import time

import pytest
from sregym_app_astronomy_shop.loadgen import ENDPOINTS, request_for
from sregym_appkit.testing import every_kind_served

from sregym_core.testing.slo import wait_for_service_level

pytestmark = [pytest.mark.slow, pytest.mark.validation]
FRONTEND = ("frontend-proxy", 8080)


@pytest.fixture(scope="module")
def shop(deployed_app):
    yield deployed_app("astronomy-shop")
    deployed_app.remove("astronomy-shop")


def test_workload_meets_the_service_level_with_correct_content(shop):
    live = shop.live(time.time(), request_for=request_for, frontend=FRONTEND)

    def good():
        stats = live.stats(60)
        return stats if every_kind_served(stats, ENDPOINTS) else None

    assert wait_for_service_level(good, 120, 5, window_s=60), json.dumps(live.stats(60))[:1500]
