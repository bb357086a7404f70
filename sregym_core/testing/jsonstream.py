"""Read ``kubectl get --watch -o json`` (or any stream of JSON values) line by line, in linear time.

kubectl prints every object indented, one value after another, and a watch of a busy namespace
starts with large ones: past 500 objects the initial list arrives in pages, and kubectl prints each
page as one ``...List`` of up to 500 items (half a megabyte of events, some 15,000 lines). A reader
that appends each line to a buffer and tries to decode the whole buffer again scans it once per
line: quadratic, about 90 s for one page of 500 events on a loaded 2-core machine, so it falls
minutes behind the watch and the objects that came after the list are never read before the test
looks (issue #33: the noise test's ``ConfigReloaded`` event "missing" from a watch that had
delivered it).

:class:`JsonValues` decodes only when a value can have ended: on a line that starts in column 0
(kubectl's closing ``}``, or a compact value on a line of its own). Indented lines inside a value
are only collected, so every byte is decoded once.
"""

from __future__ import annotations

import json
from typing import Any


class JsonValues:
    """Feed lines (with their newlines, as read from a pipe); get back the complete top-level values."""

    def __init__(self, decoder: json.JSONDecoder | None = None) -> None:
        self._decoder = decoder or json.JSONDecoder()
        self._pending: list[str] = []

    def feed(self, line: str) -> list[Any]:
        self._pending.append(line)
        if not line[:1] or line[:1].isspace():  # inside an indented value (or a blank line): nothing can end here
            return []
        text = "".join(self._pending)
        values, index = [], 0
        while True:
            while index < len(text) and text[index].isspace():
                index += 1
            if index == len(text):
                break
            try:
                value, index = self._decoder.raw_decode(text, index)
            except ValueError:  # the value goes on past this line
                break
            values.append(value)
        rest = text[index:]
        self._pending = [rest] if rest.strip() else []
        return values

    @property
    def pending(self) -> str:
        """What has been read but does not form a complete value yet."""
        return "".join(self._pending)


def objects(values: list[Any]) -> list[dict[str, Any]]:
    """The Kubernetes objects in decoded values: a ``List``'s (or a page's) items, or the object itself."""
    out: list[dict[str, Any]] = []
    for value in values:
        if not isinstance(value, dict):
            continue
        items = value.get("items")
        if isinstance(items, list):
            out.extend(i for i in items if isinstance(i, dict))
        else:
            out.append(value)
    return out
