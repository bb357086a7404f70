"""Hook implementations: the cluster-level fault primitives and the webhook server's image."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from sregym_core import hookimpl
from sregym_core.types import LocalImage

from . import actor, admission, bgp, cronjob, dns, finalizer, ingress, ipam, kube_proxy, rbac, routing, storage
from .admission import IMAGE

if TYPE_CHECKING:
    from sregym_core.types import FaultSpec


@hookimpl
def sregym_faults() -> list[FaultSpec]:
    return [*admission.FAULTS, *dns.FAULTS, *routing.FAULTS, *actor.FAULTS, *storage.FAULTS, *rbac.FAULTS,
            *cronjob.FAULTS, *ingress.FAULTS, *finalizer.FAULTS, *kube_proxy.FAULTS, *ipam.FAULTS,
            *bgp.FAULTS]


@hookimpl
def sregym_local_images() -> list[LocalImage]:
    return [LocalImage(image=IMAGE.split(":")[0] + ":*", argv=(sys.executable, "-m", "sregym_fault_cluster.webhook_server"),
                       summary="an HTTPS admission webhook server (AdmissionReview v1): allow, set-memory or delay")]
