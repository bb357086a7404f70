"""The Ray executor's bookkeeping: retry of a lost worker's item, --resume, each key recorded once."""

from __future__ import annotations

import attrs
import pytest
from sregym_executor_ray.ledger import Lost, WorkLedger


@attrs.frozen
class Rec:
    key: tuple


KEYS = [("p1", "reference", 1), ("p1", "noop", 1), ("p2", "reference", 1), ("p2", "noop", 1)]
GROUPS = ["p1", "p1", "p2", "p2"]


def drain(ledger: WorkLedger, worker: str = "w") -> list[int]:
    taken = []
    while (index := ledger.take(worker)) is not None:
        taken.append(index)
        ledger.finished(index, [Rec(ledger.keys[index])])
    return taken


def test_items_go_out_in_order_and_the_ledger_completes():
    ledger = WorkLedger(KEYS, GROUPS)
    assert not ledger.complete
    assert drain(ledger) == [0, 1, 2, 3]
    assert ledger.complete and ledger.recorded == set(KEYS)


def test_a_lost_item_goes_first_to_another_worker():
    ledger = WorkLedger(KEYS, GROUPS)
    a, b = ledger.take("w1"), ledger.take("w2")
    assert (a, b) == (0, 1)
    assert ledger.running_on("w1") == [0]
    assert ledger.lost(a) is None  # first loss: retried
    assert ledger.take("w2") == 0  # ahead of the items never started
    assert ledger.running_on("w1") == []
    assert not ledger.complete


def test_an_item_that_keeps_losing_workers_is_given_up():
    ledger = WorkLedger(KEYS[:1], GROUPS[:1], max_tries=2)
    ledger.lost(ledger.take("w1"))
    assert ledger.lost(ledger.take("w2")) == Lost(0, 2)
    assert ledger.complete and ledger.take("w3") is None
    # its failure record counts as its one record: a late duplicate is dropped
    fresh, _ = ledger.finished(0, [Rec(KEYS[0])])
    assert fresh == []


def test_resume_never_hands_out_recorded_keys():
    ledger = WorkLedger(KEYS, GROUPS, done={KEYS[0], KEYS[3], ("other", "noop", 1)})
    assert ledger.skipped == [0, 3]
    assert drain(ledger) == [1, 2]
    assert ledger.complete


def test_resume_of_a_finished_run_has_nothing_to_do():
    ledger = WorkLedger(KEYS, GROUPS, done=set(KEYS))
    assert ledger.complete and ledger.take("w") is None


def test_each_key_is_recorded_once_even_when_sent_twice():
    ledger = WorkLedger(KEYS, GROUPS)
    index = ledger.take("w1")
    fresh, _ = ledger.finished(index, [Rec(KEYS[0]), Rec(KEYS[0])])
    assert fresh == [Rec(KEYS[0])]
    # the same item retried after a lost reply and answered again: not written again
    fresh, _ = ledger.finished(index, [Rec(KEYS[0])])
    assert fresh == []


def test_a_deploy_failure_fails_the_problems_items_not_yet_taken():
    ledger = WorkLedger(KEYS, GROUPS)
    first = ledger.take("w1")
    _, failed_with = ledger.finished(first, [Rec(KEYS[0])], deploy_failed=True)
    assert failed_with == [1]  # p1's other item; p2's untouched
    assert KEYS[1] in ledger.recorded
    assert drain(ledger) == [2, 3]
    assert ledger.complete


def test_a_deploy_failure_leaves_items_other_workers_run():
    ledger = WorkLedger(KEYS, GROUPS)
    first, second = ledger.take("w1"), ledger.take("w2")
    _, failed_with = ledger.finished(first, [Rec(KEYS[0])], deploy_failed=True)
    assert failed_with == []  # item 1 is running on w2; its own record comes back from there
    fresh, _ = ledger.finished(second, [Rec(KEYS[1])])
    assert fresh == [Rec(KEYS[1])]


def test_keys_and_groups_must_match():
    with pytest.raises(ValueError):
        WorkLedger(KEYS, GROUPS[:1])
