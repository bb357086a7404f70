"""One attempt: the stage machine ``setup → diagnosis → mitigation → tearing_down → done``.

The agent sees only the app description, the API/MCP URLs and its restricted kubeconfig. Each
submission is graded while its stage is current (:class:`~sregym_core.agent_api.stages.StageDesk`,
upstream's protocol): the diagnosis by the judge, the mitigation by the oracle on the live system;
then faults are recovered and the app reconciled to baseline. A problem (or ``--stages``) may
select only one of the two graded stages.

Time points (``time.monotonic``), all measured from ``injected_at``, the moment the last initial
fault finished injecting (the agent cannot have seen anything before):

* ``time_to_diagnose_s`` / ``time_to_mitigate_s``: to the acceptance of the stage's submission;
* ``diagnosis_graded_s`` / ``mitigation_graded_s``: to the end of the stage's grading (upstream's
  ``TTL`` and ``TTM``).
"""

from __future__ import annotations

import asyncio
import math
import os
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
import structlog

from ..agent_api.kubectl_tool import KubectlTool
from ..agent_api.server import AgentServer, ServeSettings
from ..agent_api.stages import GRADED_STAGES, StageDesk
from ..agents import AgentOutcome, AgentTask, PrivilegedAccess
from ..errors import ConfigError, SregymError
from ..faults import FaultContext, call_fault
from ..grant_rules import uniform_grants
from ..oracles.config_paths import ConfigKey, fault_changes
from ..oracles.mitigation import OracleVerdict, build_oracle
from ..problems import derive_ground_truth
from ..results.record import AGENT_STATUSES, AttemptRecord, utc_now
from ..types import AgentSpec, FaultInstance, ProblemSpec, Target
from .reconcile import wait_converged
from .agent_access import (end_identities_made, grant_agent_access, identities, revoke_agent_access,
                           revoke_stale_identities)
from .grants import GrantGuard, grant_extra, revoke_grants
from .hostload import CpuPressureLog
from .environment import DeployedApp, Environment
from .noise import runner_for_attempt
from .schedule import FaultScheduler
from .journal import note_created, open_journal
from .journal import seal as seal_journal
from .standing import stand_up, take_down

log = structlog.get_logger()
_RBAC = "/apis/rbac.authorization.k8s.io/v1"

STAGES = ("setup", "diagnosis", "mitigation", "tearing_down", "done")


#: caps every grace before grading (the mitigation's, the clients' reconnect): the landing suite sets it
#: (conftest.py), as it grades no service level (docs/ci.md); users and validation runs keep the full graces
GRADING_GRACE_ENV = "SREGYM_GRADING_GRACE"


def grading_grace(seconds: float) -> float:
    """``seconds``, or less where ``SREGYM_GRADING_GRACE`` caps it."""
    cap = os.environ.get(GRADING_GRACE_ENV, "").strip()
    if not cap:
        return seconds
    try:
        value = float(cap)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise ConfigError(f"{GRADING_GRACE_ENV}={cap!r} is not a number of seconds >= 0",
                          hints=[f"unset {GRADING_GRACE_ENV}, or set it to a number such as 0.5"])
    return min(seconds, value)


@attrs.define
class AttemptSettings:
    judge: str = "judge-rules"
    judge_model: str | None = None
    judge_rubric: str = "sregym"
    agent_timeout: float | None = None
    oracle_window: float | None = None
    mitigation_grace: float = 2.0
    #: before the SLO window opens, wait (at most this long) for every pod to be Ready after the mitigation
    settle_timeout: float = 15.0
    #: then this long for clients to reconnect (the apps' RPC reconnect backoff is capped at 2 s)
    reconnect_grace: float = 3.0
    agent_config: dict[str, Any] = attrs.Factory(dict)
    stages: Sequence[str] | None = None  # overrides the problem's stage selection (``--stages``)
    noise: str | None = None  # ambient noise profile (``--noise``): off, a built-in name or a file
    noise_seed: int = 0  # ``--seed``: the same seed plays the same noise schedule
    #: agents whose attempts first observe the problem's declared symptom (validation: one per problem)
    symptom_agents: tuple[str, ...] = ()
    symptom_timeout: float = 60.0


