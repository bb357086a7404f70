"""The log collector against a Kubernetes API over real HTTP (pods list/watch, follow-mode logs)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from fake_kube import FakeKube, kubeconfig_text, make_pod
from sregym_observability.collector import LogCollector, split_timestamp, stream_labels
from sregym_observability.kubeapi import KubeClient, resolve_access
from sregym_observability.logql import parse_logql
from sregym_observability.logstore import LogStore


def test_stream_labels_and_timestamp_split() -> None:
    pod = make_pod("hotel", "geo-7d9f-x1", app="geo", containers={"geo": {}})
    assert stream_labels(pod, "geo") == {
        "app": "geo", "app_kubernetes_io_part_of": "hotel", "namespace": "hotel", "pod": "geo-7d9f-x1",
        "container": "geo", "node": "node-1", "job": "hotel/geo"}
    assert split_timestamp("2026-01-02T03:04:05.000000123Z hello world") == (1767323045000000123, "hello world")
    assert split_timestamp("no timestamp here") is None


async def _wait_for(predicate, timeout: float = 30.0) -> None:  # an outer bound: it only catches a hang
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.05)


def test_collector_follows_pods_restarts_and_deletions(tmp_path: Path) -> None:
    async def scenario() -> None:
        kube = FakeKube()
        url = await kube.start()
        config = tmp_path / "kubeconfig"
        config.write_text(kubeconfig_text(url))
        store = LogStore()
        now = time.time_ns()
        kube.put_pod(make_pod("hotel", "geo-1", app="geo", containers={"geo": {}}))
        kube.write_log("hotel", "geo-1", "geo", now, '{"level":"info","event":"started"}')
        kube.put_pod(make_pod("hotel-workload", "wrk-1", app="wrk", containers={"wrk": {}}))
        kube.write_log("hotel-workload", "wrk-1", "wrk", now, "secret benchmark internals")
        async with KubeClient(resolve_access(str(config))) as client:
            collector = LogCollector(client, store, resync_s=0.2, exclude_namespaces=("hotel-workload",))
            task = asyncio.create_task(collector.run())
            try:
                geo = parse_logql('{namespace="hotel", app="geo"}')

                def lines(query=geo) -> list[str]:
                    return [line for _, values in store.select(query, 0, 2**62, limit=1000, backward=False)
                            for _, line in values]

                await _wait_for(lambda: lines() == ['{"level":"info","event":"started"}'])
                # Lines written while following arrive without a new request.
                kube.write_log("hotel", "geo-1", "geo", now + 1000, '{"level":"error","event":"db_failed"}')
                await _wait_for(lambda: len(lines()) == 2)
                # A pod created later is discovered through the watch.
                kube.put_pod(make_pod("hotel", "rate-1", app="rate", containers={"rate": {}, "sidecar": {}}))
                kube.write_log("hotel", "rate-1", "sidecar", now + 5, "sidecar up")
                await _wait_for(lambda: lines(parse_logql('{container="sidecar"}')) == ["sidecar up"])
                # A restarted container (new id) is tailed again from where we stopped: no duplicates.
                restarted = make_pod("hotel", "geo-1", app="geo", containers={
                    "geo": {"restartCount": 1, "containerID": "local://geo-1-geo-2"}})
                kube.put_pod(restarted)
                await asyncio.sleep(0.5)
                kube.write_log("hotel", "geo-1", "geo", now + 10**9, "after restart")
                await _wait_for(lambda: lines()[-1:] == ["after restart"])
                assert len(lines()) == 3
                # Deleting the pod stops its tails.
                kube.delete_pod("hotel", "rate-1")
                await _wait_for(lambda: not any(k[1] == "rate-1" for k in collector._tails))
                assert store.label_values("node") == ["node-1"]
                # A hidden namespace is never tailed.
                assert store.label_values("namespace") == ["hotel"]
                assert not any(k[0] == "hotel-workload" for k in kube.logs if k in collector._tails)
                assert all(r.get("container") != "wrk" for r in kube.log_requests)
            finally:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
                await kube.stop()

    asyncio.run(scenario())


def test_collector_reports_bad_credentials_without_crashing(tmp_path: Path) -> None:
    async def scenario() -> None:
        kube = FakeKube()
        url = await kube.start()
        config = tmp_path / "kubeconfig"
        config.write_text(kubeconfig_text(url).replace("test-token", "wrong"))
        async with KubeClient(resolve_access(str(config))) as client:
            collector = LogCollector(client, LogStore())
            task = asyncio.create_task(collector.run())
            await _wait_for(lambda: collector.errors >= 1)
            assert not task.done()
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        await kube.stop()

    asyncio.run(scenario())
