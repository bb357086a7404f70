"""``disk-bad-blocks``: a bad-block map under a datastore's volume, like a dm-dust target.

Reads covering a bad block fail with EIO every time, while the rest of the volume reads fine. On a
PostgreSQL target the map covers the largest user table's file, so some records of it cannot be
read ("could not read block N in file ...: Input/output error") and everything else works. The
blocks are a fixed function of the file's inode, the block number and a seed (the same one the
node's fault shim computes), chosen so that at least one block of the file is bad.

The map stays with the disk (the bound PersistentVolume): the fix is moving the datastore to a new
volume and rebuilding its data, as after a real disk failure.

Mechanisms (:data:`MECHANISMS`, strongest first; the state's ``fault_mechanism`` says which ran):
``fuse-badblocks``, a FUSE layer the node agent mounts over the volume in the target pods' own
mount namespaces (its map lives in the node agent's layer server: any binary, static ones
included, meets it). No LD_PRELOAD shim (it would miss static binaries): where FUSE is
unavailable the fault is, with the probe's reason. A real ``dust`` device-mapper target
(``dm-dust``) for nodes with device-mapper is not built yet. With ``restart`` (the default) the datastore's pods restart
after inject, which is also when they get the layer if they started without one.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from sregym_fault_node import hooks

from sregym_core.faultkit import WORKLOADS, function_fault, kube, schema
from sregym_core.mechanisms import STATE_KEY
from sregym_core.types import TargetSelector

if TYPE_CHECKING:
    from collections.abc import Mapping

    from sregym_core.faults import FaultContext
    from sregym_core.types import Target

BLOCK = 8192  # PostgreSQL's page size: one bad block is one unreadable page
#: the real machinery that can fail the reads, strongest first (sregym_core.mechanisms names)
MECHANISMS = {"read": ("fuse-badblocks",)}
_MASK = (1 << 64) - 1
#: the files of the database's own relations (tables, or with indexes too), largest first
_RELATIONS = (
    "SELECT current_setting('data_directory') || '/' || pg_relation_filepath(c.oid), c.relname "
    "FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.relkind IN ({kinds}) "
    "AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\\_toast%' "
    "ORDER BY pg_relation_size(c.oid) DESC, c.relname LIMIT {limit}")
# the superuser over the pod's own Unix socket (CHECKPOINT needs one; no superuser logs in over TCP with
# a password: issue #34, round 5), reading the system catalogs only: the database's owner can put an
# operator or a view shadowing the catalogs' first on the database's search_path (round 6), and a
# search_path in the connection request overrides it
_PSQL = ("PGOPTIONS='-c search_path=pg_catalog,pg_temp' "
         'psql -U "${POSTGRES_USER:-postgres}" -d "${POSTGRES_DB:-postgres}" -At -F "|" -c "CHECKPOINT" -c "$1"')


def _mix(x: int) -> int:
    """splitmix64's finaliser, exactly as node/faultshim.c computes it."""
    x = (x + 0x9E3779B97F4A7C15) & _MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK
    return x ^ (x >> 31)


def bad_blocks(inode: int, blocks: int, seed: int, frac: float) -> list[int]:
    limit = int(frac * 1e6)
    return [b for b in range(blocks)
            if _mix(((inode * 1000003) & _MASK) ^ _mix((b ^ (seed << 32)) & _MASK)) % 1000000 < limit]


def relation_files(ctx: FaultContext, target: Target, limit: int = 1, indexes: bool = False,
                   pods: list[dict] | None = None) -> list[tuple[str, str]]:
    """(path as PostgreSQL sees it, relation name) of the database's largest own tables (and
    indexes), after a checkpoint, so their files hold what PostgreSQL last wrote (``pods``: the
    target's pods, when the caller listed them already)."""
    pod = next((p for p in (hooks.pods(ctx, target) if pods is None else pods) if hooks.is_ready(p)), None)
    if pod is None:
        return []
    container = target.component.container_name if target.component.container else "postgres"
    query = _RELATIONS.format(kinds="'r', 'i'" if indexes else "'r'", limit=int(limit))
    out = ctx.kubectl("exec", pod["metadata"]["name"], "-n", ctx.namespace, "-c", container, "--", "sh", "-c",
                      _PSQL, "psql", query, check=False)
    found = []
    for line in out.splitlines():
        parts = line.split("|")
        if len(parts) == 2 and parts[0].startswith("/"):
            found.append((parts[0], parts[1]))
    return found


