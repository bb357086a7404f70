"""/dev/shm faults on PostgreSQL: a full /dev/shm, or one too small for its dynamic shared memory.

PostgreSQL keeps dynamic shared memory in POSIX shared memory (``dynamic_shared_memory_type =
posix``: files in ``/dev/shm``); at start the postmaster creates its control segment there, and a
segment that cannot grow fails with ``could not resize shared memory segment "/PostgreSQL..." to N
bytes: No space left on device``. A pod's ``/dev/shm`` is the ``emptyDir`` (``medium: Memory``)
mounted there, a tmpfs of its ``sizeLimit``.

* ``shm-exhaustion``: an init container "pre-warms" 128 MiB into the pod's 64 MiB /dev/shm, so the
  postmaster finds it full (upstream: busybox writes 128 MiB into a 64 MiB /dev/shm).
* ``shm-too-small``: the /dev/shm volume's ``sizeLimit`` is a few KiB, smaller than one segment.

Both leave a crash-looping datastore; the fixes are in the StatefulSet (drop the filler or give
/dev/shm room), then the stuck pod is replaced (a StatefulSet never replaces a pod that is not
Ready on its own).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sregym_core.errors import PermanentFaultError
from sregym_core.faultkit import function_fault, kube, schema
from sregym_core.quantity import memory_bytes
from sregym_core.types import FaultSpec, TargetSelector

from . import hooks

if TYPE_CHECKING:
    from collections.abc import Mapping

    from sregym_core.faults import FaultContext
    from sregym_core.types import Capability, Target

POSTGRES = TargetSelector(kinds=("StatefulSet",), roles=("db:postgres",))
VOLUME, MOUNT, FILLER = "dshm", "/dev/shm", "shm-prewarm"
DEFAULT_SIZE = "64Mi"
#: below this PostgreSQL cannot even create its control segment (max_connections 100: about 27 KB)
MIN_WORKING = 1024 * 1024
NEEDS_ROOT: frozenset[Capability] = frozenset({"embedded", "node-agent", "root"})


def _shm_volume(spec: dict, container: dict) -> tuple[int, dict] | None:
    """(index, volume) of the memory-backed volume mounted at /dev/shm in ``container``."""
    names = {m.get("name") for m in container.get("volumeMounts") or [] if m.get("mountPath", "").rstrip("/") == MOUNT}
    for index, volume in enumerate(spec.get("volumes") or []):
        if volume.get("name") in names and "emptyDir" in volume:
            return index, volume
    return None


def _give_shm_volume(ctx: FaultContext, target: Target, size: str) -> list[dict]:
    """JSON-patch operations that mount a /dev/shm volume of ``size`` (or resize the existing one)."""
    obj = kube.workload(ctx, target)
    spec = kube.pod_spec(obj)
    index = kube.container_index(obj, target.component.container)
    found = _shm_volume(spec, spec["containers"][index])
    if found is not None:
        ctx.state["saved_volume"] = found[1]
        return [{"op": "replace", "path": f"/spec/template/spec/volumes/{found[0]}/emptyDir",
                 "value": {**(found[1].get("emptyDir") or {}), "medium": "Memory", "sizeLimit": size}}]
    ctx.state["added_volume"] = True
    ops: list[dict[str, Any]] = [{"op": "add", "path": "/spec/template/spec/volumes" + ("/-" if spec.get("volumes") else ""),
            "value": {"name": VOLUME, "emptyDir": {"medium": "Memory", "sizeLimit": size}}
            if spec.get("volumes") else [{"name": VOLUME, "emptyDir": {"medium": "Memory", "sizeLimit": size}}]}]
    mounts = spec["containers"][index].get("volumeMounts")
    mount = {"name": VOLUME, "mountPath": MOUNT}
    ops.append({"op": "add", "path": f"/spec/template/spec/containers/{index}/volumeMounts" + ("/-" if mounts else ""),
                "value": mount if mounts else [mount]})
    return ops


def _shm_limit(obj: dict, target: Target) -> int | None:
    spec = kube.pod_spec(obj)
    container = spec["containers"][kube.container_index(obj, target.component.container)]
    found = _shm_volume(spec, container)
    if found is None:
        return None
    source = found[1].get("emptyDir") or {}
    if source.get("medium") != "Memory" or not source.get("sizeLimit"):
        return None
    return memory_bytes(str(source["sizeLimit"]))


def _replace_stuck_pod(ctx: FaultContext, target: Target) -> None:
    hooks.restart_pods(ctx, target)


def _check_root(ctx: FaultContext) -> None:
    caps = getattr(getattr(ctx, "cluster", None), "capabilities", None)
    if caps is None or "root" not in caps:  # no cluster handle (a recording context): nothing enforces it
        raise PermanentFaultError("a pod's /dev/shm size is enforced only by a root node agent (tmpfs mounts)",
                                  hints=("run the embedded cluster as root with pod isolation on",))


# --------------------------------------------------------------------------- shm-exhaustion

def exhaustion_inject(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    _check_root(ctx)
    obj = kube.workload(ctx, target)
    spec = kube.pod_spec(obj)
    ops = _give_shm_volume(ctx, target, params["shm_size"]) if _shm_limit(obj, target) is None else []
    script = f"dd if=/dev/zero of={MOUNT}/warm-cache.bin bs=1048576 count={params['fill_mb']} 2>&1; exit 0"
    init = {"name": FILLER, "image": "busybox", "command": ["sh", "-c", script],
            "volumeMounts": [{"name": _volume_name(obj, target), "mountPath": MOUNT}]}
    ops.append({"op": "add", "path": "/spec/template/spec/initContainers" + ("/0" if spec.get("initContainers") else ""),
                "value": init if spec.get("initContainers") else [init]})
    ctx.state["had_init"] = bool(spec.get("initContainers"))
    _patch_and_roll(ctx, target, ops)


def _volume_name(obj: dict, target: Target) -> str:
    spec = kube.pod_spec(obj)
    found = _shm_volume(spec, spec["containers"][kube.container_index(obj, target.component.container)])
    return found[1]["name"] if found else VOLUME


def _patch_and_roll(ctx: FaultContext, target: Target, ops: list[dict]) -> None:
    """Patch the StatefulSet's template; its controller replaces the (still healthy) pod."""
    old = {p["metadata"]["uid"] for p in hooks.pods(ctx, target, include_terminating=True)}
    kube.patch(ctx, target.component.kind, target.component.name, ops, type="json")
    hooks.wait_for(lambda: any(p["metadata"]["uid"] not in old for p in hooks.pods(ctx, target)), 60.0,
                   f"{target.component.name}'s pod to roll")


