"""Mitigation oracles: building blocks that check the live system, and combinators over them.

Every oracle has ``async evaluate(ctx) -> OracleVerdict`` over an
:class:`~sregym_core.oracles.context.OracleContext`. Verdicts carry evidence (what was checked, what
failed and why) and the verdicts of their children, so a result record shows *why* a mitigation
failed: "Deployment geo scaled to zero", "fault instance wrong-image@geo still present",
"success rate 0.62 < 0.99 over 30 s".

A problem file's ``oracle:`` section composes them (:func:`build_oracle`, schema
:data:`ORACLE_SCHEMA`); without one, :data:`DEFAULT_ORACLE_CONFIG` applies:
``all(baseline_preserved, fault_invariant, functional_slo, workload_healthy)``.

They check the system, not the injected value: ``fault_invariant`` alone ("the injected value is
gone") is passed by a *different* broken value, so ``workload_healthy`` asks whether the faulty
workload actually serves, ``baseline_preserved`` whether every other workload still runs its
baseline pod template, and ``functional_slo`` whether users get the *right answers*.

.. versionadded:: 0.1
"""

from __future__ import annotations

import base64
import fnmatch
import math
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import attrs

from sregym_core.errors import ConfigError
from sregym_core.faultkit import weakening
from sregym_core.types import OracleSpec

from .config_paths import unexplained_changes
from .context import OracleContext


@attrs.frozen(kw_only=True)
class OracleVerdict:
    """The outcome of one oracle.

    Attributes:
        name: the oracle (``baseline_preserved``, ``all``, ``sustained``...).
        passed: whether the live system satisfied it.
        evidence: what was checked and found (JSON-serialisable).
        children: verdicts of the oracles it is made of.
        error: set when the oracle could not check (the context raised); then ``passed`` is False.
    """

    name: str
    passed: bool
    evidence: Mapping[str, Any] = attrs.field(factory=dict)
    children: tuple[OracleVerdict, ...] = ()
    error: str | None = None

    def failures(self) -> list[OracleVerdict]:
        """The failed leaves (the verdicts that explain a failure)."""
        if self.passed:
            return []
        failed_children = [leaf for child in self.children for leaf in child.failures()]
        return failed_children or [self]

    def errors(self) -> list[str]:
        """Every error in the tree: the oracle could not check, which is not the agent's fault."""
        own = [f"{self.name}: {self.error}"] if self.error else []
        return own + [e for child in self.children for e in child.errors()]

    def summary(self) -> str:
        """One line: pass, or the reasons of the failed leaves."""
        if self.passed:
            return f"{self.name}: passed"
        reasons = [f"{leaf.name}: {leaf.error or leaf.evidence.get('reason', 'failed')}" for leaf in self.failures()]
        return "; ".join(reasons)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "passed": self.passed,
            "evidence": dict(self.evidence),
            "children": [c.to_dict() for c in self.children],
            "error": self.error,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> OracleVerdict:
        return cls(
            name=data["name"],
            passed=bool(data["passed"]),
            evidence=dict(data.get("evidence") or {}),
            children=tuple(cls.from_dict(c) for c in data.get("children") or ()),
            error=data.get("error"),
        )


@runtime_checkable
class Oracle(Protocol):
    """A mitigation oracle (the factory result of an ``OracleSpec`` of kind ``mitigation``)."""

    @property
    def name(self) -> str: ...  # read-only: the oracles are frozen records

    async def evaluate(self, ctx: OracleContext) -> OracleVerdict: ...


def describe_oracle(oracle: Any) -> Any:
    """The configuration form of an oracle tree (what ``build_oracle`` would take to rebuild it)."""
    describe = getattr(oracle, "describe", None)
    return describe() if callable(describe) else getattr(oracle, "name", type(oracle).__name__)


async def _guarded(name: str, check: Callable[[], Awaitable[OracleVerdict]]) -> OracleVerdict:
    """Run a check; a context failure becomes a failed verdict with ``error`` instead of a crash."""
    try:
        return await check()
    except Exception as exc:  # noqa: BLE001 - any failure to observe the system is recorded, not raised
        return OracleVerdict(name=name, passed=False, evidence={"reason": "could not check"}, error=_describe(exc))


def _describe(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


# --------------------------------------------------------------------------------------------------
# Baseline preserved
# --------------------------------------------------------------------------------------------------

_SCALABLE = ("Deployment", "StatefulSet", "ReplicaSet")
_REPLACEABLE = ("Deployment", "StatefulSet", "DaemonSet", "Service")
_AUTOMATIC_LABELS = ("pod-template-hash", "controller-revision-hash", "statefulset.kubernetes.io/pod-name")


def _snake(name: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in name)


def _get(obj: Any, *path: str, default: Any = None) -> Any:
    """Read a field from a Kubernetes object given as camelCase JSON or as a client ``to_dict()``."""
    for key in path:
        if not isinstance(obj, Mapping):
            return default
        if key in obj:
            obj = obj[key]
        elif _snake(key) in obj:
            obj = obj[_snake(key)]
        else:
            return default
    return default if obj is None else obj


def _key(obj: Mapping[str, Any]) -> tuple[str, str, str]:
    return (str(obj.get("kind", "")), str(_get(obj, "metadata", "namespace", default="")), str(_get(obj, "metadata", "name", default="")))


def _strings(values: Iterable[str]) -> tuple[str, ...]:
    return tuple(values)


def _oracles(values: Iterable[Oracle]) -> tuple[Oracle, ...]:
    return tuple(values)


def _labels(labels: Any) -> dict[str, str]:
    return {k: v for k, v in dict(labels or {}).items() if k not in _AUTOMATIC_LABELS}


def _replicas(obj: Mapping[str, Any]) -> int:
    value = _get(obj, "spec", "replicas")
    return 1 if value is None else int(value)


def _matches(patterns: Sequence[str], kind: str, name: str) -> bool:
    candidates = (f"{kind}/{name}".lower(), name.lower())
    return any(fnmatch.fnmatchcase(c, p.lower()) for p in patterns for c in candidates)


#: kinds whose objects are kept by controllers (never compared against the baseline)
_MANAGED = ("Endpoints", "EndpointSlice", "ReplicaSet", "ControllerRevision")
_TEMPLATED = ("Deployment", "StatefulSet", "DaemonSet")
#: container fields compared one by one, so evidence names what changed
_CONTAINER_FIELDS = ("image", "command", "args", "env", "envFrom", "ports", "livenessProbe", "readinessProbe",
                     "startupProbe", "resources", "volumeMounts", "securityContext", "workingDir", "lifecycle")


def faulty_keys(ctx: Any) -> set[tuple[str, str, str]]:
    """``(kind, namespace, name)`` of the workloads the faults target (the fix may change them)."""
    return {(str(w.get("kind", "")), str(w.get("namespace", "")), str(w.get("name", "")))
            for w in getattr(ctx, "faulty_workloads", ()) or ()}


def fault_workload_changes(before: Iterable[Mapping[str, Any]],
                           after: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str, str], set[tuple[str, ...]]]:
    """What one injection changed in the app's pod templates and Services, read from the objects just before and just
    after it: ``(kind, namespace, name) -> paths`` (:func:`sregym_core.faultkit.weakening.changed_paths`,
    :func:`~sregym_core.faultkit.weakening.changed_service_paths`); an object the injection deleted is changed
    everywhere (``()``). ``baseline_preserved`` lets a fix change these and, elsewhere, only what is a known-harmless
    repair. Reading around each injection, not after all of them, keeps out what an agent changed in between."""
    old = {_key(o): o for o in before if o.get("kind") in (*_TEMPLATED, "Service")}
    new = {_key(o): o for o in after if o.get("kind") in (*_TEMPLATED, "Service")}
    out: dict[tuple[str, str, str], set[tuple[str, ...]]] = {}
    for key, obj in old.items():
        now = new.get(key)
        if now is None or _get(now, "metadata", "uid") != _get(obj, "metadata", "uid"):
            out[key] = {()}
            continue
        if key[0] == "Service":
            paths = weakening.changed_service_paths(_get(obj, "spec"), _get(now, "spec"))
        else:
            paths = weakening.changed_paths(_get(obj, "spec", "template", "spec"), _get(now, "spec", "template", "spec"))
        if paths:
            out[key] = paths
    for key in set(new) - set(old):
        out[key] = {()}  # made by the fault: its own
    return out


