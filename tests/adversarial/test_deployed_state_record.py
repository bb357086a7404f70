"""Red-team round 14, finding 7 (issue #34): no app object the agent reads carries a record of its
deployed state.

A client-side ``kubectl apply`` deploy leaves ``kubectl.kubernetes.io/last-applied-configuration`` on
every object; a fault changes the object, not the annotation, so one diff of the two named the fault's
field and ``kubectl replace`` of the annotation repaired it (4 of 4 problems). Deploys and faults now
leave no such annotation, and a fault's writes name the deploy's own field manager, so neither the
annotations nor ``managedFields`` (``--show-managed-fields``, which the agent's kubectl may pass) single
out what a fault changed.

Hotel Reservation on the shared cluster; five faults of the kinds the attacker's diff bot named (a
Deployment's command, a Service's port, a ConfigMap's data, a container's env) and one that makes an
object (``kube.apply``), all read as the attempt's agent identity.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow

BIN = Path(sys.executable).parent
KUBECTL = str(BIN / "kubectl")
NS = "hotel-reservation"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
#: (fault, target component): the attacker's four, and one whose object is made with ``kube.apply``
FAULTS = (("wrong-command", "rate"), ("service-port-mismatch", "reservation"), ("configmap-drift", "search"),
          ("missing-env", "user"), ("network-policy-block", "profile"))
#: kinds whose objects a controller writes as the workload runs (not the deployed state)
CHURN = {"Pod", "PodMetrics", "ReplicaSet", "Endpoints", "EndpointSlice", "Event", "Lease", "ControllerRevision"}
#: the kinds the attacker's diff bot read: the agent must be able to list every one (no silent skip)
MUST_READ = ("deployments", "services", "configmaps", "networkpolicies", "serviceaccounts")
#: an outer bound against a hang; the waits themselves are kubectl watches
HANG_S = 300


def _kubectl(kubeconfig: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([KUBECTL, "--kubeconfig", str(kubeconfig), *args], capture_output=True, text=True,
                          timeout=timeout)


def _as_agent(agent: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """Every object the agent can list in the app namespace, with its managedFields, by (kind, name)."""
    listing = _kubectl(agent, "api-resources", "--namespaced=true", "--verbs=list", "-o", "name")
    assert listing.returncode == 0, listing.stderr
    kinds = [k for k in listing.stdout.split() if k.split(".")[0] not in ("events", "leases")]
    assert set(MUST_READ) <= {k.split(".")[0] for k in kinds}, kinds
    objects: dict[tuple[str, str], dict[str, Any]] = {}
    read = set()
    for kind in kinds:
        done = _kubectl(agent, "get", kind, "-n", NS, "-o", "json", "--show-managed-fields")
        if done.returncode != 0:
            assert "forbidden" in done.stderr.lower(), (kind, done.stderr)
            continue
        read.add(kind.split(".")[0])
        for item in json.loads(done.stdout).get("items") or []:
            objects[(item.get("kind") or kind, item["metadata"]["name"])] = item
    assert set(MUST_READ) <= read, f"the agent could not list {set(MUST_READ) - read}"
    return objects


def _content(obj: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k not in ("metadata", "status")}


def _managers(obj: dict[str, Any]) -> set[tuple[str, str]]:
    return {(m.get("manager", ""), m.get("operation", "")) for m in obj["metadata"].get("managedFields") or []}


def _leaves(value: Any) -> set[str]:
    if isinstance(value, dict):
        return set().union(*(_leaves(v) for v in value.values())) if value else set()
    if isinstance(value, list):
        return set().union(*(_leaves(v) for v in value)) if value else set()
    return {json.dumps(value)} if value is not None else set()


def test_no_object_records_its_deployed_state_and_nothing_singles_out_the_faults(deployed, attempt_identity, tmp_path):
    from sregym_core.faults import FaultContext, call_fault
    from sregym_core.plugins import new_plugin_host
    from sregym_core.types import Target
    from sregym_core.validation import validate

    admin = deployed.kubeconfig
    host = new_plugin_host()
    app = host.get_apps()["hotel-reservation"]
    specs = host.get_faults()
    ctxs: list[tuple[Any, FaultContext, Target, dict]] = []
    with attempt_identity(admin, [NS], tmp_path) as agent:
        before = _as_agent(agent)
        carrying = sorted(f"{k}/{n}" for (k, n), o in before.items() if LAST_APPLIED in (o["metadata"].get("annotations") or {}))
        assert not carrying, f"deployed objects carry {LAST_APPLIED}: {carrying}"
        try:
            for fault, component in FAULTS:
                spec = specs[fault]
                params = validate({}, dict(spec.params_schema), what=f"params of {fault}", fill_defaults=True)
                ctx = FaultContext(kubeconfig=admin, namespace=NS, app=app, cluster=None, kubectl_path=KUBECTL)
                target = Target(app=app, component=app.component(component), namespace=NS)
                asyncio.run(call_fault(spec.impl.inject, ctx, target, params))
                ctxs.append((spec, ctx, target, params))
            after = _as_agent(agent)
        finally:
            for spec, ctx, target, params in reversed(ctxs):
                asyncio.run(call_fault(spec.impl.recover, ctx, target, params))
            for kind, name in (("deployment", "rate"), ("deployment", "user"), ("deployment", "search"),
                               ("deployment", "profile"), ("deployment", "reservation")):
                _kubectl(admin, "rollout", "status", f"{kind}/{name}", "-n", NS, f"--timeout={HANG_S}s",
                         timeout=HANG_S + 30)

    carrying = sorted(f"{k}/{n}" for (k, n), o in after.items() if LAST_APPLIED in (o["metadata"].get("annotations") or {}))
    assert not carrying, f"after the faults, objects carry {LAST_APPLIED}: {carrying}"
    changed = {key for key, obj in after.items() if key[0] not in CHURN
               and (key not in before or _content(before[key]) != _content(obj))}
    touched_kinds = {kind for kind, _ in changed}
    # the five faults' objects: rate's, user's and the NetworkPolicy at least (Service and ConfigMap names are the app's)
    assert {"Deployment", "Service", "ConfigMap", "NetworkPolicy"} <= touched_kinds, sorted(changed)
    report = []
    for key in sorted(changed):
        obj = after[key]
        peers = [o for k, o in after.items() if k[0] == key[0] and k not in changed] or \
                [o for k, o in after.items() if k[0] not in CHURN and k not in changed]
        # no annotation key, and no field manager, that untouched objects of its kind do not have
        keys = set(obj["metadata"].get("annotations") or {})
        usual = set().union(*(set(o["metadata"].get("annotations") or {}) for o in peers))
        assert keys <= usual, f"{key} alone has annotations {sorted(keys - usual)}"
        managers = _managers(obj)
        usual_managers = set().union(*(_managers(o) for o in peers))
        assert managers <= usual_managers, f"{key} alone has field managers {sorted(managers - usual_managers)}"
        # and its metadata holds none of the values the fault took away
        if key in before:
            gone = _leaves(_content(before[key])) - _leaves(_content(obj))
            meta = json.dumps({"annotations": obj["metadata"].get("annotations") or {},
                               "managedFields": obj["metadata"].get("managedFields") or []})
            kept = [v for v in gone if len(v) >= 4 and v.strip('"') and v.strip('"') in meta]
            assert not kept, f"{key}'s metadata still holds what the fault removed: {kept[:5]}"
        report.append(f"{key[0]}/{key[1]}: managers {sorted(managers)} (untouched {key[0]}s: {sorted(usual_managers)})")
    print("\n".join(["changed objects as the agent reads them:", *report]))


#: the objects a deploy on a kept cluster must bring back (drifted or gone), the rest it must not touch
DRIFT = (("configmap", "search-config"), ("service", "geo"), ("configmap", "postgres-init"))
#: kinds no controller writes as the app runs: their resourceVersion moves only when someone writes them
STILL_KINDS = "configmaps,services,secrets,ingresses,persistentvolumeclaims"


def _versions(admin: Path) -> dict[tuple[str, str], str]:
    done = _kubectl(admin, "get", STILL_KINDS, "-n", NS, "-o", "json")
    assert done.returncode == 0, done.stderr
    return {(o["kind"], o["metadata"]["name"]): o["metadata"]["resourceVersion"] for o in json.loads(done.stdout)["items"]}


def test_a_deploy_on_a_kept_cluster_applies_what_drifted_and_writes_nothing_else(deployed):
    """``sregym deploy`` of the running app (what every later ``sregym run`` does) puts back a drifted
    ConfigMap, a drifted Service and a deleted ConfigMap, and writes no other object: the documents the
    live objects already hold are not applied again (sregym_appkit.unchanged); none carries a
    last-applied record afterwards."""
    admin = deployed.kubeconfig
    search = json.loads(_kubectl(admin, "get", "configmap", "search-config", "-n", NS, "-o", "json").stdout)
    geo = json.loads(_kubectl(admin, "get", "service", "geo", "-n", NS, "-o", "json").stdout)
    ports = geo["spec"]["ports"]
    admin_port = next(i for i, p in enumerate(ports) if p["name"] == "admin")
    drifted_search = {k: v + "\n# drifted\n" for k, v in search["data"].items()}
    writes = (
        ("patch", "configmap", "search-config", "-n", NS, "--type=merge", "-p", json.dumps({"data": drifted_search})),
        ("patch", "service", "geo", "-n", NS, "--type=json", "-p", json.dumps(
            [{"op": "replace", "path": f"/spec/ports/{admin_port}/targetPort", "value": 9091}])),
        ("delete", "configmap", "postgres-init", "-n", NS),
    )
    for write in writes:
        done = _kubectl(admin, *write)
        assert done.returncode == 0, (write, done.stderr)
    before = _versions(admin)
    assert ("ConfigMap", "postgres-init") not in before
    redeploy = subprocess.run([str(BIN / "sregym"), "deploy", "hotel-reservation", "--cluster", deployed.name,
                               "--workdir", str(deployed.workdir)], env=deployed.environ, capture_output=True,
                              text=True, timeout=HANG_S)
    assert redeploy.returncode == 0, redeploy.stderr[-3000:]
    after = _versions(admin)
    search_now = json.loads(_kubectl(admin, "get", "configmap", "search-config", "-n", NS, "-o", "json").stdout)
    geo_now = json.loads(_kubectl(admin, "get", "service", "geo", "-n", NS, "-o", "json").stdout)
    assert search_now["data"] == search["data"], "the drifted ConfigMap is back as deployed"
    assert geo_now["spec"]["ports"][admin_port]["targetPort"] == ports[admin_port]["targetPort"]
    assert ("ConfigMap", "postgres-init") in after, "the deleted ConfigMap is back"
    drifted = {("ConfigMap", "search-config"), ("Service", "geo"), ("ConfigMap", "postgres-init")}
    # the app's TLS Secret is issued again only if it does not verify: it does, so nothing else moved
    rewritten = sorted(f"{k}/{n}" for (k, n), version in before.items() if (k, n) not in drifted and after.get((k, n)) != version)
    assert not rewritten, f"the deploy wrote objects that had not drifted: {rewritten}"
    for kind, name in DRIFT:
        obj = json.loads(_kubectl(admin, "get", kind, name, "-n", NS, "-o", "json").stdout)
        assert LAST_APPLIED not in (obj["metadata"].get("annotations") or {}), (kind, name)
