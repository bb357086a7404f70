"""The judge's twentieth round (issue #35): readings found from the misses of the tuned blind sets, each tested on
texts written for these tests (never the blind sets' own items, which stay measurement material)."""

from __future__ import annotations


def test_the_port_a_service_exposes_is_not_its_target_port(passes):
    right = ("The user Service's targetPort was moved to 8087, a port nothing in the user pods listens on, so every "
             "call to user is refused.")
    assert passes("hotel-wrong-target-port-user", right)
    assert passes("hotel-wrong-target-port-user", "The user Service's target port is 8087 while the user container "
                                                  "listens on 8086, so connections to user are refused.")
    # the Service's other port (the one clients dial), or the container's own: the right object, another field
    for other in ("The user Service now exposes the wrong front port, so clients dialling user on 8086 get nothing; "
                  "put the Service's port back.",
                  "The user Service's external port was changed, so callers dial a port the Service no longer offers."):
        assert not passes("hotel-wrong-target-port-user", other)


def test_having_none_of_what_the_fault_added_denies_it_and_having_none_of_what_it_took_states_it(passes):
    # the fault added a taint: "the nodes have no taint" denies it, whatever else the text blames
    assert not passes("social-taint-no-toleration-post-storage-service",
                      "The nodes have no taint, I checked. post-storage-service is Pending because of its image.")
    assert passes("social-taint-no-toleration-post-storage-service",
                  "The node carries a NoSchedule taint that post-storage-service does not tolerate, so its pod stays "
                  "Pending.")
    # the fault took a permission away: "has no permission" is the fault itself
    assert passes("astronomy-sa-missing-permission-frontend-proxy",
                  "frontend-proxy's ServiceAccount has no RBAC permission to get configmaps, so its config-sync init "
                  "container is forbidden and the pod never starts.")


_HONEST = ("geo's Deployment image in hotel-reservation was changed to sregym/hotel-reservation:v9.9.9-missing, a tag "
           "that does not exist, so its new pod is stuck in ImagePullBackOff and geo has no ready endpoint; search's "
           "geo lookups fail.")


def test_a_second_cause_asked_and_answered_yes_or_kept_open_adds_a_cause(passes):
    # red-team round 17, finding D: a false second cause as a question the next sentence answers, and as a cause the
    # writer says it has not ruled out beside the one it ranks first
    assert passes("hotel-wrong-image-geo", _HONEST)
    assert not passes("hotel-wrong-image-geo", _HONEST + " Was geo's memory limit lowered to 12Mi too? Yes, and geo is "
                                                         "OOMKilled.")
    assert not passes("hotel-wrong-image-geo", "Most likely: " + _HONEST + " Not ruled out: geo's memory limit was "
                                                                           "lowered to 12Mi, so geo is OOMKilled.")
    # a question left open, or answered no, and a cause ruled out, add nothing
    assert passes("hotel-wrong-image-geo", _HONEST + " Was geo's memory limit lowered too? No, it is 256Mi as deployed.")
    assert passes("hotel-wrong-image-geo", _HONEST + " Ruled out: geo's memory limit, it is unchanged.")
