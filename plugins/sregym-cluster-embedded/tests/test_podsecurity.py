"""Pod Security Standards checks and their messages (no server: podsecurity.py alone)."""

from __future__ import annotations

from sregym_cluster_embedded.apiserver import podsecurity as psa


def spec(**extra) -> dict:
    return {"containers": [{"name": "app", "image": "x"}], **extra}


def test_levels_from_labels() -> None:
    labels = {"pod-security.kubernetes.io/enforce": "baseline", "pod-security.kubernetes.io/warn": "restricted",
              "pod-security.kubernetes.io/warn-version": "v1.30", "pod-security.kubernetes.io/audit": "bogus"}
    assert psa.policy(labels) == {"enforce": ("baseline", "latest"), "warn": ("restricted", "v1.30"),
                                  "audit": ("restricted", "latest")}
    assert psa.policy({}) == {}


def test_privileged_level_checks_nothing() -> None:
    assert psa.evaluate("privileged", {}, spec(hostPID=True)) == []


def test_baseline_messages() -> None:
    s = spec(hostNetwork=True, hostIPC=True, volumes=[{"name": "a", "hostPath": {"path": "/"}},
                                                      {"name": "b", "hostPath": {"path": "/etc"}}])
    s["containers"] = [
        {"name": "a", "securityContext": {"privileged": True}, "ports": [{"containerPort": 80, "hostPort": 80}]},
        {"name": "b", "securityContext": {"privileged": True, "procMount": "Unmasked",
                                          "seccompProfile": {"type": "Unconfined"}}}]
    assert psa.evaluate("baseline", {}, s) == [
        "host namespaces (hostNetwork=true, hostIPC=true)",
        'hostPath volumes (volumes "a", "b")',
        'hostPort (container "a" uses hostPort 80)',
        'privileged (containers "a", "b" must not set securityContext.privileged=true)',
        'procMount (container "b" must not set securityContext.procMount to "Unmasked")',
        'seccompProfile (container "b" must not set securityContext.seccompProfile.type to "Unconfined")',
    ]


def test_baseline_allows_the_default_pod_and_default_capabilities() -> None:
    s = spec()
    s["containers"][0]["securityContext"] = {"capabilities": {"add": ["NET_BIND_SERVICE", "CHOWN"]}, "runAsUser": 0}
    assert psa.evaluate("baseline", {}, s) == []


def test_restricted_messages_for_a_default_pod() -> None:
    assert psa.evaluate("restricted", {}, spec()) == [
        'allowPrivilegeEscalation != false (container "app" must set securityContext.allowPrivilegeEscalation=false)',
        'unrestricted capabilities (container "app" must set securityContext.capabilities.drop=["ALL"])',
        'runAsNonRoot != true (pod or container "app" must set securityContext.runAsNonRoot=true)',
        'seccompProfile (pod or container "app" must set securityContext.seccompProfile.type to "RuntimeDefault" '
        'or "Localhost")',
    ]


def test_restricted_passes_a_hardened_pod() -> None:
    s = spec(securityContext={"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
             volumes=[{"name": "d", "emptyDir": {}}])
    s["containers"][0]["securityContext"] = {"allowPrivilegeEscalation": False,
                                             "capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]}}
    assert psa.evaluate("restricted", {}, s) == []


def test_enforce_message_and_template_warnings() -> None:
    labels = {"pod-security.kubernetes.io/enforce": "baseline", "pod-security.kubernetes.io/warn": "baseline"}
    pod = {"kind": "Pod", "metadata": {"name": "p"}, "spec": spec(hostPID=True)}
    assert psa.enforce(labels, pod) == \
        'pods "p" is forbidden: violates PodSecurity "baseline:latest": host namespaces (hostPID=true)'
    deployment = {"kind": "Deployment", "spec": {"template": {"spec": spec(hostPID=True)}}}
    warnings, audit = psa.warnings_and_audit(labels, deployment)
    assert warnings == ['would violate PodSecurity "baseline:latest": host namespaces (hostPID=true)']
    assert audit is None
    assert psa.warnings_and_audit(labels, {"kind": "ConfigMap"}) == ([], None)


def test_host_ports_can_be_a_known_list() -> None:
    s = spec()
    s["containers"][0]["ports"] = [{"containerPort": 80, "hostPort": 8080}, {"containerPort": 81, "hostPort": 9090}]
    assert psa.evaluate("baseline", {}, s) == ['hostPort (container "app" uses hostPorts 8080, 9090)']
    assert psa.evaluate("baseline", {}, s, {psa.ALLOWED_HOST_PORTS: "8080"}) == \
        ['hostPort (container "app" uses hostPort 9090)']
    assert psa.evaluate("baseline", {}, s, {psa.ALLOWED_HOST_PORTS: "*"}) == []
    s["hostNetwork"] = True  # the list is about ports only
    assert psa.evaluate("baseline", {}, s, {psa.ALLOWED_HOST_PORTS: "*"}) == ["host namespaces (hostNetwork=true)"]
