"""The FUSE layer (node/fusesrv.py, node/fuselayer.py): its protocol answers, request by request,
and, where this machine allows (root, /dev/fuse), the real kernel mount served by the real server
process, as a container start sets it up: bad blocks fail with EIO, the rest reads, disarming
restores it, and the mount's options name no fault."""

from __future__ import annotations

import ctypes
import errno
import json
import os
import stat
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from sregym_cluster_embedded.node import fuselayer, fusesrv as fs

UNIQUE = 77


def request(op: int, nodeid: int, body: bytes = b"", uid: int = 0, gid: int = 0) -> bytes:
    return fs.IN_HEADER.pack(fs.IN_HEADER.size + len(body), op, UNIQUE, nodeid, uid, gid, 4242, 0, 0) + body


def reply(data: bytes | None) -> tuple[int, bytes]:
    assert data is not None
    length, error, unique = fs.OUT_HEADER.unpack_from(data)
    assert length == len(data) and unique == UNIQUE
    return error, data[fs.OUT_HEADER.size:]


def lookup(layer: fs.Layer, parent: int, name: bytes) -> tuple[int, tuple]:
    error, payload = reply(layer.handle(request(fs.LOOKUP, parent, name + b"\0")))
    if error:
        return error, ()
    nodeid = fs.ENTRY_HEAD.unpack_from(payload)[0]
    return nodeid, fs.ATTR.unpack_from(payload, fs.ENTRY_HEAD.size)


def open_file(layer: fs.Layer, nodeid: int, flags: int = os.O_RDONLY) -> int:
    error, payload = reply(layer.handle(request(fs.OPEN, nodeid, fs.OPEN_IN.pack(flags, 0))))
    assert error == 0, os.strerror(-error)
    return fs.OPEN_OUT.unpack_from(payload)[0]


def read(layer: fs.Layer, fh: int, offset: int, size: int) -> tuple[int, bytes]:
    return reply(layer.handle(request(fs.READ, 2, fs.READ_IN.pack(fh, offset, size, 0, 0, 0, 0))))


@pytest.fixture
def volume(tmp_path: Path):
    root = tmp_path / "volume"
    (root / "base").mkdir(parents=True)
    (root / "base" / "table").write_bytes(bytes(range(256)) * 32 * 64)  # 64 blocks of 8 KiB
    layer = fs.Layer(None, str(root), "uid-1")
    yield root, layer
    layer.close()


def test_init_negotiates_our_minor_and_only_flags_the_kernel_offers(volume):
    _root, layer = volume
    body = fs.INIT_IN.pack(7, 41, 131072, fs.ASYNC_READ | fs.BIG_WRITES | (1 << 16)) + b"\0" * 48
    error, payload = reply(layer.handle(request(fs.INIT, 0, body)))
    major, minor, readahead, flags, *_rest = fs.INIT_OUT.unpack_from(payload)
    assert (error, major, minor, readahead) == (0, 7, 31, 131072)
    assert flags == fs.ASYNC_READ | fs.BIG_WRITES  # no writeback cache: every write reaches the disk
    assert len(payload) == fs.INIT_OUT.size == 64


def test_lookup_getattr_and_read_pass_through(volume):
    root, layer = volume
    base, attr = lookup(layer, fs.ROOT_ID, b"base")
    table, attr = lookup(layer, base, b"table")
    st = (root / "base" / "table").stat()
    assert attr[0] == st.st_ino and attr[1] == st.st_size and stat.S_ISREG(attr[9])
    assert lookup(layer, base, b"missing")[0] == -errno.ENOENT
    assert lookup(layer, base, b"..")[0] == -errno.EINVAL  # names are single components
    fh = open_file(layer, table)
    error, data = read(layer, fh, 8192, 100)
    assert error == 0 and data == (root / "base" / "table").read_bytes()[8192:8292]
    error, payload = reply(layer.handle(request(fs.GETATTR, table, fs.GETATTR_IN.pack(0, 0, 0))))
    assert error == 0 and fs.ATTR.unpack_from(payload, fs.ATTR_HEAD.size)[1] == st.st_size


