"""Granted objects that stand in every attempt, so that their existence names no fault (issue #34).

Every attempt holds the same rights (:func:`sregym_core.grant_rules.uniform_grants`), so
``kubectl auth can-i --list`` no longer tells one problem from another. But some granted objects
exist only while their fault has made them (a webhook configuration, a BGP peer): one ``kubectl get``
of each name the listing shows found the fault's object and nothing else (red-team round 8,
finding 2). A grant that gives its object's healthy form (``AgentGrant.standing``) has that form
created, with the admin's rights, before the fault is injected wherever the object is missing; a
fault then changes it in place, as it would a real cluster's, and the attempt removes only what it
created once the faults are recovered. Objects of a resource the cluster does not serve (no Calico
on a real cluster) are skipped: there the name is refused alike for every problem.

Works through the Kubernetes API alone, so it is the same on the embedded cluster and on a real one.
"""

from __future__ import annotations

import copy
from typing import Any

import structlog

from ..grant_rules import collection_path, object_path, resolve
from ..types import AgentGrant
from .kube import ApiStatusError, Kube

log = structlog.get_logger()


def standing_body(grant: AgentGrant) -> dict[str, Any]:
    """The object a grant's ``standing`` form describes, named as the grant names it."""
    body = copy.deepcopy(dict(grant.standing or {}))
    body["metadata"] = {"name": grant.name, **({"namespace": grant.namespace} if grant.namespace else {})}
    return body


def stand_up(kube: Kube, grants: list[AgentGrant] | tuple[AgentGrant, ...], app_namespace: str) -> list[str]:
    """Create each granted object that has a standing form and is missing; the paths created."""
    created: list[str] = []
    for grant in grants:
        if grant.standing is None:
            continue
        grant = resolve(grant, app_namespace)
        path = object_path(grant)
        try:
            kube.request("POST", collection_path(grant), standing_body(grant))
        except ApiStatusError as exc:
            if exc.code == 409:  # it stands already (a real cluster's own, or the last attempt's)
                continue
            if exc.code == 404:  # the resource or the namespace is not on this cluster
                log.info("standing_object_skipped", path=path, reason=str(exc))
                continue
            raise
        created.append(path)
    return created


def take_down(kube: Kube, created: list[str]) -> None:
    """Remove what :func:`stand_up` created (gone already is fine)."""
    for path in created:
        try:
            kube.delete(path)
        except ApiStatusError as exc:
            log.warning("standing_object_not_removed", path=path, error=str(exc))
