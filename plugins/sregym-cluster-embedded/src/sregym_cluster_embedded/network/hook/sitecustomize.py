"""Cluster DNS for Python processes of an embedded-cluster pod when no private /etc/resolv.conf can be mounted.

Loaded through PYTHONPATH. Cluster names (after search-path expansion with ndots, as glibc does)
are resolved by asking the cluster DNS server named in SREGYM_DNS_SERVER (ip:port, always 127.x).
Numeric addresses and /etc/hosts names resolve as usual; anything else fails, because the cluster
never sends a query outside 127.0.0.0/8. Another sitecustomize further down the path is chained.
"""

from __future__ import annotations

import os
import random
import socket
import struct

_SERVER = os.environ.get("SREGYM_DNS_SERVER", "")
_SEARCH = [d for d in os.environ.get("SREGYM_DNS_SEARCH", "").split() if d]
_NDOTS = int(os.environ.get("SREGYM_DNS_NDOTS", "5") or 5)
_original_getaddrinfo = socket.getaddrinfo
_original_gethostbyname = socket.gethostbyname
_original_gethostbyname_ex = socket.gethostbyname_ex


def _hosts() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    try:
        with open("/etc/hosts") as fh:
            for line in fh:
                parts = line.split("#", 1)[0].split()
                for name in parts[1:]:
                    out.setdefault(name.lower(), []).append(parts[0])
    except OSError:
        pass
    return out


def _encode(name: str) -> bytes:
    return b"".join(bytes([len(p)]) + p.encode() for p in name.strip(".").split(".") if p) + b"\x00"


def _skip_name(data: bytes, offset: int) -> int:
    while True:
        length = data[offset]
        if length & 0xC0 == 0xC0:
            return offset + 2
        offset += 1
        if length == 0:
            return offset
        offset += length


def _query(name: str) -> tuple[int, list[str]]:
    """(rcode, IPv4 addresses) from the cluster DNS server; rcode 5 (REFUSED) when unreachable."""
    host, _, port = _SERVER.rpartition(":")
    if not host.startswith("127."):
        return 5, []
    ident = random.randrange(65536)
    packet = struct.pack("!6H", ident, 0x0100, 1, 0, 0, 0) + _encode(name) + struct.pack("!2H", 1, 1)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.settimeout(2.0)
        try:
            sock.sendto(packet, (host, int(port)))
            data, _ = sock.recvfrom(4096)
        except OSError:
            return 5, []
    _id, flags, qd, an, _ns, _ar = struct.unpack("!6H", data[:12])
    offset = 12
    for _ in range(qd):
        offset = _skip_name(data, offset) + 4
    ips = []
    for _ in range(an):
        offset = _skip_name(data, offset)
        rtype, _cls, _ttl, length = struct.unpack("!2HIH", data[offset:offset + 10])
        offset += 10
        if rtype == 1 and length == 4:
            ips.append(socket.inet_ntoa(data[offset:offset + 4]))
        offset += length
    return flags & 0xF, ips


def _candidates(name: str) -> list[str]:
    if name.endswith("."):
        return [name[:-1]]
    expanded = [f"{name}.{d}" for d in _SEARCH]
    return ([name] + expanded) if name.count(".") >= _NDOTS else (expanded + [name])


def cluster_lookup(name: str) -> list[str] | None:
    """Addresses for a name, or None when the name is not ours to answer (numeric, /etc/hosts)."""
    try:
        socket.inet_aton(name)
        if name.count(".") == 3:
            return None
    except OSError:
        pass
    if ":" in name:
        return None
    lowered = name.lower()
    if lowered in _hosts():
        return None
    for candidate in _candidates(lowered):
        rcode, ips = _query(candidate)
        if rcode == 0 and ips:
            return ips
    return []


def getaddrinfo(host, port, family=0, type=0, proto=0, flags=0):  # noqa: A002 - socket's own signature
    if isinstance(host, bytes):
        host = host.decode()
    if not host or not _SERVER:
        return _original_getaddrinfo(host, port, family, type, proto, flags)
    ips = cluster_lookup(host)
    if ips is None:
        return _original_getaddrinfo(host, port, family, type, proto, flags)
    if not ips or family not in (0, socket.AF_INET):
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
    out = []
    for ip in ips:
        out += _original_getaddrinfo(ip, port, socket.AF_INET, type, proto, flags | socket.AI_NUMERICHOST)
    return out


def gethostbyname(host):
    return getaddrinfo(host, None, socket.AF_INET)[0][4][0]


def gethostbyname_ex(host):
    ips = [ai[4][0] for ai in getaddrinfo(host, None, socket.AF_INET, socket.SOCK_STREAM)]
    return host, [], ips


if _SERVER:
    socket.getaddrinfo = getaddrinfo
    socket.gethostbyname = gethostbyname
    socket.gethostbyname_ex = gethostbyname_ex


def _chain() -> None:
    """Run the next sitecustomize on sys.path, if any (e.g. a virtualenv's)."""
    import importlib.util
    import sys

    here = os.path.dirname(os.path.abspath(__file__))
    for entry in sys.path:
        if os.path.abspath(entry or ".") == here:
            continue
        candidate = os.path.join(entry or ".", "sitecustomize.py")
        if os.path.isfile(candidate):
            spec = importlib.util.spec_from_file_location("_sregym_next_sitecustomize", candidate)
            if spec and spec.loader:
                try:
                    spec.loader.exec_module(importlib.util.module_from_spec(spec))
                except Exception:
                    pass
            return


_chain()
