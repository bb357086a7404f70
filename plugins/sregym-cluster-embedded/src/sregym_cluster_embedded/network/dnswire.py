"""Just enough of the DNS wire format (RFC 1035) for an authoritative cluster.local server."""

from __future__ import annotations

import socket
import struct
from collections.abc import Sequence
from dataclasses import dataclass, field

TYPE_A, TYPE_NS, TYPE_CNAME, TYPE_SOA, TYPE_PTR, TYPE_TXT, TYPE_AAAA, TYPE_SRV, TYPE_ANY = 1, 2, 5, 6, 12, 16, 28, 33, 255
CLASS_IN = 1
NOERROR, FORMERR, SERVFAIL, NXDOMAIN, NOTIMP, REFUSED = 0, 1, 2, 3, 4, 5


class WireError(ValueError):
    pass


@dataclass
class Question:
    name: str
    qtype: int
    qclass: int = CLASS_IN


@dataclass
class Record:
    name: str
    rtype: int
    ttl: int
    data: bytes  # already encoded RDATA


@dataclass
class Message:
    id: int
    flags: int
    questions: list[Question] = field(default_factory=list)
    answers: list[Record] = field(default_factory=list)
    authority: list[Record] = field(default_factory=list)

    @property
    def opcode(self) -> int:
        return (self.flags >> 11) & 0xF

    @property
    def rcode(self) -> int:
        return self.flags & 0xF


def encode_name(name: str) -> bytes:
    out = b""
    for label in name.strip(".").split("."):
        if not label:
            continue
        raw = label.encode("idna") if not label.isascii() else label.encode()
        if len(raw) > 63:
            raise WireError("label too long")
        out += bytes([len(raw)]) + raw
    return out + b"\x00"


def _read_name(data: bytes, offset: int, depth: int = 0) -> tuple[str, int]:
    labels = []
    jumped_end = None
    while True:
        if offset >= len(data):
            raise WireError("truncated name")
        length = data[offset]
        if length & 0xC0 == 0xC0:  # compression pointer
            if offset + 1 >= len(data) or depth > 10:
                raise WireError("bad pointer")
            pointer = ((length & 0x3F) << 8) | data[offset + 1]
            if jumped_end is None:
                jumped_end = offset + 2
            offset, depth = pointer, depth + 1
            continue
        offset += 1
        if length == 0:
            break
        labels.append(data[offset:offset + length].decode("ascii", "replace"))
        offset += length
    return ".".join(labels), (jumped_end if jumped_end is not None else offset)


def parse_query(data: bytes) -> Message:
    if len(data) < 12:
        raise WireError("short header")
    ident, flags, qdcount, _an, _ns, _ar = struct.unpack("!6H", data[:12])
    msg = Message(ident, flags)
    offset = 12
    for _ in range(min(qdcount, 4)):
        name, offset = _read_name(data, offset)
        if offset + 4 > len(data):
            raise WireError("truncated question")
        qtype, qclass = struct.unpack("!2H", data[offset:offset + 4])
        offset += 4
        msg.questions.append(Question(name.lower(), qtype, qclass))
    return msg


def build_response(query: Message, rcode: int, answers: list[Record], authority: Sequence[Record] = (),
                   *, authoritative: bool = True, max_size: int | None = None) -> bytes:
    flags = 0x8000 | (query.flags & 0x0100) | (query.opcode << 11) | rcode  # QR, copy RD and opcode
    if authoritative:
        flags |= 0x0400
    body = b""
    for q in query.questions:
        body += encode_name(q.name) + struct.pack("!2H", q.qtype, q.qclass)
    records = b""
    count = 0
    for rec in answers:
        chunk = encode_name(rec.name) + struct.pack("!2HIH", rec.rtype, CLASS_IN, rec.ttl, len(rec.data)) + rec.data
        if max_size is not None and 12 + len(body) + len(records) + len(chunk) > max_size:
            flags |= 0x0200  # TC: the client retries over TCP
            break
        records += chunk
        count += 1
    auth = b""
    for rec in authority:
        auth += encode_name(rec.name) + struct.pack("!2HIH", rec.rtype, CLASS_IN, rec.ttl, len(rec.data)) + rec.data
    header = struct.pack("!6H", query.id, flags, len(query.questions), count, len(authority) if not flags & 0x0200 else 0, 0)
    return header + body + records + (auth if not flags & 0x0200 else b"")


def a_record(name: str, ip: str, ttl: int) -> Record:
    return Record(name, TYPE_A, ttl, socket.inet_aton(ip))


def cname_record(name: str, target: str, ttl: int) -> Record:
    return Record(name, TYPE_CNAME, ttl, encode_name(target))


def ptr_record(name: str, target: str, ttl: int) -> Record:
    return Record(name, TYPE_PTR, ttl, encode_name(target))


def srv_record(name: str, priority: int, weight: int, port: int, target: str, ttl: int) -> Record:
    return Record(name, TYPE_SRV, ttl, struct.pack("!3H", priority, weight, port) + encode_name(target))


def soa_record(zone: str, ttl: int) -> Record:
    data = encode_name(f"ns.dns.{zone}") + encode_name(f"hostmaster.{zone}") + struct.pack("!5I", 1, 7200, 1800, 86400, ttl)
    return Record(zone, TYPE_SOA, ttl, data)


# ---------------------------------------------------------------- client side (used by the resolver hook)


def build_query(ident: int, name: str, qtype: int) -> bytes:
    return struct.pack("!6H", ident, 0x0100, 1, 0, 0, 0) + encode_name(name) + struct.pack("!2H", qtype, CLASS_IN)


def parse_answers(data: bytes) -> tuple[int, list[tuple[str, int, bytes]]]:
    """(rcode, [(name, type, rdata)]) of a response."""
    if len(data) < 12:
        raise WireError("short header")
    _id, flags, qd, an, _ns, _ar = struct.unpack("!6H", data[:12])
    offset = 12
    for _ in range(qd):
        _, offset = _read_name(data, offset)
        offset += 4
    out = []
    for _ in range(an):
        name, offset = _read_name(data, offset)
        rtype, _cls, _ttl, length = struct.unpack("!2HIH", data[offset:offset + 10])
        offset += 10
        rdata = data[offset:offset + length]
        if rtype in (TYPE_CNAME, TYPE_PTR):
            rdata = _read_name(data, offset)[0].encode()
        offset += length
        out.append((name.lower(), rtype, rdata))
    return flags & 0xF, out
