"""Validation agents. They talk to the conductor over its HTTP API and act through kubectl with the
agent's restricted kubeconfig (the reference agent's fixes run with the fault's own context)."""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any

import httpx

from sregym_core.agents import AgentOutcome, AgentTask
from sregym_core.types import GroundTruth


def describe_truth(truth: tuple[GroundTruth, ...]) -> str:
    """A diagnosis written from the ground truth, the way a precise SRE would write it."""
    parts = []
    for item in truth:
        values = "; ".join(f"{key}: {_value(val)}" for key, val in item.mutated_values.items())
        text = (f"Root cause in {', '.join(item.components)} (namespace {item.namespace}), "
                f"resource {item.resource_kind}: {item.mechanism}.")
        if values:
            text += f" Concrete values: {values}."
        if item.symptoms:
            text += f" Symptoms: {', '.join(item.symptoms)}."
        if item.prose:
            text += f" {item.prose}"
        parts.append(text)
    return "\n".join(parts) or "No fault found."


def _value(value: Any) -> str:
    if isinstance(value, dict) and {"before", "after"} <= set(value):
        return f"{value['before']} -> {value['after']}"
    return str(value)


async def _stage(client: httpx.AsyncClient, task: AgentTask) -> str | None:
    try:
        reply = await client.get(f"{task.api_url}/status")
        return reply.json().get("stage") if reply.status_code == 200 else None
    except (httpx.HTTPError, ValueError):
        return None


class _Base:
    """Shared plumbing: submit over HTTP, run kubectl as the agent, keep a trajectory."""

    def __init__(self, settle_s: float = 5.0, **_config: Any) -> None:
        self.settle_s = settle_s
        self.trajectory: list[dict[str, Any]] = []

    async def submit(self, task: AgentTask, solution: str) -> int:
        async with httpx.AsyncClient(timeout=30.0, trust_env=False) as client:
            before = await _stage(client, task)
            reply = await client.post(f"{task.api_url}/submit", json={"solution": solution})
            self.trajectory.append({"action": "submit", "message": solution[:2000], "status": reply.status_code,
                                    "timestamp": time.time()})
            if reply.status_code == 200 and before == "diagnosis":
                # the diagnosis is graded while the stage is still "diagnosis" (upstream's protocol): a
                # submission before the stage moves on would count as the same diagnosis again
                for _ in range(600):
                    if await _stage(client, task) != "diagnosis":
                        break
                    await asyncio.sleep(0.5)
        return reply.status_code

    async def kubectl(self, task: AgentTask, *args: str) -> str:
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "KUBECONFIG": str(task.kubeconfig),
               "HOME": str(task.workdir)}
        proc = await asyncio.create_subprocess_exec(task.kubectl, *args, stdout=asyncio.subprocess.PIPE,
                                                    stderr=asyncio.subprocess.PIPE, env=env)
        out, err = await proc.communicate()
        text = (out + err).decode(errors="replace")
        self.trajectory.append({"action": "kubectl", "message": " ".join(args), "exit_code": proc.returncode,
                                "observation": text[:2000], "timestamp": time.time()})
        return text

    async def get_json(self, task: AgentTask, kind: str, name: str, namespace: str) -> dict | None:
        """The object as the agent sees it (``kubectl get -o json``), or None."""
        import json

        text = await self.kubectl(task, "get", f"{kind.lower()}/{name}", "-n", namespace, "-o", "json")
        try:
            return json.loads(text[text.index("{"):])
        except ValueError:
            return None

    async def wait_healthy(self, task: AgentTask, timeout: float = 180.0) -> bool:
        """Poll (as the agent) until every pod in the app namespace is Ready and none is pending."""
        import json

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = await self.kubectl(task, "get", "pods", "-n", task.app_namespace, "-o", "json")
            try:
                pods = json.loads(text[text.index("{"):])["items"]
            except (ValueError, KeyError):
                pods = None
            if pods is not None and all(_ready(p) for p in pods):
                return True
            await asyncio.sleep(2.0)
        return False

    def outcome(self, status: str = "ok", error: str | None = None) -> AgentOutcome:
        return AgentOutcome(status=status, steps=len(self.trajectory), trajectory=tuple(self.trajectory), error=error)

    def truth(self, task: AgentTask) -> tuple[GroundTruth, ...]:
        if task.privileged is None:
            raise RuntimeError("this validation agent needs privileged access (ground truth)")
        return task.privileged.ground_truth