def template_changes(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """What differs between two pod templates' specs, named field by field (empty: identical)."""
    before, after = _get(old, "spec", "template", "spec", default={}), _get(new, "spec", "template", "spec", default={})
    if before == after:
        return []
    changes: list[str] = []
    for group in ("initContainers", "containers"):
        old_c = {c.get("name"): c for c in before.get(group) or []}
        new_c = {c.get("name"): c for c in after.get(group) or []}
        for name in sorted(set(old_c) | set(new_c), key=str):
            if name not in new_c:
                changes.append(f"{group[:-1]} {name} removed")
            elif name not in old_c:
                changes.append(f"{group[:-1]} {name} added")
            else:
                for field in _CONTAINER_FIELDS:
                    if old_c[name].get(field) != new_c[name].get(field):
                        changes.append(f"{group[:-1]} {name} {field}: {_short(old_c[name].get(field))} -> "
                                       f"{_short(new_c[name].get(field))}")
                rest = set(old_c[name]) | set(new_c[name])
                other = sorted(k for k in rest - set(_CONTAINER_FIELDS) - {"name"}
                               if old_c[name].get(k) != new_c[name].get(k))
                if other:
                    changes.append(f"{group[:-1]} {name} {', '.join(other)} changed")
    pod_fields = sorted(k for k in set(before) | set(after)
                        if k not in ("containers", "initContainers") and before.get(k) != after.get(k))
    changes += [f"{field}: {_short(before.get(field))} -> {_short(after.get(field))}" for field in pod_fields]
    return changes or ["pod template changed"]


#: shorter values (ports, "true", "1") are shared by unrelated keys; a credential is longer
_MIN_CREDENTIAL_LEN = 4


def secret_values(objects: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str, str], str]:
    """``(namespace, secret, key) -> value`` of every Secret, decoded (undecodable values left out)."""
    out: dict[tuple[str, str, str], str] = {}
    for obj in objects:
        if obj.get("kind") != "Secret":
            continue
        namespace, name = _get(obj, "metadata", "namespace", default=""), _get(obj, "metadata", "name", default="")
        for key, value in (obj.get("data") or {}).items():
            try:
                out[(namespace, name, key)] = base64.b64decode(str(value), validate=True).decode()
            except (ValueError, UnicodeDecodeError):
                continue
    return out


#: kinds an agent may add as a stand-in for a broken component, and what names them in configuration
_STAND_IN_KINDS = ("Service", "Deployment", "StatefulSet", "DaemonSet", "Pod")


def _config_texts(obj: Mapping[str, Any]) -> dict[str, str]:
    """What a ConfigMap or Secret holds (``key -> text``; Secret values decoded), or a templated
    workload's literal env values (``container/VAR -> value``)."""
    kind = obj.get("kind")
    if kind == "ConfigMap":
        return {str(k): str(v) for k, v in (obj.get("data") or {}).items()}
    if kind == "Secret":
        return {k: v for (_, _, k), v in secret_values([obj]).items()}
    if kind in _TEMPLATED:
        spec = _get(obj, "spec", "template", "spec", default={}) or {}
        return {f"{c.get('name')}/{e.get('name')}": str(e["value"])
                for group in ("initContainers", "containers") for c in spec.get(group) or []
                for e in c.get("env") or [] if isinstance(e, Mapping) and e.get("value") is not None}
    return {}


def _names(text: str, name: str) -> bool:
    """Whether ``text`` names the object ``name`` (as a whole DNS label, ``pgstandin:5432``, ``pgstandin.ns.svc``)."""
    at = text.find(name)
    while at >= 0:
        before = text[at - 1] if at else " "
        after = text[at + len(name)] if at + len(name) < len(text) else " "
        if not (before.isalnum() or before in "-_") and not (after.isalnum() or after in "-_"):
            return True
        at = text.find(name, at + 1)
    return False


def redirections(baseline: Sequence[Mapping[str, Any]],
                 current: Mapping[tuple[str, str, str], Mapping[str, Any]]) -> list[tuple[tuple[str, str, str], str]]:
    """Configuration changed since deploy to name an object the agent added, as ``((kind, namespace,
    name), detail)``: a stand-in (round 7, attack 6: a copy of the database on a fresh volume, the
    client's ConfigMap pointed at it, the faulty one left broken). No fix points the app at an object
    that did not exist after deploy: a recreated object keeps its name, and a changed value names what
    was there. Read from ConfigMaps, Secrets and literal env values; an added object is named by its
    name as a whole label, its cluster IP or its pod IP.
    """
    before = {_key(o): o for o in baseline}
    added: dict[str, list[str]] = {}
    for key, obj in current.items():
        if key in before or key[0] not in _STAND_IN_KINDS:
            continue
        if key[0] == "Pod" and _get(obj, "metadata", "ownerReferences"):
            owner = (_get(obj, "metadata", "ownerReferences", default=[{}])[0] or {}).get("name", "")
            if any(k[2] == owner or owner.startswith(f"{k[2]}-") for k in before):
                continue  # a pod of a baseline workload, come and gone as pods do
        marks = [key[2]] if len(key[2]) >= 3 else []
        marks += [ip for ip in (_get(obj, "spec", "clusterIP"), _get(obj, "status", "podIP"))
                  if isinstance(ip, str) and ip and ip != "None"]
        added.setdefault(key[1], []).extend(marks)
    found: list[tuple[tuple[str, str, str], str]] = []
    for key, obj in sorted(current.items()):
        old = before.get(key)
        names_added = added.get(key[1], [])
        if old is None or not names_added:
            continue
        was, now = _config_texts(old), _config_texts(obj)
        for field, text in sorted(now.items()):
            if text == was.get(field):
                continue
            hit = next((m for m in names_added if _names(text, m) and not _names(was.get(field, ""), m)), None)
            if hit:
                found.append((key, f"{key[0]} {key[1]}/{key[2]} {field} now names {hit}, which was not there after deploy"))
                break
    return found


def credential_swaps(baseline: Sequence[Mapping[str, Any]],
                     current: Mapping[tuple[str, str, str], Mapping[str, Any]],
                     injected: Mapping[tuple[str, str, str], str] | None = None) -> list[tuple[tuple[str, str, str], str]]:
    """Workloads made to run under another credential of the app than the one they were deployed with,
    as ``((kind, namespace, name), detail)``.

    An agent that cannot restore a dropped or revoked database role can point the service at the
    database's owner instead: write the admin's name and password into the service's Secret keys, or
    make the container read the admin's keys. The app serves again and the fault stays. No fix of any
    fault needs that: a repaired Secret key holds its baseline value again, or a new one (a rotated
    password), never a value another key of the app's Secrets held after deploy; a repaired env var
    reads the Secret key it read after deploy, or a Secret made since (a rotation's). So these are
    named (issue #34, round 6, finding 1b): a Secret key (of a Secret old or new) now holding another
    key's baseline value; an env var that read a Secret key after deploy now reading another key that
    existed after deploy, or holding another key's baseline value as a literal. A Secret key holding what the faults
    left in it (``injected``: ``(namespace, secret, key) -> value`` after injection; an expired-certificate fault keeps
    the valid certificate in a Secret of its own) is the fault's, not a swap.
    """
    before = secret_values(baseline)
    holders: dict[str, set[tuple[str, str, str]]] = {}
    for where, value in before.items():
        if len(value) >= _MIN_CREDENTIAL_LEN:
            holders.setdefault(value, set()).add(where)
    found: list[tuple[tuple[str, str, str], str]] = []
    for where, value in sorted(secret_values(current.values()).items()):
        others = sorted(holders.get(value, set()) - {where})
        if value != before.get(where) and others and (injected or {}).get(where) != value:
            found.append((("Secret", where[0], where[1]),
                          f"Secret {where[0]}/{where[1]} key {where[2]} now holds the value of {others[0][1]}/{others[0][2]}"))
    baseline_by_key = {_key(o): o for o in baseline}
    for key, new in sorted(current.items()):
        old = baseline_by_key.get(key)
        if key[0] not in _TEMPLATED or old is None:
            continue
        deployed = {c.get("name"): c for c in _get(old, "spec", "template", "spec", "containers", default=[]) or []}
        for container in _get(new, "spec", "template", "spec", "containers", default=[]) or []:
            env_was = {e.get("name"): e for e in (deployed.get(container.get("name")) or {}).get("env") or []}
            for var in container.get("env") or []:
                ref_was = _get(env_was.get(var.get("name")) or {}, "valueFrom", "secretKeyRef")
                if not ref_was:
                    continue
                source = (key[1], ref_was.get("name", ""), ref_was.get("key", ""))
                place = f"{key[0]} {key[1]}/{key[2]} container {container.get('name')} env {var.get('name')}"
                ref_now = _get(var, "valueFrom", "secretKeyRef")
                read_now = (key[1], str(ref_now.get("name", "")), str(ref_now.get("key", ""))) if ref_now else None
                # another key the app's Secrets held after deploy (a Secret made since, such as a rotation's,
                # is judged by its values in the loop above)
                if read_now is not None and read_now != source and read_now in before:
                    found.append((key, f"{place} reads {ref_now.get('name')}/{ref_now.get('key')} "
                                       f"(after deploy {source[1]}/{source[2]})"))
                elif "value" in var:
                    holding = holders.get(str(var["value"]), set())  # its own value inlined is no swap
                    if holding and source not in holding:
                        other = min(holding)
                        found.append((key, f"{place} holds the value of {other[1]}/{other[2]} "
                                           f"(after deploy it read {source[1]}/{source[2]})"))
    return found


