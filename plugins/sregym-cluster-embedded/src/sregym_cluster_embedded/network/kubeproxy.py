"""kube-proxy as a kubeadm cluster runs it: the ``kube-proxy`` DaemonSet in kube-system, one pod per
node, each programming its node's service rules.

The embedded service proxy (proxy.py) is one listener set for the whole cluster; what it does with
a connection follows the kube-proxy build that programmed the *caller's* node, as that node's
iptables rules would. The DaemonSet's pods run a tiny process per node (node/entrypoints/kube_proxy.sh:
kube-proxy's start-up log lines, then it waits) and their image names the build. A node whose
kube-proxy pod is gone keeps the rules its last running pod programmed (iptables rules outlive the
process); a node no pod ever programmed proxies correctly.

Builds: every tag proxies correctly except a ``-buggy`` build (e.g. ``kube-proxy:v1.32.4-buggy``),
whose endpoint chains send a share of each node's new connections to a rule that drops them: the
caller's SYN is never answered, so it waits out its connect timeout, and a client that keeps one
connection (gRPC) is stuck until it reconnects. The benchmark's own pods (hidden namespaces: the
workload generator, observability) stand outside the cluster under test, on no node, as for the
conntrack table.

``SREGYM_EMBEDDED_KUBE_PROXY=0`` installs no DaemonSet, and every node proxies correctly.
"""

from __future__ import annotations

import os
from typing import Any

from ..controllers.util import Obj

NAMESPACE, NAME = "kube-system", "kube-proxy"
LABELS = {"k8s-app": "kube-proxy"}
REPOSITORY = "registry.k8s.io/kube-proxy"
BUGGY_SUFFIX = "-buggy"
#: the share of new connections a buggy build's rules drop
BUGGY_DROP_SHARE = 0.5
CONFIG_DIR = "/var/lib/kube-proxy"


def enabled() -> bool:
    return os.environ.get("SREGYM_EMBEDDED_KUBE_PROXY", "1") != "0"


def image(version: str) -> str:
    return f"{REPOSITORY}:{version}"


def drop_share(image_ref: str) -> float:
    """The share of new connections a build's rules drop: 0 for a sound build."""
    last = image_ref.split("@", 1)[0].rsplit("/", 1)[-1]
    tag = last.rsplit(":", 1)[1] if ":" in last else "latest"
    return BUGGY_DROP_SHARE if tag.endswith(BUGGY_SUFFIX) else 0.0


def objects(version: str) -> list[tuple[str, str | None, dict]]:
    """(resource, namespace, object) in creation order: kubeadm's ServiceAccount and DaemonSet (the
    ConfigMap ``kube-proxy`` with ``config.conf`` comes from the conntrack table, conntrack.py)."""
    meta = {"namespace": NAMESPACE, "labels": dict(LABELS)}
    container = {
        "name": "kube-proxy", "image": image(version), "imagePullPolicy": "IfNotPresent",
        "command": ["/usr/local/bin/kube-proxy", f"--config={CONFIG_DIR}/config.conf",
                    "--hostname-override=$(NODE_NAME)"],
        "env": [{"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}],
        "volumeMounts": [{"name": "kube-proxy", "mountPath": CONFIG_DIR}],
    }
    return [
        ("serviceaccounts", NAMESPACE, {"apiVersion": "v1", "kind": "ServiceAccount",
                                        "metadata": {"name": NAME, "namespace": NAMESPACE}}),
        ("daemonsets.apps", NAMESPACE, {
            "apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": NAME, **meta},
            "spec": {"selector": {"matchLabels": dict(LABELS)},
                     "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}},
                     "template": {"metadata": {"labels": dict(LABELS)}, "spec": {
                         "containers": [container], "hostNetwork": True, "serviceAccountName": NAME,
                         "priorityClassName": "system-node-critical",
                         "nodeSelector": {"kubernetes.io/os": "linux"},
                         "tolerations": [{"operator": "Exists"}],
                         "terminationGracePeriodSeconds": 5,
                         "volumes": [{"name": "kube-proxy", "configMap": {"name": NAME}}]}}}}),
    ]


def _running_image(pod: Obj) -> str | None:
    """The image of a kube-proxy pod whose container runs (it has programmed its node), else None."""
    status = pod.get("status") or {}
    if status.get("phase") != "Running":
        return None
    for cs in status.get("containerStatuses") or []:
        if cs.get("name") == "kube-proxy" and "running" in (cs.get("state") or {}):
            spec: Obj = next((c for c in pod["spec"].get("containers") or [] if c.get("name") == "kube-proxy"), {})
            return spec.get("image") or cs.get("image")
    return None


class NodeRules:
    """Which kube-proxy build programmed each node, from the DaemonSet's pods as they run."""

    def __init__(self, view: Any) -> None:
        self.programmed: dict[str, str] = {}  # node -> image of the last kube-proxy that ran there
        view.pods.add_handler(self._on_pod)

    def _on_pod(self, event: str, pod: Obj, _old: Obj | None) -> None:
        meta = pod.get("metadata") or {}
        if event == "DELETED" or meta.get("namespace") != NAMESPACE or \
                (meta.get("labels") or {}).get("k8s-app") != LABELS["k8s-app"]:
            return  # a kube-proxy that stops leaves its rules in place
        node = (pod.get("spec") or {}).get("nodeName")
        running = _running_image(pod)
        if node and running:
            self.programmed[node] = running

    def any_defect(self) -> bool:
        """Whether some node's rules differ from a sound build's (callers must then be located)."""
        return any(drop_share(image) for image in self.programmed.values())

    def drop_share(self, node: str | None) -> float:
        return drop_share(self.programmed.get(node, "")) if node else 0.0


__all__ = ["NodeRules", "drop_share", "enabled", "image", "objects", "NAMESPACE", "NAME", "BUGGY_SUFFIX"]