def _largest_table(ctx: FaultContext, target: Target, pods: list[dict] | None = None) -> tuple[str, str] | None:
    found = relation_files(ctx, target, pods=pods)
    return found[0] if found else None


def _host_path(ctx: FaultContext, claim: str, listed: Mapping[str, Any] | None) -> str | None:
    """The host path of the volume the claim is bound to, from ``listed`` (a :func:`hooks.group_pods`
    listing) when it has the claim, else from the API."""
    bound, host_paths = getattr(listed, "bound", {}), getattr(listed, "host_paths", {})
    if claim in bound:
        return host_paths.get(bound[claim]) or None
    pv = kube.get(ctx, "persistentvolume", hooks.bound_volume(ctx, claim) or "", namespace="")
    return (((pv or {}).get("spec") or {}).get("hostPath") or {}).get("path")


def _host_and_mount(ctx: FaultContext, target: Target, claim: str, pods: list[dict] | None = None,
                    listed: Mapping[str, Any] | None = None) -> tuple[str, str]:
    path = _host_path(ctx, claim, listed)
    if not path:  # no host directory behind the claim (e.g. the offline cluster): no file maps
        return "\0", ""
    host = os.path.realpath(path)
    for pod in hooks.pods(ctx, target) if pods is None else pods:
        spec = pod.get("spec") or {}
        names = {v["name"] for v in spec.get("volumes") or []
                 if (v.get("persistentVolumeClaim") or {}).get("claimName") == claim}
        for container in spec.get("containers") or []:
            for mount in container.get("volumeMounts") or []:
                if mount.get("name") in names:
                    return host, mount["mountPath"].rstrip("/")
    return host, ""


def views(ctx: FaultContext, target: Target, claim: str, files: list[str], pods: list[dict] | None = None,
          listed: Mapping[str, Any] | None = None) -> list[tuple[str, str]]:
    """Each file as PostgreSQL names it and as the node does (the layer's server matches host
    paths, the shim the pods' own): files outside the claim's volume are left out (``pods``, ``listed``:
    the target's pods and the :func:`hooks.group_pods` listing, when the caller has them)."""
    host, mount = _host_and_mount(ctx, target, claim, pods, listed)
    out: list[tuple[str, str]] = []
    for path in files:
        if mount and path.startswith(mount + "/"):
            out.append((path, host + path[len(mount):]))
        elif path.startswith(host + "/"):
            out.append((path, path))  # PostgreSQL runs where the volume is the host directory
    return out


