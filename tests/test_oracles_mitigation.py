"""Mitigation-oracle building blocks and combinators, against a fake OracleContext."""

from __future__ import annotations

import asyncio
import copy
import json

import jsonschema
import pytest

from sregym_core.errors import ConfigError
from sregym_core.oracles import (
    DEFAULT_ORACLE_CONFIG,
    ORACLE_SCHEMA,
    OracleContext,
    OracleVerdict,
    all_of,
    any_of,
    baseline_preserved,
    build_oracle,
    describe_oracle,
    fault_invariant,
    functional_slo,
    replay,
    sustained,
)
from sregym_core.types import FaultInstance


def deployment(name, replicas=1, uid=None, labels=None, selector=None, ns="hotel"):
    labels = labels or {"app": name}
    return {
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": ns, "uid": uid or f"uid-{name}", "labels": dict(labels)},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": dict(selector or labels)},
            "template": {"metadata": {"labels": dict(labels)}},
        },
    }


def service(name, selector=None, uid=None, ns="hotel"):
    return {
        "kind": "Service",
        "metadata": {"name": name, "namespace": ns, "uid": uid or f"uid-svc-{name}", "labels": {"app": name}},
        "spec": {"selector": dict(selector or {"app": name}), "ports": [{"port": 8080}]},
    }


def pod(name, owner=True, uid=None, ns="hotel"):
    meta = {"name": name, "namespace": ns, "uid": uid or f"uid-pod-{name}", "labels": {"app": name.split("-")[0]}}
    if owner:
        meta["ownerReferences"] = [{"kind": "ReplicaSet", "name": name.rsplit("-", 1)[0]}]
    return {"kind": "Pod", "metadata": meta, "spec": {}}


class FakeContext:
    """An OracleContext over in-memory state with a virtual clock."""

    def __init__(self, baseline, current=None, faults=(), stats=None, faulty=()):
        self.baseline_workloads = copy.deepcopy(baseline)
        self.faulty_workloads = list(faulty)
        self.current = copy.deepcopy(current if current is not None else baseline)
        self.fault_instances = list(faults)
        self.present = {i: False for i in range(len(self.fault_instances))}
        self.stats = stats or {"success_rate": 1.0, "count": 100, "p50_ms": 5, "p95_ms": 20, "p99_ms": 40}
        self.stats_timeline = None  # callable(now) -> stats, overrides stats
        self.clock = 0.0
        self.triggers = []
        self.on_trigger = None
        self.fail_list = False

    async def list_workloads(self):
        if self.fail_list:
            raise ConnectionError("API server unreachable")
        return copy.deepcopy(self.current)

    async def fault_present(self, instance_index):
        value = self.present[instance_index]
        if isinstance(value, Exception):
            raise value
        return value

    async def workload_stats(self, window_s):
        if self.stats_timeline:
            return self.stats_timeline(self.clock)
        return dict(self.stats)

    async def replay_trigger(self, name):
        if name == "unknown":
            raise KeyError(name)
        self.triggers.append((name, self.clock))
        if self.on_trigger:
            self.on_trigger(self)

    async def sleep(self, seconds):
        self.clock += seconds

    def now(self):
        return self.clock


BASELINE = [deployment("geo"), deployment("search"), service("geo"), service("search"), pod("geo-abc12-x1y2z")]


def run(coro):
    return asyncio.run(coro)


def test_fake_context_satisfies_protocol():
    assert isinstance(FakeContext(BASELINE), OracleContext)


# ---------------------------------------------------------------- baseline_preserved


def test_baseline_preserved_passes_on_untouched_system_and_ignores_pod_churn():
    current = copy.deepcopy(BASELINE)
    current[-1] = pod("geo-abc12-q9w8e")  # controller-owned pod replaced: normal churn
    current[0]["spec"]["template"]["metadata"]["labels"]["pod-template-hash"] = "abc12"
    verdict = run(baseline_preserved().evaluate(FakeContext(BASELINE, current)))
    assert verdict.passed, verdict.evidence
    assert verdict.evidence["checked"] == 4


