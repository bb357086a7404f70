"""What the validation agents count as a healthy pod while they wait after a fix."""

from sregym_agent_baselines.agents import _ready


def pod(phase, ready=None, deleting=False):
    meta = {"name": "p"}
    if deleting:
        meta["deletionTimestamp"] = "2026-11-22T00:00:00Z"
    conditions = [] if ready is None else [{"type": "Ready", "status": "True" if ready else "False"}]
    return {"metadata": meta, "status": {"phase": phase, "conditions": conditions}}


def test_running_pods_must_be_ready():
    assert _ready(pod("Running", ready=True))
    assert not _ready(pod("Running", ready=False))
    assert not _ready(pod("Pending"))
    assert not _ready(pod("Running", ready=True, deleting=True))


def test_finished_pods_wait_for_nothing():
    # a backfill Job whose lock was terminated fails for good; it must not hold the agent for minutes
    assert _ready(pod("Failed"))
    assert _ready(pod("Succeeded"))
