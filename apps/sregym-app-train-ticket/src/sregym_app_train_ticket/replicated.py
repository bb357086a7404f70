"""The pieces of the replicated industrial faults' code paths (F1-F22 of the TrainTicket
fault-analysis study, Zhou et al., TSE 2018) that are more than a line in a handler.

Each is used by :mod:`services` only while its ``tt-feat-N`` flag is on; with the flag off the
handler takes the healthy path and nothing here runs (a queue left from the faulty path drains at
once). They are real concurrency, not sleeps standing in for a failure: the wrong outcome comes
from the order in which real requests, threads and SQL statements finish.

* :class:`Dispatcher` (F1, F11): work handed to a background thread that runs it after a delivery
  delay, with no sequence control against what the caller does next.
* :func:`in_arrival_order` (F2): answers of parallel requests collected in the order they arrive.
* :class:`StarvedPool` (F5): a shared two-thread pool whose tasks wait on sub-tasks queued on the
  same pool, so two tasks at once starve each other (and what queues behind them) until timeouts.
* :class:`StationLocks` (F12): locks taken as ``(from, to)`` and released as ``(to, from)``.
* :class:`BatchQueue` (F13): work applied by a batch worker every few seconds instead of at once.
"""

from __future__ import annotations

import concurrent.futures
import queue
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from opentelemetry import context as otel_context

from . import runtime


