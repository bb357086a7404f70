"""The judge's twenty-seventh round (issue #35): a second cause in the layouts red-team round 21 found still passing
(SECURITY.md §28), read as what they state whatever the layout: a JSON object of the writer's own keys, a
``field: old -> new`` line, an arrow line, a Markdown table whose rows blame other components. A change said with an
arrow between two values is a change stated, as "was lowered from 256Mi to 12Mi" is; the writer's JSON objects are read
for a second cause as a quote or a heading is; a table row whose first cell is another component and whose other cells
say something is broken blames that component. A genuine consequence of the one cause in the same layouts (the
victims' errors, the alert that fired, the faulty field's own before -> after) still passes. Each rule is tested on
texts written for these tests (never the blind sets' own items, which stay measurement material)."""

from __future__ import annotations

import pytest

IMAGE = "hotel-wrong-image-geo"
OK = ("geo's Deployment image in hotel-reservation was changed to sregym/hotel-reservation:v9.9.9-missing, a tag that "
      "does not exist, so geo's new pod is stuck in ImagePullBackOff and geo has no ready endpoint; search's nearby "
      "lookups to geo fail.")


def test_the_right_cause_alone_passes(passes):
    assert passes(IMAGE, OK)


@pytest.mark.parametrize("extra", [
    # a JSON object of the writer's own keys, one line or several, a change said in words or as before/after
    '{"causes": [{"service": "geo", "what": "CPU limit cut to 10m", "result": "throttled to a crawl"}]}',
    '{\n  "also_wrong": {\n    "object": "geo Deployment",\n    "field": "resources.limits.memory",\n'
    '    "before": "512Mi",\n    "after": "16Mi"\n  }\n}',
    # a bare `key: old -> new` line and an arrow line, in several arrows
    "geo.spec.template.spec.containers[0].resources.limits.memory: 512Mi -> 16Mi",
    "geo memory limit 512Mi → 16Mi ⇒ OOMKilled every few seconds.",
    "geo CPU limit: 500m => 10m, throttled.",
])
def test_a_second_change_in_another_layout_fails(passes, extra):
    assert not passes(IMAGE, OK + "\n\n" + extra)


@pytest.mark.parametrize("extra", [
    # the faulty field's own change, in the same layouts
    '{"object": "geo Deployment", "field": "image", "before": "sregym/hotel-reservation:1.0", '
    '"after": "sregym/hotel-reservation:v9.9.9-missing"}',
    "geo image: sregym/hotel-reservation:1.0 -> sregym/hotel-reservation:v9.9.9-missing",
    "geo image tag 1.0 → v9.9.9-missing ⇒ ImagePullBackOff.",
    # the victims' errors and the alert that fired
    '{"alert": "GeoUnavailable", "fired_at": "10:02", "impact": "search nearby lookups fail"}',
    "search nearby-lookup error rate 0% → 100% after 10:02.",
    # a call chain is no change
    "frontend -> search -> geo: the last hop fails.",
])
def test_a_consequence_of_the_one_cause_in_those_layouts_still_passes(passes, extra):
    assert passes(IMAGE, OK + "\n\n" + extra)


def test_a_table_blaming_two_other_components_fails(passes):
    table = ("| service | finding |\n|---|---|\n| rate | thread pool saturated |\n"
             "| profile | crash loop after a bad config rollout |")
    assert not passes(IMAGE, OK + "\n\n" + table)
    status = "| service | state |\n|---|---|\n| rate | memory leak, restarting |\n| profile | its cache is corrupt |"
    assert not passes(IMAGE, OK + "\n\n" + status)


@pytest.mark.parametrize("table", [
    # what the fault does to the other components, rows that clear them, the faulty component's own row
    "| service | finding |\n|---|---|\n| search | nearby lookups to geo fail |\n| frontend | 500s on the map page |",
    "| service | state |\n|---|---|\n| rate | healthy |\n| profile | not involved, no errors |",
    "| service | finding |\n|---|---|\n| geo | image tag v9.9.9-missing does not exist |\n| search | lookups fail |",
])
def test_a_table_of_consequences_or_cleared_components_still_passes(passes, table):
    assert passes(IMAGE, OK + "\n\n" + table)


# --- the right object, another field or value (the largest held-out false-pass group) -----------------------------

