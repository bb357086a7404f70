"""Which ServiceAccount a pod may run as (account_admission.py), driven with real kubectl as a
namespace admin who is not a cluster admin (the agent's shape): an app's operator account, bound to
rights the writer lacks, cannot be borrowed by a new pod, a pod template, a token request or a
legacy token Secret; the account an object already names may stay; an account the writer made and
bound within its own rights may be named; an account the benchmark wrote into a workload may be put back.
Nor may such a writer enter a pod running as such an account (exec, attach, cp, an ephemeral
container), or change what such a pod or pod template runs (command, args, exec probes and hooks)
except back to what the benchmark wrote; logs, the image and env stay open."""

from __future__ import annotations

import json

from conftest import NODE, ensure_node
from sregym_cluster_embedded.apiserver.store import clone

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
    for image in ("op:1", "op:2", "op:3", "op:bad"):  # images the benchmark wrote (the deploy, faults)
        _apply(kubectl, _deployment(namespace, "operator", "operator", image=image), check=True)
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


def _running_as(api_server, namespace: str, name: str, account: str | None) -> None:
    """A pod of the benchmark's, bound and Running (no kubelet runs here), as ``account``."""
    ensure_node(api_server)
    core = api_server.core

    def make() -> None:
        pods = core.registry.by_key("pods")
        spec = {"nodeName": NODE, "terminationGracePeriodSeconds": 0,
                "containers": [{"name": "main", "image": "busybox"}]}
        if account:
            spec["serviceAccountName"] = account
        core.create(pods, namespace, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec})
        obj = clone(core.get(pods, namespace, name))
        stamp = "2026-01-01T00:00:00Z"
        obj["status"] = {"phase": "Running", "podIP": "127.40.1.9", "hostIP": "127.40.1.1", "startTime": stamp,
                         "conditions": [{"type": t, "status": "True", "lastTransitionTime": stamp}
                                        for t in ("Initialized", "Ready", "ContainersReady", "PodScheduled")],
                         "containerStatuses": [{"name": "main", "ready": True, "restartCount": 0, "image": "busybox",
                                                "imageID": "", "started": True,
                                                "state": {"running": {"startedAt": stamp}}}]}
        core.update(pods, namespace, name, obj, subresource="status")

    api_server.call(make)


def _entry_refused(done, sub: str, pod: str = "op") -> None:
    assert done.returncode != 0, done.stdout
    assert f'pods "{pod}" is forbidden: pods/{sub}: Forbidden: ServiceAccount "operator" holds rights' in done.stderr, \
        done.stderr
    assert 'Resources:["pods/status"]' in done.stderr and "logs, describe and port-forward stay open" in done.stderr


