"""Static checks of disk-bad-blocks, and that its bad-block map is the one the node's shim computes."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import sregym_fault_dm_dust.plugin
from sregym_fault_dm_dust.badblocks import bad_blocks

from sregym_core.testing.contracts import FaultContract


class TestDmDust(FaultContract):
    plugin = sregym_fault_dm_dust.plugin
    live_only = {"disk-bad-blocks": "it maps bad blocks under a running datastore's files (node hooks)",
                 "silent-data-corruption": "it maps corrupt blocks under a running datastore's files (node hooks)"}


def test_bad_blocks_are_deterministic_and_proportional():
    first = bad_blocks(4242, 10_000, 3, 0.1)
    assert first == bad_blocks(4242, 10_000, 3, 0.1)
    assert 800 < len(first) < 1200
    assert first != bad_blocks(4242, 10_000, 4, 0.1)


@pytest.mark.skipif(not shutil.which("gcc"), reason="needs gcc to build the shim")
def test_map_matches_the_node_shim(tmp_path: Path):
    faultshim = pytest.importorskip("sregym_cluster_embedded.node.faultshim")
    shim = faultshim.build_fault_shim()
    assert shim is not None
    data = tmp_path / "table"
    data.write_bytes(os.urandom(8192 * 64))
    rules = faultshim.RulesChannel()
    rules.write([f"pods=* calls=read errno=5 mode=badblocks frac=0.2 block=8192 seed=5 prefix={data}"])
    probe = ("import os,sys\nfd=os.open(sys.argv[1],os.O_RDONLY)\nbad=[]\n"
             "for b in range(64):\n    try: os.pread(fd,8192,b*8192)\n    except OSError: bad.append(b)\nprint(bad)")
    reader = rules.reader()
    out = subprocess.run([sys.executable, "-c", probe, str(data)], capture_output=True, text=True, timeout=60,
                         env={**os.environ, "LD_PRELOAD": str(shim)}, pass_fds=(reader,))
    os.close(reader)
    rules.close()
    assert out.returncode == 0, out.stderr
    expected = bad_blocks(data.stat().st_ino, 64, 5, 0.2)
    assert expected and out.stdout.strip() == str(expected)


def test_map_matches_the_fuse_layer():
    # the FUSE layer's server decides each block with the same function as the ground truth
    fusesrv = pytest.importorskip("sregym_cluster_embedded.node.fusesrv")
    for inode, seed, frac in ((4242, 3, 0.1), (97, 11, 0.02), (1 << 40, 1, 0.5)):
        assert bad_blocks(inode, 2000, seed, frac) == [b for b in range(2000) if fusesrv.block_is_bad(inode, b, seed, frac)]


def test_inject_asks_for_the_fuse_layer_first_and_records_what_ran(monkeypatch):
    # the node's answer decides the mechanism; the state keeps it, and why a stronger one did not run
    from types import SimpleNamespace

    from sregym_fault_dm_dust import badblocks
    from sregym_fault_node.testing import two_datastores

    calls: list = []
    # one listing of every datastore's pods serves the claims, the cover and the restart
    target, _listed, neighbours = two_datastores(monkeypatch, calls)
    monkeypatch.setattr(badblocks, "_table_map", lambda *a: None)
    for answer in ({"mechanism": "fuse-badblocks", "pvs": ["pv-1"]},
                   {"mechanism": "fuse-badblocks", "pvs": ["pv-1"],
                    "passed_over": {"dm-dust": "no device-mapper on this node"}}):
        monkeypatch.setattr(badblocks.hooks, "call", lambda ctx, method, hook_id, **spec: calls.append(spec) or answer)
        ctx = SimpleNamespace(namespace="ns", state={})
        badblocks.inject(ctx, target, {"fraction": 0.2, "restart": True})
        spec = calls[-2]
        # no LD_PRELOAD shim: it would miss static binaries (issue 36)
        assert spec["mechanisms"] == ["fuse-badblocks"] and spec["fuse_install"] is True
        # every other datastore's volume gets the (dormant) layer too, and all of them restart
        assert spec["cover"] == neighbours and calls[-1] == ("restart", True, False)
        assert calls.count("list") == 1 and spec["volumes"] == [{"namespace": "ns", "claim": "data"}]
        assert ctx.state["fault_mechanism"] == answer["mechanism"]
        assert ctx.state.get("passed_over") == answer.get("passed_over")
        calls.clear()


def test_the_volume_path_comes_from_the_listing_without_a_call():
    # inject's one listing (hooks.group_pods) holds the claims' volumes: no kubectl get pvc, get pv
    from types import SimpleNamespace

    from sregym_fault_dm_dust import badblocks
    from sregym_fault_node import hooks

    def no_call(*args, **kwargs):
        raise AssertionError(f"unexpected kubectl {args}")
    ctx = SimpleNamespace(namespace="ns", kubectl=no_call)
    pod = {"spec": {"volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "pg-data"}}],
                    "containers": [{"name": "pg", "volumeMounts": [{"name": "d", "mountPath": "/var/lib/pg/"}]}]}}
    listed = hooks.Listing({"pg": [pod]}, {"pg": {"app": "pg"}}, {"pg-data": "pv-1"}, {"pv-1": "/srv/pv-1"})
    target = SimpleNamespace(component=SimpleNamespace(name="pg"))
    assert badblocks.views(ctx, target, "pg-data", ["/var/lib/pg/base/1/2", "/elsewhere"], pods=[pod],
                           listed=listed) == [("/var/lib/pg/base/1/2", "/srv/pv-1/base/1/2")]


def test_datastores_are_the_target_and_every_other_db_with_claims():
    from types import SimpleNamespace

    import attrs
    from sregym_fault_node import hooks

    @attrs.frozen
    class Component:
        name: str
        roles: tuple = ()
        pvcs: tuple = ()

        def has_role(self, pattern: str) -> bool:
            return any(r.split(":")[0] == pattern.split(":")[0] for r in self.roles)

    @attrs.frozen
    class Target:
        app: object
        component: Component
        namespace: str = "ns"

    comps = [Component("web"), Component("db-a", ("db:postgres",), ("a",)), Component("db-b", ("db:postgres",), ("b",)),
             Component("cache", ("cache:memcached",)), Component("db-mem", ("db:redis",))]
    target = Target(SimpleNamespace(components=comps), comps[2])
    assert [t.component.name for t in hooks.datastores(None, target)] == ["db-b", "db-a"]
