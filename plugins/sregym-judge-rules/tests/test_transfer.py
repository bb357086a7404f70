"""The fourth round of issue #35: readings meant to transfer to problems and wordings the judge has not seen.

Each principle is tested on texts written for these tests, against truths written here (other components, other
words than any labelled item): the mechanism read from the truth's own statements and changed fields, a negation
that is itself the fault, a misspelt concept word, a ruling-out verdict about what the clause before it named, and
a JSON answer read field by field by what each key's words say it holds.
"""

from __future__ import annotations

import pytest
from sregym_judge_rules import RulesJudge, concepts
from sregym_judge_rules.reading import json_as_prose, mask_unasserted

from sregym_core.types import GroundTruth

SHOP = ("frontend", "checkout", "payment", "shipping", "quote", "email", "currency", "cart", "valkey-cart",
        "frontend-proxy", "product-catalog", "recommendation", "ad")

# a long statement: what was done (before ": ") and what follows from it
ROUTE = GroundTruth(
    fault="ingress-misrouted-path", layer="network", components=("frontend-proxy",), namespace="shop",
    resource_kind="Ingress",
    mechanism="the app's Ingress path rule points at another Service (an internal backend) instead of the entry "
              "Service: user requests reach a backend that does not speak HTTP to them and fail",
    mutated_values={"ingress": "shop", "wrong_service": "currency", "wrong_port": 7001})
LIMIT = GroundTruth(
    fault="fd-limit", layer="config", components=("checkout",), namespace="shop", resource_kind="Deployment",
    mechanism="open-file descriptor limit (ulimit -n) set far too low for the connection load",
    mutated_values={"ulimit -n": 32})
PASSWORD = GroundTruth(
    fault="cache-auth", layer="datastore", components=("valkey-cart",), namespace="shop", resource_kind="Deployment",
    mechanism="requirepass was turned on in the cache's startup arguments, and its clients were not given the password",
    mutated_values={"requirepass": "set"})


def _judge(text: str, truth: GroundTruth) -> bool:
    return RulesJudge().judge(text, (truth,), app_components=SHOP, app_namespace="shop").passed


# --- the mechanism from the truth's own statements --------------------------------------------------------


def test_the_cause_part_of_a_long_statement_is_a_statement_of_its_own():
    statements = concepts.statements(ROUTE.mechanism, "", ("frontend-proxy",))
    assert statements[1].endswith("instead of the entry Service")  # the effects after ": " are cut off
    assert concepts.is_cause_part(statements[1]) and not concepts.is_cause_part(statements[0])


def test_a_long_statement_said_in_a_few_of_its_own_concepts_passes():
    # five distinctive concepts of the cause part (ingress, rule, internal, backend, instead), none of its effects
    assert _judge("The shop's ingress rule now hands every request to the internal currency backend instead of "
                  "frontend-proxy, so the shop is down.", ROUTE)


def test_the_same_concepts_without_what_changed_or_from_the_effects_do_not():
    # the effect part alone (a backend that does not speak HTTP, requests fail) is what a sibling fault shares
    assert not _judge("frontend-proxy is down: user requests reach a backend that does not speak HTTP and fail.", ROUTE)


def test_field_concepts_come_from_the_names_of_the_changed_fields():
    assert concepts.field_concepts(("hostPort",)) == frozenset({"port"})
    assert "ingress" in concepts.field_concepts(("ingress", "wrong_service", "wrong_port"))
    assert concepts.split_compounds("a deny-all NetworkPolicy sets hostPort") == "a deny-all Network Policy sets host Port"


# --- a negation that is the fault ---------------------------------------------------------------------------


def test_a_negation_that_says_something_is_insufficient_states_the_fault():
    assert _judge("checkout may not hold enough open files: its descriptor limit is 32, far below what its "
                  "connection load needs, so new connections fail.", LIMIT)


def test_a_negation_of_the_mechanism_itself_still_denies_it():
    assert not _judge("checkout's open-file descriptor limit was not lowered; it is far above its connection load. "
                      "The errors come from a slow payment service.", LIMIT)


