"""Upstream SREGym problem ids as aliases: `--problem <upstream id>`, `--suite sregym-lite`,
`sregym list-problems --upstream` and the generated docs/upstream-aliases.md."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sregym_core.cli._select import select_problems
from sregym_core.errors import UsageError
from sregym_core.plugins import process_host
from sregym_core.upstream_catalog import UPSTREAM_IDS, UPSTREAM_PROBLEMS

ROOT = Path(__file__).resolve().parents[1]
SREGYM = str(Path(sys.executable).parent / "sregym")

pytest.importorskip("sregym_app_hotel_reservation")
pytest.importorskip("sregym_app_social_network")


@pytest.fixture(scope="module")
def host():
    return process_host()


def test_the_catalogue_is_upstreams():
    assert len(UPSTREAM_PROBLEMS) == len(UPSTREAM_IDS) == 123
    assert sum(p.lite for p in UPSTREAM_PROBLEMS) == 21


def test_aliases_are_upstream_ids_unique_and_never_shadow_an_id(host):
    problems = host.get_problems()
    seen: dict[str, str] = {}
    for problem in problems.values():
        for alias in problem.aliases:
            assert alias in UPSTREAM_IDS, f"{problem.id}: alias {alias!r} is not an upstream id"
            assert alias not in seen, f"{alias} is an alias of both {seen[alias]} and {problem.id}"
            assert alias not in problems
            seen[alias] = problem.id
    # every id the facts table marks E (same mechanism), the ids of sregym-fault-cluster (admission,
    # routing, the recurring actor, caBundle, Hotel DNS), Astronomy Shop's 27 (the AS ids whose
    # mechanism runs on Astronomy Shop itself are aliases of its problems, not of a Hotel port),
    # Social Network's DNS pair, TrainTicket's F17 and F22, the storage wiring (PV node affinity, the RWO
    # disk shared by replicas on three apps, a ServiceAccount missing a permission, the CronJob whose
    # sidecar never exits), the node-OS faults
    # (eviction threshold, /dev/shm, conntrack), the controller's finalizer deadlock, the kubelet crash,
    # the buggy kube-proxy build, the pod IP pool exhausted, the node clock drift (TrainTicket's tokens), and
    # the load generator's home-page flood, the priority preemption cascade and the HPA missing its CPU
    # request, latent sector errors and silent data corruption on the FUSE layer (#40), and FleetCast's
    # six operator ids (a DatastoreCluster and its operator, #40), the datastore requiring TLS (#40) and
    # every datastore upgraded to a major version that cannot read its data (PostgreSQL 15 -> 18, #40),
    # and the pod's narrowed ip_local_port_range (a cgroup/connect4 program on the embedded node, #40),
    # and Calico's route reflectors selected by a deprecated label (the embedded network's routes, #40)
    assert len(seen) == 122


def test_problem_by_upstream_id(host):
    chosen = select_problems(host, problem=("network_policy_block", "hotel-scale-zero-rate", "scale_pod_zero_social_net"))
    assert [p.id for p in chosen] == ["hotel-network-policy-block-geo", "hotel-scale-zero-rate",
                                      "social-scale-zero-user-service"]
    with pytest.raises(UsageError) as missing:
        select_problems(host, problem=("gc_capacity_degradation",))
    assert "upstream SREGym id(s) with no equivalent" in missing.value.render()


def test_sregym_lite_suite_runs_the_equivalents_and_says_which_are_missing(host):
    said: list[str] = []
    chosen = select_problems(host, suite="sregym-lite", say=said.append)
    assert sorted(p.id for p in chosen) == sorted({
        "hotel-network-policy-block-geo", "hotel-selector-pollution-search", "hotel-quota-admission-user",
        "hotel-db-password-rotated-profile", "astronomy-wrong-dns-policy-recommendation",
        "social-readiness-misconfig-user-service", "social-selector-mismatch-user-service",
        "social-rolling-update-broken-user-timeline-service", "social-dns-nxdomain-social-graph-service",
        "hotel-metastable-rate-limit-collapse", "hotel-admission-webhook-outage-rate",
        "hotel-mutating-webhook-memory-geo", "astronomy-env-shadowing-frontend", "astronomy-cache-auth-valkey-cart",
        "hotel-internal-traffic-local-geo", "astronomy-queue-poison-pill", "astronomy-unschedulable-wrong-port-checkout",
        "astronomy-edge-filter-redos-frontend-proxy", "social-pvc-rwo-shared-nginx-thrift",
        "hotel-cronjob-sidecar-blocks-frontend", "hotel-finalizer-deadlock-geo"})
    assert said == []  # every one of the 21 lite ids has an equivalent: nothing to say


def test_list_problems_upstream_prints_every_id():
    env = {**os.environ, "SREGYM_DISABLE_PLUGINS": "noop"}
    out = subprocess.run([SREGYM, "list-problems", "--upstream", "--json"], capture_output=True, text=True, timeout=120,
                         check=True, env=env).stdout
    rows = json.loads(out)
    assert [r["upstream_id"] for r in rows] == [p.id for p in UPSTREAM_PROBLEMS]
    by_id = {r["upstream_id"]: r for r in rows}
    assert by_id["wrong_bin_usage"]["equivalent"] == "hotel-wrong-command-rate"
    assert by_id["gc_capacity_degradation"]["equivalent"] is None
    table = subprocess.run([SREGYM, "list-problems", "--upstream"], capture_output=True, text=True, timeout=120,
                           check=True, env=env).stdout
    line = next(line for line in table.splitlines() if line.startswith("gc_capacity_degradation "))
    assert "missing" in line


def test_alias_doc_is_current():
    """docs/upstream-aliases.md comes from `sregym list-problems --upstream --format markdown` (tox -e generate)."""
    env = {**os.environ, "SREGYM_DISABLE_PLUGINS": "noop"}
    current = subprocess.run([SREGYM, "list-problems", "--upstream", "--format", "markdown"], capture_output=True,
                             text=True, timeout=120, check=True, env=env).stdout
    committed = (ROOT / "docs" / "upstream-aliases.md").read_text()
    assert committed == current, ("docs/upstream-aliases.md is stale: run "
                                  "`sregym list-problems --upstream --format markdown > docs/upstream-aliases.md`")


def test_a_problem_run_by_upstream_id_carries_it_and_upstreams_time_limit(host):
    """Upstream's --agent-timeout default is 1800 s; our files' 600 s holds for our ids only, unless
    the problem writes down why it must hold for the upstream id too."""
    import attrs

    from sregym_core.problems import as_upstream

    ours, = select_problems(host, problem=("hotel-network-policy-block-geo",))
    upstream, = select_problems(host, problem=("network_policy_block",))
    assert (ours.upstream_id, ours.agent_timeout) == ("", 600)
    assert (upstream.id, upstream.upstream_id, upstream.agent_timeout) == (ours.id, "network_policy_block", 1800)
    reasoned = attrs.evolve(ours, agent_timeout_reason="upstream's own problem sets 600 s")
    assert as_upstream(reasoned, "network_policy_block").agent_timeout == 600
    lite = select_problems(host, suite="sregym-lite", say=lambda _text: None)
    assert all(p.upstream_id in UPSTREAM_IDS and p.upstream_id in p.aliases for p in lite)
    assert {p.agent_timeout for p in lite} == {1800}


def test_list_problems_resolves_the_suites_run_accepts():
    env = {**os.environ, "SREGYM_DISABLE_PLUGINS": "noop"}
    listed = json.loads(subprocess.run([SREGYM, "list-problems", "--suite", "sregym-lite", "--json"],
                                       capture_output=True, text=True, timeout=120, check=True, env=env).stdout)
    assert len(listed) == 21 == len({p["id"] for p in listed})
    lite_ids = {p.id for p in UPSTREAM_PROBLEMS if p.lite}
    assert {p["upstream_id"] for p in listed} == lite_ids and {p["agent_timeout"] for p in listed} == {1800}
    table = subprocess.run([SREGYM, "list-problems", "--suite", "sregym-lite"], capture_output=True, text=True,
                           timeout=120, check=True, env=env).stdout
    assert "UPSTREAM ID" in table and table.rstrip().endswith("21 problem(s)")


@pytest.mark.parametrize(("started_as", "resumed_as"), [("network_policy_block", "hotel-network-policy-block-geo"),
                                                        ("hotel-network-policy-block-geo", "network_policy_block"),
                                                        ("network_policy_block", "network_policy_block")])
def test_resume_skips_what_was_recorded_whichever_id_started_the_run(host, tmp_path, started_as, resumed_as):
    """``--resume`` keys on our id, which a record keeps whichever id the run was started with."""
    import asyncio
    from types import SimpleNamespace

    from sregym_core.conductor.runner import RunPlan, WorkItem, _run_item
    from sregym_core.results.record import AttemptRecord
    from sregym_core.results.writer import ResultsWriter

    started, = select_problems(host, problem=(started_as,))
    writer = ResultsWriter(tmp_path)
    writer.append(AttemptRecord(run_id="r1", problem_id=started.id, upstream_id=started.upstream_id, agent="noop",
                                attempt=1, agent_timeout_s=started.agent_timeout))
    resumed, = select_problems(host, problem=(resumed_as,))
    state = SimpleNamespace(plan=RunPlan(problems=[resumed], agents=["noop"], resume=True), host=host,
                            done=writer.completed_keys())
    said: list[str] = []
    env = SimpleNamespace(capabilities=frozenset({"embedded"}))  # never touched: the item is skipped first
    asyncio.run(_run_item(state, env, None, WorkItem(resumed, "noop", 1), said.append))
    assert said == ["hotel-network-policy-block-geo × noop #1: already recorded, skipped (--resume)"]
