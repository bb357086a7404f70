"""Which ServiceAccount a pod may run as (account_admission.py), driven with real kubectl as a
namespace admin who is not a cluster admin (the agent's shape): an app's operator account, bound to
rights the writer lacks, cannot be borrowed by a new pod, a pod template, a token request or a
legacy token Secret; the account an object already names may stay; an account the writer made and
bound within its own rights may be named; an account the benchmark wrote into a workload may be put back."""

from __future__ import annotations

import json

OPERATOR_RULES = [
    {"apiGroups": [""], "resources": ["pods/status"], "verbs": ["get", "patch", "update"]},
    {"apiGroups": [""], "resources": ["persistentvolumeclaims"], "verbs": ["get", "list", "delete"]},
]


def _agent(kubectl, api_server, namespace):
    kubectl("create", "rolebinding", "agent", "--clusterrole=sregym:agent", "--group=sregym:agents", "-n", namespace)
    return kubectl.as_agent(api_server.agent_kubeconfig)


def _apply(who, obj: dict, check: bool = False):
    return who("apply", "-f", "-", input=json.dumps(obj), check=check)


def _operator(kubectl, namespace: str) -> None:
    """What an app's manifests deploy (as system:masters): an account bound to rights the agent lacks."""
    kubectl("create", "serviceaccount", "operator", "-n", namespace)
    _apply(kubectl, {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                     "metadata": {"name": "operator", "namespace": namespace}, "rules": OPERATOR_RULES}, check=True)
    kubectl("create", "rolebinding", "operator", "--role=operator", f"--serviceaccount={namespace}:operator",
            "-n", namespace)


def _pod(namespace: str, name: str, **spec) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace},
            "spec": {"containers": [{"name": "c", "image": "busybox", "command": ["sleep", "3600"]}], **spec}}


def _deployment(namespace: str, name: str, account: str | None, image: str = "busybox:1") -> dict:
    spec: dict = {"containers": [{"name": "c", "image": image}]}
    if account:
        spec["serviceAccountName"] = account
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": namespace},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}}, "spec": spec}}}


def _refused(done, field: str) -> None:
    assert done.returncode == 1, done.stdout
    assert "Forbidden" in done.stderr and field in done.stderr, done.stderr
    assert 'ServiceAccount "operator" holds rights' in done.stderr and 'Resources:["pods/status"]' in done.stderr


