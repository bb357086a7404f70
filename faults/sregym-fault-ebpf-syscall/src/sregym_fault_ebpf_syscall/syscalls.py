"""Syscall faults, run by the node's strongest mechanism for the call (:data:`MECHANISMS`, names
from ``sregym_core.mechanisms``): ``connect``/``socket`` as cgroup BPF programs keyed on the target
pods' cgroups (``bpf-cgroup``), ``fsync``/``read``/``write``/``open`` through BPF LSM or ``fmod_ret``
programs where the kernel takes them (not built yet), else the node agent's seccomp supervisor
for pods started under its filter (``seccomp-supervisor``). No LD_PRELOAD shim: where none of
them reaches the target, the fault is unavailable and says why (the node's reasons). The fault's
state records the one that ran (``fault_mechanism``) and why each stronger one did not
(``passed_over``); the attempt's result row carries it. No fault parameter is readable from
inside a pod under any of them.

* ``latent-sector-error``: reads of the datastore's volume fail now and then with EIO, as when a
  disk develops unreadable sectors. The fault stays with the disk (the bound PersistentVolume);
  the fix is moving the datastore to a new volume and letting its data be rebuilt.
* ``syscall-fail``: one syscall fails with an errno at a rate. File syscalls of a target with a
  volume fail on that volume (a failing device; the fix is a new volume); otherwise it is attached
  to the target's current pods (like an eBPF program on their cgroup) and replacing them drops it.
"""

from __future__ import annotations

import errno as errno_names
from typing import TYPE_CHECKING, Any

from sregym_fault_node import hooks

from sregym_core import mechanisms as mech
from sregym_core.clusters import ProbesFaultMechanisms, SupportsNodeFaults, capability
from sregym_core.errors import PermanentFaultError, TemporaryFaultError
from sregym_core.faultkit import WORKLOADS, function_fault, schema
from sregym_core.mechanisms import STATE_KEY
from sregym_core.types import TargetSelector

from . import daemonset

if TYPE_CHECKING:
    from collections.abc import Mapping

    from sregym_core.faults import FaultContext
    from sregym_core.types import Target

DATASTORE_WITH_VOLUME = TargetSelector(kinds=WORKLOADS, roles=("db:*",), requires=("pvcs",))
FILE_CALLS = ("read", "write", "fsync", "open")
FILE_ORDER = ("bpf-lsm", "bpf-fmod-ret", "seccomp-supervisor")
#: per syscall, the mechanisms that can fail it, strongest first (FaultSpec.mechanisms). No
#: LD_PRELOAD shim: it misses static binaries and its rules would travel with the process; where
#: none of these reaches the target the fault is unavailable, with the probe's reason
MECHANISMS = {"fsync": FILE_ORDER, "read": FILE_ORDER, "write": FILE_ORDER, "open": ("bpf-lsm", "seccomp-supervisor"),
              "connect": ("bpf-cgroup", "bpf-daemonset"), "socket": ("bpf-cgroup", "bpf-daemonset")}
#: latent-sector-error: the FUSE layer (any binary; a failed block stays failed)
LSE_MECHANISMS = {"read": ("bpf-lsm", "bpf-fmod-ret", "fuse-badblocks")}
#: how many of the database's largest relation files (tables and indexes) the errors reach: two
#: files in both views fill a rule's four path prefixes (the node's limit)
LSE_FILES = 2
#: how the node says no mechanism can run a rule (its 503's message)
NO_MECHANISM = "no mechanism can run this rule here"
DEFAULT_ERRNO = {"read": "EIO", "write": "EIO", "fsync": "EIO", "open": "EIO", "connect": "ECONNREFUSED",
                 "socket": "EMFILE"}


# --------------------------------------------------------------------------- latent-sector-error

