"""A CronJob whose Job never completes: a regular (not native sidecar) container that never exits.

The app's Ingress certificate reaches its TLS Secret through a ``cert-sync`` CronJob (every minute,
``concurrencyPolicy: Forbid``) that copies the issuer's latest certificate (``<secret>-issued``)
into the Secret the Ingress serves. Its pod also runs a ``log-forwarder`` as a *regular* container
that never exits: the copy finishes, the Job never completes, and every later run is skipped
(``JobAlreadyActive``). The issuer renews the certificate, nobody copies it, and the served one
expires: users verifying TLS fail the handshake.

The fix: make the forwarder a native sidecar (an init container with ``restartPolicy: Always``,
which a Job does not wait for) or drop it, and delete the stuck Job so the next run copies the
renewed certificate.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import time
from typing import TYPE_CHECKING, Any

from sregym_core.faultkit import function_fault, kube, schema
from sregym_core.types import FaultSpec

from . import api_actor
from . import ingress_users as users
from .ingress import ENTRY

if TYPE_CHECKING:
    from collections.abc import Mapping

    from sregym_core.faults import FaultContext
    from sregym_core.types import Target

NAME = "cert-sync"
SIDECAR = "log-forwarder"

#: the sync container: copy the issued certificate into the served Secret through the API
SCRIPT = api_actor.API_PRELUDE + """\
def call(method, name, body=None, kind="application/json"):
    request = urllib.request.Request(f"{base}/api/v1/namespaces/{namespace}/secrets/{name}", method=method,
                                     data=json.dumps(body).encode() if body else None,
                                     headers={"Authorization": "Bearer " + token, "Content-Type": kind})
    with urllib.request.urlopen(request, context=context, timeout=20) as answer:
        return json.load(answer)
issued = call("GET", os.environ["SOURCE"])["data"]
call("PATCH", os.environ["TARGET"], {"data": {k: issued[k] for k in ("tls.crt", "tls.key")}},
     "application/merge-patch+json")
