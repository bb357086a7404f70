"""Admission faults: webhooks that block or rewrite the app's pods, Pod Security admission.

Each is built from real Kubernetes objects (a ValidatingWebhookConfiguration or
MutatingWebhookConfiguration whose server is a Deployment + Service + TLS Secret in the app's
namespace, or a namespace label), so the same fault works on any conformant cluster whose nodes
can run the ``sregym/admission-webhook`` image.

``is_present`` asks the API server itself: a server-side dry-run create of a pod made from the
target's pod template (with the labels it had at injection, so relabelling the app's pods out of a
webhook's ``objectSelector`` is not a fix) shows whether admission still rejects or rewrites it.
"""

from __future__ import annotations

import base64
import copy
import datetime as dt
import json
from typing import TYPE_CHECKING, Any

from sregym_core.errors import FaultError, PermanentFaultError
from sregym_core.faultkit import WORKLOADS, function_fault, kube, schema
from sregym_core.types import FaultSpec, TargetSelector

if TYPE_CHECKING:
    from collections.abc import Mapping

    from sregym_core.faults import FaultContext
    from sregym_core.types import Target

IMAGE = "sregym/admission-webhook:1.0"
PORT = 8443
#: the label that keeps a webhook's own server out of its objectSelector (a real deployment's habit)
COMPONENT_LABEL = "app.kubernetes.io/component"
WEBHOOK_COMPONENT = "admission-webhook"
STATELESS = TargetSelector(kinds=WORKLOADS, exclude_roles=("workload-generator", "db:*", "cache:*"))


# --------------------------------------------------------------------------- certificates


def issue_certificates(host: str) -> tuple[bytes, bytes, bytes]:
    """(ca_pem, cert_pem, key_pem): a fresh CA and a serving certificate for ``host``."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=5)
    until = now + dt.timedelta(days=365)

    def name(common: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (x509.CertificateBuilder().subject_name(name(f"{host} webhook CA")).issuer_name(name(f"{host} webhook CA"))
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(now).not_valid_after(until)
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder().subject_name(name(host)).issuer_name(ca.subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now).not_valid_after(until)
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(host)]), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    pem = serialization.Encoding.PEM
    key_pem = key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    return ca.public_bytes(pem), cert.public_bytes(pem), key_pem


# --------------------------------------------------------------------------- the webhook's objects


def backend_objects(namespace: str, name: str, *, mode: str, replicas: int, cert: bytes, key: bytes,
                    env: dict[str, str] | None = None, ca: bytes | None = None) -> list[dict]:
    """The webhook server: TLS Secret (with ``ca.crt`` when ``ca`` is given, as cert-manager
    writes it), Deployment and Service ``name`` in ``namespace``."""
    labels = {"app": name, COMPONENT_LABEL: WEBHOOK_COMPONENT}
    variables = [{"name": "WEBHOOK_MODE", "value": mode}, {"name": "PORT", "value": str(PORT)},
                 {"name": "TLS_CERT", "value": "/tls/tls.crt"}, {"name": "TLS_KEY", "value": "/tls/tls.key"}]
    variables += [{"name": k, "value": v} for k, v in (env or {}).items()]
    return [
        {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
         "metadata": {"name": f"{name}-tls", "namespace": namespace, "labels": labels},
         "data": {"tls.crt": base64.b64encode(cert).decode(), "tls.key": base64.b64encode(key).decode(),
                  **({"ca.crt": base64.b64encode(ca).decode()} if ca else {})}},
        {"apiVersion": "apps/v1", "kind": "Deployment",
         "metadata": {"name": name, "namespace": namespace, "labels": labels},
         "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                  "template": {"metadata": {"labels": labels},
                               "spec": {"containers": [{
                                   "name": "webhook", "image": IMAGE, "env": variables,
                                   "ports": [{"name": "https", "containerPort": PORT}],
                                   "readinessProbe": {"tcpSocket": {"port": PORT}, "periodSeconds": 2},
                                   "resources": {"requests": {"cpu": "10m", "memory": "32Mi"},
                                                 "limits": {"memory": "128Mi"}},
                                   "volumeMounts": [{"name": "tls", "mountPath": "/tls", "readOnly": True}]}],
                                   "volumes": [{"name": "tls", "secret": {"secretName": f"{name}-tls"}}]}}}},
        {"apiVersion": "v1", "kind": "Service",
         "metadata": {"name": name, "namespace": namespace, "labels": labels},
         "spec": {"selector": {"app": name}, "ports": [{"name": "https", "port": 443, "targetPort": PORT}]}},
    ]


def webhook_configuration(kind: str, name: str, hook: str, namespace: str, service: str, ca: bytes, *,
                          failure_policy: str, path: str, timeout: int = 10) -> dict:
    """A webhook configuration for pod CREATE/UPDATE in ``namespace`` (the server's own pods excluded)."""
    webhook = {
        "name": hook, "admissionReviewVersions": ["v1"], "sideEffects": "None", "failurePolicy": failure_policy,
        "timeoutSeconds": timeout,
        "clientConfig": {"service": {"namespace": namespace, "name": service, "path": path, "port": 443},
                         "caBundle": base64.b64encode(ca).decode()},
        "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"],
                   "resources": ["pods"], "scope": "Namespaced"}],
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
        "objectSelector": {"matchExpressions": [{"key": COMPONENT_LABEL, "operator": "NotIn",
                                                 "values": [WEBHOOK_COMPONENT]}]},
    }
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind, "metadata": {"name": name},
            "webhooks": [webhook]}


