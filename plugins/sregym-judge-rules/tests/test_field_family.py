"""The sixth round of issue #35: the right object with the wrong field or value, and concepts said by what they do.

Each reading is tested on texts written for these tests, against truths written here (a bookshop app of no labelled
item): the switch the truth turned on said to be off; a kind or a symptom named alone; a field declared right; and
plain-English wordings of a concept (held back, arrives late, already uses the port, instead of, spelled-out units),
each written once for every fault whose statement has that concept.
"""

from __future__ import annotations

from sregym_judge_rules import RulesJudge, concepts, quantity, text

from sregym_core.types import GroundTruth

BOOKS = ("storefront", "catalog", "orders", "orders-db", "inventory", "payments", "search")

TOGGLE = GroundTruth(
    fault="feature-flag-bug", layer="app", components=("search",), namespace="books", resource_kind="Deployment",
    mechanism="feature flag turned on a code path with a latent defect",
    mutated_values={"env": {"FEATURE_SEARCH_V2": "true"}})
SLOW = GroundTruth(
    fault="network-delay", layer="network", components=("inventory",), namespace="books", resource_kind="Node",
    mechanism="network delay on the node hosting the target's pods",
    mutated_values={"delay_ms": 2500, "jitter_ms": 100, "node": "(unknown)"})
HOSTPORT = GroundTruth(
    fault="host-port-conflict", layer="k8s", components=("catalog",), namespace="books", resource_kind="Deployment",
    mechanism="hostPort set on the container clashes with another pod's hostPort", mutated_values={"hostPort": 9300})
TARGET = GroundTruth(
    fault="wrong-target-port", layer="k8s", components=("orders",), namespace="books", resource_kind="Service",
    mechanism="Service targetPort set to a wrong port", mutated_values={"targetPort": {"before": 7000, "after": 7001}})
SHM = GroundTruth(
    fault="shm-too-small", layer="k8s", components=("orders-db",), namespace="books", resource_kind="StatefulSet",
    mechanism="the memory-backed emptyDir mounted at /dev/shm has a sizeLimit smaller than PostgreSQL's dynamic shared "
              "memory control segment: No space left on device", mutated_values={"size": "32Ki", "volume": "dshm"})
SYSCALL = GroundTruth(
    fault="syscall-fail", layer="os", components=("orders-db",), namespace="books", resource_kind="Pod",
    mechanism="a syscall of the target's processes fails with an injected errno",
    mutated_values={"syscall": "fsync", "errno": "EIO"})


def _books(text_: str, truth: GroundTruth) -> bool:
    return RulesJudge().judge(text_, (truth,), app_components=BOOKS, app_namespace="books").passed


# --- the right field, the other value --------------------------------------------------------------------------


def test_the_switch_the_truth_turned_on_said_to_be_off_is_not_its_change():
    assert _books("search's FEATURE_SEARCH_V2 flag was turned on, enabling a code path with a latent defect, so "
                  "every search returns 500.", TOGGLE)
    # the same field with the other value: another claim about the same object, whatever words it shares
    assert not _books("search's FEATURE_SEARCH_V2 flag is false, the new code path is off, so search runs the old "
                      "slow matcher.", TOGGLE)
    assert not _books("The FEATURE_SEARCH_V2 switch on search was left disabled, so the fuzzy code path never runs "
                      "and results are poor.", TOGGLE)
    # "not off" and a quoted "on" say it is on
    assert _books("search's FEATURE_SEARCH_V2 flag is not off: it is set to \"true\", turning on a code path with a "
                  "latent defect, so searches fail.", TOGGLE)


def test_a_field_declared_right_is_ruled_out():
    assert _books("The orders Service's targetPort was set to a wrong port, 7001, where nothing listens, so calls to "
                  "orders are refused.", TARGET)
    assert not _books("The orders Service's targetPort is right; the orders pods listen on the wrong containerPort "
                      "after a config change, so calls are refused.", TARGET)


# --- a concept said by what it does -------------------------------------------------------------------------------


def test_a_delay_said_as_packets_held_back_or_answers_arriving_late():
    found = {c for c, _s in concepts.present(text.flatten("the network holds every packet back"), SLOW.mechanism)}
    assert {"network", "slow"} <= found
    found = {c for c, _s in concepts.present(text.flatten("answers arrive two seconds late"), SLOW.mechanism)}
    assert "slow" in found
    # "the target's pods" names the faulty component's pods: no concept of what was done
    assert "select" not in {c for c, _w in concepts.mechanism_concepts(SLOW.mechanism)}


def test_a_port_another_program_already_uses_is_a_clash():
    assert _books("The catalog pods ask to open port 9300 directly on the machine they run on, but on every machine "
                  "another program already uses that port, so the new catalog pod is never placed.", HOSTPORT)


def test_a_size_spelled_out_in_words_is_the_truths_quantity():
    assert quantity.find_quantity("capped at 32 kilobytes", SHM.mutated_values)
    assert _books("orders-db will not boot: the in-memory scratch space it uses for shared memory was capped at 32 "
                  "kilobytes, far less than PostgreSQL needs at startup.", SHM)


