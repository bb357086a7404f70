"""The AppSpec: inventory, description for agents, manifests, images, workload, deploy."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from typing import TYPE_CHECKING

from sregym_appkit import appspec as kit

from . import IMAGE_REPO, OPERATOR_IMAGE_REPO
from .manifests import DEFAULT_PARAMS, render_yaml, split  # noqa: F401 - render_yaml: kit.app_record makes it AppSpec.render
from .topology import (
    ADMIN_PORT,
    API,
    API_PORT,
    CRD_NAME,
    DATASTORE,
    DATASTORE_PORT,
    LOAD_GENERATOR,
    LOAD_GENERATOR_PORT,
    NAMESPACE,
    OPERATOR,
    WORKLOAD_NAMESPACE,
)

if TYPE_CHECKING:
    from sregym_core.types import AppSpec, ComponentSpec, DeployContext, LocalImage

NAME = "fleetcast"
DISPLAY_NAME = "Fleet Cast"


def components() -> tuple[ComponentSpec, ...]:
    from sregym_core.types import ComponentSpec

    return (
        ComponentSpec(name=API, kind="Deployment", roles=("frontend", "service:http"), ports=(API_PORT, ADMIN_PORT),
                      container=API, env=("PORT", "ADMIN_PORT", "DATASTORE_ADDR"), service=API,
                      labels={"app.kubernetes.io/name": API}, knobs=("load-entrypoint", "ingress")),
        # made by the operator from the DatastoreCluster of the same name: faults of the resource target it
        ComponentSpec(name=DATASTORE, kind="StatefulSet", roles=("db:redis", "stateful", "operator-managed"),
                      ports=(DATASTORE_PORT,), container="redis", service=DATASTORE,
                      labels={"app.kubernetes.io/name": DATASTORE}, knobs=("datastore-cluster",)),
        # no Service fronts the operator (its health port is for the kubelet's probes only)
        ComponentSpec(name=OPERATOR, kind="Deployment", roles=("operator",), ports=(),
                      container="operator", env=("WATCH_NAMESPACES", "HEALTH_PORT"), service=None,
                      labels={"app.kubernetes.io/name": OPERATOR}, knobs=("operator",)),
    )


def local_images() -> tuple[LocalImage, ...]:
    from sregym_core.types import LocalImage

    operator = (sys.executable, "-m", "sregym_app_fleetcast.datastore_operator")
    return (*kit.service_images(IMAGE_REPO, __package__, "api", "FleetCast (argv[1]: api or load-generator)"),
            *(LocalImage(image=f"{OPERATOR_IMAGE_REPO}:{tag}", argv=operator, cmd=(), env={"PYTHONUNBUFFERED": "1"},
                         summary="the DatastoreCluster operator (kopf)") for tag in kit.STABLE_TAGS))


def _kubectl(ctx: DeployContext, *args: str, stdin: str | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([ctx.kubectl_path, "--kubeconfig", str(ctx.kubeconfig), *args], input=stdin,
                          capture_output=True, text=True, timeout=timeout)


def deploy(ctx: DeployContext) -> None:
    """Apply the CRD, wait until it is served, then everything else (and the Ingress's TLS certificate);
    the conductor waits for Ready."""
    import yaml

    from sregym_core.errors import DeployError

    from .manifests import render

    crds, rest = split(render(ctx.params))
    hints = ("the datastore image redis:7.2 needs Debian's redis-server on the node",)
    kit.apply_manifests(ctx, yaml.safe_dump_all(crds, sort_keys=False), WORKLOAD_NAMESPACE,
                        what="the DatastoreCluster CRD", hints=hints)
    wait = _kubectl(ctx, "wait", "--for=condition=Established", f"crd/{CRD_NAME}", "--timeout=60s", timeout=90)
    if wait.returncode != 0:
        raise DeployError(f"the CRD {CRD_NAME} is not served: {wait.stderr.strip()[-500:]}")
    kit.apply_manifests(ctx, yaml.safe_dump_all(rest, sort_keys=False), WORKLOAD_NAMESPACE, what="the app", hints=hints)
    _wait_for_statefulset(ctx)


def _wait_for_statefulset(ctx: DeployContext) -> None:
    """The operator makes the datastore's StatefulSet: wait until it exists, so the conductor's Ready
    wait covers it (else the app could look Ready before its datastore exists)."""
    from sregym_core.errors import DeployError

    deadline = time.monotonic() + float(getattr(ctx, "timeout", 180) or 180)
    while time.monotonic() < deadline:
        proc = _kubectl(ctx, "get", "statefulset", DATASTORE, "-n", NAMESPACE, "-o", "json", "--ignore-not-found",
                        timeout=30)
        if proc.returncode == 0 and proc.stdout.strip() and json.loads(proc.stdout).get("metadata"):
            return
        time.sleep(1)
    raise DeployError(f"the operator did not create the StatefulSet {DATASTORE}",
                      hints=(f"kubectl logs deploy/{OPERATOR} -n {NAMESPACE}",
                             f"kubectl describe datastorecluster {DATASTORE} -n {NAMESPACE}"))


def app_spec() -> AppSpec:
    return kit.app_record(
        __name__, params=DEFAULT_PARAMS, deploy=deploy, deploy_timeout=180.0,
        summary="FleetCast: satellite orbital data on a replicated Redis DatastoreCluster managed by a kopf operator",
        workload=kit.workload_spec(WORKLOAD_NAMESPACE, LOAD_GENERATOR, port=LOAD_GENERATOR_PORT, max_request_s=6.0))
