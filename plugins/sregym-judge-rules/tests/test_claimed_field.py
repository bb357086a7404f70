"""The seventh round of issue #35: what a sentence claims was changed on the faulty object, and status-update voices.

Each reading is tested on texts written for these tests, against truths written here (a ledger app of no labelled
item): the truth's own field given another value; a defect of another family on the right object (a certificate for
the wrong host name when it expired, a Role widened when it was made read-only, a binding's subject when the Role
lacks a rule, a pull secret when the tag does not exist, a limit too small when a job floods it); and a status update
that lists steps, a finding and the next action, where the finding is the claim and the steps and actions are not.
"""

from __future__ import annotations

from sregym_judge_rules import RulesJudge, claims, reading, text

from sregym_core.types import GroundTruth

LEDGER = ("gateway", "accounts", "accounts-db", "journal", "reports", "ledger-cache", "notifier")

HOOKS = GroundTruth(
    fault="admission-webhook-timeouts", layer="k8s", components=("journal",), namespace="ledger",
    resource_kind="MutatingWebhookConfiguration",
    mechanism="four mutating webhooks with failurePolicy Ignore each wait out their timeoutSeconds on a slow server; "
              "serially they exceed the API server's one-minute request deadline, so every pod create in the namespace "
              "times out",
    mutated_values={"webhooks": 4, "service": "ledger-hooks", "timeout_seconds": 20, "failurePolicy": "Ignore"})
RUN_AS = GroundTruth(
    fault="datastore-invalid-run-as-user", layer="k8s", components=("accounts-db",), namespace="ledger",
    resource_kind="DatastoreCluster",
    mechanism="the DatastoreCluster's spec.securityContext.runAsUser is negative; the API server refuses the StatefulSet "
              "the operator derives from it",
    mutated_values={"resource": "DatastoreCluster/accounts-db", "field": "spec.securityContext",
                    "before": {"runAsUser": 999, "fsGroup": 999}, "after": {"runAsUser": -1, "fsGroup": 999}},
    vocabulary=("datastorecluster", "custom resource", "runAsUser", "run as user", "securityContext", "negative uid"))
CERT = GroundTruth(
    fault="ingress-tls-expired", layer="k8s", components=("gateway",), namespace="ledger", resource_kind="Secret",
    mechanism="the TLS Secret the app's Ingress serves was overwritten with an expired certificate; the renewed "
              "certificate sits unused in another Secret, so clients verifying TLS reject the handshake",
    mutated_values={"secret": "gateway-tls", "host": "ledger.example.test", "not_after": "a date in the past"})
READ_ONLY = GroundTruth(
    fault="finalizer-deadlock", layer="k8s", components=("reports",), namespace="ledger", resource_kind="ConfigMap",
    mechanism="the ledger-guard controller's Role was made read-only (get/list/watch), so it cannot remove its finalizer "
              "from the settings ConfigMap whose deletion a config rotation requested: the ConfigMap stays Terminating",
    mutated_values={"controller": "ledger-guard", "role": "ledger-guard", "config_map": "reports-settings"})
NO_RULE = GroundTruth(
    fault="sa-missing-permission", layer="k8s", components=("notifier",), namespace="ledger", resource_kind="Role",
    mechanism="the pod's ServiceAccount may not get ConfigMaps (its Role has no configmaps rule), so the init container "
              "that reads the ConfigMap through the Kubernetes API gets 403 Forbidden",
    mutated_values={"account": "notifier-sync", "role": "notifier-config-reader", "config_map": "notifier-config"})
TAG = GroundTruth(
    fault="wrong-image", layer="k8s", components=("accounts",), namespace="ledger", resource_kind="Deployment",
    mechanism="container image set to a tag that does not exist",
    mutated_values={"image": {"before": "ledger/accounts:1.0", "after": "ledger/accounts:9.9.9-missing"}})
PORT = GroundTruth(
    fault="service-port-mismatch", layer="k8s", components=("journal",), namespace="ledger", resource_kind="Service",
    mechanism="Service port changed from the one clients use", mutated_values={"port": {"before": 7070, "after": 7080}})


def _ledger(text_: str, truth: GroundTruth) -> bool:
    return RulesJudge().judge(text_, (truth,), app_components=LEDGER, app_namespace="ledger").passed


# --- the truth's own field, another value -----------------------------------------------------------------------


def test_the_truths_field_given_another_value_is_not_its_change():
    assert _ledger("The ledger-hooks mutating webhooks (failurePolicy: Ignore) each wait out their 20 s timeoutSeconds on "
                   "a slow server; together they exceed the API server's deadline, so every journal pod create times out.",
                   HOOKS)
    # the same key with the other value, as a key and value or with a verb
    assert not _ledger("The ledger-hooks webhooks have failurePolicy: Fail and their server is slow, so every journal "
                       "pod create is rejected.", HOOKS)
    assert not _ledger("accounts-db: the DatastoreCluster spec.securityContext.runAsUser was set to 0 (root), so Pod "
                       "Security rejects the datastore pods.", RUN_AS)
    assert not _ledger("In the accounts-db custom resource the securityContext fsGroup was changed to 0, so the "
                       "datastore cannot write its volume.", RUN_AS)
    assert _ledger("accounts-db: the DatastoreCluster spec.securityContext.runAsUser was set to -1, a negative uid, so "
                   "the API server refuses the StatefulSet the operator derives from it.", RUN_AS)


