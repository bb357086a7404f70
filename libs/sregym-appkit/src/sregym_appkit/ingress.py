"""TLS for an app's Ingress, issued at deploy the way a cluster's certificate issuer would.

:func:`ensure_tls` gives every Ingress in the rendered manifests that lists ``spec.tls`` a serving
certificate in its Secret (``kubernetes.io/tls``), signed by the app's own ingress CA. The CA (key
included, as a cert-manager CA issuer keeps it) is the Secret ``ingress-ca`` in the app's hidden
namespace, the workload generator's: users (the generator) trust it, agents cannot read it. What
exists already is kept, so a redeploy neither rotates the CA nor replaces a certificate.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
from typing import Any, cast

import yaml

CA_SECRET = "ingress-ca"
VALIDITY_DAYS = 365


def _name(common: str):
    from cryptography import x509
    from cryptography.x509.oid import NameOID

    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "SREGym"),
                      x509.NameAttribute(NameOID.COMMON_NAME, common)])


def new_ca(common: str) -> tuple[bytes, bytes]:
    """(certificate PEM, key PEM) of a fresh CA."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    key = ec.generate_private_key(ec.SECP256R1())
    now = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=5)
    cert = (x509.CertificateBuilder().subject_name(_name(common)).issuer_name(_name(common))
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now).not_valid_after(now + dt.timedelta(days=10 * VALIDITY_DAYS))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                         content_commitment=False, key_encipherment=False, data_encipherment=False,
                                         key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
            .sign(key, hashes.SHA256()))
    pem = serialization.Encoding.PEM
    return cert.public_bytes(pem), key.private_bytes(pem, serialization.PrivateFormat.PKCS8,
                                                     serialization.NoEncryption())


def issue(ca_cert: bytes, ca_key: bytes, hosts: list[str], *, not_before: dt.datetime | None = None,
          not_after: dt.datetime | None = None) -> tuple[bytes, bytes]:
    """(certificate PEM, key PEM) for ``hosts``, signed by the CA; valid from now for a year unless given."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID

    ca = x509.load_pem_x509_certificate(ca_cert)
    from cryptography.hazmat.primitives.asymmetric.types import CertificateIssuerPrivateKeyTypes

    # the CA's key is one this module made (an EC key: a kind that signs certificates)
    signer = cast(CertificateIssuerPrivateKeyTypes, serialization.load_pem_private_key(ca_key, password=None))
    key = ec.generate_private_key(ec.SECP256R1())
    start = not_before or dt.datetime.now(dt.UTC) - dt.timedelta(minutes=5)
    end = not_after or start + dt.timedelta(days=VALIDITY_DAYS)
    cert = (x509.CertificateBuilder().subject_name(_name(hosts[0])).issuer_name(ca.subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(start).not_valid_after(end)
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(h) for h in hosts]), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .sign(signer, hashes.SHA256()))
    pem = serialization.Encoding.PEM
    return cert.public_bytes(pem), key.private_bytes(pem, serialization.PrivateFormat.PKCS8,
                                                     serialization.NoEncryption())


def tls_secret(name: str, namespace: str, cert: bytes, key: bytes, ca: bytes | None = None,
               labels: dict[str, str] | None = None) -> dict[str, Any]:
    data = {"tls.crt": base64.b64encode(cert).decode(), "tls.key": base64.b64encode(key).decode()}
    if ca is not None:
        data["ca.crt"] = base64.b64encode(ca).decode()
    return {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
            "metadata": {"name": name, "namespace": namespace, "labels": labels or {}}, "data": data}


def _existing(kubectl: Any, namespace: str, name: str) -> dict | None:
    out = kubectl.run("get", "secret", name, "-n", namespace, "-o", "json", "--ignore-not-found", timeout=30)
    return json.loads(out) if out.strip() else None


def ensure_tls(kubectl: Any, manifests_yaml: str, ca_namespace: str) -> list[str]:
    """Create the CA and the TLS Secrets the manifests' Ingresses name, where missing; returns what was made
    (``kubectl create``: no last-applied annotation recording them, issue #34)."""
    wanted = []
    for doc in yaml.safe_load_all(manifests_yaml):
        if isinstance(doc, dict) and doc.get("kind") == "Ingress":
            ns = doc["metadata"].get("namespace", "default")
            wanted += [(ns, t["secretName"], list(t.get("hosts") or [])) for t in (doc.get("spec") or {}).get("tls") or []
                       if t.get("secretName") and t.get("hosts")]
    if not wanted:
        return []
    made: list[str] = []
    ca = _existing(kubectl, ca_namespace, CA_SECRET)
    if ca is None:
        cert, key = new_ca(f"{ca_namespace} ingress CA")
        kubectl.run("create", "-f", "-", stdin=json.dumps(tls_secret(CA_SECRET, ca_namespace, cert, key, ca=cert)))
        made.append(f"{ca_namespace}/{CA_SECRET}")
    else:
        cert, key = (base64.b64decode(ca["data"][k]) for k in ("tls.crt", "tls.key"))
    for ns, name, hosts in wanted:
        if _existing(kubectl, ns, name) is None:
            leaf, leaf_key = issue(cert, key, hosts)
            kubectl.run("create", "-f", "-", stdin=json.dumps(tls_secret(name, ns, leaf, leaf_key)))
            made.append(f"{ns}/{name}")
    return made