def test_the_call_that_flushes_to_disk_failing_with_an_io_error_is_the_syscall_fault():
    assert _books("Root cause: in the orders database's pods, the call that flushes data to disk reports an "
                  "input/output error every time, so PostgreSQL stops itself.", SYSCALL)


def test_answering_and_answers_are_one_concept():
    assert concepts.stem("answering") == concepts.stem("answers") == concepts.stem("answer")
    assert concepts.stem("lowered") == concepts.stem("lower")


# --- an operator's custom resource: the fault is in the resource, not in the workload it generates ---------------------

SHELF = GroundTruth(
    fault="datastore-replicas-overload", layer="k8s", components=("orders-db",), namespace="books",
    resource_kind="BookStore",
    mechanism="the BookStore's spec.replicas was raised far beyond what the cluster can schedule; the operator scales the "
              "StatefulSet and its next pod stays Pending (Insufficient cpu)",
    mutated_values={"resource": "BookStore/orders-db", "field": "spec.replicas", "before": 2, "after": 50000,
                    "operator": "shelf-operator"},
    symptoms=("Pending", "Insufficient cpu"),
    vocabulary=("bookstore", "the CR", "custom resource", "replicas", "too many replicas", "replica count", "50000",
                "Insufficient cpu"))
EFFECT = GroundTruth(
    fault="datastore-invalid-toleration", layer="k8s", components=("orders-db",), namespace="books",
    resource_kind="BookStore",
    mechanism="a toleration in the BookStore's spec has an invalid effect; the API server refuses the StatefulSet the "
              "operator derives from it (422 Unsupported value), so the spec is not applied",
    mutated_values={"resource": "BookStore/orders-db", "field": "spec.tolerations",
                    "before": [{"key": "books/db", "effect": "NoSchedule"}],
                    "after": [{"key": "books/db", "effect": "NoSchedulin"}], "operator": "shelf-operator"},
    vocabulary=("bookstore", "the CR", "toleration", "toleration effect", "invalid effect", "NoSchedule"))


def test_the_generated_workload_blamed_alone_is_the_victim_of_the_custom_resource():
    assert _books("The BookStore orders-db's spec.replicas was raised from 2 to 50000; the operator scales the "
                  "StatefulSet until a pod cannot be scheduled (Insufficient cpu).", SHELF)
    assert _books("Someone set the replica count in orders-db's custom resource to 50000, and the operator keeps adding "
                  "pods until they no longer fit.", SHELF)
    # the StatefulSet the operator writes, named as where the change is, with no word of the resource or the operator
    assert not _books("The orders-db StatefulSet was scaled to 50000 replicas, so its new pods stay Pending with "
                      "Insufficient cpu. Scale the StatefulSet back to 2.", SHELF)
    assert not _books("orders-db's sts has a toleration with an invalid effect NoSchedulin; someone edited the sts.",
                      EFFECT)


def test_the_field_with_its_value_before_the_fault_is_not_the_change():
    assert _books("The BookStore orders-db has a toleration with an invalid effect, NoSchedulin, so the API server "
                  "rejects the StatefulSet the operator writes.", EFFECT)
    assert not _books("The BookStore orders-db keeps its toleration effect NoSchedule; the operator crashes on a bug.",
                      EFFECT)


def test_the_resource_named_alone_or_a_symptom_is_no_mechanism():
    assert not _books("orders-db phase Failed, warning events on the CR, pods Pending with Insufficient cpu.", SHELF)


# --- candidates offered, whatever their shape ------------------------------------------------------------------------


def test_candidates_ranked_in_brackets_or_with_split_confidence_are_hedges():
    from sregym_judge_rules import reading

    assert reading.is_hedged("Root cause: an invalid field in the BookStore spec (replicas, tolerations or storage).")
    assert reading.is_hedged("Likely explanations, in order of probability:")
    assert reading.is_hedged("Confidence is split between these.")
    # a bracket that lists what was seen, or a choice under a negation, offers no candidate
    assert not reading.is_hedged("orders crashes (OOMKilled, exit 137) because its memory limit is 12Mi.")
    assert not reading.is_hedged("no errors from orders (checked logs, events or metrics).")
    assert not _books("## Most likely causes\n- The orders-db BookStore's replicas might have been raised\n- or its "
                      "nodes might be too small\n- or a quota might block it\n\nConfidence is split between these.", SHELF)
    assert not _books("Latency on orders-db is high. Likely explanations, in order of probability:\n1. BookStore "
                      "replicas raised to 50000 by the operator\n2. a slow disk\n3. a noisy neighbour", SHELF)


def test_a_setting_the_truth_never_names_said_to_be_out_of_range_is_another_field():
    from sregym_judge_rules import rules

    flat = text.flatten("the webhook's timeoutSeconds is too low (10s)")
    assert rules._other_field("the webhook's timeoutSeconds is too low (10s)", flat, TARGET)
    assert not rules._other_field("the Service's targetPort is far too high", text.flatten("x"), TARGET)
