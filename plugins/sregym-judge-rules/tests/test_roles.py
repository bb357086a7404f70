"""The fifth round of issue #35: who does what to whom, and the mechanism said in plain English.

Each reading is tested on texts written for these tests, against truths written here (components and wordings of
no labelled item): a concept said in several words with others between them (a gloss, shared by every fault whose
statement has the concept), a quantity in the writer's unit, an effect stated before the cause that explains it,
a datastore described by what it keeps, and JSON fields that wrap candidates or what was checked.
"""

from __future__ import annotations

from sregym_judge_rules import RulesJudge, concepts, quantity, text
from sregym_judge_rules.reading import json_as_prose

from sregym_core.types import GroundTruth

SOCIAL = ("nginx-web", "compose-post-service", "home-timeline-service", "home-timeline-redis", "user-timeline-service",
          "user-timeline-redis", "user-memcached", "user-service", "media-service", "post-storage-service",
          "post-storage-mongodb", "social-graph-service")
BOOKS = ("storefront", "catalog", "orders", "orders-db", "inventory", "payments", "search")

SPREAD = GroundTruth(
    fault="anti-affinity-deadlock", layer="k8s", components=("orders",), namespace="books", resource_kind="Deployment",
    mechanism="required pod anti-affinity with more replicas than nodes", mutated_values={"replicas": 5})
ZONE = GroundTruth(
    fault="dns-stale-zone", layer="network", components=("catalog",), namespace="books", resource_kind="ConfigMap",
    mechanism="a CoreDNS template in kube-system/coredns answers NXDOMAIN for the whole svc zone",
    mutated_values={"zone": "svc.cluster.local", "configmap": "kube-system/coredns"})
SLOW = GroundTruth(
    fault="network-delay", layer="network", components=("inventory",), namespace="books", resource_kind="Node",
    mechanism="network delay on the node hosting the target's pods",
    mutated_values={"delay_ms": 2500, "jitter_ms": 100, "node": "(unknown)"})
BLOCKS = GroundTruth(
    fault="disk-bad-blocks", layer="storage", components=("orders-db",), namespace="books", resource_kind="PersistentVolume",
    mechanism="bad blocks on the volume's disk: reads of them fail with EIO", mutated_values={"fraction": 0.3})
AUTH = GroundTruth(
    fault="cache-auth", layer="datastore", components=("user-timeline-redis",), namespace="social",
    resource_kind="Deployment",
    mechanism="Redis requirepass was turned on in the cache's startup arguments (its Deployment), and its clients were "
              "not given the password", mutated_values={"requirepass": "set"})


def _books(text_: str, truth: GroundTruth) -> bool:
    return RulesJudge().judge(text_, (truth,), app_components=BOOKS, app_namespace="books").passed


def _social(text_: str, truth: GroundTruth) -> bool:
    return RulesJudge().judge(text_, (truth,), app_components=SOCIAL, app_namespace="social").passed


# --- a concept said in several words (glosses) -------------------------------------------------------------


def test_a_rule_against_two_copies_on_one_machine_is_a_required_anti_affinity():
    found = {c for c, _span in concepts.present(text.flatten("no two of the copies can run on the same host"),
                                                SPREAD.mechanism)}
    assert {"anti", "affinity", "requir"} <= found
    assert _books("Root cause: orders must keep its copies apart, no two of them may sit on the same machine, and it "
                  "asks for more copies than the cluster has machines; the extra ones are never scheduled.", SPREAD)


def test_a_gloss_carries_one_concept_per_word_not_three_for_one_word():
    from sregym_judge_rules import rules

    # a compound of one word ("requiredAntiAffinity") still counts once, as "failurePolicy" does
    assert rules._statement_hit(text.flatten("orders requiredantiaffinityrules more"), SPREAD, SPREAD.mechanism) is None
    # a wording of several words carries each concept it says
    assert rules._statement_hit(text.flatten("no two copies may share a machine, more copies than machines"), SPREAD,
                                SPREAD.mechanism) is not None


def test_the_name_does_not_exist_for_every_service_is_the_stale_zone():
    assert _books("The cluster's DNS server has a leftover rule that answers that every service name does not "
                  "exist, so catalog cannot be found by anyone.", ZONE)


def test_the_same_words_about_one_name_only_are_not_the_whole_zone_without_the_rest():
    assert not _books("catalog's pods crash on start; the name does not exist error shows in their logs.", ZONE)


