"""A fault context whose kubectl answers from an in-memory object store (no cluster, no binary).

:class:`RecordingFaultContext` records every kubectl call and serves the verbs fault code uses —
``get`` (one object or a list; ``-o json|yaml|name``; label selectors ``k=v``, ``k!=v``, ``k``,
``!k``), ``patch`` (merge, strategic — lists merged by their key —, JSON patch), ``apply``/``create``/``replace -f
-``, ``delete`` (by name, ``-l`` or ``--all``; a workload's deleted pod comes back from its current
template), ``scale``, ``label``/``annotate``, ``taint``, ``set env`` (``KEY=VALUE``, ``KEY-``, ``-e``,
``-c``) and ``set image``, ``rollout restart`` (stamps the template), ``rollout status``/``exec``/
``wait`` (recorded, no effect) — against objects seeded from the app's inventory and, where the app
ships manifest files, the ConfigMaps they define, each with its own keys (:func:`objects_for_app`).
A missing object is NotFound, as kubectl says it (raised when ``check``). A verb, option, output
format or selector it does not model is an error that says so (never a silent no-op). That is enough for the
contract suite's inject → is_present → recover → not present round trip of faults that change
Kubernetes objects, configuration faults included; faults that act inside a process (a datastore's
SQL, a syscall shim) need the live contract.
"""

from __future__ import annotations

import copy
import fnmatch
import functools
import json
import time
from pathlib import Path
from typing import Any

import attrs

from ..errors import FaultError
from ..faults import FaultContext
from ..types import AppSpec, ComponentSpec, FaultSpec, Target

_KINDS = {
    "deployment": "Deployment", "deployments": "Deployment", "deploy": "Deployment",
    "statefulset": "StatefulSet", "statefulsets": "StatefulSet", "sts": "StatefulSet",
    "daemonset": "DaemonSet", "daemonsets": "DaemonSet", "ds": "DaemonSet",
    "service": "Service", "services": "Service", "svc": "Service",
    "configmap": "ConfigMap", "configmaps": "ConfigMap", "cm": "ConfigMap",
    "secret": "Secret", "secrets": "Secret", "pod": "Pod", "pods": "Pod", "po": "Pod",
    "persistentvolumeclaim": "PersistentVolumeClaim", "persistentvolumeclaims": "PersistentVolumeClaim",
    "pvc": "PersistentVolumeClaim", "node": "Node", "nodes": "Node", "no": "Node",
    "networkpolicy": "NetworkPolicy", "networkpolicies": "NetworkPolicy", "netpol": "NetworkPolicy",
    "resourcequota": "ResourceQuota", "resourcequotas": "ResourceQuota", "quota": "ResourceQuota",
    "serviceaccount": "ServiceAccount", "serviceaccounts": "ServiceAccount", "sa": "ServiceAccount",
    "horizontalpodautoscaler": "HorizontalPodAutoscaler", "horizontalpodautoscalers": "HorizontalPodAutoscaler",
    "hpa": "HorizontalPodAutoscaler", "endpoints": "Endpoints", "ep": "Endpoints", "event": "Event", "events": "Event",
    "limitrange": "LimitRange", "limitranges": "LimitRange", "priorityclass": "PriorityClass",
    "priorityclasses": "PriorityClass", "poddisruptionbudget": "PodDisruptionBudget",
    "poddisruptionbudgets": "PodDisruptionBudget", "pdb": "PodDisruptionBudget",
}
_CLUSTER_SCOPED = {"Node", "PriorityClass"}


def _kind(text: str) -> str:
    base = text.split(".")[0].lower()
    return _KINDS.get(base, text[:1].upper() + text[1:])


def objects_for_app(app: AppSpec) -> list[dict]:
    """Plausible live objects for every component of ``app``: its workload (with a pod template that
    has its container, ports, env and config volume), its Service, its ConfigMap and one Node.

    A ConfigMap the app's manifest files define (in its namespace) is seeded as written there, with
    its own keys; one they do not define gets a small YAML file of its own component's settings."""
    objects: list[dict] = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-1", "labels": {}},
                            "spec": {}, "status": {"allocatable": {"cpu": "4", "memory": "8Gi"}}}]
    shipped = manifest_config_maps(app)
    for component in app.components:
        objects += [o for o in _component_objects(app, component)
                    if not (o["kind"] == "ConfigMap" and o["metadata"]["name"] in shipped)]
    return objects + list(shipped.values())