def lse_inject(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    """Reads of the datastore's own relation files fail at the rate; on the FUSE layer a block a
    read failed on stays unreadable until written (``sticky``: a latent sector error, found by the
    read), so what missed the cache keeps failing; elsewhere each read fails at the rate alone.
    The app's datastores restart (a cold start: the caches hold nothing the disk did not give
    again), all of them, with the layer over every one's volume (dormant on the others)."""
    from sregym_fault_dm_dust.badblocks import relation_files, views

    # every datastore's pods from one listing (inject is timed in kubectl calls: README)
    group = hooks.datastores(ctx, target)
    listed = hooks.group_pods(ctx, group)
    mine = listed[target.component.name]
    claims = hooks.claims_of(mine)
    if not claims:
        raise PermanentFaultError(f"{target.component.name} mounts no PersistentVolumeClaim")
    spec: dict[str, Any] = {"namespace": ctx.namespace, "labels": hooks.labels_of(ctx, target, listed),
                            "calls": ["read"], "errno": "EIO", "rate": params["rate"], "sticky": True,
                            "volumes": [{"namespace": ctx.namespace, "claim": c} for c in claims],
                            "mechanisms": list(LSE_MECHANISMS["read"]), "fuse_install": bool(params["restart"])}
    files = relation_files(ctx, target, limit=LSE_FILES, indexes=True, pods=mine) \
        if target.component.has_role("db:postgres") else []
    both = views(ctx, target, claims[0], [path for path, _name in files], pods=mine, listed=listed)
    if both:
        # the database's own tables and indexes (as the pods and as the node name them): catalogs
        # and WAL read fine, else nothing would start
        spec.update(paths=list(dict.fromkeys(p for pair in both for p in pair)), whole_volume=False)
        ctx.state["relations"] = [name for _path, name in files]
    if params["restart"]:
        spec["cover"] = [{"namespace": ctx.namespace, "claim": c}
                         for other in group[1:] for c in hooks.claims_of(listed[other.component.name])]
    record = _node_rule(ctx, spec)
    ctx.state.update(claims=claims, volumes=record.get("pvs", []))
    _record_mechanism(ctx, record)
    if params["restart"]:
        # returns once the pods are deleted: the rule is on the node first, so the new pods start
        # with the layer (armed from their first read), PostgreSQL's readiness not waited for
        hooks.restart_datastores(ctx, target, current=listed, wait=False)


def _node_rule(ctx: FaultContext, spec: dict) -> dict:
    """Put the rule on the node; no mechanism reaching the target is a permanent error with the
    node's reasons (waiting would not start the target's pods under a filter)."""
    try:
        return hooks.call(ctx, "node_fault", hooks.hook_id(ctx, "shim"), **spec)
    except TemporaryFaultError as exc:
        if NO_MECHANISM not in str(exc):
            raise
        raise PermanentFaultError(str(exc), hints=(
            "file syscalls run through the seccomp supervisor only for pods that started under its filter: the "
            "targets of installed problems (the node reads them at start) or of a supervise record made before",
            "`sregym list-faults --all` shows each mechanism's availability and the probe's reason")) from None


def _record_mechanism(ctx: FaultContext, record: dict) -> None:
    """Which mechanism ran (the node's answer, in sregym_core.mechanisms' names) and why each
    stronger one did not: kept in the fault's state, where the attempt's result row reads it."""
    ctx.state[STATE_KEY] = record.get("mechanism") or ""
    if record.get("passed_over"):
        ctx.state["passed_over"] = dict(record["passed_over"])


def shim_present(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> bool:
    record = hooks.status(ctx, "shim")
    return bool(record and record.get("active"))


def volume_fix(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    hooks.replace_volumes(ctx, target)


def shim_recover(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    hooks.clear(ctx, "shim")


# --------------------------------------------------------------------------- syscall-fail

def _errno_number(params: Mapping[str, Any]) -> int:
    name = params.get("errno") or DEFAULT_ERRNO[params["syscall"]]
    return int(getattr(errno_names, name))


def _cluster_probe(ctx: FaultContext) -> dict:
    probing = capability(getattr(ctx, "cluster", None), ProbesFaultMechanisms)
    try:
        return dict(probing.fault_mechanisms()) if probing is not None else {}
    except Exception:  # noqa: BLE001 - a probe that fails offers nothing
        return {}


def syscall_inject(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    """On a cluster with node fault hooks (the embedded one) the node runs the rule by its
    strongest mechanism; elsewhere ``connect``/``socket`` run through the privileged DaemonSet
    loader (``bpf-daemonset``) when the cluster's probe offers it."""
    if capability(getattr(ctx, "cluster", None), SupportsNodeFaults) is None:
        _daemonset_inject(ctx, target, params)
        return
    spec: dict[str, Any] = {"namespace": ctx.namespace, "labels": hooks.selector_labels(ctx, target),
                            "calls": [params["syscall"]], "errno": _errno_number(params), "rate": params["rate"],
                            "mechanisms": list(MECHANISMS[params["syscall"]])}
    if _on_volume(target, params):
        # file syscalls of a stateful target fail on its data volume (a failing device): the fault
        # stays with the volume, whichever pod mounts it
        spec["volumes"] = [{"namespace": ctx.namespace, "claim": c} for c in hooks.claims(ctx, target)]
        ctx.state["on_volume"] = True
    else:
        spec["pinned"] = True  # attached to the current pods, as to their cgroups
    if params["syscall"] == "connect" and params.get("port"):
        spec["port"] = params["port"]
    try:
        record = _node_rule(ctx, spec)
    except PermanentFaultError as exc:
        if UNFILTERED not in str(exc):
            raise
        record = _supervised_rule(ctx, target, spec)
    ctx.state["pods"] = sorted({ip for ips in record.get("targets", {}).values() for ip in ips})
    _record_mechanism(ctx, record)


#: the node's reason when the target's pods run without the seccomp filter the rule needs
UNFILTERED = "did not start under a filter naming"


def _supervised_rule(ctx: FaultContext, target: Target, spec: dict) -> dict:
    """A target no installed problem names (an ad hoc pair: ``sregym validate --fault --target``, ``run
    --fault``): its pods started without the dormant filter the node gives curated targets, and a filter
    cannot be put on a running process. So the node is told to filter the target's pods from now on, the
    pods are replaced (they start under it) and the rule is put again. Unlike a curated problem's target
    the pods restart at injection, which an agent can see (round 7 of issue #34 met the refusal here)."""
    hooks.call(ctx, "supervise", f"{hooks.hook_id(ctx, 'shim')}-start", namespace=ctx.namespace,
               labels=spec["labels"], calls=list(spec["calls"]))
    hooks.restart_pods(ctx, target)
    ctx.state["restarted_under_filter"] = True
    return _node_rule(ctx, spec)


def _daemonset_inject(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    probe = _cluster_probe(ctx)
    call = params["syscall"]
    declared = MECHANISMS[call]
    chosen = mech.choose(MECHANISMS, probe, params)[call]
    if chosen != daemonset.NAME:
        raise PermanentFaultError(f"syscall-fail {call} cannot run on this cluster: "
                                  + mech.unavailable_reason({call: declared}, probe),
                                  hints=("`sregym list-faults --all` shows each mechanism's availability here",))
    record = daemonset.arm(ctx, target, call=call, errno=_errno_number(params), rate=params["rate"],
                           port=(params.get("port") or 0) if call == "connect" else 0)
    ctx.state["daemonset"] = record
    ctx.state["pods"] = []
    ctx.state[STATE_KEY] = daemonset.NAME
    passed = {m: mech.reason(probe, m, call) for m in declared[:declared.index(daemonset.NAME)]}
    if passed:
        ctx.state["passed_over"] = passed


def syscall_present(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> bool:
    if ctx.state.get("daemonset"):
        return daemonset.present(ctx, ctx.state["daemonset"])
    return shim_present(ctx, target, params)


def syscall_recover(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    if ctx.state.get("daemonset"):
        daemonset.disarm(ctx, ctx.state["daemonset"])
        return
    shim_recover(ctx, target, params)


def _on_volume(target: Target, params: Mapping[str, Any]) -> bool:
    return params["syscall"] in FILE_CALLS and bool(target.component.pvcs)


def syscall_fix(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    """A failing volume: move to a new one. Otherwise: replace the pods the fault is attached to."""
    if ctx.state.get("on_volume"):
        hooks.replace_volumes(ctx, target)
    else:
        hooks.restart_pods(ctx, target)


def _values_lse(target: Target, params: Mapping[str, Any], state: dict) -> dict:
    return {**params, "errno": "EIO", "claims": state.get("claims", []), "volumes": state.get("volumes", [])}


def _values_syscall(target: Target, params: Mapping[str, Any], state: dict) -> dict:
    on_volume = bool(state.get("on_volume"))
    return {**params, "errno": params.get("errno") or DEFAULT_ERRNO[params["syscall"]],
            "pod_ips": state.get("pods", []),
            "scope": "on files of its data volume (the device fails)" if on_volume else "in its current pods",
            "fix": "move it to a new volume (a new claim in its pod template)" if on_volume
                   else "replace the affected pods"}


FAULTS = [
    function_fault(
        name="latent-sector-error", layer="hardware", selector=DATASTORE_WITH_VOLUME,
        summary="Intermittent EIO on reads of the datastore's volume (unreadable disk sectors)",
        params_schema=schema(rate={"type": "number", "minimum": 0.001, "maximum": 0.5, "default": 0.02},
                             restart={"type": "boolean", "default": True}),
        inject=lse_inject, recover=shim_recover, is_present=shim_present, reference_fix=volume_fix,
        resource_kind="PersistentVolume", mechanism="latent sector errors: reads of the volume fail with EIO",
        keywords=("EIO", "Input/output error", "bad sectors", "disk failure", "I/O error"),
        values=_values_lse,
        prose="The disk under {component}'s volume ({volumes}) has latent sector errors: about {rate} of its "
                  "reads of its data files fail with EIO, and a sector found unreadable stays so, so the "
                  "datastore logs 'could not read block ... Input/output error' and queries touching those "
                  "records fail while others work. Fix: move {component} to a new volume (a new claim in its pod "
                  "template) and "
                  "let its data be rebuilt.",
        capabilities=hooks.NODE_AGENT, failure_mode="persistent", fault_mechanisms=LSE_MECHANISMS,
        symptoms=("could not read block ... Input/output error", "queries fail intermittently"),
    ),
    function_fault(
        name="syscall-fail", layer="os", selector=TargetSelector(kinds=WORKLOADS),
        summary="One syscall (fsync, write, read, open, connect or socket) of the target's pods fails with an errno",
        params_schema=schema(
            syscall={"type": "string", "enum": ["fsync", "write", "read", "open", "connect", "socket"],
                     "default": "fsync"},
            errno={"type": "string", "enum": ["", "EIO", "ENOSPC", "EACCES", "EROFS", "EDQUOT", "ECONNREFUSED",
                                              "ETIMEDOUT", "EHOSTUNREACH", "EMFILE"], "default": ""},
            rate={"type": "number", "minimum": 0.01, "maximum": 1, "default": 1.0},
            port={"type": "integer", "minimum": 0, "maximum": 65535, "default": 0}),
        inject=syscall_inject, recover=syscall_recover, is_present=syscall_present, reference_fix=syscall_fix,
        resource_kind="Pod", mechanism="a syscall of the target's processes fails with an injected errno",
        keywords=("syscall", "errno", "eBPF", "seccomp", "fsync", "I/O error"),
        values=_values_syscall,
        prose="{syscall}() in {component}'s processes fails with {errno} (rate {rate}), {scope}. Fix: {fix}.",
        # any cluster: the node hooks (embedded) or the DaemonSet loader (connect, socket); where none of
        # its mechanisms runs the probe hides it (list-faults) and inject says why
        capabilities=frozenset({"any"}), failure_mode="persistent", fault_mechanisms=MECHANISMS,
        symptoms=("errno in the logs", "crash loop (fsync PANIC)", "connection errors (connect)",
                  "errors naming the failed syscall", "restarts"),
    ),
]