def test_badblocks_rule_fails_exactly_the_mapped_blocks_and_disarms(volume):
    root, layer = volume
    table, _ = lookup(layer, lookup(layer, fs.ROOT_ID, b"base")[0], b"table")
    fh = open_file(layer, table)
    inode = (root / "base" / "table").stat().st_ino
    layer.rules = [fs.Rule({"mode": "badblocks", "frac": 0.2, "block": 8192, "seed": 5, "errno": errno.EIO,
                            "prefixes": [str(root)]})]
    failed = [b for b in range(64) if read(layer, fh, b * 8192, 8192)[0] == -errno.EIO]
    assert failed == [b for b in range(64) if fs.block_is_bad(inode, b, 5, 0.2)] and 0 < len(failed) < 64
    # a read spanning a bad block fails whole, one inside a good block reads
    bad = next(b for b in failed if b > 0 and b - 1 not in failed)
    assert read(layer, fh, bad * 8192 - 10, 20)[0] == -errno.EIO  # last 10 bytes of a good block, first 10 of a bad one
    assert read(layer, fh, bad * 8192 - 10, 10)[0] == 0
    good = next(b for b in range(64) if b not in failed)
    assert read(layer, fh, good * 8192 + 100, 4096)[0] == 0
    layer.rules = []
    assert all(read(layer, fh, b * 8192, 8192)[0] == 0 for b in failed)


def test_ranges_random_and_prefix_scoping(volume):
    root, layer = volume
    table, _ = lookup(layer, lookup(layer, fs.ROOT_ID, b"base")[0], b"table")
    fh = open_file(layer, table)
    host = str(root / "base" / "table")
    layer.rules = [fs.Rule({"mode": "ranges", "block": 8192, "errno": errno.ENODATA, "files": {host: [[3, 4]]}})]
    assert [b for b in range(8) if read(layer, fh, b * 8192, 8192)[0]] == [3, 4]
    assert read(layer, fh, 3 * 8192, 8192)[0] == -errno.ENODATA
    layer.rules = [fs.Rule({"mode": "random", "rate": 1.0, "errno": errno.EIO, "prefixes": [str(root / "other")]})]
    assert read(layer, fh, 0, 8192)[0] == 0  # another directory's rule
    layer.rules = [fs.Rule({"mode": "random", "rate": 1.0, "errno": errno.EIO, "prefixes": [str(root / "base")]})]
    assert read(layer, fh, 0, 8192)[0] == -errno.EIO
    layer.rules = [fs.Rule({"mode": "random", "rate": 0.0, "errno": errno.EIO})]
    assert read(layer, fh, 0, 8192)[0] == 0


def write(layer: fs.Layer, fh: int, offset: int, data: bytes) -> int:
    return reply(layer.handle(request(fs.WRITE, 2, fs.WRITE_IN.pack(fh, offset, len(data), 0, 0, 0, 0) + data)))[0]


def test_sticky_random_rule_keeps_a_failed_block_failing_until_it_is_written(volume, monkeypatch):
    # a latent sector error: a read at the rate finds a bad block; that block fails every read
    # after it (the datastore never caches it), the others read; a write over the block remaps it
    root, layer = volume
    table, _ = lookup(layer, lookup(layer, fs.ROOT_ID, b"base")[0], b"table")
    fh = open_file(layer, table, os.O_RDWR)
    rule = fs.Rule({"mode": "random", "rate": 0.25, "sticky": True, "errno": errno.EIO, "prefixes": [str(root)]})
    layer.rules = [rule]
    monkeypatch.setattr(fs.random, "random", iter([0.9, 0.1] + [0.9] * 1000).__next__)  # the 2nd read finds one
    assert read(layer, fh, 0, 8192)[0] == 0
    assert read(layer, fh, 5 * 8192, 8192)[0] == -errno.EIO
    assert all(read(layer, fh, 5 * 8192, 8192)[0] == -errno.EIO for _ in range(5))  # every time
    assert read(layer, fh, 5 * 8192 + 4096, 100)[0] == -errno.EIO and read(layer, fh, 6 * 8192, 8192)[0] == 0
    assert write(layer, fh, 5 * 8192 + 1, b"x" * 100) == 0  # a partial write does not remap the block
    assert read(layer, fh, 5 * 8192, 8192)[0] == -errno.EIO
    assert write(layer, fh, 5 * 8192, b"y" * 8192) == 0
    assert read(layer, fh, 5 * 8192, 8192) == (0, b"y" * 8192)
    # without sticky a random rule has no memory
    layer.rules = [fs.Rule({"mode": "random", "rate": 0.25, "errno": errno.EIO})]
    monkeypatch.setattr(fs.random, "random", iter([0.1, 0.9]).__next__)
    assert [read(layer, fh, 0, 8192)[0], read(layer, fh, 0, 8192)[0]] == [-errno.EIO, 0]


