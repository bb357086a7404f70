"""Starting and stopping one API server: TLS material, tokens, kubeconfigs and the aiohttp site."""

from __future__ import annotations

import ipaddress
import json
import os
import secrets
from pathlib import Path
from typing import Any

import attrs
import yaml
from aiohttp import web

from . import tls
from .app import ApiServer, build_app
from .auth import Authenticator, new_token
from .core import ApiCore
from .rbac import ADMIN_USER, AGENT_GROUP, AGENT_USER, MASTERS


def check_loopback(host: str) -> None:
    """The API server only ever listens inside 127.0.0.0/8."""
    try:
        ok = ipaddress.ip_address(host) in ipaddress.ip_network("127.0.0.0/8")
    except ValueError:
        ok = False
    if not ok:
        raise ValueError(f"api_host must be an address in 127.0.0.0/8, not {host!r}")


def kubeconfig(cluster: str, server_url: str, ca_pem: bytes, user: str, token: str) -> dict[str, Any]:
    import base64

    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": cluster, "cluster": {"server": server_url,
                                                   "certificate-authority-data": base64.b64encode(ca_pem).decode()}}],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": cluster, "context": {"cluster": cluster, "user": user, "namespace": "default"}}],
        "current-context": cluster,
        "preferences": {},
    }


def _write_private(path: Path, text: str) -> None:
    path.touch(mode=0o600)
    os.chmod(path, 0o600)
    path.write_text(text)


def load_tokens(state_dir: Path) -> dict[str, Any]:
    """tokens.json: {"admin": token, "agent": token, "signing_key": hex, "extra": {token: {user, groups}}}."""
    path = state_dir / "tokens.json"
    if path.exists():
        try:
            data = json.loads(path.read_text())
            if isinstance(data, dict) and data.get("admin") and data.get("agent"):
                return data
        except ValueError:
            pass
    data = {"admin": new_token(), "agent": new_token(), "signing_key": secrets.token_hex(32), "extra": {}}
    _write_private(path, json.dumps(data, indent=2))
    return data


class RunningApiServer:
    """An API server bound to its port. ``core`` is shared with controllers and node agents."""

    def __init__(self, settings: Any, core: ApiCore | None = None) -> None:
        check_loopback(settings.api_host)
        self.settings = settings
        self.state_dir = Path(settings.state_dir)
        self.core = core or ApiCore(settings)
        self.runner: web.AppRunner | None = None
        self.api: ApiServer | None = None
        self.admin_kubeconfig = self.state_dir / "kubeconfig"
        self.agent_kubeconfig = self.state_dir / "agent-kubeconfig"

    async def start(self) -> None:
        self.state_dir.mkdir(parents=True, exist_ok=True)
        host = self.settings.api_host
        hosts = {host, "127.0.0.1"}
        service_prefix = getattr(self.settings, "service_cidr_prefix", None)
        if service_prefix:
            hosts.add(f"{service_prefix}.0.1")  # the `kubernetes` Service, which in-cluster clients dial
        ca, crt, key = tls.ensure_certs(self.state_dir / "pki", sorted(hosts))
        tokens = load_tokens(self.state_dir)
        authn = Authenticator(self.core, bytes.fromhex(tokens["signing_key"]))
        authn.add_token(tokens["admin"], ADMIN_USER, [MASTERS, "kubeadm:cluster-admins"])
        authn.add_token(tokens["agent"], AGENT_USER, [AGENT_GROUP])
        for token, who in (tokens.get("extra") or {}).items():
            authn.add_token(token, who.get("user", "user"), who.get("groups") or [])

        def remember(token: str, user: str, groups: list[str]) -> None:
            data = load_tokens(self.state_dir)
            data.setdefault("extra", {})[token] = {"user": user, "groups": groups}
            _write_private(self.state_dir / "tokens.json", json.dumps(data, indent=2))

        authn.on_mint = remember
        self.api = ApiServer(self.core, authn)
        self.api.audit_file = open(self.state_dir / "audit.jsonl", "a", encoding="utf-8")  # noqa: SIM115
        app = build_app(self.api)
        self.runner = web.AppRunner(app, handler_cancellation=True, access_log=None, shutdown_timeout=1.0)
        await self.runner.setup()
        site = web.TCPSite(self.runner, host, self.settings.api_port, ssl_context=tls.server_context(crt, key),
                           backlog=512, reuse_address=True)
        await site.start()
        port = self.runner.addresses[0][1]
        if port != self.settings.api_port:
            self.settings = attrs.evolve(self.settings, api_port=port)
            self.core.settings = self.settings
        self.core.bootstrap()
        url = f"https://{host}:{port}"
        ca_pem = ca.read_bytes()
        name = self.settings.name
        _write_private(self.admin_kubeconfig,
                       yaml.safe_dump(kubeconfig(name, url, ca_pem, ADMIN_USER, tokens["admin"]), sort_keys=False))
        _write_private(self.agent_kubeconfig,
                       yaml.safe_dump(kubeconfig(name, url, ca_pem, AGENT_USER, tokens["agent"]), sort_keys=False))

    @property
    def url(self) -> str:
        return f"https://{self.settings.api_host}:{self.settings.api_port}"

    async def stop(self) -> None:
        self.core.store.close_watchers()
        if self.api is not None:
            await self.api.close()
        if self.runner is not None:
            await self.runner.cleanup()
            self.runner = None
