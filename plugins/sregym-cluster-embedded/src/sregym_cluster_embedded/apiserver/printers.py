"""Server-side printing: turn stored objects into the ``meta.k8s.io/v1`` Table kubectl asks for.

``kubectl get`` requests ``as=Table`` and prints exactly the columns and cells the server
computes (priority-1 columns only with ``-o wide``), so every kind needs the same columns and
cell text as the real kube-apiserver. The per-kind printers live in :mod:`.printing`.
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

from .printing import cluster, core, misc, pods, workloads
from .printing.columns import Printer
from .printing.timefmt import human_duration, since

__all__ = ["build_table", "human_duration", "printer_for", "since"]

# (API group, plural resource) -> printer. Resources in several groups are listed in each.
PRINTERS: dict[tuple[str, str], Printer] = {
    ("", "pods"): pods.POD_PRINTER,
    ("", "nodes"): core.NODE_PRINTER,
    ("", "namespaces"): core.NAMESPACE_PRINTER,
    ("", "services"): core.SERVICE_PRINTER,
    ("", "endpoints"): core.ENDPOINTS_PRINTER,
    ("", "configmaps"): core.CONFIGMAP_PRINTER,
    ("", "secrets"): core.SECRET_PRINTER,
    ("", "serviceaccounts"): core.SERVICE_ACCOUNT_PRINTER,
    ("", "events"): core.EVENT_PRINTER,
    ("events.k8s.io", "events"): core.EVENT_PRINTER,
    ("", "persistentvolumes"): core.PV_PRINTER,
    ("", "persistentvolumeclaims"): core.PVC_PRINTER,
    ("", "resourcequotas"): core.QUOTA_PRINTER,
    ("", "limitranges"): core.LIMIT_RANGE_PRINTER,
    ("", "replicationcontrollers"): core.RC_PRINTER,
    ("", "podtemplates"): core.POD_TEMPLATE_PRINTER,
    ("discovery.k8s.io", "endpointslices"): core.ENDPOINT_SLICE_PRINTER,
    ("storage.k8s.io", "storageclasses"): core.STORAGE_CLASS_PRINTER,
    ("apps", "deployments"): workloads.DEPLOYMENT_PRINTER,
    ("apps", "replicasets"): workloads.REPLICASET_PRINTER,
    ("apps", "statefulsets"): workloads.STATEFULSET_PRINTER,
    ("apps", "daemonsets"): workloads.DAEMONSET_PRINTER,
    ("apps", "controllerrevisions"): workloads.CONTROLLER_REVISION_PRINTER,
    ("batch", "jobs"): workloads.JOB_PRINTER,
    ("batch", "cronjobs"): workloads.CRONJOB_PRINTER,
    ("autoscaling", "horizontalpodautoscalers"): workloads.HPA_PRINTER,
    ("policy", "poddisruptionbudgets"): workloads.PDB_PRINTER,
    ("networking.k8s.io", "networkpolicies"): misc.NETWORK_POLICY_PRINTER,
    ("networking.k8s.io", "ingresses"): misc.INGRESS_PRINTER,
    ("networking.k8s.io", "ingressclasses"): misc.INGRESS_CLASS_PRINTER,
    ("scheduling.k8s.io", "priorityclasses"): misc.PRIORITY_CLASS_PRINTER,
    ("coordination.k8s.io", "leases"): misc.LEASE_PRINTER,
    ("rbac.authorization.k8s.io", "roles"): misc.ROLE_PRINTER,
    ("rbac.authorization.k8s.io", "clusterroles"): misc.ROLE_PRINTER,
    ("rbac.authorization.k8s.io", "rolebindings"): misc.BINDING_PRINTER,
    ("rbac.authorization.k8s.io", "clusterrolebindings"): misc.CLUSTER_BINDING_PRINTER,
    ("apiextensions.k8s.io", "customresourcedefinitions"): misc.CREATED_AT_PRINTER,
    ("admissionregistration.k8s.io", "validatingwebhookconfigurations"): misc.WEBHOOK_CONFIGURATION_PRINTER,
    ("admissionregistration.k8s.io", "mutatingwebhookconfigurations"): misc.WEBHOOK_CONFIGURATION_PRINTER,
    ("admissionregistration.k8s.io", "validatingadmissionpolicies"): cluster.VALIDATING_POLICY_PRINTER,
    ("admissionregistration.k8s.io", "validatingadmissionpolicybindings"): cluster.VALIDATING_POLICY_BINDING_PRINTER,
    ("apiregistration.k8s.io", "apiservices"): cluster.API_SERVICE_PRINTER,
    ("", "componentstatuses"): cluster.COMPONENT_STATUS_PRINTER,
    ("node.k8s.io", "runtimeclasses"): cluster.RUNTIME_CLASS_PRINTER,
    ("storage.k8s.io", "csidrivers"): cluster.CSI_DRIVER_PRINTER,
    ("storage.k8s.io", "csinodes"): cluster.CSI_NODE_PRINTER,
    ("storage.k8s.io", "volumeattachments"): cluster.VOLUME_ATTACHMENT_PRINTER,
    ("storage.k8s.io", "volumeattributesclasses"): cluster.VOLUME_ATTRIBUTES_CLASS_PRINTER,
    ("certificates.k8s.io", "certificatesigningrequests"): cluster.CSR_PRINTER,
    ("flowcontrol.apiserver.k8s.io", "flowschemas"): cluster.FLOW_SCHEMA_PRINTER,
    ("flowcontrol.apiserver.k8s.io", "prioritylevelconfigurations"): cluster.PRIORITY_LEVEL_PRINTER,
    ("networking.k8s.io", "servicecidrs"): cluster.SERVICE_CIDR_PRINTER,
    ("networking.k8s.io", "ipaddresses"): cluster.IP_ADDRESS_PRINTER,
}


def printer_for(resource: str, group: str, crd: dict[str, Any] | None = None) -> Printer:
    """The printer for a resource: built-in, the CRD's printer columns, or NAME/AGE."""
    printer = PRINTERS.get((group or "", resource))
    if printer is not None:
        return printer
    if crd is not None:
        return misc.custom_resource_printer(crd)
    return misc.GENERIC_PRINTER


