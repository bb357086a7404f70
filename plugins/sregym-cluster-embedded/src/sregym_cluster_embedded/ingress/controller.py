"""The ingress controller process: what the ``registry.k8s.io/ingress-nginx/controller`` image runs
on the embedded cluster's nodes (a pod in the ``ingress-nginx`` namespace).

As ingress-nginx does, with the pod's own service-account token: read Ingresses, IngressClasses,
Services and TLS Secrets from the API server, render Debian's nginx configuration from them
(:mod:`.render`), test it and reload nginx (SIGHUP) when it changed, publish the address
of the controller's Service in each served Ingress's ``status.loadBalancer.ingress`` (and clear
it from Ingresses it no longer serves), and record a ``Sync`` event for each new or changed
Ingress. nginx's error log is the container's stderr and its access log a FIFO relayed to stdout,
so ``kubectl logs`` shows both. Polls once a second (ingress-nginx watches; the effect is the same).

Flags (ingress-nginx's names): ``--controller-class``, ``--publish-service=<ns>/<name>``,
``--ingress-class`` (the class name used when no IngressClass object exists).
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import shutil
import signal
import ssl
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from . import render

SA_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")
RUN_DIR = Path(os.environ.get("INGRESS_RUN_DIR", "/tmp/nginx"))
ACCESS_LOG = RUN_DIR / "access.log"
COMPONENT = "nginx-ingress-controller"


def klog(level: str, where: str, message: str) -> None:
    """One line in klog's format (what ingress-nginx's own log lines look like)."""
    now = dt.datetime.now()
    print(f"{level}{now:%m%d %H:%M:%S.%f} {os.getpid():7d} {where}] {message}", file=sys.stderr, flush=True)


class Api:
    """The API server as an in-cluster client sees it (service-account token and CA)."""

    def __init__(self) -> None:
        host = os.environ.get("KUBERNETES_SERVICE_HOST", "")
        port = os.environ.get("KUBERNETES_SERVICE_PORT", "443")
        self.base = f"https://{host}:{port}"
        self.context = ssl.create_default_context(cafile=str(SA_DIR / "ca.crt")) \
            if (SA_DIR / "ca.crt").exists() else ssl.create_default_context()
        self.context.check_hostname = False  # the service IP may not be in the server's certificate

    def request(self, method: str, path: str, body: Any = None, content_type: str = "application/json") -> Any:
        token = (SA_DIR / "token").read_text().strip()
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.base + path, data=data, method=method, headers={
            "Authorization": f"Bearer {token}", "Accept": "application/json", "Content-Type": content_type})
        with urllib.request.urlopen(req, context=self.context, timeout=10) as resp:
            return json.loads(resp.read() or b"{}")

    def items(self, path: str) -> list[dict]:
        return self.request("GET", path).get("items") or []


def _certificate_files(secrets: list[dict], wanted: set[str], cert_dir: Path, warn) -> dict[str, str]:
    """Write ``namespace/name`` TLS Secrets that Ingresses use as PEM files; ``warn`` about unusable ones."""
    import base64

    from cryptography import x509
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    by_key = {f"{s['metadata']['namespace']}/{s['metadata']['name']}": s for s in secrets}
    out: dict[str, str] = {}
    for key in sorted(wanted):
        secret = by_key.get(key)
        data = (secret or {}).get("data") or {}
        if secret is None or "tls.crt" not in data or "tls.key" not in data:
            warn("backend_ssl.go:47", f'Error obtaining X.509 certificate: no object matching key "{key}" in '
                                           "local store; using the default certificate")
            continue
        try:
            cert, key_pem = base64.b64decode(data["tls.crt"]), base64.b64decode(data["tls.key"])
            x509.load_pem_x509_certificate(cert)
            load_pem_private_key(key_pem, password=None)
        except Exception as exc:  # noqa: BLE001 - any unparsable certificate is reported the same way
            warn("backend_ssl.go:52", f'Error obtaining X.509 certificate: unexpected error creating SSL '
                                           f'certificate "{key}": {exc}; using the default certificate')
            continue
        path = cert_dir / (key.replace("/", "-") + ".pem")
        body = cert + (b"" if cert.endswith(b"\n") else b"\n") + key_pem
        if not path.exists() or path.read_bytes() != body:
            tmp = path.with_suffix(".tmp")
            tmp.write_bytes(body)
            tmp.chmod(0o600)
            tmp.replace(path)
        out[key] = str(path)
    return out


def default_certificate(path: Path) -> str:
    """The controller's self-signed fallback certificate (ingress-nginx's "Fake Certificate")."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Acme Co"),
                      x509.NameAttribute(NameOID.COMMON_NAME, "Kubernetes Ingress Controller Fake Certificate")])
    now = dt.datetime.now(dt.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + dt.timedelta(days=365))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("ingress.local")]), critical=False)
            .sign(key, hashes.SHA256()))
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM) + key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    path.chmod(0o600)
    return str(path)