def _create(ctx: FaultContext, objects: list[dict]) -> None:
    for obj in objects:
        kube.apply(ctx, obj)  # leaves no last-applied annotation (issue #34)


def _delete_all(ctx: FaultContext, namespace: str, name: str, config_kind: str, config_name: str) -> None:
    ctx.kubectl("delete", config_kind, config_name, "--ignore-not-found", "--wait=false")
    for kind, obj_name in (("deployment", name), ("service", name), ("secret", f"{name}-tls")):
        ctx.kubectl("delete", kind, obj_name, "-n", namespace, "--ignore-not-found", "--wait=false")


# --------------------------------------------------------------------------- admission, asked live


def probe_pod(ctx: FaultContext, target: Target) -> dict:
    """A pod built from the target's current pod template, with the labels saved at injection."""
    template = kube.workload(ctx, target)["spec"]["template"]
    labels = ctx.state.get("labels") or (template.get("metadata") or {}).get("labels") or {}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"generateName": f"{target.component.name}-admission-check-", "namespace": ctx.namespace,
                         "labels": labels},
            "spec": copy.deepcopy(template["spec"])}


def dry_run_create(ctx: FaultContext, target: Target) -> tuple[dict | None, str]:
    """(the pod admission would store, "") or (None, the API server's refusal)."""
    try:
        # admission may take the API server's whole one-minute deadline (slow webhooks)
        out = ctx.kubectl("create", "--dry-run=server", "-o", "json", "-f", "-", "-n", ctx.namespace,
                          input=json.dumps(probe_pod(ctx, target)), timeout=100.0)
    except FaultError as exc:
        return None, str(exc)
    return json.loads(out), ""


def _save_labels(ctx: FaultContext, target: Target) -> None:
    template = kube.workload(ctx, target)["spec"]["template"]
    ctx.state["labels"] = dict((template.get("metadata") or {}).get("labels") or {})


def _wait_ready(ctx: FaultContext, name: str, timeout: float = 90.0) -> None:
    ctx.kubectl("rollout", "status", f"deployment/{name}", "-n", ctx.namespace, f"--timeout={int(timeout)}s",
                timeout=timeout + 10)


# --------------------------------------------------------------------------- validating webhook outage

OUTAGE_BACKEND = "pod-policy-webhook"


def _outage_config(ctx: FaultContext) -> str:
    return f"pod-policy-{ctx.namespace}"


