"""The rules judge reads structure, not words (issue #35, second round): what a sentence does not assert
(negations, ruled-out parts, questions, hypotheses, reported output), the faulty object with another field,
JSON read by its values, enumerations and hedges whatever their count and wording, and a fault's setting
named with what was done to it. Every text here was written for these tests, not taken from a labelled set."""

from __future__ import annotations

import pytest
from sregym_judge_rules import RulesJudge
from sregym_judge_rules.reading import mask_unasserted

from sregym_core.types import GroundTruth

HOTEL = ("frontend", "search", "geo", "rate", "profile", "recommendation", "user", "reservation", "postgres-geo",
         "postgres-rate", "postgres-profile", "memcached-rate", "memcached-profile")
SOCIAL = ("nginx-thrift", "home-timeline-service", "home-timeline-redis", "user-service", "social-graph-service",
          "social-graph-postgres", "compose-post-service", "post-storage-service", "user-postgres")
TT = ("ts-preserve-service", "ts-order-service", "ts-seat-service", "ts-route-service", "ts-ui-dashboard")

REVOKE = GroundTruth(fault="db-revoke", layer="datastore", components=("postgres-geo",), namespace="hotel-reservation",
                     resource_kind="PostgreSQL role", mechanism="the application role's privileges on its tables were revoked",
                     mutated_values={"revoked": "ALL ON ALL TABLES IN SCHEMA public"})
NXDOMAIN = GroundTruth(fault="dns-nxdomain-service", layer="network", components=("geo",), namespace="hotel-reservation",
                       resource_kind="ConfigMap", mechanism="a CoreDNS template answers NXDOMAIN for the service's cluster name",
                       mutated_values={"configmap": "kube-system/coredns"},
                       vocabulary=("nxdomain", "coredns + template", "name does not exist"))
TLS = GroundTruth(fault="ingress-tls-expired", layer="network", components=("nginx-thrift",), namespace="social-network",
                  resource_kind="Secret", mechanism="the TLS Secret the app's Ingress serves was overwritten with an expired certificate",
                  mutated_values={"secret": "nginx-thrift-tls", "not_after": "a date in the past"},
                  vocabulary=("expired", "notafter", "valid after"))
EVICTION = GroundTruth(fault="kubelet-eviction-threshold", layer="os", components=("user-postgres",), namespace="social-network",
                       resource_kind="Node", mechanism="kubelet evictionHard nodefs.available raised far above the node's free disk "
                       "in the node's kubelet configuration drop-in", mutated_values={"threshold": "90%"},
                       vocabulary=("kubelet drop-in", "kubelet configuration", "evictionhard", "eviction threshold"))
MISSING_ENV = GroundTruth(fault="missing-env", layer="k8s", components=("ts-preserve-service",), namespace="train-ticket",
                          resource_kind="Deployment", mechanism="required environment variable removed from the container",
                          mutated_values={"removed_env": "TS_ORDER_SERVICE_ADDR"})
CACHE_TINY = GroundTruth(fault="cache-tiny", layer="datastore", components=("memcached-profile",), namespace="hotel-reservation",
                         resource_kind="memcached configuration", mechanism="memcached memory limit (-m) set far too small",
                         mutated_values={"-m": {"before": None, "after": 2}})
FLOOD = GroundTruth(fault="cache-memory-flood", layer="datastore", components=("home-timeline-redis",), namespace="social-network",
                    resource_kind="Job", mechanism="a Job floods the cache with large keys until it exceeds its memory limit and is "
                    "OOM-killed", mutated_values={"job": "timeline-loadtest", "memory_limit": "256Mi"},
                    vocabulary=("flood*", "load test"))
COMMAND = GroundTruth(fault="wrong-command", layer="k8s", components=("ts-route-service",), namespace="train-ticket",
                      resource_kind="Deployment", mechanism="container command overridden to run a different program",
                      mutated_values={"command": ["sh", "-c", "sleep 3600000"]},
                      vocabulary=("command .. overridden", "command .. swapped", "command .. replaced"))


def _judge(text, truth, components=HOTEL, ns="hotel-reservation"):
    return RulesJudge().judge(text, (truth,), app_components=components, app_namespace=ns)


