"""Shared helpers for the patch/protobuf/openapi tests (helper "patch")."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

DATA_DIR = Path(__file__).parent / "data_patch"


def kubectl_path() -> str | None:
    """The project's pinned kubectl (1.37 from the venv), else one on PATH."""
    venv_kubectl = Path(sys.executable).parent / "kubectl"
    if venv_kubectl.exists():
        return str(venv_kubectl)
    return shutil.which("kubectl")


def kubectl_local_patch(obj: dict[str, Any], patch: Any, patch_type: str, tmp: Path) -> dict[str, Any] | str:
    """Run ``kubectl patch --local`` (kubectl's own compiled-in patch code): the oracle for our patches.

    Returns the patched object, or the error text when kubectl refuses the patch.
    """
    kubectl = kubectl_path()
    assert kubectl, "kubectl not found"
    src = tmp / "obj.json"
    src.write_text(json.dumps(obj))
    env = {**os.environ, "KUBECONFIG": str(tmp / "no-kubeconfig"), "HOME": str(tmp)}
    proc = subprocess.run(
        [
            kubectl,
            "patch",
            "--local",
            "-f",
            str(src),
            "--type",
            patch_type,
            "-p",
            json.dumps(patch),
            "-o",
            "json",
        ],
        capture_output=True,
        text=True,
        timeout=90,
        env=env,
    )
    if proc.returncode != 0:
        return proc.stderr.strip()
    return json.loads(proc.stdout)


def prune_empty(value: Any) -> Any:
    """Drop empty maps/lists and nulls: kubectl's typed round trip adds ``resources: {}`` and the like."""
    if isinstance(value, dict):
        pruned = {k: prune_empty(v) for k, v in value.items()}
        return {k: v for k, v in pruned.items() if v not in (None, {}, [])}
    if isinstance(value, list):
        return [prune_empty(v) for v in value]
    return value


# --------------------------------------------------------------------------- a tiny TLS capture server

# (group, version) -> [(plural, kind, namespaced, verbs)]; just enough discovery for kubectl's
# create generators, auth can-i/whoami, create token and explain.
DISCOVERY: dict[tuple[str, str], list[tuple[str, str, bool, list[str]]]] = {
    ("", "v1"): [
        ("configmaps", "ConfigMap", True, ["create", "get", "list", "patch", "delete"]),
        ("secrets", "Secret", True, ["create", "get", "list", "patch", "delete"]),
        ("namespaces", "Namespace", False, ["create", "get", "list", "patch", "delete"]),
        ("serviceaccounts", "ServiceAccount", True, ["create", "get", "list", "patch", "delete"]),
        ("serviceaccounts/token", "TokenRequest", True, ["create"]),
        ("services", "Service", True, ["create", "get", "list", "patch", "delete"]),
        ("resourcequotas", "ResourceQuota", True, ["create", "get", "list", "patch", "delete"]),
        ("pods", "Pod", True, ["create", "get", "list", "patch", "delete"]),
        ("pods/eviction", "Eviction", True, ["create"]),
        ("nodes", "Node", False, ["get", "list", "patch"]),
    ],
    ("apps", "v1"): [("deployments", "Deployment", True, ["create", "get", "list", "patch", "delete"])],
    ("batch", "v1"): [
        ("jobs", "Job", True, ["create", "get", "list", "patch", "delete"]),
        ("cronjobs", "CronJob", True, ["create", "get", "list", "patch", "delete"]),
    ],
    ("rbac.authorization.k8s.io", "v1"): [
        ("roles", "Role", True, ["create", "get", "list", "patch", "delete"]),
        ("rolebindings", "RoleBinding", True, ["create", "get", "list", "patch", "delete"]),
        ("clusterroles", "ClusterRole", False, ["create", "get", "list", "patch", "delete"]),
        ("clusterrolebindings", "ClusterRoleBinding", False, ["create", "get", "list", "patch", "delete"]),
    ],
    ("policy", "v1"): [
        ("poddisruptionbudgets", "PodDisruptionBudget", True, ["create", "get", "list", "patch", "delete"])
    ],
    ("scheduling.k8s.io", "v1"): [
        ("priorityclasses", "PriorityClass", False, ["create", "get", "list", "patch", "delete"])
    ],
    ("networking.k8s.io", "v1"): [
        ("ingresses", "Ingress", True, ["create", "get", "list", "patch", "delete"])
    ],
    ("authentication.k8s.io", "v1"): [("selfsubjectreviews", "SelfSubjectReview", False, ["create"])],
    ("authorization.k8s.io", "v1"): [
        ("selfsubjectaccessreviews", "SelfSubjectAccessReview", False, ["create"]),
        ("selfsubjectrulesreviews", "SelfSubjectRulesReview", False, ["create"]),
    ],
}


