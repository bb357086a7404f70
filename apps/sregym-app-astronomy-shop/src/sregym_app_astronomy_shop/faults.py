"""The app's own fault primitive: a flagd feature flag turned on, the demo's way to break a service.

``flagd-flag`` edits the ConfigMap ``flagd-config`` (flagd's JSON), setting one flag's
``defaultVariant``; flagd reloads it and the owning service changes behaviour within seconds, with
no rollout. The target is the service the flag breaks (``topology.FLAGS``), so the diagnosis must
name it; the reference fix sets the flag back to ``off`` as an SRE would. The fault is present
while the flag's variant in the ConfigMap is still the injected one (whoever changed it).
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs

from sregym_core.errors import FaultError, TemporaryFaultError
from sregym_core.faultkit import flagd, schema
from sregym_core.faultkit.functions import function_fault
from sregym_core.types import TargetSelector

from .topology import FLAGS

if TYPE_CHECKING:
    from sregym_core.faults import FaultContext
    from sregym_core.types import Target

CONFIG_MAP = "flagd-config"
KEY = "demo.flagd.json"


def _flag(target: Target, params: Mapping[str, Any]) -> tuple[str, str]:
    """(flag, faulty variant) from params; without ``flag``, the first flag the target owns."""
    owned = sorted(name for name, (_v, owner, _on) in FLAGS.items() if owner == target.component.name)
    flag = str(params.get("flag") or (owned[0] if owned else ""))
    if flag not in FLAGS:
        raise FaultError(f"flagd-flag: unknown flag {flag!r}", hints=(f"one of: {', '.join(sorted(FLAGS))}",))
    variants, owner, on = FLAGS[flag]
    if owner != target.component.name:
        raise FaultError(f"flagd-flag: flag {flag} changes {owner}, not {target.component.name}",
                         hints=(f"target {owner} for {flag}",))
    variant = str(params.get("variant") or on)
    if variant not in variants or variant == "off":
        raise FaultError(f"flagd-flag: {flag} has no faulty variant {variant!r}",
                         hints=(f"one of: {', '.join(v for v in variants if v != 'off')}",))
    return flag, variant


def _set(ctx: FaultContext, flag: str, variant: str) -> None:
    flagd.set_flags(ctx, CONFIG_MAP, KEY, {flag: variant}, fault="flagd-flag",
                    shipped=lambda name: {"state": "ENABLED", "variants": dict(FLAGS[name][0]), "defaultVariant": "off"})


#: how long flagd may take to serve a ConfigMap change: the kubelet re-projects the volume (10 s on the
#: embedded cluster, up to a minute or two on a real one), then flagd re-reads the file within a second
SERVE_TIMEOUT_S = 150.0
FLAGD_PORT = 8016


def served_variant(ctx: FaultContext, flag: str) -> str | None:
    """The variant flagd answers for ``flag`` now (see :func:`sregym_core.faultkit.flagd.served_variant`)."""
    return flagd.served_variant(ctx, flag, service="flagd", port=FLAGD_PORT, fault="flagd-flag")


def _wait_served(ctx: FaultContext, flag: str, variant: str) -> None:
    """Return once flagd serves ``variant`` for ``flag``: the change has reached the services."""
    flagd.wait_served(ctx, flag, variant, service="flagd", port=FLAGD_PORT, fault="flagd-flag",
                      timeout=SERVE_TIMEOUT_S)


def inject(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    flag, variant = _flag(target, params)
    ctx.state["flag"], ctx.state["variant"] = flag, variant
    _set(ctx, flag, variant)
    _wait_served(ctx, flag, variant)


def is_present(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> bool:
    flag, variant = _flag(target, params)
    entry = (flagd.read_flags(ctx, CONFIG_MAP, KEY, fault="flagd-flag").get("flags") or {}).get(flag) or {}
    return entry.get("state") == "ENABLED" and entry.get("defaultVariant") == variant


def recover(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    flag, _variant = _flag(target, params)
    _set(ctx, flag, "off")
    _wait_served(ctx, flag, "off")


def _values(target: Target, params: dict, state: dict) -> dict:
    flag, variant = _flag(target, params)
    # flagd is involved (it serves the flag), not an unrelated component a diagnosis wrongly blames
    return {"flag": flag, "configmap": CONFIG_MAP, "served_by": "flagd",
            "defaultVariant": {"before": "off", "after": variant}}


#: how SREs say "a flag was turned on" (judge-rules pattern syntax: ``a + b`` = both in one sentence)
VOCABULARY = flagd.VOCABULARY
MECHANISM = "feature flag turned on in the flag configuration (ConfigMap flagd-config)"
SYMPTOMS = ("errors", "high latency", "failed requests")


def faults() -> list[Any]:
    return [function_fault(
        name="flagd-flag", summary="a flagd feature flag is turned on and breaks the service it controls", layer="app",
        selector=TargetSelector(kinds=("Deployment",), requires=("knob:flagd",)),
        params_schema=schema(flag={"type": "string", "enum": sorted(FLAGS)}, variant={"type": "string"}),
        inject=inject, is_present=is_present, recover=recover,
        resource_kind="ConfigMap", mechanism=MECHANISM, symptoms=SYMPTOMS,
        keywords=("feature flag", "flag", "defaultVariant", "flagd-config"), values=_values, vocabulary=VOCABULARY,
        identified_by=("flag",),  # which flag: the fault is told from the other flags by its name
        prose="The feature flag {flag} in the ConfigMap {configmap} (served by {served_by}) was switched on, so "
              "requests to {component} fail with errors or high latency; setting the flag back to off fixes it.")]


# --- the queue's poison pill -------------------------------------------------------------------

STREAM, GROUPS = "orders", ("accounting", "fraud-detection")
POISON = "not-an-order"


def _queue_pod(ctx: FaultContext, target: Target) -> str:
    selector = ",".join(f"{k}={v}" for k, v in target.component.labels.items())
    pods = json.loads(ctx.kubectl("get", "pods", "-n", ctx.namespace, "-l", selector, "-o", "json"))["items"]
    for pod in pods:
        ready = {c["type"]: c["status"] for c in pod.get("status", {}).get("conditions", [])}.get("Ready")
        if ready == "True" and not pod["metadata"].get("deletionTimestamp"):
            return str(pod["metadata"]["name"])
    raise TemporaryFaultError(f"no ready pod of {target.component.name} to run redis-cli in", delay=2.0)


def _cli(ctx: FaultContext, target: Target, *args: str) -> str:
    command = 'redis-cli -h "${POD_IP:-127.0.0.1}" ' + " ".join(shlex.quote(a) for a in args)
    return ctx.kubectl("exec", _queue_pod(ctx, target), "-n", ctx.namespace, "--", "sh", "-c", command, check=False)


def _id_key(entry_id: str) -> tuple[int, int]:
    ms, _, seq = entry_id.partition("-")
    return int(ms or 0), int(seq or 0)


def poison_inject(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    # the last order before the pill: while it is in the stream, so are the orders queued behind the pill
    last = _cli(ctx, target, "XREVRANGE", STREAM, "+", "-", "COUNT", "1").split()
    out = _cli(ctx, target, "XADD", STREAM, "*", "order", POISON).strip()
    if not re.fullmatch(r"\d+-\d+", out):
        raise FaultError(f"queue-poison-pill: XADD failed: {out[:200]}", hints=("is the queue pod running?",))
    ctx.state["poison_id"] = out
    ctx.state["anchor_id"] = last[0] if last and re.fullmatch(r"\d+-\d+", last[0]) else ""


def poison_present(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> bool:
    entry = ctx.state.get("poison_id")
    if not entry:
        return False
    anchor = ctx.state.get("anchor_id")
    if anchor and not _cli(ctx, target, "XRANGE", STREAM, anchor, anchor).strip():
        return True  # the stream was wiped (a broker restart) or trimmed: the orders behind the pill are lost
    exists = bool(_cli(ctx, target, "XRANGE", STREAM, entry, entry).strip())
    groups = _cli(ctx, target, "XINFO", "GROUPS", STREAM).split()
    for group in GROUPS:
        if _cli(ctx, target, "XPENDING", STREAM, group, entry, entry, "1").strip():
            return True  # delivered, never acknowledged: the group is stuck on it
        try:
            delivered = groups[groups.index("last-delivered-id", groups.index(group)) + 1]
        except (ValueError, IndexError):
            continue
        if exists and _id_key(delivered) < _id_key(entry):
            return True  # still ahead of the group: it will block it when reached
    return False


def poison_fix(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    """Skip the bad record as an SRE would: delete it from the stream and acknowledge it for every group."""
    entry = ctx.state.get("poison_id")
    if not entry:
        return
    _cli(ctx, target, "XDEL", STREAM, entry)
    for group in GROUPS:
        _cli(ctx, target, "XACK", STREAM, group, entry)


def queue_faults() -> list[Any]:
    spec = function_fault(
        name="queue-poison-pill", summary="a malformed record blocks the in-order consumers of the order stream",
        layer="app", selector=TargetSelector(kinds=("Deployment",), roles=("queue:redis-streams",)),
        inject=poison_inject, is_present=poison_present, recover=poison_fix, reference_fix=poison_fix,
        resource_kind="message queue record",
        mechanism="a record that is not an order (a poison pill) sits in the orders stream; the in-order consumers "
                  "accounting and fraud-detection retry it forever and stop consuming",
        symptoms=("consumer lag", "message_processing_failed", "errors"),
        keywords=("poison", "bad message", "consumer lag", "stream", "offset"),
        values=lambda t, p, s: {"stream": STREAM, "message_id": s.get("poison_id", ""), "payload": POISON,
                                "blocked_groups": list(GROUPS)},
        vocabulary=("poison pill", "poison message", "poison record", "bad message", "malformed message",
                    "malformed record", "bad record", "invalid message", "record + not an order",
                    "invalid record", "corrupt message", "message + cannot be parsed", "stuck .. message",
                    "head of line", "consumer* + stuck", "consumer* + blocked"),
        prose="A malformed record ({payload}, id {message_id}) was published to the {stream} stream on {component}, "
              "so the in-order consumer groups accounting and fraud-detection fail on it and retry it forever and "
              "consumer lag grows; deleting and acknowledging the record fixes it.")
    # the ground truth names the errors users get too; the fault's record lists the queue's own two symptoms
    return [attrs.evolve(spec, symptoms=("consumer lag", "message_processing_failed"))]
