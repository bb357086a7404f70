"""The rules judge's seventeenth round (issue #35, 2026-11-30 night), on texts written for these tests.

`heldout17.jsonl` was retired to tuning after its blind measurement; its misses showed readings that do not depend
on one problem's words:

- a field and its value written with a colon ("replicas: 0") are one sentence and, in a JSON answer, a statement;
  an environment variable named with its value in a JSON answer is a setting with its value;
- a component described by what it does in plain words: a name part's common synonym ("the login service" for
  ts-auth-service), a "program"/"converter", one word between ("the security check service"); English words of a
  name ("other" of ts-order-other-service) and a part another name begins with ("travel" of "travel2") describe
  nothing;
- a change written as its two values ("'NoScheduling' instead of 'NoSchedule'"), as the one part of a reference that
  changed ("fleetcast-operater"), or as the new value quoted and said to be invalid.
"""

from __future__ import annotations

import json


def test_a_field_and_its_value_with_a_colon_state_the_change(passes):
    assert passes("social-scale-zero-user-service", "Deployment user-service has replicas: 0, so nothing serves.")
    assert passes("social-scale-zero-user-service", json.dumps(
        {"component": "user-service", "object": "Deployment/user-service", "defect": "replicas: 0"}))
    # the field alone, without its value, is still no statement
    assert not passes("social-scale-zero-user-service", json.dumps(
        {"component": "user-service", "defect": "replicas"}))


def test_an_environment_variable_with_its_value_in_json_is_a_setting():
    from sregym_judge_rules import reading

    prose = reading.json_as_prose(json.dumps({"component": "checkout", "env": "PRODUCT_CATALOG_ADDR",
                                              "value": "product-catalog:8082", "expected": "product-catalog:3550"}))
    assert "PRODUCT_CATALOG_ADDR was set to product-catalog:8082 instead of product-catalog:3550" in prose


def test_a_component_described_in_plain_words(passes):
    assert passes("train-ticket-clock-drift-auth",
                  "The clock on the node running the login service is a month behind, so the tokens it hands out "
                  "look expired to every other service.")
    assert passes("astronomy-scale-zero-currency",
                  "Nobody is running the currency converter program: its number of copies was set to 0.")


def test_english_words_of_a_name_and_shared_prefixes_describe_nothing(judge_on):
    verdict = judge_on("train-ticket-missing-service-security",
                       "The security check service runs, but the name entry other services use to reach it was "
                       "deleted, so bookings cannot do the security check.")
    assert verdict.passed
    assert verdict.inputs["gates"]["kitchen_sink"] is None  # "other services" is not ts-order-other-service
    # "travel" is a prefix of travel2: "the second travel search service" does not name ts-travel-service
    assert not judge_on("train-ticket-wrong-image-travel",
                        "Searches fail because the second travel search service was pointed at a software version "
                        "that does not exist.").passed


def test_a_change_written_as_its_two_values(passes):
    assert passes("fleetcast-operator-invalid-toleration",
                  "The orbit-db DatastoreCluster has a toleration with a misspelled effect, 'NoScheduling' instead "
                  "of 'NoSchedule', so the cluster refuses the StatefulSet the operator builds.")
    assert passes("fleetcast-operator-wrong-update-strategy",
                  "The orbit-db definition asks for an update method 'Rolling', which does not exist (the real one "
                  "is 'RollingUpdate'), so the cluster rejects the operator's StatefulSet.")


def test_the_one_changed_part_of_an_image_names_the_typo(passes):
    assert passes("fleetcast-operator-wrong-image",
                  "The program that manages the database (datastore-operator) is set to download its software "
                  "under a misspelled name, 'fleetcast-operater', so it never starts.")
    # the image as it should be, only, says nothing of what was changed
    assert not passes("fleetcast-operator-wrong-image",
                      "datastore-operator should run sregym/fleetcast-operator:1.0; its pod does not start.")


def test_another_value_of_the_same_field_still_fails(passes):
    assert not passes("fleetcast-operator-invalid-toleration",
                      "The orbit-db DatastoreCluster has a toleration with effect 'NoExecute' instead of "
                      "'NoSchedule', so its pods are evicted.")