def test_a_quantity_in_the_writers_unit_counts_as_the_truths_value():
    assert quantity.find_quantity("held back by two seconds and a half", {"delay_ms": 2500}) is not None
    assert quantity.find_quantity("by half a second", {"delay_ms": 500}) is not None
    assert _books("Replies from the inventory pods are held back by two seconds and a half on the network of the "
                  "machine they run on.", SLOW)


# --- who does what to whom --------------------------------------------------------------------------------


def test_the_truths_symptom_as_the_effect_of_another_cause_is_not_its_mechanism():
    # "the I/O errors come from <another cause>": the errors are what the other cause does, not bad blocks
    assert not _books("orders-db's disk checks out clean. The input/output errors come from a corrupt PostgreSQL "
                      "buffer cache, we restart orders-db.", BLOCKS)
    assert not _books("orders-db reads fail with EIO because of a memory leak in the orders service.", BLOCKS)


def test_the_effect_first_and_the_truths_own_cause_after_it_still_passes():
    assert _books("orders-db reads fail with EIO because its disk has bad blocks: a third of them cannot be read.",
                  BLOCKS)


# --- the faulty component by what it keeps ----------------------------------------------------------------


def test_a_store_of_a_multi_word_owner_described_by_what_it_keeps():
    pattern = text.description_pattern("user-timeline-redis", frozenset(SOCIAL))
    assert pattern is not None and pattern.search("the cache that holds the user timelines")
    assert _social("Root cause: the cache that holds users' user timelines was restarted to demand a password, and "
                   "the services that read it were never given one, so every call to it is refused.", AUTH)


def test_the_description_names_the_store_not_its_owners_other_store():
    # home-timeline-redis keeps home timelines; the user timelines' cache is another component
    assert not _social("Root cause: the cache that holds the home timelines was restarted to demand a password, and "
                       "the services that read it were never given one.", AUTH)


# --- JSON fields that wrap candidates or checks -----------------------------------------------------------


def test_json_candidates_wrapped_in_one_field_stay_candidates():
    prose = json_as_prose('{"likely_causes": {"requirepass set on user-timeline-redis": "60%", '
                          '"network policy change": "40%"}}')
    assert prose.startswith("It could be that")
    assert not _social('{"root_cause_candidates": {"user-timeline-redis requirepass turned on, clients lack it": '
                       '"likely", "user-timeline-redis evicting keys": "possible"}}', AUTH)


def test_json_what_was_checked_is_no_claim():
    assert "checked" not in json_as_prose('{"checked": {"requirepass on user-timeline-redis": "not set"}, '
                                          '"root_cause": "user-timeline-service has a connection leak"}')


# --- the right object, the wrong relation ---------------------------------------------------------------

BIG = GroundTruth(
    fault="request-too-large", layer="k8s", components=("payments",), namespace="books", resource_kind="Deployment",
    mechanism="memory request larger than any node can offer", mutated_values={"resources.requests.memory": "640Gi"})
SHM = GroundTruth(
    fault="shm-too-small", layer="os", components=("orders-db",), namespace="books", resource_kind="StatefulSet",
    mechanism="the memory-backed emptyDir mounted at /dev/shm has a sizeLimit smaller than PostgreSQL's dynamic shared "
              "memory control segment: No space left on device", mutated_values={"size": "32Ki", "volume": "dshm"},
    vocabulary=("init container + shm", "shm .. too small", "sizelimit"))


def test_the_twin_field_of_the_faulty_object_is_another_fault():
    assert _books("payments asks for a memory request of 640Gi, more than any node has, so it stays Pending.", BIG)
    # the same value said of the limit: the right object, the other field of the pair
    assert not _books("The memory limit of payments is 640Gi, so it may use too much memory and starve the node.", BIG)


def test_an_actor_the_truth_never_mentions_doing_it_is_the_sibling_fault():
    assert _books("orders-db cannot start: its /dev/shm volume has a sizeLimit of 32Ki, too small for PostgreSQL's "
                  "shared memory segment.", SHM)
    # an init container filling /dev/shm shares the words, not the actor: that is the exhaustion fault
    assert not _books("An init container in orders-db fills /dev/shm with a large file, so PostgreSQL cannot start.",
                      SHM)


# --- what is left open or cleared -------------------------------------------------------------------------


