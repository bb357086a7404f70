"""The plugin contract suites: the AppSpec, the flagd-flag fault and every shipped problem."""

from __future__ import annotations

import sregym_app_astronomy_shop.plugin
from sregym_app_astronomy_shop.app import app_spec

from sregym_core.testing.contracts import AppContract, FaultContract, ProblemContract


class TestAstronomyApp(AppContract):
    plugin = sregym_app_astronomy_shop.plugin


class TestAstronomyFaults(FaultContract):
    plugin = sregym_app_astronomy_shop.plugin
    app = app_spec()
    live_only = {"queue-poison-pill": "runs redis-cli inside the queue pod (tests/test_astronomy_live.py)",
                 "flagd-flag": "waits until flagd serves the change, asking flagd itself (tests/test_astronomy_live.py; "
                               "the ConfigMap edit: test_astronomy_units.py)",
                 "edge-filter-redos": "edits the shipped nginx.conf, which the recording context does not hold "
                                      "(round trip on it and the real nginx's backtracking: test_astronomy_edge.py; "
                                      "live: tests/test_astronomy_live.py)",
                 "queue-producer-leak": "asks the broker (redis-cli inside the queue pod) whether the stream exists "
                                        "(against a real redis-server: test_astronomy_queue.py; live: "
                                        "tests/test_astronomy_live.py)"}
    recover_is_the_fix = {"cache-memory-flood": "recover is the SRE's fix: delete the load-test Job, restart the cache"}


class TestAstronomyProblems(ProblemContract):
    plugin = sregym_app_astronomy_shop.plugin