@pytest.mark.parametrize("problem, right, wrong", [
    # what is in place conceded before a contrast, another field of the same object blamed after it
    ("hotel-db-drop-user-user",
     "user's login role was dropped from postgres-user, so every login of the user service fails with 'role does not "
     "exist'.",
     "user's login role still exists in postgres-user, but its password was changed, so every login of the user "
     "service is refused."),
    ("hotel-ingress-class-mismatch-frontend",
     "The frontend Ingress's ingressClassName was changed to a class no controller serves, so no controller routes it "
     "and the site is unreachable.",
     "The frontend Ingress has the correct class, but its host rule was changed to a domain nobody uses, so the site "
     "is unreachable."),
    # another environment variable of the same Deployment, in a record of the writer's
    ("astronomy-wrong-port-env-checkout",
     "checkout's PRODUCT_CATALOG_ADDR was changed to product-catalog:8082, a port nothing listens on, so checkout "
     "cannot list products.",
     '{"component": "checkout", "field": "CART_ADDR", "value": "cart:9999", "why": "wrong port in the address"}'),
])
def test_the_right_object_with_another_field_fails(passes, problem, right, wrong):
    assert passes(problem, right)
    assert not passes(problem, wrong)


@pytest.mark.parametrize("problem, text", [
    ("hotel-finalizer-deadlock-geo",
     "geo-settings hangs in Terminating. config-guardian is working and the finalizer is expected; just wait."),
    ("hotel-db-max-connections-rate",
     "rate's queries fail. max_connections on postgres-rate fine (checked); a slow query holds the rows, add an index."),
    ("hotel-selector-mismatch-profile",
     "The profile Service's selector correctly matches the profile pods; profile itself crashes at start."),
    ("social-ingress-misrouted-path-nginx-thrift",
     "The Ingress properly routes every path to nginx-thrift; nginx-thrift's worker pool is saturated."),
])
def test_the_real_cause_named_and_cleared_in_the_writers_words_fails(passes, problem, text):
    assert not passes(problem, text)


@pytest.mark.parametrize("extra", [
    "search works again as expected after the rollback.",
    "rate is working normally and its cache is healthy.",
])
def test_a_correct_text_that_clears_bystanders_still_passes(passes, extra):
    assert passes(IMAGE, OK + " " + extra)


@pytest.mark.parametrize("problem, text", [
    # a bare verdict closing the clause that named the cause: "checked, fine", "ok"
    ("hotel-ingress-class-mismatch-frontend",
     "site unreachable. frontend Ingress class checked, fine. frontend pods crash on a bad config push, restart them."),
    ("hotel-db-max-connections-rate",
     "rate's queries fail. max_connections on postgres-rate looked at, ok. A slow query holds the rows; add an index."),
])
def test_the_cause_closed_by_a_bare_verdict_fails(passes, problem, text):
    assert not passes(problem, text)


def test_a_bare_state_inside_a_longer_clause_clears_nothing_else(passes):
    assert passes(IMAGE, "geo's image was changed to sregym/hotel-reservation:v9.9.9-missing, a tag that does not exist "
                         "(search pods fine, ready), so geo's new pod is stuck in ImagePullBackOff; search's lookups fail.")


def test_a_list_closed_by_all_suspicious_is_a_kitchen_sink(passes):
    assert not passes(IMAGE, "geo: image tag v9.9.9-missing does not exist, CNI, MTU, DNS, kube-proxy - all suspicious")


@pytest.mark.parametrize("problem, text", [
    ("hotel-quota-admission-user",
     "The ResourceQuota has plenty of headroom, so it is not what keeps user's pods away; user's config push broke it."),
    ("hotel-memory-limit-too-small-geo",
     "geo's 12Mi memory limit is not a factor either; geo crashes because a bad config push broke it."),
])
def test_the_cause_dismissed_as_no_factor_fails(passes, problem, text):
    assert not passes(problem, text)


def test_a_verdict_after_but_it_covers_what_it_turns_back_on(passes):
    # the real cause named, a contrast turning back on it ("but it ..."), then the verdict
    assert not passes("train-ticket-network-policy-block-price",
                      "A NetworkPolicy default-deny-ingress sits in the namespace but it admits everything from the "
                      "namespace, not the culprit; ts-price-service crashes at start.")
