"""The eighth round of issue #35: voices whose conclusion comes last or in plain words, forms left unfilled.

Each reading is tested on texts written for these tests, against truths written here (a library app of no labelled
item): a chat thread whose messages carry a clock stamp; a status line that gives a reason; "none of the pods carry
it" as what is missing; "any of the three is possible"; a list or line of several "root causes"; a JSON form copied
with blanks, and a record naming a field with its value; "the root cause is in X" and a name set in bold; a flag named
beside the flag service, and not named by a listing of the flags that are on; a verdict's bracketed reason; the app's Ingress, a stream by its
kind and the cluster's name server by a description; a verb in -ate and its noun in -ation. Wrong answers in the same
voices (a decoy, a victim, a hedge, a kitchen sink, a blank form) still fail.
"""

from __future__ import annotations

from sregym_judge_rules import RulesJudge, concepts, reading, text

from sregym_core.types import GroundTruth

LIBRARY = ("desk", "loans", "loans-db", "catalog", "holds", "mailer", "stacks-cache", "au")

MEMORY = GroundTruth(
    fault="memory-limit-too-small", layer="k8s", components=("loans",), namespace="library", resource_kind="Deployment",
    mechanism="memory limit far too small, container OOMKilled", mutated_values={"resources.limits.memory": "10Mi"})
SELECTOR = GroundTruth(
    fault="selector-mismatch", layer="k8s", components=("holds",), namespace="library", resource_kind="Service",
    mechanism="Service selector requires a label that no pod carries", mutated_values={"selector": {"tier": "gold"}})
SHM = GroundTruth(
    fault="shm-too-small", layer="k8s", components=("loans-db",), namespace="library", resource_kind="StatefulSet",
    mechanism="the memory-backed emptyDir mounted at /dev/shm has a sizeLimit smaller than PostgreSQL's dynamic shared "
              "memory control segment: No space left on device", mutated_values={"size": "8Ki", "volume": "dshm"})
NODE_LABEL = GroundTruth(
    fault="node-selector-missing", layer="k8s", components=("catalog",), namespace="library", resource_kind="Deployment",
    mechanism="nodeSelector requires a node label that no node has", mutated_values={"nodeSelector": {"disk": "nvme"}})
FLAG = GroundTruth(
    fault="flagd-flag", layer="app", components=("au",), namespace="library", resource_kind="ConfigMap",
    mechanism="feature flag turned on in the flag configuration (ConfigMap flagd-config)",
    mutated_values={"flag": "auRenewalStorm", "configmap": "flagd-config", "served_by": "flagd",
                    "defaultVariant": {"before": "off", "after": "on"}})
REPLICAS = GroundTruth(
    fault="datastore-replicas-overload", layer="k8s", components=("loans-db",), namespace="library",
    resource_kind="DatastoreCluster",
    mechanism="the DatastoreCluster's spec.replicas was raised far beyond what the cluster can schedule; the operator "
              "scales the StatefulSet and its next pod stays Pending (Insufficient cpu)",
    mutated_values={"resource": "DatastoreCluster/loans-db", "field": "spec.replicas", "before": 3, "after": 100000,
                    "operator": "datastore-operator"},
    vocabulary=("datastorecluster", "custom resource", "replicas", "too many replicas", "replica count", "100000"))
TLS = GroundTruth(
    fault="ingress-tls-expired", layer="k8s", components=("desk",), namespace="library", resource_kind="Secret",
    mechanism="the TLS Secret the app's Ingress serves was overwritten with an expired certificate; the renewed "
              "certificate sits unused in another Secret, so clients verifying TLS reject the handshake",
    mutated_values={"secret": "desk-tls", "host": "library.example.test", "not_after": "a date in the past"})
POISON = GroundTruth(
    fault="queue-poison-pill", layer="app", components=("stacks-cache",), namespace="library",
    resource_kind="message queue record",
    mechanism="a record that is not a loan (a poison pill) sits in the returns stream; the in-order consumers mailer "
              "and holds retry it forever and stop consuming",
    mutated_values={"stream": "returns", "payload": "not-a-loan", "blocked_groups": ["mailer", "holds"]})
ZONE = GroundTruth(
    fault="dns-stale-zone", layer="network", components=("loans",), namespace="library", resource_kind="ConfigMap",
    mechanism="a CoreDNS template in kube-system/coredns answers NXDOMAIN for the whole svc zone",
    mutated_values={"zone": "svc.cluster.local", "configmap": "kube-system/coredns"},
    vocabulary=("nxdomain", "coredns", "corefile"))


def _library(text_: str, truth: GroundTruth) -> bool:
    return RulesJudge().judge(text_, (truth,), app_components=LIBRARY, app_namespace="library").passed


# --- a chat thread: clock-stamped messages are the writer's, each its own sentence -----------------------------------


