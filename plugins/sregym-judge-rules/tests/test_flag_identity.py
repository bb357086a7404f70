"""Red-team round 9, attack 3 (issue #35 / #34): judge texts that pass without knowing the fault.

A flag fault is told from its siblings by *which* flag (``GroundTruth.identified_by``, set by the flag faults):
"a feature flag was switched on" fits the truth's flag and every decoy, so it states no mechanism and no value. A
faulty component named only inside an enumeration of three or more of the app's components ("it breaks ad, cart,
checkout, ...") is a kitchen sink of components, whatever the verb. Texts naming only an object ("kube-proxy's
ConfigMap was changed") or a symptom ("stuck Terminating") state no mechanism. The ground truths are derived from the
installed fault specs exactly as a run derives them, and judged as ``sregym validate`` calls the judge."""

from __future__ import annotations

import pytest
from sregym_judge_rules import RulesJudge

from sregym_core.types import GroundTruth

pytest.importorskip("sregym_app_train_ticket", reason="needs TrainTicket's curated flag problems")
pytest.importorskip("sregym_app_astronomy_shop", reason="needs Astronomy Shop's curated flag problems")

TT_ATTACK = ("A feature flag in flagd was switched on and it breaks ts-cancel-service, ts-contacts-service, "
             "ts-inside-payment-service, ts-order-service, ts-payment-service, ts-preserve-service, ts-travel-service, "
             "ts-travel2-service.")
ASTRONOMY_ATTACK = "A feature flag in flagd was switched on and it breaks ad, cart, checkout, frontend, image-provider, payment."


def _judge(curated, problem_id: str, submission: str):
    app, truths = curated[problem_id]
    return RulesJudge().judge(submission, truths, app_components=tuple(c.name for c in app.components),
                              app_namespace=app.namespace)


def _flag_problems(curated) -> list[str]:
    """The problems whose only fault is a flag fault."""
    return [pid for pid, (_app, truths) in curated.items() if [t.identified_by for t in truths] == [("flag",)]]


def test_the_flag_faults_say_their_flag_identifies_them(curated):
    flagged = _flag_problems(curated)
    assert sum(p.startswith("train-ticket-") for p in flagged) >= 10
    assert sum(p.startswith("astronomy-flag-") for p in flagged) >= 10
    for pid in flagged:
        for truth in curated[pid][1]:
            assert truth.mutated_values["flag"]
    # the field travels with the truth (results, calibration sets)
    truth = curated[flagged[0]][1][0]
    assert GroundTruth.from_config(truth.to_dict()).identified_by == ("flag",)


def test_a_flag_text_that_names_no_flag_fails_every_flag_problem(curated):
    for pid in _flag_problems(curated):
        attack = TT_ATTACK if pid.startswith("train-ticket-") else ASTRONOMY_ATTACK
        verdict = _judge(curated, pid, attack)
        assert not verdict.passed, pid
        # naming only the right component does not help: which flag is still not said
        component = curated[pid][1][0].components[0]
        verdict = _judge(curated, pid, f"A feature flag in flagd was switched on and it breaks {component}.")
        assert not verdict.passed, pid
        answers = {a.id: a.answer for a in verdict.answers}
        assert not answers["char_mechanism"] and not answers["char_values"], pid


def test_the_same_text_naming_the_flag_and_the_component_passes(curated):
    for pid in _flag_problems(curated):
        truth = curated[pid][1][0]
        flag, component = truth.mutated_values["flag"], truth.components[0]
        verdict = _judge(curated, pid, f"The feature flag {flag} in flagd was switched on and it breaks {component}.")
        assert verdict.passed, (pid, verdict.answers)
        values = next(a for a in verdict.answers if a.id == "char_values")
        assert values.answer and flag in values.evidence


def test_a_decoy_flag_instead_of_the_truths_fails(curated):
    pid = "train-ticket-f12-station-lock-leak"
    truth = curated[pid][1][0]
    decoy = truth.mutated_values["decoys"][0]
    assert not _judge(curated, pid, f"The feature flag {decoy} in flagd was switched on and it breaks ts-order-service.").passed
    assert not _judge(curated, "astronomy-flag-ad-failure",
                      "The feature flag adHighCpu in flagd was switched on and it breaks ad.").passed


def test_a_listing_of_flags_that_were_seen_on_does_not_name_the_cause(curated):
    text = "In flagd-config tt-feat-3, tt-feat-12 and tt-feat-14 are on. A feature flag was switched on and ts-order-service breaks."
    assert not _judge(curated, "train-ticket-f12-station-lock-leak", text).passed


@pytest.mark.parametrize(("problem_id", "text"), [
    ("astronomy-flag-ad-failure", "ad rejects every call: someone turned on the switch that makes ad fail on purpose."),
    ("astronomy-flag-failed-readiness", "The failing-readiness flag was turned on in flagd-config, so cart reports itself "
                                        "not ready and drops out of its Service."),
    ("astronomy-flag-image-slow-load", "image-provider answers slowly because the slow image load toggle was switched on "
                                       "in flagd."),
    ("astronomy-flag-ad-failure", '{"component": "ad", "flag": "adFailure", "configmap": "flagd-config", '
                                  '"cause": "the flag was turned on, so every ad request fails"}'),
    ("train-ticket-f12-station-lock-leak", "The feature flag tt feat 12 in flagd was switched on and it breaks "
                                           "ts-order-service."),
])
def test_the_flag_said_in_other_words_or_a_records_field_passes(curated, problem_id, text):
    assert _judge(curated, problem_id, text).passed


