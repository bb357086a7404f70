"""HorizontalPodAutoscaler (autoscaling/v2) on CPU utilization from the node runtime's pod usage."""

from __future__ import annotations

import asyncio
import math
import time

from sregym_core.quantity import quantity_or_zero

from .base import Controller, Key
from .util import Obj, is_deleting, is_pod_active, match_selector, name_of, rfc3339, set_condition
from .writes import write_status

COMPONENT = "horizontal-pod-autoscaler"
TOLERANCE = 0.1
TARGETS = {"Deployment": "deployments.apps", "StatefulSet": "statefulsets.apps", "ReplicaSet": "replicasets.apps"}


class MetricProblem(Exception):
    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason, self.message = reason, message


class HorizontalPodAutoscalerController(Controller):
    name = "hpa"
    component = COMPONENT

    def setup(self) -> None:
        self.hpas = self.watch("horizontalpodautoscalers.autoscaling")
        self.pods = self.ctx.informer("pods")
        self.targets = {kind: self.ctx.informer(res) for kind, res in TARGETS.items()}
        self.recommendations: dict[Key, list[tuple[float, int]]] = {}
        self._ticker: asyncio.Task | None = None

    def start(self) -> None:
        super().start()
        self._ticker = asyncio.create_task(self._tick(), name="hpa-sync")

    async def stop(self) -> None:
        if self._ticker:
            self._ticker.cancel()
            try:
                await self._ticker
            except (asyncio.CancelledError, Exception):
                pass
        await super().stop()

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(self.ctx.timings.hpa_sync_seconds)
            for hpa in self.hpas.list():
                self.enqueue((hpa["metadata"].get("namespace", ""), name_of(hpa)))

    def utilization(self, pods: list[Obj], ns: str) -> tuple[int, int]:
        """(average utilization %, average millicores) over pods, or MetricProblem."""
        usage_of = self.ctx.usage
        if usage_of is None:
            raise MetricProblem("FailedGetResourceMetric", "failed to get cpu utilization: unable to get metrics for "
                                "resource cpu: no metrics returned from resource metrics API")
        requested = used = 0
        counted = 0
        for pod in pods:
            for container in pod.get("spec", {}).get("containers") or []:
                req = ((container.get("resources") or {}).get("requests") or {}).get("cpu")
                if req is None:
                    raise MetricProblem("FailedGetResourceMetric", "failed to get cpu utilization: missing request for "
                                        f"cpu in container {container.get('name')} of Pod {name_of(pod)}")
            try:
                usage = usage_of(ns, name_of(pod)) or {}
            except Exception:
                usage = {}
            if not usage:
                continue
            counted += 1
            used += sum(int(cpu) for cpu, _ in usage.values()) // 1_000_000  # nanocores -> millicores
            requested += sum(_cpu_request_millis(c) for c in pod.get("spec", {}).get("containers") or [])
        if not counted or not requested:
            raise MetricProblem("FailedGetResourceMetric", "failed to get cpu utilization: unable to get metrics for "
                                "resource cpu: no metrics returned from resource metrics API")
        return int(round(100 * used / requested)), used // counted

    async def reconcile(self, key: Key) -> None:
        hpa = self.hpas.get(*key)
        if hpa is None or is_deleting(hpa):
            self.recommendations.pop(key, None)
            return
        ns = key[0]
        spec = hpa.get("spec", {})
        ref = spec.get("scaleTargetRef") or {}
        previous = hpa.get("status") or {}
        conds = list(previous.get("conditions") or [])
        cache = self.targets.get(ref.get("kind", ""))
        target = cache.get(ns, ref.get("name", "")) if cache else None
        status: Obj = {k: v for k, v in previous.items() if k in ("lastScaleTime",)}
        if target is None:
            conds = set_condition(conds, "AbleToScale", "False", "FailedGetScale",
                                  f"the HPA controller was unable to get the target's current scale: "
                                  f'{TARGETS.get(ref.get("kind", ""), ref.get("kind", "")).split(".")[0]} '
                                  f'"{ref.get("name")}" not found', probe_field="lastTransitionTime")
            await self.ctx.event(hpa, "FailedGetScale", conds[-1]["message"], type="Warning", component=COMPONENT)
            status.update(currentReplicas=0, desiredReplicas=0, conditions=conds)
            await write_status(self.client, "horizontalpodautoscalers.autoscaling", hpa, status, self.hpas)
            return
        current = int(target.get("spec", {}).get("replicas", 1) or 0)
        pods = [p for p in self.pods.list(ns) if is_pod_active(p)
                and match_selector(target.get("spec", {}).get("selector"), p["metadata"].get("labels"), empty_matches=False)]
        lo = int(spec.get("minReplicas") or 1)
        hi = int(spec.get("maxReplicas") or lo)
        target_pct = self._target_utilization(spec)
        conds = set_condition(conds, "AbleToScale", "True", "SucceededGetScale",
                              "the HPA controller was able to get the target's current scale", probe_field="lastTransitionTime")
        desired = current
        try:
            util, avg_milli = self.utilization(pods, ns)
            status["currentMetrics"] = [{"type": "Resource", "resource": {"name": "cpu", "current": {
                "averageUtilization": util, "averageValue": f"{avg_milli}m"}}}]
            ratio = util / target_pct if target_pct else 1.0
            if abs(ratio - 1.0) > TOLERANCE and current > 0:
                desired = math.ceil(current * ratio)
            conds = set_condition(conds, "ScalingActive", "True", "ValidMetricFound",
                                  "the HPA was able to successfully calculate a replica count from cpu resource "
                                  "utilization (percentage of request)", probe_field="lastTransitionTime")
        except MetricProblem as problem:
            status["currentMetrics"] = [{"type": "Resource", "resource": {"name": "cpu", "current": {}}}]
            conds = set_condition(conds, "ScalingActive", "False", problem.reason,
                                  f"the HPA was unable to compute the replica count: {problem.message}",
                                  probe_field="lastTransitionTime")
            await self.ctx.event(hpa, problem.reason, problem.message, type="Warning", component=COMPONENT)
        desired = self._stabilize(key, desired, current)
        limited = desired < lo or desired > hi
        bounded = min(max(desired, lo), hi)
        if limited:
            reason, msg = ("TooFewReplicas", "the desired replica count is less than the minimum replica count") \
                if desired < lo else ("TooManyReplicas", "the desired replica count is more than the maximum replica count")
            conds = set_condition(conds, "ScalingLimited", "True", reason, msg, probe_field="lastTransitionTime")
        else:
            conds = set_condition(conds, "ScalingLimited", "False", "DesiredWithinRange",
                                  "the desired count is within the acceptable range", probe_field="lastTransitionTime")
        if bounded != current and current > 0:
            resource = TARGETS[ref["kind"]]
            await self.client.patch(resource, ref["name"], {"spec": {"replicas": bounded}}, ns)
            why = "cpu resource utilization (percentage of request) above target" if bounded > current else \
                "All metrics below target"
            await self.ctx.event(hpa, "SuccessfulRescale", f"New size: {bounded}; reason: {why}", component=COMPONENT)
            status["lastScaleTime"] = rfc3339()
        status.update(currentReplicas=current, desiredReplicas=bounded if current > 0 else current, conditions=conds)
        await write_status(self.client, "horizontalpodautoscalers.autoscaling", hpa, status, self.hpas)

    def _target_utilization(self, spec: Obj) -> int:
        for metric in spec.get("metrics") or []:
            res = metric.get("resource") or {}
            if metric.get("type") == "Resource" and res.get("name") == "cpu":
                return int((res.get("target") or {}).get("averageUtilization") or 80)
        return int(spec.get("targetCPUUtilizationPercentage") or 80)

    def _stabilize(self, key: Key, desired: int, current: int) -> int:
        """Scale down only to the highest recommendation of the stabilization window (300 s default)."""
        window = float(getattr(self.ctx.settings, "hpa_downscale_stabilization", 300) or 0)
        now = time.monotonic()
        recs = [(t, r) for t, r in self.recommendations.get(key, []) if now - t <= window]
        recs.append((now, desired))
        self.recommendations[key] = recs
        if desired < current:
            return min(current, max(r for _, r in recs))
        return desired


def _cpu_request_millis(container: Obj) -> int:
    """A container's CPU request in millicores, rounded to the nearest; unset or malformed counts as 0."""
    request = ((container.get("resources") or {}).get("requests") or {}).get("cpu")
    return round(quantity_or_zero(request) * 1000)