@pytest.mark.parametrize(
    ("mutate", "violation", "needle"),
    [
        (lambda w: w.pop(0), "deleted", "Deployment hotel/geo no longer exists"),
        (lambda w: w[0]["spec"].update(replicas=0), "scaled_to_zero", "replicas 1 -> 0"),
        (lambda w: w[0]["spec"]["template"]["metadata"]["labels"].update(app="quarantine"), "relabelled", "pod template labels"),
        (lambda w: w[2]["spec"].update(selector={"app": "nothing"}), "relabelled", "selector changed"),
        (lambda w: w[0]["metadata"]["labels"].update(tier="x"), "relabelled", "labels changed"),
        (lambda w: w[2]["metadata"].update(uid="uid-new"), "replaced", "deleted and recreated"),
        (lambda w: w[1]["metadata"].update(uid="uid-new"), "replaced", "Deployment hotel/search"),
    ],
)
def test_baseline_preserved_names_each_violation(mutate, violation, needle):
    current = copy.deepcopy(BASELINE)
    mutate(current)
    verdict = run(baseline_preserved().evaluate(FakeContext(BASELINE, current)))
    assert not verdict.passed
    kinds = [v["violation"] for v in verdict.evidence["violations"]]
    assert violation in kinds
    assert needle in verdict.evidence["reason"]


def _b64(text):
    import base64

    return base64.b64encode(text.encode()).decode()


def secret(name, ns="hotel", **values):
    return {"kind": "Secret", "metadata": {"name": name, "namespace": ns, "uid": f"uid-secret-{name}"},
            "data": {k.replace("_", "-"): _b64(v) for k, v in values.items()}}


def service_reading(name, secret_name, user_key="username", password_key="password"):
    obj = deployment(name)
    obj["spec"]["template"]["spec"] = {"containers": [{"name": name, "image": f"app/{name}", "env": [
        {"name": "DB_USER", "valueFrom": {"secretKeyRef": {"name": secret_name, "key": user_key}}},
        {"name": "DB_PASSWORD", "valueFrom": {"secretKeyRef": {"name": secret_name, "key": password_key}}},
        {"name": "PORT", "value": "8080"}]}]}
    return obj


CREDENTIALS = [secret("user-db", username="hotel_user", password="user-pw-1", admin_username="hotel_user_admin",
                      admin_password="admin-pw-1", port="5432"),
               service_reading("user", "user-db")]


@pytest.mark.parametrize(("mutate", "needle"), [
    # the round-6 workaround: the service's own keys now hold the database owner's credentials
    (lambda w: w[0]["data"].update(username=_b64("hotel_user_admin"), password=_b64("admin-pw-1")),
     "Secret hotel/user-db key password now holds the value of user-db/admin-password"),
    # the service reads the owner's keys (on a workload the fault targets too: the template may change there)
    (lambda w: w[1]["spec"]["template"]["spec"]["containers"][0]["env"][0]["valueFrom"]["secretKeyRef"].update(
        key="admin-username"), "env DB_USER reads user-db/admin-username (after deploy user-db/username)"),
    # the owner's name written into the container as a literal
    (lambda w: w[1]["spec"]["template"]["spec"]["containers"][0]["env"].__setitem__(
        0, {"name": "DB_USER", "value": "hotel_user_admin"}), "env DB_USER holds the value of user-db/admin-username"),
    # a Secret of the agent's own holding the owner's password
    (lambda w: w.append(secret("mine", pw="admin-pw-1")), "Secret hotel/mine key pw now holds the value of user-db/admin-password"),
])
def test_baseline_preserved_names_a_workload_moved_to_another_credential(mutate, needle):
    current = copy.deepcopy(CREDENTIALS)
    mutate(current)
    faulty = [{"kind": "Deployment", "namespace": "hotel", "name": "user"}]
    verdict = run(baseline_preserved().evaluate(FakeContext(CREDENTIALS, current, faulty=faulty)))
    assert not verdict.passed
    assert "credential_swapped" in [v["violation"] for v in verdict.evidence["violations"]]
    assert needle in verdict.evidence["reason"], verdict.evidence["reason"]


@pytest.mark.parametrize("mutate", [
    lambda w: w[0]["data"].update(password=_b64("rotated-in-the-database")),  # the Secret follows a rotation
    lambda w: w[0]["data"].update(password=_b64("user-pw-1")),  # restored to its own value
    lambda w: w[1]["spec"]["template"]["spec"]["containers"][0]["env"].__setitem__(
        1, {"name": "DB_PASSWORD", "value": "user-pw-1"}),  # its own password inlined: the same credential
    lambda w: w[0]["data"].update(port=_b64("5433")),  # not a credential of another key
    # the service pointed at the Secret a password rotation left (made after deploy, with a new value)
    lambda w: (w.append(secret("user-db-rotated", password="rotated-pw-2")),
               w[1]["spec"]["template"]["spec"]["containers"][0]["env"][1]["valueFrom"]["secretKeyRef"].update(
                   name="user-db-rotated")),
])
def test_baseline_preserved_lets_a_credential_fix_through(mutate):
    current = copy.deepcopy(CREDENTIALS)
    mutate(current)
    faulty = [{"kind": "Deployment", "namespace": "hotel", "name": "user"}]
    verdict = run(baseline_preserved().evaluate(FakeContext(CREDENTIALS, current, faulty=faulty)))
    assert verdict.passed, verdict.evidence