def test_corrupt_rule_alters_the_chosen_blocks_second_half_and_never_fails(volume):
    root, layer = volume
    table, _ = lookup(layer, lookup(layer, fs.ROOT_ID, b"base")[0], b"table")
    fh = open_file(layer, table)
    original = (root / "base" / "table").read_bytes()
    inode = (root / "base" / "table").stat().st_ino
    layer.rules = [fs.Rule({"mode": "badblocks", "frac": 0.3, "block": 8192, "seed": 2, "corrupt": True, "flips": 512,
                            "errno": errno.EIO, "prefixes": [str(root)]})]
    chosen = [b for b in range(64) if fs.block_is_bad(inode, b, 2, 0.3)]
    assert 0 < len(chosen) < 64
    for block in range(64):
        error, data = read(layer, fh, block * 8192, 8192)
        assert error == 0 and len(data) == 8192
        want = original[block * 8192:(block + 1) * 8192]
        diff = [i for i in range(8192) if data[i] != want[i]]
        if block in chosen:
            # digits only (ten of the 256 byte values here), each another digit, all in the second half;
            # at most 512 positions, some coincide
            assert 1 <= len(diff) <= 512 and all(i >= 4096 and data[i] ^ want[i] == 1 for i in diff)
            assert all(0x30 <= want[i] <= 0x39 and 0x30 <= data[i] <= 0x39 for i in diff)
        else:
            assert diff == []
    # the same bytes every time, whatever the read's offset and size (the kernel reads in pages)
    block = chosen[0]
    whole = read(layer, fh, block * 8192, 8192)[1]
    assert read(layer, fh, block * 8192 + 4096, 4096)[1] == whole[4096:]
    # the disk itself is untouched: without the rule the block reads as written
    layer.rules = []
    assert read(layer, fh, block * 8192, 8192)[1] == original[block * 8192:(block + 1) * 8192]


def test_unchanged_rules_keep_their_state_and_a_change_replaces_them(tmp_path: Path):
    server = fs.Server(None)
    layer = fs.Layer(None, str(tmp_path), "pod")
    server.layers.append(layer)
    spec = {"mode": "random", "rate": 0.5, "sticky": True, "errno": 5}
    server.set_rules({"pod": [spec]})
    first = layer.rules[0]
    first.latent[1] = {3}
    server.set_rules({"pod": [dict(spec)]})
    assert layer.rules[0] is first and first.latent == {1: {3}}
    server.set_rules({"pod": [{**spec, "rate": 0.4}]})
    assert layer.rules[0] is not first and layer.rules[0].latent == {}


