"""The judge's answers to red-team round 14 (issue #34, docs/attacks-2026-11-30-round14.md, findings 3-5), on texts
written for these tests after the report's descriptions."""

from __future__ import annotations

import attrs

from sregym_judge_rules import RulesJudge


def _live(curated, problem_id: str, values: dict):
    """The curated problem with the truth as a run records it (the values the fault really changed)."""
    app, truths = curated[problem_id]
    truth = attrs.evolve(truths[0], mutated_values=values)
    return lambda text: RulesJudge().judge(text, (truth,), app_components=tuple(c.name for c in app.components),
                                           app_namespace=app.namespace).passed


def test_causes_each_given_a_confidence_are_alternatives(passes):
    # finding 3: "Root cause A (55%) / B (45%)" scored 1.0, even with the wrong cause ranked first
    assert not passes("hotel-wrong-image-geo",
                      "Root cause A (confidence 55%): geo's image was set to a tag that does not exist (1.0-broken), "
                      "so it cannot be pulled. Root cause B (confidence 45%): the image registry is unreachable.")
    assert not passes("astronomy-scale-zero-currency",
                      "A (70%): currency's liveness probe is too aggressive, so it keeps restarting; "
                      "B (30%): currency was scaled to zero replicas.")
    # one cause with its confidence is a finding
    assert passes("astronomy-scale-zero-currency",
                  "Root cause (confidence 90%): currency was scaled to zero replicas, so nothing serves conversions.")


def test_a_false_cause_added_to_the_right_one_fails(passes):
    # finding 4: the right cause "in addition" to a sibling problem's defect scored 0.89-1.0
    assert not passes("hotel-wrong-image-geo",
                      "Two faults on geo: its image was set to a tag that does not exist (1.0-broken); and its memory "
                      "limit was lowered to 12Mi, so it is OOM-killed.")
    assert not passes("astronomy-readiness-misconfig-cart",
                      "cart's readiness probe checks the wrong path, so cart is never ready. In addition, the "
                      "failedReadinessProbe flag in flagd-config is switched on.")
    assert not passes("fleetcast-operator-overload-replicas",
                      "The DatastoreCluster orbit-db has spec.replicas 100000, so the operator keeps adding pods that "
                      "stay Pending; in addition one of orbit-db's tolerations has an invalid effect, NoScheduling.")
    # the right cause alone still passes
    assert passes("hotel-wrong-image-geo",
                  "geo's image was set to a tag that does not exist (1.0-broken), so its pods cannot pull it.")


def test_another_port_than_the_fault_set_is_a_wrong_value(curated):
    # finding 5: "points at product-catalog:3551" (the fault: 8082) scored 1.0, the variable's name taken as the value
    checkout = _live(curated, "astronomy-wrong-port-env-checkout",
                     {"env": "PRODUCT_CATALOG_ADDR", "before": "product-catalog:3550", "after": "product-catalog:8082"})
    assert not checkout("checkout's env PRODUCT_CATALOG_ADDR points at product-catalog:3551, the wrong port, so "
                        "checkout gets connection refused.")
    assert checkout("checkout's env PRODUCT_CATALOG_ADDR points at product-catalog:8082, the wrong port (the "
                    "catalog listens on 3550), so checkout gets connection refused.")
    user = _live(curated, "social-wrong-target-port-user-service", {"targetPort": {"before": 9090, "after": 9091}})
    assert not user("user-service's Service sends traffic to targetPort 9999 where nothing listens, so calls fail.")
    assert user("user-service's Service sends traffic to targetPort 9091 where nothing listens (the app serves "
                "9090), so calls fail.")