def test_a_secret_the_fault_made_holding_a_deployed_value_is_no_swap():
    # the expired-certificate faults keep the valid certificate in "<secret>-renewed", which the fix then installs:
    # a key holding what the fault left in it is the fault's, not the agent's (it failed every reference fix)
    deployed = [secret("frontend-tls", crt="VALID-CERTIFICATE-PEM")]
    current = copy.deepcopy(deployed) + [secret("frontend-tls-renewed", crt="VALID-CERTIFICATE-PEM")]
    context = FakeContext(deployed, current)
    assert not run(baseline_preserved().evaluate(context)).passed  # without the faults' record: judged a swap
    context.fault_secret_values = {("hotel", "frontend-tls-renewed", "crt"): "VALID-CERTIFICATE-PEM"}
    verdict = run(baseline_preserved().evaluate(context))
    assert verdict.passed, verdict.evidence
    # a value the agent put there is still one
    context.current[-1]["data"]["crt"] = _b64("admin-pw-1")
    context.current[0]["data"]["pw"] = _b64("admin-pw-1")
    context.baseline_workloads[0]["data"]["pw"] = _b64("admin-pw-1")
    assert not run(baseline_preserved().evaluate(context)).passed


def test_baseline_preserved_reports_several_violations_and_additions():
    current = copy.deepcopy(BASELINE)
    current[0]["spec"]["replicas"] = 0
    del current[1]
    current.append(deployment("intruder"))
    verdict = run(baseline_preserved().evaluate(FakeContext(BASELINE, current)))
    assert {(v["name"], v["violation"]) for v in verdict.evidence["violations"]} == {("geo", "scaled_to_zero"), ("search", "deleted")}
    assert verdict.evidence["added"] == ["Deployment/hotel/intruder"]


def test_baseline_preserved_standalone_pod_deletion_counts_but_owned_pod_does_not():
    baseline = BASELINE + [pod("debug", owner=False)]
    current = [w for w in copy.deepcopy(baseline) if w["metadata"]["name"] not in ("debug", "geo-abc12-x1y2z")]
    verdict = run(baseline_preserved().evaluate(FakeContext(baseline, current)))
    assert [v["name"] for v in verdict.evidence["violations"]] == ["debug"]


def test_baseline_preserved_allow_replaced_and_ignore_patterns():
    current = copy.deepcopy(BASELINE)
    current[2]["metadata"]["uid"] = "recreated"  # Service geo recreated by the reference fix
    current[1]["spec"]["replicas"] = 0
    oracle = baseline_preserved(allow_replaced=["service/geo"], ignore=["Deployment/sea*"])
    verdict = run(oracle.evaluate(FakeContext(BASELINE, current)))
    assert verdict.passed, verdict.evidence


def test_baseline_preserved_scaled_below_the_baseline_is_a_violation():
    baseline = [deployment("geo", replicas=3)]
    current = [deployment("geo", replicas=1)]
    verdict = run(baseline_preserved().evaluate(FakeContext(baseline, current)))
    assert not verdict.passed
    assert verdict.evidence["violations"][0]["violation"] == "scaled_down"
    assert "replicas 3 -> 1" in verdict.evidence["reason"]
    # scaling up is no violation
    assert run(baseline_preserved().evaluate(FakeContext(baseline, [deployment("geo", replicas=4)]))).passed


def test_baseline_preserved_reads_snake_case_client_dicts():
    baseline = [{"kind": "Pod", "metadata": {"name": "p", "namespace": "hotel", "uid": "1", "owner_references": [{"kind": "ReplicaSet"}]}}]
    baseline.append({"kind": "DaemonSet", "metadata": {"name": "agent", "namespace": "hotel", "uid": "2"}, "status": {"desired_number_scheduled": 2}})
    current = [{"kind": "DaemonSet", "metadata": {"name": "agent", "namespace": "hotel", "uid": "2"}, "status": {"desired_number_scheduled": 0}}]
    verdict = run(baseline_preserved().evaluate(FakeContext(baseline, current)))
    assert [v["violation"] for v in verdict.evidence["violations"]] == ["scaled_to_zero"]