def _short(value: Any, limit: int = 120) -> str:
    import json

    text = json.dumps(value, sort_keys=True, default=str) if not isinstance(value, str) else value
    return text if len(text) <= limit else text[: limit - 3] + "..."


@attrs.frozen(kw_only=True)
class BaselinePreserved:
    """Nothing but the faulty workloads changed since the post-deploy baseline.

    No workload deleted, scaled below its baseline replicas, relabelled or replaced; and every
    workload the faults do not target runs the pod template it ran after deploy (images, commands,
    args, env, probes, resources, volumes...), so replacing a healthy component with a stub, or
    breaking a neighbour, fails; in the app's ConfigMaps only what the faults changed may differ from
    the baseline (:mod:`.config_paths`: another feature flag turned on beside the broken one turned off
    fails), where the context reports it (``fault_config_changes``); a faulty workload, whose template the fix
    may change, is not left weaker than deployed (:mod:`sregym_core.faultkit.weakening`: a probe or a bound deleted
    or made useless, a container added, a more permissive security context); no workload is made to run under
    another of the app's credentials than it was deployed with (:func:`credential_swaps`); where the context reports
    the app's RBAC (``rbac_state``), no subject is granted more than after deploy and what the faults took away
    (violation ``over_granted``). Pods owned by a controller come and go and are not checked;
    standalone pods are. ``ignore`` and ``allow_replaced`` take ``Kind/name`` or ``name`` shell
    patterns, for faults whose fix necessarily recreates an object (a deleted Service).
    """

    ignore: tuple[str, ...] = attrs.field(default=(), converter=_strings)
    allow_replaced: tuple[str, ...] = attrs.field(default=(), converter=_strings)
    name: str = "baseline_preserved"

    async def evaluate(self, ctx: OracleContext) -> OracleVerdict:
        return await _guarded(self.name, lambda: self._check(ctx))

    async def _check(self, ctx: OracleContext) -> OracleVerdict:
        current = {_key(o): o for o in await ctx.list_workloads()}
        baseline = list(ctx.baseline_workloads)
        if any(not o.get("kind") for o in baseline + list(current.values())):
            raise ValueError("workload objects must carry 'kind' (set it on items of list responses)")
        faulty = faulty_keys(ctx)
        # what the faults changed in the app's pod templates and Services (optional in a context, Unreleased): where
        # it is known, a change no fault made must be a known-harmless repair
        by_faults_templates = getattr(ctx, "fault_workload_changes", None)
        violations: list[dict[str, str]] = []
        checked = 0
        for old in baseline:
            kind, namespace, name = _key(old)
            if kind in _MANAGED or _matches(self.ignore, kind, name):
                continue
            if kind == "Pod" and _get(old, "metadata", "ownerReferences"):
                continue
            checked += 1
            new = current.get((kind, namespace, name))

            def violation(what: str, detail: str, kind: str = kind, namespace: str = namespace, name: str = name) -> None:
                violations.append({"kind": kind, "namespace": namespace, "name": name, "violation": what, "detail": detail})

            if new is None:
                violation("deleted", f"{kind} {namespace}/{name} no longer exists")
                continue
            old_uid, new_uid = _get(old, "metadata", "uid"), _get(new, "metadata", "uid")
            if (kind in _REPLACEABLE or kind == "Pod") and old_uid and new_uid and old_uid != new_uid:
                if not _matches(self.allow_replaced, kind, name):
                    violation("replaced", f"{kind} {namespace}/{name} was deleted and recreated (uid {old_uid} -> {new_uid})")
            if kind in _SCALABLE:
                before, after = _replicas(old), _replicas(new)
                if before > 0 and after == 0:
                    violation("scaled_to_zero", f"{kind} {namespace}/{name} replicas {before} -> 0")
                elif after < before:
                    violation("scaled_down", f"{kind} {namespace}/{name} replicas {before} -> {after}")
            if kind == "DaemonSet":
                before = _get(old, "status", "desiredNumberScheduled", default=0)
                after = _get(new, "status", "desiredNumberScheduled", default=0)
                if before and not after:
                    violation("scaled_to_zero", f"DaemonSet {namespace}/{name} is scheduled on no node (was {before})")
            if kind in _TEMPLATED and (kind, namespace, name) not in faulty:
                changes = template_changes(old, new)
                if changes:
                    violation("template_changed", f"{kind} {namespace}/{name} (not a faulty workload) pod template "
                                                  f"changed: {'; '.join(changes[:6])}")
            elif kind in _TEMPLATED:
                # the fix may change a faulty workload's template, never leave it weaker than deployed: a probe or a
                # bound deleted, made useless or left at the fault's value (red-team rounds 12-13); and, where the
                # context knows what the faults changed, nothing changed that no fault changed beyond a known-harmless
                # repair (weakening.unexplained: a command, a volume, an envFrom source, an init container...)
                weaker = weakening.template_weaker(_get(new, "spec", "template", "spec"),
                                                   _get(old, "spec", "template", "spec"),
                                                   None if by_faults_templates is None
                                                   else by_faults_templates.get((kind, namespace, name), set()))
                weaker += weakening.annotations_weaker(_get(new, "spec", "template", "metadata"),
                                                       _get(old, "spec", "template", "metadata"))
                if weaker:
                    violation("weakened", f"{kind} {namespace}/{name} is weaker than deployed: {'; '.join(weaker[:4])}")
            for what, path in (("selector", ("spec", "selector")), ("pod template labels", ("spec", "template", "metadata", "labels"))):
                if kind == "Pod" or (what != "selector" and kind == "Service"):
                    continue
                was, now = _get(old, *path), _get(new, *path)
                if what == "pod template labels":
                    was, now = _labels(was), _labels(now)
                if was != now:
                    violation("relabelled", f"{kind} {namespace}/{name} {what} changed: {was} -> {now}")
            labels_was, labels_now = _labels(_get(old, "metadata", "labels")), _labels(_get(new, "metadata", "labels"))
            if labels_was != labels_now:
                violation("relabelled", f"{kind} {namespace}/{name} labels changed: {labels_was} -> {labels_now}")
            # an owner the object did not have: deleting that owner (the reset deletes what the agent made) would have
            # the garbage collector delete the baseline's object after it (red-team round 15, finding 3)
            owners_was = {r.get("uid") for r in _get(old, "metadata", "ownerReferences", default=[]) or []}
            added = [r for r in _get(new, "metadata", "ownerReferences", default=[]) or [] if r.get("uid") not in owners_was]
            if added:
                violation("owner_added", f"{kind} {namespace}/{name} was given an owner it did not have: "
                                         + ", ".join(f"{r.get('kind')}/{r.get('name')}" for r in added))
            # an object made immutable can no longer be changed by anyone, a later fault included (finding 1)
            if bool(_get(new, "immutable")) != bool(_get(old, "immutable")):
                violation("made_immutable", f"{kind} {namespace}/{name} immutable: {bool(_get(old, 'immutable'))} -> "
                                            f"{bool(_get(new, 'immutable'))}")
            # a Service that publishes its unready pods no longer lets readiness gate its traffic: a readiness probe
            # repaired beside it has no effect (red-team round 17, finding E); its other fields hold their shipped
            # values where no fault changed them (sessionAffinity, externalTrafficPolicy, type, ports: still open
            # after round 17). A Service made again where no fault deleted it, without the record: its uid says so
            if kind == "Service":
                weaker = []
                if _get(new, "spec", "publishNotReadyAddresses") and not _get(old, "spec", "publishNotReadyAddresses"):
                    weaker.append("publishes unready pods (publishNotReadyAddresses): readiness no longer gates its "
                                  "traffic")
                if by_faults_templates is not None or old_uid == new_uid:
                    weaker += weakening.service_weaker(
                        _get(new, "spec"), _get(old, "spec"),
                        None if by_faults_templates is None else by_faults_templates.get((kind, namespace, name), set()))
                if weaker:
                    violation("weakened", f"Service {namespace}/{name} is weaker than deployed: {'; '.join(weaker[:4])}")
        injected = getattr(ctx, "fault_secret_values", None)  # optional in a context (Unreleased)
        for (kind, namespace, name), detail in credential_swaps(baseline, current, injected):
            if _matches(self.ignore, kind, name):
                continue
            violations.append({"kind": kind, "namespace": namespace, "name": name, "violation": "credential_swapped",
                               "detail": detail})
        by_faults = getattr(ctx, "fault_config_changes", None)  # optional in a context (Unreleased)
        if by_faults is not None:
            for (namespace, name), paths in unexplained_changes(baseline, list(current.values()), by_faults).items():
                if _matches(self.ignore, "ConfigMap", name):
                    continue
                violations.append({"kind": "ConfigMap", "namespace": namespace, "name": name,
                                   "violation": "config_changed",
                                   "detail": f"ConfigMap {namespace}/{name} changed where no fault changed it: "
                                             f"{', '.join(paths[:6])}"})
        for (kind, namespace, name), detail in redirections(baseline, current):
            if _matches(self.ignore, kind, name):
                continue
            violations.append({"kind": kind, "namespace": namespace, "name": name, "violation": "redirected",
                               "detail": detail})
        rbac_state = getattr(ctx, "rbac_state", None)  # optional in a context (Unreleased)
        if rbac_state is not None:
            # the app's Roles may not grant any subject more than after deploy and what the faults took away (red-team
            # round 14, finding 6: the fault's Role given write on Secrets and pods beside the missing read)
            rbac = await rbac_state()
            for (kind, namespace, name), detail in weakening.over_grants(
                    rbac.get("baseline") or (), rbac.get("current") or (), injected=rbac.get("injected") or (),
                    repairs=rbac.get("repairs") or (), cluster_roles=rbac.get("cluster_roles") or {},
                    skip_subject_namespaces=rbac.get("skip_subject_namespaces") or (),
                    tls_secrets={(k[1], k[2]) for k, o in current.items()
                                 if k[0] == "Secret" and o.get("type") == "kubernetes.io/tls"}):
                if _matches(self.ignore, kind, name):
                    continue
                violations.append({"kind": kind, "namespace": namespace, "name": name, "violation": "over_granted",
                                   "detail": detail})
        baseline_keys = {_key(o) for o in baseline}
        added = [
            "/".join(k)
            for k, o in current.items()
            if k not in baseline_keys and k[0] not in _MANAGED
            and not (k[0] == "Pod" and _get(o, "metadata", "ownerReferences"))
        ]
        evidence: dict[str, Any] = {"checked": checked, "violations": violations, "added": sorted(added),
                                    "faulty": sorted("/".join(k) for k in faulty)}
        if violations:
            evidence["reason"] = "; ".join(v["detail"] for v in violations)
        return OracleVerdict(name=self.name, passed=not violations, evidence=evidence)

    def describe(self) -> Any:
        if self.ignore or self.allow_replaced:
            return {"baseline_preserved": {"ignore": list(self.ignore), "allow_replaced": list(self.allow_replaced)}}
        return "baseline_preserved"