def _ready(pod: dict) -> bool:
    # a finished pod (a batch Job's, or one whose owner already replaced it) waits for nothing
    if pod.get("status", {}).get("phase") in ("Succeeded", "Failed"):
        return True
    if pod.get("metadata", {}).get("deletionTimestamp"):
        return False
    conditions = {c.get("type"): c.get("status") for c in pod.get("status", {}).get("conditions", [])}
    return conditions.get("Ready") == "True"


class ReferenceAgent(_Base):
    """Diagnoses with the ground truth, applies every fault's reference fix, then submits."""

    async def run(self, task: AgentTask) -> AgentOutcome:
        await self.submit(task, describe_truth(self.truth(task)))
        for fix in task.privileged.reference_fixes:
            started = time.time()
            await fix()
            self.trajectory.append({"action": "reference_fix", "message": "applied the gold fix",
                                    "seconds": round(time.time() - started, 2), "timestamp": started})
        # like a careful SRE: confirm every pod is back and Ready before declaring the incident over
        await self.wait_healthy(task)
        await asyncio.sleep(self.settle_s)
        await self.submit(task, "Mitigation applied: the reference fix for each fault.")
        return self.outcome()


class NoopAgent(_Base):
    """Changes nothing."""

    async def run(self, task: AgentTask) -> AgentOutcome:
        await self.submit(task, "No fault found; the system looks healthy.")
        await self.submit(task, "Nothing to mitigate.")
        return self.outcome()


class RestartAllAgent(_Base):
    """Blind restart: deletes every pod in the app namespace (controllers recreate them)."""

    async def run(self, task: AgentTask) -> AgentOutcome:
        await self.submit(task, describe_truth(self.truth(task)))
        await self.kubectl(task, "delete", "pods", "--all", "-n", task.app_namespace, "--wait=false")
        await asyncio.sleep(self.settle_s)
        await self.submit(task, "Restarted everything.")
        return self.outcome()


class ScaleZeroFaultyAgent(_Base):
    """Makes the symptom disappear by scaling the faulty workloads to zero."""

    async def run(self, task: AgentTask) -> AgentOutcome:
        await self.submit(task, describe_truth(self.truth(task)))
        for namespace, kind, name in task.privileged.faulty_workloads:
            if kind in ("Deployment", "StatefulSet"):
                await self.kubectl(task, "scale", f"{kind.lower()}/{name}", "-n", namespace, "--replicas=0")
        await asyncio.sleep(self.settle_s)
        await self.submit(task, "Scaled the broken workload down.")
        return self.outcome()


class DeleteFaultyAgent(_Base):
    """Deletes the faulty workloads outright."""

    async def run(self, task: AgentTask) -> AgentOutcome:
        await self.submit(task, describe_truth(self.truth(task)))
        for namespace, kind, name in task.privileged.faulty_workloads:
            await self.kubectl(task, "delete", f"{kind.lower()}/{name}", "-n", namespace, "--wait=false")
        await asyncio.sleep(self.settle_s)
        await self.submit(task, "Deleted the broken workload.")
        return self.outcome()


class AutosubmitAgent(_Base):
    """Upstream's ``autosubmit``: submits a fixed answer at once in each graded stage, never
    investigating or changing anything (a harness smoke test; it must fail both stages)."""

    ANSWER = "autosubmit: no investigation was done"

    async def run(self, task: AgentTask) -> AgentOutcome:
        submitted: set[str] = set()
        async with httpx.AsyncClient(timeout=30.0, trust_env=False) as client:
            for _ in range(int(max(task.timeout, 1) * 4)):
                stage = await _stage(client, task)
                if stage in ("tearing_down", "done"):
                    break
                if stage in ("diagnosis", "mitigation") and stage not in submitted:
                    reply = await client.post(f"{task.api_url}/submit", json={"solution": self.ANSWER})
                    self.trajectory.append({"action": "submit", "stage": stage, "message": self.ANSWER,
                                            "status": reply.status_code, "timestamp": time.time()})
                    submitted.add(stage)
                await asyncio.sleep(0.25)
        return self.outcome()