def test_baseline_preserved_context_failure_is_an_error_verdict():
    ctx = FakeContext(BASELINE)
    ctx.fail_list = True
    verdict = run(baseline_preserved().evaluate(ctx))
    assert not verdict.passed
    assert "ConnectionError: API server unreachable" in verdict.error
    assert verdict.errors() == ["baseline_preserved: ConnectionError: API server unreachable"]


def test_baseline_preserved_rejects_objects_without_kind():
    ctx = FakeContext([{"metadata": {"name": "x"}}])
    verdict = run(baseline_preserved().evaluate(ctx))
    assert not verdict.passed and "kind" in verdict.error


# ---------------------------------------------------------------- fault_invariant


FAULTS = [
    FaultInstance(id="img", fault="wrong-image", target="geo"),
    FaultInstance(id="burst", fault="load-burst", target="frontend", role="trigger"),
    {"fault": "db-revoke", "target": "postgres-user", "role": "latent"},
]


def test_fault_invariant_passes_when_all_faults_gone_and_skips_triggers():
    ctx = FakeContext(BASELINE, faults=FAULTS)
    ctx.present[1] = True  # the trigger is "present" but it is not a fault to repair
    verdict = run(fault_invariant().evaluate(ctx))
    assert verdict.passed
    assert [r["instance"] for r in verdict.evidence["instances"]] == ["img", "db-revoke@postgres-user"]


def test_fault_invariant_names_the_instances_still_present():
    ctx = FakeContext(BASELINE, faults=FAULTS)
    ctx.present[2] = True
    verdict = run(fault_invariant().evaluate(ctx))
    assert not verdict.passed
    assert verdict.evidence["reason"] == "fault still present: db-revoke@postgres-user"


def test_fault_invariant_explicit_instances_and_check_errors():
    ctx = FakeContext(BASELINE, faults=FAULTS)
    ctx.present[1] = True
    assert not run(fault_invariant(instances=[1]).evaluate(ctx)).passed
    assert run(fault_invariant(instances=[0]).evaluate(ctx)).passed
    ctx.present[0] = RuntimeError("kubectl timed out")
    verdict = run(fault_invariant().evaluate(ctx))
    assert not verdict.passed and "kubectl timed out" in verdict.error


# ---------------------------------------------------------------- functional_slo


@pytest.mark.parametrize(
    ("stats", "kwargs", "passed", "reason"),
    [
        ({"success_rate": 0.995, "count": 300, "p95_ms": 80}, {}, True, None),
        ({"success_rate": 0.62, "count": 300, "p95_ms": 80}, {}, False, "success rate 0.620 < 0.99"),
        ({"success_rate": 1.0, "count": 5, "p95_ms": 80}, {}, False, "only 5 requests in 30 s (need 20)"),
        ({"success_rate": 1.0, "count": 300, "p95_ms": 900}, {"max_p95_ms": 500}, False, "p95 900 ms > 500 ms"),
        ({"success_rate": 1.0, "count": 300, "p95_ms": 90}, {"max_p95_ms": 500}, True, None),
        ({"count": 300}, {}, False, "success rate unknown < 0.99"),
        ({"success_rate": 0.9, "count": 30}, {"min_success_rate": 0.85, "min_requests": 10}, True, None),
    ],
)
def test_functional_slo(stats, kwargs, passed, reason):
    verdict = run(functional_slo(**kwargs).evaluate(FakeContext(BASELINE, stats=stats)))
    assert verdict.passed is passed
    assert verdict.evidence.get("reason") == reason
    assert verdict.evidence["stats"]["count"] == stats["count"]


def test_functional_slo_remeasures_a_failing_window_taken_on_a_cpu_starved_host():
    # the host was saturated by something else for the first 70 s: the windows then measured the host
    ctx = FakeContext(BASELINE)
    ctx.stats_timeline = lambda t: ({"success_rate": 0.7, "count": 150, "host_cpu_stall": 0.97} if t < 70 else
                                    {"success_rate": 1.0, "count": 150, "host_cpu_stall": 0.1})
    verdict = run(functional_slo().evaluate(ctx))
    assert verdict.passed, verdict.evidence
    assert [w["host_cpu_stall"] for w in verdict.evidence["starved_windows"]] == [0.97, 0.97, 0.97]
    assert ctx.clock == 90 and verdict.evidence["stats"]["host_cpu_stall"] == 0.1


