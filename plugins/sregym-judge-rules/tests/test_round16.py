"""The rules judge's sixteenth round (issue #35, 2026-11-30 evening), on texts written for these tests.

- A field given another value with the verb first ("sets runAsUser to 0" for -1) is another fault, and the
  changed object's name ("DatastoreCluster/orbit-db") is no value (red-team round 13, finding 5).
- A possessive pronoun opening the cause of an effect said of the faulty component refers to that component, and
  what the possessed thing is for is its object, not a culprit: "checkout cannot build orders because its address
  for the catalog service points at the wrong port" blames checkout's setting, not the catalog.
"""

from __future__ import annotations


def test_its_setting_for_another_component_belongs_to_the_subject(passes):
    assert passes("astronomy-wrong-port-env-checkout",
                  "Checkout cannot build orders because its address for the catalog service points at the wrong port, 8082.")


def test_the_complement_stays_the_culprit_when_the_subject_is_only_a_victim(passes):
    # the effect's subject (geo) is not the faulty component: its role on postgres-geo is what is at fault
    assert passes("hotel-db-revoke-geo",
                  "Geo cannot read hotels because its role on postgres-geo lost every privilege on the tables (REVOKE ALL).")


def test_a_cleared_possession_and_another_culprit_still_fail(passes):
    assert not passes("astronomy-wrong-port-env-checkout",
                      "Checkout cannot build orders because its address for the catalog service is fine; "
                      "product-catalog itself crashed.")


def test_a_field_set_to_another_value_with_the_verb_first_is_another_fault(passes):
    # red-team round 13, finding 5: "sets runAsUser to 0" for a runAsUser of -1 scored 0.89
    assert not passes("fleetcast-operator-security-context",
                      "The DatastoreCluster orbit-db sets runAsUser to 0 (root), so the operator's StatefulSet is refused.")
    assert passes("fleetcast-operator-security-context",
                  "The DatastoreCluster orbit-db sets runAsUser to -1, so the operator's StatefulSet is refused.")


def test_naming_the_changed_object_states_no_value(judge_on):
    verdict = judge_on("fleetcast-operator-security-context",
                       "The DatastoreCluster orbit-db has an invalid runAsUser, so the operator's StatefulSet is refused.")
    assert verdict.answers_by_id()["char_values"] is False