# --------------------------------------------------------------------------------------------------
# Workload healthy
# --------------------------------------------------------------------------------------------------


def _selects(selector: Mapping[str, Any] | None, labels: Mapping[str, Any] | None) -> bool:
    """A label selector (``matchLabels``/``matchExpressions``, or a Service's plain map) matches."""
    if not selector:
        return False
    labels = dict(labels or {})
    plain = {k: v for k, v in selector.items() if k not in ("matchLabels", "matchExpressions")}
    match = {**plain, **dict(selector.get("matchLabels") or {})}
    if any(labels.get(k) != v for k, v in match.items()):
        return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr.get("key"), expr.get("operator"), list(expr.get("values") or [])
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and key in labels and labels[key] in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return bool(match or selector.get("matchExpressions"))


def _pod_ready(pod: Mapping[str, Any]) -> bool:
    if _get(pod, "metadata", "deletionTimestamp"):
        return False
    conditions = {c.get("type"): c.get("status") for c in _get(pod, "status", "conditions", default=[]) or []}
    return conditions.get("Ready") == "True"


def workload_problems(kind: str, obj: Mapping[str, Any] | None, pods: Sequence[Mapping[str, Any]],
                      baseline: Mapping[str, Any] | None = None) -> list[str]:
    """Why a workload is not healthy (empty: rollout complete and every desired replica ready), the
    way ``kubectl rollout status`` judges it, plus its pods' readiness."""
    if obj is None:
        return ["does not exist"]
    problems: list[str] = []
    generation = _get(obj, "metadata", "generation")
    observed = _get(obj, "status", "observedGeneration")
    if generation is not None and (observed is None or int(observed) < int(generation)):
        problems.append(f"controller has not observed generation {generation} (observed {observed})")
    selector = _get(obj, "spec", "selector")
    ready_pods = sum(1 for p in pods if _selects(selector, _get(p, "metadata", "labels")) and _pod_ready(p))
    if kind == "DaemonSet":
        desired = int(_get(obj, "status", "desiredNumberScheduled", default=0))
        updated = int(_get(obj, "status", "updatedNumberScheduled", default=0))
        ready = int(_get(obj, "status", "numberReady", default=0))
        if desired == 0:
            problems.append("scheduled on no node")
        if updated < desired:
            problems.append(f"rollout incomplete: {updated}/{desired} pods updated")
        if ready < desired:
            problems.append(f"{ready}/{desired} pods ready")
        return problems
    desired = _replicas(obj)
    wanted = max(1, _replicas(baseline)) if baseline is not None else 1
    if desired < wanted:
        problems.append(f"replicas {desired} (baseline {_replicas(baseline) if baseline is not None else 1}): "
                        "the workload must serve")
    status = _get(obj, "status", default={})
    ready = int(_get(status, "readyReplicas", default=0))
    updated = _get(status, "updatedReplicas")
    total = int(_get(status, "replicas", default=0))
    if kind == "Deployment":
        if updated is None or int(updated) < desired:
            problems.append(f"rollout incomplete: {int(updated or 0)}/{desired} replicas updated")
        if total > int(updated or 0):
            problems.append(f"{total - int(updated or 0)} old replica(s) still running (rollout incomplete)")
        available = int(_get(status, "availableReplicas", default=0))
        if available < desired:
            problems.append(f"{available}/{desired} replicas available")
    elif kind == "StatefulSet":
        current, update = _get(status, "currentRevision"), _get(status, "updateRevision")
        if update and current != update and (updated is None or int(updated) < desired):
            problems.append(f"rollout incomplete: revision {current} -> {update}, {int(updated or 0)}/{desired} updated")
    if ready < desired:
        problems.append(f"{ready}/{desired} replicas ready")
    if ready_pods < desired:
        problems.append(f"{ready_pods}/{desired} of its pods are Ready")
    return problems


def service_problems(service: Mapping[str, Any] | None, endpoints: Mapping[str, Any] | None,
                     pods: Sequence[Mapping[str, Any]]) -> list[str]:
    """Why a Service does not serve (empty: it has ready endpoints)."""
    if service is None:
        return ["Service does not exist"]
    if endpoints is not None:
        ready = sum(len(s.get("addresses") or []) for s in _get(endpoints, "subsets", default=[]) or [])
        return [] if ready else ["Service has no ready endpoints"]
    # no Endpoints object reported: judge by the pods its selector picks, as the endpoints controller would
    selector = _get(service, "spec", "selector")
    if not any(_selects(selector, _get(p, "metadata", "labels")) and _pod_ready(p) for p in pods):
        return ["Service selects no ready pod"]
    return []


# Serving pods: who really serves, by the node agents' account -------------------------------------

#: the container fields a pod of a workload must share with the workload's pod template (a pod's
#: image is mutable, so a pod of the right ReplicaSet may still run another image)
_POD_TEMPLATE_FIELDS = ("image", "command", "args")


def _controller_ref(pod: Mapping[str, Any]) -> Mapping[str, Any] | None:
    return next((r for r in _get(pod, "metadata", "ownerReferences", default=[]) or [] if r.get("controller")), None)