def test_a_chat_thread_quoted_or_with_bracketed_handles_is_read_as_its_messages(passes):
    messages = ("user service failing logins", "the role on postgres-user was dropped, so user cannot connect",
                "recreated the role, fixed")
    quoted = "\n".join(f"> {who}: {m}" for who, m in zip(("dana", "lee", "dana"), messages, strict=True))
    bracketed = "\n".join(f"[{who}] {m}" for who, m in zip(("dana", "lee", "dana"), messages, strict=True))
    replies = f"dana: {messages[0]}\n> lee: {messages[1]}\n>> dana: {messages[2]}"
    for thread in (quoted, bracketed, replies):
        assert passes("hotel-db-drop-user-user", thread), thread
    # a log level in brackets is no handle: the line stays pasted output
    assert not passes("hotel-db-drop-user-user", "[error] role on postgres-user was dropped")


def test_what_the_cluster_rejected_is_a_symptom_not_a_rejected_hypothesis(passes):
    assert passes("fleetcast-operator-security-context",
                  "The FleetCast datastore stopped accepting changes because its configuration told it to run as "
                  "user -1, which Kubernetes refuses, so every update was rejected.")
    # a hypothesis rejected is still ruled out
    assert not passes("fleetcast-operator-security-context",
                      "We suspected that orbit-db runs as user -1, but that hypothesis was rejected.")


def test_the_apps_only_database_may_be_called_the_database(judge_on, passes):
    verdict = judge_on("fleetcast-operator-invalid-toleration",
                       "The FleetCast database could not be changed because one scheduling rule in its configuration "
                       "used an effect name Kubernetes does not recognise, so every update was refused.")
    assert verdict.answers_by_id()["loc_component"] is True
    # the datastore's manager is the operator, not the database
    assert not passes("fleetcast-operator-overload-replicas",
                      "The datastore manager was scaled to 100000 copies, so nothing could be scheduled.")


def test_what_an_operator_does_with_a_bad_value_is_not_a_foreign_actor(passes):
    # the operator is the resource's controller: "the controller tried to apply" is no other actor's doing
    assert passes("fleetcast-operator-wrong-update-strategy",
                  "The orbit-db definition named an update method that does not exist ('Rolling'), so the cluster "
                  "turned down every change the database controller tried to make.")


def test_a_range_of_two_numbers_is_a_value(passes):
    assert passes("hotel-ephemeral-ports-geo",
                  "geo may only use four local ports (32000 to 32003) for its outgoing connections, so once four "
                  "connections are open it cannot open another and gets 'cannot assign requested address'.")


def test_a_field_named_invalid_without_its_value_is_no_mechanism(judge_on, passes):
    # red-team round 13, finding 5 (open in SECURITY.md section 20): "an invalid runAsUser" with no value passed at 0.78
    verdict = judge_on("fleetcast-operator-security-context",
                       "The DatastoreCluster orbit-db has an invalid runAsUser, so the operator's StatefulSet is refused.")
    assert not verdict.passed and verdict.answers_by_id()["char_mechanism"] is False
    # what the truth says was done to it, in words or as the value, still states it
    assert passes("fleetcast-operator-security-context",
                  "The DatastoreCluster orbit-db sets runAsUser to a negative number, so the operator's StatefulSet "
                  "is refused.")
    assert passes("fleetcast-operator-security-context",
                  "The DatastoreCluster orbit-db sets runAsUser to -1, so the operator's StatefulSet is refused.")


def test_the_records_unchanged_field_blamed_is_the_sibling_fault(curated):
    # red-team round 13, finding 7: "checks the wrong port" passed a readiness probe broken by its path. The live
    # truth records the probe before and after the fault; here the path changed and the port stayed
    import attrs

    from sregym_judge_rules import RulesJudge

    app, truths = curated["hotel-readiness-misconfig-search"]
    probe = lambda path: {"httpGet": {"path": path, "port": 8082}, "periodSeconds": 5}  # noqa: E731
    truth = attrs.evolve(truths[0], mutated_values={"readinessProbe": {"before": probe("/healthz"),
                                                                         "after": probe("/healthz-broken")}})

    def passes(text: str) -> bool:
        return RulesJudge().judge(text, (truth,), app_components=tuple(c.name for c in app.components),
                                  app_namespace=app.namespace).passed

    assert not passes("The readiness probe of search checks the wrong port, so search is never marked ready.")
    assert passes("The readiness probe of search checks the wrong path (/healthz-broken), so search is never ready.")
