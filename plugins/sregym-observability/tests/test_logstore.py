from __future__ import annotations

import time
import tracemalloc

from sregym_observability.logql import parse_logql
from sregym_observability.logstore import ENTRY_OVERHEAD, LogRetention, LogStore

NS = 1_000_000_000


def _fill(store: LogStore) -> None:
    store.append({"namespace": "hotel", "app": "geo", "pod": "geo-1"},
                 [(10 * NS, "started"), (11 * NS, "rpc error: connection refused"), (12 * NS, "ok")])
    store.append({"namespace": "hotel", "app": "rate", "pod": "rate-1"},
                 [(10 * NS + 5, "rate error: timeout"), (13 * NS, "ok")])
    store.append({"namespace": "other", "app": "geo", "pod": "geo-x"}, [(11 * NS, "error elsewhere")])


def test_select_filters_streams_lines_and_time() -> None:
    store = LogStore()
    _fill(store)
    result = store.select(parse_logql('{namespace="hotel"} |= "error"'), 0, 100 * NS, limit=100)
    flat = sorted((labels["app"], ts, line) for labels, values in result for ts, line in values)
    assert flat == [("geo", 11 * NS, "rpc error: connection refused"), ("rate", 10 * NS + 5, "rate error: timeout")]
    # end is exclusive, start inclusive
    result = store.select(parse_logql('{app="geo"}'), 11 * NS, 12 * NS, limit=100)
    assert sorted(line for _, values in result for _, line in values) == ["error elsewhere",
                                                                          "rpc error: connection refused"]


def test_limit_keeps_newest_backward_and_oldest_forward() -> None:
    store = LogStore()
    _fill(store)
    query = parse_logql('{namespace="hotel"}')
    newest = store.select(query, 0, 100 * NS, limit=2, backward=True)
    assert sorted(ts for _, values in newest for ts, _ in values) == [12 * NS, 13 * NS]
    oldest = store.select(query, 0, 100 * NS, limit=2, backward=False)
    assert sorted(ts for _, values in oldest for ts, _ in values) == [10 * NS, 10 * NS + 5]
    for _, values in newest:
        assert values == sorted(values, reverse=True)


def test_labels_and_values() -> None:
    store = LogStore()
    _fill(store)
    assert store.label_names() == ["app", "namespace", "pod"]
    assert store.label_values("app") == ["geo", "rate"]
    assert store.label_values("pod", query=parse_logql('{namespace="other"}')) == ["geo-x"]
    assert store.label_values("pod", 12 * NS + 1, 20 * NS) == ["rate-1"]


def test_per_stream_and_global_caps_hold() -> None:
    retention = LogRetention(max_bytes=200_000, max_stream_bytes=50_000, max_age_s=3600, max_streams=50)
    store = LogStore(retention)
    line = "x" * 100
    for i in range(20_000):
        store.append({"app": f"a{i % 8}"}, [(i, f"{line} {i}")])
        assert store.total_bytes <= retention.max_bytes
    assert all(s.bytes <= retention.max_stream_bytes for s in store._streams.values())
    assert store.total_bytes == sum(len(text) + ENTRY_OVERHEAD for s in store._streams.values() for *_, text in s.entries)
    # The newest entry survives; the oldest went.
    newest = store.select(parse_logql('{app="a7"}'), 0, 10**12, limit=1)
    assert newest[0][1][0][1].endswith(" 19999")
    assert not store.select(parse_logql('{app="a0"}'), 0, 100, limit=10)
    assert store.dropped_entries > 0


def test_stream_cap_evicts_stalest_stream() -> None:
    store = LogStore(LogRetention(max_streams=3))
    for i in range(10):
        store.append({"pod": f"p{i}"}, [(i, "line")])
    assert store.stream_count() == 3
    assert store.label_values("pod") == ["p7", "p8", "p9"]


def test_age_limit_expires_entries() -> None:
    store = LogStore(LogRetention(max_age_s=0.05))
    store.append({"app": "a"}, [(1, "old")])
    time.sleep(0.1)
    store.expire()
    assert store.entry_count() == 0 and store.total_bytes == 0


def test_out_of_order_entries_are_clamped_not_lost() -> None:
    store = LogStore()
    store.append({"app": "a"}, [(100, "late second"), (50, "early")])
    values = store.select(parse_logql('{app="a"}'), 0, 1000, limit=10, backward=False)[0][1]
    assert [line for _, line in values] == ["late second", "early"]


def test_memory_stays_bounded_under_large_volume() -> None:
    retention = LogRetention(max_bytes=2 * 1024 * 1024, max_stream_bytes=512 * 1024)
    store = LogStore(retention)
    tracemalloc.start()
    try:
        line = "y" * 200
        for batch in range(160):  # 160 * 250 lines * ~200 B = ~8 MB pushed into a 2 MiB store
            store.append({"app": f"s{batch % 20}"}, [(batch * 1000 + j, line) for j in range(250)])
        current, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert store.total_bytes <= retention.max_bytes
    assert current < 3 * retention.max_bytes, current