def outage_inject(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    _save_labels(ctx, target)
    host = f"{OUTAGE_BACKEND}.{ctx.namespace}.svc"
    ca, cert, key = issue_certificates(host)
    # the policy server is deployed but has no running replica (a botched rollout left it at zero)
    _create(ctx, backend_objects(ctx.namespace, OUTAGE_BACKEND, mode="allow", replicas=0, cert=cert, key=key))
    _create(ctx, [webhook_configuration("ValidatingWebhookConfiguration", _outage_config(ctx),
                                        "pods.pod-policy.ops.internal", ctx.namespace, OUTAGE_BACKEND, ca,
                                        failure_policy="Fail", path="/validate")])
    ctx.state.update(config=_outage_config(ctx), backend=OUTAGE_BACKEND)
    # the target's pods are replaced: their ReplicaSet now cannot create any
    kube.delete_pods(ctx, target)


def outage_present(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> bool:
    pod, refusal = dry_run_create(ctx, target)
    # a call that only ran out of time (a loaded machine, a server that is back) is not the outage
    return pod is None and "failed calling webhook" in refusal and "deadline exceeded" not in refusal


def outage_fix(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    # as an SRE would: bring the policy server back, then let the ReplicaSet create the pods
    ctx.kubectl("scale", f"deployment/{OUTAGE_BACKEND}", "-n", ctx.namespace, "--replicas=1")
    _wait_ready(ctx, OUTAGE_BACKEND)


def outage_recover(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    _delete_all(ctx, ctx.namespace, OUTAGE_BACKEND, "validatingwebhookconfiguration", _outage_config(ctx))


# --------------------------------------------------------------------------- caBundle from another CA

CA_BACKEND = "pod-admission-webhook"


def ca_mismatch_config(namespace: str) -> str:
    """The ValidatingWebhookConfiguration's name (a problem's agent_access names it)."""
    return f"pod-admission-{namespace}"


def ca_mismatch_inject(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    _save_labels(ctx, target)
    # the configuration stands in every attempt (the problem's grant gives its healthy form, no webhooks):
    # the fault changes it in place and recover puts back what it found
    standing = kube.get(ctx, "validatingwebhookconfiguration", ca_mismatch_config(ctx.namespace), missing_ok=True)
    ctx.state["webhooks_before"] = None if standing is None else (standing.get("webhooks") or [])
    host = f"{CA_BACKEND}.{ctx.namespace}.svc"
    ca, cert, key = issue_certificates(host)
    stale_ca, _, _ = issue_certificates(host)
    # the server's certificate was re-issued by a new CA; the configuration still trusts the old one
    _create(ctx, backend_objects(ctx.namespace, CA_BACKEND, mode="allow", replicas=1, cert=cert, key=key, ca=ca))
    _wait_ready(ctx, CA_BACKEND)
    _create(ctx, [webhook_configuration("ValidatingWebhookConfiguration", ca_mismatch_config(ctx.namespace),
                                        "pods.pod-admission.ops.internal", ctx.namespace, CA_BACKEND, stale_ca,
                                        failure_policy="Fail", path="/validate")])
    ctx.state.update(config=ca_mismatch_config(ctx.namespace), backend=CA_BACKEND)
    kube.delete_pods(ctx, target)


def ca_mismatch_present(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> bool:
    pod, refusal = dry_run_create(ctx, target)
    # the fault is the untrusted certificate; a webhook call that timed out on a loaded machine
    # after the CA was fixed is not this fault
    return pod is None and "failed calling webhook" in refusal and "x509" in refusal


def ca_mismatch_fix(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    # as an SRE would: trust the CA that issued the server's certificate (the Secret's ca.crt)
    secret = kube.get(ctx, "secret", f"{CA_BACKEND}-tls")
    patch = [{"op": "replace", "path": "/webhooks/0/clientConfig/caBundle", "value": secret["data"]["ca.crt"]}]
    ctx.kubectl("patch", "validatingwebhookconfiguration", ca_mismatch_config(ctx.namespace), "--type=json",
                "-p", json.dumps(patch))


def ca_mismatch_recover(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    before = ctx.state.get("webhooks_before")
    if before is None:
        _delete_all(ctx, ctx.namespace, CA_BACKEND, "validatingwebhookconfiguration", ca_mismatch_config(ctx.namespace))
        return
    # the standing configuration first (no pod admission waits on a backend about to go), then the backend
    ctx.kubectl("patch", "validatingwebhookconfiguration", ca_mismatch_config(ctx.namespace), "--type=json",
                "-p", json.dumps([{"op": "add", "path": "/webhooks", "value": before}]))
    for kind, obj_name in (("deployment", CA_BACKEND), ("service", CA_BACKEND), ("secret", f"{CA_BACKEND}-tls")):
        ctx.kubectl("delete", kind, obj_name, "-n", ctx.namespace, "--ignore-not-found", "--wait=false")


# --------------------------------------------------------------------------- mutating webhook rewrites limits

MUTATING_BACKEND = "resource-defaults-webhook"


def _mutating_config(ctx: FaultContext) -> str:
    return f"resource-defaults-{ctx.namespace}"


def _container_memory(pod: dict, target: Target) -> str | None:
    containers = pod["spec"]["containers"]
    chosen = next((c for c in containers if c["name"] == target.component.container_name), containers[0])
    return ((chosen.get("resources") or {}).get("limits") or {}).get("memory")


def mutating_inject(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    _save_labels(ctx, target)
    host = f"{MUTATING_BACKEND}.{ctx.namespace}.svc"
    ca, cert, key = issue_certificates(host)
    _create(ctx, backend_objects(ctx.namespace, MUTATING_BACKEND, mode="set-memory", replicas=1, cert=cert, key=key,
                                 env={"WEBHOOK_MEMORY": params["memory"]}))
    _wait_ready(ctx, MUTATING_BACKEND)
    _create(ctx, [webhook_configuration("MutatingWebhookConfiguration", _mutating_config(ctx),
                                        "pods.resource-defaults.ops.internal", ctx.namespace, MUTATING_BACKEND, ca,
                                        failure_policy="Ignore", path="/mutate")])
    ctx.state.update(config=_mutating_config(ctx), backend=MUTATING_BACKEND, memory=params["memory"])
    # failurePolicy Ignore admits a pod unchanged while the API server cannot call the webhook yet (its
    # Service has no endpoint for a moment after the backend is Ready): the rollout waits until a
    # probe pod comes back rewritten, or its new pods would escape the fault
    if not kube.wait_until(lambda: mutating_present(ctx, target, params), timeout=90.0, interval=1.0):
        raise FaultError(f"the mutating webhook {_mutating_config(ctx)} did not rewrite a probe pod within 90 s",
                         hints=(f"kubectl get endpoints {MUTATING_BACKEND} -n {ctx.namespace}",
                                f"kubectl logs deployment/{MUTATING_BACKEND} -n {ctx.namespace}"))
    # new pods of the target get the rewritten limit
    ctx.rollout_restart(target.component.kind, target.component.name)


def mutating_present(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> bool:
    pod, refusal = dry_run_create(ctx, target)
    if pod is None:
        return "failed calling webhook" in refusal
    return _container_memory(pod, target) == ctx.state.get("memory", params["memory"])


def mutating_fix(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    # the rewrite comes from the namespace's resource-defaults webhook: stop it, then roll the target
    ctx.kubectl("scale", f"deployment/{MUTATING_BACKEND}", "-n", ctx.namespace, "--replicas=0")
    ctx.kubectl("rollout", "status", f"deployment/{MUTATING_BACKEND}", "-n", ctx.namespace, "--timeout=60s",
                timeout=70)
    ctx.rollout_restart(target.component.kind, target.component.name)


def mutating_recover(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    _delete_all(ctx, ctx.namespace, MUTATING_BACKEND, "mutatingwebhookconfiguration", _mutating_config(ctx))
    ctx.rollout_restart(target.component.kind, target.component.name)


# --------------------------------------------------------------------------- webhook timeouts that add up

SLOW_BACKEND = "platform-hooks"
#: four "harmless" Ignore-policy webhooks, each under its own timeout, together past the API
#: server's one-minute request deadline
SLOW_HOOKS = ("labels", "sidecars", "defaults", "audit")


def _slow_config(ctx: FaultContext) -> str:
    return f"platform-hooks-{ctx.namespace}"


def timeouts_inject(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    _save_labels(ctx, target)
    host = f"{SLOW_BACKEND}.{ctx.namespace}.svc"
    ca, cert, key = issue_certificates(host)
    _create(ctx, backend_objects(ctx.namespace, SLOW_BACKEND, mode="delay", replicas=1, cert=cert, key=key,
                                 env={"WEBHOOK_DELAY_SECONDS": str(params["timeout_seconds"] + 5)}))
    _wait_ready(ctx, SLOW_BACKEND)
    hooks = []
    for hook in SLOW_HOOKS:
        config = webhook_configuration("MutatingWebhookConfiguration", "x", f"{hook}.platform.ops.internal",
                                       ctx.namespace, SLOW_BACKEND, ca, failure_policy="Ignore", path=f"/{hook}",
                                       timeout=params["timeout_seconds"])
        hooks += config["webhooks"]
    _create(ctx, [{"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
                   "metadata": {"name": _slow_config(ctx)}, "webhooks": hooks}])
    ctx.state.update(config=_slow_config(ctx), backend=SLOW_BACKEND, timeout_seconds=params["timeout_seconds"])
    kube.delete_pods(ctx, target)


def _slow_backend_serving(ctx: FaultContext) -> bool:
    if not kube.exists(ctx, "mutatingwebhookconfiguration", _slow_config(ctx)):
        return False
    endpoints = kube.get(ctx, "endpoints", SLOW_BACKEND, missing_ok=True) or {}
    return any(subset.get("addresses") for subset in endpoints.get("subsets") or [])


def timeouts_present(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> bool:
    # quick answers first: without the configuration or a reachable slow server, calls fail fast
    # and are ignored; otherwise ask the API server (a dry run that waits for the webhooks)
    if not _slow_backend_serving(ctx):
        return False
    pod, refusal = dry_run_create(ctx, target)
    return pod is None and "did not complete within requested timeout" in refusal


def timeouts_fix(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    # the platform hooks only stall: take their server down (failurePolicy Ignore lets pods through)
    ctx.kubectl("scale", f"deployment/{SLOW_BACKEND}", "-n", ctx.namespace, "--replicas=0")
    ctx.kubectl("rollout", "status", f"deployment/{SLOW_BACKEND}", "-n", ctx.namespace, "--timeout=60s",
                timeout=70)


def timeouts_recover(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    _delete_all(ctx, ctx.namespace, SLOW_BACKEND, "mutatingwebhookconfiguration", _slow_config(ctx))


# --------------------------------------------------------------------------- Pod Security admission

ENFORCE = "pod-security.kubernetes.io/enforce"


def psa_inject(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    ns = json.loads(ctx.kubectl("get", "namespace", ctx.namespace, "-o", "json"))
    labels = ns["metadata"].get("labels") or {}
    ctx.state["previous"] = labels.get(ENFORCE)
    ctx.state["level"] = params["level"]
    ctx.kubectl("label", "namespace", ctx.namespace, f"{ENFORCE}={params['level']}", "--overwrite")
    pod, refusal = dry_run_create(ctx, target)
    if pod is not None:
        raise PermanentFaultError(f"{target.component.name}'s pods already satisfy Pod Security "
                                  f"{params['level']!r}: the label changes nothing")
    kube.delete_pods(ctx, target)


def psa_present(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> bool:
    pod, refusal = dry_run_create(ctx, target)
    return pod is None and "violates PodSecurity" in refusal


#: what the restricted level asks of every container and of the pod
_RESTRICTED_CONTAINER = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}
_RESTRICTED_POD = {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}


def psa_fix(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    # within the namespace, as an SRE would: make the pod template comply with the enforced level
    obj = kube.workload(ctx, target)
    spec = kube.pod_spec(obj)
    ops = [{"op": "add", "path": "/spec/template/spec/securityContext",
            "value": {**(spec.get("securityContext") or {}), **_RESTRICTED_POD}}]
    for group in ("initContainers", "containers"):
        for index, container in enumerate(spec.get(group) or []):
            merged = {**(container.get("securityContext") or {}), **_RESTRICTED_CONTAINER}
            ops.append({"op": "add", "path": f"/spec/template/spec/{group}/{index}/securityContext", "value": merged})
    kube.patch(ctx, target.component.kind, target.component.name, ops, type="json")


def psa_recover(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    previous = ctx.state.get("previous")
    if previous:
        ctx.kubectl("label", "namespace", ctx.namespace, f"{ENFORCE}={previous}", "--overwrite")
    else:
        ctx.kubectl("label", "namespace", ctx.namespace, f"{ENFORCE}-")
    # the template hardening of a reference fix is undone by the app's baseline reset


FAULTS: list[FaultSpec] = [
    function_fault(
        name="admission-webhook-outage",
        summary="a fail-closed validating webhook for the namespace's pods has no running server",
        layer="k8s", selector=STATELESS, resource_kind="ValidatingWebhookConfiguration",
        mechanism="validating admission webhook with failurePolicy Fail whose server has no ready endpoint, so "
                  "every pod create in the namespace is rejected",
        inject=outage_inject, is_present=outage_present, recover=outage_recover, reference_fix=outage_fix,
        symptoms=("FailedCreate", "failed calling webhook", "no endpoints available for service"),
        keywords=("webhook", "admission", "failurePolicy", OUTAGE_BACKEND),
        values=lambda t, p, s: {"webhook": "pods.pod-policy.ops.internal", "failurePolicy": "Fail",
                                "service": OUTAGE_BACKEND, "replicas": 0},
        prose="The ValidatingWebhookConfiguration for pods in {namespace} (failurePolicy Fail) points at the "
              "Service {service}, whose Deployment has 0 replicas: the API server cannot call the webhook and "
              "rejects every new pod, so {component} has no pods.",
    ),
    function_fault(
        name="admission-webhook-ca-mismatch",
        summary="a fail-closed validating webhook trusts a CA that did not issue its server's certificate",
        layer="k8s", selector=STATELESS, resource_kind="ValidatingWebhookConfiguration",
        mechanism="validating admission webhook with failurePolicy Fail whose caBundle is from another CA than the "
                  "server certificate's, so the API server's TLS check fails and every pod create is rejected",
        inject=ca_mismatch_inject, is_present=ca_mismatch_present, recover=ca_mismatch_recover,
        reference_fix=ca_mismatch_fix,
        symptoms=("FailedCreate", "failed calling webhook", "x509: certificate signed by unknown authority"),
        keywords=("webhook", "admission", "caBundle", "x509", "certificate", CA_BACKEND),
        values=lambda t, p, s: {"webhook": "pods.pod-admission.ops.internal", "failurePolicy": "Fail",
                                "service": CA_BACKEND, "config": s.get("config", "")},
        prose="The ValidatingWebhookConfiguration {config} (failurePolicy Fail) has a caBundle from another CA than "
              "the one that issued {service}'s serving certificate: the API server's TLS check fails (x509: "
              "certificate signed by unknown authority) and it rejects every new pod, so {component} has no pods.",
    ),
    function_fault(
        name="mutating-webhook-memory",
        summary="a mutating webhook rewrites the pods' memory limit to a value far too small",
        layer="k8s", selector=STATELESS, resource_kind="MutatingWebhookConfiguration",
        params_schema=schema(memory={"type": "string", "default": "12Mi"}),
        mechanism="mutating admission webhook patches every new pod's memory limit to a tiny value; the "
                  "containers are OOMKilled although the Deployment's own limit is fine",
        inject=mutating_inject, is_present=mutating_present, recover=mutating_recover, reference_fix=mutating_fix,
        symptoms=("OOMKilled", "CrashLoopBackOff"),
        keywords=("webhook", "mutating", "memory", "limit", "OOMKilled", MUTATING_BACKEND),
        values=lambda t, p, s: {"webhook": "pods.resource-defaults.ops.internal", "service": MUTATING_BACKEND,
                                "memory_limit": s.get("memory", p.get("memory"))},
        prose="The MutatingWebhookConfiguration served by {service} rewrites every new pod's memory limit in "
              "{namespace} to {memory_limit}; {component}'s containers are OOMKilled although its "
              "Deployment asks for more.",
        # a webhook and the memory limit together: either alone is another fault's (a webhook outage, a small limit)
        vocabulary=("webhook .. memory", "memory .. webhook", "webhook .. limit*", "limit* .. webhook",
                    "admission .. memory limit", "memory limit .. admission", "webhook .. oom*"),
    ),
    function_fault(
        name="admission-webhook-timeouts",
        summary="four slow Ignore-policy webhooks whose timeouts add up past the API server's request deadline",
        layer="k8s", selector=STATELESS, resource_kind="MutatingWebhookConfiguration",
        params_schema=schema(timeout_seconds={"type": "integer", "minimum": 16, "maximum": 30, "default": 20}),
        mechanism="four mutating webhooks with failurePolicy Ignore each wait out their timeoutSeconds on a slow "
                  "server; serially they exceed the API server's one-minute request deadline, so every pod "
                  "create in the namespace times out",
        inject=timeouts_inject, is_present=timeouts_present, recover=timeouts_recover, reference_fix=timeouts_fix,
        symptoms=("FailedCreate", "Timeout: request did not complete within requested timeout"),
        keywords=("webhook", "timeoutSeconds", "admission", "deadline", SLOW_BACKEND),
        values=lambda t, p, s: {"webhooks": len(SLOW_HOOKS), "service": SLOW_BACKEND,
                                "timeout_seconds": s.get("timeout_seconds", p.get("timeout_seconds")),
                                "failurePolicy": "Ignore"},
        prose="{webhooks} mutating webhooks served by {service} (failurePolicy {failurePolicy}, timeoutSeconds "
              "{timeout_seconds}) each time out on a slow server; together they pass the API server's request "
              "deadline, so {component}'s pods in {namespace} cannot be created.",
        # slow webhooks, or their timeouts adding up: a webhook that does not answer at all is the outage's
        vocabulary=("webhook* .. slow*", "slow* .. webhook*", "webhook* .. timeout*", "timeout* .. webhook*",
                    "webhook* .. deadline", "webhook* .. waiting", "webhook* .. one after another",
                    "webhook* .. together", "timeoutseconds", "webhook* .. take* .. seconds",
                    "webhook* .. wait* .. seconds", "checkers .. seconds"),
    ),
    function_fault(
        name="psa-restricted",
        summary="Pod Security admission enforces a level the app's pods do not meet",
        layer="k8s", selector=STATELESS, resource_kind="Namespace",
        params_schema=schema(level={"type": "string", "enum": ["baseline", "restricted"], "default": "restricted"}),
        mechanism="namespace label pod-security.kubernetes.io/enforce=restricted rejects the app's pods, which "
                  "do not set the restricted securityContext",
        inject=psa_inject, is_present=psa_present, recover=psa_recover, reference_fix=psa_fix,
        symptoms=("FailedCreate", "violates PodSecurity"),
        keywords=("PodSecurity", "pod-security.kubernetes.io/enforce", "restricted", "securityContext"),
        values=lambda t, p, s: {"label": ENFORCE, "level": s.get("level", p.get("level"))},
        prose="The namespace {namespace} enforces Pod Security level {level} ({label}); {component}'s pods do not "
              "comply (runAsNonRoot, seccompProfile, allowPrivilegeEscalation, capabilities), so its ReplicaSet "
              "cannot recreate them.",
    ),
]
