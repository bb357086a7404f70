"""A Ray worker is a process of its own: it builds its plugin host from the installed plugins and
hands it to its cluster and session, never reaching for the deprecated process-wide host (#39)."""

from __future__ import annotations

import warnings

import sregym_core.clusters
import sregym_core.conductor.session
import sregym_core.plugins
from sregym_executor_ray.worker import EnvironmentWorker


def test_the_worker_hands_its_own_host_to_the_cluster_and_the_session(tmp_path, monkeypatch):
    host = object()
    got = {}
    monkeypatch.setattr(sregym_core.plugins, "new_plugin_host", lambda: host)
    monkeypatch.setattr(sregym_core.clusters, "get_cluster",
                        lambda given, **options: got.setdefault("cluster", (given, options)) and "cluster")

    class Session:
        def __init__(self, given, cluster, plan, **options):
            got["session"] = (given, cluster, plan, options["index"], options["environments"])

    monkeypatch.setattr(sregym_core.conductor.session, "EnvironmentSession", Session)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        EnvironmentWorker(2, 3, "plan", "embedded", "sregym-ray-2", "run-1", str(tmp_path))
    assert got["cluster"] == (host, {"provider": "embedded", "name": "sregym-ray-2", "owned": True, "exclusive": True})
    assert got["session"] == (host, "cluster", "plan", 1, 3)
