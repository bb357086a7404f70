"""Dynamic admission: the API server calls Mutating- and ValidatingWebhookConfiguration webhooks.

As the real server does, per write request (CREATE, UPDATE) on a matching resource:

* mutating webhooks run one after another, in configuration-name order; each gets an
  ``admission.k8s.io/v1`` AdmissionReview with the object as it stands and may answer with a
  base64 JSONPatch, applied before the next webhook sees the object;
* then every matching validating webhook sees the final object; any denial rejects the request;
* a webhook is reached over HTTPS, through its Service (dialled at a ready endpoint, like the
  service proxy) or a ``url`` on loopback; the server certificate is verified against the
  webhook's ``caBundle`` for the name ``<service>.<namespace>.svc``;
* a call that fails (no endpoint, refused, TLS, timeout after ``timeoutSeconds``, a malformed
  answer) rejects the request with 500 InternalError under ``failurePolicy: Fail`` and is
  skipped under ``Ignore``. The messages are the real server's, since agents read them in
  ReplicaSet ``FailedCreate`` events.

Only addresses inside 127.0.0.0/8 are ever dialled. Webhook configurations themselves are never
sent to webhooks (the real server's rule, so a broken webhook can always be removed).
"""

from __future__ import annotations

import asyncio
import base64
import copy
import ipaddress
import json
import logging
import ssl
import uuid
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from . import patching
from .errors import ApiError
from .selectors import selector_from_match_labels
from .shapes import as_dict, as_list

if TYPE_CHECKING:
    from .core import ApiCore
    from .registry import ResourceType

log = logging.getLogger(__name__)

MUTATING = "mutatingwebhookconfigurations.admissionregistration.k8s.io"
VALIDATING = "validatingwebhookconfigurations.admissionregistration.k8s.io"
#: the real server's request deadline (--request-timeout, 1 min): webhooks that together wait longer
#: fail the request with 504 Timeout
REQUEST_DEADLINE = 60.0
_NEVER_SENT = ("admissionregistration.k8s.io",)

Obj = dict[str, Any]


class WebhookCallError(Exception):
    """A webhook could not be called or answered nonsense (failurePolicy decides what follows)."""


def _session(core: ApiCore) -> Any:
    """The HTTPS client session webhook calls share (one per API core, made on first use)."""
    import aiohttp

    session = getattr(core, "_webhook_http", None)
    if session is None or session.closed:
        session = core._webhook_http = aiohttp.ClientSession()
    return session


async def close(core: ApiCore) -> None:
    session = getattr(core, "_webhook_http", None)
    if session is not None:
        core._webhook_http = None
        await session.close()


def configured(core: ApiCore) -> bool:
    """Whether any webhook configuration exists (the common case, none, costs two dict lookups)."""
    store = core.store
    return bool(store.list(MUTATING, None)) or bool(store.list(VALIDATING, None))


# ---------------------------------------------------------------------------------- matching


def _rule_matches(rule: Obj, rt: ResourceType, subresource: str | None, operation: str) -> bool:
    def has(values: Any, value: str) -> bool:
        return isinstance(values, list) and ("*" in values or value in values)

    if not (has(rule.get("operations"), operation) and has(rule.get("apiGroups"), rt.group)
            and has(rule.get("apiVersions"), rt.version)):
        return False
    resource = f"{rt.plural}/{subresource}" if subresource else rt.plural
    resources = as_list(rule.get("resources"))
    wanted = {resource, "*/*", f"{rt.plural}/*" if subresource else "*"}
    if subresource:
        wanted.add(f"*/{subresource}")
    if not wanted & set(resources):
        return False
    scope = rule.get("scope") or "*"
    return scope == "*" or scope == ("Namespaced" if rt.namespaced else "Cluster")


def _labels(obj: Obj | None) -> dict[str, str]:
    meta = (obj or {}).get("metadata") or {}
    return dict(meta.get("labels") or {})


def _selector_matches(selector: Any, labels: dict[str, str]) -> bool:
    matcher = selector_from_match_labels(selector if isinstance(selector, dict) else {})
    return matcher is not None and matcher(labels)


def _hook_matches(core: ApiCore, hook: Obj, rt: ResourceType, subresource: str | None, operation: str,
                  namespace: str | None, obj: Obj, old: Obj | None) -> bool:
    rules = [r for r in hook.get("rules") or [] if isinstance(r, dict)]
    if not any(_rule_matches(r, rt, subresource, operation) for r in rules):
        return False
    if rt.key == "namespaces":
        ns_labels = _labels(obj)
    elif rt.namespaced:
        ns_labels = core.namespace_labels(namespace)
    else:
        ns_labels = None  # cluster-scoped objects other than namespaces ignore the namespaceSelector
    if ns_labels is not None and not _selector_matches(hook.get("namespaceSelector"), ns_labels):
        return False
    selector = hook.get("objectSelector")
    return _selector_matches(selector, _labels(obj)) or (old is not None and _selector_matches(selector, _labels(old)))