class Controller:
    def __init__(self, api: Api, args: argparse.Namespace, nginx: str) -> None:
        self.api, self.args, self.nginx = api, args, nginx
        self.conf = RUN_DIR / "nginx.conf"
        self.cert_dir = RUN_DIR / "certs"
        self.proc: subprocess.Popen | None = None
        self.applied = ""  # the configuration (and certificate contents) nginx runs with
        self.failed = ""  # the last configuration nginx refused (not tried again until it changes)
        self.seen: dict[str, str] = {}  # ingress uid -> generation already synced
        self.published: set[str] = set()  # ingress keys whose status we set
        self.warnings: set[tuple[str, str]] = set()  # what the last pass found wrong

    def warn(self, where: str, message: str) -> None:
        self.warnings.add((where, message))

    # ------------------------------------------------------------------ one pass

    def classes(self) -> list[dict]:
        classes = self.api.items("/apis/networking.k8s.io/v1/ingressclasses")
        if not any((c.get("spec") or {}).get("controller") == self.args.controller_class for c in classes):
            # no IngressClass yet: serve the --ingress-class name, as ingress-nginx's flag does
            classes = [{"metadata": {"name": self.args.ingress_class}, "spec": {"controller": self.args.controller_class}}]
        return classes

    def address(self) -> list[dict]:
        ns, name = self.args.publish_service.split("/", 1)
        try:
            svc = self.api.request("GET", f"/api/v1/namespaces/{ns}/services/{name}")
        except urllib.error.HTTPError:
            return []
        lb = ((svc.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
        if lb:
            return [{k: v for k, v in entry.items() if k in ("ip", "hostname")} for entry in lb]
        ip = (svc.get("spec") or {}).get("clusterIP")
        return [{"ip": ip}] if ip and ip != "None" else []

    def sync(self) -> None:
        ingresses = self.api.items("/apis/networking.k8s.io/v1/ingresses")
        mine = render.served(ingresses, self.classes(), self.args.controller_class)
        services = {f"{s['metadata']['namespace']}/{s['metadata']['name']}": s
                    for s in self.api.items("/api/v1/services")}
        wanted = {f"{i['metadata']['namespace']}/{t['secretName']}" for i in mine
                  for t in (i.get("spec") or {}).get("tls") or [] if t.get("secretName")}
        secrets = [s for s in (self._secret(key) for key in sorted(wanted)) if s is not None]
        self.warnings, previous = set(), self.warnings
        certs = _certificate_files(secrets, wanted, self.cert_dir, self.warn)
        for ing in mine:
            for key in self._missing_services(ing, services):
                self.warn("controller.go:1214", f'Error obtaining Endpoints for Service "{key}": no object matching key '
                                                f'"{key}" in local store')
        text = render.render(render.servers(mine, services, certs, str(self.cert_dir / "default.pem")),
                             run_dir=str(RUN_DIR), access_log=str(ACCESS_LOG), http_port=self.args.http_port,
                             https_port=self.args.https_port)
        digest = text + "".join(Path(p).read_text() for p in sorted(set(certs.values())))
        if digest not in (self.applied, self.failed):
            self.reload(text, digest)
        self.events(mine)
        self.status(ingresses, mine)
        for where, message in self.warnings - previous:  # a warning is logged when it starts to hold
            klog("W", where, message)

    def _secret(self, key: str) -> dict | None:
        """One TLS Secret an Ingress names, read by name: the token may read no other (``controllers.ingresstls``)."""
        namespace, name = key.split("/", 1)
        try:
            return self.api.request("GET", f"/api/v1/namespaces/{namespace}/secrets/{urllib.parse.quote(name)}")
        except urllib.error.HTTPError:  # missing, or not (yet) readable: the default certificate is served
            return None

    @staticmethod
    def _missing_services(ing: dict, services: dict) -> set[str]:
        ns = ing["metadata"]["namespace"]
        spec = ing.get("spec") or {}
        backends = [spec.get("defaultBackend") or {}] + [p.get("backend") or {} for r in spec.get("rules") or []
                                                          for p in (r.get("http") or {}).get("paths") or []]
        return {f"{ns}/{b['service']['name']}" for b in backends if (b.get("service") or {}).get("name")
                and f"{ns}/{b['service']['name']}" not in services}

    def reload(self, text: str, digest: str) -> None:
        klog("I", "controller.go:214", '"Configuration changes detected, backend reload required"')
        candidate = RUN_DIR / "nginx.conf.new"
        candidate.write_text(text)
        test = subprocess.run([self.nginx, "-t", "-q", "-c", str(candidate), "-e", "stderr"], capture_output=True, text=True)
        if test.returncode != 0:
            klog("E", "controller.go:226", f'"Unexpected failure reloading the backend" err="exit status '
                                           f'{test.returncode}\\n{test.stderr.strip()}"')
            self.failed = digest
            return
        candidate.replace(self.conf)
        if self.proc is None or self.proc.poll() is not None:
            self.proc = subprocess.Popen([self.nginx, "-c", str(self.conf), "-e", "stderr", "-g", "daemon off;"])
        else:
            self.proc.send_signal(signal.SIGHUP)
        self.applied = digest
        klog("I", "controller.go:232", '"Backend successfully reloaded"')

    def events(self, mine: list[dict]) -> None:
        for ing in mine:
            meta = ing["metadata"]
            generation = str(meta.get("generation", 1))
            if self.seen.get(meta["uid"]) == generation:
                continue
            self.seen[meta["uid"]] = generation
            now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            event = {"apiVersion": "v1", "kind": "Event",
                     "metadata": {"name": f"{meta['name']}.{hashlib.sha1((meta['uid'] + generation).encode()).hexdigest()[:16]}",
                                  "namespace": meta["namespace"]},
                     "involvedObject": {"kind": "Ingress", "apiVersion": "networking.k8s.io/v1", "name": meta["name"],
                                        "namespace": meta["namespace"], "uid": meta["uid"],
                                        "resourceVersion": meta.get("resourceVersion", "")},
                     "reason": "Sync", "message": "Scheduled for sync", "type": "Normal", "count": 1,
                     "source": {"component": COMPONENT}, "firstTimestamp": now, "lastTimestamp": now,
                     "reportingComponent": COMPONENT, "reportingInstance": os.environ.get("POD_NAME", "")}
            klog("I", "event.go:377", f'Event(v1.ObjectReference{{Kind:"Ingress", Namespace:"{meta["namespace"]}", '
                                      f'Name:"{meta["name"]}"}}): type: \'Normal\' reason: \'Sync\' Scheduled for sync')
            try:
                self.api.request("POST", f"/api/v1/namespaces/{meta['namespace']}/events", event)
            except urllib.error.HTTPError as exc:
                if exc.code != 409:
                    klog("W", "event.go:380", f"could not record event: {exc}")

    def status(self, ingresses: list[dict], mine: list[dict]) -> None:
        address = self.address()
        keys = {f"{i['metadata']['namespace']}/{i['metadata']['name']}" for i in mine}
        for ing in ingresses:
            meta = ing["metadata"]
            key = f"{meta['namespace']}/{meta['name']}"
            current = ((ing.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
            # an Ingress this controller no longer serves loses the address it published (also one a
            # previous run of the controller published)
            want = address if key in keys else ([] if key in self.published or current == address else current)
            if current == want:
                continue
            path = f"/apis/networking.k8s.io/v1/namespaces/{meta['namespace']}/ingresses/{meta['name']}/status"
            try:
                self.api.request("PATCH", path, {"status": {"loadBalancer": {"ingress": want or None}}},
                                 content_type="application/merge-patch+json")
            except urllib.error.HTTPError as exc:
                klog("W", "status.go:300", f'error updating ingress rule: {exc}')
                continue
            klog("I", "status.go:304", f'"updating Ingress status" namespace="{meta["namespace"]}" '
                                       f'ingress="{meta["name"]}" currentValue={json.dumps(current)} '
                                       f'newValue={json.dumps(want)}')
            if key in keys:
                self.published.add(key)
            else:
                self.published.discard(key)

    def stop(self) -> int:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGQUIT)  # graceful: workers finish their requests
            try:
                return self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                return self.proc.wait()
        return 0


def _relay(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    os.set_blocking(fd, True)
    keep_open = os.open(path, os.O_WRONLY)  # reads never see EOF while nginx reopens the log
    with os.fdopen(fd, "rb", buffering=0) as fifo:
        for line in fifo:
            sys.stdout.buffer.write(line)
            sys.stdout.flush()
    os.close(keep_open)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="nginx-ingress-controller")
    parser.add_argument("--controller-class", default=render.CONTROLLER)
    parser.add_argument("--ingress-class", default="nginx")
    parser.add_argument("--publish-service", default="ingress-nginx/ingress-nginx-controller")
    parser.add_argument("--http-port", type=int, default=80)
    parser.add_argument("--https-port", type=int, default=443)
    parser.add_argument("--sync-period", type=float, default=1.0)
    args, _unknown = parser.parse_known_args(argv)
    nginx = shutil.which("nginx", path="/usr/sbin:/usr/bin:/usr/local/sbin:/usr/local/bin")
    if nginx is None:
        print("nginx is not installed on this node (Debian package nginx)", file=sys.stderr)
        return 127
    for d in (RUN_DIR, RUN_DIR / "certs"):
        d.mkdir(parents=True, exist_ok=True)
    if not ACCESS_LOG.exists():
        os.mkfifo(ACCESS_LOG, 0o600)
    threading.Thread(target=_relay, args=(ACCESS_LOG,), daemon=True).start()
    default_certificate(RUN_DIR / "certs" / "default.pem")
    version = subprocess.run([nginx, "-v"], capture_output=True, text=True).stderr.strip()
    print("-" * 79 + f"\nNGINX Ingress controller (SREGym embedded)\n  nginx version: {version}\n" + "-" * 79,
          file=sys.stderr, flush=True)
    controller = Controller(Api(), args, nginx)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    while not stop.is_set():
        try:
            controller.sync()
        except (urllib.error.URLError, OSError, ValueError) as exc:
            klog("W", "controller.go:190", f"sync failed: {exc}")
        if controller.proc is not None and controller.proc.poll() is not None:
            klog("E", "nginx.go:88", f"nginx exited with status {controller.proc.returncode}; starting it again")
            controller.applied = ""
        stop.wait(args.sync_period)
    klog("I", "nginx.go:363", '"Received SIGTERM, shutting down"')
    return controller.stop()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
