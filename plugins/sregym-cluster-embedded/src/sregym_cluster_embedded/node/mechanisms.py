"""What this node kind accepts, in the vocabulary of ``sregym_core.mechanisms``.

Each probe asks the kernel itself (it loads a program, installs a filter in a child) and keeps
the kernel's answer as the reason when it refuses: on the CI's VM ``lsm/*`` and ``fmod_ret/*``
programs are refused with EPERM before the verifier runs, so the probe says exactly that. A
probe loads nothing that stays: every descriptor is closed before it returns. Results are cached
per process (the kernel does not change under us).

``bpf-lsm`` and ``bpf-fmod-ret`` are probed so the answer is honest on nodes that accept them;
the programs that would fail file syscalls through them are not built yet (the probe says so
when the kernel accepts one), so file syscalls run through the seccomp supervisor here.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import platform
import shutil
import struct
from pathlib import Path
from typing import Any

from ..network.netguard import _bpf, _insn
from . import bpffault, seccompfault

PROG_LOAD = 5
PROG_TRACING, PROG_LSM = 26, 29
ATTACH_MODIFY_RETURN, ATTACH_LSM_MAC = 26, 27
BTF_KIND_FUNC = 12
VMLINUX_BTF = Path("/sys/kernel/btf/vmlinux")
#: the hook a file-syscall LSM program would use, and the syscall an fmod_ret program would
LSM_HOOK = "bpf_lsm_file_permission"
_SYSCALL_PREFIX = {"x86_64": "__x64_sys_", "aarch64": "__arm64_sys_"}
FILE_CALLS = ["fsync", "read", "write"]
NOT_BUILT = "the kernel accepts it, but sregym has no {what} fault programs yet"

_CACHE: dict[str, tuple[bool, str]] = {}


def _btf_func_id(name: str, path: Path = VMLINUX_BTF) -> int | None:
    """The BTF type id of kernel function ``name`` (what a tracing or LSM program attaches to)."""
    data = path.read_bytes()
    magic, _version, _flags, hdr_len, type_off, type_len, str_off, str_len = struct.unpack_from("<HBBIIIII", data, 0)
    if magic != 0xEB9F:
        return None
    strings = data[hdr_len + str_off: hdr_len + str_off + str_len]
    at = strings.find(b"\0" + name.encode() + b"\0")
    if at < 0:
        return None
    wanted = at + 1
    pos, end, type_id = hdr_len + type_off, hdr_len + type_off + type_len, 1
    # bytes after the 12-byte header of each kind (vlen = info & 0xffff)
    per_member = {4: 12, 5: 12, 6: 8, 13: 8, 15: 12, 19: 12}
    fixed = {1: 4, 3: 12, 14: 4, 17: 4}
    while pos < end:
        name_off, info, _size = struct.unpack_from("<III", data, pos)
        kind, vlen = (info >> 24) & 0x1F, info & 0xFFFF
        if kind == BTF_KIND_FUNC and name_off == wanted:
            return type_id
        pos += 12 + fixed.get(kind, 0) + per_member.get(kind, 0) * vlen
        type_id += 1
    return None


def _load_attached(prog_type: int, attach_type: int, btf_id: int) -> None:
    """Load a program that returns 0 (changes nothing) for ``btf_id``; raises the kernel's error."""
    insns = _insn(0xB7, dst=0, imm=0) + _insn(0x95)
    code = ctypes.create_string_buffer(insns, len(insns))
    license_ = ctypes.create_string_buffer(b"GPL")
    log_buf = ctypes.create_string_buffer(4096)
    attr = struct.pack("<IIQQIIQII16sIIIIQIIQII", prog_type, len(insns) // 8, ctypes.addressof(code),
                       ctypes.addressof(license_), 1, len(log_buf), ctypes.addressof(log_buf), 0, 0,
                       b"sregym_probe", 0, attach_type, 0, 0, 0, 0, 0, 0, 0, btf_id)
    try:
        fd = _bpf(PROG_LOAD, attr)
    except OSError as exc:
        detail = log_buf.value.decode(errors="replace").strip()[-200:]
        raise OSError(exc.errno, f"{exc.strerror}{': ' + detail if detail else ''}") from None
    os.close(fd)


