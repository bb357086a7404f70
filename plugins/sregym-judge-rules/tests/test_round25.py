"""The judge's twenty-fifth round (issue #35): the right object with a wrong value, and a decoy beside the right one.
A feature flag said to be at another percentage than the fault set ("at 50%" for a flag at 100%) is another fault; the
faulty flag named with "off" while a sibling flag in the same sentence is on is the decoy blamed, not the fault; an
image tag the fault kept (a typo in the repository, the tag unchanged) says nothing of the change by itself. Each rule is
tested on texts written for these tests (never the blind sets' own items, which stay measurement material)."""

from __future__ import annotations

FLAG = "astronomy-flag-payment-failure"
OK_FLAG = ("The paymentFailure feature flag in the flagd-config ConfigMap was set to 100%, so payment rejects every "
           "charge and checkout fails for all users.")


def test_the_flag_at_its_own_value_passes(passes):
    assert passes(FLAG, OK_FLAG)
    # the same amount in words, or a share of requests the writer measured, is no other value
    assert passes(FLAG, "The paymentFailure flag in the flagd-config ConfigMap is at 100 percent, so payment fails "
                        "every charge and checkout errors.")
    assert passes(FLAG, "The paymentFailure flag in the flagd-config ConfigMap was turned on, so payment fails and "
                        "about 95% of checkouts error out.")


def test_the_flag_at_another_percentage_fails(passes):
    assert not passes(FLAG, "The paymentFailure flag in the flagd-config ConfigMap is set to 25%, so payment rejects "
                            "some charges and checkout fails now and then.")
    assert not passes(FLAG, "payment errors: flagd-config ConfigMap has paymentFailure on at 10 percent, which makes "
                            "checkout fail.")


CATALOG = "astronomy-flag-product-catalog-failure"


def test_the_faulty_flag_off_and_a_sibling_flag_on_fails(passes):
    assert passes(CATALOG, "flagd-config ConfigMap: productCatalogFailure is on, so product-catalog fails its "
                           "GetProduct calls and the shop pages error.")
    assert not passes(CATALOG, "flagd-config ConfigMap: productCatalogFailure is off, but adFailure is on, so "
                               "product-catalog pages error.")
    # the change itself written as off -> on is the fault's
    assert passes(CATALOG, "flagd-config ConfigMap: productCatalogFailure off -> on, so product-catalog fails its "
                           "GetProduct calls and the shop pages error.")


TYPO = "fleetcast-operator-wrong-image"


def test_an_image_tag_the_fault_kept_is_not_the_change(passes):
    assert not passes(TYPO, "datastore-operator Deployment: its image tag 1.0 was deleted from the registry, so the "
                            "operator pod is in ImagePullBackOff and nothing is reconciled.")
    assert passes(TYPO, "The datastore-operator Deployment's image was changed to sregym/fleetcast-operater:1.0, a typo "
                        "in the repository name, so the operator pod is in ImagePullBackOff and nothing is reconciled.")


def test_turning_the_faulty_flag_off_as_the_fix_still_passes(passes):
    assert passes(CATALOG, "flagd-config ConfigMap: productCatalogFailure was switched on, so product-catalog fails its "
                           "GetProduct calls and the shop pages error. Turning productCatalogFailure off fixed it.")