def test_create_write_belongs_to_the_caller_and_rename_moves_nodes(volume):
    root, layer = volume
    base, _ = lookup(layer, fs.ROOT_ID, b"base")
    body = fs.MKDIR_IN.pack(0o750, 0) + b"wal\0"
    error, payload = reply(layer.handle(request(fs.MKDIR, base, body, uid=1234, gid=4321)))
    assert error == 0
    wal = fs.ENTRY_HEAD.unpack_from(payload)[0]
    body = fs.CREATE_IN.pack(os.O_RDWR | os.O_CREAT, 0o600, 0, 0) + b"seg\0"
    error, payload = reply(layer.handle(request(fs.CREATE, wal, body, uid=1234, gid=4321)))
    assert error == 0
    seg = fs.ENTRY_HEAD.unpack_from(payload)[0]
    fh = fs.OPEN_OUT.unpack_from(payload, fs.ENTRY_HEAD.size + fs.ATTR.size)[0]
    error, payload = reply(layer.handle(request(fs.WRITE, seg, fs.WRITE_IN.pack(fh, 0, 5, 0, 0, 0, 0) + b"hello")))
    assert error == 0 and fs.WRITE_OUT.unpack_from(payload)[0] == 5
    st = (root / "base" / "wal" / "seg").stat()
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (1234, 4321, 0o600)
    assert (root / "base" / "wal").stat().st_uid == 1234
    # rename the directory: the file's node follows it
    body = fs.RENAME2_IN.pack(fs.ROOT_ID, 0, 0) + b"wal\0pg_wal\0"
    assert reply(layer.handle(request(fs.RENAME2, base, body)))[0] == 0
    assert layer.nodes[seg][0] == b"pg_wal/seg"
    error, payload = reply(layer.handle(request(fs.GETATTR, seg, fs.GETATTR_IN.pack(0, 0, 0))))
    assert error == 0 and fs.ATTR.unpack_from(payload, fs.ATTR_HEAD.size)[1] == 5
    body = fs.RENAME2_IN.pack(fs.ROOT_ID, fs.RENAME_NOREPLACE, 0) + b"table\0pg_wal\0"
    assert reply(layer.handle(request(fs.RENAME2, base, body)))[0] == -errno.EEXIST
    # truncate through SETATTR, then forget the node
    setattr_body = fs.SETATTR_IN.pack(fs.FATTR_SIZE | fs.FATTR_MODE, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0o640, 0, 0, 0, 0)
    error, payload = reply(layer.handle(request(fs.SETATTR, seg, setattr_body)))
    assert error == 0 and (root / "pg_wal" / "seg").read_bytes() == b"he"
    assert stat.S_IMODE((root / "pg_wal" / "seg").stat().st_mode) == 0o640
    assert layer.handle(request(fs.FORGET, seg, fs.FORGET_IN.pack(1))) is None
    assert seg not in layer.nodes


def test_readdir_lists_entries_with_resumable_offsets(volume):
    root, layer = volume
    for name in ("a", "b", "c"):
        (root / name).write_text(name)
    error, payload = reply(layer.handle(request(fs.OPENDIR, fs.ROOT_ID, fs.OPEN_IN.pack(0, 0))))
    fh = fs.OPEN_OUT.unpack_from(payload)[0]
    names, offset = [], 0
    while True:
        error, data = reply(layer.handle(request(fs.READDIR, fs.ROOT_ID, fs.READ_IN.pack(fh, offset, 40, 0, 0, 0, 0))))
        assert error == 0
        if not data:
            break
        pos = 0
        while pos < len(data):
            _ino, offset, namelen, _kind = fs.DIRENT.unpack_from(data, pos)
            names.append(data[pos + fs.DIRENT.size:pos + fs.DIRENT.size + namelen].decode())
            pos += (fs.DIRENT.size + namelen + 7) // 8 * 8
    assert sorted(names) == [".", "..", "a", "b", "base", "c"]
    assert reply(layer.handle(request(fs.RELEASEDIR, fs.ROOT_ID, fs.FH_IN.pack(fh) + b"\0" * 16)))[0] == 0


