"""The judge's twenty-first round (issue #35): the right object with another of its fields, and a second cause said
inside a step of the fix. Each reading is tested on texts written for these tests (never the blind sets' own items,
which stay measurement material)."""

from __future__ import annotations


def test_a_container_resource_counted_in_the_other_unit_is_another_field(passes):
    # the truth cut the memory limit: the CPU limit, CPUs asked for, or the JVM's heap are other fields of the object
    pid = "hotel-memory-limit-too-small-geo"
    assert passes(pid, "geo's memory limit was lowered to 12Mi, so the container is OOMKilled on start.")
    assert not passes(pid, "geo's CPU limit was cut to 12m, so the process is throttled until its probe kills it.")
    assert not passes(pid, "geo's JVM max heap (-Xmx) is set too small, so it throws OutOfMemoryError on start.")
    assert not passes("hotel-request-too-large-rate",
                      "The rate Deployment asks for more CPUs than any node has, so its pod stays Pending.")
    # a correct text that also names the healthy field keeps passing
    assert passes(pid, "geo's CPU limit is fine, but its memory limit was lowered to 12Mi, so the container is OOMKilled.")
    assert passes("hotel-request-too-large-rate", "The rate Deployment's memory request is 512Gi, more than any node "
                                                  "can offer, so its pod stays Pending.")


def test_a_probe_has_where_it_asks_and_how_hard_it_checks(passes):
    # the truth made the probe's timings aggressive: its path is another field
    pid = "social-liveness-aggressive-home-timeline-service"
    assert not passes(pid, "home-timeline-service keeps restarting because its liveness probe path is wrong.")
    assert passes(pid, "home-timeline-service keeps restarting because its liveness probe has no initial delay, runs "
                       "every second and gives up after one failure.")
    assert passes(pid, "home-timeline-service's liveness probe checks the right path, but it has no initial delay and a "
                       "failure threshold of 1, so the container is killed before it is up.")


def test_network_emulation_delay_is_not_loss_and_psa_warn_is_not_enforce(passes):
    assert not passes("hotel-network-delay-geo", "The node hosting geo has netem dropping 60% of packets, so geo's "
                                                 "calls time out.")
    assert passes("hotel-network-delay-geo", "The node hosting geo has a netem delay of 1500 ms on its interface, so "
                                             "every call to geo is slow.")
    assert not passes("hotel-psa-restricted-profile",
                      "The hotel-reservation namespace got the label pod-security.kubernetes.io/warn=restricted, so "
                      "profile's pods are rejected.")
    assert passes("hotel-psa-restricted-profile",
                  "The hotel-reservation namespace got the label pod-security.kubernetes.io/enforce=restricted, so "
                  "profile's pods, which do not set the restricted securityContext, are rejected.")


def test_another_setting_of_the_same_server_or_kubelet_is_another_field(passes):
    assert not passes("social-db-require-tls-url-shorten-postgres",
                      "url-shorten-postgres's pg_hba.conf was changed from scram to md5 for url-shorten-service's user, "
                      "so its logins are refused.")
    assert not passes("hotel-kubelet-eviction-threshold-postgres-rate",
                      "The kubelet configuration of postgres-rate's node has its image GC thresholds swapped, so the "
                      "kubelet crash-loops and postgres-rate is evicted.")


def test_another_environment_variable_is_another_field(passes):
    pid = "astronomy-env-shadowing-frontend"
    assert not passes(pid, "frontend's PRODUCT_CATALOG_ADDR is defined twice and the later entry shadows the right "
                           "value, so frontend cannot reach product-catalog.")
    assert passes(pid, "frontend's CART_ADDR is defined twice and the later entry (localhost:7070) shadows the right "
                       "value, so frontend cannot reach cart.")


_HONEST = ("geo's Deployment image in hotel-reservation was changed to sregym/hotel-reservation:v9.9.9-missing, a tag "
           "that does not exist, so its new pod is stuck in ImagePullBackOff and geo has no ready endpoint; search's "
           "geo lookups fail.")


def test_a_step_of_the_fix_that_says_what_was_changed_adds_a_cause(passes):
    # red-team finding D: a second cause said inside a remediation step is asserted; a step that only says what to do
    # asserts nothing
    assert passes("hotel-wrong-image-geo", _HONEST)
    assert not passes("hotel-wrong-image-geo", _HONEST + "\nFix: 1. restore the image tag; 2. raise geo's memory limit "
                                                         "back to 256Mi: it was lowered to 12Mi.")
    assert not passes("hotel-wrong-image-geo", _HONEST + "\nFix:\n1. restore the image tag\n2. raise geo's memory limit "
                                                         "back to 256Mi: it was lowered to 12Mi")
    assert passes("hotel-wrong-image-geo", _HONEST + "\nFix: 1. restore the image tag; 2. then restart the pod.")
    assert passes("hotel-wrong-image-geo", _HONEST + "\nFix:\n1. restore the image tag\n2. then restart the pod")


def test_one_verb_two_changes_adds_a_cause(passes):
    assert not passes("hotel-wrong-image-geo",
                      "geo's Deployment image was changed to sregym/hotel-reservation:v9.9.9-missing, a tag that does "
                      "not exist, and its memory limit to 12Mi, so its new pod is stuck in ImagePullBackOff.")
    # a second part of the truth's own change after "and" is not another cause
    assert passes("social-anti-affinity-deadlock-compose-post-service",
                  "compose-post-service has a required pod anti-affinity on kubernetes.io/hostname and its replica "
                  "count was raised to one more than the number of nodes, so the extra replica stays Pending.")


def test_the_container_said_to_listen_elsewhere_is_not_the_services_port(passes):
    # the Service's side changed: a container said to have been moved to another port is the other object's change
    pid = "social-wrong-target-port-user-service"
    assert not passes(pid, "The user-service container was changed to listen on 9091 while its Service still targets "
                           "9090, so calls to user-service are refused.")
    assert passes(pid, "user-service's Service targetPort was changed to 9091 while the container listens on 9090, so "
                       "calls to user-service are refused.")


def test_a_nodes_connection_settings_and_a_volumes_fields_are_told_apart(passes):
    assert not passes("hotel-ephemeral-ports-geo", "geo fails with EADDRNOTAVAIL because the sysctl somaxconn was set "
                                                   "very low on its pod.")
    assert passes("hotel-ephemeral-ports-geo", "geo's pod has net.ipv4.ip_local_port_range narrowed to 32000-32003, so "
                                               "its outgoing calls fail with EADDRNOTAVAIL.")
    assert not passes("hotel-pvc-rwo-shared-frontend", "The shared disk the frontend replicas mount is too small, so "
                                                       "the replicas on other nodes cannot start.")