def partial_metadata(obj: dict[str, Any]) -> dict[str, Any]:
    metadata = obj.get("metadata")
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": copy.deepcopy(metadata) if isinstance(metadata, dict) else {},
    }


def _row(printer: Printer, obj: dict[str, Any], now: datetime, include_object: str) -> dict[str, Any]:
    try:
        cells = printer.cells(obj, now)
    except Exception:  # noqa: BLE001 - one odd object must never break a whole listing
        cells = [str((obj.get("metadata") or {}).get("name", ""))] + [""] * (len(printer.columns) - 1)
    row: dict[str, Any] = {"cells": cells}
    conditions = printer.conditions(obj) if printer.conditions else []
    if conditions:
        row["conditions"] = conditions
    mode = (include_object or "Metadata").lower()
    if mode == "object":
        row["object"] = obj
    elif mode != "none":
        row["object"] = partial_metadata(obj)
    return row


def build_table(
    resource: str,
    group: str,
    objects: list[dict],
    *,
    include_object: str = "Metadata",
    now: datetime | None = None,
    crd: dict | None = None,
) -> dict:
    """Build a complete ``meta.k8s.io/v1`` Table for ``objects`` of one resource.

    :param resource: the plural resource name (``"pods"``).
    :param group: the API group, ``""`` for core.
    :param include_object: ``"Metadata"`` (a PartialObjectMetadata per row), ``"Object"`` (the
        full object, needed by ``--sort-by``) or ``"None"`` (no object).
    :param now: the clock used for ages (defaults to the current UTC time).
    :param crd: the CustomResourceDefinition for custom resources (its printer columns are used).
    :returns: the Table dict; the caller sets ``metadata.resourceVersion``/``continue``.
    """
    moment = now or datetime.now(UTC)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    printer = printer_for(resource, group, crd)
    rows = [_row(printer, obj, moment, include_object) for obj in objects if isinstance(obj, dict)]
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {},
        "columnDefinitions": [column.definition() for column in printer.columns],
        "rows": rows,
    }