def _table_map(ctx: FaultContext, target: Target, claim: str, frac: float,
               listed: Mapping[str, Any] | None = None) -> dict | None:
    """Paths (both views) of the largest table's file and a seed giving it bad blocks (``listed``:
    the datastores' :func:`hooks.group_pods` listing, the target's pods and volumes in it)."""
    pods = None if listed is None else listed[target.component.name]
    found = _largest_table(ctx, target, pods) if target.component.has_role("db:postgres") else None
    if found is None:
        return None
    path, table = found
    found_views = views(ctx, target, claim, [path], pods=pods, listed=listed)
    if not found_views:
        return None
    (seen, host_path), = found_views
    paths = list(dict.fromkeys([seen, host_path]))
    try:
        st = os.stat(host_path)
    except OSError:
        return None
    blocks = max(1, st.st_size // BLOCK)
    for seed in range(1, 500):
        bad = bad_blocks(st.st_ino, blocks, seed, frac)
        if bad and (blocks == 1 or len(bad) < blocks):
            return {"paths": paths, "table": table, "file": path, "blocks": blocks, "seed": seed, "bad": bad}
    return None


def survey(ctx: FaultContext, target: Target) -> tuple[list[Any], Any, list[str]]:
    """The app's datastores (the target first), their pods, claims and volumes from one listing, and
    the target's claims: what inject needs before the rule, without a kubectl call per datastore
    (inject's time is mostly its kubectl calls: the README of sregym-fault-ebpf-syscall)."""
    group = hooks.datastores(ctx, target)
    listed = hooks.group_pods(ctx, group)
    claims = hooks.claims_of(listed[target.component.name])
    if not claims:
        from sregym_core.errors import PermanentFaultError

        raise PermanentFaultError(f"{target.component.name} mounts no PersistentVolumeClaim")
    return group, listed, claims


def cover(ctx: FaultContext, group: list[Any], listed: Mapping[str, list[dict]]) -> list[dict[str, str]]:
    """``[{namespace, claim}]`` of the other datastores' mounted claims, from the listing."""
    return [{"namespace": ctx.namespace, "claim": c}
            for other in group[1:] for c in hooks.claims_of(listed[other.component.name])]


def inject(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    group, listed, claims = survey(ctx, target)
    frac = round(params["fraction"], 4)
    spec: dict[str, Any] = {"namespace": ctx.namespace, "labels": hooks.labels_of(ctx, target, listed),
                            "calls": ["read"], "errno": "EIO", "mode": "badblocks", "frac": frac, "block": BLOCK,
                            "seed": 1, "volumes": [{"namespace": ctx.namespace, "claim": c} for c in claims],
                            "mechanisms": list(MECHANISMS["read"]),
                            # the pods restart below: they start with the layer over the volume
                            "fuse_install": bool(params["restart"])}
    mapped = _table_map(ctx, target, claims[0], frac, listed)
    if mapped is not None:
        spec.update(paths=mapped["paths"], seed=mapped["seed"], whole_volume=False)
        ctx.state.update(table=mapped["table"], file=mapped["file"], bad_blocks=mapped["bad"][:32])
    _arm(ctx, target, spec, claims, params["restart"], group, listed)


def _arm(ctx: FaultContext, target: Target, spec: dict, claims: list[str], restart: bool, group: list[Any],
         listed: Mapping[str, list[dict]]) -> None:
    """Send the rule; record the mechanism; restart the app's datastores (the target among them).

    The layer goes over every datastore's volume of the app (``cover``: dormant on the others),
    and all of them restart: the mount table and the restarts look the same whichever datastore
    is broken, so neither names the target. Inject returns once the pods are deleted: the rule is
    on the node first, so each new pod starts with the layer (its map held by the node's server)
    and the fault is armed from its first read; waiting for PostgreSQL's readiness as well cost
    inject 2-4 s and changed nothing the symptom check sees (the restart alone shows it either
    way: README of sregym-fault-ebpf-syscall, "How long")."""
    if restart:
        spec = {**spec, "cover": cover(ctx, group, listed)}
    record = hooks.call(ctx, "node_fault", hooks.hook_id(ctx, "shim"), **spec)
    ctx.state.update(claims=claims, volumes=record.get("pvs", []))
    ctx.state[STATE_KEY] = record.get("mechanism") or ""
    if record.get("passed_over"):
        ctx.state["passed_over"] = dict(record["passed_over"])
    if restart:
        # a cold start: the datastore's cache no longer hides the unreadable blocks
        hooks.restart_datastores(ctx, target, current=listed, wait=False)


def is_present(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> bool:
    record = hooks.status(ctx, "shim")
    return bool(record and record.get("active"))


def reference_fix(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    hooks.replace_volumes(ctx, target)


def recover(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    hooks.clear(ctx, "shim")


def _values(target: Target, params: Mapping[str, Any], state: dict) -> dict:
    return {**params, "volumes": state.get("volumes", []), "claims": state.get("claims", []),
            **{k: state[k] for k in ("table", "file", "bad_blocks") if k in state}}


DISK_BAD_BLOCKS = function_fault(
    name="disk-bad-blocks", layer="hardware",
    selector=TargetSelector(kinds=WORKLOADS, roles=("db:*",), requires=("pvcs",)),
    summary="Bad blocks under the datastore's volume: reads of some records fail with EIO, every time",
    params_schema=schema(fraction={"type": "number", "minimum": 0.001, "maximum": 0.9, "default": 0.2},
                         restart={"type": "boolean", "default": True}),
    inject=inject, recover=recover, is_present=is_present, reference_fix=reference_fix,
    resource_kind="PersistentVolume", mechanism="bad blocks on the volume's disk: reads of them fail with EIO",
    keywords=("bad blocks", "EIO", "Input/output error", "disk failure", "dm-dust", "corrupt"),
        values=_values,
        prose="The disk under {component}'s volume ({volumes}) has bad blocks: reads covering them fail with EIO "
              "every time, so queries touching the affected records fail with 'could not read block ... "
              "Input/output error' while others work. Fix: move {component} to a new volume (a new "
              "claim in its pod template) and rebuild its data.",
    capabilities=frozenset({"embedded"}), failure_mode="persistent", fault_mechanisms=MECHANISMS,
    symptoms=("could not read block N in file ...: Input/output error", "some queries always fail"),
)