def test_a_pod_running_as_a_stronger_account_may_not_be_entered_but_may_be_read(kubectl, api_server, namespace,
                                                                                 tmp_path):
    agent = _agent(kubectl, api_server, namespace)
    _operator(kubectl, namespace)
    _running_as(api_server, namespace, "op", "operator")
    _running_as(api_server, namespace, "plain", None)
    ns = ("-n", namespace)
    assert agent("auth", "can-i", "create", "pods/exec", *ns).stdout.strip() == "yes"
    _entry_refused(agent("exec", "op", *ns, "--", "cat", "/var/run/secrets/kubernetes.io/serviceaccount/token",
                         check=False), "exec")
    _entry_refused(agent("exec", "-i", "op", *ns, "--", "sh", input="id\n", check=False), "exec")
    _entry_refused(agent("attach", "op", "-c", "main", *ns, check=False), "attach")
    (tmp_path / "f").write_text("x")
    _entry_refused(agent("cp", str(tmp_path / "f"), f"{namespace}/op:/tmp/f", check=False), "exec")
    _entry_refused(agent("cp", f"{namespace}/op:/etc/hostname", str(tmp_path / "g"), check=False), "exec")
    debug = agent("debug", "op", *ns, "--image=busybox", "--container=dbg", "--", "sleep", "60", check=False)
    _entry_refused(debug, "ephemeralcontainers")
    stored = json.loads(agent("get", "pod", "op", *ns, "-o", "json").stdout)
    assert not stored["spec"].get("ephemeralContainers")
    # a raw update of the subresource (PUT), as a client other than kubectl debug would send it
    stored["spec"]["ephemeralContainers"] = [{"name": "dbg", "image": "busybox", "command": ["sleep", "60"]}]
    raw = agent("replace", "--subresource=ephemeralcontainers", "-f", "-", input=json.dumps(stored), check=False)
    _entry_refused(raw, "ephemeralcontainers")
    # diagnosis stays possible: logs, get, describe, events
    assert agent("logs", "op", *ns).stdout.splitlines()[-1] == "log line 5"
    assert "Service Account:  operator" in agent("describe", "pod", "op", *ns).stdout
    # a pod of an account no stronger than the agent (default here) is entered as before, and the
    # benchmark (system:masters) may enter the operator's
    assert agent("exec", "plain", *ns, "--", "echo", "in").stdout == "in\n"
    agent("debug", "plain", *ns, "--image=busybox", "--container=dbg", "--", "true")
    assert kubectl("exec", "op", *ns, "--", "echo", "admin").stdout == "admin\n"
    # once the agent holds every right of the account (here: the admin binds them to it), it may enter
    kubectl("create", "rolebinding", "agent-operator", "--role=operator", "--group=sregym:agents", *ns)
    assert agent("exec", "op", *ns, "--", "echo", "equal").stdout == "equal\n"


def _op_container(who, namespace: str, name: str = "operator") -> dict:
    obj = json.loads(who("get", "deployment", name, "-n", namespace, "-o", "json").stdout)
    return obj["spec"]["template"]["spec"]["containers"][0]


