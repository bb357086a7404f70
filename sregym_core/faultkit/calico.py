"""Calico's label selectors, and the pod routes its BGP resources give the nodes.

One implementation for the embedded cluster (which routes pods by it) and for the fault packs
(which decide from it whether a fault is present), so the two never disagree.

Selectors
---------
:func:`parse_selector` reads Calico's selector syntax (the one ``BGPPeer.spec.nodeSelector`` and
``peerSelector`` take) into a predicate over a node's labels. It accepts:

==============================  ===============================================================
``all()``, ``global()``         every label set
``has(k)``                      ``k`` is present (any value, the empty one too)
``k == 'v'``                    ``k`` is present with value ``v``
``k != 'v'``                    ``k`` is absent or has another value
``k in {'a', 'b'}``             ``k`` is present with one of the values (``{}``: none; a trailing
                                comma is allowed)
``k not in {'a', 'b'}``         ``k`` is absent or has none of the values
``k contains 's'``              ``k`` is present and its value contains ``s``
``k starts with 's'``           ``k`` is present and its value starts with ``s``
``k ends with 's'``             ``k`` is present and its value ends with ``s``
``!e``                          negation (``!has(k)``: ``k`` is absent)
``e && e``, ``e || e``          both, either; ``&&`` binds tighter than ``||``
``( e )``                       grouping
(empty text)                    every label set, as an unset selector
==============================  ===============================================================

Values are quoted with ``'`` or ``"`` (no escapes inside); keys are runs of letters, digits and
``_ . / -`` (so ``node-role.kubernetes.io/control-plane``); white space between tokens is free.
It refuses, with :class:`SelectorError` (a :class:`~sregym_core.errors.ConfigError` with hints):
an unquoted value (``a == b``), a quoted key (``has('a')``, ``'a' == 'b'``), an operator with a
side missing (``a ==``, ``&& has(a)``), an unclosed ``(`` or ``{`` (``has(``, ``a in {'x'``), set
values without commas (``{'a' 'b'}``), two expressions with no ``&&`` or ``||`` between them
(``has(a) has(b)``), any other operator or character (``a ~ 'b'``, ``a = 'b'``, ``a > '1'``), and
nesting deeper than :data:`MAX_DEPTH`. :func:`selects` treats a refused selector as selecting no
node, as Calico, which rejects the resource, peers nobody on it.

Routes
------
Calico programs, on each node, a route to every pod block it learns over BGP. With the node-to-node
mesh on (``BGPConfiguration`` ``default``, ``spec.nodeToNodeMeshEnabled``; Calico's default when
unset or when there is no ``default``) every node peers with every other. With it off, nodes peer
as ``BGPPeer`` objects say: the nodes a peer applies to (``spec.node``, else ``spec.nodeSelector``,
else every node) each open a session to every node its ``peerSelector`` selects (the route
reflector); routes travel along sessions, so nodes peering with one reflector (or with reflectors
that peer with each other) reach one another's pods. A peer with no ``peerSelector`` (``peerIP``:
a router outside the cluster) joins no two nodes. Every node a peerSelector selects counts as a
reflector (Calico also wants its ``routeReflectorClusterID``, a field of Calico's Node objects,
which these helpers do not read). :func:`islands` numbers the sets of nodes that reach each other.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..errors import ConfigError

GROUP, VERSION = "crd.projectcalico.org", "v1"
PEERS = f"bgppeers.{GROUP}"
CONFIGS = f"bgpconfigurations.{GROUP}"
DEFAULT_CONFIG = "default"

#: how deep ``(`` and ``!`` may nest before a selector is refused (a selector is user input: the
#: parser is recursive and must not exhaust the interpreter's stack on it)
MAX_DEPTH = 64

Labels = Mapping[str, str]
Predicate = Callable[[Labels], bool]
Obj = Mapping[str, Any]

_SYNTAX_HINT = ("Calico's selectors read like route-reflector == 'true', has(key), !has(key), "
                "key in {'a', 'b'}, all(), joined by && and || with parentheses; values are quoted")


class SelectorError(ConfigError):
    """A selector Calico would not parse (:func:`selects` lets it select no node)."""

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message, hints=((hint,) if hint else ()) + (_SYNTAX_HINT,))


# ---------------------------------------------------------------- selectors

_TOKEN = re.compile(r"""\s*(?:(?P<str>'[^']*'|"[^"]*")|(?P<op>&&|\|\||==|!=|[(){},!])|"""
                    r"""(?P<word>[A-Za-z0-9_./\-]+))""")