SHORT_NAMES = {
    "configmaps": ["cm"], "namespaces": ["ns"], "serviceaccounts": ["sa"], "services": ["svc"], "resourcequotas": ["quota"],
    "pods": ["po"], "nodes": ["no"], "deployments": ["deploy"], "cronjobs": ["cj"], "poddisruptionbudgets": ["pdb"],
    "priorityclasses": ["pc"], "ingresses": ["ing"], "crontabs": ["ct"],
}  # fmt: skip


def discovery_resources() -> list[dict[str, Any]]:
    """The DISCOVERY table in the shape ``openapi.build_openapi_v3`` takes."""
    return [
        {"group": g, "version": v, "kind": kind, "plural": plural, "namespaced": namespaced}
        for (g, v), items in DISCOVERY.items()
        for plural, kind, namespaced, _ in items
        if "/" not in plural
    ]


def make_tls_files(tmp: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 that doubles as its own CA."""
    import datetime as dt
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "sregym-test-apiserver")])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = tmp / "tls.crt", tmp / "tls.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return cert_path, key_path


class CaptureServer:
    """An aiohttp HTTPS server on 127.0.0.1 (own thread) that records write requests.

    Protobuf bodies are decoded with our decoder and echoed back as JSON (with a review status for
    SSAR/SSRR/SSR/TokenRequest), so kubectl completes normally. ``openapi`` optionally serves
    ``(index, documents)`` from ``openapi.build_openapi_v3``.
    """

    def __init__(
        self,
        tmp: Path,
        openapi: tuple[dict[str, Any], dict[str, dict[str, Any]]] | None = None,
        extra_discovery: dict[tuple[str, str], list[tuple[str, str, bool, list[str]]]] | None = None,
    ) -> None:
        self.tmp = tmp
        self.openapi = openapi
        self.discovery = {**DISCOVERY, **(extra_discovery or {})}
        self.requests: list[dict[str, Any]] = []
        self.objects: dict[str, dict[str, Any]] = {}  # item path -> object (GET/PUT/PATCH support)
        self.cert, self.key = make_tls_files(tmp)
        self.port = 0
        self._loop: Any = None
        self._thread: Any = None
        self._runner: Any = None

    # -- lifecycle
    def start(self) -> CaptureServer:
        import asyncio
        import threading

        ready = threading.Event()

        def run() -> None:
            self._loop = asyncio.new_event_loop()
            self._loop.run_until_complete(self._start())
            ready.set()
            self._loop.run_forever()
            self._loop.run_until_complete(self._runner.cleanup())
            self._loop.close()

        self._thread = threading.Thread(target=run, name="capture-apiserver", daemon=True)
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError("capture server did not start")
        self.kubeconfig = self._write_kubeconfig()
        return self

    def stop(self) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
            self._loop = None

    async def _start(self) -> None:
        import ssl

        from aiohttp import web

        app = web.Application(client_max_size=8 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(str(self.cert), str(self.key))
        site = web.TCPSite(self._runner, "127.0.0.1", 0, ssl_context=context)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]

    def _write_kubeconfig(self) -> Path:
        import base64

        import yaml

        ca = base64.b64encode(self.cert.read_bytes()).decode()
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "t",
                    "cluster": {"server": f"https://127.0.0.1:{self.port}", "certificate-authority-data": ca},
                }
            ],
            "users": [{"name": "t", "user": {"token": "test-token"}}],
            "contexts": [{"name": "t", "context": {"cluster": "t", "user": "t", "namespace": "default"}}],
            "current-context": "t",
        }
        path = self.tmp / "kubeconfig"
        path.write_text(yaml.safe_dump(config))
        return path

    def kubectl(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        kubectl = kubectl_path()
        assert kubectl, "kubectl not found"
        cmd = [kubectl, "--kubeconfig", str(self.kubeconfig), "--cache-dir", str(self.tmp / "cache"), *args]
        proc = subprocess.run(
            cmd, capture_output=True, text=True, timeout=60, env={**os.environ, "HOME": str(self.tmp)}
        )
        if check and proc.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed: {proc.stderr}")
        return proc

    # -- request handling
    def _patch(self, request: Any, path: str, body: bytes) -> Any:
        from aiohttp import web
        from sregym_cluster_embedded.apiserver.patching import PatchError, apply_patch

        self.requests.append(
            {
                "method": "PATCH",
                "path": path,
                "content_type": request.content_type,
                "body": body,
                "query": dict(request.query),
            }
        )
        current = self.objects.get(path)
        if current is None and request.content_type != "application/apply-patch+yaml":
            return _status(404, "NotFound", f'"{path.rsplit("/", 1)[-1]}" not found')
        base = current or {}
        api_version = base.get("apiVersion") or _gv_of_path(path)
        kind = base.get("kind") or ""
        if not kind:
            try:
                import yaml

                kind = (yaml.safe_load(body) or {}).get("kind", "")
            except Exception:  # noqa: BLE001 - the patch code reports bad bodies itself
                kind = ""
        try:
            patched = apply_patch(
                base, body, request.content_type, kind=kind, group=api_version.rpartition("/")[0]
            )
        except PatchError as exc:
            status = exc.to_status()
            return web.json_response(status, status=exc.code)
        self.objects[path] = patched
        return web.json_response(patched, status=200 if current is not None else 201)

    async def _handle(self, request: Any) -> Any:
        from aiohttp import web
        from sregym_cluster_embedded.apiserver.protobuf import ProtobufError, decode_object

        path = request.path.rstrip("/") or "/"
        body = await request.read()
        if path == "/version":
            return web.json_response(
                {"major": "1", "minor": "37", "gitVersion": "v1.37.0", "platform": "linux/amd64"}
            )
        if path == "/api":
            return web.json_response(
                {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []}
            )
        if path == "/apis":
            groups = [
                {
                    "name": g,
                    "versions": [{"groupVersion": f"{g}/{v}", "version": v}],
                    "preferredVersion": {"groupVersion": f"{g}/{v}", "version": v},
                }
                for (g, v) in self.discovery
                if g
            ]
            return web.json_response({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
        for (g, v), items in self.discovery.items():
            if path == (f"/apis/{g}/{v}" if g else f"/api/{v}"):
                resources = []
                for plural, kind, namespaced, verbs in items:
                    resource = {
                        "name": plural,
                        "singularName": "" if "/" in plural else kind.lower(),
                        "namespaced": namespaced,
                        "kind": kind,
                        "verbs": verbs,
                    }
                    if plural in SHORT_NAMES:
                        resource["shortNames"] = SHORT_NAMES[plural]
                    if plural == "serviceaccounts/token":
                        resource.update(group="authentication.k8s.io", version="v1")
                    if plural == "pods/eviction":
                        resource.update(group="policy", version="v1")
                    resources.append(resource)
                return web.json_response(
                    {
                        "kind": "APIResourceList",
                        "apiVersion": "v1",
                        "groupVersion": f"{g}/{v}" if g else v,
                        "resources": resources,
                    }
                )
        if path.startswith("/openapi/v3") and self.openapi is not None:
            index, documents = self.openapi
            if path == "/openapi/v3":
                return web.json_response(index)
            document = documents.get(path[len("/openapi/v3/") :])
            if document is not None:
                return web.json_response(document)
        if request.method == "GET" and path in self.objects:
            return web.json_response(self.objects[path])
        if request.method == "PATCH":
            return self._patch(request, path, body)
        if request.method in ("POST", "PUT", "DELETE") and body:
            record: dict[str, Any] = {
                "method": request.method,
                "path": path,
                "content_type": request.content_type,
                "body": body,
            }
            self.requests.append(record)
            if request.content_type == "application/vnd.kubernetes.protobuf":
                try:
                    obj = decode_object(body)
                except ProtobufError as exc:
                    record["error"] = str(exc)
                    return _status(400, "BadRequest", str(exc))
            else:
                obj = json.loads(body)
            record["decoded"] = obj
            if request.method == "DELETE":
                self.objects.pop(path, None)
                return web.json_response({"kind": "Status", "apiVersion": "v1", "status": "Success"})
            reply = _echo(obj)
            if reply.get("kind") not in _REVIEW_KINDS:
                item = path if request.method == "PUT" else f"{path}/{reply['metadata']['name']}"
                if request.query.get("dryRun") != "All":
                    self.objects[item] = reply
            return web.json_response(reply, status=201 if request.method == "POST" else 200)
        return web.json_response(
            {
                "kind": "Status",
                "apiVersion": "v1",
                "status": "Failure",
                "message": "the server could not find the requested resource",
                "reason": "NotFound",
                "code": 404,
            },
            status=404,
        )


_REVIEW_KINDS = {"SelfSubjectAccessReview", "SelfSubjectRulesReview", "SelfSubjectReview", "TokenRequest"}


def _status(code: int, reason: str, message: str) -> Any:
    from aiohttp import web

    body = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    return web.json_response(body, status=code)


def _gv_of_path(path: str) -> str:
    parts = path.strip("/").split("/")
    return parts[1] if parts[0] == "api" else f"{parts[1]}/{parts[2]}"


def _echo(obj: dict[str, Any]) -> dict[str, Any]:
    """What a server would answer to a create: the object, with a status for review kinds."""
    reply = json.loads(json.dumps(obj))
    reply.setdefault("metadata", {}).setdefault("name", "generated")
    kind = obj.get("kind")
    if kind == "SelfSubjectAccessReview":
        reply["status"] = {"allowed": True, "reason": "test server allows everything"}
    elif kind == "SelfSubjectRulesReview":
        reply["status"] = {
            "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
            "nonResourceRules": [],
            "incomplete": False,
        }
    elif kind == "SelfSubjectReview":
        reply["status"] = {
            "userInfo": {"username": "test-admin", "groups": ["system:masters", "system:authenticated"]}
        }
    elif kind == "TokenRequest":
        reply["status"] = {"token": "issued-token", "expirationTimestamp": "2030-01-01T00:00:00Z"}
    return reply
