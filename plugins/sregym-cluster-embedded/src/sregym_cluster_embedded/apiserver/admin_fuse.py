"""Fault records run by the FUSE layer (``mechanism: fuse-badblocks``, see ``node/fuselayer.py``).

A shim record run by ``fuse-badblocks`` (``calls: [read]``, ``volumes``, ``mode`` badblocks,
random, or ranges with ``files: {path: [[first, last], ...]}``, the layer's own) is not rendered
into the pods' shim channels: its pods' layers (the FUSE mounts over their volumes) get it from
the layer server instead. These helpers keep that apart from the shim's code in
``admin_faults.py``, which calls them.
"""

from __future__ import annotations

import os
from typing import Any

from ..node import fuselayer
from .errors import ApiError

NAME = "fuse-badblocks"


def install(hooks: Any) -> None:
    """Start offering the layer (its mounts are made per container, isolated pods only)."""
    hooks.fuse = None
    if hooks.nodes is None or not fuselayer.probe()[0]:
        return
    hooks.fuse = fuselayer.FuseLayers(wanted=lambda pod, host: wanted(hooks, pod, host))
    hooks.nodes.fuse_layers = hooks.fuse


def stop(hooks: Any) -> None:
    fuse: fuselayer.FuseLayers | None = getattr(hooks, "fuse", None)
    if fuse is None:
        return
    nodes = hooks.nodes
    attached: fuselayer.FuseLayers | None = None if nodes is None else getattr(nodes, "fuse_layers", None)
    if attached is fuse:
        nodes.fuse_layers = None
    fuse.close()
    hooks.fuse = None


def unavailable_reason(hooks: Any) -> str:
    available, reason = fuselayer.probe()
    if not available:
        return reason
    if hooks.nodes is None:
        return "no node agents"
    warning = getattr(hooks.nodes, "isolation_warning", "")
    if getattr(hooks.nodes, "isolation", None) is None and warning:
        return "pods are not isolated here (no mount namespace of their own to mount the layer in)"
    return ""


def _usable(hooks: Any) -> bool:
    return getattr(hooks, "fuse", None) is not None and not unavailable_reason(hooks)


def fits(hooks: Any, record: dict, body: dict) -> str | None:
    """Why the layer cannot run this rule here (None: it can). It runs reads of volumes; it
    reaches the target pods whose containers started with a layer over the volume, or, when the
    caller restarts them right after (``fuse_install: true``), the ones that start from now on."""
    if record["calls"] != ["read"] or not record["volumes"] or body.get("delay_us"):
        return "runs calls [read] on volumes only, without delay_us"
    if not _usable(hooks):
        return unavailable_reason(hooks) or "unavailable"
    if body.get("fuse_install") is True or fuselayer.mode() == "all":
        return None
    pods = hooks._target_pods(record)
    if not pods:
        return "no target pod is running now"
    described: dict = {}
    describe(hooks, record, described)
    if not described["layered"]:
        return ("the target pods started without the layer over this volume (SREGYM_FUSE_LAYER=all, or "
                "fuse_install: true and a restart of the pods)")
    return None


def _records(hooks: Any) -> list[dict]:
    return [r for r in hooks.shim.values() if r["mechanism"] == NAME]


def _roots(hooks: Any, pvs: list[str]) -> list[str]:
    return [root for pv in pvs if (root := _pv_root(hooks, pv))]


def _pod_volumes(hooks: Any, pod: dict) -> list[str]:
    """The PersistentVolumes a pod's claims are bound to."""
    namespace = pod["metadata"].get("namespace")
    out = []
    for volume in (pod.get("spec") or {}).get("volumes") or []:
        claim = (volume.get("persistentVolumeClaim") or {}).get("claimName")
        pvc = hooks._get("persistentvolumeclaims", claim, namespace) if claim else None
        name = ((pvc or {}).get("spec") or {}).get("volumeName")
        if name:
            out.append(name)
    return out


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def wanted(hooks: Any, pod: dict, host: str) -> bool:
    """Whether a container of ``pod`` gets a layer over its volume at ``host``: one of the pod's
    PersistentVolumes, in mode ``all`` always, else while a fuse record names that volume."""
    mode = fuselayer.mode()
    if mode == "off":
        return False
    pvs = _pod_volumes(hooks, pod)
    for pv in pvs:
        root = _pv_root(hooks, pv)
        if root and _under(host, root):
            return mode == "all" or any(pv in r["pvs"] or pv in r.get("cover_pvs", ()) for r in _records(hooks))
    return False


def _pv_root(hooks: Any, pv: str) -> str | None:
    """The host directory pods get for a PersistentVolume, as the node resolves it (node/volumes.py:
    its hostPath when inside the cluster's state directory, else ``volumes/<pv>`` there)."""
    obj = hooks._get("persistentvolumes", pv)
    if obj is None:
        return None
    path = (obj.get("spec") or {}).get("hostPath", {}).get("path")
    state = getattr(hooks, "state_dir", None)
    if path and state is not None and not _under(os.path.realpath(path), os.path.realpath(state)):
        path = os.path.join(state, "volumes", pv)
    return os.path.realpath(path) if path else None


MAX_RANGES = 4096