class Attempt:
    """The live state of one attempt; also the API's :class:`SubmissionSink`."""

    def __init__(self, env: Environment, deployed: DeployedApp, problem: ProblemSpec, agent: AgentSpec, *,
                 attempt_no: int, run_id: str, settings: AttemptSettings, workdir: Path,
                 attempt_id: str | None = None) -> None:
        self.env, self.deployed, self.problem, self.agent_spec = env, deployed, problem, agent
        self.attempt_no, self.run_id, self.settings, self.workdir = attempt_no, run_id, settings, workdir
        self.attempt_id = attempt_id or new_attempt_id()
        #: the agent's own identity for this attempt (a ServiceAccount revoked when it ends)
        self.agent_account = f"agent-{self.attempt_id}"
        #: watches the objects the problem's agent_access grants (see .grants); started after injection
        self.grants, self.held_grants = uniform_grants(
            tuple(getattr(problem, "agent_access", ())), _known_grants(env), deployed.app.namespace)
        self.grant_guard = GrantGuard(env.kube if self.grants or self.held_grants else None, self.grants,
                                      deployed.app.namespace, held=self.held_grants)
        #: granted objects this attempt created in their healthy form (see conductor.standing)
        self.standing_created: list[str] = []
        #: whether this attempt wrote a journal of the granted objects (see conductor.journal)
        self.journal_open = False
        self.unrecovered: list[FaultInstance] = []  # recoveries that failed: settle() retries them after the reset
        self.recovery_failures: list[dict[str, str]] = []
        self.agent_kubeconfig = workdir / "agent.kubeconfig"
        self.stages = tuple(settings.stages or getattr(problem, "stages", None) or GRADED_STAGES)
        self.desk = StageDesk({"diagnosis": self._paused_noise(self._judge),
                               "mitigation": self._paused_noise(self._grade_mitigation)}, stages=self.stages)
        self.started = time.monotonic()
        self.injected_at: float | None = None
        #: what the faults changed in the app's ConfigMaps (paths, see oracles.config_paths): all a fix may change there
        self.fault_config_changes: dict[ConfigKey, set[str]] = {}
        #: the app's Roles and RoleBindings once the faults were in (a fault's own release): what a fix may keep there
        self.fault_rbac: list[dict[str, Any]] = []
        #: (namespace, secret, key) -> value of the app's Secrets as the faults left them (baseline_preserved: a key
        #: holding what a fault put there is no credential swap)
        self.fault_secret_values: dict[tuple[str, str, str], str] = {}
        #: (kind, namespace, name) -> the paths of its pod template or Service spec the faults changed (read around each
        #: injection; weakening.changed_paths): all a fix may change there beyond a known-harmless repair. None: unknown
        self.fault_workload_changes: dict[tuple[str, str, str], set[tuple[str, ...]]] | None = {}
        #: when the app had converged after the mitigation (see OracleAccess.workload_stats)
        self.settled_at: float | None = None
        #: the app namespace's ServiceAccounts and RoleBindings (with subjects) after deploy and once the faults were
        #: in: what ending the agent's identity leaves (agent_access.end_identities_made); None before it is granted
        self.identities_kept: dict[tuple[str, str, str], list[dict]] | None = None
        self.settle_wait_s: float | None = None
        self.symptom: dict[str, Any] | None = None
        self.faults = env.host.get_faults()
        self.contexts: dict[str, FaultContext] = {}
        self.targets: dict[str, Target] = {}
        app = deployed.app
        # the engine's handles a fault acts through: the admin API client and the users probe (the
        # deployed workload generator, what faultkit.users watches)
        base_ctx = FaultContext(kubeconfig=env.cluster.kubeconfig(), namespace=app.namespace, app=app,
                                cluster=env.cluster, kubectl_path=env.kubectl, api=lambda: env.kube.api,
                                users=deployed.workload)
        for instance in problem.faults:
            self.contexts[instance.id] = base_ctx.child()
            self.targets[instance.id] = app.target(instance.target)
        self.scheduler = FaultScheduler(problem.faults, self._inject, self._recover_transient)
        # ambient noise (sregym_core.conductor.noise): started with the agent, paused while grading,
        # reverted before the faults are recovered
        self.noise = runner_for_attempt(settings.noise, settings.noise_seed, problem, app, env.host, base_ctx,
                                        horizon_s=self.timeout)

    def _paused_noise(self, grade):
        return lambda solution: self.noise.paused(grade)(solution)

    # ------------------------------------------------------------------ SubmissionSink

    @property
    def stage(self) -> str:
        return self.desk.stage

    @stage.setter
    def stage(self, value: str) -> None:
        self.desk.stage = value

    @property
    def diagnosis_text(self) -> str | None:
        return self.desk.submissions.get("diagnosis")

    @property
    def diagnosis_at(self) -> float | None:
        return self.desk.submitted_at.get("diagnosis")

    @property
    def mitigation_at(self) -> float | None:
        return self.desk.submitted_at.get("mitigation")

    async def submit(self, solution: str) -> tuple[int, dict[str, Any]]:
        return await self.desk.submit(solution)

    def report_stage(self) -> str:
        return self.desk.report_stage()

    def app_info(self) -> dict[str, Any]:
        app = self.deployed.app
        # upstream's display name ("Hotel Reservation"); an app without one is shown by its name
        return {"app_name": getattr(app, "display_name", "") or app.name, "namespace": app.namespace,
                "namespaces": [app.namespace],
                "descriptions": app.description}

    # ------------------------------------------------------------------ faults

    async def _inject(self, instance: FaultInstance) -> None:
        spec = self.faults[instance.fault]
        before = await self._list_templated()
        try:
            self.env.host.before_inject(self.problem, instance)
            await call_fault(spec.impl.inject, self.contexts[instance.id], self.targets[instance.id], instance.params)
            self.env.host.after_inject(self.problem, instance)
        finally:  # a fault cut or failed midway may have written part of its change: that part is the fault's too
            await self._note_workload_changes(before)
        log.info("fault_injected", fault=instance.fault, target=instance.target, instance=instance.id)
        await self._note_config_changes()
        await self._note_rbac()

    async def _list_templated(self) -> list[dict[str, Any]] | None:
        """The app's Deployments, StatefulSets, DaemonSets and Services now; None where the listing fails."""
        paths = (("/apis/apps/v1/namespaces/{ns}/deployments", "Deployment"),
                 ("/apis/apps/v1/namespaces/{ns}/statefulsets", "StatefulSet"),
                 ("/apis/apps/v1/namespaces/{ns}/daemonsets", "DaemonSet"), ("/api/v1/namespaces/{ns}/services", "Service"))

        def listing() -> list[dict[str, Any]]:
            out: list[dict[str, Any]] = []
            for ns in self.deployed.namespaces:
                for path, kind in paths:
                    try:
                        out += self.env.kube.list_items(path.format(ns=ns), kind)
                    except Exception as exc:
                        if getattr(exc, "code", None) != 404:  # a namespace not (yet) there holds nothing
                            raise
            return out

        try:
            return await asyncio.to_thread(listing)
        except Exception as exc:  # grading then cannot tell the faults' changes from the fix's: the rule is off
            log.warning("fault_workload_listing_failed", error=str(exc))
            return None

    async def _note_workload_changes(self, before: list[dict[str, Any]] | None) -> None:
        """Add what one injection changed in the app's pod templates and Services (baseline_preserved lets a fix change
        that, and elsewhere only a known-harmless repair). A listing that failed, before or after, leaves it unknown
        for the attempt (None: the rule is not applied, the checks by direction are)."""
        from ..oracles.mitigation import fault_workload_changes

        after = await self._list_templated() if before is not None else None
        if before is None or after is None or self.fault_workload_changes is None:
            self.fault_workload_changes = None
            return
        for key, paths in fault_workload_changes(before, after).items():
            self.fault_workload_changes.setdefault(key, set()).update(paths)

    def _list_rbac(self) -> list[dict[str, Any]]:
        return [item for ns in self.deployed.namespaces
                for kind, plural in (("Role", "roles"), ("RoleBinding", "rolebindings"))
                for item in self.env.kube.list_items(f"{_RBAC}/namespaces/{ns}/{plural}", kind)]

    async def _note_rbac(self) -> None:
        """Keep the app's Roles and RoleBindings as the faults left them (baseline_preserved lets a fix keep what a
        fault's release granted). A listing that fails leaves the last one, logged."""
        try:
            self.fault_rbac = await asyncio.to_thread(self._list_rbac)
        except Exception as exc:  # the fault is in; grading only counts the fault's own grants as new
            log.warning("fault_rbac_listing_failed", error=str(exc))

    def rbac_state(self) -> dict[str, Any]:
        """The app's RBAC for ``baseline_preserved`` (see OracleContext): after deploy, after the faults, now."""
        from .agent_access import BENCHMARK_NAMESPACE

        baseline = [obj for (kind, _ns, _name), obj in self.deployed.baseline.objects.items()
                    if kind in ("Role", "RoleBinding")]
        cluster_roles = {str(o["metadata"]["name"]): o.get("rules") or []
                         for o in self.env.kube.list_items(f"{_RBAC}/clusterroles", "ClusterRole")}
        repairs = [rule for instance in self.problem.faults if (ctx := self.contexts.get(instance.id)) is not None
                   for rule in ctx.state.get("rbac_repair") or ()]
        return {"baseline": baseline, "injected": list(self.fault_rbac), "current": self._list_rbac(),
                "repairs": repairs, "cluster_roles": cluster_roles, "skip_subject_namespaces": (BENCHMARK_NAMESPACE,)}

    async def _note_config_changes(self) -> None:
        """Add what the faults have changed in the app's ConfigMaps so far (baseline_preserved lets a fix change
        that and nothing else there). A listing that fails leaves the faults' share as it was, logged."""
        try:
            now = []
            for ns in self.deployed.namespaces:
                now += await asyncio.to_thread(self.env.kube.list_items, f"/api/v1/namespaces/{ns}/configmaps", "ConfigMap")
        except Exception as exc:  # the fault is in; grading only loses the finer ConfigMap check
            log.warning("fault_config_listing_failed", error=str(exc))
            return
        for key, paths in fault_changes(self.deployed.baseline.workloads, now).items():
            self.fault_config_changes.setdefault(key, set()).update(paths)
        try:
            secrets = []
            for ns in self.deployed.namespaces:
                secrets += await asyncio.to_thread(self.env.kube.list_items, f"/api/v1/namespaces/{ns}/secrets", "Secret")
        except Exception as exc:  # the fault is in; grading then judges the faults' Secrets as the agent's
            log.warning("fault_secret_listing_failed", error=str(exc))
            return
        from ..oracles.mitigation import secret_values

        self.fault_secret_values.update(secret_values(secrets))

    async def _recover_transient(self, instance: FaultInstance) -> None:
        await self._recover(instance)

    async def _recover(self, instance: FaultInstance) -> None:
        spec = self.faults[instance.fault]
        self.env.host.before_recover(self.problem, instance)
        await call_fault(spec.impl.recover, self.contexts[instance.id], self.targets[instance.id], instance.params)
        self.env.host.after_recover(self.problem, instance)
        log.info("fault_recovered", fault=instance.fault, instance=instance.id)

    async def fault_present(self, index: int) -> bool:
        instance = self.problem.faults[index]
        spec = self.faults[instance.fault]
        return bool(await call_fault(spec.impl.is_present, self.contexts[instance.id], self.targets[instance.id], instance.params))

    # ------------------------------------------------------------------ grading

    def ground_truth(self):
        if self.problem.ground_truth:
            return self.problem.ground_truth
        return tuple(derive_ground_truth(self.faults[i.fault], self.contexts[i.id], self.targets[i.id], i)
                     for i in self.problem.faults if i.role != "trigger")

    async def _judge(self, solution: str) -> Any:
        spec = self.env.host.get_oracles().get(self.settings.judge)
        if spec is None or spec.kind != "judge":
            raise SregymError(f"no diagnosis judge named {self.settings.judge!r}")
        options: dict[str, Any] = {"threshold": self.problem.judge_threshold}
        if self.settings.judge_model:
            options["model"] = self.settings.judge_model
        if self.settings.judge_rubric != "sregym":
            options["rubric"] = self.settings.judge_rubric
        judge = spec.factory(**options)
        app = self.deployed.app
        return await asyncio.to_thread(judge.judge, solution, self.ground_truth(),
                                       app_components=tuple(c.name for c in app.components), app_namespace=app.namespace)

    def fault_mechanism(self) -> str | None:
        """The mechanisms the faults ran by (``sregym_core.mechanisms``), as each fault recorded in
        its state, comma-joined in problem order; None when none recorded one."""
        from ..mechanisms import STATE_KEY

        names = [str(ctx.state[STATE_KEY]) for i in self.problem.faults
                 if (ctx := self.contexts.get(i.id)) is not None and ctx.state.get(STATE_KEY)]
        return ",".join(dict.fromkeys(names)) or None

    def faulty_workloads(self) -> list[dict[str, Any]]:
        """The workloads the faults target (triggers excluded), for the oracles and hacker agents."""
        out: list[dict[str, Any]] = []
        for instance in self.problem.faults:
            if instance.role == "trigger":
                continue
            component = self.targets[instance.id].component
            out.append({"kind": component.kind, "namespace": self.deployed.app.namespace, "name": component.name,
                        "service": component.service_name, "instance": instance.id})
        return out

    def oracle_context(self) -> OracleAccess:
        return OracleAccess(self)

    # ------------------------------------------------------------------ the run

    async def run(self, server: AgentServer | None = None) -> AttemptRecord:
        """Inject, let the agent work through the selected stages, grade, recover.

        ``server`` is the run's agent surface (this attempt is attached to it); without one, a
        private server on free loopback ports is used for this attempt only.
        """
        record: dict[str, Any] = {"run_id": self.run_id, "problem_id": self.problem.id,
                                  "upstream_id": self.problem.upstream_id, "agent": self.agent_spec.name,
                                  "attempt": self.attempt_no, "app": self.problem.app, "started_at": utc_now(),
                                  "stages": self.stages, "model": (self.settings.agent_config or {}).get("model")}
        timeouts: list[str] = []
        outcome = AgentOutcome(status="crashed", error="agent never started")
        own_server = server is None
        if server is None:
            server = AgentServer(settings=ServeSettings(bind_host="127.0.0.1", api_port=0, mcp_port=0, strict=True))
            await server.start()
        kubectl = KubectlTool(kubeconfig=self.agent_kubeconfig, kubectl=self.env.kubectl,
                              namespace=self.deployed.app.namespace, cache_dir=self.workdir / "kube-cache")
        # one rollback stack per agent session (sregym_ssid header or session_id query)
        server.attach(self, kubectl.for_session, endpoints=self.env.observability())
        server.surface.tools = self.env.host.get_agent_tools()
        diagnosis: dict[str, Any] | None = None
        mitigation: OracleVerdict | None = None
        try:
            every_grant = (*self.grants, *self.held_grants)
            if every_grant:
                # the granted objects as they are before anything is injected, for the next attempt to put
                # back should this one die before it does (after mending a dead one's; conductor.journal)
                journaled = await asyncio.to_thread(open_journal, self.env.kube, every_grant,
                                                    self.deployed.app.namespace, self.attempt_id)
                self.journal_open = True
            if any(grant.standing is not None for grant in every_grant) and "real" not in self.env.capabilities:
                # every granted object exists before the fault is injected, whatever the fault (round 8, finding 2);
                # not in a cluster the benchmark does not own: a BGP peer there would change the user's routing
                self.standing_created = await asyncio.to_thread(
                    stand_up, self.env.kube, every_grant, self.deployed.app.namespace)
                if self.standing_created:
                    await asyncio.to_thread(note_created, self.env.kube, journaled, self.standing_created,
                                            self.attempt_id)
            await self.scheduler.start()
            try:
                await self.scheduler.wait_initial()
            except Exception as exc:  # a fault that cannot be injected is recorded, and the run goes on
                log.warning("fault_injection_failed", problem=self.problem.id, error=str(exc))
                record["error"] = f"fault injection failed: {exc}"
                outcome = AgentOutcome(status="ok", error="not started: fault injection failed")
                raise _InjectionFailed from exc
            # the identity exists only from here on: one working during setup read the healthy state and then the
            # fault's change as it was made, a diff that names it without any investigation (red-team round 21,
            # finding 4); the time to diagnose counts from the moment it works
            await self._grant_identity()
            self.injected_at = time.monotonic()
            await self.grant_guard.start()  # the granted objects as the fault left them
            if self.agent_spec.name in self.settings.symptom_agents:
                self.symptom = await self._observe_symptom()
            self.desk.open()
            await self.noise.start()
            task = self._agent_task(server)
            timeout = self.timeout
            try:
                agent = self.agent_spec.factory(**self.settings.agent_config)
            except Exception as exc:  # a bad agent configuration is a recorded failure, not a crash
                agent = _FailedAgent(f"could not create agent {self.agent_spec.name!r}: {type(exc).__name__}: {exc}")
            agent_run = asyncio.create_task(self._run_agent(agent, task))
            done, _ = await asyncio.wait({agent_run}, timeout=timeout)
            if not done:
                agent_run.cancel()
                timeouts.append("agent")
                outcome = AgentOutcome(status="timeout", error=f"agent exceeded {timeout:g} s")
                try:
                    await agent_run
                except (asyncio.CancelledError, Exception):
                    pass
                self.desk.close()  # time is up: nothing more is accepted
            else:
                outcome = agent_run.result()
            await self.desk.wait_graded()  # a submitted stage is graded while it is still current
            self.desk.close()
            diagnosis = self._diagnosis_verdict()
            mitigation = self._mitigation_verdict()
        except _InjectionFailed:
            diagnosis = {"passed": False, "error": record["error"]} if "diagnosis" in self.stages else None
            mitigation = OracleVerdict(name="mitigation", passed=False, evidence={"reason": record["error"]})
        finally:
            self.desk.close()
            await self.desk.cancel()
            await self.scheduler.stop()
            await self.noise.stop()
            # the identity goes first: a write the agent keeps sending until its token dies must land before
            # the guard's last look, which puts back every held object (red-team round 8, finding 1)
            await self._revoke_identity()
            await self.grant_guard.stop()
            if own_server:
                await server.stop()
            await self._recover_all()
            if self.standing_created:
                await asyncio.to_thread(take_down, self.env.kube, self.standing_created)
            if self.journal_open and not self.unrecovered:
                # all put back: the next attempt undoes only a late write of this one's (a held-back body)
                await asyncio.to_thread(seal_journal, self.env.kube, (*self.grants, *self.held_grants),
                                        self.deployed.app.namespace, self.attempt_id)
            self.desk.done()
        usage, rejected_usage = agent_usage(outcome)
        if rejected_usage:
            log.warning("agent_usage_rejected", agent=self.agent_spec.name, values=rejected_usage)
        record.update(
            diagnosis_passed=(bool(diagnosis and diagnosis.get("passed")) if "diagnosis" in self.stages else None),
            diagnosis=diagnosis,
            mitigation_passed=(mitigation.passed if "mitigation" in self.stages else None),
            mitigation=mitigation.to_dict() if "mitigation" in self.stages else None,
            success=all(bool(diagnosis and diagnosis.get("passed")) if stage == "diagnosis" else mitigation.passed
                        for stage in self.stages),
            time_to_diagnose_s=self._since_injection(self.desk.submitted_at.get("diagnosis")),
            time_to_mitigate_s=self._since_injection(self.desk.submitted_at.get("mitigation")),
            diagnosis_graded_s=self._since_injection(self.desk.graded_at.get("diagnosis")),
            mitigation_graded_s=self._since_injection(self.desk.graded_at.get("mitigation")),
            agent_timeout_s=self.timeout, **usage,
            agent_status=outcome.status if outcome.status in AGENT_STATUSES else "ok", timeouts=tuple(timeouts),
            error=record.get("error") or outcome.error, finished_at=utc_now(),
            fault_mechanism=self.fault_mechanism(),
            extra={"trajectory": list(outcome.trajectory)[:500], "attempt_id": self.attempt_id,
                   **({"noise_events": self.noise.events} if self.noise.plan else {}),
                   **({"absorbed_submissions": list(self.desk.absorbed)} if self.desk.absorbed else {}),
                   **({"fault_recovery_failed": list(self.recovery_failures)} if self.recovery_failures else {}),
                   **({"symptom": self.symptom} if self.symptom is not None else {}),
                   **({"usage_rejected": rejected_usage} if rejected_usage else {})},
        )
        return AttemptRecord(**record)

    @property
    def timeout(self) -> float:
        """The agent's time limit: ``--agent-timeout``, else the problem's (upstream's default 1800 s)."""
        return float(self.settings.agent_timeout or self.problem.agent_timeout)

    def _since_injection(self, moment: float | None) -> float | None:
        if moment is None or self.injected_at is None:
            return None
        return max(0.0, moment - self.injected_at)

    def _agent_task(self, server: AgentServer) -> AgentTask:
        app = self.deployed.app
        privileged = None
        if "ground-truth" in self.agent_spec.needs:
            fixes = []
            for instance in self.problem.faults:
                spec = self.faults[instance.fault]
                if instance.role != "trigger":
                    fixes.append(_fix(spec.impl.reference_fix, self.contexts[instance.id], self.targets[instance.id], instance.params))
            workloads = tuple((app.namespace, self.targets[i.id].component.kind, self.targets[i.id].component.name)
                              for i in self.problem.faults)
            injected = tuple({**w, "fault": next(i.fault for i in self.problem.faults if i.id == w["instance"]),
                              "state": _json_copy(self.contexts[w["instance"]].state)}
                             for w in self.faulty_workloads())
            privileged = PrivilegedAccess(ground_truth=self.ground_truth(), reference_fixes=tuple(fixes),
                                          faulty_workloads=workloads, admin_kubeconfig=self.env.cluster.kubeconfig(),
                                          injected=injected)
        workdir = self.workdir / "agent"
        workdir.mkdir(parents=True, exist_ok=True)
        return AgentTask(attempt_id=self.attempt_id, app_name=app.name, app_namespace=app.namespace,
                         app_description=app.description, api_url=server.api_url, mcp_url=server.mcp_url,
                         kubeconfig=self.agent_kubeconfig, workdir=workdir, timeout=self.timeout, kubectl=self.env.kubectl,
                         config=self.settings.agent_config, privileged=privileged)

    async def _observe_symptom(self) -> dict[str, Any]:
        """After injection, before the agent acts: does the declared user-visible symptom show?"""
        from ..symptoms import observe_symptoms
        from .symptom_probes import live_probes

        declared = self.problem.symptom
        endpoints = self.env.observability()
        probes = live_probes(kube=self.env.kube, namespaces=self.deployed.namespaces, faulty=self.faulty_workloads(),
                             baseline=self.deployed.baseline.workloads, workload=self.deployed.workload,
                             prometheus_url=getattr(endpoints, "prometheus_url", None), declared=declared)
        result = await observe_symptoms(declared, probes, timeout_s=self.settings.symptom_timeout)
        log.info("symptom_observed", problem=self.problem.id, declared=list(declared),
                 observed=result["symptom_observed"], seconds=result["seconds"])
        return result

    async def _grant_identity(self) -> None:
        """A fresh ServiceAccount and token for this attempt only, valid a little past its time limit."""
        timeout = self.timeout
        await asyncio.to_thread(revoke_stale_identities, self.env.kube, self.deployed.namespaces)
        # the accounts and bindings before the agent could make any: what its revocation leaves in place
        namespaces = [self.deployed.app.namespace]
        kept = {key: list(obj.get("subjects") or []) for key, obj in self.deployed.baseline.objects.items()
                if key[0] in ("ServiceAccount", "RoleBinding") and key[1] in namespaces}
        for key, subjects in (await asyncio.to_thread(identities, self.env.kube, namespaces)).items():
            kept[key] = [*kept.get(key, []), *(s for s in subjects if s not in kept.get(key, []))]
        self.identities_kept = kept
        await asyncio.to_thread(grant_agent_access, self.env.kube, [self.deployed.app.namespace], self.agent_kubeconfig,
                                account=self.agent_account, expiration_seconds=int(timeout) + 600)
        if self.grants or self.held_grants:
            await asyncio.to_thread(grant_extra, self.env.kube, self.agent_account, self.grants,
                                    self.deployed.app.namespace, held=self.held_grants)

    async def _revoke_identity(self) -> None:
        try:
            await asyncio.to_thread(revoke_agent_access, self.env.kube, [self.deployed.app.namespace], self.agent_account)
            await asyncio.to_thread(revoke_grants, self.env.kube, self.agent_account)
            if self.identities_kept is not None:
                ended = await asyncio.to_thread(end_identities_made, self.env.kube, [self.deployed.app.namespace],
                                                self.identities_kept)
                if ended:
                    log.info("agent_made_identities_ended", ended=ended)
        except Exception as exc:  # the token still expires by itself; the next attempt sweeps the account
            log.warning("agent_identity_revoke_failed", error=str(exc))
        self.agent_kubeconfig.unlink(missing_ok=True)

    async def _run_agent(self, agent: Any, task: AgentTask) -> AgentOutcome:
        try:
            outcome = await agent.run(task)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # an agent crash is a result, not a benchmark failure
            log.warning("agent_crashed", agent=self.agent_spec.name, error=str(exc))
            return AgentOutcome(status="crashed", error=f"{type(exc).__name__}: {exc}")
        if not isinstance(outcome, AgentOutcome):
            return AgentOutcome(status="crashed", error=f"agent returned {type(outcome).__name__}, not AgentOutcome")
        return outcome

    def _diagnosis_verdict(self) -> dict[str, Any] | None:
        if "diagnosis" not in self.stages:
            return None
        if "diagnosis" not in self.desk.submissions:
            return {"passed": False, "error": "no diagnosis was submitted"}
        verdict = self.desk.verdicts.get("diagnosis")
        if verdict is None:
            return {"judge": self.settings.judge, "passed": False,
                    "error": "the diagnosis was not graded (the attempt ended first)"}
        if isinstance(verdict, BaseException):
            return {"judge": self.settings.judge, "passed": False,
                    "error": f"judge failed: {type(verdict).__name__}: {verdict}"}
        return verdict.to_dict() if hasattr(verdict, "to_dict") else attrs.asdict(verdict)

    def _mitigation_verdict(self) -> OracleVerdict:
        if "mitigation" not in self.desk.submissions:
            return OracleVerdict(name="mitigation", passed=False, evidence={"reason": "no mitigation was submitted"})
        verdict = self.desk.verdicts.get("mitigation")
        if isinstance(verdict, OracleVerdict):
            return verdict
        reason = (f"{type(verdict).__name__}: {verdict}" if isinstance(verdict, BaseException)
                  else "the mitigation was not graded (the attempt ended first)")
        return OracleVerdict(name="mitigation", passed=False, evidence={"reason": reason}, error=reason)

    async def _grade_mitigation(self, _solution: str) -> OracleVerdict:
        """The mitigation oracle on the live system, run while the stage is still ``mitigation``."""
        # the records, so a plugin oracle's parameters are checked against its config_schema
        oracles = {name: spec for name, spec in self.env.host.get_oracles().items() if spec.kind == "mitigation"}
        config = _allow_recreated(self.problem.oracle, self._recreated())
        if self.settings.oracle_window:
            config = _override_window(config, self.settings.oracle_window)
        oracle = build_oracle(config, extra=oracles, source=f"problem {self.problem.id}")
        # the fix is submitted: the agent's identity ends before any check runs, so nothing holding its token (a pod
        # it made, its token in a Secret) can answer a check that perturbs the system or undo a change for the
        # grading's length (red-team round 21, finding 2); the attempt's end revokes it again, idempotently
        await self._revoke_identity()
        await asyncio.sleep(grading_grace(self.settings.mitigation_grace))
        if self.grant_guard.grants:  # a change beyond the granted fields fails the mitigation, even if undone
            recorded = await asyncio.to_thread(self.grant_guard.check)
            if recorded:
                return OracleVerdict(name="mitigation", passed=False,
                                     evidence={"reason": "the agent changed a granted cluster object beyond its grant",
                                               "grant_violations": list(recorded)})
            held = await asyncio.to_thread(self.grant_guard.held_changes)
            if held:  # an object every attempt may write, which this fix does not involve, still changed
                return OracleVerdict(name="mitigation", passed=False,
                                     evidence={"reason": "the agent changed a cluster object this problem's fix "
                                                         "does not involve", "grant_violations": held})
        return await oracle.evaluate(self.oracle_context())

    def _recreated(self) -> list[str]:
        patterns = []
        for instance in self.problem.faults:
            component = self.targets[instance.id].component
            for template in self.faults[instance.fault].recreates:
                patterns.append(template.format(component=component.name, service=component.service_name or component.name,
                                                config_map=component.config_map or ""))
        return patterns

    async def _recover_all(self) -> None:
        self.unrecovered, self.recovery_failures = [], []
        for instance in reversed(self.scheduler.injected()):
            try:
                await self._recover(instance)
            except Exception as exc:  # e.g. the datastore pod was deleted by the agent: retried after reconcile
                log.warning("fault_recover_failed", fault=instance.fault, error=str(exc))
                self.unrecovered.append(instance)
                # in the record, not only the log: whoever reads a verdict sees that this attempt left a fault
                # behind for the reset to clear (red-team rounds 10 and 11)
                self.recovery_failures.append({"fault": instance.fault, "instance": instance.id,
                                               "error": f"{type(exc).__name__}: {exc}"[:500]})

    async def settle(self) -> bool:
        """After the app was reconciled to baseline: retry recoveries that failed and check that no
        fault is still present. Returns False when the environment needs a hard reset."""
        retry, self.unrecovered = list(self.unrecovered), []
        for instance in retry:
            try:
                await self._recover(instance)
            except Exception as exc:
                log.warning("fault_recover_failed_again", fault=instance.fault, error=str(exc))
                self.unrecovered.append(instance)
        if self.unrecovered:
            return False
        for index, instance in enumerate(self.problem.faults):
            if instance not in self.scheduler.ever_injected():
                continue
            try:
                if await self.fault_present(index):
                    log.warning("fault_still_present", fault=instance.fault, instance=instance.id)
                    return False
            except Exception as exc:
                log.warning("fault_check_failed", fault=instance.fault, error=str(exc))
                return False
        return True