@pytest.mark.parametrize(("problem_id", "text"), [
    ("astronomy-flag-ad-failure", "A feature flag in flagd was switched on and ad fails."),
    ("astronomy-flag-payment-failure", "A feature flag in flagd was switched on, so payment fails."),
    ("astronomy-flag-failed-readiness", "The flagd ConfigMap was changed: a flag is on, which breaks cart."),
])
def test_the_effect_on_the_component_does_not_say_which_flag(curated, problem_id, text):
    assert not _judge(curated, problem_id, text).passed


@pytest.mark.parametrize(("problem_id", "text"), [
    ("astronomy-flag-ad-failure", "The feature flag adFailure in flagd was switched on and it breaks ad, cart, checkout, "
                                  "frontend, image-provider, payment."),
    ("astronomy-flag-ad-failure", "ad, cart and checkout are broken because the flag adFailure was switched on."),
    ("train-ticket-f12-station-lock-leak", "The feature flag tt-feat-12 in flagd was switched on and it breaks "
                                           "ts-cancel-service, ts-order-service, ts-payment-service and ts-travel-service."),
])
def test_the_faulty_component_named_only_in_a_list_of_components_is_a_kitchen_sink(curated, problem_id, text):
    verdict = _judge(curated, problem_id, text)
    assert not verdict.passed
    assert "enumeration" in str(verdict.inputs["gates"]["kitchen_sink"])


@pytest.mark.parametrize(("problem_id", "text"), [
    ("astronomy-flag-ad-failure", "The feature flag adFailure in flagd was switched on, which breaks ad; frontend, "
                                  "checkout and cart only show the errors ad returns."),
    ("astronomy-flag-ad-failure", "adFailure was turned on in flagd-config, so ad fails every request. frontend, cart "
                                  "and checkout are healthy."),
    ("train-ticket-f12-station-lock-leak", "tt-feat-12 was switched on in flagd-config, so ts-order-service leaves "
                                           "stations locked; ts-payment-service, ts-cancel-service and ts-travel-service "
                                           "then reject payments and cancellations between them."),
])
def test_other_components_named_as_victims_or_evidence_still_pass(curated, problem_id, text):
    assert _judge(curated, problem_id, text).passed


@pytest.mark.parametrize(("problem_id", "text"), [
    ("astronomy-conntrack-exhaustion-frontend",
     "kube-proxy's ConfigMap in kube-system was changed and new connections are dropped on every node."),
    ("social-finalizer-deadlock-user-service", "user-service is stuck: an object it needs is stuck Terminating."),
])
def test_a_text_naming_only_the_object_or_the_symptom_fails(curated, problem_id, text):
    assert not _judge(curated, problem_id, text).passed


@pytest.mark.parametrize("text", [
    "user-service's ServiceAccount lacks a permission it needs.",
    "user-service's ServiceAccount is missing permissions.",
    "user-service is broken by RBAC: access denied.",
])
def test_a_generic_missing_permission_text_fails(curated, text):
    """A word of denial says neither which right nor on what (red-team rounds 9 and 11): it fits a sibling's text."""
    assert not _judge(curated, "social-sa-missing-permission-user-service", text).passed


@pytest.mark.parametrize(("problem_id", "text"), [
    ("social-sa-missing-permission-user-service", "user-service's ServiceAccount lacks permission to read ConfigMaps."),
    ("social-sa-missing-permission-user-service",
     "user-service's service account lost its RBAC permission to read the config map user-service-config."),
    ("social-sa-missing-permission-user-service",
     "user-service can't start: the new init container reads its settings through the Kubernetes API and the API says "
     "forbidden, its account has no right to read them."),
    ("hotel-kubelet-eviction-threshold-postgres-rate",
     "A kubelet drop-in on postgres-rate's node demands 90 % free nodefs, so the node reports DiskPressure with a "
     "mostly empty disk; postgres-rate was evicted and cannot return."),
])
def test_the_same_object_with_what_was_done_to_it_passes(curated, problem_id, text):
    assert _judge(curated, problem_id, text).passed


def test_a_list_of_cluster_objects_that_were_changed_fails(curated):
    assert not _judge(curated, "hotel-kubelet-eviction-threshold-postgres-rate",
                      "postgres-rate fails: a change to a cluster object in kube-system (CoreDNS, kube-proxy, kubelet "
                      "configuration).").passed


def test_a_probe_of_no_kind_misconfigured_fails(curated):
    assert not _judge(curated, "hotel-liveness-misconfig-profile",
                      "profile's pods keep failing a probe: a probe on profile is misconfigured.").passed