def rendered_objects(app: AppSpec) -> list[dict] | None:
    """The objects ``app``'s deploy applies (its :attr:`~AppSpec.render`, with its default params), as
    the API server would hold them after it: one running pod per workload from its template, on one
    Node. None when the app cannot render offline (then :func:`objects_for_app` is what there is)."""
    import yaml

    if app.render is None:
        return None
    objects: list[dict] = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-1", "labels": {}},
                            "spec": {}, "status": {"allocatable": {"cpu": "4", "memory": "8Gi"}}}]
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's, when PyYAML was built with it: 10x faster
    for doc in yaml.load_all(app.render(dict(app.params)), Loader=loader):
        if not isinstance(doc, dict) or not isinstance(doc.get("metadata"), dict) or not doc.get("kind"):
            continue
        obj = copy.deepcopy(doc)
        obj["metadata"].setdefault("namespace", app.namespace)
        objects.append(obj)
        if obj["kind"] in _WORKLOADS and obj["metadata"]["namespace"] == app.namespace:
            objects.append(_running_pod(obj, f"{obj['metadata']['name']}-0", app.namespace, "node-1"))
    return objects


def _running_pod(owner: dict, name: str, namespace: str, node: str) -> dict:
    """A ready pod made from ``owner``'s (a workload's) pod template, as its controller and the node would run it."""
    template = copy.deepcopy((owner.get("spec") or {}).get("template") or {})
    spec = template.get("spec") or {}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "labels": (template.get("metadata") or {}).get("labels") or {}},
            "spec": spec | {"nodeName": node},
            "status": {"phase": "Running", "containerStatuses": [
                {"name": c.get("name"), "ready": True, "restartCount": 0} for c in spec.get("containers", [])]}}


def manifest_config_maps(app: AppSpec) -> dict[str, dict]:
    """The ConfigMaps the app's manifest files define in its namespace, by name (files that do not
    read as YAML are skipped: an app built in code has none)."""
    import yaml

    found: dict[str, dict] = {}
    for path in app.manifests:
        files = sorted([*path.glob("*.yaml"), *path.glob("*.yml")]) if path.is_dir() else [path]
        for file in files:
            try:
                documents = _manifest_documents(str(file), file.stat().st_mtime_ns)
            except (OSError, yaml.YAMLError):
                continue
            for doc in documents:
                if isinstance(doc, dict) and doc.get("kind") == "ConfigMap" and isinstance(doc.get("metadata"), dict):
                    namespace = doc["metadata"].get("namespace") or app.namespace
                    if namespace == app.namespace and doc["metadata"].get("name"):
                        obj = copy.deepcopy(doc)
                        obj["metadata"]["namespace"] = namespace
                        found[obj["metadata"]["name"]] = obj
    return found