def test_a_new_pod_or_pod_template_may_not_run_as_an_account_stronger_than_its_writer(kubectl, api_server,
                                                                                        namespace):
    agent = _agent(kubectl, api_server, namespace)
    _operator(kubectl, namespace)
    # kubectl run with --overrides, as the attack did
    run = agent("run", "atk", "--image=busybox", "--restart=Never", "-n", namespace,
                '--overrides={"apiVersion":"v1","spec":{"serviceAccountName":"operator"}}', "--", "sleep", "3600",
                check=False)
    _refused(run, "spec.serviceAccountName")
    assert "forbidden" in run.stderr and 'pods "atk"' in run.stderr
    _refused(_apply(agent, _pod(namespace, "atk2", serviceAccount="operator")), "spec.serviceAccount")
    _refused(_apply(agent, _deployment(namespace, "atk3", "operator")), "spec.template.spec.serviceAccountName")
    template = {"metadata": {"labels": {"app": "x"}},
                "spec": {"serviceAccountName": "operator", "restartPolicy": "Never",
                         "containers": [{"name": "c", "image": "busybox"}]}}
    for kind, api, spec, field in (
            ("ReplicaSet", "apps/v1", {"selector": {"matchLabels": {"app": "x"}}, "template": template},
             "spec.template.spec"),
            ("StatefulSet", "apps/v1", {"serviceName": "x", "selector": {"matchLabels": {"app": "x"}},
                                        "template": template}, "spec.template.spec"),
            ("DaemonSet", "apps/v1", {"selector": {"matchLabels": {"app": "x"}}, "template": template},
             "spec.template.spec"),
            ("ReplicationController", "v1", {"selector": {"app": "x"}, "template": template}, "spec.template.spec"),
            ("Job", "batch/v1", {"template": template}, "spec.template.spec"),
            ("CronJob", "batch/v1", {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": template}}},
             "spec.jobTemplate.spec.template.spec")):
        obj = {"apiVersion": api, "kind": kind, "metadata": {"name": "atk-" + kind.lower(), "namespace": namespace},
               "spec": spec}
        _refused(_apply(agent, obj), f"{field}.serviceAccountName")
    # server-side apply goes through the same check
    ssa = agent("apply", "--server-side", "-f", "-", input=json.dumps(_deployment(namespace, "atk4", "operator")),
                check=False)
    _refused(ssa, "spec.template.spec.serviceAccountName")
    assert agent("get", "pods,deployments,jobs,cronjobs", "-n", namespace, "-o", "name").stdout.strip() == ""
    # nothing or "default" is always fine, and the benchmark (system:masters) is not held to the rule
    _apply(agent, _pod(namespace, "plain"), check=True)
    _apply(agent, _pod(namespace, "dflt", serviceAccountName="default"), check=True)
    _apply(kubectl, _pod(namespace, "by-admin", serviceAccountName="operator"), check=True)


def test_an_object_may_keep_the_account_it_already_names(kubectl, api_server, namespace):
    agent = _agent(kubectl, api_server, namespace)
    _operator(kubectl, namespace)
    _apply(kubectl, _deployment(namespace, "operator", "operator", image="op:bad"), check=True)
    _apply(kubectl, _deployment(namespace, "web", None), check=True)
    # the fix of a wrong operator image: patch, apply and replace (PUT) all keep working
    agent("set", "image", "deployment/operator", "c=op:1", "-n", namespace)
    _apply(agent, _deployment(namespace, "operator", "operator", image="op:2"), check=True)
    current = json.loads(agent("get", "deployment", "operator", "-n", namespace, "-o", "json").stdout)
    current["spec"]["template"]["spec"]["containers"][0]["image"] = "op:3"
    agent("replace", "-f", "-", input=json.dumps(current))
    agent("scale", "deployment/operator", "--replicas=2", "-n", namespace)
    agent("rollout", "restart", "deployment/operator", "-n", namespace)
    # another workload may not switch to the operator's account, by patch or by replace
    patched = agent("patch", "deployment", "web", "-n", namespace, "--type=merge", "-p",
                    '{"spec":{"template":{"spec":{"serviceAccountName":"operator"}}}}', check=False)
    _refused(patched, "spec.template.spec.serviceAccountName")
    web = json.loads(agent("get", "deployment", "web", "-n", namespace, "-o", "json").stdout)
    web["spec"]["template"]["spec"]["serviceAccountName"] = "operator"
    _refused(agent("replace", "-f", "-", input=json.dumps(web), check=False), "spec.template.spec.serviceAccountName")
    # a fault (system:masters) points the operator at another account; the agent may put it back, and may
    # restore the Deployment as the app deployed it after deleting it
    kubectl("patch", "deployment", "operator", "-n", namespace, "--type=json", "-p",
            '[{"op":"add","path":"/spec/template/spec/serviceAccountName","value":"app-runner"},'
            '{"op":"add","path":"/spec/template/spec/serviceAccount","value":"app-runner"}]')
    agent("patch", "deployment", "operator", "-n", namespace, "--type=merge", "-p",
          '{"spec":{"template":{"spec":{"serviceAccountName":"operator","serviceAccount":"operator"}}}}')
    agent("delete", "deployment", "operator", "-n", namespace)
    _apply(agent, _deployment(namespace, "operator", "operator", image="op:1"), check=True)
    # ...but not a pod of that name: pods are not restored by hand
    _apply(kubectl, _pod(namespace, "op-pod", serviceAccountName="operator"), check=True)
    kubectl("delete", "pod", "op-pod", "-n", namespace, "--grace-period=0", "--force")
    _refused(_apply(agent, _pod(namespace, "op-pod", serviceAccountName="operator")), "spec.serviceAccountName")


def test_an_account_the_writer_made_and_bound_within_its_rights_may_be_named(kubectl, api_server, namespace):
    agent = _agent(kubectl, api_server, namespace)
    _operator(kubectl, namespace)
    agent("create", "serviceaccount", "helper", "-n", namespace)
    agent("create", "role", "config-reader", "--verb=get", "--resource=configmaps", "-n", namespace)
    agent("create", "rolebinding", "config-reader", "--role=config-reader", f"--serviceaccount={namespace}:helper",
          "-n", namespace)
    agent("create", "rolebinding", "viewer", "--clusterrole=view", f"--serviceaccount={namespace}:helper",
          "-n", namespace)
    _apply(agent, _pod(namespace, "mine", serviceAccountName="helper"), check=True)
    _apply(agent, _deployment(namespace, "mine", "helper"), check=True)
    assert agent("create", "token", "helper", "-n", namespace).stdout.count(".") == 2
    # an account deleted and made again under the operator's name keeps the operator's binding: refused
    agent("delete", "serviceaccount", "operator", "-n", namespace)
    agent("create", "serviceaccount", "operator", "-n", namespace)
    _refused(_apply(agent, _pod(namespace, "again", serviceAccountName="operator")), "spec.serviceAccountName")


def test_rights_bound_cluster_wide_or_in_another_namespace_count_too(kubectl, api_server, namespace):
    agent = _agent(kubectl, api_server, namespace)
    for account in ("wide", "elsewhere"):
        kubectl("create", "serviceaccount", account, "-n", namespace)
    binding = f"{namespace}-wide"
    kubectl("create", "clusterrolebinding", binding, "--clusterrole=view", f"--serviceaccount={namespace}:wide")
    kubectl("create", "rolebinding", f"{namespace}-elsewhere", "--clusterrole=view",
            f"--serviceaccount={namespace}:elsewhere", "-n", "default")
    try:
        wide = _apply(agent, _pod(namespace, "wide", serviceAccountName="wide"))
        assert wide.returncode == 1 and "cluster-wide" in wide.stderr and "spec.serviceAccountName" in wide.stderr
        other = _apply(agent, _pod(namespace, "other", serviceAccountName="elsewhere"))
        assert other.returncode == 1 and "in namespace default" in other.stderr
    finally:
        kubectl("delete", "clusterrolebinding", binding)
        kubectl("delete", "rolebinding", f"{namespace}-elsewhere", "-n", "default")


def test_no_token_of_a_stronger_account_by_token_request_or_legacy_secret(kubectl, api_server, namespace):
    agent = _agent(kubectl, api_server, namespace)
    _operator(kubectl, namespace)
    assert agent("auth", "can-i", "create", "serviceaccounts/token", "-n", namespace).stdout.strip() == "yes"
    token = agent("create", "token", "operator", "-n", namespace, check=False)
    assert token.returncode == 1 and "Forbidden" in token.stderr and "serviceaccounts/token" in token.stderr
    assert 'Resources:["pods/status"]' in token.stderr

    def secret(name: str, account: str) -> dict:
        return {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/service-account-token",
                "metadata": {"name": name, "namespace": namespace,
                             "annotations": {"kubernetes.io/service-account.name": account}}}

    legacy = _apply(agent, secret("op-token", "operator"))
    assert legacy.returncode == 1 and "Forbidden" in legacy.stderr
    assert "metadata.annotations[kubernetes.io/service-account.name]" in legacy.stderr
    # this cluster has no token controller: even the benchmark's own legacy Secret stays without a token
    _apply(kubectl, secret("op-token", "operator"), check=True)
    stored = json.loads(agent("get", "secret", "op-token", "-n", namespace, "-o", "json").stdout)
    assert "token" not in (stored.get("data") or {})
    # ...which the agent may still edit (labels), as it names the account already
    agent("label", "secret", "op-token", "-n", namespace, "seen=yes")
    agent("create", "serviceaccount", "helper", "-n", namespace)
    _apply(agent, secret("helper-token", "helper"), check=True)