def test_the_plain_assertion_passes():
    """The control for the negations below: the same mechanism, asserted."""
    assert _judge("postgres-geo: the role hotel_geo had its table privileges revoked, so geo's queries fail with "
                  "permission denied.", REVOKE).passed


@pytest.mark.parametrize("text", [
    "It is not true that the privileges of hotel_geo on postgres-geo were revoked; geo fails with permission denied anyway.",
    "We ruled out revoked privileges on postgres-geo. geo fails with permission denied.",
    "Could it be that the grants of hotel_geo on postgres-geo were revoked? geo fails with permission denied.",
    "If the grants on postgres-geo had been revoked we would see permission denied in geo, but we don't.",
    "The grants of hotel_geo on postgres-geo looked fine. geo is slow.",
    "postgres-geo is not missing any grant, its privileges were not revoked; geo is slow.",
    "There is no evidence that the grants on postgres-geo were revoked; geo is slow.",
    "Ruled out:\n- revoked grants on postgres-geo\n- a full disk\n\ngeo is slow.",
])
def test_negated_ruled_out_questioned_and_hypothetical_mechanisms_are_not_asserted(text):
    verdict = _judge(text, REVOKE)
    assert not verdict.passed
    assert verdict.answers_by_id()["char_mechanism"] is False


@pytest.mark.parametrize("text", [
    "Is CoreDNS answering NXDOMAIN for geo? No idea. search is slow.",
    "There is no evidence that CoreDNS answers NXDOMAIN for geo; geo is overloaded.",
    "The services cannot resolve their peers, the logs say NXDOMAIN. search is empty.",
])
def test_questions_doubts_and_reported_output_do_not_credit_the_dns_mechanism(text):
    assert not _judge(text, NXDOMAIN).passed


@pytest.mark.parametrize("truth,text,components,ns", [
    (NXDOMAIN, "CoreDNS has a template that says geo's name does not exist (NXDOMAIN), so search cannot reach geo.",
     HOTEL, "hotel-reservation"),
    (TLS, "The certificate in Secret nginx-thrift-tls is never valid after a date in the past: someone overwrote it with "
          "an expired one, so browsers reject the TLS handshake to nginx-thrift.", SOCIAL, "social-network"),
    (REVOKE, "postgres-geo: hotel_geo no longer has access to its tables (privileges revoked), so geo fails with "
             "permission denied.", HOTEL, "hotel-reservation"),
])
def test_a_mechanism_stated_as_the_negation_of_a_healthy_state_is_asserted(truth, text, components, ns):
    assert _judge(text, truth, components, ns).passed


def test_masking_keeps_the_facts_and_blanks_what_is_not_asserted():
    assert mask_unasserted("the name does not exist") == "the name does not exist"
    assert "revoked" not in mask_unasserted("it is not true that the grants were revoked")
    assert "revoked" not in mask_unasserted("could the grants have been revoked?")
    kept = mask_unasserted("postgres geo is healthy and the grants were revoked")
    assert "revoked" in kept and "healthy" not in kept


def test_the_faulty_object_with_another_field_fails_and_with_its_own_field_passes():
    wrong = "The kubelet configuration drop-in on user-postgres's node sets imagefs.inodesFree to 90%, so the node evicts pods."
    right = ("The kubelet configuration drop-in on user-postgres's node raised evictionHard nodefs.available to 90%, far "
             "above the free disk, so the node has DiskPressure and evicts user-postgres.")
    assert not _judge(wrong, EVICTION, SOCIAL, "social-network").passed
    assert _judge(right, EVICTION, SOCIAL, "social-network").passed
    as_json = '{"component": "user-postgres", "root_cause": "the kubelet configuration on its node sets maxPods to 10"}'
    assert not _judge(as_json, EVICTION, SOCIAL, "social-network").passed