#: the most one attempt's record takes as a count of steps or tokens, and as a cost: far beyond any real attempt (a
#: trillion tokens; a million dollars), so an agent's word beyond them is no measurement
MAX_USAGE_COUNT = 10**12
MAX_USAGE_COST_USD = 1e6


def agent_usage(outcome: AgentOutcome) -> tuple[dict[str, Any], dict[str, str]]:
    """The record's steps, tokens and cost from what the agent reported, and the values left out (as text): a count
    that is no whole number from 0 to :data:`MAX_USAGE_COUNT`, a cost that is no finite amount from 0 to
    :data:`MAX_USAGE_COST_USD`. An agent's usage is its own word (a CLI prints it; red-team round 20, finding 3:
    negative tokens made the record invalid and ended the run; round 21: 10^30 tokens and a cost of 1e300 were
    recorded as printed, and a report's sums are then that one attempt's)."""
    def amount(value: Any, most: float) -> bool:
        return (isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
                and 0 <= value <= most)

    usage: dict[str, Any] = {}
    rejected: dict[str, str] = {}
    for field, value, whole in (("steps", outcome.steps, True), ("prompt_tokens", outcome.prompt_tokens, True),
                                ("completion_tokens", outcome.completion_tokens, True), ("cost_usd", outcome.cost, False)):
        ok = amount(value, MAX_USAGE_COUNT if whole else MAX_USAGE_COST_USD) and (not whole or float(value).is_integer())
        usage[field] = (int(value) if whole else float(value)) if ok else (0 if whole else 0.0)
        if not ok:
            rejected[field] = repr(value)[:100]
    return usage, rejected