def test_a_chat_message_with_a_clock_stamp_is_prose_and_ends_its_sentence():
    assert reading.chat_message("[07:41] loans pods restart every minute") == "loans pods restart every minute"
    assert reading.chat_message("[7:41 pm] <ines> loans pods restart every minute") == "loans pods restart every minute"
    # a log line's stamp has seconds, and a stamp before tool output stays output
    assert reading.chat_message("[07:41:13] loans pods restart every minute") is None
    assert reading.chat_message("[07:41] NAME  READY  STATUS  RESTARTS") is None
    prose, _pasted = reading.split_prose("[07:40] loans restarting\n[07:42] its limit is ten MiB")
    assert [s.raw for s in reading.sentences(prose)] == ["loans restarting.", "its limit is ten MiB."]


def test_a_thread_whose_last_message_concludes_is_read_by_it():
    assert _library("[07:40] loans keeps getting killed at startup for using too much memory\n"
                    "[07:43] it may only use ten MiB. nothing starts in that\n"
                    "[07:45] raising it back to 512 MiB", MEMORY)
    # the same voice blaming a victim, or naming only symptoms, fails
    assert not _library("[07:40] loans keeps getting killed at startup\n"
                        "[07:43] holds is slow to answer, loans times out waiting for it\n"
                        "[07:45] restarting holds", MEMORY)
    assert not _library("[07:40] loans restarting again and again\n[07:43] pods show OOMKilled\n[07:45] paging the "
                        "owner", MEMORY)


# --- what is missing, said as "none of ... carry it" --------------------------------------------------------------


def test_none_of_the_pods_carrying_the_label_is_what_is_missing():
    assert _library("The holds Service selects tier=gold, and none of the holds pods carry it, so it has no endpoints.",
                    SELECTOR)
    assert not reading.unasserted_spans(text.flatten("none of the pods carry it"))
    # a clause whose subject is "nothing" still asserts nothing, and a verdict's bracketed reason is part of it
    assert reading.unasserted_spans(text.flatten("nothing changed in the selector"))
    assert not _library("The holds selector looks right to me (the pods should carry tier=gold since the rollout). The "
                        "endpoints are empty because the pods fail their readiness check.", SELECTOR)


# --- a labelled status line that gives a reason is the finding ------------------------------------------------------


def test_a_status_line_that_says_why_is_the_finding():
    assert _library("Status: loans-db crashes at start because the in-memory scratch area its processes share (mounted "
                    "at /dev/shm) was capped at 8 KiB, too small for its first segment. Gave it a sane size.", SHM)
    # a status line of symptoms only still states no mechanism
    assert not _library("Status: loans-db crashes at start, shared memory errors in the log. Escalated to the DBA.", SHM)


# --- hedges and kitchen sinks in these voices --------------------------------------------------------------------


def test_any_of_the_three_being_possible_hedges_the_candidates():
    assert not _library("Calls: get pods (Pending).\nAnswer: catalog is Pending because of a nodeSelector, a taint, or "
                        "too little CPU; any of the three is possible.", NODE_LABEL)
    assert not _library("catalog is Pending: its nodeSelector wants disk=nvme, or a taint, or quota. All three are "
                        "plausible.", NODE_LABEL)
    # "all of them at once" says what a fix does, it leaves nothing open
    assert _library("The cluster's name server has a leftover template that answers NXDOMAIN for every name in "
                    "svc.cluster.local, so loans cannot resolve anything; deleting it from the Corefile fixes all of "
                    "them at once.", ZONE)


def test_several_root_causes_at_once_assert_none_of_them():
    assert not _library("## Root causes\n- loans memory limit of 10Mi, so it is OOMKilled\n- holds selector wrong\n"
                        "- loans-db disk full\n- mailer crash loop\nFix them all.", MEMORY)
    assert not _library("Root causes (all contributing): the loans memory limit is 10Mi, loans-db disk full, holds "
                        "retry storm and mailer DNS latency. We treat all of them as the root cause.", MEMORY)
    # one root cause under a plural heading of one item, or a singular label, is a finding
    assert _library("## Root cause\n- loans has a memory limit of 10Mi, far too small, so it is OOMKilled at start.",
                    MEMORY)
    assert _library("Root causes: loans' memory limit was cut to 10Mi, so the container is OOMKilled.", MEMORY)


# --- JSON: a form left unfilled, a field named with its value ----------------------------------------------------


def test_a_form_copied_with_blanks_explains_nothing():
    assert not _library('{"component": "au", "resource_kind": "ConfigMap", "mechanism": "feature flag", '
                        '"values": {"flag": "", "defaultVariant": ""}}', FLAG)
    assert not _library('{"component": "au", "mechanism": "feature flag", "values": {"flag": "au-?", '
                        '"configmap": "flagd-config"}}', FLAG)
    assert not _library('{"component": "loans-db", "resource_kind": "DatastoreCluster", "mechanism": "spec field '
                        'invalid", "values": {"field": "", "value": ""}}', REPLICAS)
    # filled in, the same shape is a finding
    assert _library('{"component": "au", "mechanism": "the auRenewalStorm flag was switched on in flagd-config", '
                    '"values": {"flag": "auRenewalStorm", "defaultVariant": "on"}}', FLAG)


