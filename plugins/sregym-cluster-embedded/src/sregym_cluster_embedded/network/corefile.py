"""The cluster DNS's configuration: a CoreDNS Corefile in the ConfigMap ``kube-system/coredns``.

The embedded DNS is not CoreDNS, but it reads the same object a real cluster's CoreDNS reads and
honours the plugins that change which cluster names resolve:

* ``rewrite [continue|stop] name [exact|prefix|suffix|substring|regex] FROM TO``: the query name is
  rewritten before the lookup (answers carry the name the client asked for, as ``answer auto``);
* ``template CLASS TYPE [ZONE...] { match REGEX...; rcode CODE; fallthrough [ZONE...] }``: a query
  in the zones whose class and type match, and whose name (with its trailing dot) matches a regex,
  is answered with the rcode and no records. A name in the zones that no regex matches gets
  NXDOMAIN unless ``fallthrough`` covers it, as in CoreDNS. ``answer`` lines are not supported
  (such a template answers with no records).

Everything else (``kubernetes``, ``forward``, ``cache``...) is accepted and ignored: the cluster
zone is always served from the API, and nothing is ever forwarded off this machine. A Corefile that
does not parse leaves the previous configuration in force and is logged, as CoreDNS's ``reload``
keeps the running config.
"""

from __future__ import annotations

import re
from typing import Any

import attrs

from . import dnswire as w

DEFAULT_COREFILE = """.:53 {
    errors
    health {
       lameduck 5s
    }
    ready
    kubernetes cluster.local in-addr.arpa ip6.arpa {
       pods insecure
       fallthrough in-addr.arpa ip6.arpa
       ttl 30
    }
    prometheus :9153
    forward . /etc/resolv.conf {
       max_concurrent 1000
    }
    cache 30
    loop
    reload
    loadbalance
}
"""

RCODES = {"NOERROR": w.NOERROR, "NXDOMAIN": w.NXDOMAIN, "SERVFAIL": 2, "REFUSED": w.REFUSED}
QTYPES = {"A": w.TYPE_A, "AAAA": w.TYPE_AAAA, "CNAME": w.TYPE_CNAME, "ANY": w.TYPE_ANY, "SRV": 33, "PTR": 12,
          "TXT": 16, "MX": 15, "NS": 2, "SOA": 6}


class CorefileError(ValueError):
    """The Corefile does not parse."""


@attrs.frozen
class Directive:
    name: str
    args: tuple[str, ...]
    block: tuple[Directive, ...] = ()


def _tokens(text: str) -> list[tuple[str, int]]:
    """(token, line) pairs; ``{``, ``}`` and ``\\n`` are tokens of their own."""
    out: list[tuple[str, int]] = []
    for number, line in enumerate(text.splitlines(), 1):
        position = 0
        while position < len(line):
            char = line[position]
            if char == "#":
                break
            if char.isspace():
                position += 1
            elif char in "{}":
                out.append((char, number))
                position += 1
            elif char == '"':
                end = line.find('"', position + 1)
                if end < 0:
                    raise CorefileError(f"line {number}: unterminated quote")
                out.append((line[position + 1:end], number))
                position = end + 1
            else:
                match = re.match(r'[^\s{}"#]+', line[position:])
                if match is None:  # unreachable: the character at `position` starts a word
                    raise CorefileError(f"line {number}: unexpected {char!r}")
                out.append((match.group(0), number))
                position += len(match.group(0))
        out.append(("\n", number))
    return out


def _parse_block(tokens: list[tuple[str, int]], index: int, nested: bool) -> tuple[list[Directive], int]:
    directives: list[Directive] = []
    words: list[str] = []
    while index < len(tokens):
        token, line = tokens[index]
        index += 1
        if token == "\n":
            if words:
                directives.append(Directive(words[0], tuple(words[1:])))
                words = []
        elif token == "{":
            if not words:
                raise CorefileError(f"line {line}: block without a name")
            inner, index = _parse_block(tokens, index, True)
            directives.append(Directive(words[0], tuple(words[1:]), tuple(inner)))
            words = []
        elif token == "}":
            if not nested:
                raise CorefileError(f"line {line}: unexpected '}}'")
            if words:
                directives.append(Directive(words[0], tuple(words[1:])))
            return directives, index
        else:
            words.append(token)
    if nested:
        raise CorefileError("unexpected end of file: missing '}'")
    if words:
        directives.append(Directive(words[0], tuple(words[1:])))
    return directives, index


def _fqdn(name: str) -> str:
    return name.lower().strip(".") + "."


def _in_zone(name: str, zone: str) -> bool:
    return zone == "." or name == zone or name.endswith("." + zone)


@attrs.frozen
class Rewrite:
    kind: str
    source: str
    target: str

    def apply(self, name: str) -> str | None:
        """The rewritten name (with trailing dot), or None when the rule does not match."""
        if self.kind == "exact":
            return _fqdn(self.target) if name == _fqdn(self.source) else None
        if self.kind == "prefix":
            return self.target.lower() + name[len(self.source):] if name.startswith(self.source.lower()) else None
        if self.kind == "suffix":
            source = self.source.lower()
            return name[: -len(source)] + self.target.lower() if name.endswith(source) else None
        if self.kind == "substring":
            source = self.source.lower()
            return name.replace(source, self.target.lower(), 1) if source in name else None
        match = re.fullmatch(self.source, name) or re.fullmatch(self.source, name.rstrip("."))
        if match is None:
            return None
        out = re.sub(r"\{(\d+)\}", lambda m: match.group(int(m.group(1))) or "", self.target)
        return _fqdn(out)


