"""Admission of writes to objects a problem granted the agent (``agent_access``): beyond the grant,
refused before it is stored.

The engine's grant guard puts such a change back and records it, but only after it is stored, and a
controller may act on it first: a DaemonSet whose template gained a command rolls pods that run it
for a few seconds, past the pods' network guard (issue #34, round 3). The engine leaves the attempt's
grants in a ConfigMap of the benchmark's namespace (``sregym_core.grant_rules.GRANTS_CONFIGMAP``);
this check reads it and answers a write by anyone but ``system:masters`` that changes a granted object
outside its ``may_change`` fields with 403 Forbidden, naming what changed. The guard stays, for
clusters that do not check (and records nothing here: nothing was stored).
"""

from __future__ import annotations

from typing import Any

from sregym_core.grant_rules import GRANTS_CONFIGMAP, grants_from_configmap, violations
from sregym_core.types import AgentGrant

from .errors import ApiError


def grant_for(core: Any, group: str, plural: str, namespace: str | None, name: str) -> AgentGrant | None:
    """The published grant that names this object (writes to it are checked), or None."""
    stored = core.store.get("configmaps", GRANTS_CONFIGMAP[0], GRANTS_CONFIGMAP[1])
    if stored is None:
        return None
    for grant in grants_from_configmap(stored):
        if (grant.group, grant.resource, grant.namespace or None, grant.name) == (group, plural, namespace or None,
                                                                                     name):
            return grant
    return None


def admit(grant: AgentGrant, user_name: str, before: dict[str, Any] | None, after: dict[str, Any] | None) -> None:
    """Refuse (403) a write that takes the object ``grant`` names beyond the grant."""
    if before is None:
        return
    found = violations(before, after, grant)
    if found:
        raise ApiError(403, f'{grant.resource} "{grant.name}" is forbidden: User "{user_name}" may change only '
                            f'{sorted(grant.may_change)} of it (the problem\'s grant): {"; ".join(found)}',
                       "Forbidden", details={"name": grant.name, "group": grant.group, "kind": grant.resource})
