"""A buggy kube-proxy build rolled out to every node (upstream ``workload_imbalance``).

The ``kube-proxy`` DaemonSet in kube-system is rolled to a ``-buggy`` build of its image; each node's
new pod programs that node's service rules, and the buggy build's rules drop a share of the node's
new connections to Services. The app's callers time out on a dropped connection (a gRPC client's
one connection stays stuck until it gives up and reconnects), so users see errors that no
app-level object explains: every Deployment, Service and Endpoints object is right. The fix is
cluster-scoped: roll the DaemonSet back to the good image (the agent is granted exactly that one
object). Needs the embedded cluster, whose service proxy follows each node's kube-proxy pod; a
real cluster would only fail to pull the made-up tag.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from sregym_core.errors import PermanentFaultError
from sregym_core.faultkit import function_fault, kube, users
from sregym_core.types import FaultSpec, TargetSelector

if TYPE_CHECKING:
    from collections.abc import Mapping

    from sregym_core.faults import FaultContext
    from sregym_core.types import Target


NAMESPACE, NAME, CONTAINER = "kube-system", "kube-proxy", "kube-proxy"
SUFFIX = "-buggy"
DEFAULT_IMAGE = "registry.k8s.io/kube-proxy:v1.32.4"  # the embedded cluster's (before an injection records it)
SERVICE = TargetSelector(kinds=("Deployment",), requires=("service",), exclude_roles=("workload-generator",))


def _daemonset(ctx: FaultContext) -> dict | None:
    return kube.get(ctx, "daemonset", NAME, namespace=NAMESPACE, missing_ok=True)


def _image(ds: dict) -> str:
    containers = ds["spec"]["template"]["spec"].get("containers") or []
    found = next((c for c in containers if c.get("name") == CONTAINER), containers[0] if containers else {})
    return found.get("image", "")


def _pod_images(ctx: FaultContext) -> list[str]:
    """The images kube-proxy's pods run (one per node)."""
    out = ctx.kubectl("get", "pods", "-n", NAMESPACE, "-l", "k8s-app=kube-proxy", "-o", "json")
    return [c.get("image", "") for p in json.loads(out)["items"] if not p["metadata"].get("deletionTimestamp")
            for c in p["spec"].get("containers") or [] if c.get("name") == CONTAINER]


def _set_image(ctx: FaultContext, image: str) -> None:
    ctx.kubectl("set", "image", f"daemonset/{NAME}", "-n", NAMESPACE, f"{CONTAINER}={image}")
    ctx.kubectl("rollout", "status", f"daemonset/{NAME}", "-n", NAMESPACE, "--timeout=120s", timeout=130)


def inject(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    ds = _daemonset(ctx)
    if ds is None:
        raise PermanentFaultError(f"this cluster has no {NAMESPACE}/{NAME} DaemonSet",
                                  hints=("the embedded cluster installs it unless SREGYM_EMBEDDED_KUBE_PROXY=0",))
    good = _image(ds)
    if good.endswith(SUFFIX):
        raise PermanentFaultError(f"{NAMESPACE}/{NAME} already runs a buggy build ({good})")
    ctx.state.update(good_image=good, image=good + SUFFIX)
    _set_image(ctx, good + SUFFIX)


def is_present(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> bool:
    ds = _daemonset(ctx)
    if ds is None:
        return True  # deleting kube-proxy leaves the rules its pods programmed on the nodes
    return _image(ds).endswith(SUFFIX) or any(image.endswith(SUFFIX) for image in _pod_images(ctx))


def _roll_back(ctx: FaultContext) -> None:
    ds = _daemonset(ctx)
    image = _image(ds) if ds else ""
    good = ctx.state.get("good_image") or image.removesuffix(SUFFIX)
    if ds is not None and image != good:
        _set_image(ctx, good)


def fix(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    _roll_back(ctx)
    # callers stuck on a dropped connection reconnect on their own back-off: wait, as an SRE would
    users.wait_users_succeed(ctx)  # as an SRE watches the site


def recover(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    if "good_image" in ctx.state:
        _roll_back(ctx)
        users.wait_users_after_recover(ctx, target)


# how an SRE says "the nodes' service proxy is a broken build"; bare "kube-proxy" is left out (its
# conntrack sizing is another fault)
VOCABULARY = (
    "kube-proxy .. image", "kube-proxy .. build", "kube-proxy .. version", "kube-proxy .. buggy",
    "kube-proxy .. bug*", "kube-proxy .. broken", "kube-proxy .. defective", "kube-proxy .. regression",
    "buggy .. kube-proxy", "broken .. kube-proxy", "kube-proxy .. roll* back", "roll* back .. kube-proxy",
    "kube-proxy .. drop*", "kube-proxy daemonset", "proxy daemonset", "service proxy .. buggy",
    "service proxy .. broken", "service proxy .. drop*", "iptables rules .. drop*", "proxy rules .. drop*",
)

FAULTS: list[FaultSpec] = [
    function_fault(
        name="kube-proxy-buggy-image", summary="the kube-proxy DaemonSet rolled to a buggy build that drops connections",
        layer="network", selector=SERVICE, resource_kind="DaemonSet", capabilities={"embedded"},
        mechanism="the kube-system/kube-proxy DaemonSet's image was changed to a buggy build; its rules on every "
                  "node drop a share of new connections to Services",
        inject=inject, is_present=is_present, recover=recover, reference_fix=fix,
        symptoms=("connection timeouts", "intermittent errors", "deadline exceeded"),
        keywords=("kube-proxy", "DaemonSet", "kube-system", "image", "buggy"),
        values=lambda t, p, s: {"daemonset": f"{NAMESPACE}/{NAME}",
                                "image": s.get("image") or DEFAULT_IMAGE + SUFFIX,
                                "good_image": s.get("good_image") or DEFAULT_IMAGE},
        prose="The kube-proxy DaemonSet ({daemonset}) was rolled to the buggy build {image} (was {good_image}): "
              "its rules on every node drop a share of new connections to Services, so {component}'s calls time "
              "out.", vocabulary=VOCABULARY,
    ),
]

__all__ = ["FAULTS"]
