"""faultkit.calico: Calico's selector syntax (what it accepts, what it refuses and why) and the pod
routes BGP peers give (the mesh on, reflectors a peer selects, a selector no node matches)."""

from __future__ import annotations

import pytest

from sregym_core.errors import ConfigError, SregymError
from sregym_core.faultkit import calico

REFLECTOR = "route-reflector == 'true'"
MASTER = "has(node-role.kubernetes.io/master)"
NODES = {"node-1": {"kubernetes.io/hostname": "node-1", "route-reflector": "true"},
         "node-2": {"kubernetes.io/hostname": "node-2", "node-role.kubernetes.io/control-plane": ""},
         "node-3": {"kubernetes.io/hostname": "node-3", "rack": "r2"}}


def peer(peer_selector: str | None, node_selector: str | None = "all()", **spec: object) -> dict:
    body = {k: v for k, v in {"peerSelector": peer_selector, "nodeSelector": node_selector}.items() if v is not None}
    return {"metadata": {"name": "peer-with-route-reflectors"}, "spec": {**body, **spec}}


def config(mesh: bool | None) -> dict:
    return {"metadata": {"name": "default"}, "spec": {} if mesh is None else {"nodeToNodeMeshEnabled": mesh}}


MESH_OFF = [config(False)]


# ---------------------------------------------------------------- selectors

@pytest.mark.parametrize(("selector", "labels", "expected"), [
    # all(), global() and the empty selector select every label set
    ("all()", {}, True),
    ("global()", {"a": "b"}, True),
    ("", {}, True),
    ("   ", {"a": "b"}, True),
    # has(k), !has(k): presence, whatever the value (the empty one too)
    ("has(node-role.kubernetes.io/control-plane)", {"node-role.kubernetes.io/control-plane": ""}, True),
    ("has(node-role.kubernetes.io/master)", {"node-role.kubernetes.io/control-plane": ""}, False),
    ("!has(route-reflector)", {"route-reflector": "true"}, False),
    ("!has(route-reflector)", {}, True),
    ("! has( a )", {"b": ""}, True),
    # ==, != (also true where the key is absent); either quote
    ("route-reflector == 'true'", {"route-reflector": "true"}, True),
    ('route-reflector == "true"', {"route-reflector": "false"}, False),
    ("route-reflector == 'true'", {}, False),
    ("rack != 'r1'", {"rack": "r2"}, True),
    ("rack != 'r1'", {"rack": "r1"}, False),
    ("rack != 'r1'", {}, True),
    ("a == ''", {"a": ""}, True),
    # in {}, not in {} (not in: also true where the key is absent); a trailing comma is allowed
    ("rack in {'r1', 'r2'}", {"rack": "r2"}, True),
    ("rack in {'r1', 'r2'}", {"rack": "r3"}, False),
    ("rack in {'r1', 'r2'}", {}, False),
    ("rack in {}", {"rack": ""}, False),
    ("rack in {'r1',}", {"rack": "r1"}, True),
    ("rack not in {'r1', 'r2'}", {"rack": "r2"}, False),
    ("rack not in {'r1', 'r2'}", {"rack": "r3"}, True),
    ("rack not in {'r1'}", {}, True),
    # contains, starts with, ends with: false where the key is absent
    ("zone contains 'u-w'", {"zone": "eu-west"}, True),
    ("zone starts with 'eu-'", {"zone": "eu-west"}, True),
    ("zone ends with 'east'", {"zone": "eu-west"}, False),
    ("zone starts with ''", {}, False),
    # &&, ||, ! and parentheses; && binds tighter than ||
    ("has(a) && has(b)", {"a": ""}, False),
    ("has(a) && has(b)", {"a": "", "b": ""}, True),
    ("has(a) || has(b)", {"b": ""}, True),
    ("has(a) || has(b)", {}, False),
    ("has(a) || has(b) && has(c)", {"a": ""}, True),
    ("(has(a) || has(b)) && has(c)", {"a": ""}, False),
    ("has(a) && (b == 'x' || !has(c))", {"a": "", "c": ""}, False),
    ("has(a) && (b == 'x' || !has(c))", {"a": "", "b": "x", "c": ""}, True),
    ("!(has(a) && has(b))", {"a": "", "b": ""}, False),
    ("!!has(a)", {"a": ""}, True),
    ("((has(a)))", {"a": ""}, True),
    # words of the grammar are ordinary keys where they stand as keys
    ("has == 'x' && in != 'y'", {"has": "x"}, True),
])
def test_selectors_select_as_calico_documents_them(selector, labels, expected):
    assert calico.parse_selector(selector)(labels) is expected
    assert calico.selects(selector, labels) is expected


def test_none_and_missing_labels():
    assert calico.selects(None, {"a": "b"}) is True
    assert calico.selects("all()", None) is True
    assert calico.selects("has(a)", None) is False
    assert calico.parse_selector(None)({}) is True