def _probe_trampoline(key: str, prog_type: int, attach_type: int, function: str, what: str) -> tuple[bool, str]:
    if key in _CACHE:
        return _CACHE[key]
    if os.geteuid() != 0:
        result = (False, "needs root (BPF tracing programs)")
    elif not VMLINUX_BTF.exists():
        result = (False, f"no kernel BTF ({VMLINUX_BTF})")
    else:
        try:
            btf_id = _btf_func_id(function)
            if btf_id is None:
                result = (False, f"the kernel has no function {function}")
            else:
                _load_attached(prog_type, attach_type, btf_id)
                result = (False, NOT_BUILT.format(what=what))
        except OSError as exc:
            name = {1: "EPERM", 22: "EINVAL", 95: "EOPNOTSUPP", 524: "ENOTSUPP"}.get(exc.errno or 0, f"errno {exc.errno}")
            result = (False, f"the kernel refused a {what} program on {function} ({name}: {exc.strerror})")
    _CACHE[key] = result
    return result


def probe_bpf_lsm() -> tuple[bool, str]:
    return _probe_trampoline("bpf-lsm", PROG_LSM, ATTACH_LSM_MAC, LSM_HOOK, "lsm/file_permission")


def probe_fmod_ret() -> tuple[bool, str]:
    prefix = _SYSCALL_PREFIX.get(platform.machine())
    if prefix is None:
        return False, f"no syscall entry names for architecture {platform.machine()}"
    return _probe_trampoline("bpf-fmod-ret", PROG_TRACING, ATTACH_MODIFY_RETURN, prefix + "fsync", "fmod_ret")


def _entry(result: tuple[bool, str], operations: list[str] | None, **extra: Any) -> dict[str, Any]:
    available, reason = result
    return {"available": available, **({"reason": reason} if reason else {}),
            "operations": operations, **extra}


def node_mechanisms(*, guard: bool, shim: bool, supervisor: bool) -> dict[str, dict[str, Any]]:
    """Every mechanism of the vocabulary this node agent knows, with the probe's answer.

    ``guard``: pods run in their own cgroup v2 directories (the network guard is on);
    ``shim``: the LD_PRELOAD shim is built; ``supervisor``: the seccomp supervisor runs."""
    bpf = bpffault.probe() if guard else (
        False, "pods have no cgroup v2 directories (the network guard is off: not root or no cgroup v2)")
    mode = seccompfault.mode()
    if supervisor:
        seccomp = (True, "")
    elif mode == "off":
        seccomp = (False, f"off ({seccompfault.ENABLE_ENV}=0 in the cluster's environment)")
    elif not seccompfault.probe()[0]:
        seccomp = seccompfault.probe()
    else:
        seccomp = (False, "the cluster's node agents run no supervisor")
    return {
        "bpf-lsm": _entry(probe_bpf_lsm(), FILE_CALLS),
        "bpf-fmod-ret": _entry(probe_fmod_ret(), FILE_CALLS),
        "bpf-cgroup": _entry(bpf, sorted(bpffault.ATTACH)),
        "seccomp-supervisor": _entry(seccomp, sorted(seccompfault.CALLS), mode=mode,
                                     reaches="pods started under its filter: " + (
                                         "every app pod (fsync)" if mode == "all" else
                                         "targets of installed problems' syscall faults and supervise records")),
        "ld-preload-shim": _entry((shim, "" if shim else "no C compiler to build the shim"),
                                  ["read", "write", "fsync", "open", "connect"]),
    }


def host_mechanisms() -> dict[str, dict[str, Any]]:
    """What an embedded cluster started on this host would offer (no cluster needed): what
    ``sregym list-faults`` asks before anything runs."""
    from ..network.netguard import cgroup2_root

    guard = os.geteuid() == 0 and cgroup2_root() is not None
    shim = shutil.which("cc") is not None or shutil.which("gcc") is not None
    supervisor = seccompfault.probe()[0] and seccompfault.enabled()
    from . import fuselayer  # the FUSE bad-block layer (a running cluster reports it from its fault hooks)
    return {**node_mechanisms(guard=guard, shim=shim, supervisor=supervisor),
            "fuse-badblocks": _entry(fuselayer.probe(), ["read"], layer=fuselayer.mode())}


def reset_cache() -> None:
    """For tests: probe again."""
    _CACHE.clear()
    with contextlib.suppress(AttributeError):
        bpffault._PROBED = None
