"""The judge's nineteenth round (issue #35): readings found from the misses of the tuned blind sets, each tested on
texts written for these tests (never the blind sets' own items, which stay measurement material)."""

from __future__ import annotations


def test_an_invalid_value_inside_a_list_or_beside_what_the_system_accepts_is_the_change(passes):
    # the toleration's effect sits inside a list of tolerations: the new value, not a word of English, is the change
    assert passes("fleetcast-operator-invalid-toleration",
                  "The orbit-db DatastoreCluster has a toleration whose effect reads NoScheduling, so the operator's "
                  "StatefulSet is refused by the API server.")
    # a value the sentence says the system does not know, beside the ones it does
    assert passes("fleetcast-operator-wrong-update-strategy",
                  "orbit-db's update strategy is 'Rolling' but Kubernetes only accepts 'RollingUpdate' or 'OnDelete', "
                  "so every StatefulSet the operator writes is rejected.")
    # the right field with a value that is not the fault's stays unread
    assert not passes("fleetcast-operator-wrong-update-strategy",
                      "orbit-db's update strategy is 'Recreate' but Kubernetes only accepts 'RollingUpdate' or "
                      "'OnDelete', so every StatefulSet the operator writes is rejected.")


def test_a_clock_said_to_be_in_the_past_is_the_drift_and_the_other_way_round_is_not(passes):
    right = ("The node running ts-auth-service has its clock set a month (30 days) in the past, so the tokens it "
             "issues are already expired when the other services check them.")
    assert passes("train-ticket-clock-drift-auth", right)
    assert passes("train-ticket-clock-drift-auth", "ts-auth-service's machine has its date set about a month back, so "
                                                   "its login tokens look expired to every other service.")
    # the same object and size, the opposite direction: tokens not yet valid, another mechanism
    assert not passes("train-ticket-clock-drift-auth",
                      "The node running ts-auth-service has its clock 30 days ahead, so the tokens it issues carry "
                      "issue times in the future and the other services reject them.")


def test_datastores_named_through_their_owners_in_a_list(passes):
    text = ("All six PostgreSQL StatefulSets (geo, rate, profile, recommendation, user, reservation) were upgraded from "
            "postgres:15 to postgres:18; 18 cannot read the data directories version 15 initialised, so each exits.")
    assert passes("hotel-correlated-incompatible-upgrade", text)
    assert passes("hotel-correlated-incompatible-upgrade",
                  "The images of postgres-geo, -rate, -profile, -recommendation, -user and -reservation were bumped to "
                  "postgres:18, a major version that cannot read the existing data directories, so every database "
                  "crash-loops.")
    # the owners alone, with no datastore word before them, are the services, which are not faulty
    assert not passes("hotel-correlated-incompatible-upgrade",
                      "geo, rate, profile, recommendation, user and reservation were upgraded to postgres:18, which "
                      "cannot read the existing data directories.")


def test_who_sees_the_errors_is_not_blamed(passes):
    text = ("frontend sees about half of the searches fail. Cause: search's Service selector is too broad and also "
            "matches another Deployment's pods, so part of the traffic lands on pods that do not serve search.")
    assert passes("hotel-selector-pollution-search", text)
    # frontend said to be the cause is still blamed
    assert not passes("hotel-selector-pollution-search", text.replace("frontend sees about half of the searches fail",
                                                                      "frontend's search client is misconfigured"))


def test_naming_the_autoscaler_is_not_the_missing_cpu_request(passes):
    assert passes("hotel-hpa-no-request-geo", "geo's Deployment lost its CPU request, so the HPA cannot compute "
                                              "utilization and never scales geo out.")
    # the right object, a field the fault did not touch
    assert not passes("hotel-hpa-no-request-geo", "The HorizontalPodAutoscaler for geo had maxReplicas set equal to "
                                                  "minReplicas, so it could not scale geo out.")


def test_a_stream_called_a_topic_or_a_queue_is_the_faults_own_object(passes):
    assert passes("astronomy-queue-poison-pill",
                  "A malformed record sits in the orders topic: accounting and fraud-detection cannot decode it, retry "
                  "the same offset forever and consume nothing after it.")
    # the stream named without the record that blocks it says where, not what
    assert not passes("astronomy-queue-poison-pill", "The orders topic is slow, so accounting and fraud-detection lag.")
