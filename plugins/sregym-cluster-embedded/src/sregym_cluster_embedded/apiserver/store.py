"""The in-memory object store: one global resourceVersion, watch fan-out, snapshot/restore.

Objects are JSON dicts. A stored dict is never mutated in place: every write stores a new dict, so
readers (HTTP responses, watch events) may hold references without copying.
"""

from __future__ import annotations

import asyncio
import builtins
import json
import zlib
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

from .errors import ApiError

Obj = dict[str, Any]
#: how many past events are kept for watches that resume from a resourceVersion (older -> 410 Gone;
#: bounded so that status churn cannot grow memory without limit)
HISTORY = 5_000
#: a watcher that falls this far behind is closed (its client re-lists, as with a real server)
MAX_BACKLOG = 20_000


_encode_str = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


def _encode(obj: Any) -> bytes:
    return _encode_str(obj).encode()


def clone(value: Any) -> Any:
    """A fast deep copy of JSON data."""
    if isinstance(value, dict):
        return {k: clone(v) for k, v in value.items()}
    if isinstance(value, list):
        return [clone(v) for v in value]
    return value


class Watcher:
    """One watch: a queue of (type, object) events filtered by ``match``."""

    def __init__(self, key: str, match: Callable[[Obj], bool]) -> None:
        self.key = key
        self.match = match
        self.queue: asyncio.Queue[tuple[str, Obj] | None] = asyncio.Queue()
        self.closed = False

    def offer(self, event_type: str, obj: Obj, old: Obj | None) -> None:
        if self.closed:
            return
        now = self.match(obj)
        before = old is not None and self.match(old)
        if event_type == "DELETED":
            if now or before:
                self._put(("DELETED", obj))
            return
        if now and before:
            self._put(("MODIFIED", obj))
        elif now:
            self._put(("ADDED", obj))
        elif before:
            # the object left the selection: watchers see it deleted, as on a real server
            self._put(("DELETED", obj))

    def _put(self, item: tuple[str, Obj] | None) -> None:
        if self.queue.qsize() > MAX_BACKLOG:
            self.close()
            return
        self.queue.put_nowait(item)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.queue.put_nowait(None)


