"""CronJob controller: Jobs on a cron schedule, concurrency policy, deadlines and history limits."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta

from .base import Controller, Key
from .cron import CronError, parse
from .job import finished
from .util import Obj, is_controlled_by, is_deleting, name_of, now, owner_ref, parse_time, rfc3339
from .writes import api_error_code, write_status

COMPONENT = "cronjob-controller"
SCHEDULED = "batch.kubernetes.io/cronjob-scheduled-timestamp"


def _zone(name: str | None):
    if not name:
        return UTC
    try:
        from zoneinfo import ZoneInfo

        return ZoneInfo(name)
    except Exception:
        return None


class CronJobController(Controller):
    name = "cronjob"
    component = COMPONENT

    def setup(self) -> None:
        self.cronjobs = self.watch("cronjobs.batch")
        self.jobs = self.watch("jobs.batch", lambda _e, job, _o: self.enqueue_owner(job, "CronJob"))

    async def reconcile(self, key: Key) -> None:
        cj = self.cronjobs.get(*key)
        if cj is None or is_deleting(cj):
            return
        ns = key[0]
        spec = cj.get("spec", {})
        jobs = [j for j in self.jobs.list(ns) if is_controlled_by(j, cj)]
        status = dict(cj.get("status") or {})
        active = [j for j in jobs if not finished(j) and not is_deleting(j)]
        for job in jobs:
            kind = finished(job)
            if kind and any(ref.get("uid") == job["metadata"].get("uid") for ref in status.get("active") or []):
                await self.ctx.event(cj, "SawCompletedJob", f"Saw completed job: {name_of(job)}, status: {kind}",
                                     component=COMPONENT)
                if kind == "Complete":
                    done = (job.get("status") or {}).get("completionTime")
                    if done and (not status.get("lastSuccessfulTime") or done > status["lastSuccessfulTime"]):
                        status["lastSuccessfulTime"] = done
        await self._history(cj, jobs)
        zone = _zone(spec.get("timeZone"))
        try:
            schedule = parse(spec.get("schedule", ""))
            if zone is None:
                raise CronError(f"unknown time zone {spec.get('timeZone')}")
        except CronError as exc:
            await self.ctx.event(cj, "InvalidSchedule", f"invalid schedule: {spec.get('schedule')} : {exc}",
                                 type="Warning", component=COMPONENT)
            return
        current = now().astimezone(zone)
        since = parse_time(status.get("lastScheduleTime")) or parse_time(cj["metadata"].get("creationTimestamp")) or now()
        since = since.astimezone(zone)
        deadline = spec.get("startingDeadlineSeconds")
        if deadline is not None:
            since = max(since, current - timedelta(seconds=int(deadline)))
        fire, missed = schedule.last_before(since, current)
        if fire is not None and not spec.get("suspend"):
            if missed > 100:
                await self.ctx.event(cj, "TooManyMissedTimes", "too many missed start times. Set or decrease "
                                     ".spec.startingDeadlineSeconds or check clock skew", type="Warning",
                                     component=COMPONENT)
            active = await self._fire(cj, fire, active, status)
        status["active"] = [{"kind": "Job", "namespace": ns, "name": name_of(j), "uid": j["metadata"].get("uid"),
                             "apiVersion": "batch/v1", "resourceVersion": j["metadata"].get("resourceVersion")}
                            for j in active] or None
        if status["active"] is None:
            status.pop("active")
        await write_status(self.client, "cronjobs.batch", cj, status, self.cronjobs)
        nxt = schedule.next_after(current)
        self.enqueue(key, max(0.2, (nxt - current).total_seconds() + 0.05))

    async def _fire(self, cj: Obj, fire: datetime, active: list[Obj], status: Obj) -> list[Obj]:
        spec = cj["spec"]
        ns = cj["metadata"].get("namespace", "")
        policy = spec.get("concurrencyPolicy", "Allow")
        if active and policy == "Forbid":
            await self.ctx.event(cj, "JobAlreadyActive", "Not starting job because prior execution is running and "
                                 "concurrency policy is Forbid", component=COMPONENT)
            return active
        if active and policy == "Replace":
            for job in active:
                await self._delete_job(cj, job)
            active = []
        name = f"{name_of(cj)}-{int(fire.timestamp() // 60)}"
        template = copy.deepcopy(spec.get("jobTemplate") or {})
        tmeta = template.get("metadata") or {}
        job = {"apiVersion": "batch/v1", "kind": "Job",
               "metadata": {"name": name, "namespace": ns, "labels": dict(tmeta.get("labels") or {}),
                            "annotations": dict(tmeta.get("annotations") or {}, **{
                                SCHEDULED: fire.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")}),
                            "ownerReferences": [owner_ref(cj)]},
               "spec": template.get("spec") or {}}
        try:
            created = await self.client.create("jobs.batch", job, ns)
        except Exception as exc:
            if api_error_code(exc) == 409:
                status["lastScheduleTime"] = rfc3339(fire)
                return active
            await self.ctx.event(cj, "FailedCreate", f"Error creating job: {getattr(exc, 'message', exc)}",
                                 type="Warning", component=COMPONENT)
            return active
        self.jobs.upsert(created)
        await self.ctx.event(cj, "SuccessfulCreate", f"Created job {name}", component=COMPONENT)
        status["lastScheduleTime"] = rfc3339(fire)
        return active + [created]

    async def _history(self, cj: Obj, jobs: list[Obj]) -> None:
        spec = cj["spec"]
        limits = {"Complete": spec.get("successfulJobsHistoryLimit", 3), "Failed": spec.get("failedJobsHistoryLimit", 1)}
        for kind, limit in limits.items():
            if limit is None:
                continue
            done = sorted((j for j in jobs if finished(j) == kind and not is_deleting(j)),
                          key=lambda j: j["metadata"].get("creationTimestamp", ""))
            for job in done[: max(0, len(done) - int(limit))]:
                await self._delete_job(cj, job)

    async def _delete_job(self, cj: Obj, job: Obj) -> None:
        try:
            await self.client.delete("jobs.batch", name_of(job), job["metadata"].get("namespace"), propagation="Background")
        except Exception as exc:
            if api_error_code(exc) != 404:
                raise
        self.jobs.remove(job)
        await self.ctx.event(cj, "SuccessfulDelete", f"Deleted job {name_of(job)}", component=COMPONENT)
