"""The judge's twenty-sixth round (issue #35): a second cause in a layout that lists causes, whatever the layout, and
another component blamed in words that name no mechanism the judge knows (red-team round 20's finding 4, SECURITY.md
§26-§27). A line, list or section whose label says what follows is one more ("Contributing factor:", "Secondary:",
"Also:", "Other issues", a footnote), and a Markdown table with a column of changes or findings, list causes: another
mechanism there is a second cause beside the fault's; a genuine consequence of the one cause there (the victims' errors,
the alert that fired) is not. A component said to be at fault, to blame, misbehaving, or in a broken state ("its
connection pool is exhausted", "has a memory leak") is blamed, whatever the mechanism. Each rule is tested on texts
written for these tests (never the blind sets' own items, which stay measurement material)."""

from __future__ import annotations

import pytest

IMAGE = "hotel-wrong-image-geo"
OK = ("geo's Deployment image in hotel-reservation was changed to sregym/hotel-reservation:v9.9.9-missing, a tag that "
      "does not exist, so geo's new pod is stuck in ImagePullBackOff and geo has no ready endpoint; search's nearby "
      "lookups to geo fail.")


def test_the_right_cause_alone_passes(passes):
    assert passes(IMAGE, OK)


@pytest.mark.parametrize("extra", [
    # a labelled line, the change said with no verb
    "Contributing factor: geo's memory limit, 12Mi since the rollout (it was 256Mi), OOMKills its container.",
    "Secondary: geo's memory limit 256Mi -> 12Mi, so the container is OOMKilled.",
    # a list under a header line, a section under a heading
    "Other issues:\n- geo's memory limit of 12Mi (256Mi before the change) OOMKills it.",
    "## Additional findings\n\ngeo's memory limit, 12Mi since the change, OOMKills the container.",
    # a footnote
    "[^1]: geo's memory limit, now 12Mi instead of 256Mi, OOMKills the container.",
])
def test_a_second_cause_under_a_label_that_adds_one_fails(passes, extra):
    assert not passes(IMAGE, OK + "\n\n" + extra)


def test_a_table_of_changes_with_a_second_change_fails(passes):
    table = ("| component | change |\n|---|---|\n| geo | image tag 1.0 -> v9.9.9-missing |\n"
             "| geo | memory limit 256Mi -> 12Mi |")
    assert not passes(IMAGE, OK + "\n\n" + table)
    findings = ("| object | finding |\n|---|---|\n| geo Deployment | image v9.9.9-missing does not exist |\n"
                "| geo Deployment | memory limit 12Mi, OOMKilled |")
    assert not passes(IMAGE, OK + "\n\n" + findings)


@pytest.mark.parametrize("extra", [
    # what the one cause does, the alert that fired, under the same labels
    "Contributing factor: search has no fallback, so its nearby lookups fail when geo has no endpoint.",
    "Secondary: search's nearby lookups to geo time out and frontend returns 500s.",
    "Also: the GeoUnavailable alert fired at 10:02 and search logs errors about geo.",
    "Other issues:\n- search's lookups to geo fail.\n- frontend shows errors for nearby hotels.",
    "| finding | detail |\n|---|---|\n| root cause | geo image tag v9.9.9-missing does not exist |\n"
    "| impact | search's nearby lookups fail, frontend 500s |",
])
def test_a_consequence_of_the_one_cause_under_such_a_label_still_passes(passes, extra):
    assert passes(IMAGE, OK + "\n\n" + extra)


@pytest.mark.parametrize("extra", [
    "The rate service is also at fault.",
    "rate is to blame as well.",
    "And the rate service misbehaved too.",
    "Separately, because rate's connection pool is exhausted, search's calls to rate fail as well.",
    "Also profile has a memory leak.",
    "profile contributes to the errors.",
])
def test_another_component_blamed_without_a_known_mechanism_fails(passes, extra):
    assert not passes(IMAGE, OK + " " + extra)


@pytest.mark.parametrize("extra", [
    "rate is not at fault.",
    "search is not to blame: it only sees the errors.",
    "Nothing else is at fault; rate and profile are healthy.",
])
def test_another_component_cleared_still_passes(passes, extra):
    assert passes(IMAGE, OK + " " + extra)


@pytest.mark.parametrize("declared", [
    "Root cause: rate's connection pool exhaustion.",
    "The real cause is rate's thread pool, which is exhausted.",
])
def test_the_fault_looked_at_and_another_cause_declared_fails(passes, declared):
    # the fault's own change seen and set aside, another cause declared: the declaration is what the writer concludes
    assert not passes(IMAGE, "Checked geo's Deployment: its image sregym/hotel-reservation:v9.9.9-missing is a tag that "
                             "does not exist, but the old pod keeps serving, so that is harmless. " + declared)


def test_the_fault_declared_as_the_root_cause_still_passes(passes):
    assert passes(IMAGE, "Root cause: geo's Deployment image was changed to sregym/hotel-reservation:v9.9.9-missing, a "
                         "tag that does not exist, so geo's pod is stuck in ImagePullBackOff and search's lookups fail.")
    assert passes(IMAGE, "search's lookups to geo fail and rate looked slow at first. The real cause is geo: its image "
                         "was changed to sregym/hotel-reservation:v9.9.9-missing, a tag that does not exist, so its pod "
                         "is stuck in ImagePullBackOff.")
