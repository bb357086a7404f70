"""A pod's ``spec.securityContext.sysctls``, as the kubelet and the runtime treat them.

The kubelet admits a pod only if each sysctl is on its allowlist (the safe, namespaced ones; no
``--allowed-unsafe-sysctls`` here) and is not a ``net.*`` sysctl of a host-network pod (or an IPC
one of a host-IPC pod); otherwise it rejects the pod: phase Failed, reason ``SysctlForbidden``,
message ``Pod was rejected: forbidden sysctl: "<name>" not allowlisted``. The runtime then writes
each value into the pod's namespaces; a value the kernel refuses fails the sandbox
(``FailedCreatePodSandBox``, retried), and the pod stays ContainerCreating.

This node applies ``net.ipv4.ip_local_port_range`` for the pod's processes only
(``node/portrange.py``), checking its value as the kernel does. The other safe sysctls are
admitted but have no per-pod equivalent here (pods share the host's namespaces, where they are
global): the pod gets a ``SysctlNotApplied`` warning event naming them, never a silent no-op.
"""

from __future__ import annotations

from ..apiserver.podsecurity import SAFE_SYSCTLS

FORBIDDEN_REASON = "SysctlForbidden"
NOT_APPLIED_REASON = "SysctlNotApplied"
PORT_RANGE = "net.ipv4.ip_local_port_range"
UNPRIVILEGED_PORT_START = "net.ipv4.ip_unprivileged_port_start"
#: the kernel's default for net.ipv4.ip_unprivileged_port_start (the floor of a port range)
DEFAULT_UNPRIVILEGED_PORT_START = 1024
#: what the kubelet allows by default besides the Pod Security baseline's list (kernel >= 4.15)
KUBELET_SAFE = frozenset(SAFE_SYSCTLS) | {"net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"}


def normalize(name: str) -> str:
    """``net/ipv4/ip_local_port_range`` -> ``net.ipv4.ip_local_port_range``: a name whose first
    separator is a slash uses slashes for dots and dots for slashes (the kubelet's rule)."""
    first = next((c for c in name if c in "./"), "")
    if first != "/":
        return name
    return name.translate(str.maketrans("./", "/."))


def entries(pod: dict) -> list[tuple[str, str]]:
    """(normalized name, value) of each sysctl the pod asks for."""
    context = (pod.get("spec") or {}).get("securityContext") or {}
    return [(normalize(str(s.get("name", ""))), str(s.get("value", ""))) for s in context.get("sysctls") or []]


def forbidden(pod: dict) -> str | None:
    """The kubelet's rejection message for the pod's sysctls, or None when it admits them."""
    spec = pod.get("spec") or {}
    for name, _value in entries(pod):
        if name not in KUBELET_SAFE:
            return f'Pod was rejected: forbidden sysctl: "{name}" not allowlisted'
        if name.startswith("net.") and spec.get("hostNetwork"):
            return f'Pod was rejected: forbidden sysctl: "{name}" not allowed with host net enabled'
        if name.startswith("kernel.shm") and spec.get("hostIPC"):
            return f'Pod was rejected: forbidden sysctl: "{name}" not allowed with host ipc enabled'
    return None


def port_range(pod: dict) -> tuple[int, int] | None:
    """The pod's ``ip_local_port_range`` as (low, high), None when it sets none; ``ValueError``
    (the runtime's sandbox error) for a value the kernel would refuse: two integers in 1..65535,
    low <= high, low at or above the unprivileged port start (1024 unless the pod sets it)."""
    values = dict(entries(pod))
    if PORT_RANGE not in values:
        return None
    floor = DEFAULT_UNPRIVILEGED_PORT_START
    if UNPRIVILEGED_PORT_START in values:
        try:
            floor = int(values[UNPRIVILEGED_PORT_START].strip())
        except ValueError:
            raise ValueError(_sandbox_error(UNPRIVILEGED_PORT_START, values[UNPRIVILEGED_PORT_START])) from None
    text = values[PORT_RANGE]
    parts = text.split()
    try:
        low, high = (int(p) for p in parts) if len(parts) == 2 else (None, None)
    except ValueError:
        low = high = None
    if low is None or high is None or not 1 <= low <= high <= 65535 or low < floor:
        raise ValueError(_sandbox_error(PORT_RANGE, text))
    return low, high


def _sandbox_error(name: str, value: str) -> str:
    path = "/proc/sys/" + name.replace(".", "/")
    return ("Failed to create pod sandbox: rpc error: code = Unknown desc = failed to start sandbox container: "
            f"OCI runtime create failed: write sysctl key {name}: write {path} ({value!r}): invalid argument")


def not_applied(pod: dict) -> list[str]:
    """The admitted sysctls this node has no per-pod mechanism for."""
    return [name for name, _value in entries(pod) if name != PORT_RANGE]