def test_a_field_named_with_its_value_states_the_change():
    assert "spec.replicas was set to 100000 instead of 3" in reading.json_as_prose(
        '{"component": "loans-db", "field": "spec.replicas", "value": 100000, "expected": 3}')
    assert _library('{"component": "loans-db", "resource": "DatastoreCluster", "field": "spec.replicas", "value": 100000, '
                    '"expected": 3, "effect": "the operator scales the StatefulSet until a pod is Pending"}', REPLICAS)
    assert not _library('{"component": "loans-db", "field": "spec.replicas", "value": "?", "expected": 3}', REPLICAS)


# --- a component named by the answer's own frame -----------------------------------------------------------------


def test_the_root_cause_is_in_a_short_name_and_a_name_in_bold_name_it():
    assert _library('{"service": "au", "flag": "auRenewalStorm", "configmap": "flagd-config", "state": '
                    '"defaultVariant on", "effect": "every renewal is retried"}', FLAG)
    assert _library("## Root cause\n`auRenewalStorm` is `on` in `flagd-config`. With it, **au**'s renewals loop and "
                    "the queue grows.", FLAG)
    # a plain English word as a name needs the frame: "the root cause is in rate." names rate, "in rate" elsewhere not
    assert text.find_mentions(text.clauses("The root cause is in rate."), {"rate"})
    assert not text.find_mentions(text.clauses("errors went up in rate over the day"), {"rate"})


# --- a flag beside the flag service; steps are not the claim ------------------------------------------------------


def test_a_flag_named_beside_the_flag_service_is_a_flag_and_steps_do_not_name_it():
    # (a bare "Calls:" label was tried as a steps label too, and not adopted: it cost a correct answer of an unread half)
    assert not _library("[11:02] au answers slowly\n[11:04] auPrefetchAll is on in flagd-config, that's it. turning it "
                        "off", FLAG)
    assert _library("[11:02] au answers slowly\n[11:04] auRenewalStorm is on in flagd-config, that's it. turning it off",
                    FLAG)
    decoy = GroundTruth(
        fault="tt-flag", layer="app", components=("holds",), namespace="library", resource_kind="ConfigMap",
        mechanism="a feature flag in the ConfigMap flagd-config switched a faulty code path on",
        mutated_values={"flag": "lib-feat-2", "configmap": "flagd-config", "served_by": "flagd",
                        "decoys": ["lib-feat-7", "lib-feat-12"], "defaultVariant": {"before": "off", "after": "on"}})
    assert not _library("Tool calls: get cm flagd-config (lib-feat-2, lib-feat-7 on), logs holds (timeouts).\nAnswer: "
                        "lib-feat-7 on catalog slows every lookup, which starves holds. Turn lib-feat-7 off.", decoy)
    # the truth's flag named only in a listing of the flags that are on is not named as the cause
    assert not _library("Calls: get cm flagd-config (lib-feat-2, lib-feat-7, lib-feat-12 on), logs holds (timeouts).\n"
                        "Answer: lib-feat-7 on catalog slows every lookup, which starves holds. Turn lib-feat-7 off.", decoy)
    assert _library("flagd-config has lib-feat-2, lib-feat-7 and lib-feat-12 on. lib-feat-2 switched on a faulty code path "
                    "in holds, so every hold request fails; turning lib-feat-2 off.", decoy)


# --- the fault's objects described: the app's Ingress, a stream by its kind, the cluster's name server ---------------


def test_the_apps_ingress_a_stream_and_the_name_server_localize_their_faults():
    assert _library("library https broken: the cert in the ingress TLS secret is not valid anymore (notAfter a day "
                    "ago). the renewed cert sits unused in another secret.", TLS)
    # the Ingress with another defect is not the expiry
    assert not _library("The library Ingress points at the wrong Service, so https requests reach the mailer.", TLS)
    assert _library("A record whose payload is not a loan sits in the returns stream; mailer and holds consume in "
                    "order, fail on it and retry it forever, so their lag grows.", POISON)
    assert _library("The cluster's internal phone book was left with an old rule that says no internal service name "
                    "exists, so every service lookup fails.", ZONE)
    assert not _library("The cluster's internal phone book is fine; loans fails because its memory is too small.", ZONE)


# --- words of one family: -ate and -ation, "does not recognise" -----------------------------------------------------


def test_a_verb_in_ate_and_its_noun_in_ation_are_one_word():
    assert concepts.stem("tolerate") == concepts.stem("toleration") == concepts.stem("tolerated")
    assert concepts.stem("rotated") == concepts.stem("rotation")
    assert concepts.stem("state") != concepts.stem("station")
    # a value the system does not recognise is an invalid one
    assert concepts.gloss_spans(text.flatten("it was given a value Kubernetes does not recognise"), "an invalid effect")