_MATCHERS: dict[str, Callable[[str, str], bool]] = {
    "contains": str.__contains__, "starts": str.startswith, "ends": str.endswith}


def _tokens(text: str) -> list[tuple[str, str]]:
    """(kind, text) pairs, kind one of ``str``, ``op``, ``word``."""
    out: list[tuple[str, str]] = []
    pos, text = 0, text.strip()
    while pos < len(text):
        found = _TOKEN.match(text, pos)
        if not found or found.lastgroup is None:
            bad = text[pos:].lstrip()[:1]
            hint = ("close the quoted value with the quote it opened with" if bad in ("'", '"') else
                    "a selector has no operators but == != ! && || in, not in, contains, starts with, ends with")
            raise SelectorError(f"unexpected {bad!r} in selector {text!r}", hint=hint)
        out.append((found.lastgroup, found.group(found.lastgroup)))
        pos = found.end()
    return out


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text.strip()
        self.toks = _tokens(self.text)
        self.i = 0
        self.depth = 0

    def peek(self, ahead: int = 0) -> str | None:
        j = self.i + ahead
        return self.toks[j][1] if j < len(self.toks) else None

    def found(self) -> str:
        tok = self.peek()
        return "the end" if tok is None else repr(tok)

    def fail(self, what: str, hint: str | None = None) -> SelectorError:
        return SelectorError(f"{what} in selector {self.text!r}", hint=hint)

    def take(self, want: str | None = None) -> str:
        tok = self.peek()
        if tok is None or (want is not None and tok != want):
            raise self.fail(f"expected {'more' if want is None else repr(want)}, found {self.found()}")
        self.i += 1
        return tok

    def key(self) -> str:
        if self.i < len(self.toks) and self.toks[self.i][0] == "word":
            return self.take()
        raise self.fail(f"expected a label key, found {self.found()}",
                        hint="a key is written bare: has(route-reflector), route-reflector == 'true'")

    def value(self) -> str:
        if self.i < len(self.toks) and self.toks[self.i][0] == "str":
            return self.take()[1:-1]
        raise self.fail(f"expected a quoted value, found {self.found()}",
                        hint="quote the value: key == 'value'")

    def values(self) -> frozenset[str]:
        self.take("{")
        out: set[str] = set()
        while self.peek() != "}":
            out.add(self.value())
            if self.peek() != "}":
                self.take(",")
        self.take("}")
        return frozenset(out)

    def parse(self) -> Predicate:
        if not self.toks:
            return lambda _labels: True  # an empty selector selects everything
        pred = self.either()
        if self.peek() is not None:
            raise self.fail(f"unexpected {self.found()}", hint="join two expressions with && or ||")
        return pred

    def either(self) -> Predicate:
        return self.joined("||", self.both, any)

    def both(self) -> Predicate:
        return self.joined("&&", self.unary, all)

    def joined(self, op: str, operand: Callable[[], Predicate],
               combine: Callable[[Iterable[bool]], bool]) -> Predicate:
        """Operands joined by ``op`` (one operand: itself)."""
        parts = [operand()]
        while self.peek() == op:
            self.take()
            parts.append(operand())
        return parts[0] if len(parts) == 1 else (lambda labels: combine(p(labels) for p in parts))

    def unary(self) -> Predicate:
        if self.peek() not in ("!", "("):
            return self.term()
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise self.fail(f"more than {MAX_DEPTH} nested parentheses or negations")
        if self.take() == "!":
            inner = self.unary()
            result: Predicate = lambda labels: not inner(labels)  # noqa: E731
        else:
            result = self.either()
            self.take(")")
        self.depth -= 1
        return result

    def term(self) -> Predicate:
        word = self.key()
        if word in ("all", "global", "has") and self.peek() == "(":
            self.take("(")
            key = self.key() if word == "has" else None
            self.take(")")
            return (lambda _labels: True) if key is None else (lambda labels: key in labels)
        op = self.peek()
        if op in ("==", "!="):  # an absent key equals no value
            self.take()
            value, equal = self.value(), op == "=="
            return lambda labels: (labels.get(word) == value) is equal
        if op == "in" or (op == "not" and self.peek(1) == "in"):  # an absent key is in no set
            if self.take() == "not":
                self.take("in")
            values, inside = self.values(), op == "in"
            return lambda labels: (labels.get(word) in values) is inside
        if op in _MATCHERS:
            self.take()
            if op != "contains":
                self.take("with")
            value, test = self.value(), _MATCHERS[op]
            return lambda labels: word in labels and test(labels[word], value)
        raise self.fail(f"expected an operator after {word!r}, found {self.found()}",
                        hint="after a key: == 'v', != 'v', in {...}, not in {...}, contains 's', "
                             "starts with 's', ends with 's'")