def _filler(obj: dict) -> dict | None:
    return next((c for c in kube.pod_spec(obj).get("initContainers") or [] if c.get("name") == FILLER), None)


def exhaustion_present(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> bool:
    """The filler still runs before the datastore and its data does not fit in /dev/shm with room to spare."""
    obj = kube.workload(ctx, target)
    if _filler(obj) is None:
        return False
    limit = _shm_limit(obj, target)
    return limit is None or limit < params["fill_mb"] * 2**20 + MIN_WORKING


def exhaustion_fix(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    obj = kube.workload(ctx, target)
    inits = kube.pod_spec(obj)["initContainers"]
    index = next(i for i, c in enumerate(inits) if c.get("name") == FILLER)
    path = "/spec/template/spec/initContainers" + ("" if len(inits) == 1 else f"/{index}")
    kube.patch(ctx, target.component.kind, target.component.name, [{"op": "remove", "path": path}], type="json")
    _replace_stuck_pod(ctx, target)


def exhaustion_recover(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    obj = kube.workload(ctx, target)
    ops = []
    inits = kube.pod_spec(obj).get("initContainers") or []
    filler = [i for i, c in enumerate(inits) if c.get("name") == FILLER]
    if filler:
        ops.append({"op": "remove", "path": "/spec/template/spec/initContainers"} if len(inits) == 1 else
                   {"op": "remove", "path": f"/spec/template/spec/initContainers/{filler[0]}"})
    ops += _undo_volume_ops(ctx, obj, target)
    if ops:
        kube.patch(ctx, target.component.kind, target.component.name, ops, type="json")
        _replace_stuck_pod(ctx, target)


def _undo_volume_ops(ctx: FaultContext, obj: dict, target: Target) -> list[dict]:
    spec = kube.pod_spec(obj)
    index = kube.container_index(obj, target.component.container)
    container = spec["containers"][index]
    found = _shm_volume(spec, container)
    if found is None:
        return []
    if ctx.state.get("saved_volume") is not None:
        return [{"op": "replace", "path": f"/spec/template/spec/volumes/{found[0]}", "value": ctx.state["saved_volume"]}]
    if not ctx.state.get("added_volume"):
        return []
    ops = []
    mounts = container.get("volumeMounts") or []
    at = [i for i, m in enumerate(mounts) if m.get("name") == found[1]["name"]]
    if at:
        ops.append({"op": "remove", "path": f"/spec/template/spec/containers/{index}/volumeMounts"
                    + ("" if len(mounts) == 1 else f"/{at[0]}")})
    ops.append({"op": "remove", "path": "/spec/template/spec/volumes"
                + ("" if len(spec["volumes"]) == 1 else f"/{found[0]}")})
    return ops


# --------------------------------------------------------------------------- shm-too-small

def small_inject(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    _check_root(ctx)
    _patch_and_roll(ctx, target, _give_shm_volume(ctx, target, params["size"]))


def small_present(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> bool:
    limit = _shm_limit(kube.workload(ctx, target), target)
    return limit is not None and limit < MIN_WORKING


def small_fix(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    obj = kube.workload(ctx, target)
    spec = kube.pod_spec(obj)
    found = _shm_volume(spec, spec["containers"][kube.container_index(obj, target.component.container)])
    if found is None:  # the fault's volume is gone: nothing of the fault is left to fix
        raise PermanentFaultError(f"{target.component.name} mounts no memory-backed volume at {MOUNT}")
    index = found[0]
    kube.patch(ctx, target.component.kind, target.component.name,
               [{"op": "replace", "path": f"/spec/template/spec/volumes/{index}/emptyDir/sizeLimit",
                 "value": DEFAULT_SIZE}], type="json")
    _replace_stuck_pod(ctx, target)


def small_recover(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    ops = _undo_volume_ops(ctx, kube.workload(ctx, target), target)
    if ops:
        kube.patch(ctx, target.component.kind, target.component.name, ops, type="json")
        _replace_stuck_pod(ctx, target)


VOCABULARY = (
    "/dev/shm", "dev/shm", "shared memory", "shm", "dshm", "posix shared memory", "dynamic shared memory",
    "could not resize shared memory", "sizelimit", "size limit", "medium: memory", "tmpfs",
    # the same sentence says where the space ran out: not a disk-full or a hanging init container
    "no space left + shm", "no space left + shared memory", "init container + shm", "init container + shared memory",
    "filled + shm", "filling + shm", "fills + shm",
)

FAULTS: list[FaultSpec] = [
    function_fault(
        name="shm-exhaustion", summary="an init container fills the datastore pod's /dev/shm before PostgreSQL starts",
        layer="os", selector=POSTGRES, resource_kind="StatefulSet",
        mechanism="an init container writes more into the pod's memory-backed /dev/shm than its sizeLimit, so "
                  "PostgreSQL cannot create its dynamic shared memory segment: No space left on device",
        params_schema=schema(fill_mb={"type": "integer", "minimum": 1, "maximum": 512, "default": 128},
                             shm_size={"type": "string", "default": DEFAULT_SIZE}),
        inject=exhaustion_inject, is_present=exhaustion_present, recover=exhaustion_recover,
        reference_fix=exhaustion_fix,
        symptoms=("CrashLoopBackOff", "could not resize shared memory segment ... No space left on device"),
        keywords=("/dev/shm", "shared memory", "No space left on device", "init container", "CrashLoopBackOff"),
        values=lambda t, p, s: {"init_container": FILLER, "fill_mb": p.get("fill_mb", 128),
                                "shm_size": p.get("shm_size", DEFAULT_SIZE)},
        prose="The init container {init_container} of {component} writes {fill_mb} MiB into the pod's /dev/shm "
              "(a {shm_size} memory-backed emptyDir), filling it; PostgreSQL then fails at start with 'could not "
              "resize shared memory segment ... No space left on device' and crash-loops. Fix: remove "
              "{init_container} (or give /dev/shm room for it) and replace the stuck pod.",
        capabilities=NEEDS_ROOT, vocabulary=VOCABULARY,
    ),
    function_fault(
        name="shm-too-small", summary="the datastore pod's /dev/shm volume is a few KiB: PostgreSQL cannot start",
        layer="os", selector=POSTGRES, resource_kind="StatefulSet",
        mechanism="the memory-backed emptyDir mounted at /dev/shm has a sizeLimit smaller than PostgreSQL's "
                  "dynamic shared memory control segment: No space left on device",
        params_schema=schema(size={"type": "string", "default": "16Ki", "pattern": "^[0-9]+(Ki|Mi)?$"}),
        inject=small_inject, is_present=small_present, recover=small_recover, reference_fix=small_fix,
        symptoms=("CrashLoopBackOff", "could not resize shared memory segment ... No space left on device"),
        keywords=("/dev/shm", "shared memory", "sizeLimit", "No space left on device", "CrashLoopBackOff"),
        values=lambda t, p, s: {"size": p.get("size", "16Ki"), "volume": VOLUME},
        prose="{component}'s /dev/shm is a memory-backed emptyDir with sizeLimit {size}, smaller than the dynamic "
              "shared memory segment PostgreSQL creates at start ('could not resize shared memory segment ... No "
              "space left on device'), so it crash-loops. Fix: raise the volume's sizeLimit (64Mi) and replace "
              "the stuck pod.",
        capabilities=NEEDS_ROOT, vocabulary=VOCABULARY,
    ),
]
