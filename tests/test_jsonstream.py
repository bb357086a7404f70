"""``sregym_core.testing.jsonstream``: reading ``kubectl get --watch -o json`` as it prints, in linear time.

The shapes are kubectl's: values indented by four spaces, and past 500 objects the initial list
printed page by page, each page one ``EventList`` (issue #33: a reader that re-decoded its whole
buffer on every line fell minutes behind such a page and never saw the events after it).
"""

from __future__ import annotations

import json

from sregym_core.testing.jsonstream import JsonValues, objects


def _event(i: int, reason: str = "Pulled") -> dict:
    return {"apiVersion": "v1", "kind": "Event", "metadata": {"name": f"geo-1.{i:016x}", "namespace": "hotel-reservation",
                                                             "resourceVersion": str(100 + i)},
            "involvedObject": {"kind": "Pod", "name": "geo-1", "namespace": "hotel-reservation"},
            "reason": reason, "message": 'Container image "geo:1" already present on machine\nline two', "count": 1}


def _kubectl(value: dict) -> list[str]:
    """``value`` as kubectl -o json prints it: indented, newline-terminated lines."""
    return (json.dumps(value, indent=4) + "\n").splitlines(keepends=True)


class CountingDecoder(json.JSONDecoder):
    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def raw_decode(self, s, idx=0):  # noqa: ANN001 - json's own signature
        self.calls += 1
        return super().raw_decode(s, idx)


def test_a_paged_watch_yields_every_object_in_order():
    pages = [{"apiVersion": "v1", "kind": "EventList", "metadata": {"resourceVersion": "900"},
              "items": [_event(i) for i in range(start, min(start + 500, 1200))]} for start in (0, 500, 1000)]
    later = [_event(2000, "ConfigReloaded"), _event(2000, "ConfigReloaded")]
    stream, got = JsonValues(), []
    for value in [*pages, *later]:
        for line in _kubectl(value):
            got.extend(objects(stream.feed(line)))
    assert [o["metadata"]["name"] for o in got] == [f"geo-1.{i:016x}" for i in [*range(1200), 2000, 2000]]
    assert got[-1]["reason"] == "ConfigReloaded" and got[-1]["message"].endswith("line two")
    assert stream.pending == ""


def test_a_value_comes_out_on_the_line_that_closes_it():
    stream = JsonValues()
    lines = _kubectl(_event(7))
    assert all(stream.feed(line) == [] for line in lines[:-1])
    assert stream.pending.startswith("{")
    assert [o["metadata"]["name"] for o in stream.feed(lines[-1])] == ["geo-1.0000000000000007"]


def test_compact_values_several_on_a_line_and_blank_lines():
    stream = JsonValues()
    assert stream.feed("\n") == []
    assert stream.feed('{"a": 1} {"b": [1, 2]}\n') == [{"a": 1}, {"b": [1, 2]}]
    assert stream.feed('{"c":\n') == []
    assert stream.feed('  3}\n') == []  # indented: cannot be read as an end
    assert stream.feed('{"d": 4}\n') == [{"c": 3}, {"d": 4}]


def test_decoding_is_attempted_only_where_a_value_can_end():
    # a page of 500 events is thousands of lines (15,000 for real kubelet events); decoding the
    # buffer again on each of them is what fell behind
    decoder = CountingDecoder()
    stream = JsonValues(decoder)
    page = {"apiVersion": "v1", "kind": "EventList", "metadata": {}, "items": [_event(i) for i in range(500)]}
    lines = _kubectl(page) + _kubectl(_event(501))
    assert len(lines) > 8_000
    got = [o for line in lines for o in objects(stream.feed(line))]
    assert len(got) == 501
    assert decoder.calls <= 4  # the opening and the closing line of each value


def test_objects_of_lists_and_single_objects():
    assert objects([{"kind": "PodList", "items": [{"kind": "Pod"}, 3]}, {"kind": "Pod", "x": 1}, [1], "s"]) == \
        [{"kind": "Pod"}, {"kind": "Pod", "x": 1}]
