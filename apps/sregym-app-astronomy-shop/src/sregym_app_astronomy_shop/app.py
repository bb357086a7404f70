"""The AppSpec: inventory, description for agents, manifests, images, workload, deploy."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from . import IMAGE_REPO
from .manifests import DEFAULT_PARAMS, NGINX_IMAGE, WORKLOAD_TIMEOUT_S, manifest_files, peer_env, render_yaml
from .topology import ADMIN_PORT, FLAGS, NAMESPACE, SERVICES, WORKLOAD_NAMESPACE

NAME = "astronomy-shop"
STABLE_TAGS = ("1.0", "1.0.0", "latest")

#: What the agent is told about the app (``/get_app`` ``descriptions``): what it is and does, in
#: one paragraph as upstream's are; no ports, knobs or metric names (those are for it to find).
DISPLAY_NAME = "OpenTelemetry Demo Astronomy Shop"
DESCRIPTION = (
    "The Astronomy Shop is an online telescope store built as microservices after the OpenTelemetry demo: "
    "shoppers browse the catalogue, see ads and recommendations, fill a cart and check out, with currency "
    "conversion, shipping quotes, payment and a confirmation e-mail, and every order goes through a message "
    "queue to accounting and fraud detection."
)


def _knobs(service: str) -> tuple[str, ...]:
    knobs = []
    if any(owner == service for _v, owner, _on in FLAGS.values()):
        knobs.append("flagd")  # a flag in flagd-config changes this service's behaviour (faults.py)
    if service == "frontend":
        knobs.append("load-entrypoint")
    return tuple(knobs)


def components() -> tuple[Any, ...]:
    from sregym_core.types import ComponentSpec

    out = []
    for name, (port, protocol, _peers) in SERVICES.items():
        if protocol == "queue-consumer":
            roles: tuple[str, ...] = ("queue-consumer",)
        elif name == "frontend":
            roles = ("frontend", "service:http")
        else:
            roles = (f"service:{protocol}",)
        env = ["OTEL_SERVICE_NAME", "ADMIN_PORT", "FLAGD_OFREP_PORT", *[e["name"] for e in peer_env(name)]]
        if name != "flagd":  # flagd reads its flags from a file and sends no traces
            env += ["FLAGD_HOST", "OTEL_EXPORTER_OTLP_ENDPOINT"]
        else:
            env.append("FLAGD_FILE")
        ports = (ADMIN_PORT,) if port is None else (port, ADMIN_PORT)
        out.append(ComponentSpec(name=name, kind="Deployment", roles=roles, ports=ports, container=name,
                                 config_map="flagd-config" if name == "flagd" else None, env=tuple(env), service=name,
                                 labels={"app.kubernetes.io/name": name}, knobs=_knobs(name)))
    # users arrive through the Ingress of the same name (manifests/55-ingress.yaml)
    out.append(ComponentSpec(name="frontend-proxy", kind="Deployment", roles=("proxy:nginx", "service:http"),
                             ports=(8080,), container="frontend-proxy", config_map="frontend-proxy-config",
                             service="frontend-proxy", labels={"app.kubernetes.io/name": "frontend-proxy"},
                             knobs=("ingress",)))
    out.append(ComponentSpec(name="valkey-cart", kind="Deployment", roles=("cache:redis",), ports=(6379,),
                             container="valkey-cart", service="valkey-cart",
                             labels={"app.kubernetes.io/name": "valkey-cart"}))
    out.append(ComponentSpec(name="queue", kind="Deployment", roles=("queue:redis-streams",), ports=(6379,),
                             container="queue", service="queue", labels={"app.kubernetes.io/name": "queue"}))
    return tuple(out)


def local_images() -> tuple[Any, ...]:
    from sregym_core.types import LocalImage

    entry = (sys.executable, "-m", "sregym_app_astronomy_shop.serve")
    images = [LocalImage(image=f"{IMAGE_REPO}:{tag}", argv=entry, cmd=("frontend",), env={"PYTHONUNBUFFERED": "1"},
                         summary="Astronomy Shop services (argv[1] chooses the service)") for tag in STABLE_TAGS]
    images.append(LocalImage(image=NGINX_IMAGE, argv=(sys.executable, "-m", "sregym_app_astronomy_shop.edge"),
                             cmd=("-g", "daemon off;"), summary="Debian nginx with the pod's /etc/nginx/nginx.conf"))
    return tuple(images)


def deploy(ctx: Any) -> None:
    """Apply the manifests rendered with the run's params; the conductor then waits for Ready."""
    manifests = render_yaml(ctx.params)
    proc = subprocess.run([ctx.kubectl_path, "--kubeconfig", str(ctx.kubeconfig), "apply", "-f", "-"],
                          input=manifests, capture_output=True, text=True, timeout=ctx.timeout)
    if proc.returncode != 0:
        from sregym_core.errors import DeployError
        raise DeployError(f"kubectl apply failed: {proc.stderr.strip()[-1500:]}",
                          hints=("check the kubeconfig and that the cluster is up",))
    # the Ingress's TLS certificate, from the shop's CA in the load generator's (hidden) namespace
    from sregym_appkit.deploy import Kubectl
    from sregym_appkit.ingress import ensure_tls

    ensure_tls(Kubectl(ctx.kubeconfig, ctx.kubectl_path), manifests, WORKLOAD_NAMESPACE)


def problems_dir() -> Path:
    return Path(__file__).parent / "problems"


def app_spec() -> Any:
    from sregym_core.types import AppSpec, WorkloadSpec

    return AppSpec(
        name=NAME, namespace=NAMESPACE, description=DESCRIPTION, display_name=DISPLAY_NAME,
        summary="Astronomy Shop (OpenTelemetry demo topology): 15 services, nginx edge, flagd, Redis cache and broker",
        manifests=manifest_files(), components=components(),
        workload=WorkloadSpec(name="load-generator", namespace=WORKLOAD_NAMESPACE, service="load-generator",
                              port=8089, query_path="/stats", control_path="/control",
                              # a task is recorded by its deadline at the latest (+1 s for scheduling)
                              max_request_s=WORKLOAD_TIMEOUT_S + 1.0),
        images=local_images(), hidden_namespaces=(WORKLOAD_NAMESPACE,), problems_dir=problems_dir(),
        params=dict(DEFAULT_PARAMS), deploy=deploy, deploy_timeout=240.0,
    )
