"""A self-signed CA and a server certificate for 127.0.0.1 (kubectl only sends tokens over TLS)."""

from __future__ import annotations

import datetime as dt
import ipaddress
import ssl
from pathlib import Path


def generate(hosts: list[str]) -> tuple[bytes, bytes, bytes]:
    """(ca_cert_pem, server_cert_pem, server_key_pem) for the given IPs/DNS names."""
    # imported here: a restart with existing certificates never pays for loading cryptography
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    def _name(common_name: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])

    def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
        return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                 serialization.NoEncryption())

    now = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=5)
    until = now + dt.timedelta(days=3650)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(_name("sregym-embedded-ca"))
        .issuer_name(_name("sregym-embedded-ca"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(until)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                     content_commitment=False, key_encipherment=False, data_encipherment=False,
                                     key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    sans: list[x509.GeneralName] = [x509.DNSName("localhost"), x509.DNSName("kubernetes"),
                                    x509.DNSName("kubernetes.default"), x509.DNSName("kubernetes.default.svc")]
    for host in hosts:
        try:
            sans.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            sans.append(x509.DNSName(host))
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name("kube-apiserver"))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(until)
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    return ca_cert.public_bytes(pem), cert.public_bytes(pem), _pem_key(key)


def ensure_certs(directory: Path, hosts: list[str]) -> tuple[Path, Path, Path]:
    """Create (once) ca.crt, server.crt and server.key in ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    ca, crt, key = directory / "ca.crt", directory / "server.crt", directory / "server.key"
    recorded = directory / "hosts.txt"
    wanted = "\n".join(sorted(set(hosts)))
    # the server's addresses can change between runs of one cluster (its service range is allocated
    # anew), and in-cluster clients verify the `kubernetes` Service IP: re-issue when they differ
    stale = not recorded.exists() or recorded.read_text() != wanted
    if stale or not (ca.exists() and crt.exists() and key.exists()):
        ca_pem, crt_pem, key_pem = generate(hosts)
        ca.write_bytes(ca_pem)
        crt.write_bytes(crt_pem)
        key.touch(mode=0o600)
        key.write_bytes(key_pem)
        recorded.write_text(wanted)
    return ca, crt, key


def server_context(cert: Path, key: Path) -> ssl.SSLContext:
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(str(cert), str(key))
    return ctx
