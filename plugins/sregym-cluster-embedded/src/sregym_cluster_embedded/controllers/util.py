"""Small helpers shared by the controllers: selectors, quantities, pod state, time, owner references."""

from __future__ import annotations

import hashlib
import json
import math
import random
from datetime import UTC, datetime
from typing import Any

from sregym_core.quantity import quantity_or_zero

Obj = dict[str, Any]

_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # the alphabet Kubernetes uses for generated names


def now() -> datetime:
    return datetime.now(UTC)


def rfc3339(when: datetime | None = None) -> str:
    return (when or now()).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


def random_suffix(length: int = 5) -> str:
    return "".join(random.choice(_SUFFIX_ALPHABET) for _ in range(length))


def safe_encode(text: str) -> str:
    """Map a hex-ish digest onto the vowel-free alphabet, as Kubernetes does for hashes in names."""
    return "".join(_SUFFIX_ALPHABET[ord(ch) % len(_SUFFIX_ALPHABET)] for ch in text)


def template_hash(template: Obj, collision_count: int = 0) -> str:
    """A stable short hash of a pod template (the `pod-template-hash` label)."""
    clean = json.loads(json.dumps(template))
    labels = clean.get("metadata", {}).get("labels")
    if labels:
        labels.pop("pod-template-hash", None)
    payload = json.dumps(clean, sort_keys=True, separators=(",", ":")) + (f"#{collision_count}" if collision_count else "")
    digest = hashlib.sha256(payload.encode()).hexdigest()
    return safe_encode(digest[:10])


def meta(obj: Obj) -> Obj:
    return obj.setdefault("metadata", {})


def name_of(obj: Obj) -> str:
    return obj.get("metadata", {}).get("name", "")


def ns_of(obj: Obj) -> str | None:
    return obj.get("metadata", {}).get("namespace")


def uid_of(obj: Obj) -> str:
    return obj.get("metadata", {}).get("uid", "")


def is_deleting(obj: Obj) -> bool:
    return bool(obj.get("metadata", {}).get("deletionTimestamp"))


def owner_ref(owner: Obj, *, block: bool = True) -> Obj:
    return {
        "apiVersion": owner.get("apiVersion", "v1"),
        "kind": owner.get("kind", ""),
        "name": name_of(owner),
        "uid": uid_of(owner),
        "controller": True,
        "blockOwnerDeletion": block,
    }


def controller_of(obj: Obj) -> Obj | None:
    for ref in obj.get("metadata", {}).get("ownerReferences") or []:
        if ref.get("controller"):
            return ref
    return None


def is_controlled_by(obj: Obj, owner: Obj) -> bool:
    ref = controller_of(obj)
    return ref is not None and bool(ref) and ref.get("uid") == uid_of(owner)


# ---------------------------------------------------------------- label selectors


def match_labels(selector: dict[str, str] | None, labels: dict[str, str] | None) -> bool:
    labels = labels or {}
    return all(labels.get(k) == v for k, v in (selector or {}).items())


def match_selector(selector: Obj | None, labels: dict[str, str] | None, *, empty_matches: bool = True) -> bool:
    """A metav1.LabelSelector (matchLabels + matchExpressions) against a label set."""
    if selector is None:
        return False
    labels = labels or {}
    if not selector.get("matchLabels") and not selector.get("matchExpressions"):
        return empty_matches
    if not match_labels(selector.get("matchLabels"), labels):
        return False
    for expr in selector.get("matchExpressions") or []:
        if not match_expression(expr, labels):
            return False
    return True


def match_expression(expr: Obj, labels: dict[str, str]) -> bool:
    key, op, values = expr.get("key", ""), expr.get("operator", ""), expr.get("values") or []
    if op == "In":
        return key in labels and labels[key] in values
    if op == "NotIn":
        return key not in labels or labels[key] not in values
    if op == "Exists":
        return key in labels
    if op == "DoesNotExist":
        return key not in labels
    if op in ("Gt", "Lt"):
        try:
            have, want = int(labels[key]), int(values[0])
        except (KeyError, ValueError, IndexError):
            return False
        return have > want if op == "Gt" else have < want
    return False


