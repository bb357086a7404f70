"""Social Network's healthy service level on the embedded cluster: a validation test (marker
``validation``), run by ``tools/validate-sample.sh``, never by the landing suite (docs/ci.md).

Over a 20 s window after start-up: every endpoint answered at least twice, a success rate of 0.99 or
more, no wrong content.
"""

from __future__ import annotations

import time

import pytest
from sregym_app_social_network.nginx import find_nginx
from sregym_app_social_network.workload.generator import ENDPOINTS

from sregym_core.testing.slo import wait_for_service_level

pytestmark = [pytest.mark.slow, pytest.mark.validation,
              pytest.mark.skipif(find_nginx() is None, reason="needs Debian's nginx (tools/setup.sh installs it)")]


@pytest.fixture(scope="module")
def social(deployed_app):
    yield deployed_app("social-network")
    deployed_app.remove("social-network")


def test_the_workload_meets_the_service_level_through_every_endpoint(social):
    live = social.live(time.time(), frontend=("nginx-thrift", 8080))

    def steady() -> dict | None:
        # a window after start-up: the gateway may answer before every peer listens (502s, as upstream)
        s = live.stats(20)
        every = all((s.get("by_endpoint", {}).get(e) or {}).get("count", 0) >= 2 for e in ENDPOINTS)
        return s if every and (s.get("success_rate") or 0) >= 0.99 and s.get("content_errors") == 0 else None

    assert wait_for_service_level(steady, 90, 2, window_s=20), live.stats(20)
