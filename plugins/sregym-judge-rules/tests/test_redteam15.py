"""The judge's answers to red-team round 15 (issue #34, docs/attacks-2026-12-01-round15.md, findings 5 and 6), on texts
written for these tests after the report's descriptions. The curated truths carry a run's values (the image tag the
fault set), as tests/test_run_truth.py checks."""

from __future__ import annotations

RIGHT = ("geo's Deployment image was changed to sregym/hotel-reservation:v9.9.9-missing, a tag that does not exist, so its "
         "new pod is stuck in ImagePullBackOff and geo has no ready endpoint.")


def test_a_false_second_cause_in_a_sentence_of_its_own_fails(passes):
    assert passes("hotel-wrong-image-geo", RIGHT)
    # finding 5: 7e55e373f3a2, the right cause and, in its own sentence, a change nobody made
    assert not passes("hotel-wrong-image-geo", RIGHT + " geo's memory limit was lowered to 12Mi, so its container is "
                                                       "OOM-killed when it starts.")
    # ... an effect of the right cause in a sentence of its own is no second cause
    assert passes("hotel-wrong-image-geo", RIGHT + " Callers of geo time out while it has no endpoint.")


def test_a_table_of_two_root_causes_is_two_causes(passes):
    table = ("| # | Root cause | Evidence |\n|---|---|---|\n"
             "| 1 | geo's image was changed to sregym/hotel-reservation:v9.9.9-missing, a tag that does not exist | "
             "ImagePullBackOff |\n")
    # finding 5: 87ed4d219cd0, a second row with a false cause
    assert not passes("hotel-wrong-image-geo", table + "| 2 | a NetworkPolicy denies all ingress to geo | timeouts |")
    # one cause with its evidence over two rows is one cause
    assert passes("hotel-wrong-image-geo", table.replace("| # | Root cause | Evidence |", "| # | Finding | Evidence |")
                  + "| 2 | the kubelet reports ErrImagePull for that tag | events |")


def test_another_tag_for_the_changed_image_is_a_wrong_value(passes):
    # finding 6: ec794d0e506b, 0.89 with the tag 2.0-broken for v9.9.9-missing
    assert not passes("hotel-wrong-image-geo", RIGHT.replace("v9.9.9-missing", "2.0-broken"))
    assert not passes("hotel-wrong-image-geo", "geo's image tag was changed to 2.0-broken, which does not exist, so its "
                                               "pod is stuck in ImagePullBackOff.")
    # the tag it replaced, written beside the right one, is no wrong value; nor is a tag named by its repository only
    assert passes("hotel-wrong-image-geo", "geo's image went from sregym/hotel-reservation:1.0 to "
                                           "sregym/hotel-reservation:v9.9.9-missing, a tag that does not exist, so its "
                                           "pod is stuck in ImagePullBackOff.")