@pytest.mark.parametrize("text,passes", [
    ('{"component": "postgres-geo", "root_cause": "the privileges of role hotel_geo on its tables were revoked", '
     '"evidence": "permission denied for table hotels"}', True),
    ('{"component": "postgres-geo", "root_cause": "unknown", "mechanism": "", "evidence": "permission denied"}', False),
    ('{"component": "postgres-geo", "resource_kind": "PostgreSQL role", "mechanism": "?", '
     '"values": {"revoked": "ALL ON ALL TABLES IN SCHEMA public"}}', False),
    ('{"component": "postgres-geo", "mechanism": "see values", "values": {"revoked": "ALL ON ALL TABLES IN SCHEMA public"}}', False),
    ('{"component": "postgres-geo", "mechanism": "<mechanism>", "layer": "datastore"}', False),
    ('{"component": "postgres-geo", "root_cause": ["grants", "hotel_geo role"], "fix": "?"}', False),
])
def test_json_is_read_by_its_values_and_a_record_shape_without_an_explanation_fails(text, passes):
    assert _judge(text, REVOKE).passed is passes


@pytest.mark.parametrize("text", [
    "Possible causes:\n1. revoked grants on postgres-geo\n2. the disk of postgres-geo is full\n"
    "3. max_connections on postgres-geo reached\n4. wrong password for hotel_geo\nAll of them could contribute.",
    "Root causes:\n- the grants on postgres-geo were revoked\n- its disk is full\n- max_connections is exhausted",
    "It is one of three: the grants on postgres-geo, the disk of postgres-geo, or its password.",
    "We have not ruled out revoked grants on postgres-geo, a full disk, or a rotated password of hotel_geo.",
    "My best guess is revoked grants on postgres-geo, but a full disk would look the same.",
    "It is not true that only the grants on postgres-geo were revoked: the disk of postgres-geo is full, "
    "max_connections is reached and the password of hotel_geo was rotated too.",
])
def test_enumerations_and_hedges_fail_whatever_their_count_and_wording(text):
    assert not _judge(text, REVOKE).passed


def test_the_truths_own_words_and_what_follows_are_not_other_mechanisms():
    flood = ("A load test Job writes huge keys into home-timeline-redis, which has no maxmemory, so it grows past its "
             "256Mi memory limit and is OOM-killed; the Job floods it again after every restart.")
    assert _judge(flood, FLOOD, SOCIAL, "social-network").passed
    command = ("ts-route-service's container command was swapped for `sh -c sleep 3600000` -> no route server, "
               "the pod is never Ready.")
    assert _judge(command, COMMAND, TT, "train-ticket").passed


@pytest.mark.parametrize("text", [
    "ts-preserve-service lost its TS_ORDER_SERVICE_ADDR env -> it falls back to port 80, bookings fail.",
    "preserve's deployment no longer has TS_ORDER_SERVICE_ADDR (removed), so it cannot reach ts-order-service.",
    "The variable that tells preserve where ts-order-service is, TS_ORDER_SERVICE_ADDR, was removed from the container "
    "of ts-preserve-service, so every booking fails.",
])
def test_a_removed_setting_named_with_what_was_done_to_it_is_the_mechanism(text):
    assert _judge(text, MISSING_ENV, TT, "train-ticket").passed


def test_a_named_setting_needs_the_change_the_fault_made():
    """A duplicate is not a removal: removal words only count for a fault that removes."""
    shadowing = GroundTruth(fault="env-shadowing", layer="k8s", components=("ts-preserve-service",), namespace="train-ticket",
                            resource_kind="Deployment", mechanism="duplicate environment variable shadows the correct value",
                            mutated_values={"env": "TS_ORDER_SERVICE_ADDR"})
    assert not _judge("ts-preserve-service lost its TS_ORDER_SERVICE_ADDR env, so bookings fail.", shadowing, TT,
                      "train-ticket").passed


@pytest.mark.parametrize("text", [
    "memcached-profile started with -m 2 (was 64), so it evicts constantly and profile reads go to postgres-profile.",
    "The cache of profile (memcached-profile) has only 2 MB now: the argument -m was changed from 64 to 2. So it evicts "
    "all the time.",
])
def test_a_command_line_option_with_its_new_value_is_the_mechanism(text):
    assert _judge(text, CACHE_TINY).passed


def test_a_negated_list_of_peers_is_no_hedge_and_quantified_names_are_no_over_broad_blame():
    text = ("A stale template in the CoreDNS Corefile answers NXDOMAIN for every service name, so geo cannot resolve "
            "rate or profile; all services recover once it is removed.")
    verdict = _judge(text, NXDOMAIN)
    assert verdict.inputs["gates"]["hedge"] is None
    assert verdict.inputs["gates"]["kitchen_sink"] is None


