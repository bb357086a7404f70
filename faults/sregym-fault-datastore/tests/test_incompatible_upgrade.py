"""db-incompatible-upgrade offline: which images count as the fault, and what it refuses to do.

The failure itself is the real server's (plugins/sregym-cluster-embedded/tests/test_postgres_majors.py
runs PostgreSQL 18 over PostgreSQL 15's files; test_datastore_faults_live.py runs the fault on
Hotel Reservation)."""

from __future__ import annotations

import asyncio

import pytest
import sregym_fault_datastore.plugin
from sregym_fault_datastore.upgrade import major_of, split_image

from sregym_core.errors import PermanentFaultError
from sregym_core.faults import call_fault
from sregym_core.testing.contracts import contract_app
from sregym_core.testing.recording import RecordingFaultContext
from sregym_core.types import Target

FAULT = {f.name: f for f in sregym_fault_datastore.plugin.sregym_faults()}["db-incompatible-upgrade"]


@pytest.mark.parametrize("image, repo, major", [
    ("postgres:15", "postgres", "15"),
    ("docker.io/library/postgres:15.4-alpine", "docker.io/library/postgres", "15"),
    ("postgres", "postgres", None),
    ("postgres:latest", "postgres", None),
    ("localhost:5000/postgres:18", "localhost:5000/postgres", "18"),
    ("postgres:16@sha256:abc", "postgres", "16"),
])
def test_image_major(image, repo, major):
    assert split_image(image)[0] == repo
    assert major_of(image) == major


@pytest.fixture
def db(tmp_path):
    app = contract_app()
    component = next(c for c in app.components if "db:postgres" in c.roles)
    target = Target(app=app, component=component, namespace=app.namespace)
    cluster = RecordingFaultContext(kubeconfig=tmp_path / "kubeconfig", namespace=target.namespace, app=app)
    cluster.kubectl("set", "image", f"statefulset/{component.name}", f"{component.container_name}=postgres:15",
                    "-n", target.namespace)
    return cluster, target


def _run(method, ctx, target, params):
    return asyncio.run(call_fault(method, ctx, target, params, retry_for=0))


def _image(cluster, target) -> str:
    import json

    obj = json.loads(cluster.kubectl("get", "statefulset", target.component.name, "-n", target.namespace, "-o", "json"))
    return obj["spec"]["template"]["spec"]["containers"][0]["image"]


def _set_image(cluster, target, image):
    cluster.kubectl("set", "image", f"statefulset/{target.component.name}", f"{target.component.container_name}={image}",
                    "-n", target.namespace)


def test_any_other_major_over_the_data_is_still_the_fault(db):
    """Present while the image names a major other than the one that made the data: a variant of the
    new major, or a third major, is refused by PostgreSQL just the same; a patch release of the old
    one is the fix; another image in the database's place reads no data at all."""
    cluster, target = db
    ctx = cluster.child()
    params = {"tag": "18"}
    _run(FAULT.impl.inject, ctx, target, params)
    assert _image(cluster, target) == "postgres:18"
    truth = FAULT.impl.ground_truth(ctx, target, params)
    assert truth.mutated_values["image"] == {"before": "postgres:15", "after": "postgres:18"}
    assert truth.mutated_values["data_directory_initialised_by"] == "15"
    for image, present in (("postgres:18-alpine", True), ("postgres:17", True), ("postgres:latest", True),
                           ("busybox:1.36", True), ("postgres:15.4-bookworm", False), ("postgres:15", False)):
        _set_image(cluster, target, image)
        assert _run(FAULT.impl.is_present, ctx, target, params) is present, image
    _set_image(cluster, target, "postgres:18")
    _run(FAULT.impl.reference_fix, ctx, target, params)
    assert _image(cluster, target) == "postgres:15"
    assert _run(FAULT.impl.is_present, ctx, target, params) is False


@pytest.mark.parametrize("tag", ["15", "15.4-alpine"])
def test_the_same_major_is_no_upgrade(db, tag):
    cluster, target = db
    with pytest.raises(PermanentFaultError, match="not another major version"):
        _run(FAULT.impl.inject, cluster.child(), target, {"tag": tag})
    assert _image(cluster, target) == "postgres:15"


def test_the_tag_must_name_a_major_version():
    from sregym_core.errors import SregymError
    from sregym_core.validation import validate

    with pytest.raises(SregymError):
        validate({"tag": "latest"}, dict(FAULT.params_schema), what="params")
    assert validate({}, dict(FAULT.params_schema), what="params", fill_defaults=True) == {"tag": "18"}