def new_attempt_id() -> str:
    """An id that says nothing about the problem: names every path and identity the agent sees."""
    return uuid.uuid4().hex[:12]


class _InjectionFailed(Exception):
    """Internal: the problem's faults could not be injected; the attempt is recorded as such."""


class _FailedAgent:
    def __init__(self, error: str) -> None:
        self.error = error

    async def run(self, task: AgentTask) -> AgentOutcome:
        return AgentOutcome(status="crashed", error=self.error)


def _known_grants(env: Environment) -> list[Any]:
    """Every grant of every problem installed: the rights each attempt holds alike (see uniform_grants)."""
    return [grant for problem in env.host.get_problems().values() for grant in getattr(problem, "agent_access", ())]


def _json_copy(value: Any) -> Any:
    """A deep, JSON-safe copy of a fault's state (what a validation agent may read)."""
    import json

    return json.loads(json.dumps(value, default=str))


def _fix(func: Any, ctx: FaultContext, target: Target, params: Any):
    async def apply() -> None:
        await call_fault(func, ctx, target, params)

    return apply


def _allow_recreated(config: Any, patterns: list[str]) -> Any:
    """Let ``baseline_preserved`` accept objects the fault's correct fix has to recreate."""
    if not patterns:
        return config
    if config == "baseline_preserved":
        return {"baseline_preserved": {"allow_replaced": patterns}}
    if isinstance(config, list):
        return [_allow_recreated(item, patterns) for item in config]
    if isinstance(config, dict):
        out = {}
        for key, value in config.items():
            if key == "baseline_preserved":
                value = dict(value or {})
                value["allow_replaced"] = [*value.get("allow_replaced", []), *patterns]
                out[key] = value
            else:
                out[key] = _allow_recreated(value, patterns)
        return out
    return config


