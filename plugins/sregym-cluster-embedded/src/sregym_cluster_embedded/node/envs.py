"""Container environment: env/envFrom/valueFrom, ``$(VAR)`` expansion and service variables."""

from __future__ import annotations

import base64
import re

from .errors import ContainerConfigError, MountError
from .volumes import field_value, resource_value

_REF = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")


def expand(value: str, env: dict[str, str]) -> str:
    """Kubernetes ``$(VAR)`` expansion: known names are replaced, unknown ones stay literally,
    ``$$`` escapes a dollar."""
    def replace(match: re.Match) -> str:
        if match.group(0) == "$$":
            return "$"
        name = match.group(1)
        return env.get(name, match.group(0))
    return _REF.sub(replace, value)


def service_env(services: list[dict]) -> dict[str, str]:
    """The Docker-link style variables the kubelet injects for each Service of the namespace."""
    env: dict[str, str] = {}
    for svc in sorted(services, key=lambda s: s.get("metadata", {}).get("name", "")):
        spec = svc.get("spec", {})
        ip = spec.get("clusterIP")
        if not ip or ip == "None" or spec.get("type") == "ExternalName":
            continue
        prefix = svc["metadata"]["name"].upper().replace("-", "_")
        ports = spec.get("ports") or []
        if not ports:
            continue
        env[f"{prefix}_SERVICE_HOST"] = ip
        env[f"{prefix}_SERVICE_PORT"] = str(ports[0].get("port"))
        for port in ports:
            if port.get("name"):
                env[f"{prefix}_SERVICE_PORT_{port['name'].upper().replace('-', '_')}"] = str(port.get("port"))
        first = ports[0]
        proto = (first.get("protocol") or "TCP").lower()
        env[f"{prefix}_PORT"] = f"{proto}://{ip}:{first.get('port')}"
        for port in ports:
            proto_l = (port.get("protocol") or "TCP").lower()
            key = f"{prefix}_PORT_{port.get('port')}_{proto_l.upper()}"
            env[key] = f"{proto_l}://{ip}:{port.get('port')}"
            env[key + "_PROTO"] = proto_l
            env[key + "_PORT"] = str(port.get("port"))
            env[key + "_ADDR"] = ip
    return env


async def _lookup(client, kind: str, name: str, namespace: str, cache: dict) -> dict | None:
    key = (kind, name)
    if key not in cache:
        try:
            cache[key] = await client.get(kind, name, namespace)
        except Exception as exc:  # noqa: BLE001
            if getattr(exc, "code", None) != 404:
                raise
            cache[key] = None
    return cache[key]


def _values(obj: dict, secret: bool) -> dict[str, str]:
    if secret:
        out = {k: base64.b64decode(v or "").decode("utf-8", "replace") for k, v in (obj.get("data") or {}).items()}
        out |= dict(obj.get("stringData") or {})
        return out
    return {k: str(v) for k, v in (obj.get("data") or {}).items()}


async def container_env(client, pod: dict, container: dict, base: dict[str, str],
                        node_allocatable: dict[str, str]) -> dict[str, str]:
    """``base`` (service variables etc.) overlaid with envFrom, then env, in Kubernetes order.
    Raises ContainerConfigError with the kubelet's message for a missing object or key."""
    namespace = pod["metadata"].get("namespace", "default")
    cache: dict = {}
    env = dict(base)
    for source in container.get("envFrom") or []:
        prefix = source.get("prefix", "")
        for field_name, kind, secret, label in (("configMapRef", "configmaps", False, "configmap"),
                                                 ("secretRef", "secrets", True, "secret")):
            if field_name not in source:
                continue
            ref = source[field_name]
            obj = await _lookup(client, kind, ref.get("name", ""), namespace, cache)
            if obj is None:
                if ref.get("optional"):
                    continue
                raise ContainerConfigError(f'{label} "{ref.get("name", "")}" not found')
            for key, value in _values(obj, secret).items():
                env[prefix + key] = value
    for item in container.get("env") or []:
        name = item.get("name", "")
        if "valueFrom" not in item:
            env[name] = expand(str(item.get("value", "")), env)
            continue
        source = item["valueFrom"]
        if "configMapKeyRef" in source or "secretKeyRef" in source:
            secret = "secretKeyRef" in source
            ref = source["secretKeyRef" if secret else "configMapKeyRef"]
            kind, label, kind_title = ("secrets", "secret", "Secret") if secret else ("configmaps", "configmap", "ConfigMap")
            obj = await _lookup(client, kind, ref.get("name", ""), namespace, cache)
            if obj is None:
                if ref.get("optional"):
                    continue
                raise ContainerConfigError(f'{label} "{ref.get("name", "")}" not found')
            values = _values(obj, secret)
            key = ref.get("key", "")
            if key not in values:
                if ref.get("optional"):
                    continue
                raise ContainerConfigError(f"couldn't find key {key} in {kind_title} {namespace}/{ref.get('name', '')}")
            env[name] = values[key]
        elif "fieldRef" in source:
            try:
                env[name] = field_value(pod, source["fieldRef"].get("fieldPath", ""))
            except MountError as exc:
                raise ContainerConfigError(str(exc)) from None
        elif "resourceFieldRef" in source:
            env[name] = resource_value(pod, source["resourceFieldRef"], node_allocatable, container.get("name", ""))
    return env