def _matching(core: ApiCore, key: str, rt: ResourceType, subresource: str | None, operation: str,
              namespace: str | None, obj: Obj, old: Obj | None) -> list[Obj]:
    configs = sorted(core.store.list(key, None), key=lambda c: c["metadata"]["name"])
    return [hook for config in configs for hook in config.get("webhooks") or []
            if isinstance(hook, dict) and _hook_matches(core, hook, rt, subresource, operation, namespace, obj, old)]


# ---------------------------------------------------------------------------------- calling


def _endpoint(core: ApiCore, hook: Obj) -> tuple[str, int, str, str]:
    """(ip, port, server name to verify, the URL the real server would print) of a webhook."""
    config = hook.get("clientConfig") or {}
    service = config.get("service")
    if isinstance(service, dict):
        namespace, name = str(service.get("namespace") or ""), str(service.get("name") or "")
        port = int(service.get("port") or 443)
        path = str(service.get("path") or "")
        host = f"{name}.{namespace}.svc"
        shown = f"https://{host}:{port}{path}?timeout={_timeout(hook)}s"
        try:
            ip, number = _service_endpoint(core, namespace, name, port)
        except WebhookCallError as exc:
            raise WebhookCallError(f'failed to call webhook: Post "{shown}": {exc}') from None
        return ip, number, host, shown
    url = str(config.get("url") or "")
    parts = urlsplit(url)
    if parts.scheme != "https" or not parts.hostname:
        raise WebhookCallError(f'failed to call webhook: Post "{url}": unsupported protocol scheme')
    host = parts.hostname
    ip = "127.0.0.1" if host == "localhost" else host
    return ip, parts.port or 443, host, f"{url}?timeout={_timeout(hook)}s"


def _service_endpoint(core: ApiCore, namespace: str, name: str, port: int) -> tuple[str, int]:
    store = core.store
    svc = store.get("services", namespace, name)
    if svc is None:
        raise WebhookCallError(f'service "{name}" not found')
    ports = (svc.get("spec") or {}).get("ports") or []
    chosen = next((p for p in ports if p.get("port") == port), None)
    if chosen is None:
        raise WebhookCallError(f'no service port {port} found for service "{name}"')
    target = chosen.get("targetPort", chosen.get("port"))
    endpoints = store.get("endpoints", namespace, name) or {}
    for subset in endpoints.get("subsets") or []:
        addresses = subset.get("addresses") or []
        if not addresses:
            continue
        number = target if isinstance(target, int) else None
        for ep_port in subset.get("ports") or []:
            if ep_port.get("name", "") == chosen.get("name", "") or (number is not None and ep_port.get("port") == number):
                number = ep_port.get("port")
                break
        if isinstance(number, int):
            return str(addresses[0].get("ip", "")), number
    raise WebhookCallError(f'no endpoints available for service "{name}"')


def _timeout(hook: Obj) -> int:
    value = hook.get("timeoutSeconds")
    return int(value) if isinstance(value, int) and 1 <= value <= 30 else 10


def _ssl_context(hook: Obj) -> ssl.SSLContext:
    bundle = (hook.get("clientConfig") or {}).get("caBundle")
    # only the configured bundle is trusted (the real server falls back to its own roots; a pod's
    # certificate is never signed by those, so the outcome is the same)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = True
    context.verify_mode = ssl.CERT_REQUIRED
    if bundle:
        try:
            context.load_verify_locations(cadata=base64.b64decode(bundle).decode("ascii", "replace"))
        except (ValueError, ssl.SSLError) as exc:
            raise WebhookCallError(f"failed to call webhook: invalid caBundle: {exc}") from exc
    return context


def _tls_reason(exc: BaseException) -> str | None:
    text = str(exc)
    if isinstance(exc, ssl.SSLCertVerificationError) or "CERTIFICATE_VERIFY_FAILED" in text:
        if "hostname" in text or "IP address mismatch" in text:
            return "tls: failed to verify certificate: x509: certificate is valid for another name"
        return "tls: failed to verify certificate: x509: certificate signed by unknown authority"
    return None