def files(body: dict) -> dict[str, list[list[int]]]:
    """``files`` of a ranges rule: ``{path: [[first, last], ...]}``, block numbers inclusive, each
    path absolute (on the host, or as the pods mount the volume), like a dust target's bad-block list."""
    value = body.get("files")
    if not isinstance(value, dict) or not value:
        raise ApiError(422, "ranges needs files: {path: [[first, last], ...]}", "Invalid")
    out: dict[str, list[list[int]]] = {}
    count = 0
    for path, ranges in value.items():
        if not isinstance(path, str) or not path.startswith("/") or ".." in path.split("/") or not isinstance(ranges, list):
            raise ApiError(422, f"files: {path!r} must be an absolute path to a list of [first, last]", "Invalid")
        for pair in ranges:
            if (not isinstance(pair, list) or len(pair) != 2 or not all(type(b) is int and b >= 0 for b in pair)
                    or pair[0] > pair[1]):
                raise ApiError(422, f"files: {path}: {pair!r} is not [first, last] with 0 <= first <= last",
                               "Invalid")
            count += 1
        out[path] = [list(p) for p in ranges]
    if count > MAX_RANGES:
        raise ApiError(422, f"files: at most {MAX_RANGES} ranges", "Invalid")
    return out


def _host_files(hooks: Any, record: dict) -> dict[str, list[list[int]]]:
    """A ranges rule's files by host path (the server sees the volume's host directory): a path
    under a mount path of one of the record's volumes is also given below its host directory."""
    out = dict(record.get("files") or {})
    for pv in record["pvs"]:
        host, mounts, _pods = hooks.volume_scope(pv)
        for path, ranges in record.get("files", {}).items():
            for mount in mounts:
                if host and _under(path, mount) and path != mount:
                    out[host + path[len(mount.rstrip("/")):]] = ranges
    return out


def options(hooks: Any, body: dict) -> dict:
    """The record fields only the layer runs: ``sticky`` (random mode: a block a read failed on
    stays unreadable until written, a latent sector error), ``corrupt`` (the chosen blocks come
    back with the digits at ``flips`` positions changed, no error: silent corruption), and ``cover``, the other
    volumes (``[{namespace, claim}]``) whose pods get the same (dormant) layer when they start,
    so the mount table and the restarts of a fault's pods look like those of its neighbours'."""
    out: dict[str, Any] = {}
    for flag in ("sticky", "corrupt"):
        value = body.get(flag, False)
        if not isinstance(value, bool):
            raise ApiError(422, f"{flag} must be true or false", "Invalid")
        out[flag] = value
    flips = body.get("flips", 256)
    if type(flips) is not int or not 1 <= flips <= 4096:
        raise ApiError(422, "flips must be an integer from 1 to 4096", "Invalid")
    out["flips"] = flips
    if out["sticky"] and body.get("mode", "random") != "random":
        raise ApiError(422, "sticky is a random-mode option (a read at the rate discovers a bad block)", "Invalid")
    cover = body.get("cover") or []
    if not isinstance(cover, list) or not all(
            isinstance(v, dict) and isinstance(v.get("namespace"), str) and isinstance(v.get("claim"), str)
            for v in cover):
        raise ApiError(422, "cover must be a list of {namespace, claim}", "Invalid")
    out["cover"] = [{"namespace": v["namespace"], "claim": v["claim"]} for v in cover]
    out["cover_pvs"] = [hooks.bound_volume(v["namespace"], v["claim"]) for v in cover]
    return out


def layer_only(record: dict) -> str | None:
    """Why only the layer can run this record (None: others may too)."""
    if record.get("mode") == "ranges":
        return "the shim has no ranges mode"
    if record.get("corrupt"):
        return "only the FUSE layer alters what a read returns (corrupt)"
    return None  # sticky: elsewhere reads fail at the rate, without memory (the record says which ran)


def _rule(hooks: Any, record: dict, prefixes: list[str]) -> dict:
    rule = {"errno": record["errno"], "mode": record["mode"], "rate": record["rate"], "frac": record["frac"],
            "block": record["block"], "seed": record["seed"], "prefixes": prefixes,
            "sticky": record.get("sticky", False), "corrupt": record.get("corrupt", False),
            "flips": record.get("flips", 256)}
    if record["mode"] == "ranges":
        rule["files"] = _host_files(hooks, record)
    return rule


def render(hooks: Any) -> None:
    """The layer server's rules: per target pod, each fuse record's map (only the server holds it)."""
    fuse = getattr(hooks, "fuse", None)
    if fuse is None:
        return
    rules: dict[str, list] = {}
    for record in _records(hooks):
        prefixes = hooks._prefixes(record)
        if (record["paths"] or (record["pvs"] and record["whole_volume"])) and not prefixes:
            continue  # its volume is gone
        for pod in hooks._target_pods(record):
            rules.setdefault(pod["metadata"].get("uid", ""), []).append(_rule(hooks, record, prefixes))
    present = {p["metadata"].get("uid", "") for p in hooks.client.list_nocopy("pods")}
    fuse.set_rules(rules, present)


def describe(hooks: Any, record: dict, described: dict) -> None:
    """``layered``: the target pods whose containers have the layer over the record's volume
    (the ones meeting it); the record is active while there is one."""
    fuse = getattr(hooks, "fuse", None)
    roots = _roots(hooks, record["pvs"])
    layered = []
    for pod in hooks._target_pods(record):
        hosts = fuse.layered.get(pod["metadata"].get("uid", ""), ()) if fuse is not None else ()
        if any(_under(host, root) or _under(root, host) for host in hosts for root in roots):
            layered.append(pod["metadata"]["name"])
    described["mechanism_detail"] = fuselayer.MECHANISM
    described["layered"] = sorted(layered)
    described["active"] = bool(layered)


def summary(hooks: Any) -> dict:
    available = _usable(hooks)
    reason = "" if available else unavailable_reason(hooks) or "unavailable"
    return {"available": available, **({"reason": reason} if reason else {}), "operations": ["read"],
            "layer": fuselayer.mode(), "reaches": "pods started with the layer over their PersistentVolumes: " + (
                "every app pod" if fuselayer.mode() == "all" else
                "the pods mounting a volume a fuse-badblocks record names or covers")}
