"""What the node agents themselves know of their pods, for graders (``GET /sregym/nodes/pods``).

A pod's ``status`` is an API object: anyone allowed to write ``pods/status`` can say it is Ready with
any IP. The node agent's own records are not: which pods it runs, the address it gave each sandbox,
the image each container really runs and whether its probes pass. The benchmark's oracles read
these (admin only) and believe no status (issue #34: a pod patched Ready with another pod's IP
passed every oracle while its Deployment ran a missing image).
"""

from __future__ import annotations

from typing import Any


def node_pods(nodes: Any) -> list[dict[str, Any]]:
    """One record per pod a node agent runs: ``node``, ``namespace``, ``name``, ``uid``, ``ip``,
    ``phase``, ``terminating``, ``ready`` (every main container ready by its probes, not stopping),
    ``containers`` (``name``, ``image`` it runs, ``running``, ``ready``) and ``entered``: how many
    exec/attach sessions someone other than the cluster's own opened in it (a process such a session
    started may still run there)."""
    out: list[dict[str, Any]] = []
    for node, agent in (getattr(nodes, "agents", None) or {}).items():
        for worker in list(agent.workers.values()):
            containers = [{"name": r.name, "image": r.spec.get("image", ""), "kind": r.kind, "running": r.running(),
                           "ready": bool(r.ready)} for r in worker.init_runners + worker.runners]
            main = [c for c in containers if c["kind"] == "main"]
            phase = worker.phase()
            ready = bool(main) and all(c["ready"] and c["running"] for c in main) and not worker.terminating \
                and phase == "Running" and bool(worker.pod_ip)
            out.append({"node": node, "namespace": worker.namespace, "name": worker.name, "uid": worker.uid,
                        "ip": worker.pod_ip, "phase": phase, "terminating": bool(worker.terminating), "ready": ready,
                        "containers": containers, "entered": int(getattr(worker, "entered", 0))})
    return out