async def _call(core: ApiCore, hook: Obj, review: Obj, deadline: float) -> Obj:
    """POST the AdmissionReview and return its ``response``; WebhookCallError when that fails."""
    import aiohttp

    ip, port, host, shown = _endpoint(core, hook)
    try:
        loopback = ipaddress.ip_address(ip) in ipaddress.ip_network("127.0.0.0/8")
    except ValueError:
        loopback = False
    if not loopback:
        raise WebhookCallError(f'failed to call webhook: Post "{shown}": address {ip} is outside this cluster')
    loop = asyncio.get_running_loop()
    budget = min(float(_timeout(hook)), deadline - loop.time())
    if budget <= 0:
        raise request_timeout()
    path = urlsplit(shown).path or "/"
    url = f"https://{ip}:{port}{path}?timeout={_timeout(hook)}s"
    try:
        async with _session(core).post(
                url, data=json.dumps(review).encode(), headers={"Content-Type": "application/json",
                                                               "Accept": "application/json"},
                ssl=_ssl_context(hook), server_hostname=host, timeout=aiohttp.ClientTimeout(total=budget),
                allow_redirects=False) as answer:
            body = await answer.read()
            status = answer.status
    except TimeoutError as exc:
        if loop.time() >= deadline - 0.05:
            raise request_timeout() from exc  # the request's own deadline, not the webhook's
        raise WebhookCallError(f'failed to call webhook: Post "{shown}": context deadline exceeded') from exc
    except (aiohttp.ClientError, OSError, ssl.SSLError) as exc:
        cause: BaseException = exc
        while cause.__cause__ is not None and _tls_reason(cause) is None:
            cause = cause.__cause__
        reason = _tls_reason(cause) or _tls_reason(exc)
        if reason is None:
            errno_text = getattr(exc, "strerror", None) or "connection refused"
            reason = f"dial tcp {ip}:{port}: connect: {errno_text.lower()}"
        raise WebhookCallError(f'failed to call webhook: Post "{shown}": {reason}') from exc
    if status != 200:
        raise WebhookCallError(f"received invalid webhook response: expected status 200, got {status}")
    try:
        decoded = json.loads(body)
        response = decoded["response"]
        if not isinstance(response, dict) or not isinstance(response.get("allowed"), bool):
            raise TypeError("no allowed field")
    except (ValueError, KeyError, TypeError) as exc:
        raise WebhookCallError(f"received invalid webhook response: {exc}") from exc
    if response.get("uid") != review["request"]["uid"]:
        raise WebhookCallError(f'expected response.uid="{review["request"]["uid"]}", got "{response.get("uid")}"')
    return response


def request_timeout() -> ApiError:
    """The whole request ran past the server's deadline (webhook waits add up): 504, whatever the
    failurePolicy of the webhook that was waiting."""
    return ApiError(504, "Timeout: request did not complete within requested timeout - context deadline exceeded",
                    "Timeout")


def _review(rt: ResourceType, subresource: str | None, operation: str, namespace: str | None, obj: Obj,
            old: Obj | None, user: Any, dry_run: bool) -> Obj:
    gvk = {"group": rt.group, "version": rt.version, "kind": rt.kind}
    gvr = {"group": rt.group, "version": rt.version, "resource": rt.plural}
    request: Obj = {
        "uid": str(uuid.uuid4()), "kind": gvk, "resource": gvr, "requestKind": gvk, "requestResource": gvr,
        "name": (obj.get("metadata") or {}).get("name", ""), "operation": operation,
        "userInfo": {"username": getattr(user, "name", ""), "groups": list(getattr(user, "groups", ()) or ())},
        "object": obj, "oldObject": old, "dryRun": dry_run,
        "options": {"apiVersion": "meta.k8s.io/v1",
                    "kind": "CreateOptions" if operation == "CREATE" else "UpdateOptions"},
    }
    if subresource:
        request["subResource"] = subresource
    if namespace:
        request["namespace"] = namespace
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}


def _failed(hook: Obj, error: WebhookCallError) -> ApiError | None:
    """The request's error for a failed call, or None when the webhook's failurePolicy is Ignore."""
    name = hook.get("name", "")
    if hook.get("failurePolicy", "Fail") == "Ignore":
        log.warning("failed calling webhook %r (ignored): %s", name, error)
        return None
    return ApiError(500, f'Internal error occurred: failed calling webhook "{name}": {error}', "InternalError")


def _denied(hook: Obj, response: Obj) -> ApiError:
    result = as_dict(response.get("status"))
    message = f'admission webhook "{hook.get("name", "")}" denied the request'
    if result.get("message"):
        message += f": {result['message']}"
    code = result.get("code")
    if not isinstance(code, int) or code < 400:
        code = 400
    reasons = {400: "BadRequest", 403: "Forbidden", 404: "NotFound", 409: "Conflict", 422: "Invalid"}
    return ApiError(code, message, str(result.get("reason") or reasons.get(code, "")))


