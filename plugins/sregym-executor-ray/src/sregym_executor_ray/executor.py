"""``--executor ray``: the plan's work items on N Ray workers, records merged into one results directory.

The driver (this process) starts a private, local Ray cluster bound to 127.0.0.1 (no dashboard, no
usage statistics), starts one :class:`.worker.EnvironmentWorker` actor per worker, each with an
embedded cluster of its own (``<cluster>-ray-<n>``), and hands each free worker the next item.
Workers send back records and trajectories; only the driver records them, through its plugin host
(the builtin results plugin writes the results directory), so ``--resume`` reads it as it would
after a serial run. A worker that dies mid-item (its process
killed, its machine gone) loses only that item: it goes back to the front of the queue for another
worker. At the end every worker and every Ray process is stopped.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs
from sregym_core.errors import SregymError, UsageError
from sregym_core.results.record import AttemptRecord, attempt_key
from sregym_core.results.writer import ResultsDir

from .ledger import WorkLedger

#: Ray's own object store: records and trajectories are small
OBJECT_STORE_BYTES = 128 * 1024 * 1024
#: how often an item is started before a lost worker counts against the item itself
MAX_TRIES = 2


class RayMissing(SregymError):
    """``--executor ray`` without the ray package."""


def import_ray() -> Any:
    """ray, configured for a machine-local cluster: set before the import, since ray reads these then."""
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    # a single-node cluster advertises (and binds) the loopback address, not the machine's
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    try:
        import ray
    except ImportError as exc:
        raise RayMissing("--executor ray needs the ray package, which is not installed",
                         hints=("pip install 'ray>=2.9' (or reinstall plugins/sregym-executor-ray with its "
                                "dependencies)", "or run without --executor: --parallel N runs environments "
                                "side by side in this process")) from exc
    return ray


@contextlib.contextmanager
def local_ray(workers: int) -> Iterator[Any]:
    """A Ray cluster of this machine only, for ``workers`` one-CPU workers; stopped on exit."""
    ray = import_ray()
    if ray.is_initialized():
        raise SregymError("ray is already initialised in this process; the Ray executor starts its own cluster")
    temp = tempfile.mkdtemp(prefix="sregym-ray-")
    try:
        # address="local": always a new cluster of our own, never one RAY_ADDRESS points at
        ray.init(address="local", num_cpus=workers, include_dashboard=False, _node_ip_address="127.0.0.1",
                 object_store_memory=OBJECT_STORE_BYTES, log_to_driver=False, configure_logging=False,
                 namespace="sregym", _temp_dir=temp)
        try:
            address = ray.get_runtime_context().gcs_address.rsplit(":", 1)[0]
            if not ipaddress.ip_address(address).is_loopback:
                raise SregymError(f"the local Ray cluster advertises {address}, not a loopback address",
                                  hints=("SREGym keeps cluster traffic on 127.0.0.0/8; "
                                         "unset RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER overrides",))
            yield ray
        finally:
            ray.shutdown()
    finally:
        shutil.rmtree(temp, ignore_errors=True)


def run_on_ray(*, host: Any, plan: Any, provider: str | None, cluster_name: str, workers: int,
               progress: Callable[[str], None] | None = None) -> list[AttemptRecord]:
    from sregym_core.clusters import default_provider
    from sregym_core.conductor.runner import new_run_id, plan_items, plan_model, resolve_agents

    say = progress or (lambda _text: None)
    provider_name = provider or default_provider(host)
    spec = host.get_clusters().get(provider_name)
    if spec is None or "embedded" not in spec.capabilities:
        raise UsageError(f"--executor ray gives each worker an environment of its own, and provider {provider_name!r} "
                         "does not start clusters", hints=("use the embedded provider (the default)",))
    plan = attrs.evolve(plan, results_dir=Path(plan.results_dir).absolute())
    resolve_agents(host, plan)  # an unknown agent fails here, before any worker starts
    names = [f"{cluster_name}-ray-{n}" for n in range(1, workers + 1)]
    items = plan_items(host, plan, frozenset(spec.capabilities), names[0], say)
    results = ResultsDir(plan.results_dir)  # the read side: recorded keys for --resume
    done = results.completed_keys() if plan.resume else set()
    model = plan_model(plan)
    ledger = WorkLedger([attempt_key(i.problem.id, i.agent, i.number, model) for i in items], [i.problem.id for i in items],
                        done=done, max_tries=MAX_TRIES)
    for index in ledger.skipped:
        item = items[index]
        say(f"{item.problem.id} × {item.agent} #{item.number}: already recorded, skipped (--resume)")
    run_id = new_run_id()
    merge = _Merge(host, plan, items, run_id, say)
    merge.said(host.run_started(str(plan.results_dir), run_id))
    if ledger.complete:
        merge.said(host.run_finished(str(plan.results_dir), merge.records))
        return merge.records
    scratch_root = plan.results_dir / ".work" / f"ray-{run_id}"
    with local_ray(workers) as ray:
        actor_class = ray.remote(num_cpus=1, max_restarts=0, max_task_retries=0)(_worker_class())
        actors = {n: actor_class.remote(n, workers, plan, provider, names[n - 1], run_id, str(scratch_root / f"worker-{n}"))
                  for n in range(1, workers + 1)}
        try:
            _drive(ray, actors, ledger, items, sorted(done), merge, say)
        finally:
            _stop(ray, actors)
    merge.said(host.run_finished(str(plan.results_dir), merge.records))
    return merge.records


def _worker_class() -> type:
    from .worker import EnvironmentWorker

    return EnvironmentWorker


def _drive(ray: Any, actors: dict[int, Any], ledger: WorkLedger, items: list, done: list, merge: _Merge,
           say: Callable[[str], None]) -> None:
    """Hand free workers items until every item is recorded (or no worker is left)."""
    inflight: dict[Any, tuple[int, int | None]] = {actor.open.remote(): (n, None) for n, actor in actors.items()}
    idle: list[int] = []
    while True:
        while idle and ledger.pending:
            n = idle.pop(0)
            index = ledger.take(n)
            if index is None:  # nothing left to hand out (the loop's guard says there is)
                idle.insert(0, n)
                break
            item = items[index]
            say(f"[ray worker {n}] takes {item.problem.id} × {item.agent} #{item.number}")
            inflight[actors[n].run.remote(item, done)] = (n, index)
        if ledger.complete:
            return
        if not inflight:
            left = len(ledger.pending)
            raise SregymError(f"every Ray worker failed; {left} work item(s) were not run",
                              hints=("the recorded attempts are kept: run again with --resume to finish",))
        ready, _ = ray.wait(list(inflight), num_returns=1)
        n, index = inflight.pop(ready[0])
        tag = f"[ray worker {n}] "
        try:
            value = ray.get(ready[0])
        except (ray.exceptions.RayActorError, ray.exceptions.RayTaskError) as exc:
            # the worker died (RayActorError) or its environment broke (the error raised in it): retire it
            reason = _first_line(exc)
            with contextlib.suppress(Exception):
                ray.kill(actors.pop(n))
            for other in [i for i in ledger.running_on(n) if i != index]:
                ledger.lost(other)
            if index is None:
                say(f"{tag}failed to start, its share goes to the others: {reason}")
                continue
            item = items[index]
            gave_up = ledger.lost(index)
            if gave_up is None:
                say(f"{tag}lost while running {item.problem.id} × {item.agent} #{item.number} ({reason}); "
                    "the item goes to another worker")
            else:
                say(f"{tag}lost while running {item.problem.id} × {item.agent} #{item.number} ({reason}); "
                    f"it lost a worker {gave_up.tries} times: recorded as failed")
                merge.lost(item, gave_up.tries, reason)
            continue
        if index is None:
            say(f"{tag}pid {value['pid']}, cluster ready")
            for line in value["lines"]:
                say(tag + line)
        else:
            merge.outcome(ledger, index, value, tag)
        idle.append(n)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:300]


def _stop(ray: Any, actors: dict[int, Any]) -> None:
    """Close every live worker (each stops its cluster), then end its process."""
    closing = {actor.close.remote(): n for n, actor in actors.items()}
    with contextlib.suppress(Exception):
        ray.wait(list(closing), num_returns=len(closing), timeout=120)
    for actor in actors.values():
        with contextlib.suppress(Exception):
            ray.kill(actor)


class _Merge:
    """The driver's side of the results: trajectories copied in, each record handed to the plugin
    host once (the builtin results plugin writes it)."""

    def __init__(self, host: Any, plan: Any, items: list, run_id: str, say: Callable[[str], None]) -> None:
        self.host, self.plan, self.items, self.say = host, plan, items, say
        self.run_id = run_id
        self.records: list[AttemptRecord] = []

    def said(self, failures: Any) -> None:
        """A plugin's lifecycle hook that raised: the run says so and goes on (the host called the others)."""
        for failure in failures:
            self.say(f"{failure.describe()} (the run goes on; the other plugins were still called)")

    def outcome(self, ledger: WorkLedger, index: int, outcome: Any, tag: str) -> None:
        for line in outcome.lines:
            self.say(tag + line)
        by_key = {attempt.record.key: attempt for attempt in outcome.attempts}
        records = [attempt.record for attempt in outcome.attempts]
        deploy_failed = any(record.deploy_failed for record in records)
        fresh, failed_with = ledger.finished(index, records, deploy_failed=deploy_failed)
        for record in fresh:
            self._record(record, by_key[record.key].trajectory)
        failed = next((record for record in records if record.deploy_failed), None)
        for other in failed_with:  # the problem's deploy failed: its items not yet run fail with it
            item = self.items[other]
            if failed is not None:  # always: failed_with is empty unless a record's deploy failed
                self._record(attrs.evolve(failed, agent=item.agent, attempt=item.number), None)

    def lost(self, item: Any, tries: int, reason: str) -> None:
        self._record(AttemptRecord(run_id=self.run_id, problem_id=item.problem.id, upstream_id=item.problem.upstream_id,
                                   agent=item.agent, attempt=item.number, app=item.problem.app,
                                   diagnosis_passed=False, mitigation_passed=False,
                                   error=f"the Ray worker running this attempt was lost {tries} times ({reason})"),
                     None)

    def _record(self, record: AttemptRecord, trajectory: str | None) -> None:
        path = None
        if trajectory is not None and record.trajectory_path:
            path = self.plan.results_dir / record.trajectory_path
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(trajectory)
        self.said(self.host.attempt_finished(record, results_dir=str(self.plan.results_dir)))
        self.records.append(record)
