"""Apps on one cluster cannot reach each other's pods (issue #34, red-team round 5, attack 1).

An agent working on one app could otherwise plant something in another app deployed on the same
cluster (a repair bot started through that app's database), which the attempt's reset never looks at
and which outlives it. The conductor marks every namespace of an app with the app's name
(``sregym.io/app``; the agent cannot change namespaces), and:

* on the embedded cluster, its network guard (a kernel program on the pods' cgroups) refuses a pod
  the pod and Service IPs of another app's namespaces;
* on any other cluster, with ``SREGYM_APP_NETWORK_POLICY=1``, a NetworkPolicy in the app's namespace
  admits traffic only from the app's own namespaces, the benchmark's hidden ones and namespaces of
  no app (the ingress controller's, kube-system), which holds where the cluster's network plugin
  enforces NetworkPolicies.

Both allow the same callers (``test_netguard_table.py`` evaluates the policy with the embedded
cluster's own NetworkPolicy code against the guard's verdicts). The policy is off unless asked for,
for two reasons. Kubernetes unions the ingress rules of every policy selecting a pod, so it admits
the app's own pods to a pod that a fault's deny-all policy (``network-policy-block``) should cut
off: where it is enforced, the ``*-network-policy-block-*`` problems show no symptom. And the
embedded cluster, standing in for a real one behind the kubeconfig provider, matches a policy's
``from`` peers by the caller's source address, which a pod's connection to a Service does not
carry (they leave from 127.0.0.1): the app's own pods would be refused there. The guard takes no
part in either.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from ..clusters import APP_GROUP_LABEL, HIDDEN_NAMESPACE_LABELS
from .kube import ApiStatusError, Kube

POLICY_NAME = "sregym-app-isolation"
#: set to 1 to apply the policy on clusters other than the embedded one (see above for its cost)
POLICY_SWITCH = "SREGYM_APP_NETWORK_POLICY"


def policy_wanted() -> bool:
    return os.environ.get(POLICY_SWITCH, "0") == "1"


def label_app_group(kube: Kube, namespaces: Iterable[str], app_name: str) -> None:
    """Mark every namespace of the app as the app's; a namespace the app declares but did not make
    is skipped."""
    for namespace in namespaces:
        try:
            kube.request("PATCH", f"/api/v1/namespaces/{namespace}",
                         body={"metadata": {"labels": {APP_GROUP_LABEL: app_name}}},
                         content_type="application/merge-patch+json")
        except ApiStatusError as exc:
            if exc.code != 404:
                raise


def isolation_policy(app_name: str, namespace: str) -> dict[str, Any]:
    """The NetworkPolicy admitting into ``namespace`` only the callers the embedded guard allows."""
    callers: list[dict[str, Any]] = [
        {"namespaceSelector": {"matchLabels": {APP_GROUP_LABEL: app_name}}},
        {"namespaceSelector": {"matchExpressions": [{"key": APP_GROUP_LABEL, "operator": "DoesNotExist"}]}},
        *({"namespaceSelector": {"matchLabels": {label: "true"}}} for label in HIDDEN_NAMESPACE_LABELS),
    ]
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": {"name": POLICY_NAME, "namespace": namespace,
                         "labels": {"app.kubernetes.io/managed-by": "sregym"}},
            "spec": {"podSelector": {}, "policyTypes": ["Ingress"], "ingress": [{"from": callers}]}}


def apply_isolation_policy(kube: Kube, app_name: str, namespace: str) -> None:
    """Create (or put back as written) the app's isolation policy in its namespace."""
    body = isolation_policy(app_name, namespace)
    path = f"/apis/networking.k8s.io/v1/namespaces/{namespace}/networkpolicies"
    try:
        kube.request("POST", path, body=body)
    except ApiStatusError as exc:
        if exc.code != 409:
            raise
        kube.request("PUT", f"{path}/{POLICY_NAME}", body=body)
