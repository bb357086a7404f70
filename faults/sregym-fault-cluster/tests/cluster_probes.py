"""Probes of this pack's live tests (beside sregym_core.testing.probes)."""

from __future__ import annotations


def oom_killed_at(component: str, memory: str):
    """A pod of the component whose container has the memory limit ``memory`` (set by the fault, not
    the app) and was OOMKilled: evidence the injected limit, and nothing left over, did it."""
    def probe(live) -> str | None:
        for pod in live.pods(component):
            limited = {c["name"] for c in pod["spec"]["containers"]
                       if ((c.get("resources") or {}).get("limits") or {}).get("memory") == memory}
            for status in pod.get("status", {}).get("containerStatuses") or []:
                if status["name"] not in limited:
                    continue
                for state in (status.get("state") or {}, status.get("lastState") or {}):
                    if (state.get("terminated") or {}).get("reason") == "OOMKilled":
                        return f"{pod['metadata']['name']}/{status['name']} OOMKilled at a {memory} limit"
        return None
    return probe


def init_log(component: str, container: str, text: str):
    """A line with ``text`` in the log of a pod's init container (``kubectl logs -c``, the agent's view)."""
    def probe(live) -> str | None:
        for pod in live.pods(component):
            if not any(c["name"] == container for c in pod["spec"].get("initContainers") or []):
                continue
            out = live.kubectl("logs", pod["metadata"]["name"], "-c", container, "-n", live.namespace)
            for line in (out or "").splitlines():
                if text in line:
                    return f"{pod['metadata']['name']}/{container}: {line.strip()[:160]}"
        return None
    return probe


def terminating(kind: str, name: str):
    """An object deleted but held by a finalizer (deletionTimestamp set, still there), as ``kubectl get -o
    yaml`` shows it."""
    def probe(live) -> str | None:
        import json

        try:
            meta = json.loads(live.kubectl("get", kind, name, "-n", live.namespace, "-o", "json")).get("metadata") or {}
        except ValueError:  # NotFound: gone, not held
            return None
        if meta.get("deletionTimestamp") and meta.get("finalizers"):
            return f"{kind} {name} Terminating since {meta['deletionTimestamp']}, finalizers {meta['finalizers']}"
        return None
    return probe
