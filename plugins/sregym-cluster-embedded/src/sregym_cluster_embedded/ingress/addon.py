"""The ingress-nginx addon the embedded cluster installs at start, as ``minikube addons enable
ingress`` or kind's ingress manifest do: namespace ``ingress-nginx``, the controller's
ServiceAccount and RBAC, the ``nginx`` IngressClass (controller ``k8s.io/ingress-nginx``), the
``ingress-nginx-controller`` Deployment and its LoadBalancer Service (80, 443). The same names as
the upstream chart's defaults, so apps' Ingresses (``ingressClassName: nginx``) and faults find
the controller alike on the embedded cluster and on a real one with ingress-nginx installed.
"""

from __future__ import annotations

import sys

NAMESPACE = "ingress-nginx"
NAME = "ingress-nginx-controller"
CLASS = "nginx"
IMAGE = "registry.k8s.io/ingress-nginx/controller:v1.12.1"
LABELS = {"app.kubernetes.io/name": "ingress-nginx", "app.kubernetes.io/instance": "ingress-nginx",
          "app.kubernetes.io/component": "controller"}


def cluster_rules() -> list[dict]:
    """What the controller's token may do cluster-wide: only what it reads and writes. No Secrets
    (a TLS Secret an Ingress names is readable by name in its namespace only: ``controllers.ingresstls``),
    no ConfigMaps, pods or namespaces: a stolen token opens nothing of the hidden namespaces'."""
    return [
        {"apiGroups": [""], "resources": ["services"], "verbs": ["get", "list", "watch"]},
        {"apiGroups": ["networking.k8s.io"], "resources": ["ingresses", "ingressclasses"],
         "verbs": ["get", "list", "watch"]},
        {"apiGroups": ["networking.k8s.io"], "resources": ["ingresses/status"], "verbs": ["update", "patch"]},
        {"apiGroups": [""], "resources": ["events"], "verbs": ["create", "patch"]},
    ]


def objects() -> list[tuple[str, str | None, dict]]:
    """(resource, namespace or None, object) in creation order."""
    meta = {"namespace": NAMESPACE, "labels": LABELS}
    rules = cluster_rules()
    container = {
        "name": "controller", "image": IMAGE,
        "args": ["/nginx-ingress-controller", f"--publish-service={NAMESPACE}/{NAME}",
                 "--controller-class=k8s.io/ingress-nginx", f"--ingress-class={CLASS}",
                 # unprivileged ports (the pod runs as a non-root user without file capabilities)
                 "--http-port=8080", "--https-port=8443"],
        "env": [{"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
                # nginx's config, certificates and access-log FIFO live in the pod's own volume: without
                # mount namespaces (a non-root node) a plain /tmp/nginx would be the host's
                {"name": "INGRESS_RUN_DIR", "value": "/tmp/nginx"}],
        "volumeMounts": [{"name": "run", "mountPath": "/tmp/nginx"}],
        "ports": [{"name": "http", "containerPort": 8080}, {"name": "https", "containerPort": 8443}],
        "readinessProbe": {"httpGet": {"path": "/healthz", "port": 10254}, "periodSeconds": 2, "failureThreshold": 3},
        "livenessProbe": {"httpGet": {"path": "/healthz", "port": 10254}, "initialDelaySeconds": 10,
                          "periodSeconds": 10, "failureThreshold": 5},
        "resources": {"requests": {"cpu": "50m", "memory": "90Mi"}},
    }
    return [
        ("namespaces", None, {"apiVersion": "v1", "kind": "Namespace",
                              "metadata": {"name": NAMESPACE, "labels": {"app.kubernetes.io/name": "ingress-nginx"}}}),
        ("serviceaccounts", NAMESPACE, {"apiVersion": "v1", "kind": "ServiceAccount",
                                        "metadata": {"name": "ingress-nginx", **meta}}),
        ("clusterroles.rbac.authorization.k8s.io", None, {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "ingress-nginx", "labels": LABELS}, "rules": rules}),
        ("clusterrolebindings.rbac.authorization.k8s.io", None, {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": "ingress-nginx", "labels": LABELS},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "ingress-nginx"},
            "subjects": [{"kind": "ServiceAccount", "name": "ingress-nginx", "namespace": NAMESPACE}]}),
        ("ingressclasses.networking.k8s.io", None, {
            "apiVersion": "networking.k8s.io/v1", "kind": "IngressClass",
            "metadata": {"name": CLASS, "labels": LABELS}, "spec": {"controller": "k8s.io/ingress-nginx"}}),
        ("services", NAMESPACE, {
            "apiVersion": "v1", "kind": "Service", "metadata": {"name": NAME, **meta},
            "spec": {"type": "LoadBalancer", "selector": LABELS, "ports": [
                {"name": "http", "port": 80, "targetPort": "http", "protocol": "TCP"},
                {"name": "https", "port": 443, "targetPort": "https", "protocol": "TCP"}]}}),
        ("deployments.apps", NAMESPACE, {
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": NAME, **meta},
            "spec": {"replicas": 1, "selector": {"matchLabels": LABELS},
                     "template": {"metadata": {"labels": LABELS},
                                  "spec": {"serviceAccountName": "ingress-nginx", "containers": [container],
                                           "volumes": [{"name": "run", "emptyDir": {}}],
                                           "terminationGracePeriodSeconds": 30}}}}),
    ]


def local_image():
    """How the embedded node runs the controller image: this package's controller process."""
    from sregym_core.types import LocalImage

    return LocalImage(image="registry.k8s.io/ingress-nginx/controller:*",
                      argv=(sys.executable, "-m", "sregym_cluster_embedded.ingress.controller"),
                      summary="ingress-nginx controller: Debian's nginx rendered from Ingress objects")