def test_a_concept_the_truth_states_negated_may_be_negated_in_the_diagnosis():
    assert "speak" in concepts._negated_concepts(ROUTE.mechanism)


# --- misspelt concept words ------------------------------------------------------------------------------------


@pytest.mark.parametrize("typo, word", [("permision", "permission"), ("certficate", "certificate"),
                                        ("descripter", "descriptor"), ("pasword", "password")])
def test_a_misspelt_concept_word_is_read_as_the_word(typo, word):
    assert concepts._near(typo, word)


@pytest.mark.parametrize("other, word", [("ports", "posts"), ("limit", "liming"), ("cache", "catch")])
def test_short_words_and_other_words_are_not_read_as_misspellings(other, word):
    assert not concepts._near(other, word)


def test_a_diagnosis_with_misspelt_concept_words_passes():
    assert _judge("checkout have too low open file descripter limit (32), far below the conection load, so new "
                  "conections fail.", LIMIT)


# --- a verdict about what the clause before it named ---------------------------------------------------------


@pytest.mark.parametrize("sentence", [
    "the requirepass setting we looked at and it is not the problem, the cache answers fine.",
    "requirepass verified ok, not it.",
])
def test_a_ruling_out_verdict_covers_the_clause_it_refers_back_to(sentence):
    assert "requirepass" not in mask_unasserted(sentence)


def test_a_pronoun_verdict_after_a_change_does_not_reach_back_over_it():
    assert "requirepass" in mask_unasserted("requirepass was turned on in valkey-cart and it is not the network.")


# --- JSON answers read field by field ---------------------------------------------------------------------------


def test_a_fault_name_as_a_slug_explains_nothing():
    assert not _judge('{"component": "valkey-cart", "fault": "cache-auth", "mechanism": "", "value": "set"}', PASSWORD)
    assert not _judge('{"component": "checkout", "fault_type": "fd_limit", "explanation": "fd-limit"}', LIMIT)


def test_a_field_named_for_what_is_wrong_explains():
    assert _judge('{"component": "checkout", "vulnerability": "its open-file descriptor limit (ulimit -n) was set to '
                  '32, far too low for the connection load", "fix": "raise the limit"}', LIMIT)


def test_a_hypothesis_field_or_an_unverified_status_asserts_nothing():
    assert not _judge('{"hypothesis": "Did the cart cache start with requirepass while its clients have no password?", '
                      '"next_step": "read its args"}', PASSWORD)
    assert not _judge('{"component": "valkey-cart", "root_cause": "requirepass turned on in its startup arguments; its '
                      'clients were not given the password", "status": "not yet verified"}', PASSWORD)


def test_a_fix_field_blames_nobody():
    prose = json_as_prose('{"component": "valkey-cart", "mechanism": "requirepass turned on in its startup arguments, '
                          'clients not given the password", "fix": "give cart the password"}')
    assert prose is not None and "cart the password" not in prose
    assert _judge('{"component": "valkey-cart", "mechanism": "requirepass turned on in its startup arguments, clients '
                  'not given the password", "fix": "give cart the password"}', PASSWORD)


# --- ordinary ways of ruling a candidate out, whatever the fault --------------------------------------------------

CANDIDATE = "valkey-cart's requirepass turned on in its startup arguments"


@pytest.mark.parametrize("text", [
    f"{CANDIDATE} has nothing to do with it; the node is slow.",
    f"{CANDIDATE} was a false lead. The node is slow.",
    f"{CANDIDATE} is not to blame. The node is slow.",
    f"{CANDIDATE} is not at fault. The node is slow.",
    f"There is no problem with {CANDIDATE}. The node is slow.",
    f"{CANDIDATE} works as intended. The node is slow.",
    f"{CANDIDATE} doesn't explain the errors. The node is slow.",
    f"Initially I thought {CANDIDATE}; that turned out wrong. The node is slow.",
    f"{CANDIDATE} cannot be the reason, the node is slow.",
    f"Not {CANDIDATE}. The node is slow.",
    f"Someone proposed {CANDIDATE}, which we disproved. The node is slow.",
    f"We first suspected {CANDIDATE}, but it is fine. The node is slow.",
    f"{CANDIDATE} would explain it, but it is not the case. The node is slow.",
])
def test_a_candidate_ruled_out_in_ordinary_words_is_not_asserted(text):
    assert not _judge(text, PASSWORD)


