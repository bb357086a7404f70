"""Builds the node fault shim (faultshim.c) and gives each pod its rules channel.

The shim is loaded into every pod process (after the bind shim; a world-readable directory, as the
bind shim: processes that drop privileges must map it) and stays inert until its pod's channel
has rules. A channel is a memfd only the node agent writes (``admin_faults`` renders the rules
that apply to the pod into it); the container's main process receives a read-only descriptor of
it at start, and ``kubectl exec`` processes never do. No path, mount or environment variable names
it, so nothing a pod can list or read from its filesystem carries a fault's parameters.
"""

from __future__ import annotations

import contextlib
import hashlib
import mmap
import os
import shutil
import struct
import subprocess
from pathlib import Path

from .shim import SHARED_DIR, ensure_shared_dir

SOURCE = Path(__file__).with_name("faultshim.c")


def build_fault_shim() -> Path | None:
    """Path of the compiled fault shim (cached by source hash), or None when gcc is unavailable."""
    source = SOURCE.read_bytes()
    digest = hashlib.sha256(source).hexdigest()[:12]
    target = SHARED_DIR / f"sregym_fault-{digest}.so"
    if target.exists():
        return target
    gcc = shutil.which("gcc") or shutil.which("cc")
    if not gcc:
        return None
    ensure_shared_dir()
    tmp = target.with_suffix(f".{os.getpid()}.tmp")
    result = subprocess.run([gcc, "-O2", "-fPIC", "-shared", "-o", str(tmp), str(SOURCE), "-ldl", "-lpthread"],
                            capture_output=True, text=True, timeout=60)
    if result.returncode != 0:
        return None
    tmp.chmod(0o755)
    tmp.replace(target)
    return target


#: the name the shim recognises among its inherited descriptors (see faultshim.c)
CHANNEL_NAME = "sregym-faults"
CHANNEL_SIZE = 16384
_TEXT = 16


class RulesChannel:
    """One pod's rules: a memfd of CHANNEL_SIZE bytes, a seqlock generation (odd while being
    written), the text's length and the text. Only the holder of this object can write it."""

    def __init__(self) -> None:
        self.fd = os.memfd_create(CHANNEL_NAME, os.MFD_CLOEXEC)
        os.ftruncate(self.fd, CHANNEL_SIZE)
        self._map = mmap.mmap(self.fd, CHANNEL_SIZE)
        self._generation = 0
        self.lines: list[str] = []

    def write(self, lines: list[str]) -> None:
        text = "".join(line + "\n" for line in lines).encode()
        if len(text) > CHANNEL_SIZE - _TEXT - 1:
            raise ValueError(f"rules of {len(text)} bytes do not fit the channel")
        self._generation += 1  # odd: readers retry
        self._map[0:8] = struct.pack("<Q", self._generation)
        self._map[8:12] = struct.pack("<I", len(text))
        self._map[_TEXT:_TEXT + len(text)] = text
        self._map[_TEXT + len(text):_TEXT + len(text) + 1] = b"\0"
        self._generation += 1
        self._map[0:8] = struct.pack("<Q", self._generation)
        self.lines = list(lines)

    def reader(self) -> int:
        """A new read-only descriptor of the channel (close-on-exec; the caller passes it to one
        process, then closes it): the process can map and read it, never write it."""
        return os.open(f"/proc/self/fd/{self.fd}", os.O_RDONLY | os.O_CLOEXEC)

    def close(self) -> None:
        with contextlib.suppress(BufferError, ValueError):
            self._map.close()
        with contextlib.suppress(OSError):
            os.close(self.fd)


def dynamically_linked(program: str) -> bool:
    """Whether the program loads shared libraries (an ELF with an interpreter, or a script whose
    interpreter does). A static binary never loads the shim, so it must not hold a channel either:
    it stays dumpable, and another process of its pod could read the descriptor through /proc."""
    try:
        with open(program, "rb") as f:
            head = f.read(4096)
    except OSError:
        return False
    if head.startswith(b"#!"):
        interpreter = head[2:].split(b"\n", 1)[0].strip().split(b" ", 1)[0].decode(errors="replace")
        return interpreter.startswith("/") and interpreter != program and dynamically_linked(interpreter)
    if not head.startswith(b"\x7fELF") or len(head) < 64:
        return False
    is64, little = head[4] == 2, head[5] == 1
    order = "<" if little else ">"
    if is64:
        phoff, = struct.unpack_from(order + "Q", head, 32)
        phentsize, phnum = struct.unpack_from(order + "HH", head, 54)
    else:
        phoff, = struct.unpack_from(order + "I", head, 28)
        phentsize, phnum = struct.unpack_from(order + "HH", head, 42)
    try:
        with open(program, "rb") as f:
            f.seek(phoff)
            table = f.read(phentsize * phnum)
    except OSError:
        return False
    for index in range(phnum):
        if len(table) >= (index + 1) * phentsize and struct.unpack_from(order + "I", table, index * phentsize)[0] == 3:
            return True  # PT_INTERP
    return False