def test_symlinks_are_never_followed_out_of_the_volume(volume, tmp_path: Path):
    root, layer = volume
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "key").write_text("host-only")
    (root / "escape").symlink_to(secret)
    (root / "file-link").symlink_to(secret / "key")
    link, attr = lookup(layer, fs.ROOT_ID, b"file-link")
    assert stat.S_ISLNK(attr[9])
    error, _ = reply(layer.handle(request(fs.OPEN, link, fs.OPEN_IN.pack(os.O_RDONLY, 0))))
    assert error == -errno.ELOOP
    escape, _ = lookup(layer, fs.ROOT_ID, b"escape")
    assert lookup(layer, escape, b"key")[0] in (-errno.ENOTDIR, -errno.ELOOP)
    # a chown of the link changes the link, never its target
    body = fs.SETATTR_IN.pack(fs.FATTR_UID, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 999, 0, 0)
    assert reply(layer.handle(request(fs.SETATTR, link, body)))[0] == 0
    assert (secret / "key").stat().st_uid == os.getuid() and os.lstat(root / "file-link").st_uid == 999


def test_unknown_and_no_reply_opcodes(volume):
    _root, layer = volume
    assert reply(layer.handle(request(fs.GETXATTR, fs.ROOT_ID, b"\0" * 8 + b"user.x\0")))[0] == -errno.ENOSYS
    assert layer.handle(request(fs.INTERRUPT, 0, struct.pack("<Q", 5))) is None
    assert reply(layer.handle(request(fs.READ, 2, fs.READ_IN.pack(999, 0, 10, 0, 0, 0, 0))))[0] == -errno.EBADF


def test_mount_options_name_no_fault():
    assert fuselayer.mount_options(7) == "fd=7,rootmode=40000,user_id=0,group_id=0,allow_other,default_permissions"


# ---------------------------------------------------------------------------- the real kernel

READER = r"""
import os, sys
path = sys.argv[1]
for line in sys.stdin:  # "pass": the blocks whose read fails, with the errno; "mounts": the fuse mounts
    if line.strip() == "mounts":
        print(repr([l for l in open("/proc/self/mountinfo") if " fuse " in l]), flush=True)
        continue
    bad = []
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError as e:
        print(repr([("open", e.errno)]), flush=True)
        continue
    for b in range(64):
        try:
            os.pread(fd, 8192, b * 8192)
        except OSError as e:
            bad.append((b, e.errno))
    os.close(fd)
    print(repr(bad), flush=True)
"""


def _kernel_fuse() -> str:
    ok, reason = fuselayer.probe()
    return "" if ok else reason


@pytest.mark.skipif(bool(_kernel_fuse()), reason=_kernel_fuse() or "ok")
def test_real_mount_in_a_private_namespace_served_by_the_server_process(tmp_path: Path):
    libc = ctypes.CDLL(None, use_errno=True)
    volume = tmp_path / "vol"
    volume.mkdir()
    data = volume / "table"
    data.write_bytes(os.urandom(8192 * 64))
    target = tmp_path / "mnt"
    target.mkdir()
    layers = fuselayer.FuseLayers(wanted=lambda pod, host: host == str(volume.resolve()))
    pod = {"metadata": {"uid": "pod-uid"}}
    planned = layers.plan(pod, {str(target): str(volume), "/other": str(tmp_path)}, set())
    assert [(p, h) for _fd, p, h, _ro in planned] == [(str(target), str(volume.resolve()))]

    def enter() -> None:  # what a container's own namespace is to the layer
        if libc.unshare(0x00020000) != 0:
            raise OSError(ctypes.get_errno(), "unshare")
        libc.mount(None, b"/", None, (1 << 14) | (1 << 18), None)

    # relative to a working directory inside the volume: entered again through the layer once mounted
    reader = subprocess.Popen([sys.executable, "-c", READER, "table"], stdin=subprocess.PIPE, cwd=str(target),
                              stdout=subprocess.PIPE, text=True, preexec_fn=fuselayer.with_layers(enter, planned))

    def one_pass() -> list:
        reader.stdin.write("pass\n")
        reader.stdin.flush()
        return eval(reader.stdout.readline())  # noqa: S307 - our own reader's repr of a list

    def pass_until(want: list) -> list:
        """Passes until one gives ``want`` (rules reach the server asynchronously); the last seen
        after a hang guard."""
        got = None
        for _ in range(200):
            got = one_pass()
            if got == want:
                break
        return got

    try:
        layers.started("pod-uid", planned)
        assert pass_until([]) == []  # dormant: a passthrough
        expected = [b for b in range(64) if fs.block_is_bad(data.stat().st_ino, b, 3, 0.1)]
        assert expected
        layers.set_rules({"pod-uid": [{"mode": "badblocks", "frac": 0.1, "block": 8192, "seed": 3, "errno": 5,
                                       "prefixes": [str(volume.resolve())]}]})
        assert pass_until([(b, errno.EIO) for b in expected]) == [(b, errno.EIO) for b in expected]
        assert all(one_pass() == [(b, errno.EIO) for b in expected] for _ in range(3))  # every time
        assert data.read_bytes()  # outside the namespace the same file reads whole
        layers.set_rules({})
        assert pass_until([]) == []
        reader.stdin.write("mounts\n")
        reader.stdin.flush()
        mounts = eval(reader.stdout.readline())  # noqa: S307
        assert len(mounts) == 1 and " - fuse sregym-volume " in mounts[0]
        options = mounts[0].rsplit(" ", 1)[-1].strip()
        assert options == "rw,user_id=0,group_id=0,default_permissions,allow_other", options
        assert "sregym-volume" not in Path("/proc/self/mountinfo").read_text()  # never mounted out here
        # the server gone (it dies with the node agent): the pod's reads fail at once, none hangs
        layers.proc.kill()
        assert one_pass() in ([("open", errno.ENOTCONN)], [("open", errno.ECONNABORTED)])
        reader.stdin.close()
        assert reader.wait(30) == 0
    finally:
        if reader.poll() is None:
            reader.kill()
            reader.wait(10)
        layers.close()
    assert json.dumps(layers.layered) == "{}"