@attrs.frozen
class Template:
    qclass: str
    qtype: str
    zones: tuple[str, ...]
    patterns: tuple[re.Pattern, ...]
    rcode: int
    fallthrough: tuple[str, ...] | None  # None: no fallthrough; (): every zone

    def answer(self, name: str, qtype: int) -> int | None:
        """The rcode for this query, or None when the template passes it on."""
        if self.qclass not in ("IN", "ANY"):
            return None
        if self.qtype != "ANY" and QTYPES.get(self.qtype) != qtype:
            return None
        if not any(_in_zone(name, zone) for zone in self.zones):
            return None
        if any(p.search(name) for p in self.patterns):
            return self.rcode
        if self.fallthrough is not None and (not self.fallthrough or any(_in_zone(name, z) for z in self.fallthrough)):
            return None
        return w.NXDOMAIN


@attrs.frozen
class DnsConfig:
    """The parsed Corefile's effect on lookups (the server block serving the query's zone)."""

    blocks: tuple[tuple[tuple[str, ...], tuple[Rewrite, ...], tuple[Template, ...]], ...] = ()

    def _block(self, name: str):
        best, best_len = None, -1
        for zones, rewrites, templates in self.blocks:
            for zone in zones:
                if _in_zone(name, zone) and len(zone) > best_len:
                    best, best_len = (rewrites, templates), len(zone)
        return best

    def rewrite(self, name: str) -> str:
        fq = _fqdn(name)
        block = self._block(fq)
        if block is None:
            return name
        for rule in block[0]:
            out = rule.apply(fq)
            if out is not None:
                return out.rstrip(".")
        return name

    def template_rcode(self, name: str, qtype: int) -> int | None:
        fq = _fqdn(name)
        block = self._block(fq)
        if block is None:
            return None
        for template in block[1]:
            rcode = template.answer(fq, qtype)
            if rcode is not None:
                return rcode
        return None


def _zone_of(key: str) -> str:
    key = re.sub(r"^(dns|tls|https|grpc)://", "", key)
    key = key.rsplit(":", 1)[0] if re.search(r":\d+$", key) else key
    return _fqdn(key) if key not in (".", "") else "."


def _rewrite(directive: Directive) -> Rewrite | None:
    args = list(directive.args)
    if args and args[0] in ("continue", "stop"):
        args = args[1:]
    if not args or args[0] != "name":
        return None  # other fields (type, class, edns0, ttl...) do not change which names resolve
    args = args[1:]
    kind = "exact"
    if args and args[0] in ("exact", "prefix", "suffix", "substring", "regex"):
        kind, args = args[0], args[1:]
    if len(args) < 2:
        raise CorefileError("rewrite name needs FROM and TO")
    return Rewrite(kind, args[0], args[1])


def _template(directive: Directive) -> Template:
    if len(directive.args) < 2:
        raise CorefileError("template needs CLASS and TYPE")
    qclass, qtype = directive.args[0].upper(), directive.args[1].upper()
    zones = tuple(_zone_of(z) for z in directive.args[2:]) or (".",)
    patterns: list[re.Pattern] = []
    rcode = w.NOERROR
    fallthrough: tuple[str, ...] | None = None
    for sub in directive.block:
        if sub.name == "match":
            for regex in sub.args:
                try:
                    patterns.append(re.compile(regex, re.IGNORECASE))
                except re.error as exc:
                    raise CorefileError(f"template match {regex!r}: {exc}") from None
        elif sub.name == "rcode":
            if not sub.args or sub.args[0].upper() not in RCODES:
                raise CorefileError(f"template rcode must be one of {', '.join(RCODES)}")
            rcode = RCODES[sub.args[0].upper()]
        elif sub.name == "fallthrough":
            fallthrough = tuple(_zone_of(z) for z in sub.args)
    if not patterns:
        patterns.append(re.compile(".*"))
    return Template(qclass, qtype, zones, tuple(patterns), rcode, fallthrough)


def parse(text: str) -> DnsConfig:
    """The DnsConfig of a Corefile; CorefileError when it does not parse."""
    top, _ = _parse_block(_tokens(text), 0, False)
    blocks = []
    for server in top:
        if not server.block and server.args:
            raise CorefileError(f"server block {server.name!r} has no body")
        zones = tuple(_zone_of(k) for k in (server.name, *server.args))
        rewrites = tuple(r for d in server.block if d.name == "rewrite" and (r := _rewrite(d)) is not None)
        templates = tuple(_template(d) for d in server.block if d.name == "template")
        blocks.append((zones, rewrites, templates))
    return DnsConfig(tuple(blocks))


class CorefileSource:
    """The current DnsConfig from the ``kube-system/coredns`` ConfigMap in an informer's cache."""

    NAMESPACE, NAME, KEY = "kube-system", "coredns", "Corefile"

    def __init__(self, configmaps: Any, log: Any) -> None:
        self.configmaps = configmaps
        self.log = log
        self._version: str | None = None
        self._config = DnsConfig()

    def current(self) -> DnsConfig:
        obj = self.configmaps.get(self.NAMESPACE, self.NAME) if self.configmaps is not None else None
        version = (obj or {}).get("metadata", {}).get("resourceVersion")
        if version == self._version:
            return self._config
        self._version = version
        text = ((obj or {}).get("data") or {}).get(self.KEY)
        if text is None:
            self._config = DnsConfig()
            return self._config
        try:
            self._config = parse(text)
        except CorefileError as exc:  # keep the running configuration, as CoreDNS's reload does
            self.log.warning("kube-system/coredns: Corefile not loaded: %s", exc)
        return self._config