@pytest.mark.parametrize(("bad", "says", "hint"), [
    ("has(", "expected a label key, found the end", "a key is written bare"),
    ("has(a", "expected ')', found the end", None),
    ("has('a')", "expected a label key", "a key is written bare"),
    ("'a' == 'b'", "expected a label key", "a key is written bare"),
    ("a == b", "expected a quoted value, found 'b'", "quote the value"),
    ("a ==", "expected a quoted value, found the end", "quote the value"),
    ("&& has(a)", "expected a label key, found '&&'", None),
    ("has(a) &&", "expected a label key, found the end", None),
    ("has(a) || || has(b)", "expected a label key, found '||'", None),
    ("a in {'x'", "expected ',', found the end", None),
    ("a in {'x' 'y'}", "expected ',', found \"'y'\"", None),
    ("a in 'x'", "expected '{', found \"'x'\"", None),
    ("a not {'x'}", "expected an operator after 'a', found 'not'", "after a key"),
    ("a starts 'x'", "expected 'with', found \"'x'\"", None),
    ("has(a) has(b)", "unexpected 'has'", "join two expressions with && or ||"),
    ("(has(a)", "expected ')', found the end", None),
    ("has(a))", "unexpected ')'", None),
    ("a", "expected an operator after 'a', found the end", "after a key"),
    ("a ~ 'b'", "unexpected '~'", "a selector has no operators but"),
    ("a = 'b'", "unexpected '='", None),
    ("a > '1'", "unexpected '>'", None),
    ("a == 'b", "unexpected \"'\"", "close the quoted value"),
    ("has(a) && a == \"b'", "unexpected '\"'", "close the quoted value"),
    ("()", "expected a label key, found ')'", None),
])
def test_a_selector_calico_would_not_parse_is_refused_with_a_hint(bad, says, hint):
    with pytest.raises(calico.SelectorError) as raised:
        calico.parse_selector(bad)
    error = raised.value
    assert isinstance(error, ConfigError) and isinstance(error, SregymError)
    assert says in error.message and repr(bad.strip()) in error.message, error.message
    assert error.hints and "values are quoted" in error.hints[-1]  # the syntax, always
    if hint is not None:
        assert hint in error.hints[0], error.hints
    assert "hint:" in error.render()
    assert calico.selects(bad, {"a": "b", "has": "x"}) is False  # Calico peers with nobody on it


def test_nesting_is_bounded_so_user_input_cannot_exhaust_the_stack():
    deep = "(" * (calico.MAX_DEPTH - 1) + "has(a)" + ")" * (calico.MAX_DEPTH - 1)
    assert calico.selects(deep, {"a": ""}) is True
    assert calico.selects("!" * calico.MAX_DEPTH + "has(a)", {"a": ""}) is True  # an even count
    for text in ("(" * 100_000 + "has(a)" + ")" * 100_000, "!" * 100_000 + "has(a)"):
        with pytest.raises(calico.SelectorError, match=f"more than {calico.MAX_DEPTH} nested"):
            calico.parse_selector(text)
        assert calico.selects(text, {"a": ""}) is False


# ---------------------------------------------------------------- routes

def test_the_mesh_on_routes_every_node_to_every_other():
    for configs in ([], [config(None)], [config(True)]):
        assert calico.mesh_enabled(configs)
        assert calico.islands(NODES, configs, [peer(MASTER)]) == {"node-1": 1, "node-2": 1, "node-3": 1}
    # a configuration other than "default" does not turn the mesh off
    assert calico.mesh_enabled([{"metadata": {"name": "node.node-1"}, "spec": {"nodeToNodeMeshEnabled": False}}])
    assert not calico.mesh_enabled(MESH_OFF)


def test_mesh_off_reflectors_a_peer_selects_join_every_node_that_peers_with_them():
    assert calico.sessions(NODES, [peer(REFLECTOR)]) == {frozenset(("node-1", "node-2")),
                                                          frozenset(("node-1", "node-3"))}
    assert calico.islands(NODES, MESH_OFF, [peer(REFLECTOR)]) == {"node-1": 1, "node-2": 1, "node-3": 1}
    # a nodeSelector limits who peers: node-3 alone keeps its routes to itself
    partial = calico.islands(NODES, MESH_OFF, [peer(REFLECTOR, node_selector="!has(rack)")])
    assert partial == {"node-1": 1, "node-2": 1, "node-3": 2}
    # spec.node: one node's peering; reflectors peering with each other join their clients
    one = calico.islands(NODES, MESH_OFF, [peer(REFLECTOR, node_selector=None, node="node-3")])
    assert one["node-1"] == one["node-3"] != one["node-2"]
    chain = [peer("rack == 'r2'", node_selector=None, node="node-1"), peer(REFLECTOR, node_selector=None, node="node-2")]
    assert set(calico.islands(NODES, MESH_OFF, chain).values()) == {1}
    # a node a peer names that the cluster does not have peers with nobody
    assert calico.sessions(NODES, [peer(REFLECTOR, node_selector=None, node="node-9")]) == set()


def test_mesh_off_with_a_selector_naming_a_label_no_node_carries_leaves_every_node_alone():
    found = calico.islands(NODES, MESH_OFF, [peer(MASTER)])
    assert found == {"node-1": 1, "node-2": 2, "node-3": 3}
    assert calico.sessions(NODES, [peer(MASTER)]) == set()
    assert calico.islands(NODES, MESH_OFF, []) == found  # no BGPPeer at all: the same
    assert calico.islands(NODES, MESH_OFF, [peer("has(")]) == found  # one Calico refuses selects nobody
    tor = {"metadata": {"name": "tor"}, "spec": {"peerIP": "10.0.0.1", "asNumber": 64512}}
    assert calico.islands(NODES, MESH_OFF, [tor]) == found  # a router outside the cluster joins no nodes


def test_island_numbers_do_not_depend_on_the_order_objects_arrive_in():
    nodes = {f"node-{i}": {"group": "ab"[i % 2]} for i in range(1, 7)}
    peers = [peer("group == 'a'", node_selector="group == 'a'"), peer("group == 'b'", node_selector="group == 'b'")]
    found = calico.islands(nodes, MESH_OFF, peers)
    assert found == {"node-1": 1, "node-2": 2, "node-3": 1, "node-4": 2, "node-5": 1, "node-6": 2}
    assert calico.islands(dict(reversed(nodes.items())), MESH_OFF, peers[::-1]) == found