def test_a_value_is_read_as_written_and_only_where_one_is_given():
    values = claims.field_values(RUN_AS.mutated_values)
    assert values == {"runAsUser": {"-1"}, "fsGroup": {"999"}}
    assert list(claims._claims("spec.securityContext.runAsUser set to 0 (root)", "runAsUser")) == ["0"]
    assert list(claims._claims("updateStrategy was changed from RollingUpdate to \"Rolling\"", "updateStrategy")) == ["Rolling"]
    # a bare "is" gives no value unless it is a number or quoted; a kind's name is not the field
    assert list(claims._claims("the configMap is never removed", "config_map")) == []
    assert list(claims._claims("The ConfigMap: Terminating", "config_map")) == []
    # the same number in another unit is the same value
    assert not claims.other_value("timeoutSeconds: 20s on each webhook", {"timeout_seconds": 20})
    assert claims.other_value("timeoutSeconds: 5 on each webhook", {"timeout_seconds": 20})


def test_a_key_and_its_value_stay_in_one_sentence():
    found = reading.sentences("the hooks have failurePolicy: Fail and the backend is slow")
    assert len(found) == 1 and "failurepolicy: fail" in found[0].flat


# --- the right object, a defect of another family ---------------------------------------------------------------


def test_a_defect_of_another_family_on_the_right_object_is_another_fault():
    assert _ledger("The gateway-tls Secret the Ingress serves holds an expired certificate (notAfter in the past), so "
                   "clients reject the TLS handshake with gateway.", CERT)
    assert not _ledger("The gateway-tls Secret of the Ingress has a certificate for the wrong hostname (SAN mismatch), "
                       "so browsers reject the gateway handshake.", CERT)
    assert _ledger("ledger-guard's Role was made read-only, so it cannot remove its finalizer from reports-settings, which "
                   "stays Terminating and blocks new reports pods.", READ_ONLY)
    assert not _ledger("ledger-guard's Role was widened (it got delete on configmaps), so the controller deleted "
                       "reports-settings itself and reports pods fail.", READ_ONLY)
    assert not _ledger("The notifier Role grants get on configmaps, but the RoleBinding binds it to the default "
                       "ServiceAccount instead of notifier-sync, so notifier's init container is forbidden.", NO_RULE)
    assert _ledger("accounts' Deployment image was set to ledger/accounts:9.9.9-missing, a tag that does not exist, so "
                   "accounts pods sit in ImagePullBackOff.", TAG)
    assert not _ledger("accounts pods cannot pull their image because the imagePullSecret for the registry is missing "
                       "from the pod spec, so the registry refuses the pull.", TAG)


def test_families_are_read_from_everything_the_truth_names():
    assert claims.families(text.flatten("the certificate for the wrong hostname (SAN mismatch)")) == {"host-name"}
    assert "expiry" in claims.families(text.flatten(CERT.mechanism))
    # a family the truth states is never foreign to it; a truth of no known family is not read this way
    assert not claims.other_family(text.flatten("the cert expired and its SAN is wrong"), text.flatten(CERT.mechanism))
    assert not claims.other_family(text.flatten("the Service has no endpoints"), text.flatten(PORT.mechanism))
    # a NetworkPolicy's "no ingress rules" is not a Role without a rule
    assert "permission-narrowed" not in claims.families(text.flatten("policyTypes Ingress and no ingress rules"))


# --- status updates: steps, a finding, the next action ----------------------------------------------------------


def test_a_status_update_is_read_by_its_finding():
    update = ("Status: journal unreachable since the 10:00 deploy. Steps: compared gateway's JOURNAL_ADDR with the journal "
              "Service spec. Finding: the journal Service port was changed from 7070 to 7080, the port clients use is "
              "gone, so every call from gateway is refused. Next: change the Service port back to 7070.")
    assert _ledger(update, PORT)
    # a labelled status line is prose, not a describe block's field
    prose, _pasted = reading.split_prose("Status: journal unreachable since the deploy, every call refused")
    assert prose.startswith("Status:")
    prose, pasted = reading.split_prose("Status:   Running")
    assert not prose and pasted


def test_actions_named_as_next_steps_are_not_claims():
    # the mechanism only in what is to be done: no claim that it is what broke
    assert not _ledger("Update: accounts pods are in ImagePullBackOff. Next: set the accounts image tag back to 1.0, "
                       "the tag 9.9.9-missing does not exist.", TAG)
    assert not _ledger("accounts pods are in ImagePullBackOff.\n## Fix\nRoll the accounts image back from the missing "
                       "9.9.9-missing tag to 1.0.", TAG)
    for action in ("Next action: delete the pod", "Fix: raise the limit", "Roll back the image", "Set it back to 1.0",
                   "Revert the change"):
        assert all(s.action for s in reading.sentences(action)), action
    for claim in ("Update: the Service port was changed", "Changed the port to 7080 at 10:00", "Drop in traffic at 10:00",
                  "The fix is not obvious"):
        assert not any(s.action for s in reading.sentences(claim)), claim


def test_steps_taken_assert_nothing():
    # the faulty object's name in a list of steps is no finding
    steps = reading.sentences("Tool calls: get pods, logs -c notifier-sync (403 Forbidden), get role -o yaml.")
    assert steps and set(steps[0].flat) <= {"#", " "}


def test_a_type_of_value_is_not_the_generated_object():
    strategy = GroundTruth(
        fault="datastore-invalid-update-strategy", layer="k8s", components=("accounts-db",), namespace="ledger",
        resource_kind="DatastoreCluster",
        mechanism="the DatastoreCluster's spec.updateStrategy is not a StatefulSet update strategy type; the API server "
                  "refuses the StatefulSet the operator derives from it",
        mutated_values={"field": "spec.updateStrategy", "before": "RollingUpdate", "after": "Rolling"},
        vocabulary=("datastorecluster", "custom resource", "update strategy", "updateStrategy", "invalid strategy"))
    assert _ledger("accounts-db: spec.updateStrategy was changed from RollingUpdate to \"Rolling\", which is not a "
                   "StatefulSet update strategy.", strategy)