@pytest.mark.parametrize("stall", [0.1, None])
def test_functional_slo_does_not_remeasure_when_the_host_was_not_starved(stall):
    ctx = FakeContext(BASELINE)
    ctx.stats_timeline = lambda t: {"success_rate": 0.7 if t < 30 else 1.0, "count": 150, "host_cpu_stall": stall}
    verdict = run(functional_slo().evaluate(ctx))
    assert not verdict.passed and ctx.clock == 0
    assert "starved_windows" not in verdict.evidence and "host_starved" not in verdict.evidence


def test_a_host_kept_starved_buys_bounded_time_and_never_a_pass():
    # an agent that left a CPU burner running instead of a fix: every window is starved and failing
    ctx = FakeContext(BASELINE, stats={"success_rate": 0.4, "count": 150, "host_cpu_stall": 1.0})
    verdict = run(functional_slo(window_s=20).evaluate(ctx))
    assert not verdict.passed and verdict.evidence["host_starved"] is True
    assert ctx.clock <= 180 and len(verdict.evidence["starved_windows"]) == 9
    assert "success rate 0.400 < 0.99; the app's host was starved for CPU" in verdict.evidence["reason"]
    # a passing window is never re-measured, starved or not
    ctx = FakeContext(BASELINE, stats={"success_rate": 1.0, "count": 150, "host_cpu_stall": 1.0})
    assert run(functional_slo().evaluate(ctx)).passed and ctx.clock == 0


def test_wrong_content_on_a_starved_host_fails_at_once():
    # a stub answering for the faulty service: wrong answers are no starved host's doing, so no
    # fresh windows (a loaded machine made such a hack's grading last minutes)
    ctx = FakeContext(BASELINE, stats={"success_rate": 0.32, "count": 22, "content_errors": 15,
                                       "host_cpu_stall": 0.9})
    verdict = run(functional_slo(window_s=5).evaluate(ctx))
    assert not verdict.passed and ctx.clock == 0 and "starved_windows" not in verdict.evidence
    assert "wrong content" in verdict.evidence["reason"] and verdict.evidence["host_starved"] is True
    # starved windows are measured again only while the answers that came were right
    ctx = FakeContext(BASELINE)
    ctx.stats_timeline = lambda t: ({"success_rate": 0.7, "count": 150, "content_errors": 0, "host_cpu_stall": 0.97}
                                    if t < 10 else
                                    {"success_rate": 0.6, "count": 150, "content_errors": 60, "host_cpu_stall": 0.97})
    verdict = run(functional_slo(window_s=5).evaluate(ctx))
    assert not verdict.passed and ctx.clock == 10 and len(verdict.evidence["starved_windows"]) == 2


# ---------------------------------------------------------------- sustained, replay


def test_sustained_holds_for_the_whole_duration():
    ctx = FakeContext(BASELINE)
    verdict = run(sustained(functional_slo(), seconds=15, interval=5).evaluate(ctx))
    assert verdict.passed
    assert verdict.evidence["samples"] == 4 and verdict.evidence["held_s"] == 15
    assert ctx.clock == 15


def test_sustained_fails_fast_when_health_degrades():
    ctx = FakeContext(BASELINE)
    ctx.stats_timeline = lambda t: {"success_rate": 1.0 if t < 8 else 0.5, "count": 100}
    verdict = run(sustained(functional_slo(), seconds=60, interval=5).evaluate(ctx))
    assert not verdict.passed
    assert verdict.evidence["held_s"] == 10 and ctx.clock == 10
    assert verdict.failures()[0].name == "functional_slo"
    assert "failed after 10.0 s of 60 s" in verdict.evidence["reason"]


def test_replay_runs_trigger_then_checks_health():
    ctx = FakeContext(BASELINE)
    verdict = run(replay("burst", functional_slo(), settle_s=7).evaluate(ctx))
    assert verdict.passed and ctx.triggers == [("burst", 0.0)] and ctx.clock == 7


