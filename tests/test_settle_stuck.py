"""The settle before the SLO window: it waits for a converging app, and stops waiting for one plainly
stuck on an image it cannot pull (unit test; the cluster is a stand-in answering list requests)."""

from __future__ import annotations

import asyncio

from sregym_core.conductor.reconcile import stuck_on_images, wait_converged


def _pod(name: str, *, ready: bool = False, reason: str | None = None, deleting: bool = False) -> dict:
    meta = {"name": name, **({"deletionTimestamp": "2026-11-29T00:00:00Z"} if deleting else {})}
    status = {"phase": "Running" if ready else "Pending",
              "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
              "containerStatuses": [{"name": "c", "state": {"waiting": {"reason": reason}} if reason else {}}]}
    return {"metadata": meta, "status": status}


def _deployment(name: str, *, want: int = 1, ready: int = 1, generation: int = 2, observed: int = 2) -> dict:
    return {"metadata": {"name": name, "generation": generation}, "spec": {"replicas": want},
            "status": {"readyReplicas": ready, "observedGeneration": observed}}


class Kube:
    def __init__(self, pods: list[dict], deployments: list[dict]) -> None:
        self.pods, self.deployments = pods, deployments

    def list_items(self, path: str, kind: str, **_query) -> list[dict]:
        return {"Pod": self.pods, "Deployment": self.deployments}.get(kind, [])


def test_only_pods_waiting_for_an_image_they_cannot_pull_are_stuck():
    NS = ("shop",)
    broken = [_pod("geo-new", reason="ImagePullBackOff"), _pod("frontend", ready=True)]
    assert stuck_on_images(Kube(broken, [_deployment("geo", ready=0)]), NS)
    assert stuck_on_images(Kube([_pod("geo-new", reason="ErrImagePull")], [_deployment("geo", ready=0)]), NS)
    # a pod still being created, or crash-looping, may yet come up: not stuck
    assert not stuck_on_images(Kube([*broken, _pod("geo-2", reason="ContainerCreating")], []), NS)
    assert not stuck_on_images(Kube([_pod("geo", reason="CrashLoopBackOff")], []), NS)
    # a pod on its way out, or a rollout its controller has not seen yet, is a change in progress
    assert not stuck_on_images(Kube([*broken, _pod("old", deleting=True)], []), NS)
    assert not stuck_on_images(Kube(broken, [_deployment("geo", ready=0, generation=3, observed=2)]), NS)
    # every pod Ready: nothing is stuck (the app converged)
    assert not stuck_on_images(Kube([_pod("geo", ready=True)], [_deployment("geo")]), NS)


def test_wait_converged_is_true_for_a_ready_app_and_false_soon_for_a_stuck_one():
    NS = ("shop",)
    assert asyncio.run(wait_converged(Kube([_pod("geo", ready=True)], [_deployment("geo")]), NS, timeout=30))
    stuck = Kube([_pod("geo-new", reason="ImagePullBackOff")], [_deployment("geo", ready=0)])
    assert asyncio.run(wait_converged(stuck, NS, timeout=30, confirm_s=0.6)) is False


def test_a_rollout_that_comes_up_after_a_moment_stuck_is_waited_for():
    """The old pod still pulls the bad image while the fixed one is created: not judged stuck in that moment."""
    NS = ("shop",)
    kube = Kube([_pod("geo-old", reason="ImagePullBackOff")], [_deployment("geo", ready=0)])
    calls = {"n": 0}
    real = kube.list_items

    def list_items(path, kind, **query):
        calls["n"] += 1
        if calls["n"] > 4:  # the fixed pod arrives and comes up; the old one goes
            kube.pods, kube.deployments = [_pod("geo-new", ready=True)], [_deployment("geo")]
        return real(path, kind, **query)

    kube.list_items = list_items
    assert asyncio.run(wait_converged(kube, NS, timeout=30, confirm_s=5.0)) is True