def test_what_a_pod_of_a_stronger_account_runs_may_change_only_back_to_what_the_benchmark_wrote(
        kubectl, api_server, namespace):
    agent = _agent(kubectl, api_server, namespace)
    _operator(kubectl, namespace)
    ns = ("-n", namespace)
    _apply(kubectl, _deployment(namespace, "operator", "operator", image="op:1"), check=True)
    _apply(kubectl, _deployment(namespace, "web", None), check=True)
    field = "spec.template.spec.containers[0].command"

    def patch(name: str, body: dict, kind: str = "deployment", type_: str = "strategic"):
        return agent("patch", kind, name, *ns, f"--type={type_}", "-p", json.dumps(body), check=False)

    def template(**spec) -> dict:
        return {"spec": {"template": {"spec": spec}}}

    for body, where in (
            (template(containers=[{"name": "c", "command": ["sh", "-c", "cat /var/run/secrets/*/token"]}]), field),
            (template(containers=[{"name": "c", "args": ["--evil"]}]), "spec.template.spec.containers[0].args"),
            (template(containers=[{"name": "c", "livenessProbe": {"exec": {"command": ["sh", "-c", "x"]}}}]),
             "spec.template.spec.containers[0].livenessProbe.exec.command"),
            (template(containers=[{"name": "c", "lifecycle": {"postStart": {"exec": {"command": ["x"]}}}}]),
             "spec.template.spec.containers[0].lifecycle.postStart.exec.command"),
            (template(containers=[{"name": "side", "image": "busybox", "command": ["sleep", "1"]}]),
             "spec.template.spec.containers["),  # where the merge puts the new container
            (template(initContainers=[{"name": "init", "image": "busybox", "command": ["true"]}]),
             "spec.template.spec.initContainers[0].command")):
        done = patch("operator", body)
        _refused(done, where)
        assert "other env and resources stay editable" in done.stderr
    # replace (PUT) and apply go through the same check
    current = json.loads(agent("get", "deployment", "operator", *ns, "-o", "json").stdout)
    current["spec"]["template"]["spec"]["containers"][0]["command"] = ["sleep", "1"]
    _refused(agent("replace", "-f", "-", input=json.dumps(current), check=False), field)
    evil = _deployment(namespace, "operator", "operator", image="op:1")
    evil["spec"]["template"]["spec"]["containers"][0]["args"] = ["x"]
    _refused(_apply(agent, evil), "spec.template.spec.containers[0].args")
    assert "command" not in _op_container(agent, namespace) and "args" not in _op_container(agent, namespace)
    # env, resources and an httpGet probe stay editable; the image only back to one the benchmark wrote
    _refused(agent("set", "image", "deployment/operator", "c=op:2", *ns, check=False),
             "spec.template.spec.containers[0].image")
    agent("set", "env", "deployment/operator", "LOG_LEVEL=debug", *ns)
    agent("set", "resources", "deployment/operator", "--limits=memory=128Mi", *ns)
    probe = template(containers=[{"name": "c", "readinessProbe": {"httpGet": {"path": "/healthz", "port": 8081}}}])
    assert patch("operator", probe).returncode == 0
    # the ReplicaSet (or Pod) of such an account is held to the same rule
    rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "op-rs", "namespace": namespace},
          "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "op-rs"}},
                   "template": {"metadata": {"labels": {"app": "op-rs"}},
                                "spec": {"serviceAccountName": "operator",
                                         "containers": [{"name": "c", "image": "op:1"}]}}}}
    _apply(kubectl, rs, check=True)
    _refused(patch("op-rs", template(containers=[{"name": "c", "command": ["x"]}]), kind="replicaset"), field)
    # a workload of an account no stronger than the agent may run what the agent likes
    assert patch("web", template(containers=[{"name": "c", "command": ["sleep", "9"]}])).returncode == 0
    # a fault (system:masters) gives the operator a stub command; the agent may put it back (drop it),
    # and may fix the image while the stub stays
    kubectl("patch", "deployment", "operator", *ns, "--type=json", "-p",
            '[{"op":"add","path":"/spec/template/spec/containers/0/command","value":["sleep","infinity"]}]')
    agent("set", "image", "deployment/operator", "c=op:1", *ns)
    assert patch("operator", [{"op": "remove", "path": "/spec/template/spec/containers/0/command"}],
                 type_="json").returncode == 0
    assert "command" not in _op_container(agent, namespace)
    # ...but not to a value the benchmark wrote while it ran as another account: the agent moves the
    # operator to "default" with its own command (allowed: default holds nothing), then back
    moved = patch("operator", template(serviceAccountName="default", serviceAccount="default",
                                       containers=[{"name": "c", "command": ["sh", "-c", "steal"]}]))
    assert moved.returncode == 0, moved.stderr
    kubectl("annotate", "deployment", "operator", *ns, "seen=yes")  # a benchmark write of the moved object
    _refused(patch("operator", template(serviceAccountName="operator", serviceAccount="operator")), field)
    back = patch("operator", template(serviceAccountName="operator", serviceAccount="operator",
                                      containers=[{"name": "c", "command": None}]))
    assert back.returncode == 0, back.stderr
    # deleted and made again: only as the benchmark wrote it
    agent("delete", "deployment", "operator", *ns)
    remade = _deployment(namespace, "operator", "operator", image="op:1")
    remade["spec"]["template"]["spec"]["containers"][0]["command"] = ["sh", "-c", "steal"]
    _refused(_apply(agent, remade), field)
    del remade["spec"]["template"]["spec"]["containers"][0]["command"]
    _apply(agent, remade, check=True)