print("cert-sync: copied", os.environ["SOURCE"], "to", os.environ["TARGET"], flush=True)
"""
#: the forwarder: tails nothing, never exits (as a log shipper run as a regular container does)
FORWARDER = "import time\nprint('log-forwarder: shipping logs', flush=True)\nwhile True:\n    time.sleep(30)\n"


def _objects(ctx: FaultContext, secret: str, issued: str) -> list[dict]:
    return api_actor.actor_objects(
        ctx.namespace, NAME, backoff_limit=2,
        rules=[{"apiGroups": [""], "resources": ["secrets"], "resourceNames": [issued, secret],
                "verbs": ["get", "patch"]}],
        containers=[api_actor.container("sync", SCRIPT, {"SOURCE": issued, "TARGET": secret}),
                    api_actor.container(SIDECAR, FORWARDER)])


def _synced(ctx: FaultContext, secret: str, cert: bytes) -> bool:
    obj = kube.get(ctx, "secret", secret, missing_ok=True) or {}
    return base64.b64decode((obj.get("data") or {}).get("tls.crt", "")) == cert


@users.users_first
def inject(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    from sregym_appkit.ingress import issue

    obj = users.ingress(ctx, target)
    host = users.host_of(obj)
    entry = next(t for t in obj["spec"].get("tls") or [] if host in (t.get("hosts") or []))
    secret, issued = entry["secretName"], f"{entry['secretName']}-issued"
    current = kube.get(ctx, "secret", secret)
    ctx.state.update(ingress=obj["metadata"]["name"], host=host, secret=secret, issued=issued, data=current["data"])
    # the certificate the last run synced (the run whose Job never completed), expired since: every run
    # after it was skipped (a certificate that expires only later would keep users on open connections)
    now = dt.datetime.now(dt.UTC)
    expires = now - dt.timedelta(seconds=int(params["expired_s_ago"]))
    cert, key = issue(users.ca_pem(ctx), users.ca_key(ctx), [host], not_before=now - dt.timedelta(days=89),
                      not_after=expires)
    ctx.state["not_after"] = expires.strftime("%Y-%m-%dT%H:%M:%SZ")
    users.put_secret(ctx, issued, cert, key, labels={"app.kubernetes.io/managed-by": "issuer"})
    for item in _objects(ctx, secret, issued):
        kube.apply(ctx, item)
    ctx.kubectl("create", "job", f"{NAME}-{int(time.time()) // 60}", f"--from=cronjob/{NAME}", "-n", ctx.namespace)
    if not kube.wait_until(lambda: _synced(ctx, secret, cert), timeout=90.0, interval=1.0):
        from sregym_core.errors import PermanentFaultError

        raise PermanentFaultError(f"the {NAME} Job did not copy {issued} into {secret} within 90 s",
                                  hints=(f"kubectl logs -n {ctx.namespace} -l app.kubernetes.io/name={NAME} -c sync",))
    # the issuer renews: a year's certificate waits in <secret>-issued for a run that never comes
    users.put_secret(ctx, issued, base64.b64decode(current["data"]["tls.crt"]), base64.b64decode(current["data"]["tls.key"]),
                labels={"app.kubernetes.io/managed-by": "issuer"})


def _blocking(cron: dict) -> bool:
    """Whether the Job template has a regular container besides the sync (a Job waits for every one)."""
    spec = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    return any(c.get("name") != "sync" for c in spec.get("containers") or [])


def _stuck_jobs(ctx: FaultContext) -> list[str]:
    jobs = json.loads(ctx.kubectl("get", "jobs", "-n", ctx.namespace, "-l", api_actor.label_selector(NAME),
                                  "-o", "json"))["items"]
    out = []
    for job in jobs:
        done = any(c.get("type") in ("Complete", "Failed") and c.get("status") == "True"
                   for c in (job.get("status") or {}).get("conditions") or [])
        if not done and not job["metadata"].get("deletionTimestamp") and _blocking({"spec": {"jobTemplate": job}}):
            out.append(job["metadata"]["name"])
    return out


def is_present(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> bool:
    cron = kube.get(ctx, "cronjob", NAME, missing_ok=True)
    if cron is None or cron["spec"].get("suspend"):
        # nothing copies the renewed certificate any more: present while the served one is unusable
        obj = kube.get(ctx, "ingress", ctx.state.get("ingress") or target.component.name, missing_ok=True)
        return users.certificate_problem(ctx, obj, ctx.state.get("host") or users.host_of(obj or {"metadata": {}})) \
            is not None
    # a Job that can never complete blocks every later run; a template that makes one again is the defect
    return _blocking(cron) or bool(_stuck_jobs(ctx))


def fix(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    # the forwarder becomes a native sidecar (an init container that keeps running): the Job completes when
    # the sync does; then the stuck Job goes, so the next run copies the renewed certificate
    cron = kube.get(ctx, "cronjob", NAME)
    spec = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    sidecars = [dict(c, restartPolicy="Always") for c in spec["containers"] if c["name"] != "sync"]
    kube.patch(ctx, "cronjob", NAME, [
        {"op": "replace", "path": "/spec/jobTemplate/spec/template/spec/containers",
         "value": [c for c in spec["containers"] if c["name"] == "sync"]},
        {"op": "add", "path": "/spec/jobTemplate/spec/template/spec/initContainers", "value": sidecars}], type="json")
    for job in _stuck_jobs(ctx):
        kube.delete(ctx, "job", job)
    # the next scheduled run is at most a minute away: wait for the certificate, as an SRE watches the site
    renewed = kube.get(ctx, "secret", ctx.state["issued"])["data"]["tls.crt"]
    kube.wait_until(lambda: (kube.get(ctx, "secret", ctx.state["secret"]) or {})["data"]["tls.crt"] == renewed,
                    timeout=100.0, interval=2.0)
    users.wait_users_served(ctx)


def recover(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    try:
        api_actor.remove_actor(ctx, NAME)
        if "data" in ctx.state:
            kube.patch(ctx, "secret", ctx.state["secret"], {"data": ctx.state["data"]})
            kube.delete(ctx, "secret", ctx.state["issued"])
    finally:  # the users go back to the Service whatever happened
        users.unroute_users(ctx)


VOCABULARY = (
    "cronjob", "cron job", "job never complet*", "job .. never finish*", "never complet*", "never finish*",
    "never exit*", "does not exit", "doesn't exit", "sidecar", "log forwarder", "forwarder", "concurrencypolicy",
    "concurrency policy", "forbid", "runs .. skipped", "skipped .. runs",
    "cert sync", "certificate .. not synced", "renewed certificate .. not", "not copied",
)

FAULTS: list[FaultSpec] = [
    function_fault(
        name="cronjob-sidecar-blocks", summary="a CronJob's regular sidecar never exits: its Job never completes, "
                                               "later runs are skipped",
        layer="k8s", selector=ENTRY, resource_kind="CronJob",
        params_schema=schema(expired_s_ago={"type": "integer", "minimum": 60, "maximum": 8640000, "default": 3600}),
        mechanism="the cert-sync CronJob's pod runs a log-forwarder as a regular container that never exits, so its "
                  "Job never completes and, with concurrencyPolicy Forbid, every later run is skipped: the renewed "
                  "certificate is never copied and the one the Ingress serves expires",
        inject=inject, is_present=is_present, recover=recover, reference_fix=fix,
        symptoms=("JobAlreadyActive", "certificate has expired", "TLS handshake failure"),
        keywords=("CronJob", NAME, SIDECAR, "concurrencyPolicy", "Forbid", "Job", "sidecar"),
        values=lambda t, p, s: {"cronjob": NAME, "sidecar": SIDECAR, "secret": s.get("secret", ""),
                                "not_after": s.get("not_after", "")},
        prose="CronJob {cronjob}'s Job never completes: its {sidecar} container is a regular container that never "
              "exits, so with concurrencyPolicy Forbid every later run is skipped and the renewed certificate never "
              "reaches {secret}; the certificate the Ingress serves expired at {not_after}.",
        vocabulary=VOCABULARY,
    ),
]

__all__ = ["FAULTS"]
