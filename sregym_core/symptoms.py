"""A problem's user-visible symptom, and observing it on the live system.

A problem file declares what its fault does to the system as a user or an on-call engineer sees it
(``symptom:`` in the problem file)::

    symptom: slo-drop                       # users' requests fail (or crawl)
    symptom: [pods-not-ready, slo-drop]     # every listed one must show
    symptom: alert-firing HighErrorRate     # a Prometheus alert fires
    symptom: error-logs                     # the faulty workload, or a client of it, logs errors
    symptom: latent                         # nothing shows until something else happens

``sregym validate`` observes it after injection and before any agent acts
(:func:`observe_symptoms`, with the engine's probes of the live cluster,
:func:`sregym_core.conductor.symptom_probes.live_probes`): a fault that changes a value but hurts nobody (a bad image on a
Deployment whose old pod keeps serving) is not a problem an SRE would be paged for, and validation
reports it unsound.

.. versionadded:: 0.2
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

#: the symptom kinds a problem may declare (``alert-firing`` takes an alert name)
KINDS = ("slo-drop", "pods-not-ready", "alert-firing", "error-logs", "latent")
#: an SLO drop: success rate under this over a short window, or p95 over SLOW_P95_MS
DROP_SUCCESS_RATE = 0.95
SLOW_P95_MS = 1000.0
_ERROR_LINE = re.compile(r'(?i)("level"\s*:\s*"(error|critical|fatal)"|\blevel=(error|fatal)\b|\bERROR\b|Traceback|'
                         r'\bFATAL\b|\bpanic\b)')


def normalize(value: Any) -> tuple[str, ...]:
    """The declared symptoms as a tuple of ``kind`` or ``alert-firing <name>`` strings.

    Accepts a string, a list of strings, or ``{latent: true}``; raises ValueError otherwise.
    """
    if value is None:
        return ()
    if isinstance(value, Mapping):
        if value.get("latent") is True and set(value) <= {"latent", "reason"}:
            return ("latent",)
        raise ValueError("symptom object must be {latent: true} (optionally with a reason)")
    items = [value] if isinstance(value, str) else list(value)
    out = []
    for item in items:
        text = " ".join(str(item).split())
        kind = text.split(" ", 1)[0]
        if kind not in KINDS:
            raise ValueError(f"unknown symptom {text!r}; known: {', '.join(KINDS)}")
        if kind == "alert-firing" and " " not in text:
            raise ValueError("alert-firing needs the alert name: 'alert-firing <AlertName>'")
        if kind != "alert-firing" and text != kind:
            raise ValueError(f"symptom {kind!r} takes no argument")
        out.append(text)
    if "latent" in out and len(out) > 1:
        raise ValueError("a latent problem declares no other symptom")
    return tuple(out)


# ------------------------------------------------------------------ probes (pure, over observed data)


def slo_dropped(stats: Mapping[str, Any]) -> str | None:
    """Evidence that users suffer, from a workload stats window, or None."""
    count = int(stats.get("count") or 0)
    if count == 0:
        return None
    rate = stats.get("success_rate")
    if rate is not None and float(rate) < DROP_SUCCESS_RATE:
        return f"success rate {float(rate):.3f} over {count} requests"
    p95 = stats.get("p95_ms")
    if p95 is not None and float(p95) > SLOW_P95_MS:
        return f"p95 latency {float(p95):.0f} ms"
    return None


def _ready(pod: Mapping[str, Any]) -> bool:
    if (pod.get("metadata") or {}).get("deletionTimestamp"):
        return False
    conditions = {c.get("type"): c.get("status") for c in (pod.get("status") or {}).get("conditions") or []}
    return conditions.get("Ready") == "True"


def _selected(selector: Mapping[str, Any] | None, labels: Mapping[str, Any] | None) -> bool:
    match = dict((selector or {}).get("matchLabels") or {})
    labels = labels or {}
    return bool(match) and all(labels.get(k) == v for k, v in match.items())


def pods_not_ready(faulty: Sequence[Mapping[str, Any]], objects: Sequence[Mapping[str, Any]],
                   baseline: Sequence[Mapping[str, Any]] = ()) -> str | None:
    """Evidence that a faulty workload lacks ready pods (or its Service endpoints), or None."""
    by_key = {(o.get("kind"), (o.get("metadata") or {}).get("namespace"), (o.get("metadata") or {}).get("name")): o
              for o in objects}
    before = {(o.get("kind"), (o.get("metadata") or {}).get("namespace"), (o.get("metadata") or {}).get("name")): o
              for o in baseline}
    pods = [o for o in objects if o.get("kind") == "Pod"]
    found = []
    for target in faulty:
        key = (target["kind"], target["namespace"], target["name"])
        obj = by_key.get(key)
        label = f"{target['kind']} {target['namespace']}/{target['name']}"
        if obj is None:
            found.append(f"{label} does not exist")
            continue
        selector = (obj.get("spec") or {}).get("selector")
        mine = [p for p in pods if (p.get("metadata") or {}).get("namespace") == target["namespace"]
                and _selected(selector, (p.get("metadata") or {}).get("labels"))
                and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")]
        waiting = [p["metadata"]["name"] for p in mine if not _ready(p)]
        if waiting:
            found.append(f"{label}: pod(s) not Ready: {', '.join(sorted(waiting)[:3])}")
            continue
        wanted = (before.get(key) or obj).get("spec", {}).get("replicas", 1)
        ready = sum(1 for p in mine if _ready(p))
        if target["kind"] in ("Deployment", "StatefulSet") and ready < max(1, int(wanted or 0)):
            found.append(f"{label}: {ready}/{max(1, int(wanted or 0))} pods Ready")
            continue
        service = target.get("service")
        if service:
            endpoints = by_key.get(("Endpoints", target["namespace"], service))
            svc = by_key.get(("Service", target["namespace"], service))
            if svc is None:
                found.append(f"Service {target['namespace']}/{service} does not exist")
            elif endpoints is not None and not any(s.get("addresses") for s in endpoints.get("subsets") or []):
                found.append(f"Service {target['namespace']}/{service} has no ready endpoints")
    return "; ".join(found) or None


def alert_firing(alerts: Sequence[Mapping[str, Any]], name: str) -> str | None:
    for alert in alerts:
        if (alert.get("labels") or {}).get("alertname") == name and alert.get("state") == "firing":
            return f"alert {name} firing"
    return None


def error_lines(text: str) -> list[str]:
    return [line.strip()[:200] for line in text.splitlines() if _ERROR_LINE.search(line)]


_WORKLOAD_KINDS = ("Deployment", "StatefulSet", "DaemonSet")


def _meta(obj: Mapping[str, Any], key: str) -> Any:
    return (obj.get("metadata") or {}).get(key)


_HOST_KEY = r"[\w-]*(?:host|addr|address|server|endpoint|url)[\w-]*"


def _address_pattern(service: str, namespace: str) -> re.Pattern[str]:
    """The Service named as an address in JSON text: ``name:port``, ``name.<namespace>...``,
    ``name.svc...``, or the value of a host-like key (``host: name``, ``{"name": "X_HOST", "value":
    "name"}``); not the same word in prose (a flag's description) or as a database's name."""
    name, end = re.escape(service), r"(?![-\w.])"
    return re.compile(rf"(?<![-\w.]){name}(?=:\d|\.{re.escape(namespace)}\b|\.svc\b)"
                      rf"|(?i:{_HOST_KEY})\\?\"?\s*[:=]\s*\\?\"?{name}{end}"
                      rf'|"name": "(?i:{_HOST_KEY})", "value": "{name}"')


def clients_of(target: Mapping[str, Any], objects: Sequence[Mapping[str, Any]]) -> list[str]:
    """The workloads that call a faulty workload: those in its namespace whose pod template names its
    Service as an address (an env var or argument), or uses a ConfigMap that does.

    A broken backend shows in its callers' logs (a cache refusing them, a queue record they cannot
    process) before it shows anywhere else, and that is where an SRE reads. The workload generator
    lives in a hidden namespace and is never a client here.
    """
    service = target.get("service")
    if not service:
        return []
    namespace = target["namespace"]
    address = _address_pattern(service, namespace)
    mentioning = {_meta(o, "name") for o in objects
                  if o.get("kind") == "ConfigMap" and _meta(o, "namespace") == namespace
                  and address.search(json.dumps(o.get("data") or {}))}
    out = []
    for obj in objects:
        if obj.get("kind") not in _WORKLOAD_KINDS or _meta(obj, "namespace") != namespace:
            continue
        if (obj.get("kind"), _meta(obj, "name")) == (target["kind"], target["name"]):
            continue
        template = json.dumps((obj.get("spec") or {}).get("template") or {})
        if address.search(template) or any(f'"{name}"' in template for name in mentioning):
            out.append(str(_meta(obj, "name")))
    return sorted(out)


def log_sources(faulty: Sequence[Mapping[str, Any]], objects: Sequence[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """``(namespace, pod)`` of every pod whose log the ``error-logs`` probe reads: the faulty
    workloads' pods first, then their clients' (:func:`clients_of`), each pod once."""
    workloads = {(o.get("kind"), _meta(o, "namespace"), _meta(o, "name")): o for o in objects
                 if o.get("kind") in _WORKLOAD_KINDS}
    wanted: list[tuple[str, str, str]] = [(t["kind"], t["namespace"], t["name"]) for t in faulty]
    for target in faulty:
        for name in clients_of(target, objects):
            kind = next(k for k in _WORKLOAD_KINDS if (k, target["namespace"], name) in workloads)
            wanted.append((kind, target["namespace"], name))
    pods = [o for o in objects if o.get("kind") == "Pod"]
    out: list[tuple[str, str]] = []
    for key in dict.fromkeys(wanted):
        selector = (workloads.get(key) or {}).get("spec", {}).get("selector")
        for pod in pods:
            ref = (key[1], str(_meta(pod, "name")))
            if _meta(pod, "namespace") == key[1] and _selected(selector, _meta(pod, "labels")) and ref not in out:
                out.append(ref)
    return out


# ------------------------------------------------------------------ observation over the live system


Probe = Callable[[], Awaitable[str | None]]


async def observe_symptoms(declared: Sequence[str], probes: Mapping[str, Probe], *, timeout_s: float = 60.0,
                           interval_s: float = 2.0, sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
                           clock: Callable[[], float] = time.monotonic) -> dict[str, Any]:
    """Poll each declared symptom's probe until all have shown or ``timeout_s`` passes.

    ``probes`` maps a symptom kind (``alert-firing`` probes get the alert name appended as
    ``alert-firing <name>`` keys) to a coroutine returning evidence or None. Returns
    ``{"declared", "observed": {symptom: evidence}, "missing", "symptom_observed", "seconds"}``;
    ``symptom_observed`` is None for a latent problem or one that declares nothing.
    """
    started = clock()
    if not declared or list(declared) == ["latent"]:
        return {"declared": list(declared), "observed": {}, "missing": [], "symptom_observed": None,
                "latent": bool(declared), "seconds": 0.0}
    observed: dict[str, str] = {}
    errors: dict[str, str] = {}
    while True:
        for symptom in declared:
            if symptom in observed:
                continue
            probe = probes.get(symptom) or probes.get(symptom.split(" ", 1)[0])
            if probe is None:
                errors[symptom] = "no way to observe it here"
                continue
            try:
                evidence = await probe()
            except Exception as exc:  # noqa: BLE001 - an unobservable symptom is reported, not raised
                errors[symptom] = f"{type(exc).__name__}: {exc}"
                continue
            if evidence:
                observed[symptom] = evidence
                errors.pop(symptom, None)
        if len(observed) == len(declared) or clock() - started >= timeout_s:
            break
        await sleep(interval_s)
    missing = [s for s in declared if s not in observed]
    result: dict[str, Any] = {"declared": list(declared), "observed": observed, "missing": missing,
                              "symptom_observed": not missing, "seconds": round(clock() - started, 1)}
    if errors:
        result["errors"] = {k: v for k, v in errors.items() if k in missing}
    return result
