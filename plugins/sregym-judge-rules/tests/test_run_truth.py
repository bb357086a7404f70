"""The ground truth the calibration grades against is the one a run derives (issue #35, round 18): each problem's
faults are injected, offline, into the objects its app's deploy applies, so a value the fault reads from the live
object is in the truth; and what the judge reads once those values are there."""

from __future__ import annotations

import pytest
import yaml
from sregym_judge_rules.calibration import curated_truths

from sregym_core.plugins import process_host
from sregym_core.testing.recording import RecordingFaultContext, Unpreviewable, rendered_objects


@pytest.fixture(scope="module")
def host():
    return process_host()


def _service(app, name: str) -> dict:
    return next(doc for doc in yaml.safe_load_all(app.render(dict(app.params)))
                if isinstance(doc, dict) and doc.get("kind") == "Service" and doc["metadata"]["name"] == name)


def test_a_run_truth_carries_the_values_the_fault_read_from_the_deployed_objects(host):
    app = host.get_apps()["hotel-reservation"]
    shipped = _service(app, "user")["spec"]["ports"][0]["targetPort"]
    run = curated_truths(["hotel-wrong-target-port-user"], host=host)["hotel-wrong-target-port-user"][3][0]
    detached = curated_truths(["hotel-wrong-target-port-user"], host=host, truth="detached")["hotel-wrong-target-port-user"][3][0]
    assert run.mutated_values["targetPort"] == {"before": shipped, "after": shipped + 1}
    assert detached.mutated_values["targetPort"] == {"before": None, "after": None}


def test_service_port_mismatch_records_the_port_it_replaced(host):
    app = host.get_apps()["hotel-reservation"]
    shipped = _service(app, "reservation")["spec"]["ports"][0]["port"]
    truth = curated_truths(["hotel-service-port-mismatch-reservation"], host=host)["hotel-service-port-mismatch-reservation"][3][0]
    assert truth.mutated_values["port"] == {"before": shipped, "after": shipped + 10}


def test_a_fault_acting_inside_a_process_keeps_its_declared_truth(host):
    # db-revoke runs SQL in the database's pod: nothing offline can preview it
    run = curated_truths(["hotel-db-revoke-geo"], host=host)["hotel-db-revoke-geo"][3]
    detached = curated_truths(["hotel-db-revoke-geo"], host=host, truth="detached")["hotel-db-revoke-geo"][3]
    assert run == detached


def test_an_unknown_truth_mode_is_a_clear_error(host):
    from sregym_core.errors import ConfigError

    with pytest.raises(ConfigError, match="unknown truth"):
        curated_truths(["hotel-db-revoke-geo"], host=host, truth="live")


def test_rendered_objects_hold_one_running_pod_per_workload(host):
    app = host.get_apps()["hotel-reservation"]
    objects = rendered_objects(app)
    workloads = {o["metadata"]["name"] for o in objects if o["kind"] in ("Deployment", "StatefulSet")
                 and o["metadata"]["namespace"] == app.namespace}
    pods = {o["metadata"]["name"] for o in objects if o["kind"] == "Pod"}
    assert workloads and {f"{w}-0" for w in workloads} <= pods


def test_a_preview_refuses_what_only_a_live_cluster_answers(host):
    app = host.get_apps()["hotel-reservation"]
    ctx = RecordingFaultContext.seeded(app, rendered_objects(app), budget_s=60.0)
    assert ctx.kubectl("get", "service", "user", "-n", app.namespace, "-o", "json")
    with pytest.raises(Unpreviewable):
        ctx.kubectl("exec", "deploy/user", "-n", app.namespace, "--", "true", check=False)
    late = RecordingFaultContext.seeded(app, rendered_objects(app), budget_s=0.0)
    with pytest.raises(Unpreviewable):  # a fault still polling past its budget waits for a controller
        late.kubectl("get", "service", "user", "-n", app.namespace, "-o", "json")


# ------------------------------------------------------------------ what the judge reads with those values

def test_a_change_written_as_its_difference_is_its_value(passes):
    assert passes("hotel-wrong-target-port-user",
                  "svc user targetPort = container port + 1, nothing listens there. conn refused. set targetPort back.")
    assert passes("hotel-service-port-mismatch-reservation",
                  "reservation Service's port moved up by 10, no longer the port frontend dials -> connection refused.")
    # the wrong difference, or the wrong direction, is not the change
    assert not passes("hotel-wrong-target-port-user",
                      "svc user targetPort = container port + 2, nothing listens there. conn refused.")
    assert not passes("hotel-service-port-mismatch-reservation",
                      "reservation Service's port moved down by 10, no longer the port frontend dials -> connection refused.")


def test_an_image_said_to_exist_is_cleared_not_blamed(passes):
    assert not passes("hotel-wrong-image-frontend", "frontend image 2.1.0 exists; pull secret missing")
    assert not passes("hotel-wrong-image-frontend",
                      "The frontend version 2.1.0 exists and downloads fine, so the update is not the problem. "
                      "The frontend does not start because of low memory.")
    # ... while the tag said not to exist is the fault
    assert passes("hotel-wrong-image-frontend",
                  "frontend's image was changed to tag 2.1.0, which does not exist, so its pods are in ImagePullBackOff.")
