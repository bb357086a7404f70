"""The judge's answers to red-team round 15 (issue #34, docs/attacks-2026-12-01-round15.md, findings 8 and 9), on texts
written for these tests after the report's descriptions. The curated truths carry a run's values (the image tag the
fault set), as tests/test_run_truth.py checks."""

from __future__ import annotations

RIGHT = ("geo's Deployment image was changed to sregym/hotel-reservation:v9.9.9-missing, a tag that does not exist, so its "
         "new pod is stuck in ImagePullBackOff and geo has no ready endpoint.")


def test_a_false_second_cause_in_a_sentence_of_its_own_fails(passes):
    assert passes("hotel-wrong-image-geo", RIGHT)
    # finding 8: 7e55e373f3a2, the right cause and, in its own sentence, a change nobody made
    assert not passes("hotel-wrong-image-geo", RIGHT + " geo's memory limit was lowered to 12Mi, so its container is "
                                                       "OOM-killed when it starts.")
    # ... an effect of the right cause in a sentence of its own is no second cause
    assert passes("hotel-wrong-image-geo", RIGHT + " Callers of geo time out while it has no endpoint.")


def test_a_table_of_two_root_causes_is_two_causes(passes):
    table = ("| # | Root cause | Evidence |\n|---|---|---|\n"
             "| 1 | geo's image was changed to sregym/hotel-reservation:v9.9.9-missing, a tag that does not exist | "
             "ImagePullBackOff |\n")
    # finding 8: 87ed4d219cd0, a second row with a false cause
    assert not passes("hotel-wrong-image-geo", table + "| 2 | a NetworkPolicy denies all ingress to geo | timeouts |")
    # one cause with its evidence over two rows is one cause
    assert passes("hotel-wrong-image-geo", table.replace("| # | Root cause | Evidence |", "| # | Finding | Evidence |")
                  + "| 2 | the kubelet reports ErrImagePull for that tag | events |")


def test_another_tag_for_the_changed_image_is_a_wrong_value(passes):
    # finding 9: ec794d0e506b, 0.89 with the tag 2.0-broken for v9.9.9-missing
    assert not passes("hotel-wrong-image-geo", RIGHT.replace("v9.9.9-missing", "2.0-broken"))
    assert not passes("hotel-wrong-image-geo", "geo's image tag was changed to 2.0-broken, which does not exist, so its "
                                               "pod is stuck in ImagePullBackOff.")
    # the tag it replaced, written beside the right one, is no wrong value; nor is a tag named by its repository only
    assert passes("hotel-wrong-image-geo", "geo's image went from sregym/hotel-reservation:1.0 to "
                                           "sregym/hotel-reservation:v9.9.9-missing, a tag that does not exist, so its "
                                           "pod is stuck in ImagePullBackOff.")


def test_another_amount_for_the_changed_size_is_a_wrong_value(passes):
    # finding 9: 90b2f9ee9fa3, "lowered to 64Mi" for a 12Mi limit scored 0.89
    assert not passes("hotel-memory-limit-too-small-geo",
                      "geo's memory limit was lowered to 64Mi, so its container is OOM-killed when it starts.")
    assert passes("hotel-memory-limit-too-small-geo",
                  "geo's memory limit was lowered to 12Mi, so its container is OOM-killed when it starts.")
    # an amount that is no claim of the new value (what it used, what it had) is no wrong value
    assert passes("hotel-memory-limit-too-small-geo",
                  "geo's memory limit was cut from its usual 256Mi to 12Mi; it needs about 80Mi, so it is OOM-killed.")


def test_a_flag_said_to_be_on_beside_another_fault_is_a_second_cause(passes):
    # finding 8: dc015f088132, round 14's own connector on Astronomy Shop scored 1.0
    assert not passes("astronomy-scale-zero-currency",
                      "The currency Deployment in astronomy-shop was scaled to zero replicas (spec.replicas: 0), so "
                      "currency conversions fail. In addition, the adFailure flag in flagd-config is on, so ad fails too.")


def test_an_aside_naming_where_the_removed_variable_came_from_is_no_second_mechanism(passes, curated):
    # the side note of the report: an honest answer scored 0.33, "asserts several mechanisms: configmap-drift,
    # missing-secret", for the Secret it named in brackets
    assert passes("hotel-missing-env-user",
                  "The DB_PASSWORD environment variable (from Secret user-db, key password) was removed from the user "
                  "container, so user cannot log in to its database and every login fails.")
    # an aside naming something else is read as written: it stays in the sentence
    from sregym_judge_rules import reading
    from sregym_judge_rules.rules import _without_own_asides

    def sentence(raw):
        return reading.sentences(reading.split_prose(raw)[0])[0]

    truths = curated["hotel-missing-env-user"][1]
    kept = sentence("The DB_PASSWORD variable (and the Secret search-db) was removed from user.")
    assert _without_own_asides(kept, truths) is kept
    own = sentence("The DB_PASSWORD variable (from Secret user-db, key password) was removed from user.")
    assert "user db" not in _without_own_asides(own, truths).flat
