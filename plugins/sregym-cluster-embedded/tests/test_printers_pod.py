"""Pod printer rules, one test per rule of kubectl's STATUS/READY/RESTARTS logic."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sregym_cluster_embedded.apiserver.printers import build_table

NOW = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)


def ts(seconds_ago: float) -> str:
    return (NOW - timedelta(seconds=seconds_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")


def running(name: str = "app", ready: bool = True, restarts: int = 0, **extra) -> dict:
    return {"name": name, "ready": ready, "restartCount": restarts, "state": {"running": {"startedAt": ts(60)}}, **extra}


def waiting(reason: str, name: str = "app", restarts: int = 0) -> dict:
    return {"name": name, "ready": False, "restartCount": restarts, "state": {"waiting": {"reason": reason}}}


def terminated(name: str = "app", exit_code: int = 0, reason: str | None = None, signal: int = 0) -> dict:
    state: dict = {"exitCode": exit_code}
    if reason:
        state["reason"] = reason
    if signal:
        state["signal"] = signal
    return {"name": name, "ready": False, "restartCount": 0, "state": {"terminated": state}}


def make_pod(
    containers=("app",), statuses=(), init=(), init_statuses=(), phase="Running", conditions=(), **status_extra
) -> dict:
    init_specs = [c if isinstance(c, dict) else {"name": c, "image": "busybox"} for c in init]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web-0", "namespace": "default", "creationTimestamp": ts(300), "uid": "u1"},
        "spec": {
            "containers": [{"name": c, "image": "nginx"} for c in containers],
            "initContainers": init_specs,
            "nodeName": "node-1",
        },
        "status": {
            "phase": phase,
            "conditions": list(conditions),
            "containerStatuses": list(statuses),
            "initContainerStatuses": list(init_statuses),
            **status_extra,
        },
    }


def row(pod: dict) -> list:
    return build_table("pods", "", [pod], now=NOW)["rows"][0]["cells"]


def status_of(pod: dict) -> str:
    return row(pod)[2]


def test_columns_match_kubectl_with_wide_priority() -> None:
    table = build_table("pods", "", [], now=NOW)
    names = [(c["name"], c["priority"]) for c in table["columnDefinitions"]]
    assert names == [
        ("Name", 0), ("Ready", 0), ("Status", 0), ("Restarts", 0), ("Age", 0),
        ("IP", 1), ("Node", 1), ("Nominated Node", 1), ("Readiness Gates", 1),
    ]
    assert table["columnDefinitions"][0]["format"] == "name"
    assert table["kind"] == "Table" and table["apiVersion"] == "meta.k8s.io/v1"
    assert table["rows"] == []


def test_running_pod_row() -> None:
    pod = make_pod(statuses=[running()], podIP="127.42.0.5", podIPs=[{"ip": "127.42.0.5"}])
    assert row(pod) == ["web-0", "1/1", "Running", "0", "5m", "127.42.0.5", "node-1", "<none>", "<none>"]


def test_pending_unscheduled_pod_shows_none_for_wide_fields() -> None:
    pod = make_pod(phase="Pending")
    del pod["spec"]["nodeName"]
    assert row(pod) == ["web-0", "0/1", "Pending", "0", "5m", "<none>", "<none>", "<none>", "<none>"]


@pytest.mark.parametrize(
    "reason", ["ContainerCreating", "CrashLoopBackOff", "ImagePullBackOff", "ErrImagePull", "CreateContainerConfigError"]
)
def test_waiting_reason_is_status(reason: str) -> None:
    assert status_of(make_pod(statuses=[waiting(reason)], phase="Pending")) == reason


@pytest.mark.parametrize("reason", ["OOMKilled", "Error", "Completed"])
def test_terminated_reason_is_status(reason: str) -> None:
    assert status_of(make_pod(statuses=[terminated(exit_code=1, reason=reason)])) == reason


def test_terminated_without_reason_shows_signal_or_exit_code() -> None:
    assert status_of(make_pod(statuses=[terminated(exit_code=137, signal=9)])) == "Signal:9"
    assert status_of(make_pod(statuses=[terminated(exit_code=3)])) == "ExitCode:3"


def test_status_reason_evicted_wins_over_phase() -> None:
    pod = make_pod(phase="Failed", reason="Evicted", message="The node was low on resource: memory.")
    assert status_of(pod) == "Evicted"
    table_row = build_table("pods", "", [pod], now=NOW)["rows"][0]
    assert table_row["conditions"][0]["reason"] == "Failed"


def test_first_container_in_list_decides_when_several_fail() -> None:
    # Statuses are scanned from last to first, so the first container's state is reported.
    pod = make_pod(containers=("a", "b"), statuses=[waiting("CrashLoopBackOff", "a"), waiting("ImagePullBackOff", "b")])
    assert status_of(pod) == "CrashLoopBackOff"


def test_init_progress_counter() -> None:
    pod = make_pod(
        init=("migrate", "seed"),
        init_statuses=[terminated("migrate", 0, "Completed"), {"name": "seed", "state": {"running": {}}, "restartCount": 0}],
        statuses=[waiting("PodInitializing")],
        phase="Pending",
    )
    assert status_of(pod) == "Init:1/2"
    pod["status"]["initContainerStatuses"][1] = waiting("PodInitializing", "seed")
    assert status_of(pod) == "Init:1/2"
    pod["status"]["initContainerStatuses"] = [
        {"name": "migrate", "state": {"waiting": {}}, "restartCount": 0},
        {"name": "seed", "state": {"waiting": {}}, "restartCount": 0},
    ]
    assert status_of(pod) == "Init:0/2"


def test_init_failures() -> None:
    pod = make_pod(init=("migrate",), init_statuses=[waiting("CrashLoopBackOff", "migrate", restarts=4)], phase="Pending")
    assert status_of(pod) == "Init:CrashLoopBackOff"
    assert row(pod)[3] == "4"
    pod["status"]["initContainerStatuses"] = [terminated("migrate", 1, "Error")]
    assert status_of(pod) == "Init:Error"
    pod["status"]["initContainerStatuses"] = [terminated("migrate", 1)]
    assert status_of(pod) == "Init:ExitCode:1"
    pod["status"]["initContainerStatuses"] = [terminated("migrate", 137, signal=9)]
    assert status_of(pod) == "Init:Signal:9"


def test_init_done_then_regular_containers_decide() -> None:
    pod = make_pod(init=("migrate",), init_statuses=[terminated("migrate", 0, "Completed")], statuses=[running()])
    assert status_of(pod) == "Running"
    assert row(pod)[1] == "1/1"


def test_sidecar_init_container_counts_in_ready_and_total() -> None:
    sidecar = {"name": "proxy", "image": "envoy", "restartPolicy": "Always"}
    pod = make_pod(
        init=(sidecar,),
        init_statuses=[
            {"name": "proxy", "ready": True, "started": True, "restartCount": 1, "state": {"running": {}},
             "lastState": {"terminated": {"finishedAt": ts(30), "exitCode": 1}}}
        ],
        statuses=[running()],
        conditions=[{"type": "Initialized", "status": "True"}, {"type": "Ready", "status": "True"}],
    )
    cells = row(pod)
    assert cells[1:4] == ["2/2", "Running", "1 (30s ago)"]


def test_sidecar_not_started_blocks_initialization() -> None:
    sidecar = {"name": "proxy", "image": "envoy", "restartPolicy": "Always"}
    pod = make_pod(
        init=(sidecar,),
        init_statuses=[{"name": "proxy", "ready": False, "started": False, "restartCount": 0, "state": {"running": {}}}],
        phase="Pending",
    )
    assert status_of(pod) == "Init:0/1"
    assert row(pod)[1] == "0/2"


def test_completed_with_running_container_is_running_or_notready() -> None:
    statuses = [running("a"), terminated("b", 0, "Completed")]
    pod = make_pod(containers=("a", "b"), statuses=statuses, conditions=[{"type": "Ready", "status": "True"}])
    assert status_of(pod) == "Running"
    pod["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
    assert status_of(pod) == "NotReady"
    assert row(pod)[1] == "1/2"


def test_running_but_not_ready_container() -> None:
    pod = make_pod(statuses=[running(ready=False)], conditions=[{"type": "Ready", "status": "False"}])
    assert row(pod)[1:3] == ["0/1", "Running"]


def test_terminating_and_node_lost() -> None:
    pod = make_pod(statuses=[running()])
    pod["metadata"]["deletionTimestamp"] = ts(-30)
    assert status_of(pod) == "Terminating"
    pod["status"]["reason"] = "NodeLost"
    assert status_of(pod) == "Unknown"
    finished = make_pod(statuses=[terminated(exit_code=0, reason="Completed")], phase="Succeeded")
    finished["metadata"]["deletionTimestamp"] = ts(-30)
    assert status_of(finished) == "Completed"


def test_scheduling_gated() -> None:
    pod = make_pod(phase="Pending", conditions=[{"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}])
    assert status_of(pod) == "SchedulingGated"


def test_restarts_with_age_of_last_termination() -> None:
    status = running(restarts=5, lastState={"terminated": {"exitCode": 1, "finishedAt": ts(5)}})
    assert row(make_pod(statuses=[status]))[3] == "5 (5s ago)"
    status = running(restarts=3, lastState={"terminated": {"exitCode": 1, "finishedAt": ts(3 * 3600 + 600)}})
    assert row(make_pod(statuses=[status]))[3] == "3 (3h10m ago)"
    assert row(make_pod(statuses=[running(restarts=2)]))[3] == "2"


def test_restarts_sum_over_containers_and_latest_finish() -> None:
    statuses = [
        running("a", restarts=1, lastState={"terminated": {"finishedAt": ts(600)}}),
        running("b", restarts=2, lastState={"terminated": {"finishedAt": ts(90)}}),
    ]
    assert row(make_pod(containers=("a", "b"), statuses=statuses))[3] == "3 (90s ago)"


def test_readiness_gates() -> None:
    pod = make_pod(statuses=[running()], conditions=[{"type": "example.com/lb", "status": "True"}])
    pod["spec"]["readinessGates"] = [{"conditionType": "example.com/lb"}, {"conditionType": "example.com/dns"}]
    assert row(pod)[8] == "1/2"


def test_nominated_node_and_pod_ips() -> None:
    pod = make_pod(phase="Pending", nominatedNodeName="node-2", podIPs=[{"ip": "127.42.1.1"}, {"ip": "::1"}])
    assert row(pod)[5:8] == ["127.42.1.1", "node-1", "node-2"]


def test_include_object_modes() -> None:
    pod = make_pod(statuses=[running()])
    meta = build_table("pods", "", [pod], now=NOW)["rows"][0]["object"]
    assert meta["kind"] == "PartialObjectMetadata" and meta["apiVersion"] == "meta.k8s.io/v1"
    assert meta["metadata"]["name"] == "web-0" and "spec" not in meta
    assert build_table("pods", "", [pod], now=NOW, include_object="Object")["rows"][0]["object"] is pod
    assert "object" not in build_table("pods", "", [pod], now=NOW, include_object="None")["rows"][0]


def test_garbage_pod_does_not_crash() -> None:
    weird = {"metadata": {"name": "x"}, "spec": {"containers": "nope"}, "status": {"containerStatuses": [None, 3]}}
    assert row(weird)[:3] == ["x", "0/0", ""]
    assert row({"metadata": {"name": "y"}})[4] == "<unknown>"