def _apply_patch(hook: Obj, obj: Obj, response: Obj) -> Obj:
    patch = response.get("patch")
    if not patch:
        return obj
    if response.get("patchType") != "JSONPatch":
        raise WebhookCallError(f'unsupported patch type "{response.get("patchType")}"')
    try:
        operations = json.loads(base64.b64decode(patch))
        return patching._json_patch(obj, operations)
    except (ValueError, patching.PatchError) as exc:
        raise WebhookCallError(f"JSON patch failed: {getattr(exc, 'message', exc)}") from exc


# ---------------------------------------------------------------------------------- the phase


async def admit(core: ApiCore, rt: ResourceType, subresource: str | None, operation: str,
                namespace: str | None, obj: Obj, old: Obj | None, user: Any, *, dry_run: bool = False
                ) -> tuple[Obj, list[str]]:
    """Run the matching webhooks on ``obj`` (the object as it would be stored).

    Returns the object after mutating webhooks and their warnings; raises :class:`ApiError` for a
    denial or a failed call under ``failurePolicy: Fail``.
    """
    if rt.group in _NEVER_SENT:
        return obj, []
    loop = asyncio.get_running_loop()
    deadline = loop.time() + REQUEST_DEADLINE
    warnings: list[str] = []
    current = obj
    for hook in _matching(core, MUTATING, rt, subresource, operation, namespace, current, old):
        review = _review(rt, subresource, operation, namespace, copy.deepcopy(current), old, user, dry_run)
        try:
            response = await _call(core, hook, review, deadline)
            if not response["allowed"]:
                raise _denied(hook, response)
            current = _apply_patch(hook, current, response)
        except WebhookCallError as exc:
            error = _failed(hook, exc)
            if error is not None:
                raise error from exc
            continue
        warnings += [str(w) for w in response.get("warnings") or []]
    validating = _matching(core, VALIDATING, rt, subresource, operation, namespace, current, old)
    if validating:
        # the real server calls validating webhooks in parallel; the first rejection wins
        results = await asyncio.gather(*(
            _call(core, hook, _review(rt, subresource, operation, namespace, copy.deepcopy(current), old, user,
                                        dry_run), deadline) for hook in validating), return_exceptions=True)
        for hook, result in zip(validating, results, strict=True):
            if isinstance(result, WebhookCallError):
                error = _failed(hook, result)
                if error is not None:
                    raise error from result
            elif isinstance(result, BaseException):
                raise result
            elif not result["allowed"]:
                raise _denied(hook, result)
            else:
                warnings += [str(w) for w in result.get("warnings") or []]
    return current, warnings


# ---------------------------------------------------------------------------------- the verbs


async def on_create(core: ApiCore, rt: ResourceType, namespace: str | None, body: Obj, user: Any,
                    dry_run: bool) -> tuple[Obj, list[str]]:
    """Webhooks for a create: they see the object as it would be stored (defaults and the built-in
    admission applied, by a dry run); a mutated object replaces the request's body."""
    preview = core.create(rt, namespace, body, dry_run=True)
    mutated, warnings = await admit(core, rt, None, "CREATE", preview["metadata"].get("namespace"), preview, None,
                                    user, dry_run=dry_run)
    if mutated is not preview:
        return mutated, warnings
    if not (body.get("metadata") or {}).get("name"):
        # keep the generated name the webhooks saw
        body = dict(body, metadata=dict(body.get("metadata") or {}, name=preview["metadata"]["name"]))
    return body, warnings


async def on_write(core: ApiCore, rt: ResourceType, namespace: str | None, name: str, preview: Obj, user: Any,
                   dry_run: bool) -> tuple[Obj | None, list[str]]:
    """Webhooks for an update or patch (a CREATE when it creates the object): the object mutating
    webhooks changed (None when they changed nothing) and the warnings."""
    old = core.store.get(rt.storage_key, namespace if rt.namespaced else None, name)
    operation = "UPDATE" if old is not None else "CREATE"
    mutated, warnings = await admit(core, rt, None, operation, namespace if rt.namespaced else None, preview,
                                    core.external(rt, old) if old is not None else None, user, dry_run=dry_run)
    return (mutated if mutated is not preview else None), warnings


def store_mutated(core: ApiCore, rt: ResourceType, namespace: str | None, name: str, mutated: Obj, *,
                  existed: bool, dry_run: bool = False) -> Obj:
    """Store an object a mutating webhook changed (as an update of the object the request made)."""
    if existed:
        return core.update(rt, namespace, name, mutated, dry_run=dry_run)
    return core.create(rt, namespace, mutated, dry_run=dry_run)
