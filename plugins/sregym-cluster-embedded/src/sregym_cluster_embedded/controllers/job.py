"""Job controller: parallel pods up to completions, back-off on failure, deadlines, TTL after finish."""

from __future__ import annotations

from datetime import timedelta

from .base import Controller, Key
from .replicaset import pod_from_template
from .util import (
    Obj,
    get_condition,
    is_controlled_by,
    is_deleting,
    is_pod_ready,
    name_of,
    now,
    parse_time,
    random_suffix,
    rfc3339,
    uid_of,
)
from .writes import api_error_code, api_error_message, prune_zero, write_status

COMPONENT = "job-controller"
INDEX = "batch.kubernetes.io/job-completion-index"


def finished(job: Obj) -> str | None:
    for kind in ("Complete", "Failed"):
        cond = get_condition(job, kind)
        if cond and cond.get("status") == "True":
            return kind
    return None


class JobController(Controller):
    name = "job"
    component = COMPONENT

    def setup(self) -> None:
        self.jobs = self.watch("jobs.batch")
        self.pods = self.watch("pods", lambda _e, pod, _o: self.enqueue_owner(pod, "Job"))

    def owned(self, job: Obj) -> list[Obj]:
        return [p for p in self.pods.list(job["metadata"].get("namespace", "")) if is_controlled_by(p, job)]

    async def reconcile(self, key: Key) -> None:
        job = self.jobs.get(*key)
        if job is None or is_deleting(job):
            return
        if finished(job):
            await self._ttl(job)
            return
        spec = job.get("spec", {})
        pods = self.owned(job)
        active = [p for p in pods if (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed") and not is_deleting(p)]
        succeeded_pods = [p for p in pods if (p.get("status") or {}).get("phase") == "Succeeded"]
        failed_pods = [p for p in pods if (p.get("status") or {}).get("phase") == "Failed"]
        previous = job.get("status") or {}
        succeeded = max(len(succeeded_pods), int(previous.get("succeeded") or 0))
        # with restartPolicy OnFailure the kubelet restarts containers in place: restarts count as failures
        restarts = sum(c.get("restartCount", 0) for p in active for c in (p.get("status") or {}).get("containerStatuses") or []) \
            if (spec.get("template", {}).get("spec") or {}).get("restartPolicy") == "OnFailure" else 0
        failed = max(len(failed_pods), int(previous.get("failed") or 0))
        failed_for_limit = max(failed, len(failed_pods) + restarts)
        completions = spec.get("completions")
        parallelism = int(spec.get("parallelism", 1) if spec.get("parallelism") is not None else 1)
        backoff_limit = int(spec.get("backoffLimit", 6) if spec.get("backoffLimit") is not None else 6)
        status: Obj = {k: v for k, v in previous.items() if k in ("startTime", "conditions", "completedIndexes")}
        status.setdefault("startTime", rfc3339())
        conditions = list(status.get("conditions") or [])
        outcome: tuple[str, str, str] | None = None
        if spec.get("suspend"):
            await self._kill(job, active)
            active = []
            conditions = _upsert(conditions, "Suspended", "True", "JobSuspended", "Job suspended")
            status.pop("startTime", None)
        elif failed_for_limit > backoff_limit:
            outcome = ("Failed", "BackoffLimitExceeded", "Job has reached the specified backoff limit")
        elif spec.get("activeDeadlineSeconds") is not None and (now() - (parse_time(status["startTime"]) or now())) \
                .total_seconds() >= int(spec["activeDeadlineSeconds"]):
            outcome = ("Failed", "DeadlineExceeded", "Job was active longer than specified deadline")
        elif (completions is not None and succeeded >= int(completions)) or \
                (completions is None and succeeded >= 1 and not active):
            outcome = ("Complete", "CompletionsReached", "Reached expected number of succeeded pods")
        if outcome is not None:
            kind, reason, message = outcome
            await self._kill(job, active)
            active = []
            pre = "SuccessCriteriaMet" if kind == "Complete" else "FailureTarget"
            conditions = _upsert(conditions, pre, "True", reason, message)
            conditions = _upsert(conditions, kind, "True", reason, message)
            if kind == "Complete":
                status["completionTime"] = rfc3339()
                await self.ctx.event(job, "Completed", "Job completed", component=COMPONENT)
            else:
                await self.ctx.event(job, reason, message, type="Warning", component=COMPONENT)
        elif not spec.get("suspend"):
            remaining = (int(completions) - succeeded) if completions is not None else (0 if succeeded else parallelism)
            want = min(parallelism, max(0, remaining)) - len(active)
            if want > 0:
                delay = self._backoff_delay(failed, failed_pods)
                if delay > 0:
                    self.enqueue(key, delay)
                else:
                    created = await self._create(job, want, pods, succeeded_pods)
                    active += created
            elif want < 0:
                await self._kill(job, active[: -want])
                active = active[: len(active) + want]
            if spec.get("activeDeadlineSeconds") is not None:
                left = int(spec["activeDeadlineSeconds"]) - (now() - (parse_time(status["startTime"]) or now())).total_seconds()
                self.enqueue(key, max(0.1, left))
        status.update(active=len(active), succeeded=succeeded, failed=failed,
                      ready=sum(1 for p in active if is_pod_ready(p)), terminating=0,
                      uncountedTerminatedPods={})
        if conditions:
            status["conditions"] = conditions
        if spec.get("completionMode") == "Indexed":
            done = sorted({int(p["metadata"].get("annotations", {}).get(INDEX, -1)) for p in succeeded_pods} - {-1})
            if done:
                status["completedIndexes"] = _ranges(done)
        prune_zero(status, "active", "succeeded", "failed", "terminating")
        job = await write_status(self.client, "jobs.batch", job, status, self.jobs)
        if outcome is not None:
            await self._ttl(job)

    def _backoff_delay(self, failed: int, failed_pods: list[Obj]) -> float:
        if not failed:
            return 0.0
        t = self.ctx.timings
        delay = min(t.job_backoff_base * 2 ** (failed - 1), t.job_backoff_max)
        last = max((parse_time((p.get("status") or {}).get("startTime") or p["metadata"].get("creationTimestamp"))
                    for p in failed_pods), default=None, key=lambda d: d or now())
        if last is None:
            return 0.0
        return max(0.0, (last + timedelta(seconds=delay) - now()).total_seconds())

    async def _create(self, job: Obj, count: int, pods: list[Obj], succeeded: list[Obj]) -> list[Obj]:
        spec = job["spec"]
        ns = job["metadata"].get("namespace", "")
        indexed = spec.get("completionMode") == "Indexed"
        taken = {p["metadata"].get("annotations", {}).get(INDEX) for p in pods
                 if (p.get("status") or {}).get("phase") != "Failed" and not is_deleting(p)}
        free_indexes = [str(i) for i in range(int(spec.get("completions") or 1)) if str(i) not in taken]
        created = []
        for i in range(count):
            if indexed and i >= len(free_indexes):
                break
            name = f"{name_of(job)}-{free_indexes[i]}-{random_suffix()}" if indexed else f"{name_of(job)}-{random_suffix()}"
            pod = pod_from_template(spec.get("template") or {}, job, name, ns)
            labels = pod["metadata"]["labels"]
            labels.setdefault("batch.kubernetes.io/controller-uid", uid_of(job))
            labels.setdefault("controller-uid", uid_of(job))
            labels.setdefault("batch.kubernetes.io/job-name", name_of(job))
            labels.setdefault("job-name", name_of(job))
            if indexed:
                pod["metadata"].setdefault("annotations", {})[INDEX] = free_indexes[i]
                labels[INDEX] = free_indexes[i]
                for c in pod["spec"].get("containers") or []:
                    c.setdefault("env", []).append({"name": "JOB_COMPLETION_INDEX", "valueFrom": {"fieldRef": {
                        "fieldPath": f"metadata.annotations['{INDEX}']"}}})
            try:
                new = await self.client.create("pods", pod, ns)
            except Exception as exc:
                await self.ctx.event(job, "FailedCreate", f"Error creating: {api_error_message(exc)}",
                                     type="Warning", component=COMPONENT)
                self.enqueue((ns, name_of(job)), 5.0)
                break
            self.pods.upsert(new)
            created.append(new)
            await self.ctx.event(job, "SuccessfulCreate", f"Created pod: {name_of(new)}", component=COMPONENT)
        return created

    async def _kill(self, job: Obj, pods: list[Obj]) -> None:
        for pod in pods:
            try:
                await self.client.delete("pods", name_of(pod), pod["metadata"].get("namespace"))
            except Exception as exc:
                if api_error_code(exc) != 404:
                    raise
            await self.ctx.event(job, "SuccessfulDelete", f"Deleted pod: {name_of(pod)}", component=COMPONENT)

    async def _ttl(self, job: Obj) -> None:
        ttl = job.get("spec", {}).get("ttlSecondsAfterFinished")
        if ttl is None:
            return
        kind = finished(job)
        cond = get_condition(job, kind) if kind else None
        done = parse_time((job.get("status") or {}).get("completionTime") or (cond or {}).get("lastTransitionTime")) or now()
        left = (done + timedelta(seconds=int(ttl)) - now()).total_seconds()
        if left > 0:
            self.enqueue((job["metadata"].get("namespace", ""), name_of(job)), left + 0.05)
            return
        try:
            await self.client.delete("jobs.batch", name_of(job), job["metadata"].get("namespace"), propagation="Foreground")
        except Exception as exc:
            if api_error_code(exc) != 404:
                raise


def _upsert(conditions: list[Obj], kind: str, status: str, reason: str, message: str) -> list[Obj]:
    stamp = rfc3339()
    for cond in conditions:
        if cond.get("type") == kind and (cond.get("status"), cond.get("reason")) == (status, reason):
            return conditions  # unchanged: rewriting timestamps would loop through our own watch
    out = [c for c in conditions if c.get("type") != kind]
    out.append({"type": kind, "status": status, "reason": reason, "message": message,
                "lastProbeTime": stamp, "lastTransitionTime": stamp})
    return out


def _ranges(values: list[int]) -> str:
    parts, start = [], None
    for i, v in enumerate(values):
        if start is None:
            start = v
        if i + 1 == len(values) or values[i + 1] != v + 1:
            parts.append(str(start) if start == v else f"{start}-{v}")
            start = None
    return ",".join(parts)