@functools.lru_cache(maxsize=256)
def _manifest_documents(path: str, _mtime_ns: int) -> tuple[Any, ...]:
    """A manifest file's documents, parsed once per version of the file (a replay builds hundreds of contexts of one
    app; callers copy what they keep)."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's, when PyYAML was built with it: 10x faster
    with open(path, encoding="utf-8") as handle:
        return tuple(yaml.load_all(handle.read(), Loader=loader))


def _component_objects(app: AppSpec, c: ComponentSpec) -> list[dict]:
    labels = dict(c.labels) or {"app": c.name}
    container: dict[str, Any] = {
        "name": c.container_name, "image": f"example/{c.name}:1.0",
        "env": [_env_var(app, c, name) for name in c.env],
        "ports": [{"containerPort": p, "protocol": "TCP"} for p in c.ports],
        "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"cpu": "1", "memory": "256Mi"}},
    }
    if c.ports:
        probe = {"tcpSocket": {"port": c.ports[0]}, "periodSeconds": 10, "failureThreshold": 3}
        container.update(livenessProbe=dict(probe), readinessProbe=dict(probe))
    pod_spec: dict[str, Any] = {"containers": [container], "serviceAccountName": "default", "dnsPolicy": "ClusterFirst"}
    out: list[dict] = []
    secret_refs = [e["valueFrom"]["secretKeyRef"] for e in container["env"] if "valueFrom" in e]
    for ref in secret_refs:
        out.append({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": ref["name"], "namespace": app.namespace},
                    "type": "Opaque", "data": {ref["key"]: "c2VjcmV0"}})
    for index, claim in enumerate(c.pvcs):
        container.setdefault("volumeMounts", []).append({"name": f"data-{index}", "mountPath": f"/data/{index}"})
        pod_spec.setdefault("volumes", []).append({"name": f"data-{index}", "persistentVolumeClaim": {"claimName": claim}})
    if c.config_map:
        container.setdefault("volumeMounts", []).append({"name": "config", "mountPath": "/etc/config"})
        pod_spec.setdefault("volumes", []).append({"name": "config", "configMap": {"name": c.config_map}})
        port = c.ports[0] if c.ports else 8080
        out.append({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": c.config_map, "namespace": app.namespace},
                    "data": {f"{c.name}.yaml": f"name: {c.name}\nport: {port}\ntimeout_ms: 1000\nretries: 3\n"}})
    workload: dict[str, Any] = {"apiVersion": "apps/v1", "kind": c.kind, "metadata": {"name": c.name, "namespace": app.namespace,
                                                                       "labels": dict(labels)},
                "spec": {"replicas": 1, "selector": {"matchLabels": dict(labels)},
                         # every tier shares a part-of label, as Helm charts and kustomize bases set it
                         "template": {"metadata": {"labels": {**labels, "app.kubernetes.io/part-of": app.name}},
                                      "spec": pod_spec}}}
    if c.kind == "DaemonSet":
        workload["spec"].pop("replicas")
    out.append(workload)
    out.append({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"{c.name}-0", "namespace": app.namespace,
                                                                 "labels": dict(labels)},
                "spec": copy.deepcopy(pod_spec) | {"nodeName": "node-1"},
                "status": {"phase": "Running", "containerStatuses": [{"name": c.container_name, "ready": True,
                                                                      "restartCount": 0}]}})
    for pvc in c.pvcs:
        out.append({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                    "metadata": {"name": pvc, "namespace": app.namespace},
                    "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
                    "status": {"phase": "Bound"}})
    if c.service_name:
        out.append({"apiVersion": "v1", "kind": "Service", "metadata": {"name": c.service_name, "namespace": app.namespace},
                    "spec": {"selector": dict(labels), "ports": [{"name": f"p{p}", "port": p, "targetPort": p,
                                                                  "protocol": "TCP"} for p in c.ports]}})
    return out


def _env_var(app: AppSpec, c: ComponentSpec, name: str) -> dict:
    if name.endswith("_ADDR"):  # a peer's address: host:port of the component it names, when there is one
        peer = app.component(name[:-5].lower().replace("_", "-"))
        port = peer.ports[0] if peer and peer.ports else 8080
        return {"name": name, "value": f"{peer.name if peer else name[:-5].lower()}:{port}"}
    if "PASSWORD" in name or "SECRET" in name or "TOKEN" in name:
        return {"name": name, "valueFrom": {"secretKeyRef": {"name": f"{c.name}-credentials", "key": name.lower()}}}
    return {"name": name, "value": f"{name.lower()}-value"}


@attrs.define
class RecordingFaultContext(FaultContext):
    """A fault context whose kubectl records calls and answers from :attr:`objects`."""

    calls: list[tuple[str, ...]] = attrs.Factory(list)
    objects: dict[tuple[str, str, str], dict] = attrs.Factory(dict)
    _stamps: int = 0
    #: a preview (:meth:`seeded`): a verb that acts inside a process, and any call after this monotonic
    #: time (a fault polling for something only a live cluster would do), raise :class:`Unpreviewable`
    strict_until: float | None = None

    def __attrs_post_init__(self) -> None:
        if not self.objects:
            for obj in objects_for_app(self.app):
                self._store(obj)

    @classmethod
    def seeded(cls, app: AppSpec, objects: list[dict], *, budget_s: float = 2.0) -> RecordingFaultContext:
        """A strict context holding exactly ``objects`` (say :func:`rendered_objects`), not the plausible
        ones, for previewing an injection: what it cannot answer as a cluster would (a process's output,
        a controller's progress within ``budget_s`` seconds) raises :class:`Unpreviewable`."""
        return cls(kubeconfig=Path("/nonexistent"), namespace=app.namespace, app=app,
                   objects=dict(_stored(obj, app.namespace) for obj in objects), strict_until=time.monotonic() + budget_s)

    def child(self) -> RecordingFaultContext:
        # fresh state, but the same calls log and object store (one cluster, several fault instances)
        child = attrs.evolve(self, state={})
        child.calls, child.objects = self.calls, self.objects
        return child

    # ------------------------------------------------------------------ kubectl

    def kubectl(self, *args: str, input: str | None = None, check: bool = True, timeout: float = 60.0) -> str:
        self.calls.append(args)
        if self.strict_until is not None:
            verb = next((a for a in args if not a.startswith("-")), "")
            if verb in _PROCESS_VERBS or (verb == "rollout" and "status" in args):
                raise Unpreviewable(f"kubectl {verb} needs a live process")
            if time.monotonic() > self.strict_until:
                raise Unpreviewable("the fault waits for what only a live cluster does")
        try:
            return self._kubectl(args, input)
        except _KubectlFailed as exc:
            if check:  # as FaultContext.kubectl: a failing kubectl raises only when checked
                raise FaultError(f"kubectl {' '.join(args)} failed: {exc}") from exc
            return ""

    def _kubectl(self, args: tuple[str, ...], input: str | None) -> str:
        words, namespace, flags = _parse(args, self.namespace)
        if not words:
            return ""
        verb, rest = words[0], words[1:]
        if verb == "get" and rest:
            return self._get(rest, namespace, flags)
        if verb == "patch" and len(rest) >= 1:
            kind, name = _ref(rest)
            if "p" not in flags:
                raise _unmodelled(f"patch {kind.lower()} {name}", "without a body: it reads -p/--patch")
            self._patch(kind, name, namespace, flags.get("type", "strategic"), json.loads(flags["p"]))
            return ""
        if verb in ("apply", "create", "replace") and "dry-run" in flags:
            # a server-side dry run answers with what admission would store: there is no admission here
            raise _unmodelled(f"{verb} --dry-run", "it runs no admission webhooks, so it cannot say what the API "
                                                   "server would store")
        if verb in ("apply", "create", "replace") and input:
            for doc in _documents(input):
                kind, name = doc["kind"], doc["metadata"]["name"]
                exists = self._lookup(kind, name, doc["metadata"].get("namespace") or namespace) is not None
                if verb == "create" and exists:
                    raise _KubectlFailed(f'Error from server (AlreadyExists): {kind.lower()}s "{name}" already exists')
                if verb == "replace" and not exists:
                    raise _not_found(kind, name)
                self._store(doc, namespace)
            return ""
        if verb == "delete" and rest:
            self._delete(rest, namespace, flags)
            return ""
        if verb == "scale" and rest:
            kind, name = _ref(rest)
            obj = self._lookup(kind, name, namespace)
            if obj is None:
                raise _not_found(kind, name)
            if "replicas" not in flags:
                raise _KubectlFailed("error: --replicas=COUNT is required")
            obj["spec"]["replicas"] = int(flags["replicas"])
            return ""
        if verb in ("label", "annotate") and flags.get("f") == "-" and input:
            # ``-f -``: the objects the documents name (as after ``apply -f -`` of the same input)
            for doc in _documents(input):
                kind, name = doc["kind"], doc["metadata"]["name"]
                obj = self._lookup(kind, name, doc["metadata"].get("namespace") or namespace)
                if obj is None:
                    raise _not_found(kind, name)
                _set_metadata(obj, "labels" if verb == "label" else "annotations", rest)
            return ""
        if verb in ("label", "annotate") and len(rest) >= 2:
            kind, name = _ref(rest[:2] if "/" not in rest[0] else rest[:1])
            obj = self._lookup(kind, name, namespace)
            if obj is None:
                raise _not_found(kind, name)
            _set_metadata(obj, "labels" if verb == "label" else "annotations", rest)
            return ""
        if verb == "taint" and len(rest) >= 2:
            self._taint(rest[1:])
            return ""
        if verb == "set":
            return self._set(args, namespace)
        if verb == "rollout" and rest[:1] == ["restart"] and len(rest) >= 2:
            self._restart(rest[1:], namespace)
            return ""
        if verb == "rollout" and rest[:1] not in (["status"], ["history"]):
            raise _unmodelled(" ".join(words[:2]), "it keeps no revision history and runs no controller")
        if verb in _RECORDED_ONLY or (verb == "create" and "raw" in flags):
            return ""
        raise _unmodelled(" ".join(words[:2]))

    # ------------------------------------------------------------------ kubectl set

    def _set(self, args: tuple[str, ...], namespace: str) -> str:
        """``kubectl set env`` and ``kubectl set image`` on workloads, as kubectl changes them."""
        words = list(args[args.index("set") + 1:])
        what = words.pop(0) if words else ""
        if what not in ("env", "image"):
            raise _unmodelled(f"set {what}".strip())
        refs, changes, containers, listing = _set_arguments(words, what)
        objects = []
        for kind, name in refs:
            obj = self._lookup(kind, name, namespace)
            if obj is None:
                raise _not_found(kind, name)
            if "template" not in obj.get("spec", {}):
                raise _unmodelled(f"set {what} on a {kind} (kubectl changes a pod template)")
            objects.append(obj)
        if not objects:
            raise FaultError(f"kubectl set {what}: no resource named (give TYPE/NAME)")
        if listing:
            return "".join(_env_listing(obj, containers) for obj in objects)
        for obj in objects:
            spec = obj["spec"]["template"]["spec"]
            for container in [*(spec.get("initContainers") or []), *spec.get("containers", [])]:
                if what == "image":
                    wanted = changes.get(container["name"], changes.get("*"))
                    if wanted is not None:
                        container["image"] = wanted
                elif any(fnmatch.fnmatchcase(container["name"], pattern) for pattern in containers) \
                        and container in spec.get("containers", []):
                    _set_env(container, changes)
        return ""

    def _delete(self, rest: list[str], namespace: str, flags: dict[str, str]) -> None:
        """``kubectl delete`` of named objects, or of every object of a kind a selector (or ``--all``)
        picks; a missing name is NotFound unless ``--ignore-not-found``. A deleted pod that a workload
        owns comes back as a new one from that workload's current template (its controller's job)."""
        ignore = "ignore-not-found" in flags and flags["ignore-not-found"] != "false"
        if "/" in rest[0]:
            refs = [_ref([word]) for word in rest]
        else:
            kind = _kind(rest[0])
            refs = [(kind, name) for name in rest[1:]]
            if not refs and ("l" in flags or "all" in flags):
                refs = [(kind, o["metadata"]["name"]) for (k, ns, _n), o in sorted(self.objects.items())
                        if k == kind and ns == _ns(kind, namespace) and _selected(o, flags.get("l"), "delete")]
            elif not refs:
                raise _unmodelled(f"delete {rest[0]}", "without a name: give a name, -l SELECTOR or --all")
        for kind, name in refs:
            gone = self.objects.pop((kind, _ns(kind, namespace), name), None)
            if gone is None and not ignore:
                raise _not_found(kind, name)
            if gone is not None and kind == "Pod":
                self._respawn(gone, namespace)

    def _owner(self, pod: dict, namespace: str) -> dict | None:
        labels = pod["metadata"].get("labels") or {}
        for (kind, ns, _name), obj in sorted(self.objects.items()):
            wanted = (obj.get("spec", {}).get("selector") or {}).get("matchLabels") or {}
            if kind in _WORKLOADS and ns == namespace and wanted and wanted.items() <= labels.items():
                return obj
        return None

    def _respawn(self, pod: dict, namespace: str) -> None:
        owner = self._owner(pod, namespace)
        if owner is None:
            return  # a bare pod: nothing brings it back
        name = pod["metadata"]["name"]
        if owner["kind"] != "StatefulSet":  # a StatefulSet's pod keeps its name; others get a new one
            base, index = owner["metadata"]["name"], 0
            while ("Pod", namespace, f"{base}-{index}") in self.objects or f"{base}-{index}" == name:
                index += 1
            name = f"{base}-{index}"
        self._store(_running_pod(owner, name, namespace, pod.get("spec", {}).get("nodeName", "node-1")))

    def _restart(self, refs: list[str], namespace: str) -> None:
        """``kubectl rollout restart``: stamps the pod template, as kubectl does (a new rollout)."""
        pairs = [_ref([word]) for word in refs] if "/" in refs[0] else [(_kind(refs[0]), n) for n in refs[1:]]
        for kind, name in pairs:
            obj = self._lookup(kind, name, namespace)
            if obj is None:
                raise _not_found(kind, name)
            if "template" not in obj.get("spec", {}):
                raise _KubectlFailed(f"error: {kind.lower()}s \"{name}\" restarting is not supported")
            self._stamps += 1
            annotations = obj["spec"]["template"].setdefault("metadata", {}).setdefault("annotations", {})
            annotations["kubectl.kubernetes.io/restartedAt"] = f"offline-restart-{self._stamps}"

    def _taint(self, words: list[str]) -> None:
        specs = [w for w in words if ":" in w or "=" in w or w.endswith("-")]
        for name in [w for w in words if w not in specs]:
            node = self._lookup("Node", name, "")
            if node is None:
                raise _not_found("Node", name)
            taints = node["spec"].setdefault("taints", [])
            for spec in specs:
                key = spec.split("=")[0].split(":")[0].rstrip("-")
                taints[:] = [t for t in taints if t["key"] != key]
                if not spec.endswith("-"):
                    value = spec.partition("=")[2].partition(":")[0] if "=" in spec else ""
                    taints.append({"key": key, "value": value, "effect": spec.rpartition(":")[2]})

    def _get(self, rest: list[str], namespace: str, flags: dict[str, str]) -> str:
        output = flags.get("o")
        if output not in (None, "json", "yaml", "name"):  # JSON reads as YAML too
            raise _unmodelled(f"get -o {output.partition('=')[0]}", "it prints -o json, -o yaml and -o name")
        kind, name = _ref(rest)
        if name:
            obj = self._lookup(kind, name, namespace)
            if obj is None:
                if "ignore-not-found" in flags:
                    return ""
                raise _not_found(kind, name)
            return json.dumps(obj)
        selector = flags.get("l") or flags.get("selector")
        items = [o for (k, ns, _n), o in sorted(self.objects.items())
                 if k == kind and (ns == _ns(kind, namespace) or "A" in flags or "all-namespaces" in flags)
                 and _selected(o, selector, "get")]
        if flags.get("o") == "name":
            return "".join(f"{kind.lower()}/{o['metadata']['name']}\n" for o in items)
        return json.dumps({"apiVersion": "v1", "kind": "List", "items": items})

    def _patch(self, kind: str, name: str, namespace: str, patch_type: str, body: Any) -> None:
        obj = self._lookup(kind, name, namespace)
        if obj is None:
            raise _not_found(kind, name)
        if patch_type == "json":
            patched = apply_json_patch(obj, body)
        elif patch_type == "merge":
            patched = merge_patch(obj, body)
        elif patch_type == "strategic":  # kubectl's default
            directive = _unknown_directive(body)
            if directive:
                raise _unmodelled(f"patch {kind.lower()} {name}", f"the directive {directive} of a strategic merge")
            patched = strategic_merge_patch(obj, body)
        else:
            raise _unmodelled(f"patch --type {patch_type}", "the types are json, merge and strategic")
        self.objects[(kind, _ns(kind, namespace), name)] = patched

    def _lookup(self, kind: str, name: str, namespace: str) -> dict | None:
        return self.objects.get((kind, _ns(kind, namespace), name))

    def _store(self, obj: dict, namespace: str | None = None) -> None:
        key, stored = _stored(obj, namespace or self.namespace)
        self.objects[key] = stored


#: verbs that read, wait or act inside a process: recorded, no effect on the stored objects
_RECORDED_ONLY = frozenset({"rollout", "exec", "wait", "logs", "describe", "top", "auth", "events", "version",
                            "api-resources", "cluster-info", "port-forward"})


_WORKLOADS = frozenset({"Deployment", "StatefulSet", "DaemonSet"})


#: verbs whose answer comes from a process in a pod (a strict context cannot preview them)
_PROCESS_VERBS = frozenset({"exec", "logs", "wait", "top", "port-forward", "attach", "cp", "debug", "run"})


class Unpreviewable(Exception):  # noqa: N818 - not a FaultError on purpose: no fault code may swallow it as one
    """A strict :class:`RecordingFaultContext` was asked what only a live cluster can answer."""


class _KubectlFailed(FaultError):
    """What a real kubectl would fail with (NotFound, a missing flag): raised only when checked."""


def _set_metadata(obj: dict, field: str, words: list[str]) -> None:
    """``KEY=VALUE`` sets and ``KEY-`` removes a label or annotation, as ``kubectl label/annotate``."""
    for pair in [w for w in words if "=" in w or w.endswith("-")]:
        meta = obj["metadata"].setdefault(field, {})
        if pair.endswith("-"):
            meta.pop(pair[:-1], None)
        else:
            key, _, value = pair.partition("=")
            meta[key] = value


def _unmodelled(what: str, why: str = "") -> Exception:
    return FaultError(f"the offline kubectl of the contract kit does not model `kubectl {what}`" + (f" ({why})" if why else ""),
                      hints=("use a verb it models (get, patch, apply/create/replace -f -, delete, scale, label, "
                             "annotate, taint, set env, set image), or list the fault in live_only = {name: why} "
                             "so the live contract proves it",))


def _set_arguments(words: list[str], what: str) -> tuple[list[tuple[str, str]], dict[str, str | None], list[str], bool]:
    """(resources, changes, container patterns, --list) of ``kubectl set env|image`` arguments;
    ``changes`` maps a variable (or container) to its new value, None to remove it."""
    refs: list[tuple[str, str]] = []
    changes: dict[str, str | None] = {}
    containers = ["*"]
    listing = False
    plain: list[str] = []
    index = 0
    while index < len(words):
        word = words[index]
        key, eq, value = word.partition("=")
        if word.startswith("-"):
            takes = key in ("-c", "--containers", "-e", "--env", "-n", "--namespace")
            if takes and not eq:
                index += 1
                value = words[index] if index < len(words) else ""
            if key in ("-c", "--containers"):
                containers = [value]
            elif key in ("-e", "--env"):
                name, _, env_value = value.partition("=")
                changes[name] = env_value
            elif key == "--list":
                listing = True
            elif key not in ("-n", "--namespace", "--overwrite") and not key.startswith("--kubeconfig"):
                raise _unmodelled(f"set {what} {key}")
        elif "/" in word and "=" not in word:
            kind, _, name = word.partition("/")
            refs.append((_kind(kind), name))
        elif "=" in word:
            name, _, new = word.partition("=")
            changes[name] = new
        elif what == "env" and word.endswith("-"):
            changes[word[:-1]] = None
        else:
            plain.append(word)
        index += 1
    if plain:  # TYPE NAME [NAME...]
        kind = _kind(plain[0])
        refs += [(kind, name) for name in plain[1:]]
    return refs, changes, containers, listing


def _set_env(container: dict, changes: dict[str, str | None]) -> None:
    env = container.setdefault("env", [])
    for name, value in changes.items():
        if value is None:
            env[:] = [item for item in env if item.get("name") != name]
            continue
        for item in env:
            if item.get("name") == name:
                item.pop("valueFrom", None)
                item["value"] = value
                break
        else:
            env.append({"name": name, "value": value})
    if not env:
        container.pop("env")


def _env_listing(obj: dict, containers: list[str]) -> str:
    """What ``kubectl set env --list`` prints for one workload."""
    lines = []
    for container in obj["spec"]["template"]["spec"].get("containers", []):
        if not any(fnmatch.fnmatchcase(container["name"], pattern) for pattern in containers):
            continue
        lines.append(f"# {obj['kind']} {obj['metadata']['name']}, container {container['name']}")
        for item in container.get("env") or []:
            if "value" in item:
                lines.append(f"{item['name']}={item['value']}")
            else:
                lines.append(f"# {item['name']} from {next(iter(item.get('valueFrom') or {'a reference': 0}))}")
    return "".join(line + "\n" for line in lines)


def _stored(obj: dict, namespace: str) -> tuple[tuple[str, str, str], dict]:
    """(its key in the store, a copy of ``obj`` as the API server holds it): in ``namespace`` unless it names its own
    or is cluster-scoped; a new pod without status is Pending."""
    kind = obj["kind"]
    if kind == "Pod" and "status" not in obj:
        obj = {**obj, "status": {"phase": "Pending"}}  # what the API server answers for a new pod
    ns = _ns(kind, obj["metadata"].get("namespace") or namespace)
    return (kind, ns, obj["metadata"]["name"]), copy.deepcopy(obj)


def _ns(kind: str, namespace: str) -> str:
    return "" if kind in _CLUSTER_SCOPED else namespace


def _not_found(kind: str, name: str) -> Exception:
    return _KubectlFailed(f'Error from server (NotFound): {kind.lower()}s "{name}" not found')


def _parse(args: tuple[str, ...], namespace: str) -> tuple[list[str], str, dict[str, str]]:
    words: list[str] = []
    flags: dict[str, str] = {}
    items = list(args)
    i = 0
    while i < len(items):
        arg = items[i]
        if arg.startswith("-"):
            key, eq, value = arg.lstrip("-").partition("=")
            takes_value = key in ("n", "namespace", "p", "patch", "type", "o", "output", "l", "selector", "f",
                                  "filename", "replicas", "c", "container", "timeout")
            if not eq and takes_value and i + 1 < len(items):
                value = items[i + 1]
                i += 1
            flags[{"namespace": "n", "patch": "p", "output": "o", "selector": "l"}.get(key, key)] = value
        else:
            words.append(arg)
        i += 1
    return words, flags.get("n", namespace), flags


def _ref(rest: list[str]) -> tuple[str, str]:
    if "/" in rest[0]:
        kind, _, name = rest[0].partition("/")
        return _kind(kind), name
    return _kind(rest[0]), (rest[1] if len(rest) > 1 else "")


def _selected(obj: dict, selector: str | None, verb: str) -> bool:
    """Whether ``obj``'s labels meet a label selector of equality terms (``k=v``, ``k==v``, ``k!=v``)
    and existence terms (``k``, ``!k``); set-based terms (``k in (a,b)``) are refused, not guessed."""
    if not selector:
        return True
    if "(" in selector or " in " in f" {selector} " or " notin " in f" {selector} ":
        raise _unmodelled(f"{verb} -l '{selector}'", "set-based selectors; use k=v, k!=v, k or !k")
    labels = obj.get("metadata", {}).get("labels") or {}
    for term in (t.strip() for t in selector.split(",")):
        if "!=" in term:
            key, _, value = term.partition("!=")
            if labels.get(key.strip()) == value.strip():
                return False
        elif "=" in term:
            key, _, value = term.replace("==", "=").partition("=")
            if labels.get(key.strip()) != value.strip():
                return False
        elif term.startswith("!"):
            if term[1:].strip() in labels:
                return False
        elif term not in labels:
            return False
    return True


def _documents(text: str) -> list[dict]:
    import yaml

    docs = [d for d in yaml.safe_load_all(text) if d]
    out: list[dict] = []
    for doc in docs:
        out += doc["items"] if doc.get("kind") == "List" else [doc]
    return out


#: the lists a strategic merge patch merges item by item, by the key the Kubernetes API declares for
#: them (``patchMergeKey``); every other list is replaced whole, as a merge patch does
_MERGE_KEYS = {"containers": "name", "initContainers": "name", "ephemeralContainers": "name", "volumes": "name",
               "env": "name", "imagePullSecrets": "name", "volumeMounts": "mountPath", "hostAliases": "ip",
               "ports": "containerPort"}
_DIRECTIVES = frozenset({"$patch"})


def _unknown_directive(patch: Any) -> str:
    """The first ``$`` directive of a strategic patch this fake does not apply ("" when none)."""
    if isinstance(patch, list):
        return next((d for d in map(_unknown_directive, patch) if d), "")
    if isinstance(patch, dict):
        for key, value in patch.items():
            if key.startswith("$") and key not in _DIRECTIVES:
                return key
            found = _unknown_directive(value)
            if found:
                return found
    return ""


def strategic_merge_patch(target: Any, patch: Any) -> Any:
    """A strategic merge patch (kubectl patch's default type) as the API server applies it to the
    fields faults touch: maps merge as in a merge patch, the lists of :data:`_MERGE_KEYS` merge item
    by item by their key (an item with ``$patch: delete`` removes its match), other lists are replaced."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        elif isinstance(value, list) and key in _MERGE_KEYS and isinstance(result.get(key), list):
            result[key] = _merge_list(result[key], value, _MERGE_KEYS[key])
        elif isinstance(value, list):
            result[key] = [strategic_merge_patch({}, item) if isinstance(item, dict) else copy.deepcopy(item)
                           for item in value if not (isinstance(item, dict) and item.get("$patch") == "delete")]
        else:
            result[key] = strategic_merge_patch(result.get(key), value)
    return result


def _merge_list(items: list, patch: list, merge_key: str) -> list:
    merged = copy.deepcopy(items)
    for change in patch:
        if not isinstance(change, dict):
            return copy.deepcopy(patch)  # a list of scalars is replaced
        key = merge_key if merge_key in change or merge_key != "containerPort" else "port"  # a Service's ports
        index = next((i for i, item in enumerate(merged) if isinstance(item, dict) and item.get(key) == change.get(key)),
                     None)
        if change.get("$patch") == "delete":
            if index is not None:
                del merged[index]
        elif index is None:
            merged.append(strategic_merge_patch({}, change))
        else:
            merged[index] = strategic_merge_patch(merged[index], change)
    return merged


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch (``kubectl patch --type merge``): a list is replaced whole."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def apply_json_patch(target: Any, operations: list[dict]) -> Any:
    """RFC 6902 JSON patch (add, remove, replace, test, copy, move)."""
    doc = copy.deepcopy(target)
    for op in operations:
        path = op["path"]
        if op["op"] in ("add", "replace"):
            doc = _set(doc, path, copy.deepcopy(op["value"]), insert=op["op"] == "add")
        elif op["op"] == "remove":
            doc = _remove(doc, path)
        elif op["op"] == "test":
            if _resolve(doc, path) != op["value"]:
                raise ValueError(f"json patch test failed at {path}")
        elif op["op"] in ("copy", "move"):
            value = copy.deepcopy(_resolve(doc, op["from"]))
            if op["op"] == "move":
                doc = _remove(doc, op["from"])
            doc = _set(doc, path, value, insert=True)
    return doc


def _tokens(path: str) -> list[str]:
    return [t.replace("~1", "/").replace("~0", "~") for t in path.split("/")[1:]] if path else []


def _resolve(doc: Any, path: str) -> Any:
    node = doc
    for token in _tokens(path):
        node = node[int(token)] if isinstance(node, list) else node[token]
    return node


def _set(doc: Any, path: str, value: Any, *, insert: bool) -> Any:
    tokens = _tokens(path)
    if not tokens:
        return value
    parent = _resolve(doc, "/" + "/".join(t.replace("~", "~0").replace("/", "~1") for t in tokens[:-1])) \
        if len(tokens) > 1 else doc
    last = tokens[-1]
    if isinstance(parent, list):
        if last == "-":
            parent.append(value)
        elif insert:
            parent.insert(int(last), value)
        else:
            parent[int(last)] = value
    else:
        if not insert and last not in parent:
            raise ValueError(f"json patch replace of a missing path {path}")
        parent[last] = value
    return doc


def _remove(doc: Any, path: str) -> Any:
    tokens = _tokens(path)
    parent = _resolve(doc, "/" + "/".join(t.replace("~", "~0").replace("/", "~1") for t in tokens[:-1])) \
        if len(tokens) > 1 else doc
    last = tokens[-1]
    if isinstance(parent, list):
        del parent[int(last)]
    else:
        del parent[last]
    return doc


def recorded_fault(host: Any, fault: str, app: str, component: str, *,
                   context: type[RecordingFaultContext] = RecordingFaultContext,
                   ) -> tuple[FaultSpec, Target, RecordingFaultContext]:
    """``host``'s fault ``fault``, its target ``component`` of ``app`` and a fresh recording context over the
    app's objects (``context``: a subclass that answers more of kubectl), for offline tests of one fault."""
    app_spec = host.get_apps()[app]
    target = Target(app=app_spec, component=app_spec.component(component), namespace=app_spec.namespace)
    ctx = context(kubeconfig=Path("/nonexistent"), namespace=target.namespace, app=app_spec).child()
    return host.get_faults()[fault], target, ctx