def selector_string(selector: Obj | None) -> str:
    """Render a LabelSelector the way kubectl shows it (and as a labelSelector query)."""
    parts = [f"{k}={v}" for k, v in sorted(((selector or {}).get("matchLabels") or {}).items())]
    for expr in (selector or {}).get("matchExpressions") or []:
        op, key, values = expr.get("operator"), expr.get("key"), ",".join(expr.get("values") or [])
        parts.append({"In": f"{key} in ({values})", "NotIn": f"{key} notin ({values})",
                      "Exists": f"{key}", "DoesNotExist": f"!{key}"}.get(op, f"{key}"))
    return ",".join(parts)


# ---------------------------------------------------------------- int-or-percent
# (resource quantities: sregym_core.quantity.quantity_or_zero, which reads a malformed one as 0)


def _num(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return 0.0


def int_or_percent(value: Any, total: int, *, round_up: bool) -> int:
    """Resolve an IntOrString like maxSurge ('25%') against a total, rounding as Kubernetes does."""
    if value is None:
        return 0
    if isinstance(value, int):
        return value
    text = str(value).strip()
    if text.endswith("%"):
        pct = _num(text[:-1])
        exact = pct * total / 100
        return math.ceil(exact - 1e-9) if round_up else math.floor(exact + 1e-9)
    try:
        return int(text)
    except ValueError:
        return 0


# ---------------------------------------------------------------- pods


def pod_condition(pod: Obj, kind: str) -> Obj | None:
    for cond in pod.get("status", {}).get("conditions") or []:
        if cond.get("type") == kind:
            return cond
    return None


def is_pod_ready(pod: Obj) -> bool:
    cond = pod_condition(pod, "Ready")
    return cond is not None and cond.get("status") == "True"


def is_pod_active(pod: Obj) -> bool:
    phase = pod.get("status", {}).get("phase")
    return phase not in ("Succeeded", "Failed") and not is_deleting(pod)


def is_pod_available(pod: Obj, min_ready_seconds: int, at: datetime | None = None) -> bool:
    if not is_pod_ready(pod) or is_deleting(pod):
        return False
    if min_ready_seconds <= 0:
        return True
    since = parse_time((pod_condition(pod, "Ready") or {}).get("lastTransitionTime"))
    if since is None:
        return True
    return ((at or now()) - since).total_seconds() >= min_ready_seconds


def pod_requests(pod: Obj) -> dict[str, float]:
    """Effective requests of a pod: sum of containers, max with each init container (as the scheduler does)."""
    spec = pod.get("spec", {})
    total: dict[str, float] = {}
    for container in spec.get("containers") or []:
        res = container.get("resources") or {}
        req = res.get("requests") or res.get("limits") or {}
        for key, value in req.items():
            total[key] = total.get(key, 0.0) + quantity_or_zero(value)
    for container in spec.get("initContainers") or []:
        res = container.get("resources") or {}
        req = res.get("requests") or res.get("limits") or {}
        for key, value in req.items():
            total[key] = max(total.get(key, 0.0), quantity_or_zero(value))
    for key, value in (spec.get("overhead") or {}).items():
        total[key] = total.get(key, 0.0) + quantity_or_zero(value)
    return total


def set_condition(conditions: list[Obj], kind: str, status: str, reason: str, message: str, *,
                  probe_field: str = "lastUpdateTime") -> list[Obj]:
    """Insert or update one condition; lastTransitionTime moves only when the status flips."""
    stamp = rfc3339()
    out: list[Obj] = []
    found = False
    for cond in conditions:
        if cond.get("type") != kind:
            out.append(cond)
            continue
        found = True
        if (cond.get("status"), cond.get("reason"), cond.get("message")) == (status, reason, message):
            out.append(cond)
            continue
        new = dict(cond, status=status, reason=reason, message=message)
        new[probe_field] = stamp
        if cond.get("status") != status:
            new["lastTransitionTime"] = stamp
        out.append(new)
    if not found:
        out.append({"type": kind, "status": status, probe_field: stamp, "lastTransitionTime": stamp,
                    "reason": reason, "message": message})
    return out


def get_condition(obj: Obj, kind: str) -> Obj | None:
    for cond in obj.get("status", {}).get("conditions") or []:
        if cond.get("type") == kind:
            return cond
    return None
