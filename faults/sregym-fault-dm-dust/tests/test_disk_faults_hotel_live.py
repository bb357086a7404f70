"""Disk faults on the FUSE layer against Hotel Reservation's PostgreSQL, live (issues #34, #40).

* **The layer names no target** (round 3's finding): after ``silent-data-corruption`` is injected
  into one datastore, an agent with an attempt's identity compares what ``kubectl`` shows of every
  datastore pod (its ``/proc/self/mountinfo``, restart counts, that it restarted at inject) and
  finds them alike: every one has the same fuse mount over its volume and all restarted together.
* **Silent corruption surfaces as wrong rows, no error**: PostgreSQL (no data checksums) answers the
  same query with other values than before inject and no error; the reference fix (a new volume,
  the data rebuilt) brings the written rows back.

Slow (a live embedded cluster with Hotel Reservation), skipped where the layer is unavailable. No
timing bars: every wait is for the event, with outer bounds that only catch hangs.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from sregym_core.faults import call_fault
from sregym_core.testing.live import wait_for
from sregym_core.types import Target

pytestmark = [pytest.mark.slow, pytest.mark.adversarial]

NS = "hotel-reservation"
KUBECTL = str(Path(sys.executable).parent / "kubectl")
ROWS = "SELECT hotel_id, lat, lon, rate, price FROM recommendation ORDER BY hotel_id"
_PSQL = 'psql -U "$POSTGRES_USER" -d "$POSTGRES_DB" -At -c "$1"'  # the superuser, over the pod's Unix socket


def kubectl(config: Path, *args: str, check: bool = True) -> str:
    done = subprocess.run([KUBECTL, f"--kubeconfig={config}", *args], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 or not check, done.stderr
    return done.stdout


def _datastore_pods(config: Path) -> dict[str, dict]:
    items = json.loads(kubectl(config, "get", "pods", "-n", NS, "-l", "tier=datastore", "-o", "json"))["items"]
    return {p["metadata"]["labels"]["app.kubernetes.io/name"]: p for p in items
            if not p["metadata"].get("deletionTimestamp")}


def _rows(config: Path, pod: str) -> tuple[int, str, str]:
    """(exit code, digest of the rows, stderr) of the recommendation table as PostgreSQL returns it."""
    done = subprocess.run([KUBECTL, f"--kubeconfig={config}", "exec", pod, "-n", NS, "-c", "postgres", "--",
                           "sh", "-c", _PSQL, "psql", ROWS], capture_output=True, text=True, timeout=120)
    return done.returncode, hashlib.sha256(done.stdout.encode()).hexdigest(), done.stderr.strip()


def _fuse_mounts(config: Path, pod: str) -> list[str]:
    """The pod's fuse mounts as an agent reads them, without what differs per mount anyway
    (mount ids and the device number the kernel hands each connection)."""
    text = kubectl(config, "exec", pod, "-n", NS, "-c", "postgres", "--", "cat", "/proc/self/mountinfo")
    out = []
    for line in text.splitlines():
        if " - fuse " in line:
            fields = line.split()
            out.append(" ".join(fields[3:5] + fields[5:6] + [re.sub(r"^\S+ ", "", line.split(" - ", 1)[1])]))
    return out


@pytest.fixture(scope="module")
def hotel(deployed_app):
    return deployed_app("hotel-reservation")


@pytest.fixture
def agent(hotel, tmp_path):
    from sregym_core.conductor.agent_access import grant_agent_access, revoke_agent_access
    from sregym_core.conductor.kube import Kube

    kube = Kube(hotel.env.cluster.kubeconfig(), kubectl=KUBECTL)
    account = f"agent-{uuid.uuid4().hex[:12]}"
    config = grant_agent_access(kube, [NS], tmp_path / "agent.kubeconfig", account=account, expiration_seconds=900)
    try:
        yield config
    finally:
        revoke_agent_access(kube, [NS], account)


def test_corruption_names_no_target_and_the_reference_fix_brings_the_rows_back(hotel, agent):
    mechanisms = hotel.env.cluster.faults()["mechanisms"].get("fuse-badblocks") or {}
    if not mechanisms.get("available"):
        pytest.skip(f"the FUSE layer is unavailable here: {mechanisms.get('reason', 'not offered')}")
    admin = hotel.env.cluster.kubeconfig()
    spec = hotel.host.get_faults()["silent-data-corruption"]
    component = next(c for c in hotel.app.components if c.name == "postgres-recommendation")
    target = Target(app=hotel.app, component=component, namespace=NS)
    params = {"fraction": 0.5, "flips": 64}
    before_pods = _datastore_pods(admin)
    assert len(before_pods) == 6
    code, written, err = _rows(admin, before_pods["postgres-recommendation"]["metadata"]["name"])
    assert code == 0, err
    ctx = hotel.context()
    try:
        hotel.run(call_fault(spec.impl.inject, ctx, target, params))
        assert ctx.state["fault_mechanism"] == "fuse-badblocks"
        # inject returns once it deleted the datastores' pods (the rule is on the node first): as the
        # agent, wait for their successors, then every datastore restarted and carries the same fuse mount
        def restarted() -> dict[str, dict] | None:
            now = _datastore_pods(agent)
            back = set(now) == set(before_pods) and all(
                pod["metadata"]["uid"] != before_pods[name]["metadata"]["uid"] and any(
                    c.get("type") == "Ready" and c.get("status") == "True"
                    for c in (pod.get("status") or {}).get("conditions") or [])
                for name, pod in now.items())
            return now if back else None
        pods = wait_for(restarted, 180, 1.0)
        assert pods, f"the datastores did not all come back: {_datastore_pods(admin)}"
        restarts = {name: [c.get("restartCount") for c in pod["status"].get("containerStatuses") or []]
                    for name, pod in pods.items()}
        assert len({json.dumps(v) for v in restarts.values()}) == 1, restarts
        mounts = {name: _fuse_mounts(agent, pod["metadata"]["name"]) for name, pod in pods.items()}
        assert len({json.dumps(v) for v in mounts.values()}) == 1, mounts
        (mount,) = mounts["postgres-recommendation"]
        assert "/var/lib/postgresql/data" in mount and "rw,user_id=0,group_id=0,default_permissions,allow_other" in mount
        # PostgreSQL reads other rows than it wrote, and says nothing
        fresh = pods["postgres-recommendation"]["metadata"]["name"]
        code, altered, err = _rows(admin, fresh)
        assert code == 0 and "ERROR" not in err, err
        assert altered != written
        assert hotel.run(call_fault(spec.impl.is_present, ctx, target, params)) is True
        # the reference fix: a new volume, the data rebuilt from the seed
        hotel.run(call_fault(spec.impl.reference_fix, ctx, target, params))
        assert wait_for(lambda: not hotel.run(call_fault(spec.impl.is_present, ctx, target, params)), 120, 1.0)

        def rebuilt() -> bool:
            pod = _datastore_pods(admin).get("postgres-recommendation")
            return bool(pod) and _rows(admin, pod["metadata"]["name"])[:2] == (0, written)
        assert wait_for(rebuilt, 240, 2.0), "the rows never came back after the reference fix"
    finally:
        hotel.run(call_fault(spec.impl.recover, ctx, target, params))
        hotel.reset(restore_volumes=True)