def test_what_decides_the_code_a_pod_of_a_stronger_account_loads_is_held_too(kubectl, api_server, namespace):
    """Red-team round 6, finding 4: with the command held, the agent put its own module into the operator's
    process through PYTHONPATH and a ConfigMap volume. A loader variable, envFrom, the mounts, the working
    directory and the pod's volumes are held like the command; other variables and the image are not,
    and a replace (PUT) of a manifest that leaves out defaulted fields changes nothing held."""
    agent = _agent(kubectl, api_server, namespace)
    _operator(kubectl, namespace)
    ns = ("-n", namespace)
    deployed = _deployment(namespace, "operator", "operator", image="op:1")
    spec = deployed["spec"]["template"]["spec"]
    spec["volumes"] = [{"name": "conf", "configMap": {"name": "op-conf"}}]  # defaultMode left to the server
    spec["containers"][0]["volumeMounts"] = [{"name": "conf", "mountPath": "/etc/op"}]
    _apply(kubectl, deployed, check=True)
    agent("create", "configmap", "planted", "--from-literal=sitecustomize.py=print('mine')", *ns)
    prefix = "spec.template.spec.containers[0]."

    def patch(body: list) -> object:
        return agent("patch", "deployment", "operator", *ns, "--type=json", "-p", json.dumps(body), check=False)

    container = "/spec/template/spec/containers/0"
    for body, where in (
            ([{"op": "add", "path": f"{container}/env", "value": [{"name": "PYTHONPATH", "value": "/planted"}]}],
             prefix + "env[PYTHONPATH]"),
            ([{"op": "add", "path": f"{container}/env", "value": [{"name": "LD_PRELOAD", "value": "/x/lib.so"}]}],
             prefix + "env[LD_PRELOAD]"),
            ([{"op": "add", "path": f"{container}/envFrom", "value": [{"configMapRef": {"name": "planted"}}]}],
             prefix + "envFrom"),
            ([{"op": "add", "path": f"{container}/volumeMounts/-", "value": {"name": "conf", "mountPath": "/app"}}],
             prefix + "volumeMounts"),
            ([{"op": "add", "path": f"{container}/workingDir", "value": "/etc/op"}], prefix + "workingDir"),
            ([{"op": "replace", "path": "/spec/template/spec/volumes/0/configMap/name", "value": "planted"}],
             "spec.template.spec.volumes")):
        done = patch(body)
        _refused(done, where)
        assert "PYTHONPATH or LD_PRELOAD" in done.stderr
    # The same by `kubectl set env` (the tool an agent reaches for), on a Pod template as on the Deployment
    _refused(agent("set", "env", "deployment/operator", "PYTHONPATH=/planted", *ns, check=False), prefix + "env[PYTHONPATH]")
    # other variables stay editable; the image only back to one the benchmark wrote (round 6, finding 5:
    # a stand-in on another image the cluster runs)
    agent("set", "env", "deployment/operator", "LOG_LEVEL=debug", *ns)
    _refused(agent("set", "image", "deployment/operator", "c=sregym/app:1", *ns, check=False), prefix + "image")
    kubectl("set", "image", "deployment/operator", "c=op:broken", *ns)  # a wrong-image fault
    # a replace of the manifest as deployed (no defaultMode, which the server filled in) with the image fixed
    deployed["spec"]["template"]["spec"]["containers"][0]["image"] = "op:1"
    deployed["spec"]["template"]["spec"]["containers"][0]["env"] = [{"name": "LOG_LEVEL", "value": "debug"}]
    done = agent("replace", "-f", "-", input=json.dumps(deployed), check=False)
    assert done.returncode == 0, done.stderr
    held = _op_container(agent, namespace)
    assert held["image"] == "op:1" and held["volumeMounts"] == [{"name": "conf", "mountPath": "/etc/op"}]
    # a fault (system:masters) that sets a loader variable may be undone by the agent
    kubectl("set", "env", "deployment/operator", "PYTHONPATH=/broken", *ns)
    assert agent("set", "env", "deployment/operator", "PYTHONPATH-", *ns, check=False).returncode == 0
    assert "PYTHONPATH" not in json.dumps(_op_container(agent, namespace).get("env"))