def test_one_or_more_of_and_an_undetermined_share_hedge():
    assert not _books("The failures are attributed to one or more of: a memory request of 640Gi on payments, the node "
                      "pool size, or the scheduler.", BIG)
    assert not _books("payments' memory request of 640Gi may matter; which factor dominates is undetermined.", BIG)


def test_a_value_called_the_usual_setting_is_cleared():
    assert not _books("The 32Ki sizeLimit on orders-db's /dev/shm is the usual setting for this chart. The crash is a "
                      "corrupt WAL segment.", SHM)


def test_a_kind_and_name_written_kubectl_style_is_the_object():
    assert text.normalize("svc/catalog deleted") == "service/catalog deleted"
    assert text.normalize("w/o it, b/c of that") == "without it, because of that"


def test_plain_english_glosses_of_webhook_and_class_concepts():
    webhook = {c for c, _s in concepts.present(
        text.flatten("a security check that Kubernetes must call before creating any pod is set to refuse when it "
                     "cannot be reached"),
        "validating admission webhook with failurePolicy Fail whose server has no ready endpoint")}
    assert {"webhook", "failur", "policy", "fail"} <= webhook
    found = {c for c, _s in concepts.present(text.flatten("not allowed enough open files"),
                                             "open-file descriptor limit set far too low")}
    assert "low" in found


# --- a fault's own vocabulary: what was done, not what one sees ---------------------------------------------

CR = GroundTruth(
    fault="crd-invalid-effect", layer="k8s", components=("orders-db",), namespace="books", resource_kind="BookStore",
    mechanism="a toleration in the BookStore's spec has an invalid effect; the API server refuses the StatefulSet the "
              "operator derives from it",
    mutated_values={"tolerations": {"before": "NoSchedule", "after": "NoSchedulin"}},
    symptoms=("BookStore phase Failed", "StatefulSetRejected"),
    vocabulary=("bookstore", "invalid effect", "toleration effect", "StatefulSetRejected", "rejected", "does not exist",
                "-1", "scaled"))


def test_vocabulary_entries_that_are_symptoms_or_generic_words_do_not_read_a_mechanism():
    from sregym_judge_rules import rules

    kept = rules._saying_vocabulary(CR.vocabulary, CR.symptoms, CR.mechanism)
    # the kind alone names the custom resource, not what was done to it, even though its statement names it (sixth
    # round of issue #35: "runAsUser -1 in the BookStore" is another field of the same resource)
    assert kept == ("invalid effect", "toleration effect")
    # a phrase the fault's own statement says is its mechanism stays, even where it is also what one sees; one word
    # that names a thing or a state ("NXDOMAIN": a deleted Service answers it too) does not
    assert "answers nxdomain" in rules._saying_vocabulary(("answers nxdomain",), ("NXDOMAIN",), "a template answers NXDOMAIN")
    assert "nxdomain" not in rules._saying_vocabulary(("nxdomain",), ("NXDOMAIN",), "a template answers NXDOMAIN")
    # a symptom the statement says only as what follows (after ": ", in brackets) is no mechanism it states
    assert not rules._saying_vocabulary(("terminating", "insufficient cpu"), ("Terminating", "Insufficient cpu"),
                                        "the Role was made read-only: the ConfigMap stays Terminating (Insufficient cpu)")
    assert not _books("The orders-db pods are unhealthy (StatefulSetRejected), so every request that needs orders-db "
                      "fails with errors.", CR)
    assert not _books("The orders-db image was changed to a tag that does not exist, so its pods cannot pull it.", CR)
    assert _books("orders-db's BookStore has a toleration with an invalid effect (NoSchedulin), so the API server "
                  "refuses the StatefulSet the operator writes and orders-db never comes up.", CR)


def test_a_kind_written_in_capitals_names_a_thing_and_a_field_says_what_changed():
    from sregym_judge_rules import rules

    assert rules._names_an_object("DatastoreCluster") and rules._names_an_object("NetworkPolicy")
    assert not rules._names_an_object("storageClassName") and not rules._names_an_object("runAsUser")


def test_one_name_only_is_not_a_cause_that_covers_the_whole():
    assert _books("A stale CoreDNS template in kube-system/coredns answers NXDOMAIN for every name of the svc zone, so "
                  "catalog cannot be resolved.", ZONE)
    assert not _books("coredns has a template answering NXDOMAIN only for catalog.books.svc.cluster.local, the other "
                      "names resolve.", ZONE)