def parse_selector(text: str | None) -> Predicate:
    """A Calico selector as a predicate over a label set (:class:`SelectorError` when Calico would
    not parse it; None and the empty text select everything)."""
    return _Parser(text or "").parse()


def selects(text: str | None, labels: Labels | None) -> bool:
    """Whether a selector selects these labels; one that does not parse selects nothing."""
    try:
        return parse_selector(text)(labels or {})
    except SelectorError:
        return False


# ---------------------------------------------------------------- routes

def mesh_enabled(configs: Iterable[Obj]) -> bool:
    """``default``'s ``nodeToNodeMeshEnabled`` (Calico's default when unset or absent: on)."""
    for obj in configs:
        if (obj.get("metadata") or {}).get("name") == DEFAULT_CONFIG:
            value = (obj.get("spec") or {}).get("nodeToNodeMeshEnabled")
            return value is None or bool(value)
    return True


def sessions(nodes: Mapping[str, Labels], peers: Iterable[Obj]) -> set[frozenset[str]]:
    """The BGP sessions between nodes that the BGPPeers ask for (peers given by ``peerIP`` alone are
    routers outside the cluster: no session between nodes)."""
    out: set[frozenset[str]] = set()
    for peer in peers:
        spec = peer.get("spec") or {}
        if not spec.get("peerSelector"):
            continue
        if spec.get("node"):
            local = [spec["node"]] if spec["node"] in nodes else []
        elif spec.get("nodeSelector"):
            local = [n for n, labels in nodes.items() if selects(spec["nodeSelector"], labels)]
        else:
            local = list(nodes)
        remote = [n for n, labels in nodes.items() if selects(spec["peerSelector"], labels)]
        out |= {frozenset((a, b)) for a in local for b in remote if a != b}
    return out


def islands(nodes: Mapping[str, Labels], configs: Iterable[Obj], peers: Iterable[Obj]) -> dict[str, int]:
    """Node -> the number of the set of nodes it has routes with: nodes of one number reach each
    other's pods; 1 for every node when all of them do. Numbers count from 1 in the order of the
    nodes' sorted names, so the same objects always give the same numbers."""
    names = sorted(nodes)
    if mesh_enabled(configs):
        return {n: 1 for n in names}
    parent = {n: n for n in names}

    def root(n: str) -> str:
        while parent[n] != n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n

    for pair in sessions(nodes, peers):
        a, b = sorted(pair)
        parent[root(b)] = root(a)
    numbers: dict[str, int] = {}
    return {n: numbers.setdefault(root(n), len(numbers) + 1) for n in names}


__all__ = ["CONFIGS", "DEFAULT_CONFIG", "GROUP", "MAX_DEPTH", "PEERS", "VERSION", "Labels", "Predicate",
           "SelectorError", "islands", "mesh_enabled", "parse_selector", "selects", "sessions"]