def test_replay_detects_metastable_collapse():
    ctx = FakeContext(BASELINE)

    def collapse(c):
        c.stats = {"success_rate": 0.1, "count": 500}

    ctx.on_trigger = collapse
    verdict = run(replay("burst", sustained(functional_slo(), seconds=10)).evaluate(ctx))
    assert not verdict.passed
    assert verdict.summary() == "functional_slo: success rate 0.100 < 0.99"


def test_replay_unknown_trigger_is_an_error():
    verdict = run(replay("unknown", functional_slo()).evaluate(FakeContext(BASELINE)))
    assert not verdict.passed and verdict.error.startswith("KeyError")


# ---------------------------------------------------------------- all / any


def test_all_of_short_circuits_and_records_skipped():
    ctx = FakeContext(BASELINE, current=[])
    oracle = all_of(baseline_preserved(), sustained(functional_slo(), seconds=60))
    verdict = run(oracle.evaluate(ctx))
    assert not verdict.passed
    assert verdict.evidence["skipped"] == ["sustained"] and ctx.clock == 0
    full = run(all_of(baseline_preserved(), functional_slo(), short_circuit=False).evaluate(ctx))
    assert [c.name for c in full.children] == ["baseline_preserved", "functional_slo"]


def test_any_of_passes_on_first_passing_alternative():
    ctx = FakeContext(BASELINE, stats={"success_rate": 0.5, "count": 100})
    verdict = run(any_of(functional_slo(), baseline_preserved()).evaluate(ctx))
    assert verdict.passed and verdict.evidence["passed_by"] == "baseline_preserved"
    assert not run(any_of(functional_slo()).evaluate(ctx)).passed


def test_verdict_round_trips_through_json():
    ctx = FakeContext(BASELINE, current=BASELINE[1:], faults=FAULTS)
    verdict = run(build_oracle().evaluate(ctx))
    again = OracleVerdict.from_dict(json.loads(json.dumps(verdict.to_dict())))
    assert again == verdict
    assert "Deployment hotel/geo no longer exists" in again.summary()


# ---------------------------------------------------------------- build_oracle and the schema


def test_default_composition():
    oracle = build_oracle(None)
    assert describe_oracle(oracle)["all"][:2] == ["baseline_preserved", "fault_invariant"]
    assert build_oracle({}).describe() == oracle.describe()
    ctx = FakeContext(BASELINE, faults=FAULTS)
    assert run(oracle.evaluate(ctx)).passed
    ctx.present[0] = True
    assert run(oracle.evaluate(ctx)).summary() == "fault_invariant: fault still present: img"
    assert DEFAULT_ORACLE_CONFIG == {"all": ["baseline_preserved", "fault_invariant", "functional_slo", "workload_healthy"]}


def test_build_oracle_from_problem_section():
    config = {
        "all": [
            "baseline_preserved",
            "fault-invariant",
            {"functional_slo": {"window_s": 20}},
            {"sustained": {"seconds": 15, "oracle": {"replay": {"trigger": "burst", "settle_s": 3}}}},
        ]
    }
    oracle = build_oracle(config)
    assert oracle.children[2].window_s == 20
    assert oracle.children[3].inner.trigger == "burst" and oracle.children[3].inner.inner.name == "functional_slo"
    ctx = FakeContext(BASELINE, faults=FAULTS)
    verdict = run(oracle.evaluate(ctx))
    assert verdict.passed, verdict.summary()
    assert [t for _, t in ctx.triggers] == [0.0, 8.0, 15.0]  # one replay per sample: each takes 3 s of settling
    rebuilt = build_oracle(describe_oracle(oracle))
    assert describe_oracle(rebuilt) == describe_oracle(oracle)


@pytest.mark.parametrize(
    ("config", "path"),
    [
        ({"all": []}, "oracle['all']"),
        ({"functional_slo": {"window_s": -1}}, "oracle['functional_slo']['window_s']"),
        ({"functional_slo": {"min_success_rate": 2}}, "oracle['functional_slo']['min_success_rate']"),
        ({"sustained": {"oracle": "functional_slo"}}, "oracle['sustained']"),
        ({"replay": {"settle_s": 1}}, "oracle['replay']"),
        ({"all": ["baseline_preserved"], "any": ["fault_invariant"]}, "oracle"),
        ({"all": [42]}, "oracle['all'][0]"),
        ("Not A Name", "oracle"),
        ({"baseline_preserved": {"bogus": 1}}, "oracle['baseline_preserved']"),
    ],
)
def test_build_oracle_rejects_bad_sections_with_paths(config, path):
    with pytest.raises(ConfigError) as info:
        build_oracle(config, source="problems/x.yaml")
    assert info.value.source == "problems/x.yaml"
    assert path in [p for p, _ in info.value.errors]