class Store:
    """Objects keyed by storage key -> namespace ("" for cluster scope) -> name."""

    def __init__(self) -> None:
        self.rv = 1
        self._data: dict[str, dict[str, dict[str, Obj]]] = {}
        self._watchers: dict[str, set[Watcher]] = {}
        self._history: deque[tuple[int, str, str, Obj, Obj | None]] = deque(maxlen=HISTORY)
        #: called after every write with (key, event type, new, old)
        self.listeners: list[Callable[[str, str, Obj, Obj | None], None]] = []
        #: serialized JSON of stored objects, valid while the stored dict is the same object
        self._encoded: dict[tuple[str, str, str], tuple[Obj, bytes]] = {}

    # -- serialization cache --------------------------------------------------------------------
    def encoded(self, key: str, obj: Obj) -> bytes:
        """``obj`` as compact JSON, cached for stored objects (which are never mutated in place)."""
        meta = obj.get("metadata") or {}
        cache_key = (key, meta.get("namespace") or "", meta.get("name") or "")
        hit = self._encoded.get(cache_key)
        if hit is not None and hit[0] is obj:
            return hit[1]
        data = _encode(obj)
        if self.get(key, cache_key[1], cache_key[2]) is obj:
            self._encoded[cache_key] = (obj, data)
        return data

    # -- reads ----------------------------------------------------------------------------------
    def get(self, key: str, namespace: str | None, name: str) -> Obj | None:
        return self._data.get(key, {}).get(namespace or "", {}).get(name)

    def list(self, key: str, namespace: str | None = None) -> list[Obj]:
        """Objects in key order (namespace, then name), as etcd returns them."""
        by_ns = self._data.get(key, {})
        if namespace:
            items = by_ns.get(namespace, {})
            return [items[n] for n in sorted(items)]
        out: list[Obj] = []
        for ns in sorted(by_ns):
            items = by_ns[ns]
            out.extend(items[n] for n in sorted(items))
        return out

    def list_at(self, key: str, namespace: str | None, rv: int) -> builtins.list[Obj]:
        """The objects as they were at resourceVersion ``rv``, in :meth:`list` order: what every page
        of a paged list shows after the first, as etcd serves a continue token from the first page's
        revision. Rebuilt from the watch history by undoing the writes since ``rv``; a revision
        older than the history answers 410 Expired, as a compacted one does."""
        if rv >= self.rv:
            return self.list(key, namespace)
        oldest = self._history[0][0] if self._history else self.rv
        if rv < oldest - 1:
            raise ApiError(410, "The provided continue parameter is too old to display a consistent list result. "
                                "You can start a new list without the continue parameter.", "Expired")
        ns_wanted = namespace or ""
        items = {(o["metadata"].get("namespace") or "", o["metadata"]["name"]): o for o in self.list(key, namespace)}
        for hist_rv, k, event_type, obj, old in reversed(self._history):
            if hist_rv <= rv:
                break
            meta = obj["metadata"]
            where = (meta.get("namespace") or "", meta["name"])
            if k != key or (namespace and where[0] != ns_wanted):
                continue
            if event_type == "ADDED" or old is None:
                items.pop(where, None)
            else:  # MODIFIED or DELETED: the object was ``old`` before this write
                items[where] = old
        return [items[where] for where in sorted(items)]

    def iter_all(self) -> Iterator[tuple[str, Obj]]:
        for key, by_ns in self._data.items():
            for items in by_ns.values():
                for obj in items.values():
                    yield key, obj

    def count(self, key: str, namespace: str | None = None) -> int:
        by_ns = self._data.get(key, {})
        if namespace:
            return len(by_ns.get(namespace, {}))
        return sum(len(v) for v in by_ns.values())

    # -- writes ---------------------------------------------------------------------------------
    def next_rv(self) -> int:
        self.rv += 1
        return self.rv

    def put(self, key: str, obj: Obj) -> Obj:
        """Store ``obj`` (ADDED or MODIFIED), stamping a fresh resourceVersion on it."""
        meta = obj["metadata"]
        ns, name = meta.get("namespace") or "", meta["name"]
        items = self._data.setdefault(key, {}).setdefault(ns, {})
        old = items.get(name)
        meta["resourceVersion"] = str(self.next_rv())
        items[name] = obj
        self._encoded.pop((key, ns, name), None)
        self._emit(key, "MODIFIED" if old is not None else "ADDED", obj, old)
        return obj

    def remove(self, key: str, namespace: str | None, name: str) -> Obj | None:
        items = self._data.get(key, {}).get(namespace or "", {})
        old = items.pop(name, None)
        if old is None:
            return None
        if not items:
            self._data[key].pop(namespace or "", None)
        self._encoded.pop((key, namespace or "", name), None)
        # the DELETED event carries a new resourceVersion, like the real server
        gone = dict(old)
        gone["metadata"] = dict(old["metadata"], resourceVersion=str(self.next_rv()))
        self._emit(key, "DELETED", gone, old)
        return gone

    # (`list` here is the method Store.list, hence builtins.list)
    def drop_key(self, key: str) -> builtins.list[Obj]:
        """Delete every object of a storage key (a CRD went away)."""
        removed = []
        for obj in self.list(key):
            meta = obj["metadata"]
            gone = self.remove(key, meta.get("namespace"), meta["name"])
            if gone is not None:
                removed.append(gone)
        self._data.pop(key, None)
        return removed

    def _emit(self, key: str, event_type: str, obj: Obj, old: Obj | None) -> None:
        self._history.append((self.rv, key, event_type, obj, old))
        for watcher in list(self._watchers.get(key, ())):
            watcher.offer(event_type, obj, old)
            if watcher.closed:
                self._watchers[key].discard(watcher)
        for listener in self.listeners:
            listener(key, event_type, obj, old)

    # -- watch ----------------------------------------------------------------------------------
    def watch(self, key: str, match: Callable[[Obj], bool], since: int | None) -> Watcher:
        """Register a watcher. ``since`` replays history after that resourceVersion (410 if too old)."""
        watcher = Watcher(key, match)
        if since is not None and since < self.rv:
            oldest = self._history[0][0] if self._history else self.rv
            if since < oldest - 1 and since != 0:
                raise ApiError(410, f"too old resource version: {since} ({oldest - 1})", "Expired")
            for rv, k, event_type, obj, old in self._history:
                if rv > since and k == key:
                    watcher.offer(event_type, obj, old)
        self._watchers.setdefault(key, set()).add(watcher)
        return watcher

    def unwatch(self, watcher: Watcher) -> None:
        watcher.closed = True
        self._watchers.get(watcher.key, set()).discard(watcher)

    def close_watchers(self) -> None:
        for watchers in self._watchers.values():
            for w in list(watchers):
                w.close()
        self._watchers.clear()

    def watcher_count(self) -> int:
        return sum(len(w) for w in self._watchers.values())

    # -- snapshot / restore ---------------------------------------------------------------------
    def snapshot(self) -> bytes:
        """Every stored object, compressed; :meth:`restore` brings the store back to this state."""
        data = {key: [obj for items in by_ns.values() for obj in items.values()] for key, by_ns in self._data.items()}
        return zlib.compress(json.dumps({"rv": self.rv, "objects": data}, separators=(",", ":")).encode(), 1)

    def restore(self, blob: bytes) -> None:
        """Return to a snapshot as a diff: watchers see DELETED/ADDED/MODIFIED events, and the
        resourceVersion keeps growing, so informers and caches stay coherent."""
        try:
            state = json.loads(zlib.decompress(blob))
            wanted: dict[str, dict[tuple[str, str], Obj]] = {
                key: {((o["metadata"].get("namespace") or ""), o["metadata"]["name"]): o for o in objs}
                for key, objs in state["objects"].items()
            }
        except (ValueError, KeyError, TypeError, zlib.error) as exc:
            raise ValueError(f"not a store snapshot: {exc}") from exc
        for key, by_ns in list(self._data.items()):
            for ns, items in list(by_ns.items()):
                for name in list(items):
                    if (ns, name) not in wanted.get(key, {}):
                        self.remove(key, ns, name)
        for key, objs in wanted.items():
            for (ns, name), obj in objs.items():
                current = self.get(key, ns, name)
                if current is not None and _same_except_rv(current, obj):
                    continue
                self.put(key, clone(obj))


def _same_except_rv(a: Obj, b: Obj) -> bool:
    ma, mb = a.get("metadata", {}), b.get("metadata", {})
    if {k: v for k, v in ma.items() if k != "resourceVersion"} != {
        k: v for k, v in mb.items() if k != "resourceVersion"
    }:
        return False
    return {k: v for k, v in a.items() if k != "metadata"} == {k: v for k, v in b.items() if k != "metadata"}
