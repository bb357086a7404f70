"""The FUSE layer's server process: a passthrough filesystem over pod volumes that fails chosen reads.

Run as ``python fusesrv.py <control fd>`` by the node agent (``fuselayer.py``), standard library
only (run by path, it imports nothing else). It speaks the kernel's FUSE protocol directly over
``/dev/fuse`` descriptors (no libfuse): each one is a volume mounted inside one container's mount
namespace, and the server answers that mount's requests by doing the same operation on the
volume's host directory. While no rule reaches the pod the layer is a plain passthrough (dormant);
with a rule, ``read()`` of the chosen blocks of the chosen files fails with the rule's errno, as a
disk with bad sectors under a dm-dust target would: any binary, static ones included, meets it,
and the rule lives only in this process (never in a file, mount option or variable of the pod).

Control socket (SOCK_SEQPACKET, JSON, from the node agent):

* ``{"add": "<pod uid>", "root": "<host dir>"}`` with one descriptor: a mounted ``/dev/fuse``;
* ``{"rules": {"<pod uid>": [rule, ...]}}``: the faults now. A rule is ``{"errno", "prefixes"
  (host paths; empty: the whole volume), "mode": "badblocks" with "frac", "block", "seed" (the
  node shim's deterministic map of file inode and block number) | "ranges" with "files":
  {host path: [[first, last], ...]} (block numbers, inclusive) | "random" with "rate",
  "sticky", "corrupt", "flips"}``.

What a rule does to the reads it chooses:

* by default they fail with its errno;
* ``sticky`` (random mode; a latent sector error): a read fails at the rate, and the block it
  failed on stays unreadable for every later read until a write covers the whole block (a drive
  remaps a sector when it is written), so what missed the datastore's cache keeps failing;
* ``corrupt`` (silent corruption, like dm-flakey's ``random_read_corrupt``): nothing fails; the
  chosen blocks read back altered at ``flips`` positions fixed per file and block, in the block's
  second half (where a PostgreSQL heap page keeps its rows, its header and line pointers stay
  intact): a byte there holding an ASCII digit becomes another digit (its low bit flipped), every
  other byte reads as written. So numbers and identifiers change while every length, header and
  pointer stays valid: the datastore has nothing to notice, no error and no crash (flipping any
  byte made PostgreSQL's backends crash on a row header, which is loud, not silent).

A read covering any bad block fails whole (as a failed bio does); the kernel then retries page by
page, so the pages of good blocks around it still read. Arming or disarming a rule drops the
kernel's cached pages of the layer's files, so a cached good copy never hides a bad block.

Paths are resolved component by component below the volume's root without following symlinks,
so nothing a pod does inside its volume (a symlink, a rename race) makes this root process touch
a file outside it.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import json
import os
import random
import socket
import stat
import struct
import sys
import threading
import time

# ---------------------------------------------------------------------------- protocol facts
# (linux/fuse.h, protocol 7.x; we answer INIT with minor 31 and use that version's layouts)

MAJOR, MINOR = 7, 31
ROOT_ID = 1
(LOOKUP, FORGET, GETATTR, SETATTR, READLINK, SYMLINK, MKNOD, MKDIR, UNLINK, RMDIR, RENAME, LINK, OPEN, READ,
 WRITE, STATFS, RELEASE, FSYNC, SETXATTR, GETXATTR, LISTXATTR, REMOVEXATTR, FLUSH, INIT, OPENDIR, READDIR,
 RELEASEDIR, FSYNCDIR, ACCESS, CREATE, INTERRUPT, DESTROY, BATCH_FORGET, FALLOCATE, RENAME2) = (
    1, 2, 3, 4, 5, 6, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 34,
    35, 36, 38, 42, 43, 45)
NO_REPLY = {FORGET, BATCH_FORGET, INTERRUPT}
NOTIFY_INVAL_INODE = 2
ASYNC_READ, BIG_WRITES, PARALLEL_DIROPS = 1 << 0, 1 << 5, 1 << 18
WANTED_INIT_FLAGS = ASYNC_READ | BIG_WRITES | PARALLEL_DIROPS
FATTR_MODE, FATTR_UID, FATTR_GID, FATTR_SIZE, FATTR_ATIME, FATTR_MTIME, FATTR_FH = 1, 2, 4, 8, 16, 32, 64
FATTR_ATIME_NOW, FATTR_MTIME_NOW = 128, 256
GETATTR_FH = 1
RENAME_NOREPLACE, RENAME_EXCHANGE = 1, 2
MAX_WRITE = 128 * 1024
BUFFER = MAX_WRITE + 4096  # one request: the largest write plus its headers
MOUNT_WAIT_S = 60.0  # how long a descriptor may wait for its container to mount it
TTL = 1  # seconds the kernel may cache names and attributes (every change comes through us)

IN_HEADER = struct.Struct("<IIQQIIIHH")  # len opcode unique nodeid uid gid pid total_extlen padding
OUT_HEADER = struct.Struct("<IiQ")  # len error unique
ATTR = struct.Struct("<QQQQQQIIIIIIIIII")  # ino size blocks a/m/ctime a/m/ctimensec mode nlink uid gid rdev blksize flags
ENTRY_HEAD = struct.Struct("<QQQQII")  # nodeid generation entry_valid attr_valid (nsecs)
ATTR_HEAD = struct.Struct("<QII")  # attr_valid attr_valid_nsec dummy
INIT_IN = struct.Struct("<IIII")  # major minor max_readahead flags
INIT_OUT = struct.Struct("<IIIIHHIIHHI28x")  # ... max_write time_gran max_pages map_alignment flags2 unused
OPEN_IN = struct.Struct("<II")  # flags open_flags
OPEN_OUT = struct.Struct("<QII")  # fh open_flags padding
CREATE_IN = struct.Struct("<IIII")  # flags mode umask open_flags
READ_IN = struct.Struct("<QQIIQII")  # fh offset size read_flags lock_owner flags padding
WRITE_IN = READ_IN  # same layout; the data follows
WRITE_OUT = struct.Struct("<II")
GETATTR_IN = struct.Struct("<IIQ")  # getattr_flags dummy fh
SETATTR_IN = struct.Struct("<IIQQQQQQIIIIIIII")
MKNOD_IN = struct.Struct("<IIII")  # mode rdev umask padding
MKDIR_IN = struct.Struct("<II")  # mode umask
RENAME_IN = struct.Struct("<Q")
RENAME2_IN = struct.Struct("<QII")
LINK_IN = struct.Struct("<Q")
FH_IN = struct.Struct("<Q")  # the fh that release/flush/fsync/releasedir start with
FORGET_IN = struct.Struct("<Q")
BATCH_FORGET_IN = struct.Struct("<II")
FORGET_ONE = struct.Struct("<QQ")
FALLOCATE_IN = struct.Struct("<QQQII")
STATFS_OUT = struct.Struct("<QQQQQIIII24x")
DIRENT = struct.Struct("<QQII")
INVAL_INODE = struct.Struct("<Qqq")

_MASK = (1 << 64) - 1
_OPEN_KEEP = os.O_ACCMODE | os.O_APPEND | os.O_NONBLOCK | os.O_SYNC | os.O_DSYNC


def mix(x: int) -> int:
    """splitmix64's finaliser: the node shim's (and disk-bad-blocks' ground truth's) block hash."""
    x = (x + 0x9E3779B97F4A7C15) & _MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK
    return x ^ (x >> 31)


def block_is_bad(inode: int, block: int, seed: int, frac: float) -> bool:
    return mix(((inode * 1000003) & _MASK) ^ mix((block ^ (seed << 32)) & _MASK)) % 1000000 < int(frac * 1e6)


def position(inode: int, block: int, seed: int, index: int) -> int:
    """The ``index``-th altered byte of a corrupted block (before reduction to the block's half)."""
    return mix(((inode * 1000003) & _MASK) ^ mix((block ^ (seed << 32) ^ (index << 48)) & _MASK))


class Rule:
    """One fault on a pod's volumes: which reads fail with which errno, or come back altered."""

    def __init__(self, spec: dict) -> None:
        self.spec = spec
        self.errno = int(spec.get("errno", errno.EIO))
        self.mode = spec.get("mode", "random")
        self.rate = float(spec.get("rate", 1.0))
        self.frac = float(spec.get("frac", 0.0))
        self.block = max(512, int(spec.get("block", 8192)))
        self.seed = int(spec.get("seed", 1))
        self.sticky = bool(spec.get("sticky")) and self.mode == "random"
        self.corrupt = bool(spec.get("corrupt"))
        self.flips = max(1, min(int(spec.get("flips", 256)), self.block))
        self.prefixes = [os.fsencode(p).rstrip(b"/") for p in spec.get("prefixes") or []]
        self.files = {os.fsencode(k): [(int(a), int(b)) for a, b in v] for k, v in (spec.get("files") or {}).items()}
        #: sticky: per file inode, the blocks a read failed on (until a write covers them)
        self.latent: dict[int, set[int]] = {}
        self._lock = threading.Lock()

    def covers(self, path: bytes) -> bool:
        return not self.prefixes or any(path == p or path.startswith(p + b"/") for p in self.prefixes)

    def _chosen(self, path: bytes, inode: int, first: int, last: int) -> list[int]:
        """The blocks of ``first..last`` this rule's map chooses (random mode: all of them, or none)."""
        if self.mode == "random":
            return list(range(first, last + 1)) if random.random() < self.rate else []
        if self.mode == "ranges":
            spans = self.files.get(path, ())
            return [b for b in range(first, last + 1) if any(a <= b <= z for a, z in spans)]
        if self.mode == "badblocks":
            return [b for b in range(first, last + 1) if block_is_bad(inode, b, self.seed, self.frac)]
        return []

    def fails(self, path: bytes, inode: int, offset: int, size: int) -> int:
        """The errno a read of ``size`` bytes at ``offset`` of this file meets (0: it reads)."""
        if size <= 0 or self.corrupt or not self.covers(path):
            return 0
        first, last = offset // self.block, (offset + size - 1) // self.block
        if self.sticky:
            with self._lock:
                bad = self.latent.get(inode, set())
                if any(first <= b <= last for b in bad):
                    return self.errno
                if random.random() >= self.rate:
                    return 0
                # the read met one unreadable block; it stays so (the kernel retries the rest page by page)
                self.latent.setdefault(inode, set()).add(random.randint(first, last))
                return self.errno
        return self.errno if self._chosen(path, inode, first, last) else 0

    def written(self, inode: int, offset: int, size: int) -> None:
        """A write covering whole blocks remaps them: a latent error there is gone."""
        if not self.sticky or size <= 0:
            return
        with self._lock:
            bad = self.latent.get(inode)
            if bad:
                first, end = -(-offset // self.block), (offset + size) // self.block
                bad.difference_update(range(first, end))

    def alter(self, path: bytes, inode: int, offset: int, data: bytes) -> bytes:
        """``data`` (read at ``offset``) as a corrupting rule returns it: at the chosen blocks'
        fixed positions, an ASCII digit becomes another (its low bit flipped)."""
        if not self.corrupt or not data or not self.covers(path):
            return data
        first, last = offset // self.block, (offset + len(data) - 1) // self.block
        chosen = self._chosen(path, inode, first, last)
        if not chosen:
            return data
        out = bytearray(data)
        half = self.block // 2
        for block in chosen:
            for index in range(self.flips):
                where = block * self.block + half + position(inode, block, self.seed, index) % half
                if offset <= where < offset + len(out) and 0x30 <= out[where - offset] <= 0x39:
                    out[where - offset] ^= 0x01  # 0<->1, 2<->3 ... 8<->9: still a digit
        return bytes(out)


class FuseError(Exception):
    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


def _attr(st: os.stat_result) -> bytes:
    return ATTR.pack(st.st_ino, st.st_size, st.st_blocks, int(st.st_atime), int(st.st_mtime), int(st.st_ctime),
                     st.st_atime_ns % 1_000_000_000, st.st_mtime_ns % 1_000_000_000, st.st_ctime_ns % 1_000_000_000,
                     st.st_mode, st.st_nlink, st.st_uid, st.st_gid, st.st_rdev, st.st_blksize, 0)


def _names(body: bytes, count: int) -> list[bytes]:
    parts = body.split(b"\0")
    if len(parts) <= count:
        raise FuseError(errno.EINVAL)
    for name in parts[:count]:
        if not name or name in (b".", b"..") or b"/" in name:
            raise FuseError(errno.EINVAL)
    return parts[:count]


class _Handle:
    __slots__ = ("fd", "path", "inode", "entries")

    def __init__(self, fd: int, path: bytes, inode: int, entries: list | None = None) -> None:
        self.fd, self.path, self.inode, self.entries = fd, path, inode, entries


class Layer:
    """One mounted volume (one ``/dev/fuse`` connection): node ids, open files, this pod's rules."""

    def __init__(self, fd: int | None, root: str, uid: str = "") -> None:
        self.fd = fd
        self.uid = uid
        self.root = os.fsencode(os.path.realpath(root))
        self.root_fd = os.open(self.root, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        self.lock = threading.Lock()
        self.nodes: dict[int, list] = {ROOT_ID: [b"", 1]}  # nodeid -> [path below root, lookups]
        self.by_path: dict[bytes, int] = {b"": ROOT_ID}
        self.handles: dict[int, _Handle] = {}
        self.rules: list[Rule] = []
        self._ids = itertools.count(ROOT_ID + 1)
        self._fhs = itertools.count(1)
        self.initialized = False
        self.closed = False

    # ------------------------------------------------------------ paths, without following symlinks

    def _path(self, nodeid: int) -> bytes:
        node = self.nodes.get(nodeid)
        if node is None:
            raise FuseError(errno.ESTALE)
        if node[0] is None:
            raise FuseError(errno.ENOENT)  # unlinked or replaced: only its open handles remain
        return node[0]

    def host_path(self, rel: bytes) -> bytes:
        return self.root + b"/" + rel if rel else self.root

    @contextlib.contextmanager
    def _dir(self, rel: bytes):
        """An O_PATH descriptor of the directory ``rel`` below the root, reached one component at a
        time with O_NOFOLLOW: a symlink anywhere on the way is refused, never followed."""
        fd = self.root_fd
        try:
            for part in rel.split(b"/") if rel else ():
                nxt = os.open(part, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
                if fd != self.root_fd:
                    os.close(fd)
                fd = nxt
            yield fd
        finally:
            if fd != self.root_fd:
                os.close(fd)

    @contextlib.contextmanager
    def _parent(self, rel: bytes):
        """(parent directory descriptor, final name) of ``rel`` (never the root itself)."""
        head, _, name = rel.rpartition(b"/")
        with self._dir(head) as fd:
            yield fd, name

    def _stat(self, rel: bytes) -> os.stat_result:
        if not rel:
            return os.stat(self.root_fd)
        with self._parent(rel) as (fd, name):
            return os.stat(name, dir_fd=fd, follow_symlinks=False)

    def _entry(self, rel: bytes) -> bytes:
        """Look ``rel`` up (one more kernel reference to its node) and describe it."""
        st = self._stat(rel)
        with self.lock:
            nodeid = self.by_path.get(rel)
            if nodeid is None or nodeid not in self.nodes:
                nodeid = next(self._ids)
                self.nodes[nodeid] = [rel, 0]
                self.by_path[rel] = nodeid
            self.nodes[nodeid][1] += 1
        return ENTRY_HEAD.pack(nodeid, 0, TTL, TTL, 0, 0) + _attr(st)

    def _child(self, nodeid: int, name: bytes) -> bytes:
        parent = self._path(nodeid)
        return parent + b"/" + name if parent else name

    def _forget(self, nodeid: int, count: int) -> None:
        if nodeid == ROOT_ID:
            return
        with self.lock:
            node = self.nodes.get(nodeid)
            if node is None:
                return
            node[1] -= count
            if node[1] <= 0:
                del self.nodes[nodeid]
                if self.by_path.get(node[0]) == nodeid:
                    del self.by_path[node[0]]

    def _moved(self, old: bytes, new: bytes) -> None:
        """After a rename: the node at ``old`` (and everything below it) is now at ``new``."""
        with self.lock:
            replaced = self.by_path.pop(new, None)
            if replaced is not None and replaced in self.nodes:
                self.nodes[replaced][0] = None  # a replaced file: only its open handles remain
            for path in [p for p in self.by_path if p == old or p.startswith(old + b"/")]:
                nodeid = self.by_path.pop(path)
                moved = new + path[len(old):]
                self.by_path[moved] = nodeid
                self.nodes[nodeid][0] = moved

    def _unlinked(self, rel: bytes) -> None:
        with self.lock:
            nodeid = self.by_path.pop(rel, None)
            if nodeid is not None and nodeid in self.nodes:
                self.nodes[nodeid][0] = None

    def _own(self, name: bytes, fd: int, uid: int, gid: int) -> None:
        """Files the pod creates belong to the calling user, as on a local disk (we run as root)."""
        with contextlib.suppress(OSError):
            os.chown(name, uid, gid, dir_fd=fd, follow_symlinks=False)

    # ------------------------------------------------------------ requests

    def handle(self, request: bytes) -> bytes | None:
        """One request in, its reply out (None: the opcode takes no reply)."""
        _len, opcode, unique, nodeid, uid, gid, _pid, extlen, _pad = IN_HEADER.unpack_from(request)
        body = memoryview(request)[IN_HEADER.size + extlen * 8:]
        if opcode == INTERRUPT:
            return None  # the interrupted request is answered in full anyway
        try:
            payload = self.dispatch(opcode, nodeid, uid, gid, body)
        except Exception as exc:  # noqa: BLE001 - every request gets an answer, or the caller hangs
            code = exc.code if isinstance(exc, FuseError) else getattr(exc, "errno", None) or errno.EIO
            return None if opcode in NO_REPLY else OUT_HEADER.pack(OUT_HEADER.size, -code, unique)
        if opcode in NO_REPLY:
            return None
        return OUT_HEADER.pack(OUT_HEADER.size + len(payload), 0, unique) + payload

    def dispatch(self, op: int, nodeid: int, uid: int, gid: int, body: memoryview) -> bytes:  # noqa: C901, PLR0911, PLR0912
        if op == INIT:
            major, minor, readahead, flags = INIT_IN.unpack_from(body)
            self.initialized = True
            if major != MAJOR:
                return INIT_OUT.pack(MAJOR, MINOR, 0, 0, 0, 0, 0, 0, 0, 0, 0)
            return INIT_OUT.pack(MAJOR, min(minor, MINOR), readahead, flags & WANTED_INIT_FLAGS, 16, 12,
                                 MAX_WRITE, 1, 0, 0, 0)
        if op == LOOKUP:
            (name,) = _names(bytes(body), 1)
            return self._entry(self._child(nodeid, name))
        if op == FORGET:
            self._forget(nodeid, FORGET_IN.unpack_from(body)[0])
            return b""
        if op == BATCH_FORGET:
            count, _ = BATCH_FORGET_IN.unpack_from(body)
            for index in range(count):
                one, lookups = FORGET_ONE.unpack_from(body, BATCH_FORGET_IN.size + index * FORGET_ONE.size)
                self._forget(one, lookups)
            return b""
        if op == GETATTR:
            flags, _, fh = GETATTR_IN.unpack_from(body)
            handle = self.handles.get(fh) if flags & GETATTR_FH else None
            st = os.fstat(handle.fd) if handle is not None else self._stat(self._path(nodeid))
            return ATTR_HEAD.pack(TTL, 0, 0) + _attr(st)
        if op == SETATTR:
            return self._setattr(nodeid, body)
        if op == OPEN:
            flags, _ = OPEN_IN.unpack_from(body)
            rel = self._path(nodeid)
            with self._parent(rel) as (dfd, name):
                fd = os.open(name, (flags & _OPEN_KEEP) | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dfd)
            return self._opened(fd, rel)
        if op == CREATE:
            flags, mode, _umask, _ = CREATE_IN.unpack_from(body)
            (name,) = _names(bytes(body[CREATE_IN.size:]), 1)
            rel = self._child(nodeid, name)
            with self._parent(rel) as (dfd, _name):
                fd = os.open(name, (flags & (_OPEN_KEEP | os.O_EXCL)) | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC,
                             mode & 0o7777, dir_fd=dfd)
                with contextlib.suppress(OSError):
                    os.fchown(fd, uid, gid)
            try:
                entry = self._entry(rel)
            except OSError:
                os.close(fd)
                raise
            return entry + self._opened(fd, rel)
        if op == READ:
            fh, offset, size, *_ = READ_IN.unpack_from(body)
            handle = self._handle(fh)
            rules, path = self.rules, self.host_path(handle.path)
            for rule in rules:
                failed = rule.fails(path, handle.inode, offset, size)
                if failed:
                    raise FuseError(failed)
            data = os.pread(handle.fd, size, offset)
            for rule in rules:
                data = rule.alter(path, handle.inode, offset, data)
            return data
        if op == WRITE:
            fh, offset, size, *_ = WRITE_IN.unpack_from(body)
            chunk = body[WRITE_IN.size:WRITE_IN.size + size]
            handle = self._handle(fh)
            written = os.pwrite(handle.fd, chunk, offset)
            for rule in self.rules:
                rule.written(handle.inode, offset, written)
            return WRITE_OUT.pack(written, 0)
        if op in (RELEASE, RELEASEDIR):
            handle = self.handles.pop(FH_IN.unpack_from(body)[0], None)
            if handle is not None:
                os.close(handle.fd)
            return b""
        if op == FLUSH:
            return b""
        if op in (FSYNC, FSYNCDIR):
            handle = self._handle(FH_IN.unpack_from(body)[0])
            os.fsync(handle.fd)
            return b""
        if op == OPENDIR:
            rel = self._path(nodeid)
            if rel:
                with self._parent(rel) as (dfd, name):
                    fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dfd)
            else:
                fd = os.open(b".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=self.root_fd)
            try:
                entries = self._listing(fd)
            except OSError:
                os.close(fd)
                raise
            fh = next(self._fhs)
            self.handles[fh] = _Handle(fd, rel, 0, entries)
            return OPEN_OUT.pack(fh, 0, 0)
        if op == READDIR:
            fh, offset, size, *_ = READ_IN.unpack_from(body)
            return self._readdir(self._handle(fh), offset, size)
        if op == STATFS:
            sv = os.statvfs(self.root_fd)
            return STATFS_OUT.pack(sv.f_blocks, sv.f_bfree, sv.f_bavail, sv.f_files, sv.f_ffree, sv.f_bsize,
                                   sv.f_namemax, sv.f_frsize, 0)
        if op == MKDIR:
            mode, _umask = MKDIR_IN.unpack_from(body)
            (name,) = _names(bytes(body[MKDIR_IN.size:]), 1)
            rel = self._child(nodeid, name)
            with self._parent(rel) as (dfd, _name):
                os.mkdir(name, mode & 0o7777, dir_fd=dfd)
                self._own(name, dfd, uid, gid)
            return self._entry(rel)
        if op == MKNOD:
            mode, rdev, _umask, _ = MKNOD_IN.unpack_from(body)
            (name,) = _names(bytes(body[MKNOD_IN.size:]), 1)
            if not (stat.S_ISREG(mode) or stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)):
                raise FuseError(errno.EPERM)  # no device nodes on a volume
            rel = self._child(nodeid, name)
            with self._parent(rel) as (dfd, _name):
                os.mknod(name, mode, 0, dir_fd=dfd)
                self._own(name, dfd, uid, gid)
            return self._entry(rel)
        if op == SYMLINK:
            name, target = bytes(body).split(b"\0")[:2]
            _names(name + b"\0", 1)
            rel = self._child(nodeid, name)
            with self._parent(rel) as (dfd, _name):
                os.symlink(target, name, dir_fd=dfd)
                self._own(name, dfd, uid, gid)
            return self._entry(rel)
        if op == READLINK:
            with self._parent(self._path(nodeid)) as (dfd, name):
                return os.readlink(name, dir_fd=dfd)
        if op in (UNLINK, RMDIR):
            (name,) = _names(bytes(body), 1)
            rel = self._child(nodeid, name)
            with self._parent(rel) as (dfd, _name):
                (os.unlink if op == UNLINK else os.rmdir)(name, dir_fd=dfd)
            self._unlinked(rel)
            return b""
        if op in (RENAME, RENAME2):
            head = RENAME_IN if op == RENAME else RENAME2_IN
            fields = head.unpack_from(body)
            flags = fields[1] if op == RENAME2 else 0
            old, new = _names(bytes(body[head.size:]), 2)
            if flags & RENAME_EXCHANGE:
                raise FuseError(errno.EINVAL)
            src, dst = self._child(nodeid, old), self._child(fields[0], new)
            with self._parent(src) as (sfd, _a), self._parent(dst) as (dfd, _b):
                if flags & RENAME_NOREPLACE:
                    with contextlib.suppress(FileNotFoundError):
                        os.stat(new, dir_fd=dfd, follow_symlinks=False)
                        raise FuseError(errno.EEXIST)
                os.rename(old, new, src_dir_fd=sfd, dst_dir_fd=dfd)
            self._moved(src, dst)
            return b""
        if op == LINK:
            (oldnode,) = LINK_IN.unpack_from(body)
            (name,) = _names(bytes(body[LINK_IN.size:]), 1)
            src, dst = self._path(oldnode), self._child(nodeid, name)
            with self._parent(src) as (sfd, sname), self._parent(dst) as (dfd, _b):
                os.link(sname, name, src_dir_fd=sfd, dst_dir_fd=dfd, follow_symlinks=False)
            return self._entry(dst)
        if op == FALLOCATE:
            fh, offset, length, mode, _ = FALLOCATE_IN.unpack_from(body)
            if mode:
                raise FuseError(errno.EOPNOTSUPP)
            os.posix_fallocate(self._handle(fh).fd, offset, length)
            return b""
        if op == DESTROY:
            return b""
        # xattrs, access, locks, ioctl, poll, lseek ...: "not implemented" makes the kernel do
        # without (and stop asking)
        raise FuseError(errno.ENOSYS)

    def _handle(self, fh: int) -> _Handle:
        handle = self.handles.get(fh)
        if handle is None:
            raise FuseError(errno.EBADF)
        return handle

    def _opened(self, fd: int, rel: bytes) -> bytes:
        fh = next(self._fhs)
        self.handles[fh] = _Handle(fd, rel, os.fstat(fd).st_ino)
        return OPEN_OUT.pack(fh, 0, 0)  # no KEEP_CACHE: each open starts from the disk's answer

    @staticmethod
    def _listing(fd: int) -> list[tuple[bytes, int, int]]:
        st = os.fstat(fd)
        entries = [(b".", st.st_ino, stat.S_IFDIR >> 12), (b"..", 1, stat.S_IFDIR >> 12)]
        with os.scandir(fd) as it:
            for entry in it:
                kind = (stat.S_IFDIR if entry.is_dir(follow_symlinks=False) else
                        stat.S_IFLNK if entry.is_symlink() else
                        stat.S_IFREG if entry.is_file(follow_symlinks=False) else 0) >> 12
                entries.append((os.fsencode(entry.name), entry.inode(), kind))
        return entries

    @staticmethod
    def _readdir(handle: _Handle, offset: int, size: int) -> bytes:
        out = bytearray()
        entries = handle.entries or []
        for index in range(offset, len(entries)):
            name, inode, kind = entries[index]
            record = DIRENT.pack(inode, index + 1, len(name), kind) + name
            record += b"\0" * (-len(record) % 8)
            if len(out) + len(record) > size:
                break
            out += record
        return bytes(out)

    def _setattr(self, nodeid: int, body: memoryview) -> bytes:
        (valid, _, fh, size, _lock, atime, mtime, _ctime, atimens, mtimens, _ctimens, mode, _, uid, gid,
         _) = SETATTR_IN.unpack_from(body)
        handle = self.handles.get(fh) if valid & FATTR_FH else None
        rel = self._path(nodeid)
        head, _, name = rel.rpartition(b"/")
        with self._dir(head) as dfd:
            # the node itself, never what a symlink there points at; calls that take no O_PATH
            # descriptor reach the same inode through /proc
            fd = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dfd) if rel else os.dup(self.root_fd)
            try:
                st = os.fstat(fd)
                link = stat.S_ISLNK(st.st_mode)
                proc = f"/proc/self/fd/{fd}"
                if valid & FATTR_MODE and not link:
                    os.chmod(proc, stat.S_IMODE(mode))
                if valid & (FATTR_UID | FATTR_GID):
                    ids = (uid if valid & FATTR_UID else -1, gid if valid & FATTR_GID else -1)
                    if rel:
                        os.chown(name, *ids, dir_fd=dfd, follow_symlinks=False)
                    else:
                        os.chown(proc, *ids)
                if valid & FATTR_SIZE:
                    if not stat.S_ISREG(st.st_mode):
                        raise FuseError(errno.EINVAL)
                    if handle is not None:
                        os.ftruncate(handle.fd, size)
                    else:
                        writable = os.open(proc, os.O_WRONLY | os.O_CLOEXEC)
                        try:
                            os.ftruncate(writable, size)
                        finally:
                            os.close(writable)
                if valid & (FATTR_ATIME | FATTR_MTIME | FATTR_ATIME_NOW | FATTR_MTIME_NOW) and not link:
                    now = time.time_ns()
                    a_ns = (now if valid & FATTR_ATIME_NOW else atime * 1_000_000_000 + atimens
                            if valid & FATTR_ATIME else st.st_atime_ns)
                    m_ns = (now if valid & FATTR_MTIME_NOW else mtime * 1_000_000_000 + mtimens
                            if valid & FATTR_MTIME else st.st_mtime_ns)
                    os.utime(proc, ns=(a_ns, m_ns))
                return ATTR_HEAD.pack(TTL, 0, 0) + _attr(os.fstat(fd))
            finally:
                os.close(fd)

    # ------------------------------------------------------------ serving the kernel

    def serve(self) -> None:
        """One worker: read a request, answer it, until the mount goes away. The descriptor comes
        before the container's child mounts it (so the child may wait on the mount safely): until
        then reads fail with EPERM, and are tried again for MOUNT_WAIT_S."""
        fd = self.fd
        if fd is None:  # no kernel connection (a layer answering requests handed to it)
            return
        deadline = time.monotonic() + MOUNT_WAIT_S
        while not self.closed:
            try:
                request = os.read(fd, BUFFER)
            except OSError as exc:
                if exc.errno in (errno.EINTR, errno.EAGAIN, errno.ENOENT):
                    continue  # interrupted, or the request was withdrawn
                if exc.errno == errno.EPERM and not self.initialized and time.monotonic() < deadline:
                    time.sleep(0.005)  # not mounted yet
                    continue
                self.closed = True  # ENODEV: unmounted (the container's namespace is gone); EPERM: never mounted
                return
            if not request:
                self.closed = True
                return
            reply = self.handle(request)
            if reply is not None:
                with contextlib.suppress(OSError):  # ENOENT: the caller was interrupted meanwhile
                    os.write(fd, reply)

    def invalidate(self) -> None:
        """Drop the kernel's cached pages and attributes of every node it knows (the rules changed)."""
        fd = self.fd
        if fd is None:  # no kernel connection: no kernel cache to drop
            return
        with self.lock:
            ids = [n for n in self.nodes if n != ROOT_ID]
        for nodeid in ids:
            with contextlib.suppress(OSError):
                os.write(fd, OUT_HEADER.pack(OUT_HEADER.size + INVAL_INODE.size, NOTIFY_INVAL_INODE, 0)
                         + INVAL_INODE.pack(nodeid, 0, 0))

    def close(self) -> None:
        self.closed = True
        for handle in list(self.handles.values()):
            with contextlib.suppress(OSError):
                os.close(handle.fd)
        self.handles.clear()
        with contextlib.suppress(OSError):
            os.close(self.root_fd)
        if self.fd is not None:
            with contextlib.suppress(OSError):
                os.close(self.fd)


# ---------------------------------------------------------------------------- the process

WORKERS = 4


class Server:
    def __init__(self, control: socket.socket) -> None:
        self.control = control
        self.layers: list[Layer] = []
        self.rules: dict[str, list[dict]] = {}

    def add(self, fd: int, uid: str, root: str) -> None:
        try:
            layer = Layer(fd, root, uid)
        except OSError:
            os.close(fd)
            return
        layer.rules = [Rule(r) for r in self.rules.get(uid, ())]
        self.layers.append(layer)
        workers = [WORKERS]
        for _ in range(WORKERS):
            threading.Thread(target=self._work, args=(layer, workers), daemon=True).start()

    @staticmethod
    def _work(layer: Layer, workers: list[int]) -> None:
        layer.serve()
        with layer.lock:
            workers[0] -= 1
            last = workers[0] == 0
        if last:  # the mount is gone: its open files and descriptors go too
            layer.close()

    def set_rules(self, rules: dict[str, list[dict]]) -> None:
        self.rules = rules
        self.layers = [layer for layer in self.layers if not layer.closed]
        for layer in self.layers:
            specs = list(rules.get(layer.uid, ()))
            changed = specs != [r.spec for r in layer.rules]
            if not changed:
                continue  # the same rules: keep them (a sticky rule keeps the blocks it failed)
            layer.rules = [Rule(r) for r in specs]
            if layer.initialized:
                layer.invalidate()

    def run(self) -> None:
        while True:
            try:
                data, fds, _flags, _addr = socket.recv_fds(self.control, 1 << 20, 8)
            except OSError:
                return
            if not data:
                return  # the node agent is gone
            message = json.loads(data)
            if "add" in message:
                for fd in fds:
                    self.add(fd, message["add"], message["root"])
            else:
                for fd in fds:
                    os.close(fd)
            if "rules" in message:
                self.set_rules(message["rules"])


def main() -> None:
    os.umask(0)  # modes are the caller's, already masked by the kernel
    control = socket.socket(fileno=int(sys.argv[1]))
    Server(control).run()


if __name__ == "__main__":
    main()
