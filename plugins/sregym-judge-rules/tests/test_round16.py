"""The rules judge's sixteenth round (issue #35, 2026-11-30 evening), on texts written for these tests.

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
