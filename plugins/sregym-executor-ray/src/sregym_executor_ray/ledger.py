"""Which work item is where: pending, running on a worker, recorded. No ray in here (unit-tested alone).

The driver asks :meth:`WorkLedger.take` for the next item whenever a worker is free, and tells the
ledger what became of it: :meth:`finished` with the records the worker handed back, or
:meth:`lost` when the worker died under it (the item goes back to the front of the queue for
another worker, up to ``max_tries`` times). Every key is recorded at most once, whatever a worker
sends twice, and keys already in the results directory (``--resume``) are never handed out.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Hashable, Iterable, Sequence
from typing import Any

import attrs


@attrs.frozen
class Lost:
    """An item whose worker died ``tries`` times: the driver records it as failed."""

    index: int
    tries: int


class WorkLedger:
    """``keys[i]`` identifies item ``i`` (an :func:`~sregym_core.results.record.attempt_key`); ``groups[i]`` is the
    item's problem: when its deploy fails, the problem's items no worker has taken yet are failed
    with it (as the built-in executor does) rather than each deploying again."""

    def __init__(self, keys: Sequence[Hashable], groups: Sequence[Hashable], *, done: Iterable[Hashable] = (),
                 max_tries: int = 2) -> None:
        if len(keys) != len(groups):
            raise ValueError("one group per key")
        self.keys, self.groups, self.max_tries = list(keys), list(groups), max_tries
        already = set(done)
        self.skipped = [i for i, key in enumerate(self.keys) if key in already]
        self.pending: deque[int] = deque(i for i, key in enumerate(self.keys) if key not in already)
        self.running: dict[int, Any] = {}  # item -> worker
        self.tries: dict[int, int] = {}
        self.recorded: set[Hashable] = set(already)
        self.settled: set[int] = set(self.skipped)

    def take(self, worker: Any) -> int | None:
        """The next item for ``worker`` (None: nothing left to hand out)."""
        if not self.pending:
            return None
        index = self.pending.popleft()
        self.running[index] = worker
        self.tries[index] = self.tries.get(index, 0) + 1
        return index

    def finished(self, index: int, records: Sequence[Any], *, deploy_failed: bool = False) -> tuple[list[Any], list[int]]:
        """Item ``index`` came back with ``records`` (objects with ``.key``). Returns the records to
        write (each key once: a duplicate is dropped) and, when its deploy failed, the pending items
        of the same problem, now settled: the driver records them as deploy failures too."""
        self.running.pop(index, None)
        self.settled.add(index)
        fresh = []
        for record in records:
            if record.key in self.recorded:
                continue
            self.recorded.add(record.key)
            fresh.append(record)
        failed_with: list[int] = []
        if deploy_failed:
            failed_with = [i for i in self.pending if self.groups[i] == self.groups[index]]
            self.pending = deque(i for i in self.pending if i not in failed_with)
            self.settled.update(failed_with)
            for i in failed_with:
                self.recorded.add(self.keys[i])
        return fresh, failed_with

    def lost(self, index: int) -> Lost | None:
        """The worker running ``index`` died: retry it first on another worker, or give up on it
        (returned) after ``max_tries``."""
        self.running.pop(index, None)
        if self.tries.get(index, 0) >= self.max_tries:
            self.settled.add(index)
            self.recorded.add(self.keys[index])
            return Lost(index, self.tries[index])
        self.pending.appendleft(index)
        return None

    def running_on(self, worker: Any) -> list[int]:
        return [index for index, who in self.running.items() if who is worker]

    @property
    def complete(self) -> bool:
        return not self.pending and not self.running
