"""Pure-Python stand-in for the bind shim (used when gcc is missing): Python processes in a pod
bind the pod IP instead of 0.0.0.0/127.0.0.1 and reach the pod IP when they dial localhost."""

import os
import socket

_POD_IP = os.environ.get("SREGYM_POD_IP", "")
_LOCAL = {"127.0.0.1", "localhost"}
_WILD = {"", "0.0.0.0"}


def _fix(address, wildcard_too):
    if not _POD_IP or not isinstance(address, tuple) or len(address) < 2:
        return address
    host = address[0]
    if host in _LOCAL or (wildcard_too and host in _WILD):
        return (_POD_IP, *address[1:])
    if host in ("::1", "::") and (wildcard_too or host == "::1"):
        return ("::ffff:" + _POD_IP, *address[1:])
    return address


_bind = socket.socket.bind
_connect = socket.socket.connect
_connect_ex = socket.socket.connect_ex


def _patched_bind(self, address):
    return _bind(self, _fix(address, True))


def _patched_connect(self, address):
    return _connect(self, _fix(address, False))


def _patched_connect_ex(self, address):
    return _connect_ex(self, _fix(address, False))


if _POD_IP:
    # replacing the class's methods is this shim's purpose, which mypy's method-assign check cannot know
    socket.socket.bind = _patched_bind  # type: ignore[method-assign]
    socket.socket.connect = _patched_connect  # type: ignore[method-assign]
    socket.socket.connect_ex = _patched_connect_ex  # type: ignore[method-assign]