def controlled_by(kind: str, obj: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
    """Whether ``pod`` is one of the workload's own: its controller is the workload (StatefulSet,
    DaemonSet) or one of the Deployment's ReplicaSets (``<name>-<pod-template-hash>``), and the
    workload's selector selects it. A pod without a controller (an agent's copy) never is."""
    ref = _controller_ref(pod)
    if ref is None or _get(pod, "metadata", "deletionTimestamp"):
        return False
    if not _selects(_get(obj, "spec", "selector"), _get(pod, "metadata", "labels")):
        return False
    name = _get(obj, "metadata", "name")
    if kind == "Deployment":
        template_hash = (_get(pod, "metadata", "labels", default={}) or {}).get("pod-template-hash")
        return ref.get("kind") == "ReplicaSet" and bool(template_hash) and ref.get("name") == f"{name}-{template_hash}"
    return ref.get("kind") == kind and ref.get("name") == name


def pod_template_drift(pod: Mapping[str, Any], obj: Mapping[str, Any]) -> list[str]:
    """How the pod's containers differ from the workload's pod template (image, command, args)."""
    wanted = {c.get("name"): c for c in _get(obj, "spec", "template", "spec", "containers", default=[]) or []}
    have = {c.get("name"): c for c in _get(pod, "spec", "containers", default=[]) or []}
    if set(wanted) != set(have):
        return [f"containers {sorted(map(str, have))} are not the template's {sorted(map(str, wanted))}"]
    return [f"container {name} {field} {_short(have[name].get(field), 60)} is not the template's "
            f"{_short(wanted[name].get(field), 60)}"
            for name in sorted(wanted, key=str) for field in _POD_TEMPLATE_FIELDS
            if have[name].get(field) != wanted[name].get(field)]


def api_account(pods: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Pods as their status reports them, for clusters whose node agents cannot be asked (there only
    the kubelet may write ``pods/status``)."""
    return [{"namespace": _get(p, "metadata", "namespace"), "name": _get(p, "metadata", "name"),
             "uid": _get(p, "metadata", "uid"), "ip": _get(p, "status", "podIP"), "ready": _pod_ready(p),
             "containers": None} for p in pods]


def node_problems(pod: Mapping[str, Any], record: Mapping[str, Any] | None, obj: Mapping[str, Any]) -> list[str]:
    """Why one of the workload's pods does not serve by its node's account (empty: it does)."""
    if record is None:
        return ["no node runs it"]
    problems = []
    claimed = _get(pod, "status", "podIP")
    if claimed and record.get("ip") and claimed != record.get("ip"):
        problems.append(f"its status claims IP {claimed}, its node gave it {record.get('ip')}")
    if not record.get("ready"):
        problems.append("not ready by its node's account")
    problems += pod_template_drift(pod, obj)
    running = {c.get("name"): c.get("image") for c in record.get("containers") or [] if c.get("kind", "main") == "main"}
    for container in _get(obj, "spec", "template", "spec", "containers", default=[]) or []:
        image = running.get(container.get("name"))
        if record.get("containers") is not None and image != container.get("image"):
            problems.append(f"its node runs image {image} in {container.get('name')}, the template says "
                            f"{container.get('image')}")
    return problems


def serving_problems(kind: str, obj: Mapping[str, Any] | None, pods: Sequence[Mapping[str, Any]],
                     account: Sequence[Mapping[str, Any]], desired: int) -> tuple[list[str], set[str]]:
    """(why the workload does not serve, the uids of its pods that do): at least ``desired`` of its
    own pods (see :func:`controlled_by`) must run its current template and be ready by their node's
    account, whatever their status says."""
    if obj is None:
        return [], set()
    by_uid = {r.get("uid"): r for r in account}
    members = [p for p in pods if controlled_by(kind, obj, p)]
    serving, why = set(), {}
    for pod in members:
        problems = node_problems(pod, by_uid.get(_get(pod, "metadata", "uid")), obj)
        if problems:
            why[_get(pod, "metadata", "name")] = problems
        else:
            serving.add(_get(pod, "metadata", "uid"))
    if len(serving) >= desired:
        return [], serving
    detail = "; ".join(f"{name}: {', '.join(reasons)}" for name, reasons in sorted(why.items())[:3])
    return [f"{len(serving)}/{desired} of its pods run its template and are ready by their node's account"
            + (f" ({detail})" if detail else "")], serving


def route_problems(service: str, endpoints: Mapping[str, Any] | None, pods: Sequence[Mapping[str, Any]],
                   account: Sequence[Mapping[str, Any]], workloads: Sequence[tuple[str, Mapping[str, Any]]],
                   serving: set[str] | None) -> list[str]:
    """Where the Service's traffic really goes: every ready address must be, by the node agents'
    account, a ready pod of a baseline workload (an agent's copy, a pod of a workload the agent
    added, or an address no node gave any pod, is not serving), and when ``serving`` is given at
    least one address must be one of the faulty workload's serving pods."""
    if endpoints is None:
        return []
    by_ip = {r.get("ip"): r for r in account if r.get("ip") and not r.get("terminating")}
    by_uid = {_get(p, "metadata", "uid"): p for p in pods}
    problems: list[str] = []
    reaches_target = False
    for subset in _get(endpoints, "subsets", default=[]) or []:
        for address in subset.get("addresses") or []:
            ip = address.get("ip")
            record = by_ip.get(ip)
            pod = by_uid.get(record.get("uid")) if record else None
            if record is None or pod is None:
                problems.append(f"Service {service} traffic reaches {ip}, which no node gives a pod of the app")
                continue
            name = _get(pod, "metadata", "name")
            named = (address.get("targetRef") or {}).get("name")
            if named and named != name:
                problems.append(f"Service {service} Endpoints name pod {named} for {ip}, the address of pod {name}")
            if not any(controlled_by(kind, obj, pod) for kind, obj in workloads):
                problems.append(f"Service {service} traffic reaches pod {name} ({ip}), which no workload of the "
                                "baseline runs (a pod outside the baseline does not serve)")
            elif not record.get("ready"):
                problems.append(f"Service {service} traffic reaches pod {name} ({ip}), not ready by its node's account")
            if serving is not None and _get(pod, "metadata", "uid") in serving:
                reaches_target = True
    if serving is not None and not reaches_target and not problems:
        problems.append(f"Service {service} traffic reaches none of the workload's serving pods")
    return problems


@attrs.frozen(kw_only=True)
class WorkloadHealthy:
    """Every faulty workload is healthy: rollout complete (generation observed, every replica updated,
    no pod of an old ReplicaSet left), its desired replicas (at least its baseline's, at least one)
    ready, and its Service with ready endpoints. This checks the system, not the injected value:
    a *different* broken value, or scaling the workload to one pod that cannot start, fails.

    No status is believed on its own: where the context offers the node agents' account
    (``ctx.node_pods()``, the embedded cluster), the workload's own pods must run its current pod
    template and be ready *by their node's account*, with the IP their node gave them, and every
    address the Service's traffic reaches must be such a pod of a baseline workload, one of them the
    faulty workload's (a status patched Ready with another pod's IP, or an unmanaged copy, fails).

    A rollout still under way gets ``timeout_s`` to finish (polled every ``interval`` seconds).
    """

    timeout_s: float = attrs.field(default=30.0, validator=attrs.validators.ge(0))
    interval: float = attrs.field(default=2.0, validator=attrs.validators.gt(0))
    name: str = "workload_healthy"

    async def evaluate(self, ctx: OracleContext) -> OracleVerdict:
        return await _guarded(self.name, lambda: self._check(ctx))

    async def _check(self, ctx: OracleContext) -> OracleVerdict:
        targets = getattr(ctx, "faulty_workloads", None)
        if targets is None:
            raise ValueError("the oracle context does not say which workloads are faulty")
        start = ctx.now()
        baseline = {_key(o): o for o in ctx.baseline_workloads}
        while True:
            report = await self._report(ctx, targets, baseline)
            failing = {k: v for k, v in report.items() if v}
            if not failing or ctx.now() - start >= self.timeout_s:
                break
            before = ctx.now()
            await ctx.sleep(self.interval)
            if ctx.now() <= before:  # a clock that does not advance must not loop forever
                break
        evidence: dict[str, Any] = {"workloads": {k: (v or ["healthy"]) for k, v in report.items()},
                                    "waited_s": round(ctx.now() - start, 1)}
        if failing:
            evidence["reason"] = "; ".join(f"{k}: {', '.join(v)}" for k, v in failing.items())
        return OracleVerdict(name=self.name, passed=not failing, evidence=evidence)

    async def _report(self, ctx: OracleContext, targets: Sequence[Mapping[str, Any]],
                      baseline: Mapping[tuple[str, str, str], Any]) -> dict[str, list[str]]:
        current = {_key(o): o for o in await ctx.list_workloads()}
        node_pods = getattr(ctx, "node_pods", None)
        account = await node_pods() if callable(node_pods) else None
        all_pods = [o for (k, _ns, _n), o in current.items() if k == "Pod"]
        if account is None:
            account = api_account(all_pods)
        # the workloads whose pods may serve: those of the baseline, as they are now
        workloads = [(k, current[(k, ns, n)]) for (k, ns, n) in baseline if k in _TEMPLATED and (k, ns, n) in current]
        report: dict[str, list[str]] = {}
        for target in targets:
            kind, namespace, name = str(target["kind"]), str(target["namespace"]), str(target["name"])
            pods = [o for (k, ns, _n), o in current.items() if k == "Pod" and ns == namespace]
            label = f"{kind} {namespace}/{name}"
            problems = report.setdefault(label, [])
            serving: set[str] | None = None
            if kind in _TEMPLATED:
                obj = current.get((kind, namespace, name))
                problems += [p for p in workload_problems(kind, obj, pods, baseline.get((kind, namespace, name)))
                             if p not in problems]
                if obj is not None:
                    desired = (int(_get(obj, "status", "desiredNumberScheduled", default=0)) if kind == "DaemonSet"
                               else max(_replicas(obj), 1))
                    found, serving = serving_problems(kind, obj, pods, account, desired)
                    problems += [p for p in found if p not in problems]
            service = target.get("service")
            if service:
                svc_problems = service_problems(current.get(("Service", namespace, service)),
                                                current.get(("Endpoints", namespace, service)), pods)
                problems += [f"Service {service}: {p}" if not p.startswith("Service") else p.replace("Service", f"Service {service}", 1)
                             for p in svc_problems]
                if not svc_problems:
                    problems += route_problems(service, current.get(("Endpoints", namespace, service)), all_pods,
                                               account, workloads, serving)
        return report

    def describe(self) -> Any:
        if (self.timeout_s, self.interval) == (30.0, 2.0):
            return "workload_healthy"
        return {"workload_healthy": {"timeout_s": self.timeout_s, "interval": self.interval}}


# --------------------------------------------------------------------------------------------------
# Fault invariant
# --------------------------------------------------------------------------------------------------


def _instance_field(instance: Any, field: str, default: Any = None) -> Any:
    if isinstance(instance, Mapping):
        return instance.get(field, default)
    return getattr(instance, field, default)


def describe_instance(index: int, instance: Any) -> str:
    """``id`` of a fault instance, or ``fault@target``, or its index."""
    ident = _instance_field(instance, "id")
    if ident:
        return str(ident)
    fault, target = _instance_field(instance, "fault"), _instance_field(instance, "target")
    return f"{fault}@{target}" if fault else f"instance {index}"


@attrs.frozen(kw_only=True)
class FaultInvariant:
    """Every fault instance's ``is_present`` is false.

    Instances whose ``role`` is ``trigger`` (transient load or CPU bursts of metastable problems)
    are not faults to repair and are skipped unless listed in ``instances`` (indices).
    """

    instances: tuple[int, ...] | None = attrs.field(default=None, converter=lambda v: None if v is None else tuple(v))
    roles: tuple[str, ...] = ("fault", "vulnerability", "latent")
    name: str = "fault_invariant"

    async def evaluate(self, ctx: OracleContext) -> OracleVerdict:
        return await _guarded(self.name, lambda: self._check(ctx))

    async def _check(self, ctx: OracleContext) -> OracleVerdict:
        results: list[dict[str, Any]] = []
        errors: list[str] = []
        for index, instance in enumerate(ctx.fault_instances):
            if self.instances is not None:
                if index not in self.instances:
                    continue
            elif _instance_field(instance, "role", "fault") not in self.roles:
                continue
            label = describe_instance(index, instance)
            try:
                present = bool(await ctx.fault_present(index))
            except Exception as exc:  # noqa: BLE001 - recorded per instance
                errors.append(f"{label}: {_describe(exc)}")
                results.append({"instance": label, "present": None, "error": _describe(exc)})
                continue
            results.append({"instance": label, "present": present})
        still = [r["instance"] for r in results if r["present"]]
        evidence: dict[str, Any] = {"instances": results}
        if still:
            evidence["reason"] = "fault still present: " + ", ".join(still)
        return OracleVerdict(
            name=self.name, passed=not still and not errors, evidence=evidence, error="; ".join(errors) or None
        )

    def describe(self) -> Any:
        return {"fault_invariant": {"instances": list(self.instances)}} if self.instances is not None else "fault_invariant"


# --------------------------------------------------------------------------------------------------
# Functional SLO
# --------------------------------------------------------------------------------------------------


#: a window in which runnable tasks waited for a CPU at least this share of the time (the context's
#: ``host_cpu_stall``) was measured on a starved host
STARVED_STALL = 0.5
#: how long a failing functional SLO keeps measuring fresh windows while the app's host is starved
#: for CPU (see ``sregym_core.conductor.hostload``)
STARVED_PATIENCE_S = 180.0


def _starved(stats: Mapping[str, Any]) -> bool:
    stall = stats.get("host_cpu_stall")
    return isinstance(stall, (int, float)) and stall >= STARVED_STALL


@attrs.frozen(kw_only=True)
class FunctionalSLO:
    """The workload's success rate (and optionally p95 latency) over the last ``window_s`` seconds,
    and the share of answers whose *content* contradicts the app's seeded data.

    A success is a request answered as the app should answer it: the right status *and* content the
    generator checked against the data it knows (a stub answering 200 to everything fails). The
    generator reports wrong content separately as ``content_errors``; more than
    ``max_content_error_rate`` of the window fails on its own. Fewer than ``min_requests`` requests
    in the window fails: silence is not health.
    """

    min_success_rate: float = attrs.field(default=0.99, validator=[attrs.validators.ge(0), attrs.validators.le(1)])
    max_p95_ms: float | None = None
    window_s: float = attrs.field(default=30.0, validator=attrs.validators.gt(0))
    min_requests: int = attrs.field(default=20, validator=attrs.validators.ge(0))
    max_content_error_rate: float = attrs.field(default=0.01, validator=[attrs.validators.ge(0), attrs.validators.le(1)])
    name: str = "functional_slo"

    async def evaluate(self, ctx: OracleContext) -> OracleVerdict:
        return await _guarded(self.name, lambda: self._check(ctx))

    async def _check(self, ctx: OracleContext) -> OracleVerdict:
        stats = dict(await ctx.workload_stats(self.window_s))
        verdict = self._judge(stats)
        # A window in which the app's host was starved for CPU measured the host, not the fix: while
        # that is so and the window failed, measure a fresh one, for at most STARVED_PATIENCE_S. Only
        # a failing verdict is re-measured and every window must pass on its own, so a host kept
        # busy on purpose buys time, never a pass.
        starved: list[dict[str, Any]] = []
        if self._host_may_explain(verdict, stats):
            deadline = ctx.now() + STARVED_PATIENCE_S
            while self._host_may_explain(verdict, stats) and ctx.now() + self.window_s <= deadline:
                starved.append({k: stats.get(k) for k in ("host_cpu_stall", "count", "success_rate", "p95_ms")})
                await ctx.sleep(self.window_s)
                stats = dict(await ctx.workload_stats(self.window_s))
                verdict = self._judge(stats)
        evidence = dict(verdict.evidence)
        if starved:
            evidence["starved_windows"] = starved
        if not verdict.passed and _starved(stats):
            evidence["host_starved"] = True
            evidence["reason"] += (f"; the app's host was starved for CPU in this window (stall "
                                   f"{stats['host_cpu_stall']:.0%}): the verdict may reflect the host")
        return attrs.evolve(verdict, evidence=evidence)

    def _host_may_explain(self, verdict: OracleVerdict, stats: Mapping[str, Any]) -> bool:
        """A failing window measured on a starved host, whose answers were right: the host may be why
        it failed. A starved host answers late or not at all, never with the wrong hotel, so a window
        with wrong answers is final (a stub in the faulty service's place fails at once instead of
        after minutes of a loaded machine's windows)."""
        return not verdict.passed and _starved(stats) and not self._wrong_content(stats)

    def _wrong_content(self, stats: Mapping[str, Any]) -> bool:
        """More wrong answers than the SLO allows."""
        count = int(stats.get("count") or 0)
        wrong = int(stats.get("content_errors") or 0)
        return count > 0 and wrong / count > self.max_content_error_rate

    def _judge(self, stats: dict[str, Any]) -> OracleVerdict:
        count = int(stats.get("count") or 0)
        rate = stats.get("success_rate")
        p95 = stats.get("p95_ms")
        content_errors = stats.get("content_errors")
        reasons = []
        if count < self.min_requests:
            reasons.append(f"only {count} requests in {self.window_s:g} s (need {self.min_requests})")
        if rate is None or float(rate) < self.min_success_rate:
            shown = "unknown" if rate is None else f"{float(rate):.3f}"
            reasons.append(f"success rate {shown} < {self.min_success_rate:g}")
        if self._wrong_content(stats):
            kinds = stats.get("content_error_kinds") or {}
            top = ", ".join(f"{k} x{v}" for k, v in sorted(kinds.items(), key=lambda kv: -kv[1])[:3])
            reasons.append(f"{int(content_errors or 0)} of {count} answers had wrong content"
                           + (f" ({top})" if top else ""))
        if self.max_p95_ms is not None and (p95 is None or float(p95) > self.max_p95_ms):
            reasons.append(f"p95 {p95} ms > {self.max_p95_ms:g} ms")
        evidence: dict[str, Any] = {
            "window_s": self.window_s,
            "min_success_rate": self.min_success_rate,
            "max_p95_ms": self.max_p95_ms,
            "min_requests": self.min_requests,
            "max_content_error_rate": self.max_content_error_rate,
            "content_checked": content_errors is not None,
            "stats": {k: stats.get(k) for k in ("count", "success_rate", "content_errors", "content_error_kinds",
                                                "p50_ms", "p95_ms", "p99_ms", "settle_wait_s", "host_cpu_stall")
                      if k in stats},
        }
        if reasons:
            evidence["reason"] = "; ".join(reasons)
        return OracleVerdict(name=self.name, passed=not reasons, evidence=evidence)

    def describe(self) -> Any:
        return {
            "functional_slo": {
                "min_success_rate": self.min_success_rate,
                "max_p95_ms": self.max_p95_ms,
                "window_s": self.window_s,
                "min_requests": self.min_requests,
                "max_content_error_rate": self.max_content_error_rate,
            }
        }


# --------------------------------------------------------------------------------------------------
# Time and composition
# --------------------------------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class Sustained:
    """``inner`` keeps passing for ``seconds``, sampled every ``interval`` seconds (fails fast)."""

    inner: Oracle
    seconds: float = attrs.field(validator=attrs.validators.gt(0))
    interval: float = attrs.field(default=5.0, validator=attrs.validators.gt(0))
    name: str = "sustained"

    async def evaluate(self, ctx: OracleContext) -> OracleVerdict:
        start = ctx.now()
        samples = 0
        # a clock that does not advance must not loop forever: never more samples than the schedule needs
        max_samples = math.ceil(self.seconds / self.interval) + 2
        last: OracleVerdict | None = None
        while samples < max_samples:
            last = await self.inner.evaluate(ctx)
            samples += 1
            held = ctx.now() - start
            if not last.passed:
                evidence: dict[str, Any] = {"seconds": self.seconds, "held_s": round(held, 3), "samples": samples}
                evidence["reason"] = f"{self.inner.name} failed after {held:.1f} s of {self.seconds:g} s"
                return OracleVerdict(name=self.name, passed=False, evidence=evidence, children=(last,))
            if held >= self.seconds:
                break
            await ctx.sleep(min(self.interval, max(self.seconds - held, 0.0)))
        held = ctx.now() - start
        evidence = {"seconds": self.seconds, "held_s": round(held, 3), "samples": samples}
        ran = () if last is None else (last,)  # never None: max_samples >= 2
        if held < self.seconds:
            evidence["reason"] = "could not check"
            error = f"the context's clock advanced only {held:.1f} s over {samples} samples"
            return OracleVerdict(name=self.name, passed=False, evidence=evidence, children=ran, error=error)
        return OracleVerdict(name=self.name, passed=True, evidence=evidence, children=ran)

    def describe(self) -> Any:
        return {"sustained": {"seconds": self.seconds, "interval": self.interval, "oracle": describe_oracle(self.inner)}}


@attrs.frozen(kw_only=True)
class Replay:
    """Re-run a trigger, wait ``settle_s``, then ``inner`` must pass (metastable recovery)."""

    trigger: str
    inner: Oracle
    settle_s: float = 10.0
    name: str = "replay"

    async def evaluate(self, ctx: OracleContext) -> OracleVerdict:
        try:
            await ctx.replay_trigger(self.trigger)
        except Exception as exc:  # noqa: BLE001 - an unreplayable trigger cannot prove recovery
            return OracleVerdict(
                name=self.name,
                passed=False,
                evidence={"trigger": self.trigger, "reason": "could not replay the trigger"},
                error=_describe(exc),
            )
        await ctx.sleep(self.settle_s)
        inner = await self.inner.evaluate(ctx)
        evidence: dict[str, Any] = {"trigger": self.trigger, "settle_s": self.settle_s}
        if not inner.passed:
            evidence["reason"] = f"unhealthy after replaying {self.trigger!r}"
        return OracleVerdict(name=self.name, passed=inner.passed, evidence=evidence, children=(inner,))

    def describe(self) -> Any:
        return {"replay": {"trigger": self.trigger, "settle_s": self.settle_s, "oracle": describe_oracle(self.inner)}}


@attrs.frozen(kw_only=True)
class AllOf:
    """Every child passes. Children run in order; after the first failure the rest are skipped
    (``short_circuit``), so a long ``sustained`` does not run when the baseline is already broken."""

    children: tuple[Oracle, ...] = attrs.field(converter=_oracles)
    short_circuit: bool = True
    name: str = "all"

    async def evaluate(self, ctx: OracleContext) -> OracleVerdict:
        verdicts: list[OracleVerdict] = []
        skipped: list[str] = []
        for child in self.children:
            if self.short_circuit and any(not v.passed for v in verdicts):
                skipped.append(child.name)
                continue
            verdicts.append(await child.evaluate(ctx))
        failed = [v.name for v in verdicts if not v.passed]
        evidence: dict[str, Any] = {"failed": failed}
        if skipped:
            evidence["skipped"] = skipped
        if failed:
            evidence["reason"] = "failed: " + ", ".join(failed)
        return OracleVerdict(name=self.name, passed=not failed and bool(verdicts), evidence=evidence, children=tuple(verdicts))

    def describe(self) -> Any:
        children = [describe_oracle(c) for c in self.children]
        return {"all": children} if self.short_circuit else {"all": {"oracles": children, "short_circuit": False}}


@attrs.frozen(kw_only=True)
class AnyOf:
    """At least one child passes (stops at the first that does)."""

    children: tuple[Oracle, ...] = attrs.field(converter=_oracles)
    name: str = "any"

    async def evaluate(self, ctx: OracleContext) -> OracleVerdict:
        verdicts: list[OracleVerdict] = []
        for child in self.children:
            verdict = await child.evaluate(ctx)
            verdicts.append(verdict)
            if verdict.passed:
                return OracleVerdict(name=self.name, passed=True, evidence={"passed_by": verdict.name}, children=tuple(verdicts))
        return OracleVerdict(
            name=self.name, passed=False, evidence={"reason": "no alternative passed"}, children=tuple(verdicts)
        )

    def describe(self) -> Any:
        return {"any": [describe_oracle(c) for c in self.children]}


@attrs.frozen(kw_only=True)
class _PluginOracle:
    """An oracle a plugin registered, with its failures turned into verdicts."""

    name: str
    impl: Any = attrs.field(eq=False)
    params: Mapping[str, Any] = attrs.field(factory=dict)

    async def evaluate(self, ctx: OracleContext) -> OracleVerdict:
        async def check() -> OracleVerdict:
            verdict = await self.impl.evaluate(ctx)
            if not isinstance(verdict, OracleVerdict):
                raise TypeError(f"oracle {self.name!r} returned {type(verdict).__name__}, not an OracleVerdict")
            return verdict

        return await _guarded(self.name, check)

    def describe(self) -> Any:
        return {self.name: dict(self.params)} if self.params else self.name


# Lower-case constructors, the vocabulary problem authors and Python hooks use.


def baseline_preserved(*, ignore: Sequence[str] = (), allow_replaced: Sequence[str] = ()) -> BaselinePreserved:
    return BaselinePreserved(ignore=tuple(ignore), allow_replaced=tuple(allow_replaced))


def fault_invariant(*, instances: Sequence[int] | None = None) -> FaultInvariant:
    return FaultInvariant(instances=instances)


def functional_slo(
    *, min_success_rate: float = 0.99, max_p95_ms: float | None = None, window_s: float = 30.0, min_requests: int = 20,
    max_content_error_rate: float = 0.01,
) -> FunctionalSLO:
    return FunctionalSLO(min_success_rate=min_success_rate, max_p95_ms=max_p95_ms, window_s=window_s,
                         min_requests=min_requests, max_content_error_rate=max_content_error_rate)


def workload_healthy(*, timeout_s: float = 30.0, interval: float = 2.0) -> WorkloadHealthy:
    return WorkloadHealthy(timeout_s=timeout_s, interval=interval)


def sustained(inner: Oracle, seconds: float, interval: float = 5.0) -> Sustained:
    return Sustained(inner=inner, seconds=seconds, interval=interval)


def replay(trigger: str, inner: Oracle, settle_s: float = 10.0) -> Replay:
    return Replay(trigger=trigger, inner=inner, settle_s=settle_s)


def all_of(*children: Oracle, short_circuit: bool = True) -> AllOf:
    return AllOf(children=children, short_circuit=short_circuit)


def any_of(*children: Oracle) -> AnyOf:
    return AnyOf(children=children)


# --------------------------------------------------------------------------------------------------
# Configuration
# --------------------------------------------------------------------------------------------------

DEFAULT_ORACLE_CONFIG: dict[str, Any] = {
    "all": ["baseline_preserved", "fault_invariant", "functional_slo", "workload_healthy"]}

_PATTERNS = {"type": "array", "items": {"type": "string", "minLength": 1}}
_NODE = "#/$defs/oracle"

#: The builtin leaves, as the records the builtin plugin registers (:mod:`.builtin`): each record's
#: ``config_schema`` is the leaf's parameters in :data:`ORACLE_SCHEMA`, and :func:`build_oracle`
#: builds a leaf with its record's factory, so a leaf is declared once.
BUILTIN_LEAVES: tuple[OracleSpec, ...] = (
    OracleSpec(
        name="baseline-preserved",
        summary="no workload deleted, scaled down, relabelled or replaced, and every untouched pod template as after deploy",
        kind="mitigation",
        factory=baseline_preserved,
        config_schema={"type": "object", "additionalProperties": False,
                       "properties": {"ignore": _PATTERNS, "allow_replaced": _PATTERNS}},
    ),
    OracleSpec(
        name="fault-invariant",
        summary="every fault instance's is_present check is false",
        kind="mitigation",
        factory=fault_invariant,
        config_schema={"type": "object", "additionalProperties": False,
                       "properties": {"instances": {"type": "array", "items": {"type": "integer", "minimum": 0}}}},
    ),
    OracleSpec(
        name="functional-slo",
        summary="workload success rate, answer content against the seeded data (and p95 latency) over a window",
        kind="mitigation",
        factory=functional_slo,
        config_schema={"type": "object", "additionalProperties": False, "properties": {
            "min_success_rate": {"type": "number", "minimum": 0, "maximum": 1},
            "max_p95_ms": {"type": ["number", "null"], "exclusiveMinimum": 0},
            "window_s": {"type": "number", "exclusiveMinimum": 0},
            "min_requests": {"type": "integer", "minimum": 0},
            "max_content_error_rate": {"type": "number", "minimum": 0, "maximum": 1},
        }},
    ),
    OracleSpec(
        name="workload-healthy",
        summary="each faulty workload's rollout complete, desired replicas ready, Service with ready endpoints",
        kind="mitigation",
        factory=workload_healthy,
        config_schema={"type": "object", "additionalProperties": False, "properties": {
            "timeout_s": {"type": "number", "minimum": 0},
            "interval": {"type": "number", "exclusiveMinimum": 0},
        }},
    ),
)


def _canonical(name: str) -> str:
    return name.strip().lower().replace("-", "_")


_LEAVES: dict[str, Callable[..., Oracle]] = {_canonical(spec.name): spec.factory for spec in BUILTIN_LEAVES}

#: combinators: syntax of the ``oracle:`` section, not registered records
_COMBINATORS: dict[str, Any] = {
    "all": {
        "oneOf": [
            {"type": "array", "items": {"$ref": _NODE}, "minItems": 1},
            {
                "type": "object",
                "required": ["oracles"],
                "additionalProperties": False,
                "properties": {
                    "oracles": {"type": "array", "items": {"$ref": _NODE}, "minItems": 1},
                    "short_circuit": {"type": "boolean"},
                },
            },
        ]
    },
    "any": {"type": "array", "items": {"$ref": _NODE}, "minItems": 1},
    "sustained": {
        "type": "object",
        "required": ["seconds"],
        "additionalProperties": False,
        "properties": {
            "seconds": {"type": "number", "exclusiveMinimum": 0},
            "interval": {"type": "number", "exclusiveMinimum": 0},
            "oracle": {"$ref": _NODE},
        },
    },
    "replay": {
        "type": "object",
        "required": ["trigger"],
        "additionalProperties": False,
        "properties": {
            "trigger": {"type": "string", "minLength": 1},
            "settle_s": {"type": "number", "minimum": 0},
            "oracle": {"$ref": _NODE},
        },
    },
}


def _oracle_schema(leaves: Sequence[OracleSpec]) -> dict[str, Any]:
    """The ``oracle:`` section's schema: the combinators, each leaf under its canonical name with its
    record's ``config_schema``, and any other name (an oracle a plugin registered) with an object."""
    keys = {**{k: _COMBINATORS[k] for k in ("all", "any")},
            **{_canonical(spec.name): dict(spec.config_schema) for spec in leaves},
            **{k: _COMBINATORS[k] for k in ("sustained", "replay")}}
    reserved = "|".join(keys)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://sregym.dev/schemas/oracle.schema.json",
        "title": "SREGym mitigation oracle composition",
        "$ref": _NODE,
        "$defs": {
            "oracle": {
                "description": "A mitigation oracle: a name, or an object with exactly one oracle key.",
                "oneOf": [
                    {"type": "string", "pattern": "^[a-z][a-z0-9_-]*$"},
                    {
                        "type": "object",
                        "minProperties": 1,
                        "maxProperties": 1,
                        "properties": keys,
                        "patternProperties": {
                            f"^(?!({reserved})$)[a-z][a-z0-9_-]*$": {
                                "type": "object",
                                "description": "parameters of an oracle a plugin registered",
                            }
                        },
                        "additionalProperties": False,
                    },
                ],
            }
        },
    }


#: JSON Schema of a problem file's ``oracle:`` section (self-contained: embed it anywhere), generated
#: from :data:`BUILTIN_LEAVES`.
ORACLE_SCHEMA: dict[str, Any] = _oracle_schema(BUILTIN_LEAVES)


def validate_oracle_config(config: Any, *, source: str | None = None) -> None:
    """Check ``config`` against :data:`ORACLE_SCHEMA`; raise ``ConfigError`` with JSON paths."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(ORACLE_SCHEMA)
    problems = sorted(validator.iter_errors(config), key=lambda e: list(e.absolute_path))
    if problems:
        errors = []
        for error in problems:
            # oneOf errors are vague at the top; the deepest context names the real problem
            best = jsonschema.exceptions.best_match([error])
            path = "oracle" + "".join(f"[{p!r}]" if isinstance(p, str) else f"[{p}]" for p in best.absolute_path)
            errors.append((path, best.message))
        raise ConfigError(
            "invalid oracle composition",
            errors=errors,
            source=source,
            hints=(
                "an oracle is a name (baseline_preserved, fault_invariant, functional_slo, workload_healthy) or an object with one key: "
                "all, any, sustained, replay, or a leaf with its parameters",
            ),
        )


def build_oracle(
    config: Any = None,
    *,
    extra: Mapping[str, OracleSpec | Callable[..., Any]] | None = None,
    source: str | None = None,
) -> Oracle:
    """Build an oracle tree from a problem file's ``oracle:`` section.

    :param config: the section (``None`` or empty: :data:`DEFAULT_ORACLE_CONFIG`).
    :param extra: oracles registered by plugins, name -> their :class:`~sregym_core.types.OracleSpec`
        (its ``config_schema`` checks the parameters first) or a bare ``factory(**params)``; the
        factory returns an object with ``async evaluate(ctx) -> OracleVerdict`` (names may use ``-``
        or ``_``).
    :param source: the file the section came from, for error messages.
    :raises ConfigError: on a schema violation or an unknown oracle name.
    """
    if config is None or config == {} or config == []:
        config = DEFAULT_ORACLE_CONFIG
    validate_oracle_config(config, source=source)
    plugins = {_canonical(k): v for k, v in (extra or {}).items()}
    return _build(config, plugins, "oracle", source)


def _build(node: Any, plugins: Mapping[str, OracleSpec | Callable[..., Any]], path: str, source: str | None) -> Oracle:
    if isinstance(node, str):
        return _leaf(node, {}, plugins, path, source)
    (key, value), = node.items()
    name = _canonical(key)
    where = f"{path}[{key!r}]"
    if name == "all":
        items, short = (value, True) if isinstance(value, list) else (value["oracles"], value.get("short_circuit", True))
        return AllOf(children=[_build(c, plugins, f"{where}[{i}]", source) for i, c in enumerate(items)], short_circuit=short)
    if name == "any":
        return AnyOf(children=[_build(c, plugins, f"{where}[{i}]", source) for i, c in enumerate(value)])
    if name == "sustained":
        inner = _build(value.get("oracle", "functional_slo"), plugins, f"{where}['oracle']", source)
        return Sustained(inner=inner, seconds=float(value["seconds"]), interval=float(value.get("interval", 5.0)))
    if name == "replay":
        inner = _build(value.get("oracle", "functional_slo"), plugins, f"{where}['oracle']", source)
        return Replay(trigger=value["trigger"], inner=inner, settle_s=float(value.get("settle_s", 10.0)))
    return _leaf(key, value, plugins, where, source)


def _leaf(key: str, params: Mapping[str, Any], plugins: Mapping[str, OracleSpec | Callable[..., Any]], path: str,
          source: str | None) -> Oracle:
    name = _canonical(key)
    if name in _LEAVES:
        return _LEAVES[name](**params)
    if name in plugins:
        registered = plugins[name]
        factory = registered.factory if isinstance(registered, OracleSpec) else registered
        if isinstance(registered, OracleSpec):  # the plugin's own schema for its parameters
            _check_params(key, params, registered, path, source)
        try:
            impl = factory(**params)
        except TypeError as exc:
            raise ConfigError(f"oracle {key!r} rejected its parameters", errors=[(path, str(exc))], source=source) from exc
        return _PluginOracle(name=name, impl=impl, params=dict(params))
    known = sorted(set(_LEAVES) | set(plugins) | {"all", "any", "sustained", "replay"})
    raise ConfigError(
        f"unknown mitigation oracle {key!r}",
        errors=[(path, f"no oracle named {key!r}")],
        source=source,
        hints=(f"known oracles: {', '.join(known)}", "plugins register more with the sregym_oracles hook"),
    )


def _check_params(key: str, params: Mapping[str, Any], spec: OracleSpec, path: str, source: str | None) -> None:
    """``params`` against the ``config_schema`` a plugin's oracle record declares, as a problem error
    with the JSON path of each bad value."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(dict(spec.config_schema))
    bad = sorted(validator.iter_errors(dict(params)), key=lambda e: list(e.absolute_path))
    if bad:
        errors = [(path + "".join(f"[{p!r}]" if isinstance(p, str) else f"[{p}]" for p in e.absolute_path), e.message)
                  for e in bad]
        raise ConfigError(f"oracle {key!r} rejected its parameters", errors=errors, source=source,
                          hints=(f"oracle {spec.name!r} takes the parameters its record's config_schema allows: "
                                 f"{', '.join(dict(spec.config_schema).get('properties', {})) or 'none named'}",))