def test_an_unlinked_open_file_still_reads_and_its_name_is_gone(volume):
    root, layer = volume
    base, _ = lookup(layer, fs.ROOT_ID, b"base")
    table, _ = lookup(layer, base, b"table")
    fh = open_file(layer, table)
    assert reply(layer.handle(request(fs.UNLINK, base, b"table\0")))[0] == 0
    assert not (root / "base" / "table").exists()
    assert reply(layer.handle(request(fs.GETATTR, table, fs.GETATTR_IN.pack(0, 0, 0))))[0] == -errno.ENOENT
    error, payload = reply(layer.handle(request(fs.GETATTR, table, fs.GETATTR_IN.pack(fs.GETATTR_FH, 0, fh))))
    assert error == 0 and fs.ATTR.unpack_from(payload, fs.ATTR_HEAD.size)[1] == 8192 * 64
    assert read(layer, fh, 0, 16) == (0, bytes(range(16)))
    # a malformed request gets an error answer, never a dead worker
    assert reply(layer.handle(request(fs.LOOKUP, base, b"")))[0] == -errno.EINVAL
    assert reply(layer.handle(request(fs.WRITE, table, b"\0" * 8)))[0] == -errno.EIO


def test_which_volumes_get_a_layer(monkeypatch, tmp_path: Path):
    # faults (default): a pod's PersistentVolume while a fuse-badblocks record names it; all: every
    # PersistentVolume; never another kind of volume, never with off
    from types import SimpleNamespace

    from sregym_cluster_embedded.apiserver import admin_fuse

    pv_dir = tmp_path / "pv-1"
    (pv_dir / "sub").mkdir(parents=True)
    objects = {("persistentvolumeclaims", "data"): {"spec": {"volumeName": "pv-1"}},
               ("persistentvolumes", "pv-1"): {"spec": {"hostPath": {"path": str(pv_dir)}}}}
    hooks = SimpleNamespace(shim={}, _get=lambda kind, name, ns=None: objects.get((kind, name)))
    pod = {"metadata": {"namespace": "ns", "uid": "u"},
           "spec": {"volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}},
                                {"name": "e", "emptyDir": {}}]}}
    monkeypatch.delenv(fuselayer.ENABLE_ENV, raising=False)
    assert not admin_fuse.wanted(hooks, pod, str(pv_dir))
    hooks.shim["f"] = {"mechanism": "fuse-badblocks", "pvs": ["pv-1"]}
    assert admin_fuse.wanted(hooks, pod, str(pv_dir)) and admin_fuse.wanted(hooks, pod, str(pv_dir / "sub"))
    assert not admin_fuse.wanted(hooks, pod, str(tmp_path / "emptydir"))
    hooks.shim["f"]["mechanism"] = "ld-preload-shim"
    assert not admin_fuse.wanted(hooks, pod, str(pv_dir))
    monkeypatch.setenv(fuselayer.ENABLE_ENV, "all")
    assert admin_fuse.wanted(hooks, pod, str(pv_dir))
    monkeypatch.setenv(fuselayer.ENABLE_ENV, "off")
    hooks.shim["f"]["mechanism"] = "fuse-badblocks"
    assert not admin_fuse.wanted(hooks, pod, str(pv_dir))


