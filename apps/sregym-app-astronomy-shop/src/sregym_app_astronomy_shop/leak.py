"""The ``queue-producer-leak`` fault: a producer sidecar fills the order broker's memory.

Inject adds a sidecar ``order-exporter`` (:mod:`exporter`) to checkout's pod: it publishes a 4 MiB
"order snapshot" twice a second to the stream ``orders-export`` on the broker ``queue``, with no length
cap and no consumer (a refused snapshot is retried in halves, so the last free bytes go too). Within
about half a minute the broker reaches its ``maxmemory`` (128 MB, policy noeviction) and refuses every write with ``OOM command not allowed when used memory >
'maxmemory'``: checkout can no longer publish orders (``queue_publish_failed``) and fraud-detection
cannot record its verdicts, so no order is ever confirmed and every checkout fails for the user.

The fix an SRE makes: remove the leaking producer (the sidecar) and free the broker's memory by
deleting the stream it filled (restarting the in-memory broker frees it too, losing the queued
orders). The fault is present while the sidecar is in checkout's pod template or the stream still
exists.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from sregym_core.errors import FaultError
from sregym_core.faultkit import kube
from sregym_core.faultkit.functions import function_fault
from sregym_core.types import Target, TargetSelector

from . import IMAGE_REPO, IMAGE_TAG
from .faults import _cli

if TYPE_CHECKING:
    from sregym_core.faults import FaultContext

SIDECAR, STREAM = "order-exporter", "orders-export"
MESSAGE_BYTES = 4 << 20


def sidecar(image: str) -> dict[str, Any]:
    env = {"QUEUE_ADDR": "queue:6379", "EXPORT_STREAM": STREAM, "EXPORT_MESSAGE_BYTES": str(MESSAGE_BYTES),
           "EXPORT_INTERVAL_S": "0.5"}
    return {"name": SIDECAR, "image": image, "args": [SIDECAR], "env": [{"name": k, "value": v} for k, v in env.items()],
            "resources": {"requests": {"cpu": "10m", "memory": "32Mi"}, "limits": {"cpu": "200m", "memory": "128Mi"}}}


def _containers(obj: dict[str, Any]) -> list[dict[str, Any]]:
    return list(kube.pod_spec(obj).get("containers") or [])


def _image(obj: dict[str, Any]) -> str:
    for c in _containers(obj):
        if str(c.get("image", "")).startswith(IMAGE_REPO + ":"):
            return str(c["image"])
    return f"{IMAGE_REPO}:{IMAGE_TAG}"


def _queue(ctx: FaultContext) -> Target:
    component = ctx.app.component("queue")
    assert component is not None, "Astronomy Shop has a queue component"  # the app's own topology
    return Target(app=ctx.app, component=component, namespace=ctx.namespace)


def inject(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    obj = kube.workload(ctx, target)
    if any(c.get("name") == SIDECAR for c in _containers(obj)):
        return
    kube.patch(ctx, target.component.kind.lower(), target.component.name,
               [{"op": "add", "path": "/spec/template/spec/containers/-", "value": sidecar(_image(obj))}], type="json")
    _rolled_out(ctx, target)  # what users see next is the leak's doing, not the rollout's


def _rolled_out(ctx: FaultContext, target: Target) -> None:
    ctx.kubectl("rollout", "status", f"{target.component.kind.lower()}/{target.component.name}", "-n", ctx.namespace,
                "--timeout=180s", timeout=200)


def _stream_exists(ctx: FaultContext) -> bool:
    out = _cli(ctx, _queue(ctx), "EXISTS", STREAM).strip()
    if out not in ("0", "1"):
        raise FaultError(f"queue-producer-leak: cannot ask the broker whether {STREAM} exists: {out[:200]!r}",
                         hints=("is the queue pod running?",))
    return out == "1"


def is_present(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> bool:
    if any(c.get("name") == SIDECAR for c in _containers(kube.workload(ctx, target))):
        return True
    return _stream_exists(ctx)


def fix(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    """Remove the sidecar, wait until no pod runs it, then delete the stream it filled (also when the
    Deployment itself is gone: the broker must not stay full)."""
    obj = kube.get(ctx, target.component.kind.lower(), target.component.name, missing_ok=True)
    index = next((i for i, c in enumerate(_containers(obj)) if c.get("name") == SIDECAR), None) if obj else None
    if index is not None:
        kube.patch(ctx, target.component.kind.lower(), target.component.name,
                   [{"op": "remove", "path": f"/spec/template/spec/containers/{index}"}], type="json")
        _rolled_out(ctx, target)
    _cli(ctx, _queue(ctx), "UNLINK", STREAM)


def _values(target: Target, params: dict, state: dict) -> dict:
    return {"sidecar": SIDECAR, "stream": STREAM, "message_bytes": MESSAGE_BYTES, "broker": "queue",
            "maxmemory": "128mb (noeviction)", "broker_error": "OOM command not allowed when used memory > 'maxmemory'"}


VOCABULARY = ("memory leak", "producer leak", "leaking producer", "broker + out of memory", "broker + memory",
              "queue + memory", "maxmemory", "oom command not allowed", "broker + full", "sidecar + messages",
              "large messages", "stream + grows", "unbounded stream", "no maxlen")
MECHANISM = ("a sidecar producer (order-exporter) in checkout's pod publishes large messages to an uncapped stream "
             "on the order broker until the broker hits maxmemory and rejects every write")
SYMPTOMS = ("errors", "orders not confirmed", "queue_publish_failed", "OOM command not allowed")


def faults() -> list[Any]:
    return [function_fault(
        name="queue-producer-leak",
        summary="a producer sidecar fills the order broker with large uncapped messages until writes fail",
        layer="app", selector=TargetSelector(kinds=("Deployment",), requires=("env:QUEUE_ADDR",),
                                 exclude_roles=("workload-generator", "queue-consumer")),  # the producer: checkout
        inject=inject, is_present=is_present, recover=fix, reference_fix=fix,
        resource_kind="Deployment", mechanism=MECHANISM, symptoms=SYMPTOMS,
        keywords=("sidecar", "order-exporter", "orders-export", "maxmemory", "OOM", "broker memory", "queue"),
        values=_values, vocabulary=VOCABULARY,
        prose="A sidecar {sidecar} added to {component}'s pod publishes {message_bytes}-byte messages twice a second to "
              "the uncapped stream {stream} on the broker {broker}, which nothing consumes or trims; the broker "
              "reached its maxmemory {maxmemory} and rejects writes ({broker_error}), so checkout cannot publish "
              "orders and they are never confirmed. Removing the sidecar and deleting the stream fixes it.")]
