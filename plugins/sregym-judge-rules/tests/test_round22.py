"""The judge's twenty-second round (issue #35): correct plain answers that failed. A field of the component cleared
before its cause in the next part or sentence, a workload's count said in other words, a count with the thing it
counts, and JSON answers with several findings or an object with its state. Each reading is tested on texts written
for these tests (never the blind sets' own items, which stay measurement material)."""

from __future__ import annotations

from sregym_judge_rules import reading


def test_a_field_cleared_then_the_cause_after_a_semicolon_or_full_stop(passes):
    # the ", but" form passed already (round 21); ";" and a full stop start a new sentence that refers back
    pid = "hotel-memory-limit-too-small-geo"
    assert passes(pid, "geo's CPU limit is fine; its memory limit was lowered to 12Mi, so the container is OOMKilled.")
    assert passes(pid, "geo's CPU limit is fine. Its memory limit was lowered to 12Mi, so the container is OOMKilled.")
    assert passes(pid, "geo's image is fine; the memory limit was lowered to 12Mi, so the container is OOMKilled.")
    assert passes("social-liveness-aggressive-home-timeline-service",
                  "home-timeline-service's liveness probe path is fine; its timings are the problem: no initial delay, "
                  "a 1 s period and a failure threshold of 1, so the container is killed before it is up.")
    # the component itself cleared, or another component named next, is no reference back
    assert not passes(pid, "geo is healthy. Its memory limit was never changed.")
    assert not passes(pid, "geo is fine. The memory limit of rate was lowered to 12Mi.")
    assert not passes(pid, "geo's image is fine. The node ran out of memory.")


def test_the_count_a_workload_asks_for_said_to_be_zero(passes):
    pid = "train-ticket-scale-zero-seat"
    assert passes(pid, "ts-seat-service's desired count is 0, so bookings fail.")
    assert passes(pid, "ts-seat-service replicas 1 -> 0, so bookings fail.")
    assert passes(pid, "ts-seat-service's Deployment spec.replicas was set to 0, so its Service has no endpoints.")
    assert passes("astronomy-scale-zero-currency", "currency: its count of copies was set to none, so prices cannot "
                                                   "be fetched.")
    # the count that is ready or available being 0 is what any fault shows
    assert not passes(pid, "ts-seat-service's ready replicas is 0 because its image tag does not exist.")
    assert not passes(pid, "ts-seat-service's desired count is 1 but 0 are available because its image tag does not "
                           "exist.")


def test_a_field_named_by_its_path_is_its_last_part(passes):
    assert passes("astronomy-scale-zero-currency", "currency's spec.replicas was set to 0, so checkout fails.")
    # another field by its path is still another field
    assert not passes("astronomy-scale-zero-currency", "currency's spec.template.spec.dnsPolicy was set to None, so "
                                                       "checkout fails.")


def test_a_count_with_the_thing_it_counts_says_the_field_and_its_value(passes):
    pid = "fleetcast-operator-overload-replicas"
    assert passes(pid, "Someone asked the orbit-db database cluster for 100000 copies, so the operator keeps adding "
                       "pods until there is no room for the next one.")
    assert passes(pid, "The orbit-db definition asks for 100,000 copies, so the database controller keeps adding pods "
                       "until the cluster is full.")
    # the pre-fault count, or the generated StatefulSet instead of the resource, is not the change
    assert not passes(pid, "orbit-db runs 3 copies, so its pods stay Pending.")
    assert not passes(pid, "The orbit-db StatefulSet was scaled to 100000 copies, so its pods stay Pending.")


def test_a_json_answer_with_several_findings_reads_each(passes):
    pid = "hotel-concurrent-scale-zero-and-cache-tiny"
    assert passes(pid, '{"faults": [{"component": "user", "cause": "the Deployment was scaled to 0 replicas, so its '
                       'Service has no endpoints"}, {"component": "memcached-profile", "cause": "its cache size was '
                       'set with -m 2, far too small"}]}')
    assert passes(pid, '{"visible": {"component": "user", "cause": "Deployment scaled to 0 replicas"}, "latent": '
                       '{"component": "memcached-profile", "cause": "started with -m 2, a cache far too small"}}')
    # a wrong second finding still blames an unrelated component; candidates stay candidates
    assert not passes(pid, '{"faults": [{"component": "user", "cause": "Deployment scaled to 0 replicas"}, '
                           '{"component": "geo", "cause": "memory limit lowered to 12Mi"}]}')
    said = reading.json_as_prose('{"candidates": [{"component": "user", "cause": "scaled to 0"}, '
                                 '{"component": "geo", "cause": "memory limit 12Mi"}]}')
    assert said is not None and said.startswith("It could be")


def test_a_json_object_with_its_state_or_a_missing_thing(passes):
    assert passes("astronomy-missing-service-ad",
                  '{"component": "ad", "object": "Service ad", "state": "deleted", "effect": "frontend cannot resolve ad"}')
    assert passes("social-missing-service-user-service",
                  '{"component": "user-service", "object": "Service user-service", "state": "absent from the namespace '
                  'while its pods are up"}')
    assert passes("astronomy-missing-configmap-frontend-proxy",
                  '{"component": "frontend-proxy", "missing": "the ConfigMap holding the envoy configuration", '
                  '"effect": "its restarted pod cannot mount it"}')
    # a state that is a symptom, or a status that leaves the answer open, says no change
    assert not passes("astronomy-missing-service-ad", '{"component": "ad", "object": "Deployment ad", '
                                                      '"state": "CrashLoopBackOff"}')
    assert not passes("astronomy-missing-service-ad", '{"component": "ad", "object": "Service ad", '
                                                      '"status": "not yet verified"}')