class _Store:
    def __init__(self, **objects: list[dict]) -> None:
        self.objects = objects

    def list_nocopy(self, resource: str, namespace: str | None = None) -> list[dict]:
        return [o for o in self.objects.get(resource, [])
                if namespace is None or o["metadata"].get("namespace") == namespace]


class _Layers:
    """The layer client as the fault hooks use it: which pods are layered, the rules sent."""

    def __init__(self, layered: dict[str, set[str]]) -> None:
        self.layered = layered
        self.sent: dict = {}

    def set_rules(self, rules: dict, present: set[str] | None = None) -> None:
        self.sent = rules


def _fault_hooks(tmp_path: Path, monkeypatch):
    from types import SimpleNamespace

    from sregym_cluster_embedded.apiserver.admin_faults import FaultHooks

    volumes = tmp_path / "volumes" / "pv-1"
    volumes.mkdir(parents=True)
    pod = {"metadata": {"uid": "uid-db-1", "name": "db-1", "namespace": "shop", "labels": {"app": "db"}},
           "spec": {"nodeName": "node-1", "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}],
                    "containers": [{"name": "pg", "volumeMounts": [{"name": "d", "mountPath": "/var/lib/pg"}]}]},
           "status": {"podIP": "10.0.0.5", "phase": "Running"}}
    store = _Store(pods=[pod], persistentvolumeclaims=[
        {"metadata": {"name": "data", "namespace": "shop"}, "spec": {"volumeName": "pv-1"}}],
        persistentvolumes=[{"metadata": {"name": "pv-1"}, "spec": {"hostPath": {"path": str(volumes)}}}])
    hooks = FaultHooks(store, SimpleNamespace(state_dir=str(tmp_path)), None, None)
    hooks.nodes = SimpleNamespace(agents={"node-1": None}, isolation=object(), isolation_warning="")
    hooks.shim_path = tmp_path / "shim.so"
    monkeypatch.setattr(hooks, "render", lambda: None)
    monkeypatch.setattr(hooks, "mechanisms", lambda: {})
    monkeypatch.setattr(fuselayer, "probe", lambda: (True, ""))
    return hooks, volumes