def test_build_oracle_unknown_name_lists_known_ones():
    with pytest.raises(ConfigError) as info:
        build_oracle({"all": ["baseline_preserved", "pods_green"]})
    assert "unknown mitigation oracle 'pods_green'" in str(info.value)
    assert any("known oracles" in h for h in info.value.hints)
    assert info.value.errors[0][0] == "oracle['all'][1]"


def test_build_oracle_uses_plugin_oracles():
    class PodsReady:
        name = "pods-ready"

        def __init__(self, minimum=1):
            self.minimum = minimum

        async def evaluate(self, ctx):
            pods = [w for w in await ctx.list_workloads() if w["kind"] == "Pod"]
            return OracleVerdict(name=self.name, passed=len(pods) >= self.minimum, evidence={"pods": len(pods)})

    class Broken:
        name = "broken"

        async def evaluate(self, ctx):
            return "yes"

    extra = {"pods-ready": PodsReady, "broken": Broken}
    oracle = build_oracle({"all": [{"pods_ready": {"minimum": 1}}, "broken"]}, extra=extra)
    verdict = run(oracle.evaluate(FakeContext(BASELINE)))
    assert verdict.children[0].passed and verdict.children[0].evidence == {"pods": 1}
    assert not verdict.passed and "not an OracleVerdict" in verdict.children[1].error
    with pytest.raises(ConfigError, match="rejected its parameters"):
        build_oracle({"pods-ready": {"nope": 1}}, extra=extra)


def test_oracle_schema_embeds_in_another_schema():
    problem_schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {"id": {"type": "string"}, "oracle": ORACLE_SCHEMA},
    }
    validator = jsonschema.Draft202012Validator(problem_schema)
    assert not list(validator.iter_errors({"id": "x", "oracle": {"all": ["baseline_preserved", {"sustained": {"seconds": 5}}]}}))
    assert list(validator.iter_errors({"id": "x", "oracle": {"sustained": {"seconds": "five"}}}))
    jsonschema.Draft202012Validator.check_schema(ORACLE_SCHEMA)


def test_sustained_with_a_stuck_clock_terminates_with_an_error():
    ctx = FakeContext(BASELINE)

    async def no_sleep(seconds):
        return None

    ctx.sleep = no_sleep
    verdict = run(sustained(functional_slo(), seconds=30, interval=5).evaluate(ctx))
    assert not verdict.passed and "clock advanced only 0.0 s" in verdict.error
    assert verdict.evidence["samples"] == 8


@pytest.mark.parametrize(
    "make",
    [
        lambda: sustained(functional_slo(), seconds=0),
        lambda: sustained(functional_slo(), seconds=5, interval=0),
        lambda: functional_slo(min_success_rate=1.5),
        lambda: functional_slo(window_s=0),
    ],
)
def test_building_blocks_reject_impossible_parameters(make):
    with pytest.raises(ValueError):
        make()


def test_functional_slo_garbage_stats_is_an_error_verdict():
    verdict = run(functional_slo().evaluate(FakeContext(BASELINE, stats={"count": "lots", "success_rate": 1})))
    assert not verdict.passed and verdict.error.startswith("ValueError")


def test_the_builtin_leaves_are_records_the_schema_and_the_builder_are_made_from():
    """Each builtin leaf is declared once, as the OracleSpec the builtin plugin registers: its
    config_schema is the leaf's entry in ORACLE_SCHEMA and build_oracle builds it with its factory."""
    from sregym_core.oracles import builtin
    from sregym_core.oracles.mitigation import BUILTIN_LEAVES

    assert builtin.sregym_oracles() == list(BUILTIN_LEAVES)
    leaves = ORACLE_SCHEMA["$defs"]["oracle"]["oneOf"][1]["properties"]
    for spec in BUILTIN_LEAVES:
        key = spec.name.replace("-", "_")
        assert leaves[key] == dict(spec.config_schema), key
        assert type(build_oracle({key: {}})) is type(spec.factory()), key
    assert set(leaves) - {s.name.replace("-", "_") for s in BUILTIN_LEAVES} == {"all", "any", "sustained", "replay"}