def _windowed(slo: dict[str, Any] | None, window: float) -> dict[str, Any]:
    """A functional-SLO config measured over ``window`` seconds: the request floor keeps the problem's
    rate (``min_requests`` over its own window), so a shorter window is not failed for being short."""
    from ..oracles.mitigation import FunctionalSLO

    slo = dict(slo or {})
    defaults = FunctionalSLO()
    own_window = float(slo.get("window_s", defaults.window_s))
    floor = int(slo.get("min_requests", defaults.min_requests))
    slo["window_s"] = window
    slo["min_requests"] = max(1, math.ceil(floor * window / own_window)) if floor else 0
    return slo


def _override_window(config: Any, window: float) -> Any:
    if isinstance(config, dict):
        out = {}
        for key, value in config.items():
            if key == "functional_slo" and (isinstance(value, dict) or value is None):
                out[key] = _windowed(value, window)
            else:
                out[key] = _override_window(value, window)
        return out
    if isinstance(config, list):
        return [_override_window(item, window) for item in config]
    if config == "functional_slo":
        return {"functional_slo": _windowed(None, window)}
    return config


@attrs.define
class OracleAccess:
    """The :class:`~sregym_core.oracles.context.OracleContext` over a live attempt."""

    attempt: Attempt
    #: the host's CPU stall, marked around the waits that bound SLO windows (embedded cluster only:
    #: there the app and its users run on this host, elsewhere its load says nothing about them)
    pressure: CpuPressureLog = attrs.field(factory=CpuPressureLog)

    def __attrs_post_init__(self) -> None:
        self.pressure.mark()

    @property
    def _app_on_this_host(self) -> bool:
        return "embedded" in getattr(self.attempt.env, "capabilities", ())

    @property
    def baseline_workloads(self) -> list[dict[str, Any]]:
        return self.attempt.deployed.baseline.workloads

    @property
    def fault_instances(self):
        return self.attempt.problem.faults

    @property
    def faulty_workloads(self) -> list[dict[str, Any]]:
        return self.attempt.faulty_workloads()

    @property
    def fault_config_changes(self) -> dict[ConfigKey, set[str]]:
        return self.attempt.fault_config_changes

    @property
    def fault_secret_values(self) -> dict[tuple[str, str, str], str]:
        return self.attempt.fault_secret_values

    @property
    def fault_workload_changes(self) -> dict[tuple[str, str, str], set[tuple[str, ...]]] | None:
        return self.attempt.fault_workload_changes

    async def list_workloads(self) -> list[dict[str, Any]]:
        return await self.attempt.env.kube.aworkloads(self.attempt.deployed.namespaces)

    async def rbac_state(self) -> dict[str, Any]:
        return await asyncio.to_thread(self.attempt.rbac_state)

    async def node_pods(self) -> list[dict[str, Any]] | None:
        """The node agents' own account of their pods (None: this cluster cannot be asked)."""
        from ..clusters import SupportsNodePods, capability

        nodes = capability(self.attempt.env.cluster, SupportsNodePods)
        if nodes is None:
            return None
        try:
            return await asyncio.to_thread(nodes.node_pods)
        except Exception as exc:  # a cluster daemon older than the endpoint (404) or without node hooks (503)
            if getattr(exc, "code", None) in (404, 503):
                log.warning("node_account_unavailable", error=str(exc))
                return None
            raise

    async def fault_present(self, instance_index: int) -> bool:
        return await self.attempt.fault_present(instance_index)

    async def workload_stats(self, window_s: float) -> dict[str, Any]:
        workload = self.attempt.deployed.workload
        if workload is None:
            return {"count": 0, "success_rate": None, "error": "this app has no workload generator"}
        # the window must cover only traffic after the mitigation
        since = self.attempt.mitigation_at or time.monotonic()
        since = max(since, self.attempt.noise.quiet_since or since)  # not the time reverted noise was settling
        settled = await self._settled_at()
        if settled is not None:
            since = max(since, settled)
        # records are stamped when they finish: a request sent before the window opened (slow because
        # the fault was still there then) finishes at most max_request_s later, so skip that long
        since += float(getattr(getattr(workload, "spec", None), "max_request_s", 0.0) or 0.0)
        wait = since + window_s - time.monotonic()
        if wait > window_s:  # mark the stall counter as the window opens
            await asyncio.sleep(wait - window_s)
            wait = window_s
        if wait > 0:
            self.pressure.mark()
            await asyncio.sleep(wait)
        stats = dict(await workload.astats(window_s))
        stats["settle_wait_s"] = self.attempt.settle_wait_s
        if self._app_on_this_host:
            stats["host_cpu_stall"] = self.pressure.stall_fraction(time.monotonic() - window_s)
        return stats

    async def _settled_at(self) -> float | None:
        """When the app had converged after the mitigation: every pod Ready, plus the clients' reconnect
        grace (an agent that verified its rollout and submitted at once must not be graded on the seconds
        its peers' connections take to come back). Waits at most ``settle_timeout``; a system that never
        converges is measured anyway, and one plainly stuck on an image it cannot pull (a broken value
        left in place) at once. Measured once per attempt; ``None`` when not measured."""
        attempt = self.attempt
        if attempt.settled_at is None and attempt.settings.settle_timeout > 0:
            started = time.monotonic()
            if await wait_converged(attempt.env.kube, attempt.deployed.namespaces, attempt.settings.settle_timeout):
                attempt.settled_at = time.monotonic() + grading_grace(attempt.settings.reconnect_grace)
            else:  # never converged (or stuck on an image it cannot pull): measure what users get now
                attempt.settled_at = time.monotonic()
            attempt.settle_wait_s = round(time.monotonic() - started, 2)
        return attempt.settled_at

    async def replay_trigger(self, name: str) -> None:
        await self.attempt.scheduler.replay(name)

    async def sleep(self, seconds: float) -> None:
        self.pressure.mark()  # an oracle sleeping a window before re-measuring opens that window here
        await asyncio.sleep(seconds)

    def now(self) -> float:
        return time.monotonic()
