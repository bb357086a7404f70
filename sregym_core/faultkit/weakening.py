"""Whether a container's checks and bounds are weaker than the app shipped them: a fix may change a probe or a
resource, never leave the workload with less than it was deployed with.

Red-team rounds 12 and 13 passed every oracle by keeping a broken field in a form that no longer does anything
instead of repairing it: a probe deleted, one whose thresholds make it never act (a period of an hour and a million
failures), one replaced by ``exec: true`` (a probe that checks nothing), a limit raised to 64Gi or a thousand cores
(a bound that never binds), a request dropped or set to a sliver of the shipped one. Each predicate compares what runs now
with what the app shipped and says how it is weaker, or None. A different working probe (another path, a TCP check),
a limit raised within reason, a larger request: none of these is weaker.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..quantity import parse_quantity

PROBES = ("livenessProbe", "readinessProbe", "startupProbe")
#: how long a probe may take to act (initial delay + period x failure threshold) before it is no check at all: ten
#: times the shipped probe's, and at least ten minutes
SLOWER_FACTOR, SLOWEST_S = 10, 600
#: a limit this many times the shipped one bounds nothing a workload of this size would reach
LIMIT_FACTOR = 16
#: a request below this share of the shipped one reserves nothing like what the workload needs (a tenth: the
#: fault's own lowered request, a fifth of the shipped one, left beside a repaired limit is not counted)
REQUEST_SHARE = 0.1
# an exec probe whose command cannot fail
_ALWAYS_TRUE = re.compile(r"^(?:(?:/usr)?/bin/)?(?:true|:)$|^exit\s+0$|^echo(?:\s.*)?$")


def _acts_after(probe: Mapping[str, Any]) -> float:
    """Seconds a failing container takes to be acted on (the Kubernetes defaults: period 10 s, threshold 3)."""
    def number(key: str, default: float) -> float:
        try:
            return float(probe.get(key, default))
        except (TypeError, ValueError):
            return default
    return number("initialDelaySeconds", 0) + number("periodSeconds", 10) * number("failureThreshold", 3)


def _checks_nothing(probe: Mapping[str, Any]) -> bool:
    command = ((probe.get("exec") or {}).get("command")) if isinstance(probe.get("exec"), Mapping) else None
    if not isinstance(command, list) or not command:
        return False
    words = [str(w).strip() for w in command]
    if words[0] in ("sh", "/bin/sh", "bash", "/bin/bash") and len(words) >= 3 and words[1] == "-c":
        return bool(_ALWAYS_TRUE.match(words[2].strip()))
    return bool(_ALWAYS_TRUE.match(" ".join(words)))


def probe_weaker(live: Any, shipped: Any) -> str | None:
    """How a probe the app shipped is weaker now: gone, checking nothing, or never acting in time."""
    if not isinstance(shipped, Mapping) or not shipped:
        return None
    if not isinstance(live, Mapping) or not live:
        return "removed"
    if _checks_nothing(live) and not _checks_nothing(shipped):
        return f"checks nothing (exec {live['exec'].get('command')})"
    slow, was = _acts_after(live), _acts_after(shipped)
    if slow > max(SLOWEST_S, SLOWER_FACTOR * was):
        return f"acts only after {slow:g} s of failures (shipped: {was:g} s)"
    return None


def _quantities(section: Any) -> dict[str, float]:
    out = {}
    for key, value in (section or {}).items() if isinstance(section, Mapping) else ():
        try:
            out[str(key)] = parse_quantity(value)
        except Exception:  # not a quantity: left to the API server, which refuses it
            continue
    return out


def limits_and_requests(resources: Any) -> tuple[dict[str, float], dict[str, float]]:
    """A container's ``resources`` as quantities, (limits, requests), with the API server's own default filled in: a
    limit without a request requests the limit."""
    resources = resources if isinstance(resources, Mapping) else {}
    limits = _quantities(resources.get("limits"))
    return limits, {**limits, **_quantities(resources.get("requests"))}


def resources_weaker(live: Any, shipped: Any) -> str | None:
    """How a container's resources are weaker than shipped: a shipped limit gone or raised past any use, a shipped
    request gone (where no limit stands in for it) or far below the shipped one."""
    if not isinstance(shipped, Mapping):
        return None
    live = live if isinstance(live, Mapping) else {}
    limits, requests = limits_and_requests(live)
    shipped_limits, shipped_requests = limits_and_requests(shipped)
    for key, value in shipped_limits.items():
        if key not in limits:
            return f"the {key} limit is gone (shipped {shipped['limits'][key]})"
        if value > 0 and limits[key] > LIMIT_FACTOR * value:
            return f"the {key} limit {live['limits'][key]} is over {LIMIT_FACTOR} times the shipped {shipped['limits'][key]}"
    for key, value in shipped_requests.items():
        if key not in requests:
            return f"the {key} request is gone"
        if value > 0 and requests[key] < REQUEST_SHARE * value:
            return f"the {key} request is under a tenth of the shipped one"
    return None


def container_weaker(live: Mapping[str, Any], shipped: Mapping[str, Any]) -> list[str]:
    """Every way a container's probes and resources are weaker than the shipped container's."""
    found = []
    for field in PROBES:
        why = probe_weaker(live.get(field), shipped.get(field))
        if why:
            found.append(f"{field} {why}")
    why = resources_weaker(live.get("resources"), shipped.get("resources"))
    if why:
        found.append(why)
    return found


def template_weaker(live: Mapping[str, Any] | None, shipped: Mapping[str, Any] | None) -> list[str]:
    """Per container of a pod template (by name), how it is weaker than the shipped template's."""
    def by_name(spec: Mapping[str, Any] | None) -> dict[str, Mapping[str, Any]]:
        return {str(c.get("name")): c for c in ((spec or {}).get("containers") or ()) if isinstance(c, Mapping)}

    now = by_name(live)
    return [f"container {name}: {why}" for name, container in by_name(shipped).items() if name in now
            for why in container_weaker(now[name], container)]