def carry_context(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` bound to the caller's trace context, to run on another thread."""
    parent = otel_context.get_current()

    def run(*args: Any, **kwargs: Any) -> Any:
        token = otel_context.attach(parent)
        try:
            return fn(*args, **kwargs)
        finally:
            otel_context.detach(token)

    return run


# ------------------------------------------------------------------------------------- F1, F11
class Dispatcher:
    """Runs each job on its own background thread after ``delay_s`` (an asynchronous message whose
    delivery takes that long); the caller carries on at once. A job's failure is logged."""

    def __init__(self, name: str, delay_s: float) -> None:
        self.name, self.delay_s = name, delay_s

    def send(self, job: Callable[[], Any], **about: Any) -> None:
        job = carry_context(job)

        def deliver() -> None:
            time.sleep(self.delay_s)
            try:
                job()
            except Exception as exc:  # noqa: BLE001 - nobody waits for an asynchronous job
                runtime.error("async_job_failed", job=self.name, error=f"{type(exc).__name__}: {exc}", **about)

        threading.Thread(target=deliver, name=f"async-{self.name}", daemon=True).start()


# ------------------------------------------------------------------------------------------ F2
def in_arrival_order(calls: Iterable[Callable[..., Any]]) -> list[Any]:  # each called with no arguments
    """The results of ``calls`` run in parallel, in the order they finish (not the order asked)."""
    calls = [carry_context(c) for c in calls]
    if not calls:
        return []
    arrived: queue.Queue[tuple[bool, Any]] = queue.Queue()

    def run(call: Callable[[], Any]) -> None:
        try:
            arrived.put((True, call()))
        except Exception as exc:  # noqa: BLE001 - re-raised on the request thread below
            arrived.put((False, exc))

    for call in calls:
        threading.Thread(target=run, args=(call,), daemon=True).start()
    out = []
    for _ in calls:
        ok, value = arrived.get()
        if not ok:
            raise value
        out.append(value)
    return out


# ------------------------------------------------------------------------------------------ F5
class StarvedPool:
    """Asynchronous tasks on one shared pool of ``workers`` threads, whose tasks run their own
    sub-tasks on the same pool (:meth:`gather`) and wait ``wait_s`` for them. One task at a time
    finds a free thread for its sub-tasks; as many tasks as threads leave every thread waiting for
    sub-tasks queued behind them, until the waits time out, and whatever is queued behind them
    waits too. A task whose caller has given up (queued longer than ``stale_s``) is dropped."""

    def __init__(self, workers: int = 2, wait_s: float = 3.0, stale_s: float = 5.0) -> None:
        self.workers, self.wait_s, self.stale_s = workers, wait_s, stale_s
        self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="async-task")

    def start(self, task: Callable[..., Any]) -> concurrent.futures.Future:  # called with no arguments
        queued, task = time.monotonic(), carry_context(task)

        def run() -> Any:
            if time.monotonic() - queued > self.stale_s:
                raise TimeoutError("the caller gave up while the task was queued")
            return task()

        return self.pool.submit(run)

    def result(self, future: concurrent.futures.Future) -> Any:
        """A started task's result, waiting at most as long as its caller would."""
        try:
            return future.result(timeout=self.stale_s)
        except TimeoutError:
            if future.done():
                raise  # the task's own failure
            future.cancel()
            raise TimeoutError(f"async task pool: task not done after {self.stale_s:g} s "
                               f"(all {self.workers} threads busy)") from None

    def gather(self, calls: dict[Any, Callable[[], Any]]) -> dict[Any, Any]:
        """From inside a task: run ``calls`` as sub-tasks on the same pool, wait ``wait_s`` for all."""
        futures = {key: self.pool.submit(carry_context(call)) for key, call in calls.items()}
        deadline = time.monotonic() + self.wait_s
        out = {}
        for key, future in futures.items():
            try:
                out[key] = future.result(timeout=max(0.0, deadline - time.monotonic()))
            except TimeoutError:
                if future.done():
                    raise  # the sub-task's own failure
                for pending in futures.values():
                    pending.cancel()
                raise TimeoutError(f"async task pool: sub-task {key!r} still queued after {self.wait_s:g} s "
                                   f"(all {self.workers} threads busy)") from None
        return out


# ----------------------------------------------------------------------------------------- F12
class StationLocks:
    """Station pairs locked while orders between them are read. ``lock`` takes ``(from, to)``;
    ``release`` removes ``(to, from)``, which was never taken: every lock stays."""

    def __init__(self) -> None:
        self.held: set[tuple[str, str]] = set()
        self.lock = threading.Lock()

    def lock_pairs(self, pairs: Iterable[tuple[str, str]]) -> None:
        with self.lock:
            self.held.update(pairs)

    def release(self, pairs: Iterable[tuple[str, str]]) -> None:
        with self.lock:
            for start, end in pairs:
                self.held.discard((end, start))

    def locked(self, start: str, end: str) -> bool:
        with self.lock:
            return (start, end) in self.held


# ----------------------------------------------------------------------------------------- F13
class BatchQueue:
    """Jobs applied by one worker thread in batches: a batch is applied ``interval_s`` after its
    first job was queued (at once when ``batching()`` turns False, so switching the feature off
    drains the queue)."""

    def __init__(self, name: str, interval_s: float, batching: Callable[[], bool]) -> None:
        self.name, self.interval_s, self.batching = name, interval_s, batching
        self.jobs: queue.Queue[tuple[Callable[[], Any], dict[str, Any]]] = queue.Queue()
        self.opened: float | None = None  # when the batch being filled got its first job
        self.worker: threading.Thread | None = None
        self.lock = threading.Lock()

    def put(self, job: Callable[[], Any], **about: Any) -> None:
        with self.lock:
            self.jobs.put((carry_context(job), about))
            if self.opened is None:
                self.opened = time.monotonic()
            if self.worker is None:
                self.worker = threading.Thread(target=self._work, name=f"batch-{self.name}", daemon=True)
                self.worker.start()

    def _work(self) -> None:
        while True:
            time.sleep(0.1)
            with self.lock:
                opened = self.opened
            if opened is None or (self.batching() and time.monotonic() - opened < self.interval_s):
                continue
            with self.lock:
                self.opened = None
            self.drain()

    def drain(self) -> int:
        done = 0
        while True:
            try:
                job, about = self.jobs.get_nowait()
            except queue.Empty:
                return done
            try:
                job()
            except Exception as exc:  # noqa: BLE001 - the request that queued it has answered already
                runtime.error("batch_job_failed", job=self.name, error=f"{type(exc).__name__}: {exc}", **about)
            done += 1