def test_a_ranges_rule_runs_on_the_layer_only_by_host_path(tmp_path: Path, monkeypatch):
    from sregym_cluster_embedded.apiserver import admin_fuse
    from sregym_cluster_embedded.apiserver.errors import ApiError

    hooks, volume = _fault_hooks(tmp_path, monkeypatch)
    hooks.fuse = _Layers({"uid-db-1": {str(volume)}})
    spec = {"namespace": "shop", "labels": {"app": "db"}, "calls": ["read"], "mode": "ranges",
            "files": {"/var/lib/pg/base/1/16384": [[2, 3], [9, 9]]}, "volumes": [{"namespace": "shop", "claim": "data"}],
            "mechanisms": ["fuse-badblocks", "ld-preload-shim"]}
    record = hooks.put_shim("r1", spec)
    assert record["mechanism"] == "fuse-badblocks" and record["layered"] == ["db-1"] and record["active"]
    admin_fuse.render(hooks)
    (rule,) = hooks.fuse.sent["uid-db-1"]
    assert rule["mode"] == "ranges" and rule["files"][f"{volume}/base/1/16384"] == [[2, 3], [9, 9]]
    # as the server reads it: exactly those blocks of that file fail
    from sregym_cluster_embedded.node.fusesrv import Rule
    server_rule = Rule(rule)
    host = os.fsencode(f"{volume}/base/1/16384")
    assert [b for b in range(12) if server_rule.fails(host, 1, b * 8192, 8192)] == [2, 3, 9]
    # the shim has no ranges mode: without the layer there is nothing to run it
    hooks.fuse = None
    with pytest.raises(ApiError) as info:
        hooks.put_shim("r2", spec)
    assert info.value.code == 503 and "the shim has no ranges mode" in str(info.value)
    for files in ({}, {"relative": [[1, 2]]}, {"/a": [[3, 2]]}, {"/a": [[1, "x"]]}, {"/a/../b": [[1, 1]]}):
        with pytest.raises(ApiError) as info:
            hooks.put_shim("r3", {**spec, "files": files})
        assert info.value.code == 422


def test_corrupt_sticky_and_cover_options_of_a_record(tmp_path: Path, monkeypatch):
    from sregym_cluster_embedded.apiserver import admin_fuse
    from sregym_cluster_embedded.apiserver.errors import ApiError

    hooks, volume = _fault_hooks(tmp_path, monkeypatch)
    other = tmp_path / "volumes" / "pv-2"
    other.mkdir(parents=True)
    hooks.client.objects["persistentvolumeclaims"].append(
        {"metadata": {"name": "other", "namespace": "shop"}, "spec": {"volumeName": "pv-2"}})
    hooks.client.objects["persistentvolumes"].append(
        {"metadata": {"name": "pv-2"}, "spec": {"hostPath": {"path": str(other)}}})
    hooks.fuse = _Layers({"uid-db-1": {str(volume)}})
    spec = {"namespace": "shop", "labels": {"app": "db"}, "calls": ["read"], "mode": "badblocks", "frac": 0.5,
            "corrupt": True, "flips": 32, "volumes": [{"namespace": "shop", "claim": "data"}],
            "cover": [{"namespace": "shop", "claim": "other"}], "mechanisms": ["fuse-badblocks", "ld-preload-shim"]}
    record = hooks.put_shim("c1", spec)
    assert record["mechanism"] == "fuse-badblocks" and record["cover_pvs"] == ["pv-2"]
    admin_fuse.render(hooks)
    (rule,) = hooks.fuse.sent["uid-db-1"]
    assert rule["corrupt"] is True and rule["flips"] == 32 and rule["sticky"] is False
    # a pod of the covered volume starts with the layer too (dormant: no rule names its pod)
    neighbour = {"metadata": {"namespace": "shop", "uid": "uid-db-2"},
                 "spec": {"volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "other"}}]}}
    assert admin_fuse.wanted(hooks, neighbour, str(other.resolve()))
    del hooks.shim["c1"]
    assert not admin_fuse.wanted(hooks, neighbour, str(other.resolve()))
    # only the layer alters what a read returns: without it nothing runs a corrupt record
    hooks.fuse = None
    with pytest.raises(ApiError) as info:
        hooks.put_shim("c2", spec)
    assert info.value.code == 503 and "only the FUSE layer alters" in str(info.value)
    # a sticky record runs elsewhere without memory (the shim), and says so
    sticky = {**spec, "mode": "random", "rate": 0.3, "sticky": True, "corrupt": False}
    assert hooks.put_shim("s1", sticky)["mechanism"] == "ld-preload-shim"
    for bad, why in (({"flips": 0}, "flips"), ({"corrupt": "yes"}, "corrupt must be"),
                     ({"sticky": True, "mode": "badblocks"}, "sticky is a random-mode option"),
                     ({"cover": [{"claim": "x"}]}, "cover must be")):
        with pytest.raises(ApiError) as info:
            hooks.put_shim("bad", {**spec, **bad})
        assert info.value.code == 422 and why in str(info.value)
