"""The controller work queue with several workers (kube-controller-manager's --concurrent-*-syncs):
one slow reconcile does not hold up other keys, and one key is never reconciled twice at once."""

from __future__ import annotations

import asyncio

from sregym_cluster_embedded.controllers.base import Context, Controller, Timings
from sregym_cluster_embedded.controllers.replicaset import ReplicaSetController


class _Recording(Controller):
    name = "recording"
    workers = 3

    def setup(self) -> None:
        self.running: set = set()
        self.overlaps = 0
        self.done: list = []
        self.release = asyncio.Event()

    async def reconcile(self, key) -> None:
        if key in self.running:
            self.overlaps += 1
        self.running.add(key)
        try:
            if key == ("ns", "slow"):
                await self.release.wait()  # a pod create waiting on a slow admission webhook
            else:
                await asyncio.sleep(0.01)
        finally:
            self.running.discard(key)
        self.done.append(key)


def _controller(cls) -> Controller:
    return cls(Context(client=None, settings=None, timings=Timings()))


def test_a_slow_key_does_not_block_the_others_and_no_key_runs_twice():
    async def scenario():
        ctrl = _controller(_Recording)
        ctrl.start()
        try:
            ctrl.enqueue(("ns", "slow"))
            await asyncio.sleep(0.05)
            for _ in range(3):  # the slow key again while it runs: queued, not run in parallel
                ctrl.enqueue(("ns", "slow"))
                await asyncio.sleep(0.01)
            ctrl.enqueue(("ns", "fast"))
            for _ in range(100):
                if ("ns", "fast") in ctrl.done:
                    break
                await asyncio.sleep(0.01)
            assert ("ns", "fast") in ctrl.done  # while the slow one still waits
            assert ("ns", "slow") not in ctrl.done
            ctrl.release.set()
            for _ in range(100):
                if ctrl.done.count(("ns", "slow")) == 2:
                    break
                await asyncio.sleep(0.01)
            # the re-enqueued slow key ran once more after the first finished, never alongside it
            assert ctrl.done.count(("ns", "slow")) == 2
            assert ctrl.overlaps == 0
        finally:
            await ctrl.stop()
        assert ctrl._tasks == []

    asyncio.run(scenario())


def test_one_worker_stays_serial():
    class Serial(_Recording):
        workers = 1

    async def scenario():
        ctrl = _controller(Serial)
        ctrl.start()
        try:
            ctrl.enqueue(("ns", "slow"))
            await asyncio.sleep(0.05)
            ctrl.enqueue(("ns", "fast"))
            await asyncio.sleep(0.2)
            assert ctrl.done == []  # the only worker is busy with the slow key
            ctrl.release.set()
            # then both, in order: wait for the second to finish (the bound only catches a hang)
            deadline = asyncio.get_running_loop().time() + 30
            while len(ctrl.done) < 2 and asyncio.get_running_loop().time() < deadline:
                await asyncio.sleep(0.01)
            assert ctrl.done == [("ns", "slow"), ("ns", "fast")]
        finally:
            await ctrl.stop()

    asyncio.run(scenario())


def test_replicasets_sync_five_at_a_time_as_in_kube_controller_manager():
    assert ReplicaSetController.workers == 5