def test_a_change_before_a_pronoun_verdict_stays_asserted():
    assert _judge("valkey-cart's requirepass was turned on in its startup arguments and its clients were not given the "
                  "password; it is not the network.", PASSWORD)


def test_components_after_a_preposition_of_direction_are_not_offered_as_causes():
    retry = GroundTruth(fault="retry-storm", layer="app", components=("checkout",), namespace="shop",
                        resource_kind="Deployment",
                        mechanism="aggressive client retry policy (50 ms timeout, 30 retries, no backoff) amplifies load "
                                  "into a retry storm",
                        mutated_values={"env": {"RPC_TIMEOUT_MS": "50", "RPC_RETRIES": "30"}})
    assert _judge("checkout retries every call to payment or shipping 30 times after a 50 ms timeout with no backoff, so "
                  "the retries amplify load into a retry storm.", retry)
    assert not _judge("The retry storm comes from payment or shipping: 30 retries, 50 ms timeout, no backoff.", retry)
    assert not _judge("The retry storm is due to payment or shipping: 30 retries, 50 ms timeout, no backoff.", retry)
    assert not _judge("A password is missing for payment or for shipping; possibly both.", PASSWORD)


@pytest.mark.parametrize("text", [
    "Not a network problem, valkey-cart's requirepass was turned on in its startup arguments and its clients were not "
    "given the password.",
    "We first suspected the node, but it is fine. valkey-cart's requirepass was turned on in its startup arguments and "
    "its clients were not given the password.",
    "valkey-cart's requirepass was turned on in its startup arguments and its clients were not given the password. The "
    "node has nothing to do with it.",
])
def test_a_ruling_out_beside_the_assertion_leaves_the_assertion(text):
    assert _judge(text, PASSWORD)


# --- JSON shapes: wrapped, listed, keys named in other words --------------------------------------------------------

FD_CAUSE = "the open-file descriptor limit (ulimit -n) was set to 32, far too low for the connection load"


@pytest.mark.parametrize("answer", [
    f'```json\n{{"component": "checkout", "analysis": "{FD_CAUSE}."}}\n```',
    f'{{"incident": {{"component": "checkout", "cause": "{FD_CAUSE}"}}, "confidence": "high"}}',
    f'[{{"component": "checkout", "root_cause": "{FD_CAUSE}"}}]',
    f'{{"root_cause": {{"component": "checkout", "description": "{FD_CAUSE}"}}, "remediation": "raise it"}}',
])
def test_a_correct_finding_in_any_json_shape_passes(answer):
    assert _judge(answer, LIMIT)


@pytest.mark.parametrize("answer", [
    '{"component": "checkout", "fault_type": "config", "root_cause": "config issue", "values": {"ulimit -n": 32}}',
    '[{"component": "checkout", "root_cause": "fd-limit"}]',
    '{"incident": {"component": "checkout", "fault": "fd-limit", "mechanism": "TBD"}}',
    f'[{{"component": "checkout", "root_cause": "{FD_CAUSE}"}}, {{"component": "payment", "root_cause": "slow"}}]',
])
def test_json_copying_the_truths_shape_with_a_category_or_a_label_fails(answer):
    assert not _judge(answer, LIMIT)


def test_a_word_after_a_shorter_components_name_is_no_pod_suffix():
    from sregym_judge_rules.text import component_pattern

    # "home-timeline" is a short form of home-timeline-service; "-redis" is a word, not a pod's random suffix
    assert component_pattern("home-timeline-service").search("the cause is in home-timeline-redis.") is None
    assert component_pattern("home-timeline-redis").search("the cause is in home-timeline-redis.") is not None
    for pod in ("geo-7d9f8c-x2k4q", "geo-x2k4q", "geo-xkqzp", "geo-0"):
        assert component_pattern("geo").fullmatch(pod)