def test_mechanisms_offered_as_alternatives_assert_neither():
    assert not _judge("postgres-geo: the grants of hotel_geo were revoked or its password was rotated, so geo fails.",
                      REVOKE).passed
    # "not A or B" offers no alternative; a mechanism set against a ruled-out one is asserted
    assert _judge("postgres-geo: the grants of hotel_geo were revoked, not its password rotated, so geo fails.", REVOKE).passed


def test_a_concession_does_not_clear_the_component():
    assert _judge("postgres-geo looks fine at first glance; however the role hotel_geo lost its privileges on all tables "
                  "(REVOKE ALL), so geo's queries fail with permission denied.", REVOKE).passed


def test_an_object_named_like_the_faulty_one_but_differing_in_one_part_is_another_object():
    policy = GroundTruth(fault="network-policy-block", layer="network", components=("social-graph-service",),
                         namespace="social-network", resource_kind="NetworkPolicy",
                         mechanism="a deny-all ingress NetworkPolicy selects the component's pods",
                         mutated_values={"networkpolicy": "default-deny-ingress"},
                         vocabulary=("networkpolicy", "network policy + deny*", "deny all"))
    right = ("A NetworkPolicy default-deny-ingress selects social-graph-service's pods and allows no ingress, so every call "
             "to social-graph-service times out.")
    other = ("A NetworkPolicy default-deny-egress on social-graph-service blocks its outbound traffic, so it cannot reach "
             "its database.")
    assert _judge(right, policy, SOCIAL, "social-network").passed
    assert not _judge(other, policy, SOCIAL, "social-network").passed


def test_a_word_two_faults_share_does_not_decide_against_the_other_faults_own_words():
    aggressive = GroundTruth(fault="liveness-aggressive", layer="k8s", components=("geo",), namespace="hotel-reservation",
                             resource_kind="Deployment", mechanism="liveness probe too aggressive (no initial delay, period "
                             "1 s, failure threshold 1)", mutated_values={"livenessProbe": None})
    assert _judge("geo's liveness probe is far too aggressive: no initial delay, failureThreshold 1, so the kubelet kills "
                  "geo before it starts and it crash-loops.", aggressive).passed
    # "liveness" is both faults' word; "wrong path" is only the misconfigured probe's
    assert not _judge("geo's liveness probe checks the wrong path (/healthz instead of /health), so the kubelet "
                      "restarts geo.", aggressive).passed


def test_what_the_logs_show_that_is_asserted_what_they_print_is_evidence():
    assert _judge("geo's errors show that the privileges of hotel_geo on postgres-geo were revoked, so every query fails.",
                  REVOKE).passed
    assert not _judge("geo fails; its logs say permission denied for the tables of postgres-geo.", REVOKE).passed


def test_a_plain_paraphrase_with_most_of_the_mechanisms_words_and_chat_initials_for_a_service():
    sidecar = GroundTruth(fault="sidecar-port-conflict", layer="k8s", components=("social-graph-service",),
                          namespace="social-network", resource_kind="Deployment",
                          mechanism="sidecar container binds the same port as the application container",
                          mutated_values={"sidecar": "metrics-proxy", "port": 9090}, vocabulary=("port conflict",))
    assert _judge("A sidecar metrics-proxy in social-graph-service's pod binds port 9090, the same port as the app "
                  "container, so the app cannot bind and crash-loops.", sidecar, SOCIAL, "social-network").passed
    dns = GroundTruth(fault="wrong-dns-policy", layer="network", components=("home-timeline-service",),
                      namespace="social-network", resource_kind="Deployment",
                      mechanism="dnsPolicy set to None with an unreachable nameserver",
                      mutated_values={"dnsPolicy": "None", "nameservers": ["127.0.0.254"]}, vocabulary=("dnspolicy",))
    assert _judge("ht-svc pods use dnsPolicy: None + a dead nameserver (127.0.0.254) -> every lookup times out. set "
                  "dnsPolicy back to ClusterFirst.", dns, SOCIAL, "social-network").passed
