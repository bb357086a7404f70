"""Which manifest documents a ``kubectl apply`` would change on the live cluster; the others are left out.

A deploy on a kept cluster (every ``sregym run`` after the first, every ``sregym deploy`` of an app that
runs) applied all of the app's objects again, and a client-side apply is mostly kubectl's own CPU: it
reads the API's OpenAPI documents to compute each object's patch (Hotel Reservation's 61 objects: 3.2 s
of kubectl CPU on 2026-12-01 where ``kubectl get`` of the same objects took 0.1 s), all to find that
nothing changed. So the deploy first reads the live objects (one ``kubectl get -f -``) and applies only
the documents a live object does not already *cover*.

Covered means what the apply itself would decide: every field the document sets has that value on the
live object (maps: the document's keys, extra live keys allowed, as an apply without a last-applied
record removes nothing; lists: the same length, item by item in order; a ``null`` field: absent). The
check is only ever stricter than kubectl's (it compares lists in order where kubectl merges by key, and a
value the server spells otherwise, ``0.5`` for ``500m``, counts as changed), so a document it skips is
one the apply would have left alone, and a doubt means the document is applied as before. An object
that carries a ``last-applied-configuration`` record (someone else's client-side apply) is applied: there
the apply may also delete fields.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .faultkit.kube import LAST_APPLIED  # the record a client-side apply keeps (removed by every deploy, issue #34)

#: the arguments of the one read of the live objects, after ``kubectl`` (the manifests on its stdin)
GET_LIVE_ARGS = ("get", "-f", "-", "-o", "json", "--ignore-not-found")



def covers(want: Any, have: Any) -> bool:
    """Whether the live value ``have`` already has every field ``want`` (a manifest's) sets."""
    if isinstance(want, Mapping):
        if not isinstance(have, Mapping):
            return False
        for key, value in want.items():
            if value is None:  # a null in a manifest removes the field
                if have.get(key) is not None:
                    return False
            elif key not in have or not covers(value, have[key]):
                return False
        return True
    if isinstance(want, list):
        return isinstance(have, list) and len(want) == len(have) and all(map(covers, want, have))
    if isinstance(want, bool) or isinstance(have, bool):  # True == 1 in Python, not in the API
        return type(want) is type(have) and want == have
    if isinstance(want, (int, float)) and isinstance(have, (int, float)):
        return want == have
    return type(want) is type(have) and want == have


def document_covered(document: Mapping[str, Any], live: Mapping[str, Any] | None) -> bool:
    """Whether applying ``document`` would leave ``live`` (the object of that kind and name) as it is."""
    if live is None:
        return False
    annotations = (live.get("metadata") or {}).get("annotations") or {}
    if LAST_APPLIED in annotations:
        return False
    want: dict[str, Any] | None = {key: value for key, value in document.items() if key != "status"}
    if want and want.get("kind") == "Secret" and want.get("stringData"):
        want = _secret_as_stored(want)
    return want is not None and covers(want, live)


def _secret_as_stored(secret: dict[str, Any]) -> dict[str, Any] | None:
    """A Secret's ``stringData`` as the server stores it (base64 in ``data``, where it wins)."""
    data = dict(secret.get("data") or {})
    for key, value in (secret.get("stringData") or {}).items():
        if not isinstance(value, str):
            return None
        data[key] = base64.b64encode(value.encode()).decode()
    for value in data.values():
        try:
            base64.b64decode(value, validate=True)
        except (binascii.Error, TypeError, ValueError):
            return None
    out = {key: value for key, value in secret.items() if key != "stringData"}
    out["data"] = data
    return out


def _key(obj: Mapping[str, Any], default_namespace: str | None) -> tuple[str, str, str, str | None]:
    meta = obj.get("metadata") or {}
    group = str(obj.get("apiVersion", "")).rpartition("/")[0]  # the version may differ, the group may not
    return group, str(obj.get("kind", "")), str(meta.get("name", "")), meta.get("namespace") or default_namespace


def documents_to_apply(documents: Iterable[Mapping[str, Any]], live_objects: Iterable[Mapping[str, Any]]
                       ) -> list[Mapping[str, Any]]:
    """The ``documents`` (in their order) that no object of ``live_objects`` covers.

    ``live_objects`` is what the cluster returned for the documents (``kubectl get -f - -o json``); a
    document without a namespace matches a live object of any namespace only when exactly one has its
    kind and name (kubectl put it in the kubeconfig's namespace)."""
    live = list(live_objects)
    by_key = {_key(obj, None): obj for obj in live}
    by_name: dict[tuple[str, str, str], list[Mapping[str, Any]]] = {}
    for obj in live:
        group, kind, name, _ns = _key(obj, None)
        by_name.setdefault((group, kind, name), []).append(obj)
    out = []
    for document in documents:
        group, kind, name, namespace = _key(document, None)
        match = by_key.get((group, kind, name, namespace))
        if match is None and namespace is None:
            candidates = by_name.get((group, kind, name), [])
            match = candidates[0] if len(candidates) == 1 else None
        if not document_covered(document, match):
            out.append(document)
    return out


def changed_manifests(manifests: str, get_live: Callable[[str], str | None]) -> str:
    """The documents of the YAML ``manifests`` that the live cluster does not already hold as written,
    as YAML ("" when none; ``manifests`` itself when all are). ``get_live`` runs ``kubectl`` with
    :data:`GET_LIVE_ARGS` and the manifests on its stdin and returns its stdout, or None when it failed:
    whatever cannot be read back (a first deploy's kinds the server does not know yet) applies
    everything, as before."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    documents = [doc for doc in yaml.load_all(manifests, Loader=loader) if doc]
    out = get_live(manifests)
    if out is None:
        return manifests
    try:
        listed = json.loads(out) if out.strip() else {"kind": "List", "items": []}
    except ValueError:
        return manifests
    if not isinstance(listed, dict):
        return manifests
    items = listed.get("items") if listed.get("kind") == "List" else [listed]
    changed = documents_to_apply(documents, items or [])
    if len(changed) == len(documents):
        return manifests
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    return yaml.dump_all(changed, Dumper=dumper, sort_keys=False) if changed else ""

