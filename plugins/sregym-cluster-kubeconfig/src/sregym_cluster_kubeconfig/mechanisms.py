"""What a cluster reached through a kubeconfig offers of ``sregym_core.mechanisms``.

Its pods are not processes of an SREGym node agent, so nothing that lives in one (the cgroup BPF
programs keyed by the agent, the seccomp supervisor, the FUSE layer, the LD_PRELOAD shim) runs
here. What can: ``bpf-daemonset``, the same cgroup programs loaded by a privileged DaemonSet in a
hidden namespace (``sregym-fault-ebpf-syscall``). The probe asks the API server whether this
kubeconfig's identity may create that namespace and DaemonSets in it (SelfSubjectAccessReview);
whether the nodes' kernels take the programs is known only when the loader starts (its pod says
why not, and inject fails with that reason). Nothing is created by the probe.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

#: the loader's hidden namespace (sregym_fault_ebpf_syscall.daemonset.NAMESPACE)
LOADER_NAMESPACE = "sregym-faults"
NO_NODE_AGENT = "no SREGym node agent runs this cluster's pods (a kubeconfig cluster)"
NOT_BUILT = "not built for real nodes yet"
TIMEOUT_S = 10


def _allowed(api: Any, verb: str, group: str, resource: str, namespace: str | None) -> bool:
    from kubernetes import client

    review = client.V1SelfSubjectAccessReview(spec=client.V1SelfSubjectAccessReviewSpec(
        resource_attributes=client.V1ResourceAttributes(verb=verb, group=group, resource=resource,
                                                        namespace=namespace)))
    answer = client.AuthorizationV1Api(api).create_self_subject_access_review(review, _request_timeout=TIMEOUT_S)
    return bool(answer.status and answer.status.allowed)


def daemonset_verdict(kubeconfig: Path) -> tuple[bool, str]:
    """Whether this identity may deploy the loader, and why not."""
    from kubernetes import config

    try:
        api = config.new_client_from_config(config_file=str(kubeconfig))
        missing = [what for what, (verb, group, resource, ns) in {
            "create namespaces": ("create", "", "namespaces", None),
            f"create daemonsets in {LOADER_NAMESPACE}": ("create", "apps", "daemonsets", LOADER_NAMESPACE),
            f"create configmaps in {LOADER_NAMESPACE}": ("create", "", "configmaps", LOADER_NAMESPACE),
        }.items() if not _allowed(api, verb, group, resource, ns)]
    except Exception as exc:  # noqa: BLE001 - unreachable, no kubeconfig, no authorization API: say so
        return False, f"could not ask the cluster ({type(exc).__name__}: {str(exc)[:160]})"
    if missing:
        return False, "this kubeconfig's identity may not " + ", ".join(missing)
    return True, ""


def probe(kubeconfig: Path | None, missing: str = "") -> dict[str, dict]:
    """Every mechanism of the vocabulary with this cluster's answer (``missing``: why there is no
    kubeconfig to ask with)."""
    available, reason = daemonset_verdict(kubeconfig) if kubeconfig is not None else (False, missing)
    out: dict[str, dict] = {name: {"available": False, "reason": NO_NODE_AGENT, "operations": None}
                            for name in ("bpf-cgroup", "seccomp-supervisor", "fuse-badblocks", "ld-preload-shim")}
    out.update({name: {"available": False, "reason": NOT_BUILT, "operations": None}
                for name in ("bpf-lsm", "bpf-fmod-ret", "dm-dust")})
    out["bpf-daemonset"] = {"available": available, **({"reason": reason} if reason else {}),
                            "operations": ["connect", "socket"],
                            "detail": "a privileged DaemonSet in the hidden namespace " + LOADER_NAMESPACE
                                      + "; the node's kernel is checked when its loader starts"}
    return out