def test_a_plugin_oracles_parameters_are_checked_against_its_config_schema():
    """A plugin oracle given as its record: a parameter its config_schema refuses is a problem error
    with the JSON path, before the factory runs."""
    from sregym_core.types import OracleSpec

    built = []

    class PodsReady:
        def __init__(self, **params):
            built.append(params)

        async def evaluate(self, ctx):
            return OracleVerdict(name="pods_ready", passed=True)

    spec = OracleSpec(name="pods-ready", kind="mitigation", factory=PodsReady,
                      config_schema={"type": "object", "additionalProperties": False,
                                     "properties": {"minimum": {"type": "integer", "minimum": 1}}})
    with pytest.raises(ConfigError, match="rejected its parameters") as info:
        build_oracle({"all": ["fault_invariant", {"pods_ready": {"minimum": 0, "extra": 1}}]},
                     extra={"pods-ready": spec})
    paths = [path for path, _why in info.value.errors]
    assert paths == ["oracle['all'][1]['pods_ready']", "oracle['all'][1]['pods_ready']['minimum']"], info.value.errors
    assert built == []
    build_oracle({"pods-ready": {"minimum": 2}}, extra={"pods-ready": spec})
    assert built == [{"minimum": 2}]


def _config(name, ns="hotel", **data):
    return {"kind": "ConfigMap", "metadata": {"name": name, "namespace": ns, "uid": f"uid-cm-{name}"},
            "data": {k.replace("_", "-"): v for k, v in data.items()}}


REDIRECTABLE = [_config("post-storage-config", db_host="post-storage-postgres", db_port="5432"),
                secret("post-storage-db", host="post-storage-postgres", password="pw-long-enough"),
                service_reading("post-storage-service", "post-storage-db"),
                deployment("post-storage-postgres"), service("post-storage-postgres")]


def _standin(current, ip="10.96.0.77"):
    standin = service("pgstandin")
    standin["spec"]["clusterIP"] = ip
    current += [deployment("pgstandin"), standin]


@pytest.mark.parametrize(("mutate", "needle"), [
    # round 7, attack 6: the client's ConfigMap pointed at a copy of the database on a fresh volume
    (lambda w: (_standin(w), w[0]["data"].update({"db-host": "pgstandin"})),
     "ConfigMap hotel/post-storage-config db-host now names pgstandin"),
    (lambda w: (_standin(w), w[0]["data"].update({"db-host": "pgstandin.hotel.svc.cluster.local:5432"})),
     "db-host now names pgstandin"),
    (lambda w: (_standin(w), w[1]["data"].update(host=_b64("10.96.0.77"))),
     "Secret hotel/post-storage-db host now names 10.96.0.77"),
    (lambda w: (_standin(w), w[2]["spec"]["template"]["spec"]["containers"][0]["env"].append(
        {"name": "DB_HOST", "value": "pgstandin"})), "post-storage-service/DB_HOST now names pgstandin"),
])
def test_baseline_preserved_names_configuration_pointed_at_a_stand_in(mutate, needle):
    current = copy.deepcopy(REDIRECTABLE)
    mutate(current)
    faulty = [{"kind": "Deployment", "namespace": "hotel", "name": "post-storage-postgres"},
              {"kind": "Deployment", "namespace": "hotel", "name": "post-storage-service"}]
    verdict = run(baseline_preserved().evaluate(FakeContext(REDIRECTABLE, current, faulty=faulty)))
    assert not verdict.passed
    assert "redirected" in [v["violation"] for v in verdict.evidence["violations"]]
    assert needle in verdict.evidence["reason"], verdict.evidence["reason"]


@pytest.mark.parametrize("mutate", [
    lambda w: w[0]["data"].update({"db-port": "5433"}),  # a changed value that names nothing new
    lambda w: (_standin(w), w[0]["data"].update({"db-port": "5433"})),  # a stand-in that nothing points at
    # a name that only contains the stand-in's name is not it
    lambda w: (_standin(w), w[0]["data"].update({"db-host": "pgstandin-old-post-storage-postgres"})),
    # the same host written in full: it names what was there after deploy
    lambda w: (_standin(w), w[0]["data"].update({"db-host": "post-storage-postgres.hotel.svc.cluster.local"})),
])
def test_baseline_preserved_lets_a_configuration_fix_through(mutate):
    current = copy.deepcopy(REDIRECTABLE)
    mutate(current)
    verdict = run(baseline_preserved().evaluate(FakeContext(REDIRECTABLE, current)))
    assert "redirected" not in [v["violation"] for v in verdict.evidence["violations"]], verdict.evidence
