"""The judge's answers to red-team round 16 (issue #34, docs/attacks-2026-12-01-round16.md, finding 5): a false second
cause beside the right one, in shapes round 15's answers did not read. Texts written for these tests after the report's
descriptions."""

from __future__ import annotations

RIGHT = ("geo's Deployment image was changed to sregym/hotel-reservation:v9.9.9-missing, a tag that does not exist, so "
         "its new pod is stuck in ImagePullBackOff and geo has no ready endpoint.")


def test_a_second_cause_in_a_footnote_fails(passes):
    assert not passes("hotel-wrong-image-geo", RIGHT + "[1]\n\n[1] geo's readiness probe asks for /ready-v2, a path geo "
                                                       "does not serve, so geo never becomes Ready either.")
    # a footnote that only gives the evidence is no second cause
    assert passes("hotel-wrong-image-geo", RIGHT + "[1]\n\n[1] kubectl describe pod shows ErrImagePull for that tag.")


def test_a_second_cause_in_an_aside_or_said_with_either_fails(passes):
    assert not passes("hotel-wrong-image-geo", RIGHT.replace("v9.9.9-missing,", "v9.9.9-missing (and its memory limit "
                                                                               "to 12Mi),"))
    assert not passes("hotel-wrong-image-geo", RIGHT + " geo's Service selector no longer matches geo's pods either.")
    # an aside listing what the truth's own object holds is no change
    assert passes("hotel-wrong-image-geo", RIGHT.replace("v9.9.9-missing,", "v9.9.9-missing (and nothing else in the "
                                                                           "template changed),"))


def test_a_singular_root_cause_heading_over_two_bullets_is_two_causes(passes):
    two = ("Root cause:\n- " + RIGHT + "\n- geo's Service selector no longer matches geo's pods, so geo has no "
           "endpoints.")
    assert not passes("hotel-wrong-image-geo", two)
    # one cause, its details in a list after a sentence of prose
    assert passes("hotel-wrong-image-geo", "Root cause:\n" + RIGHT + "\n\n- the tag v9.9.9-missing was never pushed\n"
                                           "- the kubelet reports ErrImagePull for it")
